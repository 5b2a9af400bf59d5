#!/bin/bash
# Off-CPU by the eBPF mechanism, on the embedded default configuration (no
# config file): a thread that sleeps 20 ms at a time in fr_block_here()
# shows its sleep on that stack (kernel nanosleep under the user function)
# with the measured time within 10%; a thread that sleeps 100 us at a time
# (waits under min_wait, no stacks) is counted exactly on the
# "[off-CPU waits under min_wait]" frame: its off-CPU total is within 10%
# of its wall time minus its CPU time; status names the mechanism
# and its counters; preempted spinners get their user stacks from the BPF
# task work (status: user_stacks_by task_work), and so does a thread
# waiting in page faults (fault_wait: userfaultfd served late), on
# fr_fault_here() within 10%. The sys_exit fallback
# (FLIGHTREC_BPF_TASK_WORK=0) marks both instead and still takes the user
# stacks of sleeps. Then "mechanism": "perf" still records through the
# sched_switch tracepoint. (Blocked threads across windows, kill -9 and
# dump --ring --threads run on this mechanism in open_waits, threads and
# threads_at, whose configurations take the default mechanism.)
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

start_daemon
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q '^event:    offcpu' "$T/status" || fail "the embedded default records no offcpu: $(cat "$T/status")"
grep -q '^offcpu:   bpf, stacks of waits >= 1ms' "$T/status" ||
	fail "offcpu is not recorded by eBPF: $(cat "$T/status")"
grep -q '^offcpu:   bpf,.* with user stacks by task_work,' "$T/status" ||
	fail "status does not say user stacks are taken by task work: $(cat "$T/status")"

blocked_of() { sed -n 's/.*blocked_ns=\([0-9]*\).*/\1/p' "$1"; }
pid_of() { sed -n 's/^pid=\([0-9]*\).*/\1/p' "$1"; }

# Long waits: 3 s of 20 ms sleeps, each one sample with its stacks.
"$BLOCK" 3 >"$T/long.out" || fail "block failed"
pid=$(pid_of "$T/long.out")
want=$(blocked_of "$T/long.out")
"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/long.pb.gz" 2>"$T/attach.err" ||
	fail "attach failed: $(cat "$T/attach.err")"
got=$(cum_ns "$T/long.pb.gz" fr_block_here)
echo "long waits: $got ns in fr_block_here, measured $want ns"
near "$got" "$want" || fail "long waits: $got ns in fr_block_here, want $want within 10%"
"$GO" tool pprof -symbolize=none -traces -sample_index=offcpu "$T/long.pb.gz" >"$T/long.traces" 2>&1
grep -A12 'nanosleep' "$T/long.traces" | grep -q 'fr_block_here' ||
	fail "no stack from the kernel's nanosleep to fr_block_here: $(head -40 "$T/long.traces")"

# Short waits: 2 s of 100 us sleeps, counted on the marker frame.
"$BLOCK" short 2 >"$T/short.out" || fail "block short failed"
pid=$(pid_of "$T/short.out")
wall=$(sed -n 's/.*wall_ns=\([0-9]*\).*/\1/p' "$T/short.out")
cpu=$(sed -n 's/.*cpu_ns=\([0-9]*\).*/\1/p' "$T/short.out")
want=$((wall - cpu))
"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/short.pb.gz" 2>"$T/attach.err" ||
	fail "attach failed: $(cat "$T/attach.err")"
marker=$(cum_ns "$T/short.pb.gz" "[off-CPU waits under min_wait]")
long=$(cum_ns "$T/short.pb.gz" fr_block_here)
echo "short waits: $marker ns under min_wait + $long ns of longer sleeps; wall - cpu $want ns"
[ "$marker" -gt 0 ] || fail "no [off-CPU waits under min_wait] in the profile"
# Off-CPU time is inside the sleeps: at most the time measured around them
# (below), at least wall - cpu less 10%. (On a VM the thread's CPU clock
# also counts time the host took, so the truth is above wall - cpu, by a
# few % and by more than 10% on a loaded host: a run of the suite measured
# 1.84 s against 1.67 s; the time around the sleeps bounds it from above.)
[ "$((marker + long))" -ge "$((want * 9 / 10))" ] ||
	fail "short waits: $marker + $long ns, want at least 90% of $want (wall - cpu of the thread)"
[ "$((marker + long))" -le "$(($(blocked_of "$T/short.out") * 101 / 100))" ] ||
	fail "short waits: $marker + $long ns, more than the time around the sleeps"

# spinners TAG: two spinners sharing CPU 1, preempted, not blocked: they
# wait on the run queue outside any system call; their profile in
# $T/TAG.pb.gz and the off-CPU ns of its note frame, short waits and fr_spin
# in $note, $short, $spin.
spinners() {
	taskset -c 1 "$BLOCK" mix 1 >"$T/m1.out" &
	M1=$!
	taskset -c 1 "$BLOCK" mix 1 >"$T/m2.out" &
	M2=$!
	sleep 3
	"$FLIGHTREC" attach --window 2s --event offcpu --pid "$M1,$M2" -o "$T/$1.pb.gz" \
		2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
	kill "$M1" "$M2"
	note=$(cum_ns "$T/$1.pb.gz" "[user stack not captured: not in a system call]")
	short=$(cum_ns "$T/$1.pb.gz" "[off-CPU waits under min_wait]")
	spin=$(cum_ns "$T/$1.pb.gz" fr_spin)
	echo "preempted spinners ($1): $note ns without user stacks, $short ns of short waits," \
		"$spin ns on fr_spin"
	[ "$((note + short + spin))" -gt 500000000 ] || fail "the spinners' run queue waits are missing"
}

