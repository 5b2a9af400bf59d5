#!/bin/bash
# The recorder past what it can ingest: what share of the samples it
# loses, whether the losses fall fairly on the processes and CPUs, whether
# it stalls, and how soon it is whole again once the load ends.
#
#   [STACK_COPY=SIZE] tests/bench/overload.sh BUILD [HZ] [SECONDS] [BUSY]
#
# Records cpu at HZ (default 4999) with STACK_COPY bytes of user stack
# copied per sample (default 8KiB; 64KiB makes each sample about eight
# times the work: the way to put the recorder past what it ingests, see
# docs/performance.md) and offcpu, while the
# load runs SECONDS (default 20): BUSY (default 16) always-runnable
# processes, each a copy of burn under a name of its own (ovl0, ovl1, ...),
# a storm of short-lived processes (tests/bench/exec_storm: fork and exec
# /bin/true as fast as it can) and a pair of threads switching 100,000
# times a second (tests/bench/switches pingpong). Then 10 s of quiet.
#
# Meanwhile the ingest thread's state, wait channel and scheduling policy
# are read from /proc every 100 ms into ingest.trace (in the kept
# directory, FR_KEEP=1), so that a stall says what the thread waited on.
#
# Prints: samples kept and lost over the load (the timeline's lost counts,
# and the share), the stalls (status) and the longest; per busy process,
# its samples' CPU time against the CPU time the kernel charged it (the
# spread of that ratio is fairness across processes), the same per CPU;
# and the first second after the load from which no step lost a sample
# (recovery). Needs root.
set -u
b=$(cd "${1:?usage: overload.sh BUILD [HZ] [SECONDS] [BUSY]}" && pwd)
hz=${2:-4999}
secs=${3:-20}
busy=${4:-16}
copy=${STACK_COPY:-8KiB}
T=$(mktemp -d /tmp/fr-overload.XXXXXX)
dpid=
tracer=
pids=()
burners=()
cleanup() {
	for p in "${pids[@]}" $tracer; do kill -9 "$p" 2>/dev/null; done
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null
	wait 2>/dev/null
	[ -n "${FR_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
export FLIGHTREC_SOCKET=$T/sock
fr() { "$b/tools/flightrec" "$@"; }

printf '{"sessions": [{"name": "b", "events": [{"event": "cpu", "hz": %d, "stack_copy": "%s"}, {"event": "offcpu"}]}]}\n' \
	"$hz" "$copy" >"$T/c.json"
"$b/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/c.json" >"$T/d.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do
	fr status >/dev/null 2>&1 && break
	sleep 0.1
done
sleep 3

# The ingest thread (the main thread) every 100 ms: time, state, wchan,
# policy (0 other, 1 fifo), nice, and the kernel stack when it is not
# running.
(
	while kill -0 "$dpid" 2>/dev/null; do
		st=$(awk '{ sub(/.*\) /, ""); print $1, $39, $17 }' "/proc/$dpid/stat" 2>/dev/null)
		wc=$(cat "/proc/$dpid/wchan" 2>/dev/null)
		sc=$(cut -d' ' -f1-3 "/proc/$dpid/syscall" 2>/dev/null)
		echo "$(date +%s.%N) $st $wc $sc"
		case "$wc" in poll*) ;; *) sed 's/^/    /' "/proc/$dpid/stack" 2>/dev/null ;; esac
		sleep 0.1
	done
) >"$T/ingest.trace" &
tracer=$!

read_stalls() {
	fr status --json | python3 -c 'import json, sys
i = json.load(sys.stdin)["ingest"]
print(i["stalls"], i["longest_stall_ns"], i.get("realtime_drops", 0))'
}
read -r st0 _ rt0 < <(read_stalls)
from=$(date +%s)
for i in $(seq 0 $((busy - 1))); do
	cp "$b/tests/integration/burn" "$T/ovl$i"
