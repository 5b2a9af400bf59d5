#!/bin/bash
# What recording off-CPU costs a program that switches context a lot:
# flightrecd (cpu only; cpu + offcpu by eBPF, the embedded default; cpu +
# offcpu by the perf mechanism) against perf recording every sched_switch
# with a callchain, against no recorder.
#
#   tests/bench/offcpu_cost.sh BUILD_DIR
#
# Environment (all optional):
#   COST_RUNS     rounds; medians reported (default 3)
#   COST_SECONDS  seconds each workload run lasts (default 4)
#   COST_WORK     workloads (default "pingpong pool"; also "work"), see
#                 switches.c
#   COST_CONFIGS  recorders (default "none cpu cpu+offcpu-bpf
#                 cpu+offcpu-perf perf"; also
#                 "cpu+offcpu-bpf-fp": cpu+offcpu-bpf with
#                 {"event": "offcpu", "unwind": "fp"}: long waits' user
#                 stacks by the kernel's frame-pointer walk instead of a
#                 stack copy unwound with CFI (the default);
#                 "cpu+offcpu-bpf-sysexit": cpu+offcpu-bpf with user stacks
#                 taken at sys_exit (FLIGHTREC_BPF_TASK_WORK=0), the
#                 mechanism of kernels without BPF task work;
#                 "cpu+offcpu-bpf-empty": cpu+offcpu-bpf with an empty
#                 sched_switch program in place of the real one
#                 (FLIGHTREC_BPF_EMPTY=1, a test knob of the loader): what
#                 attaching any program to every switch costs, the floor;
#                 "perf-nog": perf without -g, the tracepoint alone;
#                 "bpf-count": bpftrace running offcpu_probe.bt, the
#                 per-switch bookkeeping of an eBPF design, no stacks;
#                 "cpu+offcpu": {"event": "cpu", "hz": 99} and
#                 {"event": "offcpu"} by eBPF, whatever the embedded
#                 default holds; "cpu+offcpu+wakeup": those and
#                 {"event": "wakeup"}, {"event": "runqueue"})
#   COST_PEER     the recorder the "per round" column compares with
#                 (default none): ops/cpu-s over the same round's PEER
#   COST_ITERS    steps of arithmetic per message of "work" (default
#                 switches.c's 9000); fewer on a slower machine to bring it
#                 back to ~100,000 switches/s
#   COST_CPUS     CPUs the workload is pinned to (taskset -c; default 0).
#                 Pinned, its threads switch on one CPU and the figures do
#                 not depend on where the scheduler placed them (unpinned,
#                 runs of the same workload differed by 2x on a shared VM);
#                 the recorder is not pinned and runs on another CPU.
#
# The workloads (tests/bench/switches.c, built by meson as
# BUILD_DIR/tests/bench/switches) run for a fixed time and report the work
# they did and their CPU time:
#   pingpong  two threads bouncing a byte through two pipes (a round trip
#             is two waits and four switches; ~300,000 switches/s on a
#             2 vCPU VM);
#   work      pingpong with ~8 us of arithmetic per message on each side
#             (~100,000 switches/s on the CPU it is pinned to, the rate
#             of issue 12's 3% goal);
#   pool      a producer feeding 8 workers one small task at a time through
#             a condition variable (~200,000 switches/s).
# The recorders, each started fresh for a run and stopped after it:
#   none        nothing;
#   cpu         flightrecd --config with the session
#               {"event": "cpu", "hz": 99} (the default before off-CPU);
#   cpu+offcpu-bpf
#               flightrecd on its embedded default (no --config): cpu at
#               99 Hz and offcpu by the eBPF mechanism, stacks of waits of
#               1 ms or more, their user stacks copied (8 KiB) and unwound
#               with CFI (FLIGHTRECD_CONFIG gives a file instead, to
#               measure another setting);
#   cpu+offcpu-perf
#               flightrecd --config with {"event": "cpu", "hz": 99},
#               {"event": "offcpu", "mechanism": "perf"} (a callchain at
#               every switch, the mechanism before eBPF);
#   perf        perf record --no-buildid --no-buildid-cache
#               -e sched:sched_switch -g -a -o T/perf.data.
# Each round runs every recorder once, the order rotating. Figures (medians
# over the rounds):
#   - ops/s: work per wall second, and its ratio to no recorder;
#   - ops/cpu-s: work per CPU-second of the workload, and its ratio;
#   - per round: ops/cpu-s over the same round's none, median [min-max]
#     over the rounds (the spread on a shared machine);
#   - recorder CPU: user+sys of the recorder process (all its threads, from
#     /proc/PID/stat) over the workload's run, as % of one CPU;
#   - switches/s on the machine during the run (/proc/stat ctxt).
# Prints markdown on stdout. Needs root. Figures, not pass/fail: see
# docs/performance.md.
set -eu
build=$(cd "${1:?usage: offcpu_cost.sh BUILD_DIR}" && pwd)
runs=${COST_RUNS:-3}
secs=${COST_SECONDS:-4}
works=${COST_WORK:-"pingpong pool"}
configs=${COST_CONFIGS:-"none cpu cpu+offcpu-bpf cpu+offcpu-perf perf"}
cpus=${COST_CPUS:-0}
iters=${COST_ITERS:-}
tck=$(getconf CLK_TCK)
sw=$build/tests/bench/switches

