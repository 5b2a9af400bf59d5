#!/bin/bash
# Who kept them waiting (tests/integration/wakeup_pipe.c, built without
# frame pointers): a consumer blocked in read() on a pipe whose producer
# writes in produce_item, a worker in pthread_cond_wait signalled from
# signal_ready, and a sleeper in nanosleep(5 ms). Recorded with offcpu and
# wakeup, `attach --event wakeup --pid P` must charge:
#  - of the consumer's wakeup time, >= 80% to stacks with produce_item;
#  - of the worker's, >= 80% to stacks with signal_ready;
#  - of the sleeper's, >= 90% to stacks whose root is the note "[timer]"
#    (a timer's interrupt woke it, not whatever thread it landed on);
# each thread's wakeup time at least half of the window (each waits most
# of its time, in waits of 3-5 ms, each of which another woke); every
# sample's labels name the woken thread (tid, thread) and, but for the
# timer's, the waker (waker_comm, waker_tid); `--comm` selects the same
# samples, and dump --ring reads the same from the ring file;
# `--by label:waker_comm` in top groups them by waker; top sorts
# them by cum and shows produce_item among its first rows; timeline
# --event wakeup has the process.
. "$(dirname "$0")/lib.sh"
need_root_perf
PROG=$BUILD/tests/integration/wakeup_pipe
W=5

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "waits", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}, {"event": "wakeup"}, {"event": "runqueue"}]}]}
JSON
"$FLIGHTRECD" --check-config "$T/config.json" >"$T/check.out" 2>&1 ||
	fail "the recorder refuses a session with wakeup: $(cat "$T/check.out")"
start_daemon --config "$T/config.json"

"$PROG" 120 >"$T/prog.out" &
PROG_PID=$!
wait_until 10 "wakeup_pipe to start" 'grep -qs "^pid=" "$T/prog.out"'
read -r PID CONSUMER WORKER SLEEPER < <(sed -n \
	's/^pid=\([0-9]*\) consumer=\([0-9]*\) worker=\([0-9]*\) sleeper=\([0-9]*\)$/\1 \2 \3 \4/p' \
	"$T/prog.out")
[ -n "$SLEEPER" ] || fail "wakeup_pipe printed no tids: $(cat "$T/prog.out")"
# A reader woken by a writer in another process (a shell loop writing a
# byte each 5 ms into its pipe): charged to that process by name, its
# stack the kernel's under "[waker in another process]" (its user
# addresses mean nothing in the reader's process).
bash -c 'while :; do printf x; sleep 0.005; done' | cat >/dev/null &
CAT_PID=$!
# Its first waits may come before its unwind table is built.
sleep 2
wait_tables_built
from=$(date +%s.%N)
sleep "$W"
to=$(date +%s.%N)
wait_seals
wait_tables_built

"$FLIGHTREC" attach --from "@$from" --to "@$to" --event wakeup --pid "$PID" \
	-o "$T/wake.pb.gz" 2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
! grep -q "not being recorded" "$T/attach.err" ||
	fail "wakeup is recorded by the session, attach says otherwise: $(cat "$T/attach.err")"
python3 "$(dirname "$0")/pprof_samples.py" jsonl "$T/wake.pb.gz" >"$T/wake.jsonl" ||
	fail "the profile does not read"
"$FLIGHTREC" dump --ring "$RING" --from "@$from" --to "@$to" --event wakeup --pid "$PID" \
	-o "$T/dump.pb.gz" 2>"$T/dump.err" || fail "dump --ring --event wakeup: $(cat "$T/dump.err")"
python3 "$(dirname "$0")/pprof_samples.py" jsonl "$T/dump.pb.gz" >"$T/dump.jsonl" ||
	fail "the dump does not read"
"$FLIGHTREC" attach --from "@$from" --to "@$to" --event wakeup --comm wakeup_pipe \
	-o "$T/comm.pb.gz" 2>"$T/attach.err" || fail "attach --comm failed: $(cat "$T/attach.err")"
python3 "$(dirname "$0")/pprof_samples.py" jsonl "$T/comm.pb.gz" >"$T/comm.jsonl" ||
	fail "the --comm profile does not read"

python3 - "$(dirname "$0")" "$T/wake.pb.gz" "$T/wake.jsonl" "$T/comm.jsonl" "$PID" "$CONSUMER" \
	"$WORKER" "$SLEEPER" "$W" "$T/dump.jsonl" <<'PY' || fail "wakeup samples (see above)"
import json, sys
sys.path.insert(0, sys.argv[1])
import pprof_samples as ps
path, jl, cl = sys.argv[2:5]
pid, consumer, worker, sleeper = (int(x) for x in sys.argv[5:9])
w = float(sys.argv[9])
types = [t for t, _ in ps.sample_types(path)]
units = dict(ps.sample_types(path))
assert "wakeup" in types, "no wakeup column: %s" % types
assert units["wakeup"] == "nanoseconds", units
col = types.index("wakeup")
rows = [json.loads(l) for l in open(jl)]
bad = []
def check(tid, name, want, share, root_only, waker_thread):
    tot = good = 0
    for r in rows:
        if r["num"].get("tid") != tid:
            continue
        v = r["values"][col]
        tot += v
        fr = r["frames"]
        if (fr and fr[-1] == want) if root_only else want in fr:
            good += v
            if waker_thread and r["str"].get("waker_comm") is None:
                bad.append("%s: a sample under %s without waker_comm: %s" % (name, want, r))
        if r["str"].get("thread") != name:
            bad.append("%s: a sample of tid %d labelled thread=%s" % (name, tid, r["str"].get("thread")))
    print("%s (tid %d): wakeup %.3f s, %.1f%% under %s" % (
        name, tid, tot / 1e9, 100.0 * good / tot if tot else 0, want))
    if tot < 0.5 * w * 1e9:
        bad.append("%s: %.3f s of wakeup time in a %g s window of waits" % (name, tot / 1e9, w))
    elif good < share * tot:
        bad.append("%s: %.1f%% under %s, want >= %d%%" % (name, 100.0 * good / tot, want, 100 * share))
    return tot
