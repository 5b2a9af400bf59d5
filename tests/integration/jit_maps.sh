#!/bin/bash
# A program running code it wrote into anonymous memory, named in
# /tmp/perf-PID.map as JIT compilers do, runs while flightrecd records:
# attached to while it still runs, its profile names the code jit_spin
# rather than leaving an address in //anon.
. "$(dirname "$0")/lib.sh"
need_root_perf

start_daemon

start_jit_spin 4

"$FLIGHTREC" attach --window 20s --pid "$JIT_PID" --format folded -o "$T/jit.folded" \
	2>"$T/attach.err"
ret=$?
kill "$JIT_PID"
wait "$JIT_PID" 2>/dev/null
rm -f "$MAP"
[ "$ret" = 0 ] || { cat "$T/attach.err"; fail "attach --pid failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/jit.folded")
jit=$(awk '/;jit_spin [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/jit.folded")
echo "jit_spin: $total samples, $jit named jit_spin"
sort -k2 -n -r -t' ' "$T/jit.folded" | head -5
[ "$total" -gt 0 ] || fail "no samples of jit_spin"
[ "$jit" -gt 0 ] || fail "the JIT code is not named from its perf map"
stop_daemon
echo PASS
