#!/bin/bash
# Rate composition: a session at 99 Hz and a client following at 999 Hz
# share one cpu source, which runs at 999 Hz while the client is there and
# drops back to 99 Hz when it leaves. Over the same window both get their
# own exact period, sample counts within 10% of hz x CPU-seconds, and
# function shares that agree with each other. Follow windows tile time
# exactly, and rates above limits.max_rate_hz are refused with the limit.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

printf '{"limits": {"max_rate_hz": 2000}, "sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 99}]}]}\n' \
	>"$T/config.json"
start_daemon --config "$T/config.json"
mkdir -p "$T/follow"

# Schedstat's first field is the CPU time a thread ran, in ns.
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

"$BURN" 14 2 0 >"$T/burn.out" &
BURN_PID=$!
wait_until 5 "burn to run" has_run "$BURN_PID"
# The scheduler's CPU time of burn, every 50 ms, to know exactly how much
# it ran inside the follow windows.
(
	while kill -0 "$BURN_PID" 2>/dev/null; do
		echo "$(date +%s%N) $(cpu_ns "$BURN_PID")"
		sleep 0.05
	done
) >"$T/cpu.log" 2>/dev/null &
"$FLIGHTREC" attach --follow --count 2 --window 5s --hz 999 --pid "$BURN_PID" -o "$T/follow" \
	>"$T/follow.out" 2>"$T/follow.err" &
FOLLOW_PID=$!
try_until 10 '"$FLIGHTREC" status >"$T/status.during" && grep -q "^event:    cpu at 999 Hz" "$T/status.during" &&
	grep -q "^consumer: client pid [0-9]* wants cpu@999Hz\$" "$T/status.during"'
"$FLIGHTREC" status >"$T/status.during" || fail "status failed"
grep -q '^event:    cpu at 999 Hz' "$T/status.during" ||
	fail "the follower did not raise cpu to 999 Hz: $(grep event: "$T/status.during")"
grep -q '^consumer: client pid [0-9]* wants cpu@999Hz$' "$T/status.during" ||
	fail "status does not list the following client: $(cat "$T/status.during")"
grep -q '^consumer: session always wants cpu@99Hz$' "$T/status.during" ||
	fail "status does not list the session: $(cat "$T/status.during")"
wait "$FOLLOW_PID" || fail "attach --follow failed: $(cat "$T/follow.err")"
[ "$(wc -l <"$T/follow.out")" = 2 ] || fail "--count 2 did not write 2 files: $(cat "$T/follow.out")"

# The client has left: back to 99 Hz.
try_until 3 '"$FLIGHTREC" status >"$T/status.after"; grep -q "^event:    cpu at 99 Hz" "$T/status.after"'
grep -q '^event:    cpu at 99 Hz' "$T/status.after" ||
	fail "cpu did not drop back to 99 Hz when the follower left: $(grep event: "$T/status.after")"
grep -q '^consumer: client' "$T/status.after" && fail "the client is still listed after leaving"

# The windows tile time: the second starts where the first ends.
mapfile -t wins < <(sed -n 's/^flightrec: window \([0-9.]*\) \.\. \([0-9.]*\) .*/\1 \2/p' "$T/follow.err")
[ "${#wins[@]}" = 2 ] || fail "expected two windows: $(cat "$T/follow.err")"
read -r a0 a1 <<<"${wins[0]}"
read -r b0 b1 <<<"${wins[1]}"
[ "$a1" = "$b0" ] || fail "the windows do not tile: $a0..$a1 then $b0..$b1"

# The first follow window, and the same window asked for at the session's
# 99 Hz: one source, two consumers, two exact periods.
f999=$(head -1 "$T/follow.out")
"$FLIGHTREC" attach --from "$a0" --to "$a1" --hz 99 --pid "$BURN_PID" -o "$T/w99.pb.gz" 2>"$T/err" ||
	fail "attach of the follow window at 99 Hz failed: $(cat "$T/err")"
