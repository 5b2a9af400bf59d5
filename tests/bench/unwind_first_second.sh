#!/bin/bash
# What a program started after the recorder loses to its unwind tables,
# and what building them costs a machine that runs builds.
#
#   tests/bench/unwind_first_second.sh BUILD_DIR [RUNS] [LOAD]
#
# First second: RUNS times, on a fresh flightrecd (no table built yet,
# "cpu" at 999 Hz, "unwind": "dwarf"), with LOAD busy threads beside it
# (tests/integration/burn), nofp_cxx (else nofp_sort) runs for a second;
# prints how many of its samples end "[truncated: unwind table not
# ready]" and the recorder's table counters.
# Builds: on a fresh flightrecd, 20 compilations (gcc -O2 -c: gcc, cc1 and
# as, each a short-lived exec); prints the recorder's CPU time over them
# and its table counters: each distinct binary should be built once.
# Needs root.
set -eu
build=$(cd "${1:?usage: unwind_first_second.sh BUILD_DIR [RUNS] [LOAD]}" && pwd)
runs=${2:-5}
load=${3:-0}
src=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/fr-first.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -9 $dpid 2>/dev/null; jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$T"' EXIT
prog=$build/tests/integration/nofp_cxx
[ -x "$prog" ] || prog=$build/tests/integration/nofp_sort
echo '{"sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 999, "unwind": "dwarf", "stack_copy": "8KiB"}]}]}' >"$T/config.json"

start() {
	"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/config.json" \
		>"$T/d.log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do "$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break; sleep 0.1; done
	sleep 1 # the /proc scan
}
stop() {
	kill -TERM "$dpid"
	wait "$dpid" || true
	dpid=
	rm -f "$T/ring"
}
tables() {
	"$build/tools/flightrec" status --socket "$T/sock" --json |
		python3 -c 'import json, sys; t = json.load(sys.stdin).get("unwind_tables", {}); print(" ".join("%s %s" % (k, t.get(k, "-")) for k in ("built", "linked", "prefetched", "failed", "pending")))'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

echo "first second of $(basename "$prog") at 999 Hz, $load busy threads beside it:"
for i in $(seq "$runs"); do
	start
	bpid=
	if [ "$load" -gt 0 ]; then
		"$build/tests/integration/burn" 4 "$load" >/dev/null &
		bpid=$!
	fi
	"$prog" 1 0 >/dev/null &
	pid=$!
	wait "$pid"
	sleep 0.5
	"$build/tools/flightrec" attach --socket "$T/sock" --window 30s --pid "$pid" -o "$T/p.pb.gz" 2>/dev/null
	c=$(go tool pprof -symbolize=none -comments "$T/p.pb.gz" 2>/dev/null | grep 'unwinding stopped' || true)
	total=$(go tool pprof -symbolize=none -raw "$T/p.pb.gz" 2>/dev/null | awk '/^Samples:/ { on = 1; next } on && /^ *[0-9]+ / { n += $1 } /^Locations/ { on = 0 } END { print n + 0 }')
	nr=$(echo "$c" | sed -n 's/.*unwind table not ready \([0-9]*\).*/\1/p')
	echo "run $i: ${nr:-0} of $total samples not ready; tables: $(tables)"
	[ -z "$bpid" ] || wait "$bpid"
	stop
done

echo "20 compilations (gcc -O2 -c) on a fresh recorder:"
start
before=$(cpu_ticks "$dpid")
a=$(date +%s%N)
for i in $(seq 20); do gcc -O2 -c "$src/tests/integration/nofp_sort.c" -o "$T/x$i.o"; done
b=$(date +%s%N)
sleep 1
after=$(cpu_ticks "$dpid")
echo "recorder CPU $(( (after - before) * 1000 / $(getconf CLK_TCK) )) ms over $(( (b - a) / 1000000 )) ms of compiling (+1 s); tables: $(tables)"
stop
