#!/bin/bash
# Time spent waiting for a CPU (tests/integration/runq.c): two spinning
# threads pinned to CPU 0 and a third, "periodic", pinned there too, that
# sleeps 2 ms and spins ~1 ms in a loop, so it waits in the run queue
# each time it is woken and whenever it is preempted. Over a window of W
# seconds, `attach --event runqueue --pid P` must give that thread within
# 15% of the growth of /proc/P/task/TID/schedstat's second field (the
# kernel's run delay, ns) over the same window, read at its two ends.
#
# The edges: a delay is stamped when the thread gets the CPU, and delays
# shorter than min_wait are added up per thread and sent when the sum
# reaches 10 ms (or a second after the last); so at each edge at most one
# long delay (a few ms) and one sum (10 ms) fall on the other side, ~30 ms
# in all against the ~1-3 s of delay of a 6 s window, well inside 15%.
# The long delays also name what ran on the CPU just before the thread
# got it (ran_instead: a spinner, among others, never itself).
. "$(dirname "$0")/lib.sh"
need_root_perf
[ "$(nproc)" -ge 2 ] ||
	skip "one CPU: the recorder and this script would queue behind the spinners"
PROG=$BUILD/tests/integration/runq
W=6

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "waits", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}, {"event": "runqueue"}]}]}
JSON
began=$(date +%s)
start_daemon --config "$T/config.json"

"$PROG" 120 0 >"$T/prog.out" &
PROG_PID=$!
wait_until 10 "runq to start" 'grep -qs "^pid=" "$T/prog.out"'
read -r PID TID < <(sed -n 's/^pid=\([0-9]*\) periodic=\([0-9]*\)$/\1 \2/p' "$T/prog.out")
[ -n "$TID" ] || fail "runq printed no tid: $(cat "$T/prog.out")"
sleep 2
# The window's ends: the run delay read right before and after the clock.
d0=$(awk '{ print $2 }' "/proc/$PID/task/$TID/schedstat")
from=$(date +%s.%N)
sleep "$W"
to=$(date +%s.%N)
d1=$(awk '{ print $2 }' "/proc/$PID/task/$TID/schedstat")
wait_seals
"$FLIGHTREC" attach --from "@$from" --to "@$to" --event runqueue --pid "$PID" \
	-o "$T/rq.pb.gz" 2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
! grep -q "not being recorded" "$T/attach.err" ||
	fail "runqueue is recorded by the session, attach says otherwise: $(cat "$T/attach.err")"
# wakeup is not asked by the session: said so (it rides on offcpu's
# program, which records).
"$FLIGHTREC" attach --window 2s --event wakeup --pid "$PID" --allow-empty -o "$T/w.pb.gz" \
	2>"$T/attach.err" || fail "attach --event wakeup failed: $(cat "$T/attach.err")"
grep -q "wakeup is not being recorded" "$T/attach.err" ||
	fail "attach --event wakeup does not say wakeup is not recorded: $(cat "$T/attach.err")"
python3 - "$(dirname "$0")" "$T/rq.pb.gz" "$TID" "$((d1 - d0))" "$W" <<'PY' ||
import sys
sys.path.insert(0, sys.argv[1])
import pprof_samples as ps
path, tid, want, w = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
types = ps.sample_types(path)
names = [t for t, _ in types]
assert ("runqueue", "nanoseconds") in types, types
col = names.index("runqueue")
got = long_ns = instead = 0
who = {}
for s in ps.samples(path):
    if s["num"].get("tid") != tid:
        continue
    v = s["values"][col]
    got += v
    if s["frames"] and s["frames"][-1].startswith("[off-CPU waits"):
        continue
    long_ns += v
    instead += v if s["str"].get("ran_instead") == "spinner" else 0
    who[s["str"].get("ran_instead")] = who.get(s["str"].get("ran_instead"), 0) + v
print("periodic (tid %d): runqueue %.3f s in the profile, run delay %.3f s in schedstat "
      "(%.1f%%); of the profile's delays of min_wait or more (%.3f s), %.0f%% with "
      "ran_instead=spinner" % (tid, got / 1e9, want / 1e9, 100.0 * got / want if want else 0,
                               long_ns / 1e9, 100.0 * instead / long_ns if long_ns else 0))
print("ran_instead:", sorted(((v / 1e9, k) for k, v in who.items()), reverse=True)[:8])
ok = want > 0.05 * w * 1e9 and abs(got - want) <= 0.15 * want
# What ran just before it got the CPU: a spinner often, but also whatever
# ran briefly between (a kernel thread, the recorder, another program
# pinned to that CPU on a shared machine); every long delay names one,
# never the thread itself.
ok = ok and None not in who and "periodic" not in who
sys.exit(0 if ok else 1)
PY
	fail "the runqueue time does not match the run delay (see above)"

# The timeline shows the same time, spread over the steps it lasted, and
# the ring nothing stamped before the recorder started.
"$FLIGHTREC" timeline --from "@$from" --to "@$to" --event runqueue --top 32 --json >"$T/tl.json" \
	2>"$T/tl.err" || fail "timeline --event runqueue failed: $(cat "$T/tl.err")"
python3 - "$T/tl.json" "$PID" "$began" <<'PY' || fail "timeline --event runqueue: $(head -c 600 "$T/tl.json")"
import json, sys
t = json.load(open(sys.argv[1]))
# No sample stamped before the recorder started (a thread's short delays
# without a short wait were once stamped at boot).
assert t["ring"]["first_ns"] >= (int(sys.argv[3]) - 5) * 10**9, t["ring"]
assert t["event"] == "runqueue" and t["unit"] == "nanoseconds", (t["event"], t["unit"])
assert any(g.get("pid") == int(sys.argv[2]) and g["total"] > 0 for g in t["groups"]), t["groups"]
PY
"$FLIGHTREC" top --from "@$from" --to "@$to" --event runqueue --pid "$PID" >"$T/top.out" \
	2>"$T/top.err" || fail "top --event runqueue failed: $(cat "$T/top.err")"
grep -q "^runqueue: " "$T/top.out" || fail "top does not say what runqueue's values are"
grep -Eq " (spin_a_while|periodic)$" "$T/top.out" ||
	fail "top --event runqueue does not show the thread's functions: $(cat "$T/top.out")"
kill "$PROG_PID" 2>/dev/null
wait "$PROG_PID" 2>/dev/null
stop_daemon
echo PASS
