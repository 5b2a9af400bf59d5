#!/bin/bash
# A C++ program with a member function template and a function named as
# Rust's legacy scheme names one runs while flightrecd records: top,
# attach's and dump's folded stacks show the demangled names (the Rust
# one without its hash), and pprof carries them as Function.name with the
# symbol as the binary has it as system_name, which go tool pprof shows.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
CXX_NAMES=$BUILD/tests/integration/cxx_names
[ -x "$CXX_NAMES" ] || skip "needs a C++ compiler (g++) to build cxx_names"

start_daemon
"$CXX_NAMES" 3 >"$T/cxx.out" &
PID=$!
wait "$PID" || fail "cxx_names failed"

CXX='shop::Cart::total<unsigned int>(std::vector<unsigned int, std::allocator<unsigned int> > const&)'
CXX_RAW='_ZN4shop4Cart5totalIjEEmRKSt6vectorIT_SaIS3_EE'
RUST='<mycrate::hash::Fnv as core::hash::Hasher>::write'
RUST_RAW='_ZN57_$LT$mycrate..hash..Fnv$u20$as$u20$core..hash..Hasher$GT$5write17h0123456789abcdefE'

"$FLIGHTREC" top --window 30s --pid "$PID" -n 5 >"$T/top.txt" 2>"$T/top.err" ||
	{ cat "$T/top.err"; fail "top failed"; }
cat "$T/top.txt"
grep -qF "$CXX" "$T/top.txt" || fail "top does not show the C++ function demangled"
grep -qF "  $RUST" "$T/top.txt" || fail "top does not show the Rust function demangled"
grep -q '_ZN' "$T/top.txt" && fail "top shows a mangled name"

"$FLIGHTREC" attach --window 30s --pid "$PID" --format folded -o "$T/attach.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach --format folded failed"; }
grep -qF ";$RUST " "$T/attach.folded" || fail "attach's folded stacks lack $RUST"
grep -qF ";unsigned long $CXX" "$T/attach.folded" || fail "attach's folded stacks lack $CXX"
grep -q '_ZN' "$T/attach.folded" && fail "attach's folded stacks have a mangled name"

"$FLIGHTREC" attach --window 30s --pid "$PID" -o "$T/cxx.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach failed"; }
# -raw prints a function as "name file:line s=START(system_name)", the
# system name only when it differs from the name.
"$GO" tool pprof -raw "$T/cxx.pb.gz" >"$T/raw.txt" 2>"$T/pprof.err" ||
	{ cat "$T/pprof.err"; fail "go tool pprof -raw failed"; }
grep -F "$RUST " "$T/raw.txt" | grep -qF "($RUST_RAW)" ||
	fail "pprof has no function named $RUST with system_name $RUST_RAW"
grep -F "$CXX" "$T/raw.txt" | grep -qF "($CXX_RAW" ||
	fail "pprof has no function named $CXX with system_name $CXX_RAW"
# go tool pprof shows Function.name as it is (it demangles only a
# function whose name is its system_name).
"$GO" tool pprof -top "$T/cxx.pb.gz" >"$T/pprof-top.txt" 2>>"$T/pprof.err"
grep -qF "$RUST" "$T/pprof-top.txt" && grep -qF "$CXX" "$T/pprof-top.txt" ||
	{ cat "$T/pprof-top.txt"; fail "go tool pprof -top does not show the demangled names"; }

# From the ring file, with no recorder: the same names.
stop_daemon
"$FLIGHTREC" dump --ring "$RING" --window 1m --pid "$PID" --format folded -o "$T/dump.folded" \
	2>"$T/dump.err" || { cat "$T/dump.err"; fail "dump --format folded failed"; }
grep -qF ";$RUST " "$T/dump.folded" && grep -qF ";unsigned long $CXX" "$T/dump.folded" ||
	fail "dump's folded stacks lack the demangled names"
echo PASS
