#!/bin/bash
# Open-wait records while chunks fill faster than once a second: with 64 KiB
# segments (32 KiB chunks) and a pipe fed a byte at a time (a context switch
# per byte, each an offcpu sample of the perf mechanism, which records every
# switch; the eBPF one records few and would not fill them), every chunk is
# sealed because it is full. The periodic seal, which lists the threads blocked then, must still
# come every second: three readers blocked on a pipe nobody writes are shown
# blocked at a past moment (threads --at) and counted in a window (attach),
# as on an idle machine. Before the fix each full seal pushed the periodic
# one back, so no chunk held a record and the readers were missing.
. "$(dirname "$0")/lib.sh"
need_root_perf

cat >"$T/config.json" <<'JSON'
{"ring": {"segment": "64KiB"},
 "sessions": [{"name": "full", "events": [{"event": "cpu", "hz": 999},
                                      {"event": "offcpu", "mechanism": "perf"}]}]}
JSON
start_daemon --config "$T/config.json" --ring-size 16MiB

# A context switch per byte: reader and writer, on one CPU, take turns on
# the pipe.
taskset -c 0 dd if=/dev/zero bs=1 count=100000000 2>/dev/null |
	taskset -c 0 dd of=/dev/null bs=1 2>/dev/null &
"$BLOCK" pipe 3 >"$T/block.out" &
BLOCK_PID=$!
try_until 5 'grep -q "^pid=" "$T/block.out"'
sleep 4
t_mid=$(date +%s.%N)
wait_seals
"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed"
"$FLIGHTREC" threads --pid "$BLOCK_PID" --at "$t_mid" --json >"$T/at.json" ||
	fail "threads --at failed"
python3 - "$T/at.json" "$T/status.json" <<'PY' || fail "threads --at: readers not blocked: $(cat "$T/at.json")"
import json, sys
doc, st = (json.load(open(p)) for p in sys.argv[1:3])
# The premise: chunks fill faster than once a second (about 7 s ran).
assert st["chunks_sealed"] >= 14, st["chunks_sealed"]
r = [t for t in doc["threads"] if t["thread"] == "reader"]
assert len(r) == 3 and all(t["state"] == "blocked" for t in r), doc
print("3 readers blocked at --at; %d chunks sealed" % st["chunks_sealed"])
PY
kill9_daemon
kill "$BLOCK_PID"
# From the ring alone, after a crash: blocked up to the last seal.
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" --json >"$T/ring.json" ||
	fail "dump --threads failed"
python3 - "$T/ring.json" <<'PY' || fail "dump --threads: readers not blocked: $(cat "$T/ring.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
r = [t for t in doc["threads"] if t["thread"] == "reader"]
assert len(r) == 3 and all(t["state"] == "blocked" for t in r), doc
PY
echo "ok"
