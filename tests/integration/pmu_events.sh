#!/bin/bash
# Period mode through the daemon: a session records page-faults at every
# fault and cpu every 2 ms of CPU time. status says so (and shows each
# software counter's enabled and running times: never multiplexed); a
# profile's every page-faults sample weighs exactly 1 and every cpu sample
# exactly 2 ms, whatever the rate asked for (period mode is not
# downsampled); a process that faults in 3000 fresh pages has at least
# that many page faults; the comments say how the events were sampled.
# A hardware event in period mode is recorded where there is a PMU (its
# precise_ip level in status and in the profile's comments) and refused
# with the documented reason where there is none. A raw event with
# its full 64-bit config and config1, asked for by a client, is refused
# the same way under its full name; a malformed one is a usage error that
# says what is wrong with it.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

cat >"$T/config.json" <<'JSON'
{"sessions": [
  {"name": "exact", "events": [{"event": "page-faults", "period": 1, "unwind": "fp"},
                               {"event": "cpu", "period": 2000000, "unwind": "fp"},
                               {"event": "instructions", "period": 1000000}]}
]}
JSON
start_daemon --config "$T/config.json"
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q '^event:    page-faults every 1 events' "$T/status" ||
	fail "status does not show page-faults in period mode: $(cat "$T/status")"
grep -q '^event:    cpu every 2ms' "$T/status" ||
	fail "status does not show cpu in period mode: $(cat "$T/status")"
grep -q '^consumer: session exact wants page-faults@period=1,cpu@period=2000000,instructions@period=1000000$' "$T/status" ||
	fail "status does not show the session's periods: $(grep consumer "$T/status")"
# Regression log_durations: the log printed "every 2000000 ns".
grep -q 'cpu: recording a sample every 2ms of CPU time' "$T/daemon.log" ||
	fail "the log does not give cpu's period as a duration: $(grep recording "$T/daemon.log")"
"$FLIGHTREC" sessions >"$T/sessions" || fail "sessions failed"
grep -q 'page-faults@period=1,cpu@period=2000000,instructions@period=1000000' "$T/sessions" ||
	fail "sessions does not show the periods: $(cat "$T/sessions")"
grep -q '^recording: page-faults every 1 events (period mode' "$T/sessions" ||
	fail "sessions does not say page-faults records in period mode: $(cat "$T/sessions")"
if grep -q '^event:    instructions every 1000000 events' "$T/status"; then
	have_pmu=1
else
	have_pmu=0
	grep -q '^event:    instructions not recording: instructions: hardware counters are not available on this machine (perf_event_open: E[A-Z]*)$' "$T/status" ||
		fail "status does not say why instructions is not recorded: $(grep instructions "$T/status")"
fi

# A process that faults in 3000 fresh pages, one at a time.
python3 -c '
import mmap, sys, time
m = mmap.mmap(-1, 3000 * 4096)
for i in range(3000):
    m[i * 4096] = 1
time.sleep(0.5)
' &
PY_PID=$!
"$BURN" 1 1 0 >"$T/burn.out" &
BURN_PID=$!
wait "$PY_PID" || fail "the faulting program failed"
wait "$BURN_PID" || fail "burn failed"

"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
python3 - "$T/status.json" <<'PY' || fail "status --json is wrong: $(cat "$T/status.json")"
import json, sys
evs = {e["event"]: e for e in json.load(open(sys.argv[1]))["events"]}
for name, period in (("page-faults", 1), ("cpu", 2000000)):
    e = evs[name]
    assert e["state"] == "recording" and e["period"] == period and e["hz"] == 0, e
    pmu = e["pmu"]
    assert pmu["enabled_ns"] > 0 and pmu["running_ns"] == pmu["enabled_ns"], pmu
    assert pmu["multiplexed"] is False and pmu["scaled_samples"] == 0, pmu
    assert "precise_ip" not in pmu, pmu
if "instructions" in evs and evs["instructions"]["state"] == "recording":
    assert evs["instructions"]["period"] == 1000000, evs["instructions"]
