#!/bin/bash
# Bytes per sample and retention (hours of recording per GiB of ring) as a
# user's machine sees them, with the recorder's embedded default
# configuration (cpu at 99 Hz and offcpu, what `flightrecd` alone records)
# and with cpu alone at 99 Hz (offcpu left out of the configuration):
#
#   tests/bench/retention.sh BUILD_DIR [SECONDS]      (default 60)
#
# For each scenario it starts a private flightrecd on a fresh ring, runs
# the scenario for SECONDS, stops the recorder (SIGINT: it stores its open
# chunk and merges its journal) and reads what the ring keeps
# (`flightrec dump --ring --info --json`: bytes_used, samples, the span
# oldest..newest). Scenarios:
#   idle   nothing extra: whatever the machine is doing (its load average
#          is printed; on a shared machine this is not an idle box)
#   cpu    tests/integration/burn SECONDS 2: two threads busy, 2 CPUs
#   procs  300 short-lived processes a second (sh -c with ~2 ms of work
#          each, spawned on a 10 ms grid; the rate achieved is printed)
# Prints per configuration and scenario: samples (and how many of them are
# offcpu), samples/s, B/sample, KiB/s, hours per GiB and days in the
# default 256 MiB ring, and its retention as a ratio of the cpu scenario's
# with the same configuration, measured in the same run.
# Needs root. Figures, not pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: retention.sh BUILD_DIR [SECONDS]}" && pwd)
secs=${2:-60}
T=$(mktemp -d /tmp/fr-retention.XXXXXX)
dpid=
wpid=
trap '[ -n "$wpid" ] && kill $wpid 2>/dev/null; [ -n "$dpid" ] && kill -9 $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

if [ "$(id -u)" != 0 ]; then
	echo "retention.sh: needs root (system-wide perf events)" >&2
	exit 77
fi

# spawn RATE SECONDS: RATE processes a second, each ~2 ms of shell work;
# prints how many it started.
spawn() {
	python3 - "$1" "$2" <<'PY'
import os, subprocess, sys, time
rate, secs = int(sys.argv[1]), float(sys.argv[2])
work = "i=0; while [ $i -lt 300 ]; do i=$((i+1)); done"
start = time.monotonic(); n = 0; kids = []
while time.monotonic() - start < secs:
    due = int((time.monotonic() - start) * rate)
    while n < due:
        kids.append(subprocess.Popen(["/bin/sh", "-c", work]))
        n += 1
    kids = [k for k in kids if k.poll() is None]
    time.sleep(0.01)
for k in kids:
    k.wait()
print(n)
PY
}

cat >"$T/cpu-only.json" <<'JSON'
{"sessions": [{"name": "cpu", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
# samples_of EVENT: the samples of EVENT the stopped ring holds.
samples_of() {
	"$build/tools/flightrec" dump --ring "$T/ring" --window 1h --event "$1" -o /dev/null 2>&1 |
		sed -n 's/.*: \([0-9]*\) samples,.*/\1/p'
}

printf '%-8s %-6s %5s | %8s %8s %8s %8s %8s | %9s %11s | %s\n' config scenario load samples \
	offcpu "smp/s" "B/sample" "KiB/s" "h per GiB" "d in 256MiB" "vs cpu"
for config in default cpu-only; do
	declare -A hours=()
	for s in cpu idle procs; do
		rm -f "$T/ring" "$T/sock"
		args=()
		[ "$config" = cpu-only ] && args=(--config "$T/cpu-only.json")
		"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" "${args[@]}" \
			>"$T/d.log" 2>&1 &
		dpid=$!
		for _ in $(seq 100); do
			"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
			sleep 0.1
		done
		load=$(cut -d' ' -f1 /proc/loadavg)
		note=
		case $s in
		idle) sleep "$secs" ;;
		cpu) "$build/tests/integration/burn" "$secs" 2 >/dev/null ;;
		procs) note="$(spawn 300 "$secs") processes started" ;;
		esac
		load=$(awk -v a="$load" '{ printf "%.1f", (a + $1) / 2 }' /proc/loadavg)
		kill -INT $dpid
		wait $dpid || true
		dpid=
		read -r bytes n <<<"$("$build/tools/flightrec" dump --ring "$T/ring" --info --json |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["ring"]; print(r["bytes_used"], r["samples"])')"
		off=0
		[ "$config" = default ] && off=$(samples_of offcpu)
		h=$(awk -v b="$bytes" -v t="$secs" 'BEGIN { print (b > 0 ? 1073741824 / (b / t) / 3600 : 0) }')
		hours[$s]=$h
		awk -v c="$config" -v s="$s" -v l="$load" -v b="$bytes" -v n="$n" -v o="${off:-0}" \
			-v t="$secs" -v h="$h" -v hc="${hours[cpu]}" -v note="$note" 'BEGIN {
			printf "%-8s %-6s %5s | %8d %8d %8.1f %8.2f %8.2f | %9.1f %11.2f | %.2fx%s\n", c, s, l,
				n, o, n / t, (n ? b / n : 0), b / t / 1024, h, h * 256 / 1024 / 24,
				(hc > 0 ? h / hc : 0), (note != "" ? "  (" note ")" : "")
		}'
	done
done
