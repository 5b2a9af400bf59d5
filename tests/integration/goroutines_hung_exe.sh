#!/bin/bash
# A dump's goroutine snapshot cannot be held by a program whose executable
# never opens. A Go program runs from a file system that answered the
# open exec made and answers its reads, but never answers another open
# (fuse_hold exec): the search for the session's Go programs, which opens
# each target's executable, must give up within its deadline on a worker
# of its own, and the dump be written without goroutines; the next dump
# too (the trigger engine is not stuck), and the recorder keep answering.
# Before, the search opened executables on the dumping thread itself and
# a dump of such a session never returned.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -n "$GO" ] && [ -x "$GO" ] || skip "needs go (golang-go) to build the Go program"
HOLD_PID=
PROG_PID=
release() {
	[ -n "$PROG_PID" ] && kill -9 "$PROG_PID" 2>/dev/null
	if [ -n "$HOLD_PID" ]; then
		kill -TERM "$HOLD_PID" 2>/dev/null
		wait "$HOLD_PID" 2>/dev/null
		HOLD_PID=
	fi
}
trap 'release; cleanup' EXIT

mkdir -p "$T/go" "$T/bin"
cp "$(dirname "$0")/go/endpoints/main.go" "$T/go/main.go"
(cd "$T/go" && GOPATH=$T/gopath GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= \
	"$GO" build -o "$T/bin/endpoints" main.go) >"$T/build.log" 2>&1 ||
	{ cat "$T/build.log"; fail "go build failed"; }
start_fuse_hold exec "$T/bin/endpoints" 1
D=$FUSE_DIR

cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$T/dumps"},
 "sessions": [{"name": "hung", "targets": {"comm": ["prog"]}}]}
JSON
start_daemon --config "$T/config.json"
"$D/prog" -seconds 120 >"$T/prog.out" 2>&1 &
PROG_PID=$!
wait_until 10 "the program on the held file system" grep -q '^pid=' "$T/prog.out"

for i in 1 2; do
	t0=${EPOCHREALTIME/./}
	p=$(timeout 60 "$FLIGHTREC" dump --session hung --window 2s 2>"$T/dump.err") ||
		{ cat "$T/dump.err"; fail "dump $i of the session failed or hung"; }
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	echo "dump $i: $ms ms"
	[ "$ms" -lt 30000 ] || fail "dump $i took $ms ms"
	[ -f "$p" ] || fail "dump $i: no profile at $p"
	[ -e "${p%.pb.gz}.goroutines.pb.gz" ] && fail "dump $i kept goroutines it could not read"
done
grep -q "looking for the targets' Go programs took more than" "$T/daemon.log" ||
	fail "the recorder did not say why the dump has no goroutines"
daemon_alive || fail "the recorder stopped answering"
release
stop_daemon
echo ok
