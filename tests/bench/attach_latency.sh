#!/bin/bash
# End-to-end latency of `flightrec attach --window WINDOW` against a live
# flightrecd that has recorded a busy machine for that long.
#
#   tests/bench/attach_latency.sh BUILD_DIR [HZ] [WINDOW_SECONDS] [RUNS] [OTHER_BUILD_DIR]
#
# Needs root. Prints each run's wall time and the median, and the first
# run (cold: the kernel's symbols and every file parsed) apart from the
# median of the later ones (warm: files parsed by an earlier attach are
# kept by the daemon, core/symbols/symbols.h).
#
# With OTHER_BUILD_DIR, that build's recorder runs beside the first one
# over the same workload, and the two are attached to in turn: on a
# shared machine, whatever else runs lands in both windows alike.
set -eu
build=$(cd "${1:?usage: attach_latency.sh BUILD_DIR [HZ] [WINDOW_SECONDS] [RUNS] [OTHER_BUILD_DIR]}" && pwd)
hz=${2:-99}
secs=${3:-60}
runs=${4:-5}
builds=("$build")
[ -n "${5:-}" ] && builds+=("$(cd "$5" && pwd)")
T=$(mktemp -d /tmp/fr-latency.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null || true; done; rm -rf "$T"' EXIT

for k in "${!builds[@]}"; do
	"${builds[$k]}/recorder/flightrecd" --ring "$T/ring$k" --socket "$T/sock$k" --hz "$hz" \
		>"$T/d$k.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 50); do
		"${builds[$k]}/tools/flightrec" status --socket "$T/sock$k" >/dev/null 2>&1 && break
		sleep 0.1
	done
done
"$build/tests/integration/burn" "$secs" 2 >/dev/null
declare -A times
for i in $(seq "$runs"); do
	for k in "${!builds[@]}"; do
		a=$(date +%s%N)
		"${builds[$k]}/tools/flightrec" attach --socket "$T/sock$k" --window "${secs}s" \
			-o "$T/p$k.pb.gz" 2>"$T/err$k"
		b=$(date +%s%N)
		times[$k]+="$(( (b - a) / 1000000 )) "
	done
done
for k in "${!builds[@]}"; do
	t=(${times[$k]})
	[ "${#builds[@]}" -gt 1 ] && echo "${builds[$k]}:"
	echo "attach --window ${secs}s at $hz Hz on $(nproc) CPUs: $(tail -1 "$T/err$k" | sed 's/^flightrec: //')"
	printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END {
		printf "wall ms per run:"; for (i = 1; i <= NR; i++) printf " %d", v[i]
		printf "; median %d ms\n", v[int((NR + 1) / 2)] }'
	if [ "$runs" -gt 1 ]; then
		printf '%s\n' "${t[@]:1}" | sort -n | awk -v first="${t[0]}" '{ v[NR] = $1 } END {
			printf "first run (cold) %d ms; later runs (warm) median %d ms\n", first,
				v[int((NR + 1) / 2)] }'
	fi
done
