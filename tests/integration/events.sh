#!/bin/bash
# Events beyond cpu: off-CPU time from sched_switch (the perf mechanism,
# asked for by name; tests/integration/offcpu_bpf.sh runs the default) attributed to the
# function a thread blocked in (within 10% of the truth), several events in
# one profile (one value column each), targets by command name and cgroup,
# and hardware events: recorded where the machine has a PMU, refused with a
# clear reason where it has none, while the other events keep recording.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

cat >"$T/config.json" <<'JSON'
{"sessions": [
  {"name": "always", "events": [{"event": "cpu", "hz": 99}]},
  {"name": "waits", "events": [{"event": "offcpu", "mechanism": "perf"}, {"event": "cycles", "hz": 99}]}
]}
JSON
start_daemon --config "$T/config.json"
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q '^event:    cpu at 99 Hz' "$T/status" || fail "cpu is not recording: $(cat "$T/status")"
grep -q '^event:    offcpu at every context switch' "$T/status" ||
	fail "offcpu is not recording: $(cat "$T/status")"
if grep -q '^event:    cycles at 99 Hz' "$T/status"; then
	have_pmu=1
else
	have_pmu=0
	# No PMU (a VM): the reason is named, and the daemon records the rest.
	grep -q '^event:    cycles not recording: cycles: hardware counters are not available on this machine (perf_event_open: E[A-Z]*)$' "$T/status" ||
		fail "status does not say why cycles is not recorded: $(grep cycles "$T/status")"
	grep -q 'cycles: hardware counters are not available on this machine' "$T/daemon.log" ||
		fail "the daemon did not log why cycles is not recorded"
fi

# A thread blocks ~2 s in fr_block_here (20 ms at a time) while a CPU-bound
# program runs beside it.
"$BLOCK" 2 0.5 >"$T/block.out" &
BLOCK_PID=$!
"$BURN" 3 1 0 >"$T/burn.out" &
BURN_PID=$!
wait "$BLOCK_PID" || fail "block failed"
wait "$BURN_PID" || fail "burn failed"
truth=$(sed -n 's/.*blocked_ns=\([0-9]*\).*/\1/p' "$T/block.out")
[ -n "$truth" ] || fail "block did not report its blocked time"

# The offcpu source's cost counters: it saw switches both ways and kept
# samples, the table is the recorder's, and the text says the same.
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
python3 - "$T/status.json" <<'PY' || fail "offcpu counters are wrong: $(cat "$T/status.json")"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["events"] if e["event"] == "offcpu"][0]
o = ev["offcpu"]
assert o["switch_outs"] > 0 and o["switch_ins"] > 0, o
assert 0 < o["samples"] <= min(o["switch_outs"], o["switch_ins"]), o
assert o["capacity"] == 65536 and o["waiting"] <= o["capacity"], o
assert o["evicted"] == 0, o
PY
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -Eq '^offcpu:   [1-9][0-9]* switches out, [1-9][0-9]* in; [1-9][0-9]* samples kept, 0 evicted \(table full\); [0-9]+ of 65536 threads waiting$' "$T/status" ||
	fail "status does not show the offcpu counters: $(cat "$T/status")"

# Off-CPU time of the blocked function, and cpu time, in one profile.
"$FLIGHTREC" attach --window 30s --event offcpu,cpu --pid "$BLOCK_PID,$BURN_PID" \
	-o "$T/both.pb.gz" 2>"$T/attach.err" || fail "attach --event offcpu,cpu failed: $(cat "$T/attach.err")"
"$GO" tool pprof -raw "$T/both.pb.gz" >"$T/both.raw" 2>"$T/pprof.err" ||
	fail "go tool pprof cannot read the profile: $(cat "$T/pprof.err")"
grep -q '^Samples:$' "$T/both.raw" || fail "no samples section"
sed -n '/^Samples:$/{n;p;q}' "$T/both.raw" | grep -Eq '^ *samples/count offcpu/nanoseconds(\[dflt\])? cpu/nanoseconds *$' ||
	fail "sample types are not [samples/count, offcpu/nanoseconds, cpu/nanoseconds]: $(sed -n '/^Samples:$/{n;p;q}' "$T/both.raw")"
# go tool pprof -top in nanoseconds, cum column of the blocked function.
off=$(cum_ns "$T/both.pb.gz" fr_block_here offcpu)
echo "off-CPU in fr_block_here: $off ns; measured around the calls: $truth ns"
awk -v a="$off" -v b="$truth" 'BEGIN { exit !(a >= 0.9 * b && a <= 1.1 * b) }' || {
	"$GO" tool pprof -symbolize=none -traces -sample_index=offcpu -tagfocus=comm=block \
		"$T/both.pb.gz" 2>&1 | head -60 >&2
	fail "off-CPU time of fr_block_here is $off ns, the truth is $truth ns (more than 10% apart)"
}
burn_cpu=$(cum_ns "$T/both.pb.gz" fr_burn_heavy cpu)
[ "${burn_cpu%.*}" -gt 100000000 ] || {
	"$GO" tool pprof -symbolize=none -top -sample_index=cpu "$T/both.pb.gz" 2>&1 | head -30 >&2
	fail "the cpu column lost fr_burn_heavy ($burn_cpu ns)"
}
burn_off=$(cum_ns "$T/both.pb.gz" fr_burn_heavy offcpu)
off_cpu=$(cum_ns "$T/both.pb.gz" fr_block_here cpu)
awk -v a="$off_cpu" -v b="$truth" 'BEGIN { exit !(a < 0.05 * b) }' ||
	fail "the blocked function has $off_cpu ns in the cpu column"

# flightrec top shows the first event asked for: off-CPU seconds here.
"$FLIGHTREC" top --window 30s --event offcpu,cpu --pid "$BLOCK_PID" --sort cum -n 100 >"$T/top" 2>/dev/null ||
	fail "flightrec top --event offcpu failed"
