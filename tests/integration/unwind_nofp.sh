#!/bin/bash
# Stacks of code built without frame pointers, unwound with CFI tables at
# ingest (the default "unwind": "dwarf"): nofp_sort, built like Debian's
# packages (-O2, no frame pointers) and calling into libc's qsort (no
# frame pointers either), shows main -> outer_a -> sort_phase -> qsort ->
# ... -> cmp in one stack, with few samples whose unwinding stopped early.
# The same program deleted while it runs (its table is read through the
# mapped inode) and spending its time in the vDSO (whose table comes from
# the kernel's image) unwinds as deep. Then code without CFI (code the
# program wrote into anonymous memory): its samples end in the
# "[truncated: no unwind info]" marker rather than in callers made up
# from stale stack words.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
[ "$(uname -m)" = x86_64 ] || skip "CFI unwinding is x86-64 only"
NOFP=$BUILD/tests/integration/nofp_sort

# tables_settled: waits until no unwind table is being built.
tables_settled() {
	try_until 30 '"$FLIGHTREC" status --json >"$T/status.json" 2>/dev/null &&
		grep -q "\"unwind_tables\": *{[^}]*\"pending\": *0[,}]" "$T/status.json"' && return 0
	fail "unwind tables still pending after 30 s: $(cat "$T/status.json")"
}

start_daemon

# A first run has the tables of nofp_sort and libc built (they are kept by
# build id), so that what is checked below is the steady state, not how
# fast this machine builds them.
"$NOFP" 1 >/dev/null || fail "nofp_sort failed"
tables_settled
"$NOFP" 8 >"$T/nofp.out" &
NOFP_PID=$!
wait "$NOFP_PID" || fail "nofp_sort failed"
grep -q "^pid=$NOFP_PID\$" "$T/nofp.out" || fail "nofp_sort did not report its pid"
"$FLIGHTREC" attach --window 30s --pid "$NOFP_PID" -o "$T/nofp.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --pid failed"; }
traces "$T/nofp.pb.gz" "$T/nofp.traces"
total=$(awk '{ n += $1 } END { print n + 0 }' "$T/nofp.traces")
chain=$(awk '/(^| |;)main;outer_a;sort_phase;[^;]*qsort[^;]*;(.*;)?cmp$/ { n += $1 } END { print n + 0 }' "$T/nofp.traces")
cmp_all=$(awk '/;cmp$/ { n += $1 } END { print n + 0 }' "$T/nofp.traces")
marked=$(awk '/\[truncated: / { n += $1 } END { print n + 0 }' "$T/nofp.traces")
echo "nofp_sort: $total samples, $cmp_all in cmp, $chain of them under main;outer_a;sort_phase;qsort, $marked truncated"
sort -n -r "$T/nofp.traces" | head -5 | cut -c1-300
[ "$total" -ge 100 ] || fail "only $total samples of nofp_sort"
[ "$cmp_all" -gt 0 ] || fail "no sample in cmp"
# Every sample in cmp is reached through the whole chain (the sanitizer
# build adds its qsort interceptor to it), but for the few
# caught where unwinding cannot be exact.
[ $((chain * 100)) -ge $((cmp_all * 90)) ] ||
	fail "only $chain of $cmp_all samples in cmp show main -> outer_a -> sort_phase -> qsort"
[ $((marked * 100)) -le $((total * 5)) ] || fail "$marked of $total stacks were truncated"
"$GO" tool pprof -symbolize=none -raw "$T/nofp.pb.gz" >"$T/nofp.pprof.raw" 2>/dev/null
grep -q "unwinding stopped early" "$T/nofp.pprof.raw" && [ "$marked" = 0 ] &&
	fail "a comment counts truncated stacks the profile does not have"

