#!/bin/bash
# SIGHUP reloads the configuration while recording: a new rate takes effect
# with no gap in the recording (a program busy across the reload has all
# its samples), the ring is kept, and an invalid file is rejected with its
# reason logged while the running configuration stays.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
command -v perf >/dev/null || skip "needs perf (linux-perf) as the reference profiler"

json_field() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
# cpu_ticks PID: the CPU time PID has used, in clock ticks (0 when gone).
cpu_ticks() {
	awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# burned PID TICKS: PID used TICKS of CPU, or is gone.
burned() {
	[ "$(cpu_ticks "$1")" -ge "$2" ] || ! kill -0 "$1" 2>/dev/null
}
rate_is() {
	"$FLIGHTREC" status 2>/dev/null | grep -q "event:    cpu at $1 Hz"
}
set_rate() {
	printf '{"sessions": [{"name": "always", "events": [{"event": "cpu", "hz": %s}]}]}\n' "$1" \
		>"$T/config.json"
}

set_rate 99
start_daemon --config "$T/config.json"
"$FLIGHTREC" sessions >"$T/sessions" || fail "flightrec sessions failed"
grep -Eq '^always +cpu@99Hz +all processes +none +never$' "$T/sessions" ||
	fail "sessions does not list the configured session: $(cat "$T/sessions")"
grep -q '^recording: cpu at 99 Hz per CPU (the highest rate any session or client asks for' "$T/sessions" ||
	fail "sessions does not show the recording rate: $(cat "$T/sessions")"
# perf samples the same program at 99 Hz throughout, as the reference
# count (burn waits 1 s so perf is attached before it works).
"$BURN" 5 1 1 >"$T/burn.out" &
BURN_PID=$!
perf record --no-buildid --no-buildid-cache -e cpu-clock -F 99 -g -p "$BURN_PID" \
	-o "$T/perf.data" >"$T/perf.log" 2>&1 &
PERF_PID=$!
# The reload comes once the program has worked 0.4 s at 99 Hz (some 40
# samples, twice what is asked of the side before), leaving most of its
# work for the side after, however slow a loaded machine runs it.
try_until 30 burned "$BURN_PID" "$(( $(getconf CLK_TCK) * 4 / 10 ))"
set_rate 499
kill -HUP "$DAEMON_PID"
try_until 10 rate_is 499
"$FLIGHTREC" status >"$T/status" || fail "status after SIGHUP failed"
grep -q 'event:    cpu at 499 Hz' "$T/status" || fail "the new rate did not take effect: $(grep event: "$T/status")"
"$FLIGHTREC" status --json >"$T/status.json"
[ "$(json_field "$T/status.json" 'd["reloaded_ns"]')" -gt 0 ] || fail "status does not show the reload"
"$FLIGHTREC" sessions --json >"$T/sessions.json" || fail "sessions --json failed"
[ "$(json_field "$T/sessions.json" 'd["sessions"][0]["events"][0]["hz"]')" = 499 ] ||
	fail "sessions does not follow the reload: $(cat "$T/sessions.json")"
wait "$BURN_PID"
wait "$PERF_PID" || { cat "$T/perf.log"; fail "perf record failed"; }
perf_n=$(perf report -i "$T/perf.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')

# Nothing is lost around the reload: the program's samples before it (at
# 99 Hz) and after it (at 499 Hz), each read at the rate it was collected
# at (no random decimation), add up to the CPU time perf saw, within 10%.
reloaded=$(json_field "$T/status.json" 'd["reloaded_ns"]')
rs=$(python3 -c 'import sys; n=int(sys.argv[1]); print("%d.%09d" % (n // 10**9, n % 10**9))' "$reloaded")
"$FLIGHTREC" attach --from "$(( reloaded / 1000000000 - 60 ))" --to "$rs" --pid "$BURN_PID" \
	-o "$T/before.pb.gz" 2>"$T/attach.err" || fail "attach before the reload failed: $(cat "$T/attach.err")"
"$FLIGHTREC" attach --from "$rs" --pid "$BURN_PID" --hz 499 \
	-o "$T/after.pb.gz" 2>"$T/attach.err" || fail "attach after the reload failed: $(cat "$T/attach.err")"
nb=$(pprof_top "$T/before.pb.gz" | awk '/^Showing nodes accounting for/ { print $8; exit }')
na=$(pprof_top "$T/after.pb.gz" | awk '/^Showing nodes accounting for/ { print $8; exit }')
[ "${perf_n:-0}" -gt 100 ] || fail "perf took only ${perf_n:-0} samples"
[ "${nb:-0}" -gt 20 ] && [ "${na:-0}" -gt 100 ] || fail "too few samples on one side of the reload: $nb before, $na after"
awk -v b="$nb" -v a="$na" -v p="$perf_n" 'BEGIN { s = b / 99 + a / 499; t = p / 99; exit !(s >= 0.9 * t && s <= 1.1 * t) }' ||
	fail "$nb samples at 99 Hz before and $na at 499 Hz after the reload; perf took $perf_n at 99 Hz (more than 10% apart)"

# The window across the reload is one profile at the lowest rate in it.
"$FLIGHTREC" attach --window 60s --pid "$BURN_PID" -o "$T/across.pb.gz" 2>"$T/attach.err" ||
	fail "attach across the reload failed: $(cat "$T/attach.err")"
pprof_top "$T/across.pb.gz" >"$T/across.top"
n=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/across.top")
"$GO" tool pprof -symbolize=none -comments "$T/across.pb.gz" 2>/dev/null | grep -q 'downsampled from 499 Hz to 99 Hz' ||
	fail "the profile does not say it was downsampled from 499 Hz"
echo "reload: $nb samples at 99 Hz before, $na at 499 Hz after, $n across at 99 Hz; perf took $perf_n at 99 Hz"

# An invalid file is rejected, logged with its reason; the rate stays.
printf '{"sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 0}]}]}\n' >"$T/config.json"
kill -HUP "$DAEMON_PID"
try_until 10 grep -q 'reload rejected' "$T/daemon.log"
daemon_alive || fail "an invalid configuration on SIGHUP killed the daemon"
"$FLIGHTREC" status >"$T/status"
grep -q 'event:    cpu at 499 Hz' "$T/status" || fail "an invalid reload changed the rate"
grep -q 'reload rejected; the running configuration stays: .*sessions\[0\].events\[0\].hz: must be 1..10000, got 0' "$T/daemon.log" ||
	fail "the rejected reload is not logged with its reason: $(tail -3 "$T/daemon.log")"

# Geometry changes wait for the next start; the ring is kept.
printf '{"ring": {"size": "32MiB"}, "sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 99}]}]}\n' >"$T/config.json"
size=$(stat -c %s "$RING")
kill -HUP "$DAEMON_PID"
try_until 10 grep -q 'take effect at the next start' "$T/daemon.log"
try_until 10 rate_is 99
grep -q 'take effect at the next start' "$T/daemon.log" || fail "no note that the ring size waits for a restart"
"$FLIGHTREC" status | grep -q 'event:    cpu at 99 Hz' || fail "the rate of the third reload did not apply"
[ "$(stat -c %s "$RING")" = "$size" ] || fail "a reload changed the ring file"
"$FLIGHTREC" attach --window 60s --pid "$BURN_PID" -o "$T/after3.pb.gz" 2>/dev/null || fail "attach after reloads failed"
stop_daemon
echo PASS
