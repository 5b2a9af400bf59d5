#!/bin/bash
# A Go program built with cgo (import "C": linked by the system linker)
# has CFI (.eh_frame) for its C code and the runtime's cgo glue but none
# for its Go functions: their rows come from the stack pointer offsets of
# .gopclntab, merged into the CFI's table where it has none. The
# endpoints program (tests/integration/go/endpoints) with a C function
# called once is built so, as is and with -ldflags='-s -w' (no .symtab,
# no DWARF), and both builds run while the recorder samples them at
# 999 Hz: most samples in main.work have their whole stack above them
# (main.handleA or main.handleB, under main.serve through pprof.Do), as
# in a build without cgo, not a stack stopped at main.work.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -n "$GO" ] && [ -x "$GO" ] || skip "needs go (golang-go) to build the Go program"
command -v gcc >/dev/null || skip "needs gcc to build a cgo program"
SRC=$(dirname "$0")/go/endpoints/main.go

mkdir -p "$T/go" "$T/bin"
cp "$SRC" "$T/go/main.go"
cat >"$T/go/cgo.go" <<'GO'
package main

// int one(void) { return 1; }
import "C"

func init() { _ = C.one() }
GO
(cd "$T/go" && export GOPATH=$T/gopath GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= \
	CGO_ENABLED=1 CC=gcc &&
	"$GO" build -o "$T/bin/cgo" . &&
	"$GO" build -ldflags="-s -w" -o "$T/bin/cgo_stripped" .) \
	>"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "go build (cgo) failed"; }
for name in cgo cgo_stripped; do
	readelf -SW "$T/bin/$name" >"$T/$name.sections"
	grep -q '\.eh_frame ' "$T/$name.sections" || fail "the $name build has no .eh_frame"
	grep -q '\.gopclntab' "$T/$name.sections" || fail "the $name build has no .gopclntab"
	readelf -d "$T/bin/$name" | grep -q NEEDED || fail "the $name build is not linked by the system linker"
done
grep -q '\.symtab' "$T/cgo_stripped.sections" && fail "the stripped build has a .symtab"

# samples FOLDED PATTERN: samples whose stack matches the awk regex.
samples() {
	awk -v re="$2" '$0 ~ re { n += $NF } END { print n + 0 }' "$1"
}

# top_stacks FOLDED: its 8 stacks with the most samples.
top_stacks() {
	awk '{ print $NF "\t" $0 }' "$1" | sort -n -r | head -8 | cut -f2-
}

# check_profile NAME PID: of PID's samples over 6 seconds at 999 Hz, those
# in main.work mostly have the handlers' whole stack above them.
check_profile() {
	local name=$1 pid=$2 a b work out
	rm -rf "$T/follow"
	mkdir "$T/follow"
	"$FLIGHTREC" attach --follow --count 1 --window 6s --hz 999 --pid "$pid" \
		--format folded -o "$T/follow" 2>"$T/attach.err" ||
		{ cat "$T/attach.err"; fail "attach --follow --pid $pid ($name) failed"; }
	out=$(ls "$T"/follow/* | head -1)
	[ -n "$out" ] || fail "attach --follow wrote no profile"
	mv "$out" "$T/$name.folded"
	a=$(samples "$T/$name.folded" ';main\.serve;runtime/pprof\.Do;main\.serve\.func1;main\.handleA;main\.work ')
	b=$(samples "$T/$name.folded" ';main\.serve;runtime/pprof\.Do;main\.serve\.func2;main\.handleB;main\.work ')
	work=$(samples "$T/$name.folded" ';main\.work [0-9]+$')
	echo "$name: $work samples in main.work, $((a + b)) with the whole stack (main.handleA $a, main.handleB $b)"
	[ "$work" -ge 300 ] || { top_stacks "$T/$name.folded"; fail "$name: only $work samples in main.work"; }
	[ $(((a + b) * 10)) -ge $((work * 8)) ] || {
		top_stacks "$T/$name.folded"
		echo "$name: only $((a + b)) of the $work samples in main.work have the handlers' stack"
		BAD="$BAD $name"
	}
}

BAD=
PIDS=()
start_daemon
for name in cgo cgo_stripped; do
	"$T/bin/$name" -seconds 20 >"$T/$name.out" &
	PIDS+=($!)
done
sleep 2
check_profile cgo "${PIDS[0]}"
check_profile cgo_stripped "${PIDS[1]}"
kill "${PIDS[@]}" 2>/dev/null
wait "${PIDS[@]}" 2>/dev/null
stop_daemon
[ -z "${BAD:-}" ] || fail "stacks stopped early in:$BAD"
echo PASS
