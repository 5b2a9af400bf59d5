#!/bin/bash
# pprof hygiene, on a process running code it wrote into anonymous memory
# (jit_spin, named in its perf map): the profile's first mapping, which
# pprof readers take for the main binary, is the program's executable
# (with --pid, and with --comm where the process with the most samples
# decides), not the JIT code's memory or a library; the anonymous mapping
# is named "[anon]", which go tool pprof knows not to open; and go tool
# pprof -top and -raw print no warning about files it could not open.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

start_daemon
start_jit_spin 4
exe=$(readlink "/proc/$JIT_PID/exe")
"$FLIGHTREC" attach --window 20s --pid "$JIT_PID" -o "$T/pid.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --pid failed"; }
"$FLIGHTREC" attach --window 20s --comm jit_spin -o "$T/comm.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --comm failed"; }
kill "$JIT_PID"
wait "$JIT_PID" 2>/dev/null
rm -f "$MAP"

for p in pid comm; do
	"$GO" tool pprof -raw "$T/$p.pb.gz" >"$T/$p.raw" 2>"$T/$p.raw.err" ||
		{ cat "$T/$p.raw.err"; fail "go tool pprof -raw $p failed"; }
	"$GO" tool pprof -top "$T/$p.pb.gz" >"$T/$p.top" 2>"$T/$p.top.err" ||
		{ cat "$T/$p.top.err"; fail "go tool pprof -top $p failed"; }
	sed -n '/^Mappings/,$p' "$T/$p.raw"
	first=$(awk '/^Mappings/ { getline; print $3; exit }' "$T/$p.raw")
	[ "$first" = "$exe" ] || fail "$p: the first mapping is $first, not jit_spin's $exe"
	grep -q '^[0-9]*: 0x[0-9a-f/x]* \[anon\] ' "$T/$p.raw" ||
		fail "$p: no mapping named [anon] for the JIT code"
	grep -Eq '^[0-9]+: 0x[0-9a-f/x]* //anon' "$T/$p.raw" && fail "$p: a mapping still named //anon"
	for out in "$T/$p.raw.err" "$T/$p.top.err"; do
		if grep -Eq 'symbolization failed|binary filenames not available|Main binary filename|no such file' "$out"; then
			cat "$out"
			fail "$p: go tool pprof warns about files it could not open"
		fi
	done
	grep -q '^File: jit_spin' "$T/$p.top" || fail "$p: go tool pprof -top names another main binary"
done
stop_daemon
echo PASS
