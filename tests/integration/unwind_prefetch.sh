#!/bin/bash
# A program started after the recorder has its unwind tables before its
# first samples: the table of a new executable mapping (an exec, a
# dlopen) is asked for when its MMAP2 record arrives, not at the first
# sample that needs it. A copy of nofp_cxx at a path of its own sleeps
# first: it has mapped its binary and libraries and runs nothing, so
# only that request can have its table built while it sleeps (asked for
# at its first sample, the table would come after it started working).
# Then, once it worked a second, (almost) none of its samples end in
# "[truncated: unwind table not ready]", and status counts the requests.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
[ "$(uname -m)" = x86_64 ] || skip "CFI unwinding is x86-64 only"
PROG=$BUILD/tests/integration/nofp_cxx
[ -x "$PROG" ] || skip "no C++ compiler: nofp_cxx was not built"

echo '{"sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 999, "unwind": "dwarf", "stack_copy": "8KiB"}]}]}' >"$T/config.json"
start_daemon --config "$T/config.json" -vv
cp "$PROG" "$T/fresh_cxx"
# 10 s asleep: ample for a build that takes milliseconds, even on a
# machine busy with builds.
"$T/fresh_cxx" 1 10 >"$T/prog.out" &
pid=$!
built=
try_until 10 'grep -q "unwind table of $T/fresh_cxx:" "$T/daemon.log"' && built=1
# Its CPU time so far, in clock ticks: its start-up only (a few ticks;
# it works 100 a second).
ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo gone)
[ -n "$built" ] || fail "no table of $T/fresh_cxx was built while it slept"
echo "table of fresh_cxx built while it had used $ticks clock ticks"
[ "$ticks" != gone ] && [ "$ticks" -le 10 ] ||
	fail "the table of fresh_cxx came only after it ran ($ticks ticks)"
# Asked for at its MMAP2, not by a sample of its start-up (which would
# have it built in time too).
grep -q "unwind table of $T/fresh_cxx asked for as it is mapped" "$T/daemon.log" ||
	fail "the table of fresh_cxx was not asked for when it was mapped"
"$FLIGHTREC" status --json >"$T/status.json"
grep -q '"prefetched": *[1-9]' "$T/status.json" ||
	fail "status counts no table asked for at a mapping's MMAP2: $(cat "$T/status.json")"

wait "$pid" || fail "fresh_cxx failed"
"$FLIGHTREC" attach --window 60s --pid "$pid" -o "$T/p.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --pid failed"; }
"$GO" tool pprof -symbolize=none -comments "$T/p.pb.gz" >"$T/comments" 2>/dev/null
total=$("$GO" tool pprof -symbolize=none -raw "$T/p.pb.gz" 2>/dev/null |
	awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 } on && /^ *[0-9]+ / { n += $1 } END { print n + 0 }')
not_ready=$(sed -n 's/.*unwind table not ready \([0-9]*\).*/\1/p' "$T/comments")
not_ready=${not_ready:-0}
cat "$T/comments"
echo "fresh_cxx: $total samples, $not_ready of them ended \"unwind table not ready\""
[ "$total" -ge 100 ] || fail "only $total samples of fresh_cxx"
# Its libraries (libstdc++, libm, libc) are asked for in the same
# start-up; one that a machine busy with others' builds has not finished
# by the end of the sleep may cost a sample or two.
[ $((not_ready * 100)) -le "$total" ] || fail "$not_ready of $total samples had no table ready"
stop_daemon
