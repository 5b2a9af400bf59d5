#!/bin/bash
# A 1-hour timeline against a 1-hour profile of the same ring.
#
#   tests/bench/timeline.sh BUILD_DIR [HZ] [CPUS] [SECONDS] [RUNS]
#
# Writes a ring of SECONDS (default 3600) of the synthetic stream at HZ
# (default 999) on CPUS (default 2) CPUs with the recorder's own chunk
# builder and ring (tests/bench/bench_timeline_ring.c: sealed every second,
# merged into groups by the journal), then runs, RUNS times each (default
# 5), alternating, `flightrec dump --ring F --timeline --window 1h` and
# `flightrec dump --ring F --window 1h --format folded` (the cheapest
# profile: no gzip, no pprof) and prints the best wall and CPU (user + sys)
# time of each and their ratio. The machines are shared: CPU time is the
# steadier figure; both come from the same runs.
set -eu
build=$(cd "${1:?usage: timeline.sh BUILD_DIR [HZ] [CPUS] [SECONDS] [RUNS]}" && pwd)
hz=${2:-999}
cpus=${3:-2}
secs=${4:-3600}
runs=${5:-5}
T=$(mktemp -d /tmp/fr-tlbench.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$build/tests/bench/bench_timeline_ring" "$T/ring" "$hz" "$cpus" "$secs" >/dev/null
"$build/tools/flightrec" dump --ring "$T/ring" --info | sed -n 's/^stored: */ring: /p'

# best CMD...: "WALL CPU" of the fastest of $runs runs (by CPU time).
measure() {
	/usr/bin/time -f "%e %U %S" -o "$T/time" "$@" >/dev/null 2>&1
	awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$T/time"
}
tl_best="" fo_best=""
for _ in $(seq "$runs"); do
	tl=$(measure "$build/tools/flightrec" dump --ring "$T/ring" --timeline --window 1h)
	fo=$(measure "$build/tools/flightrec" dump --ring "$T/ring" --window 1h --format folded \
		-o "$T/out.folded")
	tl_best=$(printf '%s\n%s\n' "$tl" "$tl_best" | sed '/^$/d' | sort -k2 -n | head -1)
	fo_best=$(printf '%s\n%s\n' "$fo" "$fo_best" | sed '/^$/d' | sort -k2 -n | head -1)
done
read -r tw tc <<<"$tl_best"
read -r fw fc <<<"$fo_best"
echo "timeline --window 1h:      wall ${tw} s, CPU ${tc} s (best of $runs)"
echo "folded profile --window 1h: wall ${fw} s, CPU ${fc} s (best of $runs)"
awk -v a="$fc" -v b="$tc" -v c="$fw" -v d="$tw" \
	'BEGIN { printf "ratio folded / timeline: CPU %.1fx, wall %.1fx\n", a / b, c / d }'
