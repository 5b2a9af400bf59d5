#!/bin/bash
# End-to-end latency of `flightrec attach --window WINDOW` against a live
# flightrecd that has recorded a busy machine for that long.
#
#   tests/bench/attach_latency.sh BUILD_DIR [HZ] [WINDOW_SECONDS] [RUNS]
#
# Needs root. Prints each run's wall time and the median, and the first
# run (cold: the kernel's symbols and every file parsed) apart from the
# median of the later ones (warm: files parsed by an earlier attach are
# kept by the daemon, core/query/symbols.h).
set -eu
build=$(cd "${1:?usage: attach_latency.sh BUILD_DIR [HZ] [WINDOW_SECONDS] [RUNS]}" && pwd)
hz=${2:-99}
secs=${3:-60}
runs=${4:-5}
T=$(mktemp -d /tmp/fr-latency.XXXXXX)
trap 'kill -9 $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$T"' EXIT

"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --hz "$hz" >"$T/d.log" 2>&1 &
dpid=$!
for _ in $(seq 50); do "$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break; sleep 0.1; done
"$build/tests/integration/burn" "$secs" 2 >/dev/null
times=()
for i in $(seq "$runs"); do
	a=$(date +%s%N)
	"$build/tools/flightrec" attach --socket "$T/sock" --window "${secs}s" -o "$T/p.pb.gz" 2>"$T/err"
	b=$(date +%s%N)
	times+=($(( (b - a) / 1000000 )))
done
echo "attach --window ${secs}s at $hz Hz on $(nproc) CPUs: $(tail -1 "$T/err" | sed 's/^flightrec: //')"
printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END {
	printf "wall ms per run:"; for (i = 1; i <= NR; i++) printf " %d", v[i]; printf "; median %d ms\n", v[int((NR + 1) / 2)] }'
if [ "$runs" -gt 1 ]; then
	printf '%s\n' "${times[@]:1}" | sort -n | awk -v first="${times[0]}" '{ v[NR] = $1 } END {
		printf "first run (cold) %d ms; later runs (warm) median %d ms\n", first, v[int((NR + 1) / 2)] }'
fi
