#!/bin/bash
# A label storm by a user who is not root cannot stop machine-wide
# recording: a real second local user runs labels_storm (libflightrec,
# 300 always-runnable threads, each cycling 4,096 label values of its own:
# 1.2 M distinct sets, thousands of new ones a second) in the recorder's
# scheduling group, recorded at 999 Hz. Meanwhile root runs a CPU-bound
# program (burn) for 8 s. Proven:
# - the recorder's ingest thread runs at SCHED_FIFO 1 and its writer at
#   nice -10, as /proc/PID/task/TID/stat shows them, and the threads that
#   do work a user drives (label look-ups, symbol copies, table builds,
#   stack walks, queries, export) do not, before the storm and after;
# - root's program keeps >= 90% of its expected samples (999 Hz times
#   the CPU time it had, from its own rusage);
# - the ingest thread did not stall (status ingest.stalls unchanged) and
#   stayed at SCHED_FIFO (its watchdog never took it off:
#   ingest.realtime_drops 0); the cpu samples lost in full perf rings
#   (events' lost, counted by the kernel) stay under 0.5%;
# - the storm's own samples carry its labels (the storm was read, not
#   ignored) or, past the label-set table, the marker that says so;
# - a labelled program started in the storm has its labels read: a
#   look-up the busy machine kept past its deadline ("read stalled") is
#   asked again, 1, 4 and 16 s later (before, the process stayed
#   unreadable for good).
# The test's own readers (attach, status, the profiles' checks) run in a
# session of their own once the storm is on: in the storm's group a
# python3 that reads a profile took 54 s, and one probe of the labelled
# program outlived it (a CI run failed so).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
need_test_users
STORM=$BUILD/tests/integration/labels_storm
DEMO=$BUILD/tests/integration/labels_demo
U=frstu$$
G=frstg$$
add_test_group "$G"
add_test_user "$U" "$G" -M
cp "$BURN" "$T/stormroot"
PROBE_RUN=

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels

# The priorities, as the kernel sees them: fields 19 (nice), 40
# (rt_priority) and 41 (policy: 0 normal, 1 SCHED_FIFO) of a thread's
# stat (the comm field of our threads has no spaces).
prio_of() { awk '{ print $19, $40, $41 }' "/proc/$DAEMON_PID/task/$1/stat"; }
# check_prio: the ingest thread (the main thread) at SCHED_FIFO 1 (nice
# -10 under it), the writer (and its io_uring workers) at nice -10; every
# other thread, whoever
# started it, at the normal policy and nice 0 or below (export: 10).
check_prio() {
	local task name tid p
	for task in /proc/"$DAEMON_PID"/task/*; do
		tid=${task##*/}
		name=$(cat "$task/comm" 2>/dev/null) || continue
		p=$(prio_of "$tid" 2>/dev/null) || continue
		set -- $p
		if [ "$tid" = "$DAEMON_PID" ]; then
			[ "$3 $2 $1" = "1 1 -10" ] ||
				fail "the ingest thread runs at policy $3 priority $2 nice $1, not SCHED_FIFO 1 (nice -10)"
		elif [ "$name" = fr-writer ]; then
			[ "$3 $1" = "0 -10" ] || fail "the writer runs at policy $3 nice $1, not nice -10"
		elif [ "${name#iou-wrk-}" != "$name" ]; then
			# io_uring's workers of the writer's appends run at its
			# priority, those of a request's output at the request's.
			[ "$3" = 0 ] && [ "$1" -ge -10 ] ||
				fail "io_uring worker $name runs at policy $3 nice $1"
		else
			[ "$3" = 0 ] && [ "$1" -ge 0 ] ||
				fail "thread $name ($tid) runs at policy $3 nice $1, above the process"
		fi
		echo "  $name: nice $1 policy $3"
	done
}
echo "threads at start:"
check_prio

stat_json() {
	$PROBE_RUN "$FLIGHTREC" status --json >"$T/$1.json" 2>"$T/status.err" ||
		fail "status failed: $(cat "$T/status.err")"
}
# What status says of stalls and of the cpu event's losses.
status_field() {
	$PROBE_RUN python3 - "$T/$1.json" "$2" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
if sys.argv[2] == "stalls":
    print(st["ingest"]["stalls"])
elif sys.argv[2] == "drops":
    print(st["ingest"]["realtime_drops"])
elif sys.argv[2] == "longest":
    print(st["ingest"]["longest_stall_ns"])
else:
    print(sum(e.get("lost", 0) for e in st.get("events", [])))
PY
}

# The storm, in this script's session (and so its autogroup, the
# recorder's): its threads compete with the recorder's one for one.
runuser -u "$U" -- "$STORM" 300 4096 >"$T/storm.out" 2>"$T/storm.err" &
STORM_RUNUSER=$!
wait_lines "$T/storm.out" ready 30
STORM_PID=$(pgrep -u "$U" -x labels_storm | head -1)
[ -n "$STORM_PID" ] || fail "labels_storm is not running as $U"
wait_labelled "$STORM_PID" warmup 30
kill -USR1 "$STORM_PID"
wait_lines "$T/storm.out" storm
PROBE_RUN="setsid -w"
sleep 3
stat_json before

# Root's program in a session of its own, so that it has CPU to be
# sampled on (in the storm's group it would get 1/301 of it); what it had
# is what it is owed.
from=$(date +%s)
setsid "$T/stormroot" 8 1 >"$T/root.out" </dev/null &
ROOT_BURN=$!
wait "$ROOT_BURN" || fail "root's program failed"
to=$(($(date +%s) + 1))
stat_json after
$PROBE_RUN "$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$ROOT_BURN" \
	-o "$T/root.pb.gz" 2>"$T/err" </dev/null || fail "attach --pid $ROOT_BURN failed: $(cat "$T/err")"
