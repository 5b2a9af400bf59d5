#!/bin/bash
# The perf map of a JIT process that has exited: jit_spin runs code it
# wrote into anonymous memory, named in /tmp/perf-PID.map; the recorder
# copies the map into its symbol cache while samples hit that code. After
# the process is gone and its map deleted, attach and dump --ring still
# name the code jit_spin (and a dump given an empty cache does not).
. "$(dirname "$0")/lib.sh"
need_root_perf

start_daemon

start_jit_spin 4
wait_until 10 "the perf map's copy in the symbol cache" 'ls "$T/symbols/perf-$JIT_PID-"*.map >/dev/null 2>&1'
kill "$JIT_PID"
wait "$JIT_PID" 2>/dev/null
rm -f "$MAP"
ls "$T/symbols/perf-$JIT_PID-"*.map >/dev/null 2>&1 ||
	{ ls -la "$T/symbols" >&2; fail "no copy of the perf map in the symbol cache"; }

jit_named() {
	awk '/;jit_spin [0-9]+$/ { n += $NF } END { print n + 0 }' "$1"
}

"$FLIGHTREC" attach --window 30s --pid "$JIT_PID" --format folded -o "$T/jit.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach --pid failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/jit.folded")
jit=$(jit_named "$T/jit.folded")
echo "exited jit_spin, attach: $total samples, $jit named jit_spin"
[ "$total" -gt 0 ] || fail "no samples of jit_spin"
[ "$jit" -gt 0 ] || fail "the JIT code of an exited process is not named"
stop_daemon

"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$JIT_PID" --format folded \
	-o "$T/dump.folded" >/dev/null 2>"$T/dump.err" || { cat "$T/dump.err"; fail "dump failed"; }
jit=$(jit_named "$T/dump.folded")
echo "exited jit_spin, dump --ring: $jit named jit_spin"
[ "$jit" -gt 0 ] || fail "dump --ring does not name the JIT code"
mkdir -m 700 "$T/empty"
"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$JIT_PID" --format folded \
	--symbol-cache "$T/empty" -o "$T/nocache.folded" >/dev/null 2>"$T/dump.err" ||
	{ cat "$T/dump.err"; fail "dump failed"; }
[ "$(jit_named "$T/nocache.folded")" = 0 ] || fail "JIT code named without the cache"
echo PASS
