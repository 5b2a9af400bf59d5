#!/bin/bash
# Bytes stored per sample: flightrecd against perf record -a -g, same
# workloads, same rate, same run.
#
#   tests/bench/storage.sh BUILD_DIR [SECONDS]
#
# For 99 Hz and 999 Hz and each workload:
#   a  nothing extra (whatever the machine is doing),
#   b  tests/integration/burn SECONDS 2 (CPU-bound, two threads),
#   c  tests/bench/stacks SECONDS 2 (thousands of distinct stacks),
# starts a private flightrecd on a fresh ring and perf record -a -g, runs
# the workload, stops both (SIGINT: flightrecd stores its open chunk and
# merges its journal, perf writes its file) and compares flightrec's ring
# (`flightrec dump --ring --info --json`: bytes_used, samples: what the
# ring keeps) with perf.data (bytes, and samples counted by perf report
# --stats). Both include their start-up: perf's synthesis of every
# process's mappings, flightrecd's first second. perf is started with -a
# rather than launching the workload (perf record crashes at exit when it
# launches a command while flightrecd runs).
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

workload() {
	case $1 in
	a) sleep "$secs" ;;
	b) "$build/tests/integration/burn" "$secs" 2 >/dev/null ;;
	c) "$build/tests/bench/stacks" "$secs" 2 >/dev/null ;;
	esac
}

printf '%-10s %5s | %9s %9s %7s | %9s %9s | %s\n' workload rate "fr smp" "fr B/smp" "chunks" \
	"perf smp" "perf B/smp" "perf/fr"
for hz in 99 999; do
	for w in a b c; do
		rm -f "$T/ring" "$T/sock"
		"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --hz "$hz" \
			>"$T/d.log" 2>&1 &
		dpid=$!
		for _ in $(seq 50); do
			"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
			sleep 0.1
		done
		perf record --no-buildid --no-buildid-cache -e cpu-clock -F "$hz" -a -g \
			-o "$T/perf.data" >/dev/null 2>&1 &
		ppid=$!
		workload $w
		kill -INT $ppid
		wait $ppid || true
		kill -INT $dpid
		wait $dpid || true
		dpid=
		read -r fb fn fc <<<"$("$build/tools/flightrec" dump --ring "$T/ring" --info --json |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["ring"]; print(r["bytes_used"], r["samples"], r["chunks"])')"
		# perf script (6.1) can crash partway through a busy system-wide
		# file; the stats of perf report count every sample record.
		pn=$(perf report -i "$T/perf.data" --stats 2>/dev/null |
			awk '/SAMPLE events:/ { print $3; exit }')
		pb=$(stat -c %s "$T/perf.data")
		name=$(case $w in a) echo "a idle";; b) echo "b burn";; c) echo "c stacks";; esac)
		awk -v w="$name" -v hz="$hz" -v b="$fb" -v n="$fn" -v c="$fc" \
			-v pb="$pb" -v pn="${pn:-0}" 'BEGIN {
			fb = n ? b / n : 0; ppb = pn ? pb / pn : 0
			printf "%-10s %5d | %9d %9.2f %7d | %9d %9.2f | %.1fx\n", w, hz, n, fb, c, pn, ppb,
				(fb > 0 ? ppb / fb : 0)
		}'
		rm -f "$T/perf.data"
	done
done
