#!/bin/bash
# Where the eBPF program cannot load (here: flightrecd without CAP_BPF and
# CAP_SYS_ADMIN, which perf_event does not need), offcpu falls back to the
# perf mechanism: the log and status say why, and a sleeping thread's
# waits are still recorded on its stack within 10%.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"

setpriv --inh-caps=-bpf,-sys_admin --bounding-set=-bpf,-sys_admin \
	"$FLIGHTRECD" --ring "$RING" --socket "$SOCK" >>"$T/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_answering
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -q '^offcpu:   perf mechanism (offcpu: cannot load the eBPF program (Operation not permitted' \
	"$T/status" || fail "status does not say offcpu fell back to perf: $(cat "$T/status")"
grep -q '^offcpu:   [0-9]* switches out' "$T/status" || fail "no perf counters: $(cat "$T/status")"
grep -q 'cannot load the eBPF program.*recording offcpu with the perf mechanism' "$T/daemon.log" ||
	fail "the daemon did not log the fallback"

"$BLOCK" 1 >"$T/block.out" || fail "block failed"
pid=$(sed -n 's/^pid=\([0-9]*\).*/\1/p' "$T/block.out")
want=$(sed -n 's/.*blocked_ns=\([0-9]*\).*/\1/p' "$T/block.out")
"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/o.pb.gz" 2>"$T/attach.err" ||
	fail "attach failed: $(cat "$T/attach.err")"
got=$("$GO" tool pprof -symbolize=none -top -cum -nodecount=1000 -unit=ns -sample_index=offcpu \
	"$T/o.pb.gz" 2>/dev/null | awk '$6 == "fr_block_here" { v = $4; sub("ns", "", v); print v; f = 1; exit }
	END { if (!f) print 0 }')
echo "perf mechanism by fallback: $got ns in fr_block_here, measured $want ns"
awk -v a="$got" -v b="$want" 'BEGIN { exit !(a >= 0.9 * b && a <= 1.1 * b) }' ||
	fail "$got ns in fr_block_here, want $want within 10%"
echo "ok"
