#!/bin/bash
# Same workload, same rate, same run: flightrecd vs perf record -a -g.
#
#   tests/bench/compare_perf.sh BUILD_DIR [HZ] [SECONDS] [THREADS]
#
# Prints bytes stored per sample and the recorder's own CPU time for both.
# Needs root. Figures, not pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: compare_perf.sh BUILD_DIR [HZ] [SECONDS] [THREADS]}" && pwd)
hz=${2:-99}
secs=${3:-10}
threads=${4:-2}
T=$(mktemp -d /tmp/fr-compare.XXXXXX)
trap 'kill -9 $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$T"' EXIT

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)

"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --hz "$hz" >"$T/d.log" 2>&1 &
dpid=$!
for _ in $(seq 50); do "$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break; sleep 0.1; done
before=$(ticks $dpid)
s0=$("$build/tools/flightrec" status --socket "$T/sock" --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["ring"]; print(r["bytes_used"], r["samples"])')

TIMEFORMAT='%U %S'
perf_cpu=$( { time timeout -s INT "$secs" perf record --no-buildid --no-buildid-cache \
	-e cpu-clock -F "$hz" -a -g -o "$T/perf.data" >/dev/null 2>&1 ; } 2>&1 &
	"$build/tests/integration/burn" "$secs" "$threads" >/dev/null; wait)
sleep 1.2
after=$(ticks $dpid)
s1=$("$build/tools/flightrec" status --socket "$T/sock" --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["ring"]; print(r["bytes_used"], r["samples"])')

# perf script (6.1) can crash partway through a busy system-wide file; the
# stats of perf report count every sample record.
perf_samples=$(perf report -i "$T/perf.data" --stats 2>/dev/null |
	awk '/SAMPLE events:/ { print $3; exit }')
perf_samples=${perf_samples:-0}
perf_bytes=$(stat -c %s "$T/perf.data")
read -r b0 n0 <<<"$s0"
read -r b1 n1 <<<"$s1"
fr_cpu=$(awk -v a="$before" -v b="$after" -v t="$tck" 'BEGIN { printf "%.2f", (b - a) / t }')
perf_cpu_s=$(awk -v u="$(echo "$perf_cpu" | awk '{print $1}')" -v s="$(echo "$perf_cpu" | awk '{print $2}')" 'BEGIN { printf "%.2f", u + s }')
echo "workload: burn $secs s x $threads threads, whole machine at $hz Hz per CPU"
awk -v b=$((b1 - b0)) -v n=$((n1 - n0)) -v pb="$perf_bytes" -v pn="$perf_samples" \
	-v fc="$fr_cpu" -v pc="$perf_cpu_s" 'BEGIN {
	fb = n ? b / n : 0; ppb = pn ? pb / pn : 0
	printf "flightrec: %d samples, %d bytes, %.1f bytes/sample, recorder CPU %.2f s\n", n, b, fb, fc
	printf "perf:      %d samples, %d bytes, %.1f bytes/sample, recorder CPU %.2f s\n", pn, pb, ppb, pc
	if (fb > 0) printf "perf.data is %.1fx larger per sample\n", ppb / fb
}'
