#!/bin/bash
# "unwind": "fp" switches CFI unwinding off for an event: the same
# program without frame pointers as unwind_nofp.sh gives the kernel's
# frame-pointer stacks again, which cannot show cmp's callers, no marker
# frames, and status says the event is unwound by frame pointers. Proves
# the switch works (and what "dwarf" buys). Then a reload to "dwarf"
# reopens the event with a stack copy and the callers come back, and a
# follower at 999 Hz reopens it with rings large enough for the copies.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
NOFP=$BUILD/tests/integration/nofp_sort

printf '{"sessions": [{"name": "fp", "events": [{"event": "cpu", "hz": 99, "unwind": "fp"}]}]}\n' \
	>"$T/config.json"
start_daemon --config "$T/config.json"
grep -q "cpu: recording at 99 Hz, user stacks by frame pointers" "$T/daemon.log" ||
	fail "the cpu source was not opened with frame pointers"

"$NOFP" 6 >"$T/nofp.out" &
NOFP_PID=$!
wait "$NOFP_PID" || fail "nofp_sort failed"
"$FLIGHTREC" attach --window 30s --pid "$NOFP_PID" --format folded -o "$T/nofp.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach --pid failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/nofp.folded")
chain=$(awk '/;main;outer_a;sort_phase;[^;]*qsort[^;]*;(.*;)?cmp [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/nofp.folded")
cmp_all=$(awk '/;cmp [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/nofp.folded")
marked=$(awk '/\[truncated: / { n += $NF } END { print n + 0 }' "$T/nofp.folded")
echo "fp mode: $total samples, $cmp_all in cmp, $chain under main;outer_a;sort_phase;qsort, $marked truncated"
sort -k2 -n -r -t' ' "$T/nofp.folded" | head -5 | cut -c1-300
[ "$total" -ge 50 ] || fail "only $total samples of nofp_sort"
[ "$cmp_all" -gt 0 ] || fail "no sample in cmp"
[ "$chain" = 0 ] || fail "$chain samples show cmp's callers: frame pointers cannot find them here"
[ "$marked" = 0 ] || fail "$marked marker frames with frame-pointer unwinding"
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
grep -q '"unwind": *"fp"' "$T/status.json" || fail "status does not say cpu is unwound by frame pointers"
grep -q '"unwinding"' "$T/status.json" && fail "status shows CFI unwinding for an fp event"

# A reload that asks for "dwarf" (and a larger copy) reopens the event
# with a stack copy; cmp's callers come back.
printf '{"sessions": [{"name": "dw", "events": [{"event": "cpu", "hz": 99, "unwind": "dwarf", "stack_copy": "16KiB"}]}]}\n' \
	>"$T/config.json"
kill -HUP "$DAEMON_PID"
try_until 5 'grep -q "cpu: recording at 99 Hz, user stacks unwound from 16384-byte copies" "$T/daemon.log"'
grep -q "cpu: reopening (was at 99 Hz, user stacks by frame pointers)" "$T/daemon.log" ||
	fail "the reload did not reopen cpu"
grep -q "cpu: recording at 99 Hz, user stacks unwound from 16384-byte copies" "$T/daemon.log" ||
	fail "cpu was not reopened with a 16 KiB stack copy"
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
grep -q '"stack_copy": *16384' "$T/status.json" || fail "status does not show the 16 KiB stack copy"
# A first short run asks for the program's and libc's CFI tables (none
# was needed by frame pointers): the run compared starts once they are
# built, not with its first seconds cut at "unwind table not ready" on a
# busy machine.
"$NOFP" 1 >/dev/null || fail "nofp_sort failed"
"$FLIGHTREC" attach --window 5s -o /dev/null 2>/dev/null # a flush: its requests queued
wait_tables_built
"$NOFP" 4 >"$T/nofp2.out" &
NOFP_PID=$!
wait "$NOFP_PID" || fail "nofp_sort failed"
"$FLIGHTREC" attach --window 30s --pid "$NOFP_PID" --format folded -o "$T/nofp2.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach --pid failed"; }
chain=$(awk '/;main;outer_a;sort_phase;[^;]*qsort[^;]*;(.*;)?cmp [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/nofp2.folded")
echo "after the reload to dwarf: $chain samples under main;outer_a;sort_phase;qsort;...;cmp"
[ "$chain" -gt 0 ] || fail "no stack shows cmp's callers after the reload to dwarf: $(sort -t' ' -k2 -nr "$T/nofp2.folded" | head -5)"

# A follower raising cpu tenfold: the rings sized for 99 Hz would hold
# ~50 ms of 16 KiB copies at 999 Hz, so the event is reopened with larger
# ones rather than retuned; when the follower leaves, the rate is simply
# retuned down.
mkdir -p "$T/follow"
"$FLIGHTREC" attach --follow --count 1 --window 2s --hz 999 -o "$T/follow" \
	>"$T/follow.out" 2>"$T/follow.err" || fail "attach --follow failed: $(cat "$T/follow.err")"
grep -q "cpu: reopening (was at 99 Hz, user stacks unwound from 16384-byte copies)" "$T/daemon.log" ||
	fail "raising cpu to 999 Hz did not reopen it with rings for its copies"
grep -q "cpu: recording at 999 Hz, user stacks unwound from 16384-byte copies" "$T/daemon.log" ||
	fail "cpu was not reopened at 999 Hz"
try_until 5 'grep -q "cpu: rate 999 Hz -> 99 Hz" "$T/daemon.log"'
grep -q "cpu: rate 999 Hz -> 99 Hz" "$T/daemon.log" || fail "cpu did not fall back to 99 Hz"
stop_daemon
echo PASS