period() { "$GO" tool pprof -raw "$1" 2>/dev/null | sed -n 's/^Period: *//p'; }
[ "$(period "$f999")" = 1001001 ] || fail "the 999 Hz profile has period $(period "$f999")"
[ "$(period "$T/w99.pb.gz")" = 10101010 ] || fail "the 99 Hz profile has period $(period "$T/w99.pb.gz")"
pprof_top "$f999" >"$T/t999"
pprof_top "$T/w99.pb.gz" >"$T/t99"
n999=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/t999")
n99=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/t99")
# CPU-seconds of burn in the window, from the scheduler's own accounting,
# interpolated at the window's ends.
cpus=$(awk -v a="$a0" -v b="$a1" '
	function at(t,   i) {
		for (i = 2; i <= n; i++)
			if (ts[i] >= t)
				return cs[i - 1] + (cs[i] - cs[i - 1]) * (t - ts[i - 1]) / (ts[i] - ts[i - 1])
		return -1
	}
	{ n++; ts[n] = $1 / 1e9; cs[n] = $2 }
	END { x = at(a); y = at(b); if (x < 0 || y < 0) print 0; else printf "%.3f", (y - x) / 1e9 }' "$T/cpu.log")
awk -v c="$cpus" 'BEGIN { exit !(c > 1) }' || fail "burn ran only $cpus CPU-seconds in the window (or the CPU log misses it)"
echo "window $a0..$a1: $n999 samples at 999 Hz, $n99 at 99 Hz; burn ran $cpus CPU-seconds in it"
awk -v n="$n999" -v c="$cpus" 'BEGIN { e = 999 * c; exit !(n >= 0.9 * e && n <= 1.1 * e) }' ||
	fail "999 Hz consumer: $n999 samples, expected 999 x $cpus (more than 10% apart)"
awk -v n="$n99" -v c="$cpus" 'BEGIN { e = 99 * c; exit !(n >= 0.9 * e && n <= 1.1 * e) }' ||
	fail "99 Hz consumer: $n99 samples, expected 99 x $cpus (more than 10% apart)"
h999=$(flat_pct "$T/t999" fr_burn_heavy)
h99=$(flat_pct "$T/t99" fr_burn_heavy)
echo "fr_burn_heavy: ${h999}% at 999 Hz, ${h99}% at 99 Hz"
[ "$h999" != 0 ] || fail "fr_burn_heavy missing at 999 Hz"
within "$h999" "$h99" 5 || fail "fr_burn_heavy shares differ: ${h999}% at 999 Hz, ${h99}% at 99 Hz"
# The same question twice gives the same profile: the same samples, with
# the same values, labels and stacks. (Not the same bytes: the journal's
# merge may regroup the window's chunks between the two reads, and the
# profile lists samples and locations in the order it meets them.)
"$FLIGHTREC" attach --from "$a0" --to "$a1" --hz 99 --pid "$BURN_PID" -o "$T/w99b.pb.gz" 2>/dev/null
python3 - "$T/w99.pb.gz" "$T/w99b.pb.gz" "$(dirname "$0")" <<'PY' || fail "the same request gave a different profile"
import sys
sys.path.insert(0, sys.argv[3])
from pprof_samples import samples, sample_types
def canon(path):
    return sample_types(path), sorted(
        (s["values"], sorted(s["str"].items()), sorted(s["num"].items()), s["frames"])
        for s in samples(path))
a, b = canon(sys.argv[1]), canon(sys.argv[2])
print("the same request twice: %d and %d samples, %s" % (len(a[1]), len(b[1]), "equal" if a == b else "DIFFERENT"))
sys.exit(a != b)
PY
# A window that reaches before the follower ran is downsampled to 99 Hz
# throughout, and says so.
"$FLIGHTREC" attach --window 6s --hz 999 --pid "$BURN_PID" -o "$T/mixed.pb.gz" 2>"$T/err" ||
	fail "attach of a mixed window failed"
[ "$(period "$T/mixed.pb.gz")" = 10101010 ] || fail "a mixed window is not at 99 Hz"
"$GO" tool pprof -comments "$T/mixed.pb.gz" 2>/dev/null | grep -q 'collected at 99 Hz, below the requested 999 Hz' ||
	fail "the mixed window does not say it was downsampled"
grep -q 'warning: .*below the requested 999 Hz' "$T/err" || fail "no warning on stderr for the mixed window"

# Limits.
"$FLIGHTREC" attach --follow --window 1s --hz 5000 -o "$T/follow" 2>"$T/err" &&
	fail "a follow above limits.max_rate_hz was accepted"
grep -q 'a rate of 5000 Hz is above this recorder.s limit of 2000 Hz (limits.max_rate_hz)' "$T/err" ||
	fail "the limit is not named: $(cat "$T/err")"
"$FLIGHTREC" attach --follow --window 1s -o "$T/nodir/" 2>"$T/err"
[ $? = 2 ] || fail "--follow into a missing directory is not a usage error"
wait "$BURN_PID"
daemon_alive || fail "the daemon died"
stop_daemon
echo PASS
