#!/bin/bash
# A Go program stripped as Go services ship (-ldflags='-s -w': no .symtab,
# no DWARF, so no CFI at all) with a named call chain (jit/chain_go:
# main.main -> main.collectRows -> main.scoreRow, a busy loop) runs while
# flightrecd records. Its frames are stepped by .gopclntab's stack pointer
# offsets, and the walk ends at runtime.goexit, the goroutine's first
# frame: the stacks are whole, not marked truncated. Of the samples in
# main.scoreRow, at least 95% have main.main as a caller, and under 5% of
# the program's samples are marked truncated.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -n "$GO" ] && [ -x "$GO" ] || skip "needs go (golang-go) to build the Go program"

mkdir -p "$T/go"
cp "$(dirname "$0")/jit/chain_go/main.go" "$T/go/main.go"
(cd "$T/go" && export GOPATH=$T/gopath GO111MODULE=off GOFLAGS= GOCACHE=$T/gocache &&
	"$GO" build -ldflags="-s -w" -o "$T/chain" main.go) >"$T/build.log" 2>&1 ||
	{ cat "$T/build.log"; fail "go build failed"; }
readelf -SW "$T/chain" | grep -Eq '\.(eh_frame|debug_frame)' && fail "the stripped build has CFI"

start_daemon --hz 499
"$T/chain" 40 >"$T/chain.out" &
CHAIN_PID=$!
sleep 4
wait_tables_built
sleep 1
"$FLIGHTREC" attach --window 4s --pid "$CHAIN_PID" --format folded -o "$T/chain.folded" \
	2>"$T/attach.err"
ret=$?
kill "$CHAIN_PID"
wait "$CHAIN_PID" 2>/dev/null
[ "$ret" = 0 ] || { cat "$T/attach.err"; fail "attach --pid failed"; }
stop_daemon
check_jit_chain "$T/chain.folded" 'main\.scoreRow' 'main\.main;'
echo PASS