check(consumer, "consumer", "produce_item", 0.8, False, True)
check(worker, "worker", "signal_ready", 0.8, False, True)
check(sleeper, "sleeper", "[timer]", 0.9, True, False)
# The waker's labels: the consumer's wakes by the producer thread.
prod = [r for r in rows if r["num"].get("tid") == consumer and "produce_item" in r["frames"]]
def waker_tid(r):
    return str(r["num"].get("waker_tid", r["str"].get("waker_tid")))
if not prod or not all(r["str"].get("waker_comm") == "producer" and
                       waker_tid(r) not in ("None", str(consumer)) for r in prod):
    bad.append("consumer: wakes by produce_item not labelled waker_comm=producer with a "
               "waker_tid: %s" % prod[0])
# --comm selects the woken process's samples alike.
crows = [json.loads(l) for l in open(cl)]
pt = sum(r["values"][col] for r in rows if r["num"].get("pid") == pid)
ct = sum(r["values"][col] for r in crows if r["num"].get("pid") == pid)
if pt != ct:
    bad.append("--comm wakeup_pipe has %d ns of the process, --pid %d ns" % (ct, pt))
# dump --ring reads the same window from the ring file alike.
dt = sum(json.loads(l)["values"][col] for l in open(sys.argv[10]))
if dt != pt:
    bad.append("dump --ring has %d ns of the process, attach %d ns" % (dt, pt))
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY

# top: sorted by cum for wakeup (the leaves are the kernel's waking
# code), produce_item and signal_ready among the first rows; by waker.
"$FLIGHTREC" top --from "@$from" --to "@$to" --event wakeup --pid "$PID" -n 30 \
	>"$T/top.out" 2>"$T/top.err" || fail "top failed: $(cat "$T/top.err")"
cat "$T/top.out"
grep -q "^wakeup: " "$T/top.out" || fail "top does not say what wakeup's values are"
for f in produce_item signal_ready '\[timer\]'; do
	grep -q " $f\$" "$T/top.out" || fail "top --event wakeup has no $f among its rows"
done
"$FLIGHTREC" top --from "@$from" --to "@$to" --event wakeup --pid "$PID" \
	--by label:waker_comm -n 5 >"$T/by.out" 2>"$T/top.err" ||
	fail "top --by label:waker_comm failed: $(cat "$T/top.err")"
grep -q "^waker_comm=producer$" "$T/by.out" && grep -q "^waker_comm=signaler$" "$T/by.out" ||
	fail "top --by label:waker_comm has no producer and signaler tables: $(cat "$T/by.out")"
"$FLIGHTREC" timeline --from "@$from" --to "@$to" --event wakeup --top 32 --json >"$T/tl.json" \
	2>"$T/tl.err" || fail "timeline --event wakeup failed: $(cat "$T/tl.err")"
python3 - "$T/tl.json" "$PID" "$W" <<'PY' || fail "timeline --event wakeup: $(head -c 600 "$T/tl.json")"
import json, sys
t = json.load(open(sys.argv[1]))
pid, w = int(sys.argv[2]), float(sys.argv[3])
assert t["event"] == "wakeup" and t["unit"] == "nanoseconds", (t["event"], t["unit"])
g = [g for g in t["groups"] if g.get("pid") == pid]
assert g, [x.get("name") for x in t["groups"]]
# consumer + worker + sleeper wait most of the window.
assert g[0]["total"] >= 1.5 * w * 1e9, g[0]["total"]
PY

"$FLIGHTREC" attach --from "@$from" --to "@$to" --event wakeup --pid "$CAT_PID" \
	-o "$T/cat.pb.gz" 2>"$T/attach.err" || fail "attach --pid $CAT_PID failed: $(cat "$T/attach.err")"
python3 - "$(dirname "$0")" "$T/cat.pb.gz" <<'PY' || fail "the reader of another process's writes"
import sys
sys.path.insert(0, sys.argv[1])
from pprof_samples import samples
total = other = 0
for s in samples(sys.argv[2]):
    v = s["values"][-1]
    total += v
    if s["frames"] and s["frames"][-1] == "[waker in another process]" and \
            s["str"].get("waker_comm") == "bash":
        other += v
print("cat's wakeup time: %.2f s, %.0f%% from bash in another process" % (total / 1e9, 100.0 * other / max(total, 1)))
sys.exit(0 if total >= 1e9 and other >= 0.8 * total else 1)
PY
pkill -P "$$" -x bash 2>/dev/null
kill "$CAT_PID" 2>/dev/null
kill "$PROG_PID" 2>/dev/null
wait "$PROG_PID" 2>/dev/null
stop_daemon
echo PASS
