#!/bin/bash
# Threads blocked for the whole window (three readers of a pipe nobody
# writes) are counted while still blocked: a 4 s window holds ~4 s per
# thread on the stack with the reading function, two windows of --follow
# (which tile time) add up to their span, and after kill -9 of the
# recorder the ring alone (dump --ring) still shows them blocked, up to
# the crash, on that stack.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "waits", "events": [{"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q '^event:    offcpu at every context switch' "$T/status" ||
	fail "offcpu is not recording: $(cat "$T/status")"

"$BLOCK" pipe 3 >"$T/block.out" &
BLOCK_PID=$!
t_blocked=$(date +%s%N)
sleep 6


# A 4 s window: the threads were blocked all of it and are still blocked.
"$FLIGHTREC" attach --window 4s --event offcpu --pid "$BLOCK_PID" -o "$T/w4.pb.gz" \
	2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
off=$(cum_ns "$T/w4.pb.gz" fr_read_stuck)
echo "4 s window: $off ns in fr_read_stuck (3 threads blocked throughout)"
near "$off" 12000000000 || {
	"$GO" tool pprof -symbolize=none -traces "$T/w4.pb.gz" 2>&1 | head -60
	fail "4 s window: $off ns in fr_read_stuck, want 12 s (3 x 4 s) within 10%"
}
"$GO" tool pprof -symbolize=none -traces -sample_index=offcpu "$T/w4.pb.gz" >"$T/w4.traces" 2>&1
grep -q 'fr_read_stuck' "$T/w4.traces" && grep -q 'reader' "$T/w4.traces" ||
	fail "the blocked stack does not show reader -> fr_read_stuck: $(head -40 "$T/w4.traces")"

# Two windows of 2 s that tile time: each ~6 s, together ~12 s.
mkdir "$T/follow"
"$FLIGHTREC" attach --follow --count 2 --window 2s --event offcpu --pid "$BLOCK_PID" \
	-o "$T/follow" 2>"$T/follow.err" || fail "attach --follow failed: $(cat "$T/follow.err")"
sum=0
n=0
for f in "$T"/follow/*.pb.gz; do
	v=$(cum_ns "$f" fr_read_stuck)
	echo "follow window $(basename "$f"): $v ns"
	near "$v" 6000000000 || fail "follow window $f: $v ns, want 6 s (3 x 2 s) within 10%"
	sum=$((sum + v))
	n=$((n + 1))
done
[ "$n" = 2 ] || fail "--follow --count 2 wrote $n profiles"
near "$sum" 12000000000 || fail "two follow windows add up to $sum ns, want 12 s within 10%"

# kill -9 of the recorder while they are blocked: the ring alone shows
# them blocked since they started, up to the crash, on their stack.
wait_seals
kill9_daemon
t_kill=$(date +%s%N)
truth=$(((t_kill - t_blocked) * 3))
timeout 60 "$FLIGHTREC" dump --ring "$RING" --window 1m --event offcpu --pid "$BLOCK_PID" \
	-o "$T/crash.pb.gz" 2>"$T/dump.err" || fail "dump --ring after kill -9 failed: $(cat "$T/dump.err")"
crash=$(cum_ns "$T/crash.pb.gz" fr_read_stuck)
echo "after kill -9: $crash ns in fr_read_stuck; blocked from start to kill: $truth ns"
# The ring knows up to its last seal (at most a second before the kill).
awk -v a="$crash" -v b="$truth" 'BEGIN { exit !(a >= 0.85 * b && a <= 1.02 * b) }' ||
	fail "dump after kill -9: $crash ns in fr_read_stuck, want ~$truth ns (blocked until the crash)"
"$GO" tool pprof -symbolize=none -traces -sample_index=offcpu "$T/crash.pb.gz" >"$T/crash.traces" 2>&1
grep -q 'fr_read_stuck' "$T/crash.traces" || fail "dump after kill -9 has no fr_read_stuck stack"
echo "ok"
