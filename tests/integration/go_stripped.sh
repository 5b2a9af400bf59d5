#!/bin/bash
# Go programs named as Go developers name them, stripped or not. The
# endpoints program (tests/integration/go/endpoints: handlers /a and /b
# under pprof labels, /b three times the work of /a) is built as is and
# with -ldflags='-s -w' (no .symtab, no DWARF: how Go services ship), and
# both builds run while flightrecd records. In each profile, read back by
# `flightrec top`, main.handleA and main.handleB are named, under
# main.serve through runtime/pprof.Do, /b with about three times /a's
# samples; the frames of both carry main.go file:line. Then the
# stripped binary is deleted while it runs, and once it has exited its
# frames are still named, from the symbol cache's copy.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -n "$GO" ] && [ -x "$GO" ] || skip "needs go (golang-go) to build the Go program"
SRC=$(dirname "$0")/go/endpoints/main.go

mkdir -p "$T/go" "$T/bin"
cp "$SRC" "$T/go/main.go"
# The stripped build as `go build` makes it by default: no GNU build id,
# so the symbol cache knows its copy by its Go build id's content hash.
(cd "$T/go" && export GOPATH=$T/gopath GO111MODULE=off GOFLAGS= &&
	"$GO" build -o "$T/bin/endpoints" main.go &&
	"$GO" build -ldflags="-s -w" -o "$T/bin/endpoints_stripped" main.go) \
	>"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "go build failed"; }
readelf -SW "$T/bin/endpoints_stripped" | grep -q '\.symtab' && fail "the stripped build has a .symtab"
readelf -SW "$T/bin/endpoints_stripped" | grep -q '\.gopclntab' || fail "the stripped build has no .gopclntab"
readelf -n "$T/bin/endpoints_stripped" | grep -q 'GNU' && fail "the stripped build has a GNU note"
# The id the recorder knows it by: the last part of its Go build id, in hex.
gobid=$("$GO" tool buildid "$T/bin/endpoints_stripped") || fail "go tool buildid failed"
bid=$(printf '%s' "${gobid##*/}" | od -An -tx1 | tr -d ' \n')

# samples FOLDED PATTERN: samples whose stack matches the awk regex.
samples() {
	awk -v re="$2" '$0 ~ re { n += $NF } END { print n + 0 }' "$1"
}

# check_profile NAME PID: the profile of PID names the handlers, in the
# stack Go shows, with the 25/75 split.
check_profile() {
	local name=$1 pid=$2 a b total work
	"$FLIGHTREC" attach --window 20s --pid "$pid" -o "$T/$name.pb.gz" 2>"$T/attach.err" ||
		{ cat "$T/attach.err"; fail "attach --pid $pid ($name) failed"; }
	"$FLIGHTREC" attach --window 20s --pid "$pid" --format folded -o "$T/$name.folded" \
		2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach --format folded failed"; }
	"$FLIGHTREC" top "$T/$name.pb.gz" -n 40 >"$T/$name.top" || fail "flightrec top $name failed"
	grep -qw 'main.handleA' "$T/$name.top" && grep -qw 'main.handleB' "$T/$name.top" ||
		{ cat "$T/$name.top"; fail "$name: flightrec top does not name main.handleA and main.handleB"; }
	total=$(awk '{ n += $NF } END { print n + 0 }' "$T/$name.folded")
	a=$(samples "$T/$name.folded" ';main\.serve;runtime/pprof\.Do;main\.serve\.func1;main\.handleA;main\.work ')
	b=$(samples "$T/$name.folded" ';main\.serve;runtime/pprof\.Do;main\.serve\.func2;main\.handleB;main\.work ')
	echo "$name: $total samples, main.handleA $a, main.handleB $b"
	[ "$a" -ge 10 ] && [ "$b" -ge 30 ] ||
		{ sort -k2 -n -r "$T/$name.folded" | head -5; fail "$name: the handlers' stacks are not named"; }
	# The samples in main.work that have their whole stack (not those
	# taken before the process's unwind table was built).
	work=$(samples "$T/$name.folded" ';main\.work [0-9]+$')
	[ $(((a + b) * 10)) -ge $((work * 8)) ] ||
		{ sort -k2 -n -r "$T/$name.folded" | head -8; fail "$name: only $((a + b)) of the $work samples in main.work have the handlers' stack"; }
	# /b does three times the work of /a: 75% of their samples, within 10 points.
	within "$((b * 100 / (a + b)))" 75 10 || fail "$name: main.handleB has $b of $((a + b)) handler samples"
}

start_daemon
"$T/bin/endpoints" -seconds 12 >"$T/normal.out" &
NORMAL_PID=$!
"$T/bin/endpoints_stripped" -seconds 12 >"$T/stripped.out" &
STRIPPED_PID=$!
sleep 6
wait_seals # recorded while they run: mappings, build ids, the cache's copy
check_profile normal "$NORMAL_PID"
check_profile stripped "$STRIPPED_PID"
rm -f "$T/bin/endpoints_stripped"
wait "$NORMAL_PID" || fail "the normal build failed"
wait "$STRIPPED_PID" || fail "the stripped build failed"
wait_seals
check_profile gone "$STRIPPED_PID"

# Both builds' frames have their file and line, from .gopclntab (libdw
# finds no unit of Go's DWARF, which has no .debug_aranges).
for name in normal stripped; do
	"$GO" tool pprof -symbolize=none -lines -top -nodecount=200 "$T/$name.pb.gz" \
		>"$T/$name.lines" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "pprof -lines failed"; }
	grep -Eq 'main\.work .*main\.go:[0-9]+' "$T/$name.lines" ||
		{ head -20 "$T/$name.lines"; fail "main.work has no main.go:LINE in the $name build's profile"; }
done

# The stripped binary is gone: the names of its last profile came from
# the symbol cache's copy, which keeps .gopclntab, known by the Go build
# id (before, a Go binary without a GNU build id had no copy: its frames
# were file+0x... once it was gone).
[ -f "$T/symbols/$bid" ] || { ls -la "$T/symbols" >&2; fail "the symbol cache has no copy of $bid"; }
readelf -SW "$T/symbols/$bid" | grep -q '\.gopclntab' || fail "the cached copy has no .gopclntab"
stop_daemon
echo PASS
