#!/bin/bash
# A binary without CFI whose frame-pointer walk reaches the thread's start
# is whole: fp_nocfi (no .eh_frame, no .debug_frame, no libc; frame
# pointers; its own _start clears rbp) runs fp_main -> fp_outer ->
# fp_inner while flightrecd records. The recorder has no table for it and
# walks its frame pointers up to _start, whose saved rbp is 0: the
# outermost frame. Before, every sample ended "no unwind info" there (as
# a stripped Go program's did at its goroutine's first frame). Of the
# samples in fp_inner, at least 95% have fp_main above it, and under 5%
# are marked truncated.
. "$(dirname "$0")/lib.sh"
need_root_perf

start_daemon --hz 499
"$BUILD/tests/integration/fp_nocfi" 30 &
FP_PID=$!
sleep 2
wait_tables_built
sleep 3
"$FLIGHTREC" attach --window 3s --pid "$FP_PID" --format folded -o "$T/fp.folded" \
	2>"$T/attach.err"
ret=$?
kill "$FP_PID"
wait "$FP_PID" 2>/dev/null
[ "$ret" = 0 ] || { cat "$T/attach.err"; fail "attach --pid failed"; }
stop_daemon
check_jit_chain "$T/fp.folded" 'fp_inner' '_start;fp_main;'
echo PASS
