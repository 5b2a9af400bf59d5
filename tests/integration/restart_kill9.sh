#!/bin/bash
# The recording survives the daemon: after kill -9 and a restart on the
# same ring, a window covering time before the kill still returns those
# samples (named and symbolized, though the process has exited), and a
# window spanning the restart returns samples from both sides. SIGTERM
# stores the open chunk.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

# at_least N CPU_SECONDS [P]: N >= P (90%) of 99 Hz x CPU_SECONDS (the machine may
# be busy, so count against the CPU time the program really got).
at_least() {
	awk -v n="$1" -v c="$2" -v p="${3:-0.9}" 'BEGIN { exit !(n >= p * 99 * c) }'
}

start_daemon
"$BURN" 3 >"$T/p1.out" &
P1=$!
wait "$P1"
cpu1=$(sed -n 's/.*cpu_seconds=\([0-9.]*\).*/\1/p' "$T/p1.out")
wait_seals # P1's samples are in sealed chunks

# A copy of the ring taken while the recorder writes to it reads back with
# no daemon, as does the live file itself.
cp "$RING" "$T/ring.copy"
for ring in "$T/ring.copy" "$RING"; do
	"$FLIGHTREC" dump --ring "$ring" --window 60s --pid "$P1" -o "$T/copy.pb.gz" 2>"$T/dump.err" ||
		fail "dump of $ring while the recorder writes failed: $(cat "$T/dump.err")"
	pprof_top "$T/copy.pb.gz" | grep -q ' fr_burn_heavy$' || fail "dump of $ring lacks the samples"
done
kill9_daemon
[ -S "$SOCK" ] || fail "expected the killed daemon's socket file to remain"

start_daemon # replaces the stale socket
"$FLIGHTREC" attach --window 60s --pid "$P1" -o "$T/before.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach after restart failed"; }
pprof_top "$T/before.pb.gz" >"$T/before.top"
cat "$T/before.top"
grep -q ' fr_burn_heavy$' "$T/before.top" || fail "samples from before kill -9 are missing"
n=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/before.top")
# 80%: an overloaded machine's perf buffers drop a few (counted); what
# kill -9 would lose is the open chunk, most of the program's run.
at_least "${n:-0}" "$cpu1" 0.8 || fail "only ${n:-0} samples of $cpu1 CPU-seconds at 99 Hz survived kill -9"
# The same samples as folded stacks, read from the ring with no daemon.
"$FLIGHTREC" dump --ring "$RING" --window 60s --pid "$P1" --format folded -o "$T/before.folded" \
	2>"$T/dump.err" || fail "dump --format folded failed: $(cat "$T/dump.err")"
folded=$(awk '{ n += $NF } END { print n + 0 }' "$T/before.folded")
[ "$folded" = "$n" ] || fail "dump --format folded holds $folded samples, attach's pprof $n"
grep -q '^burn;.*;fr_burn_heavy [0-9]*$' "$T/before.folded" || fail "no burn stack ending in fr_burn_heavy"

"$BURN" 2 &
P2=$!
wait "$P2"
"$FLIGHTREC" attach --window 60s --pid "$P1,$P2" -o "$T/both.pb.gz" 2>/dev/null || fail "attach failed"
"$GO" tool pprof -symbolize=none -raw "$T/both.pb.gz" >"$T/both.raw" 2>/dev/null || fail "pprof -raw failed"
grep -q "pid:\[$P1\]" "$T/both.raw" || fail "window across the restart lacks the first run"
grep -q "pid:\[$P2\]" "$T/both.raw" || fail "window across the restart lacks the second run"

# SIGTERM seals and stores the open chunk: samples right up to the stop.
"$BURN" 1.5 >/dev/null &
P3=$!
sleep 1.2
# CPU time P3 had when the recorder was told to stop.
cpu3=$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$P3/stat")
stop_daemon
wait "$P3"
start_daemon
"$FLIGHTREC" attach --window 60s --pid "$P3" -o "$T/term.pb.gz" 2>/dev/null || fail "attach failed"
pprof_top "$T/term.pb.gz" >"$T/term.top"
n=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/term.top")
# Everything before the stop is stored but at most the last drain interval
# (0.1 s) and the tick granularity of the CPU time.
at_least "${n:-0}" "$cpu3" 0.8 || fail "only ${n:-0} samples of the $cpu3 CPU-seconds before SIGTERM were stored"
stop_daemon
echo PASS
