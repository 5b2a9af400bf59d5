#!/bin/bash
# Stopping the recorder while a dump requested by hand is being written.
# The dump runs on the request's connection thread, inside the trigger
# engine (which it locks again when the dump returns), so the recorder may
# free the engine, and anything else requests use, only after the socket
# closed and that thread finished. The dumps directory here is a file
# system that never answers a create (fuse_hold), which holds the dump in
# flight until the test lets it go; the test waits until a thread of the
# recorder is inside it before asking the recorder to stop. Freeing the
# engine first is a use after free that the address sanitizer build
# reports (and a plain build may survive by chance).
. "$(dirname "$0")/lib.sh"
need_root_perf

HOLD_PID=
release() {
	if [ -n "$HOLD_PID" ]; then
		kill -TERM "$HOLD_PID" 2>/dev/null
		wait "$HOLD_PID" 2>/dev/null
		HOLD_PID=
	fi
}
trap 'release; cleanup' EXIT

start_fuse_hold
DUMPS=$FUSE_DIR
[ -d "$DUMPS" ] || fail "fuse_hold did not mount"

cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$DUMPS"},
 "sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"

"$FLIGHTREC" dump --session all --window 1s >"$T/dump.out" 2>"$T/dump.err" &
DUMP_PID=$!

# The dump's thread waits on the file system: the kernel shows where.
inside=0
try_until 30 'grep -qs "request_wait_answer\\|fuse" /proc/"$DAEMON_PID"/task/*/wchan ||
	{ kill -0 "$DUMP_PID" 2>/dev/null || fail "the dump ended before reaching the dumps directory: $(cat "$T/dump.err")"; false; }' &&
	inside=1
[ "$inside" = 1 ] || fail "no thread of the recorder waits in the dumps directory's file system"

kill -TERM "$DAEMON_PID"
try_until 30 'grep -q "received Terminated; storing the open chunk and exiting" "$T/daemon.log"'
grep -q 'received Terminated' "$T/daemon.log" || fail "the recorder did not take SIGTERM"

# Let the dump go: its create fails, the connection thread finishes, and
# only then may the engine go.
release
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=
[ "$rc" = 0 ] || fail "flightrecd exited with status $rc when stopped during a dump"
grep -q 'dump of session all (manual) failed' "$T/daemon.log" ||
	fail "the dump in flight did not end as failed"
grep -q 'stopped; the ring .* is complete' "$T/daemon.log" || fail "the recorder did not stop cleanly"
grep -q 'AddressSanitizer\|runtime error' "$T/daemon.log" && fail "the sanitizer reported an error"
wait "$DUMP_PID" && fail "the dump cut by the stop reported success"
echo "stop_during_dump: ok"