# faults TAG: a thread waiting 50 times 20 ms in page faults (userfaultfd)
# in fr_fault_here(); its profile in $T/TAG.pb.gz, the off-CPU ns on
# fr_fault_here in $fault and on the note frame in $fnote, the time
# measured around the faults in $fwant.
faults() {
	"$FAULT" 50 >"$T/$1.out" 2>"$T/$1.err" || fail "fault_wait failed: $(cat "$T/$1.err")"
	"$FLIGHTREC" attach --window 20s --event offcpu --pid "$(pid_of "$T/$1.out")" \
		-o "$T/$1.pb.gz" 2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
	fwant=$(blocked_of "$T/$1.out")
	fault=$(cum_ns "$T/$1.pb.gz" fr_fault_here)
	fnote=$(cum_ns "$T/$1.pb.gz" "[user stack not captured: not in a system call]")
	echo "page faults ($1): $fault ns on fr_fault_here, $fnote ns without user stacks," \
		"measured $fwant ns"
}
FAULT=$BUILD/tests/integration/fault_wait

# By task work (this kernel has it): a preempted spinner takes its user
# stack on its way back to user space, where it was preempted: fr_spin.
spinners pre
[ "$spin" -gt 0 ] || fail "no preempted spinner's wait has its user stack (fr_spin)"
[ "$((note * 10))" -lt "$spin" ] || fail "preempted spinners: $note ns marked without user stacks"
# And a wait in a page fault, where it faulted.
faults pf
near "$fault" "$fwant" || fail "page faults: $fault ns on fr_fault_here, want $fwant within 10%"
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
python3 - "$T/status.json" <<'PY' || fail "status counters: $(cat "$T/status.json")"
import json, sys
st = json.load(open(sys.argv[1]))
ev = [e for e in st["events"] if e["event"] == "offcpu"][0]
o = ev["offcpu"]
print("status:", {k: o[k] for k in ("mechanism", "user_stacks_by", "switch_outs", "long_waits", "user_stacks",
                                   "short_records", "ringbuf_drops", "open_listed")})
assert o["mechanism"] == "bpf" and o["min_wait_ns"] == 1000000
assert o["user_stacks_by"] == "task_work"
assert o["switch_outs"] > 0 and o["long_waits"] >= 100 and o["user_stacks"] >= 100
assert o["short_records"] > 0 and "fallback" not in o
PY
stop_daemon

# The fallback where the kernel has no task-work kfunc: user stacks at the
# return of the system call, a preemption marked as not in one and never
# given a later system call's stack; long sleeps still reach fr_block_here.
FLIGHTREC_BPF_TASK_WORK=0 start_daemon
grep -q 'no BPF task work here' "$T/daemon.log" || fail "the fallback is not logged"
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
python3 -c 'import json, sys
o = [e for e in json.load(open(sys.argv[1]))["events"] if e["event"] == "offcpu"][0]["offcpu"]
assert o["mechanism"] == "bpf" and o["user_stacks_by"] == "sys_exit", o' "$T/status.json" ||
	fail "status does not say sys_exit: $(cat "$T/status.json")"
"$BLOCK" 1 >"$T/sx.out" || fail "block failed"
pid=$(pid_of "$T/sx.out")
want=$(blocked_of "$T/sx.out")
"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/sx.pb.gz" 2>"$T/attach.err" ||
	fail "attach failed: $(cat "$T/attach.err")"
got=$(cum_ns "$T/sx.pb.gz" fr_block_here)
echo "sys_exit fallback: $got ns in fr_block_here, measured $want ns"
near "$got" "$want" || fail "sys_exit fallback: $got ns in fr_block_here, want $want within 10%"
spinners sx
[ "$note" -gt 0 ] || fail "fallback: no preemption of 1 ms or more was marked as such"
[ "$spin" = 0 ] || fail "fallback: a preempted spinner's wait has a user stack: $spin ns on fr_spin"
faults sxpf
[ "$fault" = 0 ] && near "$fnote" "$fwant" ||
	fail "fallback: page faults: $fault ns on fr_fault_here, $fnote marked, want $fwant marked"
stop_daemon

# The perf mechanism, asked for by name.
cat >"$T/perf.json" <<'JSON'
{"sessions": [{"name": "p", "events": [{"event": "offcpu", "mechanism": "perf"}]}]}
JSON
start_daemon --config "$T/perf.json"
"$BLOCK" 1 >"$T/perf.out" || fail "block failed"
pid=$(pid_of "$T/perf.out")
want=$(blocked_of "$T/perf.out")
"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/perf.pb.gz" 2>"$T/attach.err" ||
	fail "attach failed: $(cat "$T/attach.err")"
got=$(cum_ns "$T/perf.pb.gz" fr_block_here)
echo "perf mechanism: $got ns in fr_block_here, measured $want ns"
near "$got" "$want" || fail "perf mechanism: $got ns in fr_block_here, want $want within 10%"
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q '^offcpu:   [0-9]* switches out' "$T/status" ||
	fail "status does not show the perf mechanism: $(cat "$T/status")"
echo "ok"