PY

# Asked at 10 Hz: period mode has no rate to downsample by, so every
# sample stays, each of weight 1 (page-faults) and 2 ms (cpu). A sample at
# every page fault of a program that does nothing else can outrun the
# recorder's buffers: the losses are said, and accepted here.
"$FLIGHTREC" attach --window 60s --hz 10 --event page-faults --pid "$PY_PID" --allow-loss \
	-o "$T/pf.pb.gz" 2>"$T/err" ||
	fail "attach --event page-faults failed: $(cat "$T/err")"
grep -Eq "^flightrec: wrote $T/pf.pb.gz: [0-9]+ samples, [0-9]+ stacks, spanning [0-9.hms]+ \(window 1m[^)]*\), not downsampled" "$T/err" ||
	fail "attach does not say the profile is not downsampled: $(cat "$T/err")"
"$GO" tool pprof -raw "$T/pf.pb.gz" >"$T/pf.raw" 2>"$T/pprof.err" ||
	fail "go tool pprof cannot read the profile: $(cat "$T/pprof.err")"
python3 - "$T/pf.raw" 1 3000 <<'PY' || fail "page-faults weights are not exact"
import re, sys
text = open(sys.argv[1]).read()
period, least = int(sys.argv[2]), int(sys.argv[3])
rows = re.findall(r"^\s+(\d+)\s+(\d+): ", text.split("Samples:")[1], re.M)
assert rows, "no samples"
bad = [(n, v) for n, v in rows if int(v) != int(n) * period]
assert not bad, "rows whose value is not count x %d: %s" % (period, bad[:5])
total = sum(int(v) for _, v in rows)
print("page-faults of the faulting program: %d in %d rows" % (total, len(rows)))
assert total >= least, "%d page faults, the program faulted in %d pages" % (total, least)
PY
"$GO" tool pprof -comments "$T/pf.pb.gz" >"$T/pf.comments" 2>/dev/null
grep -q 'page-faults sampled in period mode (a sample every fixed number of page-faults; value = the period per sample, exact, not downsampled)' "$T/pf.comments" ||
	fail "the profile does not say page-faults was sampled in period mode: $(cat "$T/pf.comments")"

"$FLIGHTREC" attach --window 60s --hz 10 --event cpu --pid "$BURN_PID" -o "$T/cpu.pb.gz" 2>"$T/err" ||
	fail "attach --event cpu failed: $(cat "$T/err")"
"$GO" tool pprof -raw "$T/cpu.pb.gz" >"$T/cpu.raw" 2>/dev/null || fail "go tool pprof cannot read the cpu profile"
cpu_s=$(sed -n 's/.*cpu_seconds=\([0-9.]*\).*/\1/p' "$T/burn.out")
[ -n "$cpu_s" ] || fail "burn did not report its CPU time"
python3 - "$T/cpu.raw" 2000000 "$cpu_s" <<'PY' || fail "cpu weights are not exact"
import re, sys
text = open(sys.argv[1]).read()
period, cpu_ns = int(sys.argv[2]), float(sys.argv[3]) * 1e9
rows = re.findall(r"^\s+(\d+)\s+(\d+): ", text.split("Samples:")[1], re.M)
assert rows, "no samples"
bad = [(n, v) for n, v in rows if int(v) != int(n) * period]
assert not bad, "rows whose value is not count x %d: %s" % (period, bad[:5])
total = sum(int(v) for _, v in rows)
print("cpu of burn at a sample every 2 ms: %d ns; it measured %d ns" % (total, cpu_ns))
assert 0.8 * cpu_ns - 4e6 <= total <= 1.2 * cpu_ns + 4e6, "%d ns of a process that ran %d ns" % (total, cpu_ns)
PY

