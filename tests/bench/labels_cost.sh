#!/bin/bash
# What reading application labels costs the recorder: flightrecd's CPU
# time (user + system, from /proc) while N threads of labels_demo change
# their labels every millisecond, against the same threads without labels.
#
#   tests/bench/labels_cost.sh BUILD_DIR [THREADS] [SECONDS] [RUNS]
#
# Defaults: 32 threads, 10 s, 3 runs; medians reported; cpu at $LABELS_HZ
# (default 99) Hz. Needs root.
set -u
B=${1:?usage: labels_cost.sh BUILD_DIR [THREADS] [SECONDS] [RUNS]}
N=${2:-32}
S=${3:-10}
RUNS=${4:-3}
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
HZ=${LABELS_HZ:-99}
printf '{"sessions": [{"name": "b", "events": [{"event": "cpu", "hz": %s}]}]}\n' "$HZ" >"$T/c.json"

cpu_ms() { # cpu_ms PID: user + system CPU time in ms
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"
}

run() { # run on|off: prints the recorder's CPU ms over the run
	"$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/s" --config "$T/c.json" \
		>"$T/d.log" 2>&1 &
	local d=$!
	for _ in $(seq 100); do
		FLIGHTREC_SOCKET=$T/s "$B/tools/flightrec" status >/dev/null 2>&1 && break
		sleep 0.1
	done
	sleep 1
	local c0
	c0=$(cpu_ms $d)
	if [ "$1" = on ]; then
		"$B/tests/integration/labels_demo" threads "$N" "$S" >/dev/null
	else
		"$B/tests/integration/labels_demo" threads "$N" "$S" off >/dev/null
	fi
	echo $(($(cpu_ms $d) - c0))
	kill -TERM $d
	wait $d
	rm -rf "$T/ring"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for mode in off on; do
	for _ in $(seq "$RUNS"); do run $mode; done >"$T/$mode"
	echo "labels $mode: recorder CPU $(median <"$T/$mode") ms over ${S} s ($(tr '\n' ' ' <"$T/$mode")), $N threads"
done
