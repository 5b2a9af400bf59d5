#!/bin/bash
# What allocation sampling costs a program: alloc_load (THREADS threads of
# malloc/free of mixed sizes, as fast as they can) without a preload, with
# a preloaded library that only counts the calls (alloc_count: the cost of
# interposing at all), and with libflightrec at the default mean (512 KiB)
# and at 64 KiB. With libflightrec a thread of the load reads the ring
# every millisecond as the recorder would (--drain), so every sample is
# written in full. Runs are interleaved (each round runs every variant
# once) and the medians reported: operations per second of wall time, per
# second of the workers' CPU time, and per CPU second in each thread's best
# 20 ms (the steadiest on a shared machine), with the slowdown against no
# preload.
#
#   tests/bench/alloc_overhead.sh BUILD_DIR [THREADS] [SECONDS] [RUNS] [LOAD_FLAGS]
#
# Defaults: 4 threads, 3 s, 5 runs. LOAD_FLAGS: --small for blocks of 16
# to 79 bytes only (the interposition's fast path nearly alone).
set -u
B=${1:?usage: alloc_overhead.sh BUILD_DIR [THREADS] [SECONDS] [RUNS]}
N=${2:-4}
S=${3:-3}
RUNS=${4:-5}
FLAGS=${5:-}
LOAD=$B/tests/bench/alloc_load
COUNT=$B/tests/bench/liballoc_count.so
LIB=$B/lib/libflightrec.so.1
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT

variant() { # variant NAME: runs the load once as NAME, prints "ops/s ops/cpu-s"
	case $1 in
	none) "$LOAD" $FLAGS "$N" "$S" ;;
	count) LD_PRELOAD=$COUNT "$LOAD" $FLAGS "$N" "$S" ;;
	default) LD_PRELOAD=$LIB "$LOAD" $FLAGS --drain "$N" "$S" 2>>"$T/samples" ;;
	64k) FLIGHTREC_ALLOC_MEAN=65536 LD_PRELOAD=$LIB "$LOAD" $FLAGS --drain "$N" "$S" \
		2>>"$T/samples" ;;
	esac | awk '{ print $2, $4, $6 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

VARIANTS="none count default 64k"
for _ in $(seq "$RUNS"); do
	for v in $VARIANTS; do variant "$v" >>"$T/$v"; done
done
base_w=$(cut -d' ' -f1 <"$T/none" | median)
base_c=$(cut -d' ' -f2 <"$T/none" | median)
base_b=$(cut -d' ' -f3 <"$T/none" | median)
printf '%-8s %12s %8s %12s %8s %12s %8s\n' variant ops/s slower ops/cpu-s slower best slower
for v in $VARIANTS; do
	w=$(cut -d' ' -f1 <"$T/$v" | median)
	c=$(cut -d' ' -f2 <"$T/$v" | median)
	b=$(cut -d' ' -f3 <"$T/$v" | median)
	awk -v v="$v" -v w="$w" -v c="$c" -v b="$b" -v bw="$base_w" -v bc="$base_c" -v bb="$base_b" \
		'BEGIN { printf "%-8s %12.0f %7.1f%% %12.0f %7.1f%% %12.0f %7.1f%%\n", v, w,
			(bw / w - 1) * 100, c, (bc / c - 1) * 100, b, (bb / b - 1) * 100 }'
done
echo "threads $N, ${S} s, $RUNS runs${FLAGS:+, $FLAGS}; samples written/dropped per libflightrec run:"
sed 's/^/  /' "$T/samples"
