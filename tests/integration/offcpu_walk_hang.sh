#!/bin/bash
# A blocked thread whose frame-pointer chain leads into memory nobody
# serves (userfaultfd: a read of it by another process waits until the
# owner answers or exits) must not stop the recorder: the user stacks of
# open waits are walked on a thread of their own. With the process
# blocked, seals go on (drains stay recent, no stall), attach and
# flightrec threads answer, another blocked process is still listed
# blocked in its function, and the daemon stops cleanly on SIGTERM.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ "$(uname -m)" = x86_64 ] || skip "uffd_stack is x86-64 only"
UFFD=$BUILD/tests/integration/uffd_stack

start_daemon
"$UFFD" >"$T/uffd.out" 2>"$T/uffd.err" &
UFFD_PID=$!
try_until 5 'grep -q "^pid=" "$T/uffd.out" || ! kill -0 "$UFFD_PID" 2>/dev/null'
wait_status=0
kill -0 "$UFFD_PID" 2>/dev/null || { wait "$UFFD_PID" || wait_status=$?; }
[ "$wait_status" = 77 ] && skip "$(cat "$T/uffd.err")"
grep -q '^pid=' "$T/uffd.out" || fail "uffd_stack did not start: $(cat "$T/uffd.err")"
# Seals list it (and ask for its walk, which hangs); then an ordinary
# blocked process, listed by the seals after it.
wait_seals 3
"$BLOCK" pipe 2 >"$T/block.out" &
BLOCK_PID=$!
wait_seals 3

"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed"
python3 - "$T/status.json" <<'PY' || fail "the ingest thread stopped: $(cat "$T/status.json")"
import json, sys, time
st = json.load(open(sys.argv[1]))
ing = st["ingest"]
age = time.time() - ing["last_drain_ns"] / 1e9
print("last drain %.2f s ago, stalls %d" % (age, ing["stalls"]))
assert not ing["stalled"] and age < 3
o = [e for e in st["events"] if e["event"] == "offcpu"][0]["offcpu"]
print("stack walks %d, dropped %d" % (o["stack_walks"], o["stack_walks_dropped"]))
assert o["stack_walks"] > 0
PY
timeout 20 "$FLIGHTREC" attach --window 3s --event offcpu --pid "$BLOCK_PID" --format folded \
	-o "$T/block.folded" 2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
grep -q 'fr_read_stuck' "$T/block.folded" ||
	fail "the other blocked process is not shown in fr_read_stuck: $(head -5 "$T/block.folded")"
timeout 20 "$FLIGHTREC" threads --pid "$UFFD_PID" >"$T/threads" 2>&1 ||
	fail "flightrec threads failed: $(cat "$T/threads")"
grep -q 'sleeping in read' "$T/threads" && grep -q 'read_with_bp' "$T/threads" ||
	fail "the hostile thread is not shown blocked in read_with_bp: $(cat "$T/threads")"
# Stops while its walker may still be stuck in the read.
kill -TERM "$DAEMON_PID"
try_until 20 '! kill -0 "$DAEMON_PID" 2>/dev/null' || fail "flightrecd did not stop on SIGTERM"
wait "$DAEMON_PID" || fail "flightrecd exited with status $? on SIGTERM"
DAEMON_PID=
echo "ok"
