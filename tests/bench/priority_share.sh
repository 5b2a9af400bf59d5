#!/bin/bash
# A root program's share of its samples, and the recorder's ingest
# stalls, while another user runs THREADS always-runnable threads (the
# label storm of tests/integration/labels_storm.c: each thread cycling
# 4,096 label values of its own) in the recorder's scheduling group.
#
#   tests/bench/priority_share.sh RECORDER_BUILD [THREADS] [SECONDS] [PROGRAMS_BUILD]
#
# The recorder (flightrecd, flightrec) comes from RECORDER_BUILD, the
# storm and root's program (burn) from PROGRAMS_BUILD (default: the
# same), so that a build without labels_storm can be measured. Records cpu
# at 999 Hz; root's program (one thread, in a session of its own so that
# it gets CPU to be sampled on) runs SECONDS (default 8). Prints root's
# samples against those its CPU time is owed (999 Hz x its CPU seconds),
# the status's ingest stalls and longest stall, and the cpu samples lost,
# over the program's run. Needs root and useradd; the user is removed at
# the end.
set -u
rb=$(cd "${1:?usage: priority_share.sh RECORDER_BUILD [THREADS] [SECONDS] [PROGRAMS_BUILD]}" && pwd)
threads=${2:-300}
secs=${3:-8}
pb=$(cd "${4:-$rb}" && pwd)
T=$(mktemp -d /tmp/fr-prio.XXXXXX)
U=frprio$$
chmod 0711 "$T"
useradd -M -s /bin/sh "$U" || exit 1
dpid=
cleanup() {
	pkill -KILL -u "$U" 2>/dev/null
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null
	wait 2>/dev/null
	for _ in $(seq 50); do userdel "$U" 2>/dev/null && break; sleep 0.1; done
	rm -rf "$T"
}
trap cleanup EXIT
export FLIGHTREC_SOCKET=$T/sock
fr() { "$rb/tools/flightrec" "$@"; }
status() {
	fr status --json | python3 -c 'import json, sys
s = json.load(sys.stdin)
i = s["ingest"]
print(i["stalls"], i["longest_stall_ns"], sum(e.get("lost", 0) for e in s["events"]))'
}

echo '{"sessions": [{"name": "b", "events": [{"event": "cpu", "hz": 999}]}]}' >"$T/c.json"
"$rb/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/c.json" \
	>"$T/d.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do
	fr status >/dev/null 2>&1 && break
	sleep 0.1
done
runuser -u "$U" -- "$pb/tests/integration/labels_storm" "$threads" 4096 >"$T/storm.out" 2>&1 &
for _ in $(seq 300); do
	grep -q ready "$T/storm.out" && break
	sleep 0.1
done
spid=$(pgrep -u "$U" -x labels_storm | head -1)
[ -n "$spid" ] || { echo "the storm did not start"; exit 1; }
sleep 5 # its labels looked up before it runs
kill -USR1 "$spid"
sleep 3
read -r s0 _ l0 < <(status)
from=$(date +%s)
setsid "$pb/tests/integration/burn" "$secs" 1 >"$T/root.out" </dev/null &
bpid=$!
wait "$bpid"
to=$(($(date +%s) + 1))
read -r s1 longest l1 < <(status)
pkill -KILL -u "$U"
# An attach that says the recorder was held up (and exits 1) still wrote
# what the ring has.
fr attach --from "@$from" --to "@$to" --pid "$bpid" --allow-empty -o "$T/root.pb.gz" 2>"$T/err"
[ -s "$T/root.pb.gz" ] || { cat "$T/err"; exit 1; }
grep -h "held up" "$T/err"
cpu=$(sed -n 's/.*cpu_seconds=\([0-9.]*\).*/\1/p' "$T/root.out")
got=$(python3 "$(dirname "$0")/../integration/pprof_samples.py" jsonl "$T/root.pb.gz" |
	python3 -c 'import json, sys; print(sum(json.loads(l)["values"][0] for l in sys.stdin))')
python3 -c "import sys
got, cpu = $got, $cpu
want = 999 * cpu
print('recorder %s, %d threads: root %.2f s CPU, %d of %d samples (%.1f%%)' % (sys.argv[1], $threads, cpu, got, want, 100.0 * got / max(want, 1)))" "$rb"
echo "ingest stalls +$((s1 - s0)) (longest since start $((longest / 1000000)) ms), cpu samples lost +$((l1 - l0))"
grep -c "held up" "$T/d.log" | sed 's/^/"held up" lines in the log: /'
