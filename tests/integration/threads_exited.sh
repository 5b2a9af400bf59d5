#!/bin/bash
# flightrec threads --pid of a process that has exited: instead of "no such
# process", it says when the process exited (the recorder's black box
# holds its exit) and prints the `threads --pid P --at TIME` that shows
# its threads a second before; that command, run as printed, lists its
# readers blocked in fr_read_stuck. A pid the ring never saw exit is said
# not to be running.
. "$(dirname "$0")/lib.sh"
need_root_perf

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "threads", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
"$FLIGHTREC" status | grep -q "^event: *exit at every process exit" ||
	skip "the black box records no exits here: $("$FLIGHTREC" status | grep '^event: *exit')"

"$BLOCK" mix 2 >"$T/block.out" &
BLOCK_PID=$!
try_until 5 'grep -q "^pid=" "$T/block.out"'
sleep 3
kill "$BLOCK_PID"
wait "$BLOCK_PID" 2>/dev/null
wait_seals

"$FLIGHTREC" threads --pid "$BLOCK_PID" >"$T/gone.txt" 2>"$T/gone.err" ||
	fail "threads --pid of an exited process failed: $(cat "$T/gone.err")"
cat "$T/gone.txt"
grep -q "^no threads: process $BLOCK_PID (block) exited at [0-9:]* UTC" "$T/gone.txt" ||
	fail "threads --pid does not say $BLOCK_PID exited: $(cat "$T/gone.txt")"
! grep -q "no such process" "$T/gone.txt" || fail "threads --pid says no such process"
cmd=$(sed -n "s/^  flightrec threads --pid $BLOCK_PID --at \([^ ]*\)$/\1/p" "$T/gone.txt")
[ -n "$cmd" ] || fail "no threads --pid $BLOCK_PID --at TIME suggested: $(cat "$T/gone.txt")"
"$FLIGHTREC" threads --pid "$BLOCK_PID" --at "$cmd" --json >"$T/at.json" ||
	fail "the suggested threads --at $cmd failed"
python3 - "$T/at.json" "$BLOCK_PID" <<'PY' || fail "the suggested --at does not show the readers: $(cat "$T/at.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
r = [t for t in doc["threads"] if t["pid"] == pid and t["thread"].startswith("r")]
assert len(r) == 2, doc
for t in r:
    assert t["state"] == "blocked" and "fr_read_stuck" in t["stack"], t
print("--at %s: %d readers blocked" % (sys.argv[1], len(r)))
PY

# A pid no process has, and none exited under: not running, said so
"$FLIGHTREC" threads --pid "$BLOCK_PID,4194304" >"$T/two.txt" 2>&1 || fail "threads failed"
grep -q "^no threads: process 4194304 is not running" "$T/two.txt" ||
	fail "an unknown pid beside an exited one: $(cat "$T/two.txt")"
stop_daemon
echo PASS
