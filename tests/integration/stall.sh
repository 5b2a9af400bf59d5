#!/bin/bash
# A recorder whose ingest thread stops says so, and a profile it could
# not bring up to date says so too: the main thread (ingest) is frozen
# with ptrace while the request threads go on answering. status shows
# "stalled"; an attach then times out on its flush, keeps the file,
# carries the reason in a comment and exits 1 with it; after the thaw
# recording goes on and the stall is counted.
. "$(dirname "$0")/lib.sh"
exact_losses
need_root_perf

FREEZE=$BUILD/tests/integration/freeze_thread
start_daemon --hz 199
"$BURN" 60 1 >/dev/null 2>&1 &
wait_seals

ingest() {
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 -c 'import json,sys; i=json.load(open(sys.argv[1]))["ingest"]; print(i["stalled"], i["stalls"], i["flush_timeouts"])' "$T/status.json"
}
read -r stalled stalls timeouts < <(ingest)
[ "$stalled" = False ] && [ "$timeouts" = 0 ] || fail "stalled before the freeze: $stalled $stalls $timeouts"

"$FREEZE" "$DAEMON_PID" 12 >"$T/freeze.out" 2>"$T/freeze.err" &
freezer=$!
try_until 10 'grep -q frozen "$T/freeze.out"'
grep -q frozen "$T/freeze.out" || { cat "$T/freeze.err" >&2; skip "cannot freeze a thread with ptrace here"; }

# Stalled is said once the last drain is over 3 s old.
try_until 10 'read -r stalled _ _ < <(ingest); [ "$stalled" = True ]'
[ "$stalled" = True ] || fail "status does not say the ingest thread is stalled"
"$FLIGHTREC" status >"$T/status.txt" || fail "status (text) failed"
grep -q "^ingest:   STALLED" "$T/status.txt" || fail "status text hides the stall: $(cat "$T/status.txt")"

"$FLIGHTREC" attach --window 5s -o "$T/p.pb.gz" >"$T/attach.out" 2>"$T/attach.err"
rc=$?
[ $rc = 1 ] || fail "attach during a stall exited $rc: $(cat "$T/attach.err")"
grep -q "incomplete: the recorder did not store its last samples" "$T/attach.err" ||
	fail "attach did not say why: $(cat "$T/attach.err")"
[ -s "$T/p.pb.gz" ] || fail "attach kept no profile"
gzip -dc "$T/p.pb.gz" | grep -qa "incomplete: the recorder did not store its last samples" ||
	fail "the profile has no comment saying it may end early"

wait "$freezer" || fail "freeze_thread failed: $(cat "$T/freeze.err")"
try_until 10 'read -r stalled stalls timeouts < <(ingest); [ "$stalled" = False ] && [ "$stalls" -ge 1 ]'
[ "$stalled" = False ] || fail "still stalled after the thaw"
[ "$stalls" -ge 1 ] && [ "$timeouts" -ge 1 ] || fail "the stall was not counted: $stalls stalls, $timeouts flush timeouts"
# A window that takes in the stall is warned of (cli_pressure.sh); one wholly
# after it is clean.
sleep 2.5
"$FLIGHTREC" attach --window 2s -o "$T/q.pb.gz" 2>"$T/attach.err" || fail "attach after the thaw failed: $(cat "$T/attach.err")"
grep -q incomplete "$T/attach.err" && fail "a profile after the thaw says it is incomplete"
stop_daemon
echo "stall seen, counted ($stalls stalls, $timeouts flush timeouts), attach said so"
