#!/bin/bash
# A program whose hot path calls a tiny function of a shared library
# through its PLT runs while flightrecd records: its profile names the stub
# fr_plt_tiny@plt, and no frame after _init (which the stubs follow, and
# used to be named after).
. "$(dirname "$0")/lib.sh"
need_root_perf
PLT_HOT=$BUILD/tests/integration/plt_hot

start_daemon

"$PLT_HOT" 4 >"$T/plt_hot.out" &
HOT_PID=$!
wait "$HOT_PID" || fail "plt_hot failed"
grep -q "^pid=$HOT_PID\$" "$T/plt_hot.out" || fail "plt_hot did not report its pid"

"$FLIGHTREC" attach --window 20s --pid "$HOT_PID" --format folded -o "$T/hot.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach --pid failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/hot.folded")
stub=$(awk '/;fr_plt_tiny@plt [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/hot.folded")
tiny=$(awk '/;fr_plt_tiny [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/hot.folded")
init=$(awk '/;_init[; ]/ { n += $NF } END { print n + 0 }' "$T/hot.folded")
echo "plt_hot: $total samples, $stub on fr_plt_tiny@plt, $tiny in fr_plt_tiny, $init under _init"
sort -k2 -n -r -t' ' "$T/hot.folded" | head -5
[ "$total" -gt 0 ] || fail "no samples of plt_hot"
[ "$tiny" -gt 0 ] || fail "fr_plt_tiny in the shared library is not named"
[ "$stub" -gt 0 ] || fail "no sample on the stub fr_plt_tiny@plt"
[ "$init" = 0 ] || fail "$init samples named _init"
stop_daemon
echo PASS
