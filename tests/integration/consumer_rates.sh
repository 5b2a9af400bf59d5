#!/bin/bash
# Every consumer at its own rate. A session at 19 Hz is recorded alongside
# one at 999 Hz: its dump is at 19 Hz (period 1e9/19 ns, about 19 samples
# per busy CPU-second of the program, the same CPU total as the full-rate
# profile of the same window, the 999 Hz samples brought to 19 Hz exactly
# to within one per CPU), with its second event at its own rate; and
# attach --hz cpu=99,page-faults=19 gets each event at its rate, and so
# does a follower.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

DUMPS=$T/dumps
# A name of its own: the session takes every process of that name on the
# machine, and other tests may run burn at the same time.
NAME=rburn$$
cp "$BURN" "$T/$NAME"
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$DUMPS"},
 "sessions": [
  {"name": "slow", "targets": {"comm": ["$NAME"]},
   "events": [{"event": "cpu", "hz": 19}, {"event": "page-faults", "hz": 7}]},
  {"name": "fast", "events": [{"event": "cpu", "hz": 999}, {"event": "page-faults", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
wait_seals 1
"$T/$NAME" 3 2 0 >"$T/burn.out" || fail "burn failed"
cpu_s=$(sed -n 's/.*cpu_seconds=\([0-9.]*\).*/\1/p' "$T/burn.out")
[ -n "$cpu_s" ] || fail "burn did not say its CPU time: $(cat "$T/burn.out")"
wait_seals
p=$("$FLIGHTREC" dump --session slow --window 8s 2>"$T/err") || fail "dump --session slow failed: $(cat "$T/err")"
side=${p%.pb.gz}.json
[ -f "$side" ] || fail "no sidecar for $p"

# The sidecar gives each event at the session's rate.
python3 - "$side" <<'PY' || fail "the sidecar's rates are not the session's: $(cat "$side")"
import json, sys
d = json.load(open(sys.argv[1]))
hz = {e["event"]: e["hz"] for e in d["events"]}
sys.exit(hz != {"cpu": 19, "page-faults": 7})
PY

# raw_sum FILE COLUMN: the sum of a value column of go tool pprof -raw.
raw_sum() {
	awk -v k="$2" '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
		on && $1 ~ /^[0-9]+$/ { s += $k } END { printf "%.0f\n", s }' "$1"
}
"$GO" tool pprof -symbolize=none -raw "$p" >"$T/slow.raw" 2>"$T/pprof.err" || fail "pprof -raw of the dump failed"
grep -q '^Period: 52631578$' "$T/slow.raw" || fail "the dump's period is not 1e9/19 ns: $(grep '^Period' "$T/slow.raw")"
slow_n=$(raw_sum "$T/slow.raw" 1)
slow_ns=$(raw_sum "$T/slow.raw" 2)
[ "$slow_ns" = $((slow_n * 52631578)) ] || fail "cpu total $slow_ns is not $slow_n samples x the period"
expect=$(awk -v c="$cpu_s" 'BEGIN { printf "%d", c * 19 }')
echo "burn used $cpu_s CPU-seconds; the 19 Hz dump has $slow_n samples (about $expect)"
awk -v a="$slow_n" -v e="$expect" 'BEGIN { exit !(a >= 0.85 * e - 2 && a <= 1.15 * e + 2) }' ||
	fail "the 19 Hz dump has $slow_n samples for $cpu_s CPU-seconds (expected about $expect)"

# The full-rate profile of the same window and targets: the same CPU time,
# and 19/999 of its samples to within one per CPU.
read -r t0 t1 < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%d.%09d %d.%09d" % (d["t0_ns"]//10**9, d["t0_ns"]%10**9, d["t1_ns"]//10**9, d["t1_ns"]%10**9))' "$side")
"$FLIGHTREC" attach --from "$t0" --to "$t1" --comm "$NAME" -o "$T/full.pb.gz" >/dev/null 2>"$T/err" ||
	fail "attach of the full-rate window failed: $(cat "$T/err")"
"$GO" tool pprof -symbolize=none -raw "$T/full.pb.gz" >"$T/full.raw" 2>"$T/pprof.err" || fail "pprof -raw of the full profile failed"
grep -q '^Period: 1001001$' "$T/full.raw" || fail "the full profile is not at 999 Hz: $(grep '^Period' "$T/full.raw")"
full_n=$(raw_sum "$T/full.raw" 1)
full_ns=$(raw_sum "$T/full.raw" 2)
ncpu=$(nproc)
echo "full rate: $full_n samples, $full_ns ns; 19 Hz: $slow_n samples, $slow_ns ns"
awk -v s="$slow_n" -v f="$full_n" -v c="$ncpu" 'BEGIN { e = f * 19 / 999; d = s - e; if (d < 0) d = -d; exit !(d <= c + 1) }' ||
	fail "the 19 Hz dump kept $slow_n of $full_n samples at 999 Hz, not 19/999 of them to within one per CPU"
awk -v s="$slow_ns" -v f="$full_ns" -v c="$ncpu" 'BEGIN { d = s - f; if (d < 0) d = -d; exit !(d <= (c + 1) * 52631578) }' ||
	fail "the 19 Hz dump's CPU total $slow_ns ns differs from the full rate's $full_ns ns"

# Two events at two rates in one attach.
"$FLIGHTREC" attach --from "$t0" --to "$t1" --hz cpu=99,page-faults=19 -o "$T/two.pb.gz" >/dev/null 2>"$T/err" ||
	fail "attach --hz cpu=99,page-faults=19 failed: $(cat "$T/err")"
"$GO" tool pprof -symbolize=none -raw "$T/two.pb.gz" >"$T/two.raw" 2>"$T/pprof.err" || fail "pprof -raw of the two-rate profile failed"
grep -q '^Period: 10101010$' "$T/two.raw" || fail "cpu is not at 99 Hz: $(grep '^Period' "$T/two.raw")"
grep -q 'samples/count cpu/nanoseconds\[dflt\] page-faults/count' "$T/two.raw" || fail "the profile does not have both events"
"$GO" tool pprof -symbolize=none -comments "$T/two.pb.gz" >"$T/two.comments" 2>/dev/null
grep -q 'cpu: downsampled from 999 Hz to 99 Hz' "$T/two.comments" || fail "cpu is not said to be at 99 Hz: $(cat "$T/two.comments")"
grep -q 'page-faults: downsampled from 99 Hz to 19 Hz' "$T/two.comments" ||
	fail "page-faults is not said to be at 19 Hz: $(cat "$T/two.comments")"

# A follower holds each event at its own rate.
"$FLIGHTREC" attach --follow --window 1s --count 1 --hz cpu=199,page-faults=19 -o "$T" >/dev/null 2>"$T/follow.err" ||
	fail "attach --follow --hz cpu=199,page-faults=19 failed: $(cat "$T/follow.err")"
grep -q 'following cpu at 199 Hz' "$T/follow.err" && grep -q 'following page-faults at 19 Hz' "$T/follow.err" ||
	fail "the follower does not hold each event at its rate: $(cat "$T/follow.err")"

# Bad per-event rates are refused with a reason.
"$FLIGHTREC" attach --window 1s --hz offcpu=99 -o "$T/x.pb.gz" 2>"$T/err" && fail "--hz offcpu=99 was accepted"
grep -q 'offcpu has no rate' "$T/err" || fail "--hz offcpu=99: $(cat "$T/err")"
"$FLIGHTREC" attach --window 1s --hz cpu=100001 -o "$T/x.pb.gz" 2>"$T/err" && fail "a rate above the limit was accepted"
grep -q 'above this recorder' "$T/err" || fail "--hz cpu=100001: $(cat "$T/err")"
daemon_alive || fail "flightrecd died"
echo PASS
