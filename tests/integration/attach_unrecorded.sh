#!/bin/bash
# attach --pid P --event page-faults when no session records page-faults:
# the answer is that the event is not being recorded (naming what is, and
# how to record it), not "--pid P matched no samples", and asking does not
# turn the event on (the recorder used to open it at 1 Hz for a moment to
# see whether it could). top says the same. Once a follower has recorded
# some of it, a window holding those samples gives them, with a warning
# that nothing records it now.
. "$(dirname "$0")/lib.sh"
need_root_perf

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "cpu", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
"$BURN" 3 1 >/dev/null &
P=$!
wait_samples 50

"$FLIGHTREC" attach --window 5s --pid "$P" --event page-faults -o "$T/pf.pb.gz" 2>"$T/attach.err" &&
	fail "attach of an event nothing records succeeded: $(cat "$T/attach.err")"
cat "$T/attach.err"
grep -q "page-faults is not being recorded, and the ring holds none of it in the window" "$T/attach.err" ||
	fail "attach does not say page-faults is not recorded: $(cat "$T/attach.err")"
grep -q "the recorder records cpu at 99 Hz" "$T/attach.err" ||
	fail "attach does not name what is recorded: $(cat "$T/attach.err")"
grep -q "flightrec attach --follow --event page-faults" "$T/attach.err" ||
	fail "attach does not say how to record page-faults: $(cat "$T/attach.err")"
! grep -q "matched no samples" "$T/attach.err" ||
	fail "attach blames --pid for an event nothing records: $(cat "$T/attach.err")"
"$FLIGHTREC" top --window 5s --event page-faults 2>"$T/top.err" >/dev/null &&
	fail "top of an event nothing records succeeded"
grep -q "page-faults is not being recorded" "$T/top.err" ||
	fail "top does not say page-faults is not recorded: $(cat "$T/top.err")"
# Asking did not record it, not even for a moment.
! grep -q "page-faults: recording" "$T/daemon.log" ||
	fail "asking for page-faults turned it on: $(grep page-faults "$T/daemon.log")"
[ "$(status_value '[e["event"] for e in d["events"] if e["event"] == "page-faults"]')" = "[]" ] ||
	fail "status lists page-faults: $("$FLIGHTREC" status | grep page-faults)"

# A follower records some; after it left, the ring's samples are given.
t0=$(date +%s.%N)
"$FLIGHTREC" attach --follow --window 1s --count 2 --event page-faults -o "$T" >/dev/null 2>"$T/follow.err" ||
	fail "attach --follow --event page-faults failed: $(cat "$T/follow.err")"
wait_seals
"$FLIGHTREC" attach --from "@$t0" --event page-faults -o "$T/pf.pb.gz" 2>"$T/attach.err" ||
	fail "attach of the followed window failed: $(cat "$T/attach.err")"
cat "$T/attach.err"
grep -q "warning: page-faults is not being recorded (no session or client asks for it; the recorder records cpu at 99 Hz)" "$T/attach.err" ||
	fail "no warning that page-faults is not recorded now: $(cat "$T/attach.err")"
kill "$P" 2>/dev/null
stop_daemon
echo PASS
