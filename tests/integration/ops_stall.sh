#!/bin/bash
# A stalled recorder is never silent in status: the last drain, seal and
# ring append times, the stalls with the longest, and a stale seal or
# append flagged. Real stalls: the ingest thread (the daemon's main
# thread), then the writer thread ("fr-writer"), each frozen with ptrace
# for 6 s while a program burns CPU, so samples keep coming.
. "$(dirname "$0")/lib.sh"
need_root_perf

FREEZE=$BUILD/tests/integration/freeze_thread
start_daemon --hz 199
"$BURN" 60 1 >/dev/null 2>&1 &
wait_seals

# ingest FIELD...: the status --json ingest members asked for.
ingest() {
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 -c 'import json,sys; i=json.load(open(sys.argv[1]))["ingest"]; print(*[i[k] for k in sys.argv[2:]])' \
		"$T/status.json" "$@"
}
# fresh UNIX_NS MAX_SECONDS: whether the time is set and that recent.
fresh() {
	python3 -c 'import sys,time; sys.exit(not (0 < int(sys.argv[1]) and time.time() - int(sys.argv[1]) / 1e9 < float(sys.argv[2])))' "$1" "$2"
}
# Times are set and recent (generously: a machine this test shares may
# hold the recorder up for seconds, which is just what status must show).
try_until 10 'read -r drain seal append < <(ingest last_drain_ns last_seal_ns last_append_ns)
	fresh "$drain" 10 && fresh "$seal" 10 && fresh "$append" 10'
fresh "$drain" 10 && fresh "$seal" 10 && fresh "$append" 10 ||
	fail "drain, seal, append times not recent: $drain $seal $append"
read -r stalls0 < <(ingest stalls)
"$FLIGHTREC" status >"$T/status.txt"
grep -Eq '^ingest:   running, last drain [0-9.]+[a-z]+ ago, seal [0-9.]+[a-z]+ ago, ring append [0-9.]+[a-z]+ ago$' \
	"$T/status.txt" || fail "status text: $(grep -A1 '^ingest' "$T/status.txt")"
grep -Eq '^stalls:   [0-9]+( \(longest [0-9.]+[a-z]+\))?, [0-9]+ flush timeouts?$' "$T/status.txt" ||
	fail "stall counters: $(cat "$T/status.txt")"

# freeze TID: freezes it for 6 s in the background; waits until it is.
freeze() {
	"$FREEZE" "$1" 6 >"$T/freeze.out" 2>"$T/freeze.err" &
	freezer=$!
	try_until 10 'grep -q frozen "$T/freeze.out"' && return 0
	cat "$T/freeze.err" >&2
	skip "cannot freeze a thread with ptrace here"
}

# The ingest thread.
freeze "$DAEMON_PID"
try_until 10 '"$FLIGHTREC" status >"$T/status.txt" && grep -q "^ingest:   STALLED" "$T/status.txt"'
"$FLIGHTREC" status >"$T/status.txt" || fail "status during the stall failed"
grep -q '^ingest:   STALLED' "$T/status.txt" || fail "status hides the stall: $(cat "$T/status.txt")"
grep -Eq '^          last seal [0-9.]+[a-z]+ ago — the recorder is stalled' "$T/status.txt" ||
	fail "the stale seal is not flagged: $(cat "$T/status.txt")"
read -r longest < <(ingest longest_stall_ns)
[ "$longest" -ge 3000000000 ] || fail "the stall going on is not the longest: $longest ns"
wait "$freezer" || fail "freeze_thread failed: $(cat "$T/freeze.err")"
try_until 5 'read -r stalled stalls longest seal < <(ingest stalled stalls longest_stall_ns last_seal_ns)
	[ "$stalled" = False ] && [ "$stalls" -gt "$stalls0" ]'
[ "$stalled" = False ] && [ "$stalls" -gt "$stalls0" ] ||
	fail "after the thaw: stalled $stalled, $stalls stalls (were $stalls0)"
[ "$longest" -ge 5500000000 ] && [ "$longest" -lt 30000000000 ] ||
	fail "the longest stall is $longest ns for a freeze of 6 s"
try_until 10 'read -r seal < <(ingest last_seal_ns); fresh "$seal" 3'
fresh "$seal" 3 || fail "no seal since the thaw: $seal"
"$FLIGHTREC" status | grep -Eq "^stalls:   $stalls \(longest [0-9.]+[a-z]+\), " || fail "status text lacks the longest stall"

# The writer thread: chunks wait while nothing is appended.
wtid=$(grep -lx fr-writer /proc/"$DAEMON_PID"/task/*/comm | head -1 | cut -d/ -f5)
[ -n "$wtid" ] || fail "no thread named fr-writer in the recorder"
freeze "$wtid"
try_until 10 'read -r wstalled queued < <(ingest writer_stalled writer_queued_bytes); [ "$wstalled" = True ] && [ "$queued" -gt 0 ]'
read -r wstalled queued < <(ingest writer_stalled writer_queued_bytes)
[ "$wstalled" = True ] && [ "$queued" -gt 0 ] || fail "the writer's stall is not seen: $wstalled, $queued bytes queued"
"$FLIGHTREC" status >"$T/status.txt"
grep -Eq '^          last ring append [0-9.]+[a-z]+ ago with .* waiting — the ring.s writer is stalled' \
	"$T/status.txt" || fail "the stale append is not flagged: $(cat "$T/status.txt")"
wait "$freezer" || fail "freeze_thread failed: $(cat "$T/freeze.err")"
try_until 10 'read -r wstalled append < <(ingest writer_stalled last_append_ns)
	[ "$wstalled" = False ] && fresh "$append" 3'
[ "$wstalled" = False ] || fail "the writer is still said stalled after the thaw"
fresh "$append" 3 || fail "no ring append since the thaw: $append"
stop_daemon
exit 0