awk '$NF == "fr_block_here" { v = $3; sub("s$", "", v); if (v + 0 >= 1.8 && v + 0 <= 2.2) ok = 1 }
	END { exit !ok }' "$T/top" || fail "top --event offcpu does not show ~2s in fr_block_here: $(cat "$T/top")"

# Targets: by command name, and by cgroup (ours, and one nobody is in).
"$FLIGHTREC" attach --window 30s --event offcpu --comm block -o "$T/comm.pb.gz" 2>/dev/null ||
	fail "attach --comm failed"
comm_off=$(cum_ns "$T/comm.pb.gz" fr_block_here offcpu)
[ "$comm_off" = "$off" ] || fail "--comm block gives $comm_off ns, --pid gave $off ns"
"$GO" tool pprof -symbolize=none -top -sample_index=samples "$T/comm.pb.gz" 2>/dev/null |
	grep -q fr_burn_heavy && fail "--comm block holds samples of burn"
cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
if [ -n "$cg" ]; then
	"$FLIGHTREC" attach --window 30s --event offcpu --cgroup "$cg" --pid "$BLOCK_PID" -o "$T/cg.pb.gz" 2>/dev/null ||
		fail "attach --cgroup failed"
	[ "$(cum_ns "$T/cg.pb.gz" fr_block_here offcpu)" = "$off" ] || fail "--cgroup $cg lost the blocked thread"
	# A cgroup nothing is in matches nothing: said, exit 1 (cli_pressure.sh),
	# and with --allow-empty an empty profile.
	"$FLIGHTREC" attach --window 30s --event offcpu --cgroup /no/such/cgroup -o "$T/nocg.pb.gz" 2>/dev/null &&
		fail "attach --cgroup of an empty cgroup succeeded"
	"$FLIGHTREC" attach --window 30s --event offcpu --cgroup /no/such/cgroup --allow-empty \
		-o "$T/nocg.pb.gz" 2>/dev/null || fail "attach --cgroup of an empty cgroup --allow-empty failed"
	[ "$(cum_ns "$T/nocg.pb.gz" fr_block_here offcpu)" = 0 ] || fail "--cgroup /no/such/cgroup has samples"
fi

# --children: a shell that only forks and waits has its busy children.
sh -c "\"$BURN\" 1 1 0 >/dev/null; sh -c '\"$BURN\" 1 1 0 >/dev/null'" &
SH_PID=$!
wait "$SH_PID"
# The shell alone never ran on a CPU: an empty profile, accepted.
"$FLIGHTREC" attach --window 30s --pid "$SH_PID" --allow-empty -o "$T/sh.pb.gz" 2>/dev/null ||
	fail "attach --pid of the shell failed"
"$FLIGHTREC" attach --window 30s --pid "$SH_PID" --children -o "$T/shc.pb.gz" 2>/dev/null ||
	fail "attach --pid --children failed"
sh_burn=$(cum_ns "$T/sh.pb.gz" fr_burn_heavy cpu)
shc_burn=$(cum_ns "$T/shc.pb.gz" fr_burn_heavy cpu)
echo "fr_burn_heavy under the shell: $sh_burn ns without --children, $shc_burn ns with"
[ "$sh_burn" = 0 ] || fail "--pid of the shell alone holds its children's samples"
[ "${shc_burn%.*}" -gt 1000000000 ] || fail "--children misses the shell's children and grandchildren ($shc_burn ns)"
"$FLIGHTREC" attach --window 30s --children -o "$T/x.pb.gz" 2>"$T/err"
[ $? = 2 ] || fail "--children without --pid is not a usage error"

# Hardware events: a clear error on a machine without a PMU, a column
# where there is one.
if [ "$have_pmu" = 1 ]; then
	"$FLIGHTREC" attach --window 30s --event cycles --pid "$BURN_PID" -o "$T/cycles.pb.gz" 2>"$T/err" ||
		fail "attach --event cycles failed on a machine with a PMU: $(cat "$T/err")"
	[ "$(cum_ns "$T/cycles.pb.gz" fr_burn_heavy cycles)" != 0 ] || fail "no cycles in fr_burn_heavy"
else
	"$FLIGHTREC" attach --window 30s --event cycles,cpu -o "$T/cycles.pb.gz" 2>"$T/err" &&
		fail "attach --event cycles succeeded on a machine without a PMU"
	grep -q '^flightrec: cycles: hardware counters are not available on this machine (perf_event_open: E[A-Z]*)$' "$T/err" ||
		fail "attach --event cycles: unclear error: $(cat "$T/err")"
	[ ! -e "$T/cycles.pb.gz" ] || fail "a failed attach left a file"
	"$FLIGHTREC" attach --window 30s --event raw:0x1c2 -o "$T/raw.pb.gz" 2>"$T/err" &&
		fail "attach --event raw:0x1c2 succeeded on a machine without a PMU"
	grep -q '^flightrec: raw:0x1c2: hardware counters are not available on this machine' "$T/err" ||
		fail "attach --event raw:0x1c2: unclear error: $(cat "$T/err")"
fi
# Unknown events are usage errors that name what is accepted.
"$FLIGHTREC" attach --window 5s --event cpux -o "$T/x.pb.gz" 2>"$T/err"
[ $? = 2 ] || fail "an unknown event is not a usage error"
grep -q 'unknown event "cpux" (accepted: cpu, cycles' "$T/err" || fail "unclear unknown-event error: $(cat "$T/err")"
daemon_alive || fail "the daemon died"
"$FLIGHTREC" status | grep -q '^event:    cpu at 99 Hz' || fail "cpu stopped recording"
stop_daemon
echo PASS