if [ "$(id -u)" != 0 ]; then
	echo "offcpu_cost.sh: needs root (system-wide perf events)" >&2
	exit 77
fi
[ -x "$sw" ] || { echo "offcpu_cost.sh: no $sw (ninja -C $build)" >&2; exit 1; }
case " $configs " in *" perf "*)
	command -v perf >/dev/null || { echo "offcpu_cost.sh: perf not found" >&2; exit 77; } ;;
esac

T=$(mktemp -d /tmp/fr-offcpu-cost.XXXXXX)
ppid=
cleanup() {
	[ -n "$ppid" ] && kill -INT "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99}]}]}' >"$T/cpu.json"
echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu", "mechanism": "perf"}]}]}' >"$T/offcpu-perf.json"
echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu", "unwind": "fp"}]}]}' >"$T/offcpu-bpf-fp.json"
echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}]}]}' >"$T/cpu+offcpu.json"
echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}, {"event": "wakeup"}, {"event": "runqueue"}]}]}' >"$T/cpu+offcpu+wakeup.json"
if [ -n "${FLIGHTRECD_CONFIG:-}" ]; then
	cp "$FLIGHTRECD_CONFIG" "$T/offcpu-bpf.json"
fi

# CPU seconds of process $1 so far (all threads).
pcpu() {
	awk -v t="$tck" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat" \
		2>/dev/null || echo 0
}
ctxt() { awk '/^ctxt/ { print $2 }' /proc/stat; }

start_recorder() {
	case $1 in
	none) return ;;
	cpu | cpu+offcpu-bpf | cpu+offcpu-bpf-fp | cpu+offcpu-bpf-sysexit | cpu+offcpu-bpf-empty | \
		cpu+offcpu-perf | cpu+offcpu | cpu+offcpu+wakeup)
		local cfg=(--config "$T/cpu.json") tw=1 empty=0
		[ "$1" = cpu+offcpu-perf ] && cfg=(--config "$T/offcpu-perf.json")
		[ -f "$T/$1.json" ] && cfg=(--config "$T/$1.json")
		case $1 in cpu+offcpu-bpf*)
			cfg=()
			[ -f "$T/offcpu-bpf.json" ] && cfg=(--config "$T/offcpu-bpf.json")
			;;
		esac
		[ "$1" = cpu+offcpu-bpf-fp ] && cfg=(--config "$T/offcpu-bpf-fp.json")
		[ "$1" = cpu+offcpu-bpf-sysexit ] && tw=0
		[ "$1" = cpu+offcpu-bpf-empty ] && empty=1
		rm -f "$T/ring" "$T/sock"
		FLIGHTREC_BPF_TASK_WORK=$tw FLIGHTREC_BPF_EMPTY=$empty "$build/recorder/flightrecd" \
			"${cfg[@]}" --ring "$T/ring" --ring-size 64MiB --socket "$T/sock" \
			>"$T/rec.log" 2>&1 &
		ppid=$!
		for _ in $(seq 100); do
			"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
			sleep 0.1
		done
		;;
	bpf-count)
		command -v bpftrace >/dev/null || { echo "offcpu_cost.sh: bpftrace not found" >&2; exit 77; }
		bpftrace "$(dirname "$0")/offcpu_probe.bt" >"$T/rec.log" 2>&1 &
		ppid=$!
		for _ in $(seq 200); do
			grep -q '^Attaching' "$T/rec.log" && break
			sleep 0.1
		done
		sleep 1
		;;
	perf | perf-nog)
		local g=-g
		[ "$1" = perf-nog ] && g=
		rm -f "$T/perf.data"
		perf record -q --no-buildid --no-buildid-cache -e sched:sched_switch $g -a \
			-o "$T/perf.data" >"$T/rec.log" 2>&1 &
		ppid=$!
		# perf synthesizes every process's mappings first.
		sleep 1
		;;
	esac
	sleep 0.5
}