$PROBE_RUN "$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$STORM_PID" \
	-o "$T/storm.pb.gz" 2>"$T/err" </dev/null || fail "attach --pid $STORM_PID failed: $(cat "$T/err")"
# A labelled program that starts in the storm, in a session of its own:
# the recorder's look-up of it competes with the storm's threads.
# It runs up to 240 s and is killed once read: the look-up's retries (1,
# 4 and 16 s after a stalled one) take ~25 s, and an attach of a program
# the recorder has not symbolized yet runs at the recorder's normal
# priority, among the storm's threads: 56 to 75 s on this machine (its
# connection thread runnable, 2 ticks of CPU in 30 s), over 90 s in one
# CI run, which outlived the program's 90 s then.
setsid "$DEMO" split 240 >"$T/demo.out" </dev/null &
DEMO_PID=$!
# The probes (an attach of its last second, then its labels' keys) in one
# process of their own session: every program this script starts in the
# storm's group (grep, sleep) takes seconds to run.
$PROBE_RUN python3 - "$FLIGHTREC" "$DEMO_PID" "$T" <<'PY' || fail "the labelled program started in the storm was not read"
import os, subprocess, sys, time
from pprof_samples import samples
flightrec, pid, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.monotonic()
out = os.path.join(tmp, "probe.pb.gz")
probe = 0
while time.monotonic() - t0 < 200:
    probe += 1
    t1 = time.monotonic()
    r = subprocess.run([flightrec, "attach", "--window", "1s", "--pid", str(pid),
                        "--allow-empty", "-o", out], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Incomplete (exit 1, the profile kept: the recorder had not stored
    # its last second yet) is looked at and asked again.
    if r.returncode != 0 and not (r.returncode == 1 and ": incomplete: " in r.stderr
                                  and os.path.getsize(out) > 0):
        print("attach --pid %d failed: %s" % (pid, r.stderr), file=sys.stderr)
        sys.exit(1)
    keys = sorted(set(k for s in samples(out) for k in s["str"]))
    print("probe %d at %.1f s: attach took %.1f s, keys %s"
          % (probe, t1 - t0, time.monotonic() - t1, ",".join(keys)))
    if "phase" in keys:
        print("the labelled program started in the storm: read in %.1f s, at probe %d"
              % (time.monotonic() - t0, probe))
        sys.exit(0)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        print("process %d exited before its labels showed (%.1f s, %d probes)"
              % (pid, time.monotonic() - t0, probe), file=sys.stderr)
        sys.exit(1)
    time.sleep(1)
print("no sample of pid %d carries its labels after %d probes in 200 s" % (pid, probe),
      file=sys.stderr)
sys.exit(1)
PY
stalled=$(grep -c "labels of pid $DEMO_PID: a look-up took longer" "$T/daemon.log")
echo "($stalled look-ups of it stalled first)"
kill "$DEMO_PID" 2>/dev/null
wait "$DEMO_PID" 2>/dev/null
kill "$STORM_RUNUSER" 2>/dev/null
pkill -KILL -u "$U" 2>/dev/null
daemon_alive || fail "flightrecd died"
echo "threads after the storm:"
check_prio

cpu=$(sed -n 's/.*cpu_seconds=\([0-9.]*\).*/\1/p' "$T/root.out")
echo "root's program had $cpu s of CPU in 8 s"
stalls0=$(status_field before stalls) stalls1=$(status_field after stalls)
lost0=$(status_field before lost) lost1=$(status_field after lost)
echo "ingest stalls $stalls0 -> $stalls1 (longest $(status_field after longest) ns), cpu lost $lost0 -> $lost1"

$PROBE_RUN python3 - "$T/root.pb.gz" "$T/storm.pb.gz" "$cpu" <<'PY' || fail "root's program lost its samples"
import sys
from pprof_samples import samples
got = sum(s["values"][0] for s in samples(sys.argv[1]))
want = 999 * float(sys.argv[3])
print("root's program: %d samples of %d expected (%.1f%%)" % (got, want, 100.0 * got / max(want, 1)))
storm = labelled = marked = 0
for s in samples(sys.argv[2]):
    n = s["values"][0]
    storm += n
    if "storm" in s["str"] or "warmup" in s["str"]:
        labelled += n
    elif s["str"].get("flightrec.labels", "").startswith("dropped"):
        marked += n
print("storm: %d samples, %d labelled, %d with the dropped marker" % (storm, labelled, marked))
if want < 500:
    print("SKIP: root's program had too little CPU to count on")
    sys.exit(77)
if got < 0.9 * want:
    sys.exit(1)
if storm and labelled + marked < 0.5 * storm:
    print("the storm's samples carry neither its labels nor the marker")
    sys.exit(1)
PY
status=$?
[ $status = 77 ] && skip "root's program had too little CPU (the machine is too busy)"
[ $status = 0 ] || fail "root's program kept under 90% of its samples"
[ "$stalls1" = "$stalls0" ] || fail "the ingest thread stalled during the storm ($stalls0 -> $stalls1)"
# A few samples may be lost when the drain is late once (the rings hold
# under a second at 999 Hz, and a stall is counted past 3 s): a fresh
# clone's run once lost 4 of ~20,000. Losses are counted by the kernel
# and shown in status; more than 0.5% of the interval's samples is the
# storm stopping recording.
budget=$(((to - from) * 999 * $(nproc) / 200))
[ $((lost1 - lost0)) -le "$budget" ] ||
	fail "cpu samples were lost during the storm ($lost0 -> $lost1, more than $budget)"
[ "$(status_field after drops)" = 0 ] || fail "the watchdog took the ingest thread off SCHED_FIFO"
stop_daemon
echo PASS
