#!/bin/bash
# An overloaded recorder does not look like an idle machine (issue 30):
# the ingest thread is frozen with ptrace for 5 s while two processes burn
# both CPUs at 499 Hz, so the perf rings (half a second of samples) fill
# and the kernel loses samples, and the ingest stalls. Then, live and from
# the ring after a kill -9:
#   - the timeline's JSON has per-step "lost" counts and "stalled"
#     booleans, the losses in the seconds of the freeze (placed by the
#     chunks' gaps, not at one chunk's end), the stall marked there;
#   - its chart marks those rows ("! N lost", "stalled") with legend lines;
#   - attach (and top, dump) warn of the share lost and exit 1; with
#     --allow-loss they warn and exit 0; the profile's comments keep the
#     counts;
#   - the stall's log line says where the ingest thread was held up (the
#     watcher's look at /proc/self/task: stopped, state t).
. "$(dirname "$0")/lib.sh"
exact_losses
need_root_perf

FREEZE=$BUILD/tests/integration/freeze_thread
start_daemon --hz 499
"$BURN" 60 1 >/dev/null 2>&1 &
"$BURN" 60 1 >/dev/null 2>&1 &
wait_seals 3
t_before=$(date +%s)
"$FREEZE" "$DAEMON_PID" 5 >"$T/freeze.out" 2>"$T/freeze.err" || {
	grep -q frozen "$T/freeze.out" || skip "cannot freeze a thread with ptrace here: $(cat "$T/freeze.err")"
	fail "freeze_thread failed: $(cat "$T/freeze.err")"
}
t_thaw=$(date +%s)
wait_seals 3
t_after=$(date +%s)
# The stall's log line says where the ingest thread was: the watcher saw
# it stopped by ptrace (state t), not only that it was late.
grep -Eq 'the ingest thread was held up for [0-9]+ ms \(seen state t' "$T/daemon.log" ||
	fail "the stall's log line does not say where the thread was: $(grep 'held up' "$T/daemon.log")"
lost=$(status_value 'd["samples_lost"]')
[ "${lost:-0}" -gt 0 ] || skip "no sample was lost in a 5 s freeze (perf rings larger than expected)"
FROM=$((t_before - 2))
TO=$((t_after + 1))
Q=(--from "@$FROM" --to "@$TO" --step 1s)

# check_timeline JSON TEXT: the steps that lost samples lie in the
# freeze's seconds (give or take the drain before it), some are stalled
# there, and the chart marks them.
check_timeline() {
	python3 - "$1" "$t_before" "$t_thaw" <<'PY' || fail "timeline JSON: $(head -c 600 "$1")"
import json, sys
t = json.load(open(sys.argv[1]))
before, thaw = int(sys.argv[2]), int(sys.argv[3])
n = len(t["groups"][0]["values"])
assert len(t["lost"]) == n and len(t["stalled"]) == n, "arrays not one per step"
assert t["lost_total"] == sum(t["lost"]) > 0, "no loss counted"
steps = [t["start_ns"] // 10**9 + k for k in range(n)]
lost = [s for s, v in zip(steps, t["lost"]) if v]
stalled = [s for s, v in zip(steps, t["stalled"]) if v]
assert stalled and before - 1 <= min(stalled) and max(stalled) <= thaw + 1, (stalled, before, thaw)
# Placed in time: spread over the freeze's seconds, not one step.
assert len(lost) >= 3 and before - 1 <= min(lost) and max(lost) <= thaw + 1, (lost, before, thaw)
# Spread over the stall, not all counted at the drain that read them.
assert max(t["lost"]) < 0.6 * t["lost_total"], t["lost"]
print("timeline: %d lost over %d steps, %d steps stalled" % (t["lost_total"], len(lost), len(stalled)))
PY
	grep -Eq '  ! [0-9]+ lost, stalled$' "$2" || fail "no row marked lost and stalled: $(cat "$2")"
	grep -q '^! [0-9]* samples of cpu lost in this window' "$2" || fail "no legend for lost samples: $(cat "$2")"
	grep -q "^! the recorder's ingest was held up in [0-9]* step" "$2" ||
		fail "no legend for the stall: $(cat "$2")"
}

"$FLIGHTREC" timeline "${Q[@]}" --json >"$T/tl.json" 2>"$T/err" || fail "timeline --json failed: $(cat "$T/err")"
"$FLIGHTREC" timeline "${Q[@]}" >"$T/tl.txt" 2>"$T/err" || fail "timeline failed: $(cat "$T/err")"
check_timeline "$T/tl.json" "$T/tl.txt"

# attach_rc WANT ARGS...: attach, its stderr in $T/err, with that status.
attach_rc() {
	local want=$1
	shift
	"$FLIGHTREC" attach "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	[ "$rc" = "$want" ] || fail "attach $* exited $rc, want $want: $(cat "$T/err")"
}
loss_warned() {
	grep -Eq '^flightrec: warning: the recorder lost [0-9]+ of [0-9]+ samples of cpu in the window \([0-9.]+%, machine-wide\)' "$T/err" ||
		fail "$1: no warning of the samples lost: $(cat "$T/err")"
	grep -q '^flightrec: warning: the recorder was held up' "$T/err" || fail "$1: no stall warning: $(cat "$T/err")"
}
attach_rc 1 --from "@$FROM" --to "@$TO" -o "$T/p.pb.gz"
loss_warned attach
grep -q -- '--allow-loss' "$T/err" || fail "attach does not name --allow-loss: $(cat "$T/err")"
[ -s "$T/p.pb.gz" ] || fail "the profile of a lossy window was not kept"
gzip -dc "$T/p.pb.gz" | grep -qa "samples lost by the kernel in this window" ||
	fail "the profile's comments do not count the samples lost"
attach_rc 0 --from "@$FROM" --to "@$TO" --allow-loss -o "$T/q.pb.gz"
loss_warned "attach --allow-loss"
"$FLIGHTREC" top --from "@$FROM" --to "@$TO" -n 3 >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "top of a lossy window did not exit 1: $(cat "$T/err")"
loss_warned top
grep -q 'flat%' "$T/out" || fail "top printed no table: $(cat "$T/out")"
"$FLIGHTREC" top --from "@$FROM" --to "@$TO" -n 3 --allow-loss >"$T/out" 2>"$T/err" ||
	fail "top --allow-loss failed: $(cat "$T/err")"
# A window wholly after the thaw is clean.
attach_rc 0 --window 1s -o "$T/after.pb.gz"
grep -q 'lost' "$T/err" && grep -q warning "$T/err" && fail "a window after the thaw warns: $(cat "$T/err")"

# After a crash, the ring alone says the same.
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
"$FLIGHTREC" dump --ring "$RING" --timeline "${Q[@]}" --json >"$T/dtl.json" 2>"$T/err" ||
	fail "dump --timeline --json failed: $(cat "$T/err")"
"$FLIGHTREC" dump --ring "$RING" --timeline "${Q[@]}" >"$T/dtl.txt" 2>"$T/err" ||
	fail "dump --timeline failed: $(cat "$T/err")"
check_timeline "$T/dtl.json" "$T/dtl.txt"
"$FLIGHTREC" dump --ring "$RING" --from "@$FROM" --to "@$TO" -o "$T/d.pb.gz" >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "dump of a lossy window did not exit 1: $(cat "$T/err")"
loss_warned dump
"$FLIGHTREC" dump --ring "$RING" --from "@$FROM" --to "@$TO" --allow-loss -o "$T/e.pb.gz" \
	>"$T/out" 2>"$T/err" || fail "dump --allow-loss failed: $(cat "$T/err")"
echo "PASS"