stop_recorder() {
	[ -z "$ppid" ] && return
	if ! kill -INT "$ppid" 2>/dev/null; then
		echo "offcpu_cost.sh: the recorder exited during the run; its log ends:" >&2
		tail -n 20 "$T/rec.log" >&2
	fi
	wait "$ppid" || true
	ppid=
}

# one WORK CONFIG: prints "OPS WALL CPU RECCPU SWITCHES"
one() {
	local c0=0 c1=0 x0 x1 out extra=()
	[ "$1" = work ] && [ -n "$iters" ] && extra=("$iters")
	start_recorder "$2"
	[ -n "$ppid" ] && c0=$(pcpu "$ppid")
	x0=$(ctxt)
	if ! out=$(taskset -c "$cpus" "$sw" "$1" "$secs" "${extra[@]}"); then
		# (A shared machine out of processes or threads, say.)
		echo "offcpu_cost.sh: the workload failed" >&2
		stop_recorder
		echo failed
		return
	fi
	x1=$(ctxt)
	[ -n "$ppid" ] && c1=$(pcpu "$ppid")
	stop_recorder
	echo "$out $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') $((x1 - x0))"
}

for w in $works; do
	: >"$T/res.$w"
	set -- $configs
	for r in $(seq "$runs"); do
		# Rotate the order from round to round.
		for i in $(seq 0 $(($# - 1))); do
			k=$(((i + r) % $# + 1))
			cfg=${!k}
			res=$(one "$w" "$cfg")
			echo "$w $cfg round $r: $res" >&2
			[ "$res" = failed ] || echo "$cfg $r $res" >>"$T/res.$w"
		done
	done
	echo
	echo "### $w ($runs rounds of ${secs} s on CPU $cpus, medians)"
	echo
	echo "| recorder | ops/s | vs none | ops/cpu-s | vs none | per round vs ${COST_PEER:-none} | recorder CPU | switches/s |"
	echo "|---|---|---|---|---|---|---|---|"
	COST_PEER=${COST_PEER:-none} python3 - "$T/res.$w" $configs <<'PY'
import os, statistics, sys
rows, byround = {}, {}
for line in open(sys.argv[1]):
    c, r, ops, wall, cpu, rc, x = line.split()
    rows.setdefault(c, []).append((float(ops), float(wall), float(cpu), float(rc), float(x)))
    byround[(c, r)] = float(ops) / float(cpu)
med = lambda v: statistics.median(v)
# The spread: ops/cpu-s over the same round's peer, median [min-max].
peer = os.environ["COST_PEER"]
def spread(c):
    v = sorted(byround[(c, r)] / byround[(peer, r)] for (k, r) in byround
               if k == c and (peer, r) in byround)
    return "%.3f [%.3f-%.3f]" % (med(v), v[0], v[-1]) if v else "-"
def fig(c):
    r = rows[c]
    return (med([o / w for o, w, _, _, _ in r]), med([o / u for o, _, u, _, _ in r]),
            med([p / w for _, w, _, p, _ in r]), med([x / w for _, w, _, _, x in r]))
base = fig("none") if "none" in rows else None
for c in sys.argv[2:]:
    ops, opc, rc, xs = fig(c)
    vs = lambda a, b: "%.3f" % (a / b) if base else "-"
    print("| %s | %.0f | %s | %.0f | %s | %s | %.1f%% | %.0f |" % (
        c, ops, vs(ops, base[0]) if base else "-", opc, vs(opc, base[1]) if base else "-",
        spread(c), 100 * rc, xs))
PY
done
