#!/bin/bash
# What allocation sampling costs a fixed load: alloc_load paced at RATE
# malloc+free pairs a second across 4 threads (mixed sizes, 570 bytes on
# average) for SECONDS, under a recorder that reads every ring: without
# a preload, with the library that only counts (the cost of interposing),
# with libflightrec at the default mean (512 KiB) and at 64 KiB. For
# each: the load's CPU seconds a second (min/median/max of RUNS runs,
# interleaved) and the recorder's.
#
#   tests/bench/alloc_paced.sh BUILD_DIR [RATE] [SECONDS] [RUNS]
#
# Defaults: 10,000,000 a second, 10 s, 3 runs. Needs root.
set -u
B=${1:?usage: alloc_paced.sh BUILD_DIR [RATE] [SECONDS] [RUNS]}
RATE=${2:-10000000}
SECS=${3:-10}
RUNS=${4:-3}
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
export FLIGHTREC_SOCKET=$T/sock
LIB=$B/lib/libflightrec.so
COUNT=$B/tests/bench/liballoc_count.so

cat >"$T/config.json" <<JSON
{"sessions": [{"name": "mem", "events": [{"event": "cpu", "hz": 99}, {"event": "alloc"}]}]}
JSON
"$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/config.json" \
	>"$T/daemon.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do "$B/tools/flightrec" status >/dev/null 2>&1 && break; sleep 0.1; done

ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
for r in $(seq "$RUNS"); do
	for v in none count default 64k; do
		env=()
		case $v in
		count) env=(LD_PRELOAD="$COUNT") ;;
		default) env=(LD_PRELOAD="$LIB") ;;
		64k) env=(LD_PRELOAD="$LIB" FLIGHTREC_ALLOC_MEAN=65536) ;;
		esac
		# The recorder asks every ring for the session's mean; 64k
		# runs under a session that asks 64 KiB.
		if [ "$v" = 64k ]; then
			sed -i 's/{"event": "alloc"}/{"event": "alloc", "mean": "64KiB"}/' "$T/config.json"
		else
			sed -i 's/{"event": "alloc", "mean": "64KiB"}/{"event": "alloc"}/' "$T/config.json"
		fi
		"$B/tools/flightrec" reload >/dev/null 2>&1
		d0=$(ticks "$DPID")
		out=$(env "${env[@]}" "$B/tests/bench/alloc_load" --rate "$RATE" 4 "$SECS")
		d1=$(ticks "$DPID")
		echo "$v $(echo "$out" | awk '{ print $2, $8 }') $(echo "$d0 $d1 $HZ $SECS" | awk '{ printf "%.4f", ($2 - $1) / $3 / $4 }')"
	done
done >"$T/runs"
echo "rate $RATE a second, 4 threads, $SECS s, $RUNS runs: load CPU s/s and recorder CPU s/s (min/median/max)"
for v in none count default 64k; do
	awk -v v="$v" '$1 == v { print $2, $3, $4 }' "$T/runs" | python3 -c '
import sys
rows = [list(map(float, l.split())) for l in sys.stdin]
def mmm(i):
    x = sorted(r[i] for r in rows)
    return "%.3f/%.3f/%.3f" % (x[0], x[len(x) // 2], x[-1])
print("%-8s ops/s %.2fM  load %s  recorder %s" % (sys.argv[1], sorted(r[0] for r in rows)[len(rows) // 2] / 1e6, mmm(1), mmm(2)))
' "$v"
done
"$B/tools/flightrec" status | grep '^Allocation sampling'
