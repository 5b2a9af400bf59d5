#!/bin/bash
# Creator threads: a process whose main thread creates "maker", which
# creates "made" (tests/integration/spawner.c), started while the recorder
# runs: flightrec threads shows made created by maker and maker by main
# (text, JSON and the pprof label), live, at a past moment (--at) and from
# the ring alone after a crash. The same program started before the
# recorder: its threads' creators are unknown, and none is shown.
. "$(dirname "$0")/lib.sh"
need_root_perf

start_spawner() { # OUT: starts spawner, waits for its line in OUT
	"$SPAWNER" >"$1" &
	wait_until 5 "spawner's line in $1" grep -q '^pid=' "$1"
}
field() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$1"; }

start_spawner "$T/old.out"
OLD_PID=$(field "$T/old.out" pid)

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "creators", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
start_spawner "$T/new.out"
PID=$(field "$T/new.out" pid)
MAIN=$(field "$T/new.out" main)
MAKER=$(field "$T/new.out" maker)
MADE=$(field "$T/new.out" made)
wait_seals 3
t_mid=$(date +%s.%N)
wait_seals

check() { # JSON WHAT
	python3 - "$1" "$PID" "$MAIN" "$MAKER" "$MADE" "$OLD_PID" <<'PY' || fail "$2: wrong creators: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
pid, main, maker, made, old = (int(x) for x in sys.argv[2:7])
by = {(t["pid"], t["tid"]): t for t in doc["threads"]}
assert by[(pid, made)].get("creator") == maker, by[(pid, made)]
assert by[(pid, maker)].get("creator") == main, by[(pid, maker)]
for (p, tid), t in by.items():
    if p == old:
        assert "creator" not in t, t  # older than the recorder: unknown
# ... and the answer says so.
if any("creator" not in t for t in doc["threads"]):
    assert any("creator of" in w and "unknown" in w for w in doc["warnings"]), doc["warnings"]
PY
}

"$FLIGHTREC" threads --pid "$PID,$OLD_PID" --json >"$T/live.json" || fail "threads failed"
check "$T/live.json" "live"
grep -q '"the creator of 3 of 6 threads is unknown' "$T/live.json" ||
	fail "no word on the old process's unknown creators: $(cat "$T/live.json")"
"$FLIGHTREC" threads --pid "$PID,$OLD_PID" -o "$T/live.pb.gz" >/dev/null || fail "threads -o failed"
"$FLIGHTREC" threads --pid "$PID" >"$T/live.txt" || fail "threads (text) failed"
cat "$T/live.txt"
grep -q "$MADE (made, created by $MAKER)" "$T/live.txt" || fail "no creator in the text"
"$FLIGHTREC" threads --pid "$PID" --at "$t_mid" --json >"$T/at.json" || fail "threads --at failed"
python3 - "$T/at.json" "$MAKER" "$MADE" <<'PY' || fail "threads --at: wrong creator: $(cat "$T/at.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
t = [t for t in doc["threads"] if t["tid"] == int(sys.argv[3])]
assert t and t[0].get("creator") == int(sys.argv[2]), doc
PY
if [ -n "$GO" ] && [ -x "$GO" ]; then
	"$GO" tool pprof -raw "$T/live.pb.gz" 2>/dev/null | grep -q "creator:\[$MAKER\]" ||
		fail "no creator label in the pprof answer"
fi

kill9_daemon
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$PID,$OLD_PID" --json >"$T/ring.json" ||
	fail "dump --threads failed"
check "$T/ring.json" "from the ring"
kill "$PID" "$OLD_PID"
echo "creators: ok"