if [ "$have_pmu" = 1 ]; then
	"$FLIGHTREC" attach --window 60s --event instructions --pid "$BURN_PID" -o "$T/ins.pb.gz" 2>"$T/err" ||
		fail "attach --event instructions failed on a machine with a PMU: $(cat "$T/err")"
	"$GO" tool pprof -raw "$T/ins.pb.gz" >"$T/ins.raw" 2>/dev/null
	python3 - "$T/ins.raw" 1000000 1 <<'PY' || fail "instructions weights are not exact"
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r"^\s+(\d+)\s+(\d+): ", text.split("Samples:")[1], re.M)
assert rows and all(int(v) % int(sys.argv[2]) == 0 for _, v in rows), rows[:5]
PY
	# The precise_ip level the kernel accepted: in status and in the
	# profile's comments.
	level=$(python3 -c '
import json, sys
e = [e for e in json.load(open(sys.argv[1]))["events"] if e["event"] == "instructions"][0]
assert e["pmu"]["precise_ip_asked"] == 3 and 0 <= e["pmu"]["precise_ip"] <= 3, e
print(e["pmu"]["precise_ip"])' "$T/status.json") || fail "status has no precise_ip for instructions"
	"$GO" tool pprof -comments "$T/ins.pb.gz" 2>/dev/null | grep -q "instructions: precise_ip $level of 3 asked" ||
		fail "the profile does not say precise_ip $level: $("$GO" tool pprof -comments "$T/ins.pb.gz" 2>&1)"
fi
# A follower of an event in period mode does not change it, and is told so.
mkdir "$T/follow"
timeout -s INT 3 "$FLIGHTREC" attach --follow --window 1s --hz 199 --event cpu -o "$T/follow" 2>"$T/err"
grep -q '^flightrec: following cpu (recorded in period mode, not downsampled)$' "$T/err" ||
	fail "the follower is not told cpu is in period mode: $(cat "$T/err")"
"$FLIGHTREC" status | grep -q '^event:    cpu every 2ms' || fail "a follower changed cpu's period mode"

# Raw events: config above 32 bits and config1, beside cpu in one --event.
raw=raw:0x10000003c,config1=0x3f807f8fff
if "$FLIGHTREC" attach --window 60s --event "$raw,cpu" -o "$T/raw.pb.gz" 2>"$T/err"; then
	[ "$have_pmu" = 1 ] || fail "attach --event $raw succeeded on a machine without a PMU"
	"$GO" tool pprof -raw "$T/raw.pb.gz" 2>/dev/null | grep -q "$raw/count" ||
		fail "the profile has no $raw column"
elif [ "$have_pmu" = 1 ]; then
	# This config may mean nothing to this PMU: the error names the event.
	grep -q "^flightrec: $raw: " "$T/err" || fail "attach --event $raw: unclear error: $(cat "$T/err")"
else
	grep -qx "flightrec: $raw: hardware counters are not available on this machine (perf_event_open: E[A-Z]*)" "$T/err" ||
		fail "attach --event $raw: unclear error: $(cat "$T/err")"
	[ ! -e "$T/raw.pb.gz" ] || fail "a failed attach left a file"
fi
"$FLIGHTREC" attach --window 5s --event "cpu,raw:0x1c2,config1=3f" -o "$T/x.pb.gz" 2>"$T/err"
[ $? = 2 ] || fail "a malformed raw event is not a usage error"
grep -qx 'flightrec attach: --event: "raw:0x1c2,config1=3f": config1 must be 0x and 1 to 16 hex digits, like config1=0x3f807f8fff' "$T/err" ||
	fail "unclear malformed raw event error: $(cat "$T/err")"
daemon_alive || fail "the daemon died"
stop_daemon
# The start line (stdout, flushed by now) gives durations too.
grep -q 'recording .*cpu every 2ms of CPU time' "$T/daemon.log" ||
	fail "the start line does not give cpu's period as a duration: $(grep 'recording' "$T/daemon.log")"
if grep -E '[0-9]{4,} ?ns\b' "$T/daemon.log"; then
	fail "a duration in raw nanoseconds in the log"
fi
echo PASS
