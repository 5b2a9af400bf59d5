#!/bin/bash
# Daemon memory under concurrent heavy attaches: RSS idle, the peak while
# N attaches of the same window run at once (for each N given), and RSS
# once they are done.
#
#   tests/bench/query_memory.sh BUILD_DIR [SECONDS] [HZ] [PATHS] [QUERY_MEMORY] [N...]
#
# Records SECONDS (default 34) of tests/bench/stacks (2 threads, PATHS
# distinct call paths, default 65536) at HZ (default 10000), with
# limits.query_memory = QUERY_MEMORY (default 256MiB), then runs N
# (default 8 and 64) concurrent `flightrec attach --window SECONDS`
# (QUERY_MEMORY "-": the daemon's default, for builds without the key).
# VmRSS is sampled every 50 ms from /proc/PID/status; VmHWM is reset
# (clear_refs 5) before each round, so the peak is that round's. Needs root.
set -eu
build=$(cd "${1:?usage: query_memory.sh BUILD_DIR [SECONDS] [HZ] [PATHS] [QUERY_MEMORY] [N...]}" && pwd)
secs=${2:-34}
hz=${3:-10000}
paths=${4:-65536}
budget=${5:-256MiB}
shift $(( $# < 5 ? $# : 5 ))
rounds=("$@")
[ ${#rounds[@]} -gt 0 ] || rounds=(8 64)
T=$(mktemp -d /tmp/fr-qmem.XXXXXX)
trap 'kill -9 $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$T"' EXIT

rss() { awk -v k="$2:" '$1 == k { print $2 }' /proc/"$1"/status; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }

# QUERY_MEMORY "-" leaves the key out, for a daemon that predates it.
limits='"max_clients": 128'
[ "$budget" = - ] || limits="$limits, \"query_memory\": \"$budget\""
printf '{"limits": {%s}, "sessions": [{"name": "bench", "events": [{"event": "cpu", "hz": %d}]}]}\n' \
	"$limits" "$hz" >"$T/config.json"
"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/config.json" \
	>"$T/d.log" 2>&1 &
dpid=$!
for _ in $(seq 50); do "$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break; sleep 0.1; done
echo "flightrecd at $hz Hz on $(nproc) CPUs, limits.query_memory $budget; RSS at start $(mib "$(rss $dpid VmRSS)")"
"$build/tests/bench/stacks" "$secs" 2 "$paths" >/dev/null
sleep 1
echo "after recording ${secs}s of stacks ($paths paths): RSS $(mib "$(rss $dpid VmRSS)")"

for n in "${rounds[@]}"; do
	echo 5 >/proc/$dpid/clear_refs
	idle=$(rss $dpid VmRSS)
	peak=$idle
	pids=()
	for i in $(seq "$n"); do
		"$build/tools/flightrec" attach --socket "$T/sock" --window "${secs}s" \
			-o "$T/p$i.pb.gz" >/dev/null 2>"$T/err$i" &
		pids+=($!)
	done
	a=$(date +%s%N)
	while kill -0 "${pids[@]}" 2>/dev/null; do
		r=$(rss $dpid VmRSS)
		[ "$r" -gt "$peak" ] && peak=$r
		sleep 0.05
	done
	b=$(date +%s%N)
	ok=0 busy=0 other=0
	for i in $(seq "$n"); do
		if wait "${pids[$((i - 1))]}"; then ok=$((ok + 1))
		elif grep -q busy "$T/err$i"; then busy=$((busy + 1))
		else other=$((other + 1)); sed 's/^/  failed: /' "$T/err$i"
		fi
	done
	hwm=$(rss $dpid VmHWM)
	sleep 2
	after=$(rss $dpid VmRSS)
	echo "$n concurrent attaches: idle $(mib "$idle"), peak sampled $(mib "$peak"), VmHWM $(mib "$hwm"), after $(mib "$after"); $ok ok, $busy busy, $other failed; $(( (b - a) / 1000000 )) ms"
	grep -h '^flightrec: ' "$T/err1" | tail -1 | sed 's/^/  first: /' || true
	rm -f "$T"/p*.pb.gz
done
