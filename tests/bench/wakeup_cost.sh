#!/bin/bash
# What recording wakeups and run-queue delays costs on top of off-CPU: the
# workload of the off-CPU cost goal ("work": ~100,000 switches a second on
# one CPU, tests/bench/switches.c) under flightrecd recording cpu at 99 Hz
# and offcpu by eBPF ("cpu+offcpu"), against the same with wakeup and
# runqueue ("cpu+offcpu+wakeup"), and against no recorder, in the same
# rounds (tests/bench/offcpu_cost.sh runs them, the order rotating).
#
#   tests/bench/wakeup_cost.sh BUILD_DIR
#
# Two figures:
#  1. The workload's slowdown: the "per round vs cpu+offcpu" column of the
#     cpu+offcpu+wakeup row, its ops per CPU-second over the same round's
#     cpu+offcpu run, median [min-max] (the none row, against cpu+offcpu,
#     is what off-CPU alone costs on the same machine at the same time);
#     "recorder CPU" is the recorder's user+sys, % of one CPU.
#  2. The eBPF programs' own time (kernel.bpf_stats_enabled, with bpftool):
#     for each configuration, run_time_ns of every program the recorder
#     loaded over the workload's run, per context switch of the machine
#     and per run of each program. This does not depend on how busy the
#     machine is, where figure 1 on a shared machine does. bpf_stats adds
#     its own two clock reads to each run (~55 ns on a 2 vCPU VM).
#
# Environment: COST_RUNS (default 5), COST_SECONDS (default 4),
# COST_ITERS, COST_CPUS, as offcpu_cost.sh; COST_WORK (default "work";
# "pingpong pool" are the busier ones); NS_SKIP=1 leaves figure 2 out.
# Prints markdown; needs root. Figures, not pass/fail: see
# docs/performance.md, "Wakeups and run-queue delay".
set -eu
build=$(cd "${1:?usage: wakeup_cost.sh BUILD_DIR}" && pwd)
runs=${COST_RUNS:-5}
secs=${COST_SECONDS:-4}
COST_RUNS=$runs COST_SECONDS=$secs COST_WORK=${COST_WORK:-work} \
	COST_CONFIGS="none cpu+offcpu cpu+offcpu+wakeup" COST_PEER=cpu+offcpu \
	"$(dirname "$0")/offcpu_cost.sh" "$build"
[ "${NS_SKIP:-0}" = 1 ] && exit 0
command -v bpftool >/dev/null || { echo "wakeup_cost.sh: no bpftool: no program times" >&2; exit 0; }

T=$(mktemp -d /tmp/fr-wakeup-cost.XXXXXX)
ppid=
old_stats=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() {
	[ -n "$ppid" ] && kill -INT "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null
	echo "$old_stats" >/proc/sys/kernel/bpf_stats_enabled
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}]}]}' >"$T/cpu+offcpu.json"
echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}, {"event": "wakeup"}, {"event": "runqueue"}]}]}' >"$T/cpu+offcpu+wakeup.json"

# "ID NAME RUN_TIME_NS RUN_CNT" of every program loaded now.
progs() {
	bpftool prog show --json | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    print(p["id"], p.get("name", "-"), p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}
ctxt() { awk '/^ctxt/ { print $2 }' /proc/stat; }

# one CONFIG ROUND: the recorder's programs' "NAME NS RUNS" over the run,
# then "switches N", into $T/ns.CONFIG.ROUND.
one() {
	local before
	before=$(progs | awk '{ print $1 }' | tr '\n' ' ')
	rm -f "$T/ring" "$T/sock"
	"$build/recorder/flightrecd" --config "$T/$1.json" --ring "$T/ring" --ring-size 64MiB \
		--socket "$T/sock" >"$T/rec.log" 2>&1 &
	ppid=$!
	for _ in $(seq 100); do
		"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
		sleep 0.1
	done
	sleep 1
	progs | awk -v b=" $before " 'index(b, " " $1 " ") == 0' >"$T/a"
	x0=$(ctxt)
	taskset -c "${COST_CPUS:-0}" "$build/tests/bench/switches" work "$secs" >/dev/null
	x1=$(ctxt)
	progs >"$T/b"
	kill -INT "$ppid"
	wait "$ppid" || true
	ppid=
	awk 'NR == FNR { t[$1] = $3; n[$1] = $4; name[$1] = $2; next }
		($1 in t) { print name[$1], $3 - t[$1], $4 - n[$1] }' "$T/a" "$T/b" >"$T/ns.$1.$2"
	echo "switches $((x1 - x0))" >>"$T/ns.$1.$2"
}

for r in $(seq "$runs"); do
	for c in cpu+offcpu cpu+offcpu+wakeup; do
		one "$c" "$r"
		echo "programs $c round $r: $(tr '\n' ' ' <"$T/ns.$c.$r")" >&2
	done
done
echo
echo "### eBPF programs' time ($runs rounds of ${secs} s of work on CPU ${COST_CPUS:-0}, medians)"
echo
echo "| recorder | program | ns/run | runs/s | ns per switch of the machine |"
echo "|---|---|---|---|---|"
python3 - "$T" "$runs" "$secs" <<'PY'
import statistics, sys
d, runs, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
med = statistics.median
for c in ("cpu+offcpu", "cpu+offcpu+wakeup"):
    per, tot = {}, []
    for r in range(1, runs + 1):
        rows = [l.split() for l in open("%s/ns.%s.%d" % (d, c, r))]
        sw = float([x for x in rows if x[0] == "switches"][0][1]) or 1
        t = 0
        for name, ns, n in (x for x in rows if x[0] != "switches"):
            ns, n = float(ns), float(n)
            if not n:
                continue
            per.setdefault(name, []).append((ns / n, n / secs, ns / sw))
            t += ns
        tot.append(t / sw)
    for name, v in sorted(per.items()):
        print("| %s | %s | %.0f | %.0f | %.0f |" % (c, name, med(x for x, _, _ in v),
              med(x for _, x, _ in v), med(x for _, _, x in v)))
    print("| %s | all | | | **%.0f** [%.0f-%.0f] |" % (c, med(tot), min(tot), max(tot)))
PY
