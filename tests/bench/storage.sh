#!/bin/bash
# Bytes stored per sample: flightrecd against perf record -a -g, same
# workloads, same rate, same run.
#
#   tests/bench/storage.sh BUILD_DIR [SECONDS]
#
# For 99 Hz and 999 Hz, starts a private flightrecd and, for each workload,
# runs perf record -a -g alongside it while the workload runs:
#   a  nothing extra (whatever the machine is doing),
#   b  tests/integration/burn SECONDS 2 (CPU-bound, two threads),
#   c  tests/bench/stacks SECONDS 2 (thousands of distinct stacks).
# flightrec's bytes are the ring chunks stored over the interval
# (`flightrec status --json`: bytes_used, samples); perf's are the
# perf.data file. perf is started with -a rather than launching the
# workload (perf record crashes at exit when it launches a command while
# flightrecd runs) and stopped with SIGINT.
# Needs root. Figures, not pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: storage.sh BUILD_DIR [SECONDS]}" && pwd)
secs=${2:-10}
T=$(mktemp -d /tmp/fr-storage.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -9 $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

if [ "$(id -u)" != 0 ]; then
	echo "storage.sh: needs root (system-wide perf events)" >&2
	exit 77
fi
command -v perf >/dev/null || { echo "storage.sh: perf not found" >&2; exit 77; }

ring_stat() {
	"$build/tools/flightrec" status --socket "$T/sock" --json |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["ring"]; print(r["bytes_used"], r["samples"])'
}

workload() {
	case $1 in
	a) sleep "$secs" ;;
	b) "$build/tests/integration/burn" "$secs" 2 >/dev/null ;;
	c) "$build/tests/bench/stacks" "$secs" 2 >/dev/null ;;
	esac
}

printf '%-10s %5s | %9s %9s | %9s %9s | %s\n' workload rate "fr smp" "fr B/smp" \
	"perf smp" "perf B/smp" "perf/fr"
for hz in 99 999; do
	rm -f "$T/ring" "$T/sock"
	"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --hz "$hz" \
		>"$T/d.log" 2>&1 &
	dpid=$!
	for _ in $(seq 50); do
		"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
		sleep 0.1
	done
	for w in a b c; do
		# Start on a fresh chunk.
		sleep 1.2
		read -r b0 n0 <<<"$(ring_stat)"
		timeout -s INT "$secs" perf record --no-buildid --no-buildid-cache \
			-e cpu-clock -F "$hz" -a -g -o "$T/perf.data" >/dev/null 2>&1 &
		ppid=$!
		workload $w
		wait $ppid || true
		sleep 1.2
		read -r b1 n1 <<<"$(ring_stat)"
		# perf script (6.1) can crash partway through a busy system-wide
		# file; the stats of perf report count every sample record.
		pn=$(perf report -i "$T/perf.data" --stats 2>/dev/null |
			awk '/SAMPLE events:/ { print $3; exit }')
		pb=$(stat -c %s "$T/perf.data")
		name=$(case $w in a) echo "a idle";; b) echo "b burn";; c) echo "c stacks";; esac)
		awk -v w="$name" -v hz="$hz" -v b=$((b1 - b0)) -v n=$((n1 - n0)) \
			-v pb="$pb" -v pn="${pn:-0}" 'BEGIN {
			fb = n ? b / n : 0; ppb = pn ? pb / pn : 0
			printf "%-10s %5d | %9d %9.2f | %9d %9.2f | %.1fx\n", w, hz, n, fb, pn, ppb,
				(fb > 0 ? ppb / fb : 0)
		}'
		rm -f "$T/perf.data"
	done
	kill -INT $dpid
	wait $dpid || true
	dpid=
done
