#!/bin/bash
# flightrec dump --ring FILE --threads after a crash: three threads blocked
# in read() on a pipe nobody writes (block mix 3) are recorded with cpu and
# offcpu; the recorder is killed with -9 while they are blocked. From the
# ring alone, the readers are shown blocked with fr_read_stuck on their
# stack and a waiting time that puts their switch-out at their start; the
# spinner is running; --at an earlier moment gives the wait they had then,
# from the dead recorder's ring and, before it died, through the daemon
# (flightrec threads --at).
. "$(dirname "$0")/lib.sh"
need_root_perf

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "threads", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"

"$BLOCK" mix 3 >"$T/block.out" &
BLOCK_PID=$!
for _ in $(seq 50); do
	grep -q '^pid=' "$T/block.out" && break
	sleep 0.1
done
t_start=$(date +%s%N)
sleep 4
t_mid=$(date +%s.%N)
sleep 2
"$FLIGHTREC" threads --pid "$BLOCK_PID" --at "$t_mid" --json >"$T/daemon_mid.json" ||
	fail "threads --at failed"
"$FLIGHTREC" threads --pid "$BLOCK_PID" --json >"$T/now.json" || fail "threads failed"
python3 - "$T/daemon_mid.json" "$T/now.json" "$t_start" "$t_mid" <<'PY' ||
import json, sys
mid, now = (json.load(open(p)) for p in sys.argv[1:3])
t_start, t_mid = int(sys.argv[3]), int(float(sys.argv[4]) * 1e9)
r_mid = [t for t in mid["threads"] if t["thread"].startswith("r")]
r_now = [t for t in now["threads"] if t["thread"].startswith("r")]
assert len(r_mid) == 3 and len(r_now) == 3, (mid, now)
for t in r_mid:
    assert t["state"] == "blocked" and "fr_read_stuck" in t["stack"], t
    assert t_start - 2e9 <= t_mid - t["waiting_ns"] <= t_start + 2e9, (t, t_mid, t_start)
assert max(t["waiting_ns"] for t in r_mid) < min(t["waiting_ns"] for t in r_now) - 1e9, (mid, now)
print("through the daemon: %.1f s at --at, %.1f s now" % (
    max(t["waiting_ns"] for t in r_mid) / 1e9, min(t["waiting_ns"] for t in r_now) / 1e9))
PY
	fail "threads --at disagrees: $(cat "$T/daemon_mid.json")"
sleep 1
kill9_daemon
kill "$BLOCK_PID"

"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" >"$T/text" 2>"$T/text.err" ||
	fail "dump --threads failed: $(cat "$T/text.err")"
cat "$T/text.err" "$T/text"
grep -q "^process $BLOCK_PID: 6 threads" "$T/text" || fail "not 6 threads of $BLOCK_PID"
awk '/^3 threads: blocked, waiting/ { g = 1; next } g && /^$/ { exit }
	g && /fr_read_stuck/ { s = 1 } END { exit !s }' "$T/text" ||
	fail "no group of 3 readers blocked with fr_read_stuck on their stack"
grep -q "kernel's exact state is not recorded" "$T/text.err" || fail "no word on the state's source"

"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" --json >"$T/last.json" ||
	fail "dump --threads --json failed"
"$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" || fail "dump --info failed"
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" --at "$t_mid" --json \
	>"$T/mid.json" || fail "dump --threads --at failed"
python3 - "$T/last.json" "$T/mid.json" "$T/info.json" "$t_start" "$t_mid" <<'PY' ||
import json, sys
last, mid, info = (json.load(open(p)) for p in sys.argv[1:4])
t_start, t_mid = int(sys.argv[4]), int(float(sys.argv[5]) * 1e9)
seal = info["ring"]["newest_ns"]
def readers(doc):
    r = [t for t in doc["threads"] if t["thread"].startswith("r")]  # reader, rd<ESC>[2J
    assert len(r) == 3, doc
    for t in r:
        assert t["state"] == "blocked" and "fr_read_stuck" in t["stack"], t
        assert "cpu_ns" not in t, t  # not in the ring: not shown as 0
    return r
spin = [t for t in last["threads"] if t["thread"] == "spinner"]
assert spin and spin[0]["state"] == "running", last
for t in readers(last):
    # Blocked since just after the start (switch-out = last seal - wait).
    out = seal - t["waiting_ns"]
    assert t_start - 2e9 <= out <= t_start + 2e9, (t, seal, t_start)
w_last = max(t["waiting_ns"] for t in readers(last))
w_mid = max(t["waiting_ns"] for t in readers(mid))
assert w_mid < w_last - 2e9, (w_mid, w_last)
assert abs((t_mid - w_mid) - (seal - w_last)) < 1.5e9, (t_mid, w_mid, seal, w_last)
print("readers blocked: %.1f s at the crash, %.1f s at --at" % (w_last / 1e9, w_mid / 1e9))
PY
	fail "dump --threads disagrees: $(cat "$T/last.json") $(cat "$T/mid.json")"

"$FLIGHTREC" dump --ring "$RING" --at "$t_mid" >/dev/null 2>&1 && fail "--at without --threads accepted"
echo "ok"
