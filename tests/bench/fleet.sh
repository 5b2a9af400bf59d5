#!/bin/bash
# The fleet benchmark (docs/performance.md, "Fleet queries"): a synthetic
# fleet of HOSTS hosts x SECONDS at HZ on 2 CPUs, written to rings and
# shipped by the exporter's batch code (bench_fleet) to two real
# ClickHouse shards; then `flightrec fleet attach --window 1h` over the
# Distributed table, timed RUNS times, beside its peer in the same run:
# `flightrec dump --ring` of one host's ring over the same hour (the local
# path, one host). Bytes per sample: ClickHouse's active parts
# (system.parts, compressed, both tables, both shards) over the samples
# shipped, beside the rings' chunk bytes over their samples.
#
#   FR_BUILD_DIR=BUILD tests/bench/fleet.sh [HOSTS] [SECONDS] [HZ] [RUNS]
set -u
HOSTS=${1:-50}
SECS=${2:-3600}
HZ=${3:-19}
RUNS=${4:-5}
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/clickhouse_lib.sh"
need_clickhouse
BENCH=$BUILD/tests/bench/bench_fleet
ch_start_cluster 2 frbench
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frbench >/dev/null ||
	fail "init-schema"
mkdir -p "$T/rings"
start=$(date +%s.%N)
"$BENCH" "$(ch_urls)" flightrec "$T/rings" "$HOSTS" "$HZ" 2 "$SECS" 10 >"$T/gen.out" ||
	fail "bench_fleet failed"
gen_s=$(echo "$(date +%s.%N) - $start" | bc)
cat "$T/gen.out"
echo "generated and shipped in ${gen_s} s"
read -r _ w0 _ w1 < <(grep window_start_ns "$T/gen.out")
from=$((w0 / 1000000000))
to=$((w1 / 1000000000))

# Let both shards merge their parts, so the sizes are those of a store
# at rest (and the queries read what a long-lived store holds).
for i in 1 2; do
	ch_query "$i" "OPTIMIZE TABLE flightrec.samples FINAL" >/dev/null
	ch_query "$i" "OPTIMIZE TABLE flightrec.stacks FINAL" >/dev/null
done

timeit() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null 2>"$T/timeit.err" || { cat "$T/timeit.err" >&2; return 1; }
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}
fleet_ms=() local_ms=()
for r in $(seq 1 "$RUNS"); do
	fleet_ms+=("$(timeit "$FLIGHTREC" fleet attach --clickhouse "$(ch_urls)" \
		--from "$from" --to "$to" -o "$T/fleet.pb.gz")") || fail "fleet attach"
	local_ms+=("$(timeit "$FLIGHTREC" dump --ring "$T/rings/host-00.ring" \
		--from "$from" --to "$to" -o "$T/local.pb.gz")") || fail "dump --ring"
done
"$FLIGHTREC" fleet attach --clickhouse "$(ch_urls)" --from "$from" --to "$to" \
	-o "$T/fleet.pb.gz" 2>&1
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fm=$(median "${fleet_ms[@]}")
lm=$(median "${local_ms[@]}")
echo "fleet attach ${HOSTS} hosts x ${SECS}s, ms per run: ${fleet_ms[*]} (median $fm)"
echo "dump --ring one host x ${SECS}s, ms per run: ${local_ms[*]} (median $lm)"
echo "ratio fleet/local-one-host: $(echo "scale=2; $fm / $lm" | bc)"

bytes=0 rows=0
for i in 1 2; do
	b=$(ch_query "$i" "SELECT sum(data_compressed_bytes) FROM system.parts WHERE database = 'flightrec' AND active AND table IN ('samples', 'stacks')")
	n=$(ch_query "$i" "SELECT count() FROM flightrec.samples")
	bytes=$((bytes + b))
	rows=$((rows + n))
done
kept=$(ch_query 1 "SELECT sum(count) FROM flightrec.samples_all")
echo "clickhouse: $bytes bytes compressed, $rows rows, $kept samples:" \
	"$(echo "scale=2; $bytes / $kept" | bc) bytes per sample"
echo "per column of samples (shard 1):"
ch_query 1 "SELECT name, data_compressed_bytes, data_uncompressed_bytes FROM system.columns WHERE database = 'flightrec' AND table = 'samples' ORDER BY data_compressed_bytes DESC"
echo "stacks (shard 1):"
ch_query 1 "SELECT count(), sum(data_compressed_bytes) FROM system.parts WHERE database = 'flightrec' AND active AND table = 'stacks'"
grep ring_bytes_per_sample "$T/gen.out"
