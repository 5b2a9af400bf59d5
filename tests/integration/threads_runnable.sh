#!/bin/bash
# flightrec threads tells a thread waiting for a CPU (runnable: /proc state
# R, preempted and not back on a CPU) from one on a CPU (running). Two
# spinners share CPU 1: a hog at nice -20 and a victim under SCHED_IDLE,
# which the scheduler almost never runs (checked by /proc schedstat: the
# victim's stays the same from a second before it is asked about until
# after). The victim is shown "runnable", in text and --json, with a
# waiting time of at least that quiet time; the hog "running", without
# one.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs: the hog and the victim share CPU 1"
command -v taskset >/dev/null && command -v chrt >/dev/null ||
	skip "needs taskset and chrt (util-linux)"
[ -r /proc/self/schedstat ] || skip "needs /proc/PID/schedstat (CONFIG_SCHED_INFO) to see the victim wait"

start_daemon
# The recorder and the CLI keep off CPU 1, where the hog would starve them
# too.
taskset -a -p -c 0 "$DAEMON_PID" >/dev/null || fail "taskset -p $DAEMON_PID failed"
fr() { taskset -c 0 "$FLIGHTREC" "$@"; }

# The victim becomes SCHED_IDLE once it spins in burn: under the hog it
# would not even finish its exec.
taskset -c 1 "$BURN" 60 >/dev/null &
VICTIM=$!
t_start=$(date +%s%N)
try_until 10 '[ "$(cat "/proc/$VICTIM/comm" 2>/dev/null)" = burn ]'
chrt -i -p 0 "$VICTIM" || fail "chrt -i -p 0 $VICTIM failed"
chrt -p "$VICTIM" | grep -q SCHED_IDLE || fail "the victim is not SCHED_IDLE: $(chrt -p "$VICTIM")"
taskset -c 1 nice -n -20 "$BURN" 60 >/dev/null &
HOG=$!
# burn with one thread spins in its main thread: tid = pid. Its schedstat
# (time run, time waited, times run) changes when it runs (its time run
# also at each tick while it runs).
ran() { cat "/proc/$VICTIM/task/$VICTIM/schedstat"; }

# wait_quiet: waits (10 s at most) until the victim has not run for a
# second: QUIET is its schedstat since QUIET_SINCE (ns).
wait_quiet() {
	QUIET=$(ran)
	QUIET_SINCE=$(date +%s%N)
	try_until 10 quiet_for_1s && return 0
	skip "the scheduler keeps running the SCHED_IDLE victim beside a nice -20 hog on CPU 1"
}

quiet_for_1s() {
	local now
	now=$(ran)
	if [ "$now" != "$QUIET" ]; then
		QUIET=$now
		QUIET_SINCE=$(date +%s%N)
	fi
	[ "$(($(date +%s%N) - QUIET_SINCE))" -ge 1000000000 ]
}

# field FILE KEY: KEY of the one thread in a threads --json answer.
field() {
	python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["threads"]
assert len(t) == 1, t
print(t[0].get(sys.argv[2], ""))' "$@"
}

# The victim, asked until it was not run in between (it may be, rarely).
for _ in 1 2 3 4 5; do
	wait_quiet
	ta=$(date +%s%N)
	fr threads --pid "$VICTIM" --json >"$T/victim.json" 2>"$T/err" ||
		fail "threads --json failed: $(cat "$T/err")"
	fr threads --pid "$VICTIM" >"$T/victim.text" 2>"$T/err" ||
		fail "threads failed: $(cat "$T/err")"
	[ "$(ran)" = "$QUIET" ] && break
done
[ "$(ran)" = "$QUIET" ] || fail "the victim kept running: the test cannot see it wait"
echo "victim $VICTIM: schedstat $QUIET, the same since $(((ta - QUIET_SINCE) / 1000000)) ms before it was asked about"
cat "$T/victim.text"
cat "$T/victim.json"
echo
[ "$(field "$T/victim.json" state)" = runnable ] ||
	fail "the victim, waiting for CPU 1, is not shown runnable: $(cat "$T/victim.json")"
grep -q '^1 thread: runnable, waiting [0-9]' "$T/victim.text" ||
	fail "the text does not show the victim runnable with its waiting time"
# Not run from QUIET_SINCE (give or take a tick: 20 ms) to after the answer, made
# after ta: it had waited at least ta - QUIET_SINCE then; and at most
# since it started.
w=$(field "$T/victim.json" waiting_ns)
t_end=$(date +%s%N)
lo=$((ta - QUIET_SINCE - 20000000))
hi=$((t_end - t_start))
echo "victim waiting ${w:-no} ns, want $lo to $hi ns"
[ -n "$w" ] || fail "the runnable victim has no waiting time: $(cat "$T/victim.json")"
[ "$w" -ge "$lo" ] && [ "$w" -le "$hi" ] || fail "the victim's waiting time is $w ns, want $lo to $hi ns"

# The hog, on CPU 1 but for the moments something else runs there.
for _ in 1 2 3 4 5; do
	fr threads --pid "$HOG" --json >"$T/hog.json" 2>"$T/err" ||
		fail "threads --json failed: $(cat "$T/err")"
	fr threads --pid "$HOG" >"$T/hog.text" 2>"$T/err" || fail "threads failed: $(cat "$T/err")"
	[ "$(field "$T/hog.json" state)" = running ] && grep -qx '1 thread: running' "$T/hog.text" && break
done
cat "$T/hog.text"
[ "$(field "$T/hog.json" state)" = running ] || fail "the hog is not shown running: $(cat "$T/hog.json")"
[ -z "$(field "$T/hog.json" waiting_ns)" ] || fail "the running hog has a waiting time: $(cat "$T/hog.json")"
grep -qx '1 thread: running' "$T/hog.text" || fail "the text does not show the hog running"
kill "$HOG" "$VICTIM"
echo "ok"
