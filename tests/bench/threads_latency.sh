#!/bin/bash
# Wall time of `flightrec threads --pid P` for a process of N threads
# blocked in read() (tests/integration/block pipe N), against a live
# flightrecd recording cpu and offcpu.
#
#   tests/bench/threads_latency.sh BUILD_DIR [THREADS] [RUNS]
#
# Needs root. Prints each run's wall time and the median.
set -eu
build=$(cd "${1:?usage: threads_latency.sh BUILD_DIR [THREADS] [RUNS]}" && pwd)
n=${2:-10000}
runs=${3:-5}
T=$(mktemp -d /tmp/fr-threads.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null || true; done; rm -rf "$T"' EXIT

echo '{"sessions": [{"name": "t", "events": [{"event": "cpu"}, {"event": "offcpu"}]}]}' >"$T/c.json"
"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/c.json" \
	>"$T/d.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
	"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
	sleep 0.1
done
"$build/tests/integration/block" pipe "$n" >"$T/b.out" &
pids+=($!)
for _ in $(seq 100); do
	grep -q '^pid=' "$T/b.out" && break
	sleep 0.1
done
pid=$(sed -n 's/^pid=//p' "$T/b.out")
sleep 3
times=()
for i in $(seq "$runs"); do
	a=$(date +%s%N)
	"$build/tools/flightrec" threads --socket "$T/sock" --pid "$pid" --json >"$T/out.json"
	b=$(date +%s%N)
	times+=($(((b - a) / 1000000)))
	echo "run $i: $(((b - a) / 1000000)) ms, $(grep -o '"tid":' "$T/out.json" | wc -l) threads"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print "median: " a[int((NR + 1) / 2)] " ms" }'
