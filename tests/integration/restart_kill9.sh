#!/bin/bash
# The recording survives the daemon: after kill -9 and a restart on the
# same ring, a window covering time before the kill still returns those
# samples (named and symbolized, though the process has exited), and a
# window spanning the restart returns samples from both sides. SIGTERM
# stores the open chunk.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

start_daemon
"$BURN" 3 &
P1=$!
wait "$P1"
sleep 1.5 # longer than the seal interval: P1's samples are in sealed chunks
kill9_daemon
[ -S "$SOCK" ] || fail "expected the killed daemon's socket file to remain"

start_daemon # replaces the stale socket
"$FLIGHTREC" attach --window 60s --pid "$P1" -o "$T/before.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach after restart failed"; }
pprof_top "$T/before.pb.gz" >"$T/before.top"
cat "$T/before.top"
grep -q ' fr_burn_heavy$' "$T/before.top" || fail "samples from before kill -9 are missing"
n=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/before.top")
[ "${n:-0}" -ge 200 ] || fail "only ${n:-0} samples of a 3 s run at 99 Hz survived"

"$BURN" 2 &
P2=$!
wait "$P2"
"$FLIGHTREC" attach --window 60s --pid "$P1,$P2" -o "$T/both.pb.gz" 2>/dev/null || fail "attach failed"
"$GO" tool pprof -symbolize=none -raw "$T/both.pb.gz" >"$T/both.raw" 2>/dev/null || fail "pprof -raw failed"
grep -q "pid:\[$P1\]" "$T/both.raw" || fail "window across the restart lacks the first run"
grep -q "pid:\[$P2\]" "$T/both.raw" || fail "window across the restart lacks the second run"

# SIGTERM seals and stores the open chunk: samples right up to the stop.
"$BURN" 1.5 &
P3=$!
sleep 1.2
stop_daemon
wait "$P3"
start_daemon
"$FLIGHTREC" attach --window 60s --pid "$P3" -o "$T/term.pb.gz" 2>/dev/null || fail "attach failed"
pprof_top "$T/term.pb.gz" >"$T/term.top"
n=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/term.top")
# 1.2 s at 99 Hz before the stop: about 119 samples; at most the last
# drain interval (0.1 s) may be cut.
[ "${n:-0}" -ge 95 ] || fail "only ${n:-0} samples of the 1.2 s before SIGTERM were stored"
stop_daemon
echo PASS