done
for i in $(seq 0 $((busy - 1))); do
	"$T/ovl$i" $((secs + 5)) 1 >/dev/null 2>&1 &
	pids+=($!)
	burners+=($!)
done
"$b/tests/bench/exec_storm" exec 0 "$secs" >"$T/storm.out" 2>&1 &
pids+=($!)
"$b/tests/bench/switches" pingpong "$secs" >"$T/switches.out" 2>&1 &
pids+=($!)
# Someone asking what happened meanwhile, as an on-call engineer would:
# a profile and a timeline every 2 s.
(
	while sleep 2; do
		fr attach --window 30s -o "$T/q.pb.gz" --allow-loss >/dev/null 2>&1
		fr timeline --window 5m >/dev/null 2>&1
	done
) &
pids+=($!)
sleep "$secs"
# The CPU time the kernel charged each busy process, at the load's end.
load_end=$(date +%s)
for i in $(seq 0 $((busy - 1))); do
	echo "ovl$i $(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/${burners[$i]}/stat" 2>/dev/null || echo 0)"
done >"$T/ticks"
for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
sleep 10
to=$(date +%s)
read -r st1 longest rt1 < <(read_stalls)
fr timeline --from "@$from" --to "@$to" --step 1s --json >"$T/tl.json"
fr timeline --from "@$from" --to "@$load_end" --by label:cpu --top 32 --step 1s --json >"$T/cpus.json"
fr timeline --from "@$from" --to "@$load_end" --by comm --top 32 --step 1s --json >"$T/comms.json"
clk=$(getconf CLK_TCK)
python3 - "$T" "$load_end" "$clk" "$hz" "$secs" <<'PY'
import json, sys
T, load_end, clk, hz, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
tl = json.load(open(T + "/tl.json"))
n = len(tl["lost"])
steps = [tl["start_ns"] // 10**9 + k for k in range(n)]
kept = tl["samples"]
lost_load = sum(v for s, v in zip(steps, tl["lost"]) if s < load_end)
print("cpu at %d Hz, %d s of load: %d samples kept, %d lost during the load (%.1f%% of %d)" % (
    hz, secs, kept, lost_load, 100.0 * lost_load / max(1, kept + lost_load), kept + lost_load))
print("steps stalled: %d" % sum(tl["stalled"]))
after = [s for s, v in zip(steps, tl["lost"]) if v and s >= load_end]
print("recovery: %s" % ("no loss after the load ended" if not after else
      "losses until %d s after the load ended" % (max(after) - load_end + 1)))
ticks = dict(l.split() for l in open(T + "/ticks"))
comms = {g["name"]: g["total"] for g in json.load(open(T + "/comms.json"))["groups"]}
ratios = []
for name, t in sorted(ticks.items()):
    cpu_ns = int(t) * 10**9 // clk
    # Only those among the timeline's top 32 comms (the rest are "other").
    if cpu_ns and name in comms:
        ratios.append(comms[name] / cpu_ns)
if ratios:
    print("fairness across %d busy processes: sampled / charged CPU from %.2f to %.2f (mean %.2f)" % (
        len(ratios), min(ratios), max(ratios), sum(ratios) / len(ratios)))
cpus = [(g["name"], g["total"]) for g in json.load(open(T + "/cpus.json"))["groups"]]
tot = sum(v for _, v in cpus) or 1
print("per CPU: " + ", ".join("cpu %s %.0f%%" % (n, 100.0 * v / tot) for n, v in sorted(cpus)))
PY
echo "ingest stalls +$((st1 - st0)) (longest since start $((longest / 1000000)) ms), realtime drops +$((rt1 - rt0))"
grep -h "held up\|off SCHED_FIFO" "$T/d.log" | tail -5
# What the ingest thread was doing when it was not running.
grep -v '^ ' "$T/ingest.trace" | awk '{ print $2, $5 }' | sort | uniq -c | sort -rn | head -8