# A copy deleted at once: nothing left at its path when its first sample
# asks for its table (nofp_sort_b has a build id of its own, so no table
# built before serves it). Its functions cannot be named from the file
# any more, so the check is on depth: the stacks unwound (those taken
# before its table was built aside) reach libc's __libc_start_main,
# through the copy's frames.
cp "$BUILD/tests/integration/nofp_sort_b" "$T/nofp_deleted"
"$T/nofp_deleted" 4 vdso >"$T/deleted.out" &
DEL_PID=$!
# Deleted once it runs (it prints its pid first), not before its exec.
try_until 5 'grep -qs "^pid=$DEL_PID\$" "$T/deleted.out"'
rm "$T/nofp_deleted"
wait "$DEL_PID" || fail "the deleted copy of nofp_sort failed"
"$FLIGHTREC" attach --window 30s --pid "$DEL_PID" -o "$T/deleted.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --pid of the deleted copy failed"; }
traces "$T/deleted.pb.gz" "$T/deleted.traces"
dtotal=$(awk '!/\[truncated: unwind table not ready\]/ { n += $1 } END { print n + 0 }' "$T/deleted.traces")
dvdso=$(awk '/__libc_start_main;__libc_start_call_main;[^;]*;[^;]*;[^;]*;[^;]*clock_gettime/ { n += $1 } END { print n + 0 }' "$T/deleted.traces")
echo "deleted copy in the vDSO: $dtotal samples with its table, $dvdso from __libc_start_main through __libc_start_call_main and 3 frames of the copy to clock_gettime"
sort -n -r "$T/deleted.traces" | head -3 | cut -c1-300
[ "$dtotal" -ge 50 ] || fail "only $dtotal samples of the deleted copy were unwound with its table"
[ $((dvdso * 100)) -ge $((dtotal * 80)) ] ||
	fail "only $dvdso of $dtotal samples of the deleted copy unwind from clock_gettime to __libc_start_main"

# Code without CFI: the marker, not a made-up caller. nofp_sort's "jit"
# work runs in code it wrote into anonymous memory, with rbp cleared: the
# frame pointer cannot say who called it either, so every stack must stop
# there, marked, with no caller below it (main, outer_a would be guesses
# from stale stack words).
"$NOFP" 4 jit >"$T/jit.out" &
JIT_PID=$!
wait "$JIT_PID"
ret=$?
[ "$ret" = 77 ] && skip "the JIT case writes x86-64 code only"
[ "$ret" = 0 ] || fail "nofp_sort jit failed"
"$FLIGHTREC" attach --window 20s --pid "$JIT_PID" -o "$T/jit.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --pid of nofp_sort jit failed"; }
traces "$T/jit.pb.gz" "$T/jit.traces"
jtotal=$(awk '{ n += $1 } END { print n + 0 }' "$T/jit.traces")
jit_marked=$(awk '/^[0-9]+ \[truncated: no unwind info\];[^;]*$/ { n += $1 } END { print n + 0 }' "$T/jit.traces")
jit_callers=$(awk '/;outer_a;|;main;/ && /truncated: no unwind info/ { n += $1 } END { print n + 0 }' "$T/jit.traces")
echo "nofp_sort jit: $jtotal samples, $jit_marked end at the JIT code in [truncated: no unwind info]"
sort -n -r "$T/jit.traces" | head -5 | cut -c1-300
[ "$jtotal" -ge 50 ] || fail "only $jtotal samples of nofp_sort jit"
[ $((jit_marked * 100)) -ge $((jtotal * 90)) ] ||
	fail "only $jit_marked of $jtotal samples in code without CFI end in the marker"
[ "$jit_callers" = 0 ] || fail "$jit_callers samples give the JIT code callers it cannot know"
"$GO" tool pprof -symbolize=none -raw "$T/jit.pb.gz" >"$T/jit.pprof.raw" 2>/dev/null
grep -q "cpu: unwinding stopped early in [0-9]* of [0-9]* samples:.*no unwind info [0-9]" \
	"$T/jit.pprof.raw" || fail "the profile has no comment counting the truncated stacks"
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q "^unwind: " "$T/status" || fail "status does not show the unwinding: $(cat "$T/status")"
stop_daemon
echo PASS
