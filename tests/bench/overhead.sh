#!/bin/bash
# What a profiler costs the machine it samples: flightrecd against
# perf record -a -g against no profiler, same fixed workload, same run.
#
#   tests/bench/overhead.sh BUILD_DIR
#
# Environment (all optional):
#   OVERHEAD_RUNS    runs per rate and profiler, medians reported (default 5)
#   OVERHEAD_RATES   sampling rates in Hz per CPU (default "99 999 4999")
#   OVERHEAD_WORK    work units per workload thread (default 90000, ~4 s
#                    on a 2 vCPU VM; one unit is a 16-47 deep call chain
#                    whose leaf runs 40,000 multiply-adds)
#   OVERHEAD_SETTLE  seconds a profiler runs once ready (flightrecd: its
#                    socket answers; perf: perf.data started and its CPU
#                    clock still for 50 ms, the synthesis of every process's
#                    mappings over) before the workload starts (default 0.5)
#   OVERHEAD_RETRIES times a run is redone when the rest of the machine was
#                    busy meanwhile (default 2, see below)
#   OVERHEAD_BUDGET  seconds after which runs neither wait for a quiet
#                    machine nor are redone, to bound the total time
#                    (default 420)
#   OVERHEAD_RAW     file to copy the per-run figures to
#   CC               compiler for the two helpers below (default cc)
#
# For each rate, each of RUNS rounds runs the workload three times, once
# under each of: nothing (baseline), a fresh flightrecd
#   flightrecd --ring T/ring --ring-size 64MiB --socket T/sock --hz HZ
# and a fresh
#   perf record --no-buildid --no-buildid-cache -e cpu-clock -F HZ -a -g -o T/perf.data
# (the order rotates from round to round). Both sample every CPU with
# kernel+user callchains. --no-buildid leaves out perf's post-processing at
# exit (reading every DSO's build id), which flightrecd does not do either.
#
# The workload is a C program compiled here (two threads, a fixed amount of
# arithmetic under deep call stacks, frame pointers); it reports its own
# wall-clock time and CPU time (getrusage, both threads). Figures per run:
#   - slowdown: median workload wall (and CPU) time over the same rate's
#     baseline median;
#   - profiler CPU per run: user+sys of the whole profiler process (all
#     threads, io_uring workers included) from just before the workload
#     starts until the profiler has exited after it: getrusage of the child
#     at exit minus its process CPU clock (the utime+stime of
#     /proc/PID/stat, in nanoseconds rather than clock ticks) at the
#     workload's start. Up to the exit, because perf sleeps until its
#     kernel buffers fill up to a wakeup mark and writes the rest of
#     perf.data when stopped, and flightrecd stores its open chunk when
#     stopped. This includes the
#     settle period's samples that were still buffered at the start. Also
#     as % of one CPU: over the workload's wall time;
#   - profiler CPU before the workload, reported apart: from exec to the
#     workload's start (start-up and settle);
#   - samples recorded over the whole life and samples lost (flightrec dump
#     --info; perf report --stats). perf's count includes the idle CPUs'
#     samples of the settle and stop periods; flightrecd drops those.
#
# Other processes on a shared machine disturb the wall-clock figures. Each
# run starts once the machine has been idle for half a second (waiting up
# to 20 s), and checks the machine's busy time (/proc/stat) against the
# workload's and the profiler's CPU: a run where the rest of the machine
# used more than 5% of all CPUs is disturbed, and redone up to
# OVERHEAD_RETRIES times. Medians and slowdowns are over the undisturbed
# runs of each cell (all its runs, marked *, if fewer than 3 are left).
# Other profilers sampling the machine at the same time would go unnoticed.
#
# Prints progress on stderr and markdown tables on stdout. Needs root.
# Figures, not pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: overhead.sh BUILD_DIR}" && pwd)
runs=${OVERHEAD_RUNS:-5}
rates=${OVERHEAD_RATES:-"99 999 4999"}
work=${OVERHEAD_WORK:-90000}
settle=${OVERHEAD_SETTLE:-0.5}
retries=${OVERHEAD_RETRIES:-2}
budget=${OVERHEAD_BUDGET:-420}
tck=$(getconf CLK_TCK)

if [ "$(id -u)" != 0 ]; then
	echo "overhead.sh: needs root (system-wide perf events)" >&2
	exit 77
fi
command -v perf >/dev/null || { echo "overhead.sh: perf not found" >&2; exit 77; }
command -v python3 >/dev/null || { echo "overhead.sh: python3 not found" >&2; exit 77; }
[ -x "$build/recorder/flightrecd" ] || { echo "overhead.sh: no $build/recorder/flightrecd" >&2; exit 1; }

T=$(mktemp -d /tmp/fr-overhead.XXXXXX)
rpid=
ppid=
life=
result=
cleanup() {
	[ -n "$ppid" ] && kill -TERM "$ppid" 2>/dev/null
	[ -n "$rpid" ] && wait "$rpid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The workload: THREADS threads, each doing UNITS units of work; a unit is a
# call chain 16 to 47 deep through three functions (mutual recursion, so the
# stacks vary) whose leaf spins. Prints "WALL_S CPU_S".
cat >"$T/work.c" <<'EOF'
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile uint64_t sink;
static long units;

uint64_t ovh_a(uint64_t x, int d);
uint64_t ovh_b(uint64_t x, int d);
uint64_t ovh_c(uint64_t x, int d);

__attribute__((noinline)) static uint64_t ovh_leaf(uint64_t x)
{
	for (int i = 0; i < 40000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* The addition after each call keeps it from becoming a jump. */
__attribute__((noinline)) uint64_t ovh_a(uint64_t x, int d)
{
	return (d <= 0 ? ovh_leaf(x) : (d % 3 ? ovh_b(x, d - 1) : ovh_c(x, d - 1))) + 1;
}
__attribute__((noinline)) uint64_t ovh_b(uint64_t x, int d)
{
	return (d <= 0 ? ovh_leaf(x) : ovh_a(x ^ 1, d - 1)) + 2;
}
__attribute__((noinline)) uint64_t ovh_c(uint64_t x, int d)
{
	return (d <= 0 ? ovh_leaf(x) : ovh_a(x ^ 2, d - 1)) + 3;
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg;

	for (long i = 0; i < units; i++)
		x = ovh_a(x, 16 + (int)(i % 32));
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];
	struct timespec a, b;
	struct rusage ru;

	units = argc > 1 ? atol(argv[1]) : 1000;
	if (n < 1 || n > 64)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &ru);
	printf("%.6f %.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
EOF

# prun run PIDFILE RESFILE CMD...: run CMD as a child, write its pid to
# PIDFILE, wait for it and write its user+sys seconds (getrusage of the
# child) to RESFILE. prun cpu PID: PID's process CPU clock in seconds.
cat >"$T/prun.c" <<'EOF'
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc == 3 && argv[1][0] == 'c') {
		clockid_t cid;
		struct timespec ts;

		if (clock_getcpuclockid((pid_t)atoi(argv[2]), &cid) ||
		    clock_gettime(cid, &ts))
			return 1;
		printf("%.9f\n", ts.tv_sec + ts.tv_nsec / 1e9);
		return 0;
	}
	if (argc < 5)
		return 2;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[4], argv + 4);
		_exit(127);
	}
	signal(SIGINT, SIG_IGN);
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		return 1;
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "%.6f %d\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	fclose(f);
	return 0;
}
EOF
cc=${CC:-cc}
$cc -O1 -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread \
	-o "$T/work" "$T/work.c"
$cc -O2 -o "$T/prun" "$T/prun.c"

# Start "$@" under prun in the background; sets rpid (prun) and ppid (the
# profiler).
start() {
	rm -f "$T/pid" "$T/rusage"
	"$T/prun" run "$T/pid" "$T/rusage" "$@" >"$T/prof.log" 2>&1 &
	rpid=$!
	for _ in $(seq 100); do [ -s "$T/pid" ] && break; sleep 0.05; done
	ppid=$(cat "$T/pid")
}

# Stop the profiler with SIGINT (both store what they hold and exit); sets
# life to its lifetime CPU seconds.
stop() {
	local status
	kill -INT "$ppid"
	wait "$rpid" || true
	rpid= ppid=
	read -r life status <"$T/rusage"
	# perf record re-raises the SIGINT after writing perf.data out.
	if [ "$status" != 0 ] && [ "$status" != 130 ]; then
		echo "overhead.sh: profiler exited with status $status:" >&2
		cat "$T/prof.log" >&2
		exit 1
	fi
}

# Busy seconds of the whole machine so far (user, nice, system, irq,
# softirq, steal; tick-sampled).
busy() {
	awk -v t="$tck" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / t; exit }' /proc/stat
}

# Run the workload once; sets wall, cpu, c0 and c1 (the profiler's CPU
# clock before and after, 0 without one) and other: CPU the rest of the
# machine used meanwhile (busy time less the workload's and the
# profiler's), which flags runs disturbed by anything else.
measure() {
	local b0 b1
	c0=0 c1=0
	b0=$(busy)
	[ -n "$ppid" ] && c0=$("$T/prun" cpu "$ppid")
	read -r wall cpu <<<"$("$T/work" "$work" 2)"
	[ -n "$ppid" ] && c1=$("$T/prun" cpu "$ppid")
	b1=$(busy)
	other=$(awk -v a="$b0" -v b="$b1" -v w="$cpu" -v p0="$c0" -v p1="$c1" \
		'BEGIN { printf "%.2f", b - a - w - (p1 - p0) }')
}

# Wait (up to 20 s, and only within the time budget) until the rest of
# the machine has been idle for half a second: under 5% of one CPU.
wait_quiet() {
	local b0 b1
	for _ in $(seq 40); do
		[ $(( $(date +%s) - t0 )) -gt "$budget" ] && return
		b0=$(busy)
		sleep 0.5
		b1=$(busy)
		awk -v a="$b0" -v b="$b1" 'BEGIN { exit !(b - a <= 0.025) }' && return
	done
	return 0
}

# One workload run under profiler $1 (none, flightrecd, perf) at $2 Hz.
# Sets result to "WALL CPU PROF_CPU PROF_START_CPU SAMPLES LOST OTHER"
# (PROF_CPU: from the workload's start to the profiler's exit;
# PROF_START_CPU: from exec to the workload's start, settle included). Not
# run in a subshell, so that the EXIT trap knows the profiler's pid.
one() {
	local cfg=$1 hz=$2 c prev samples=0 lost=0
	# Let the previous run's dirty pages go to disk first.
	sync
	wait_quiet
	case $cfg in
	none)
		measure
		;;
	flightrecd)
		rm -f "$T/ring" "$T/sock"
		start "$build/recorder/flightrecd" --ring "$T/ring" --ring-size 64MiB \
			--socket "$T/sock" --hz "$hz"
		for _ in $(seq 100); do
			"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
			sleep 0.1
		done
		sleep "$settle"
		measure
		stop
		read -r samples lost <<<"$("$build/tools/flightrec" dump --ring "$T/ring" --info --json |
			python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["ring"]["samples"], j["samples_lost"])')"
		;;
	perf)
		rm -f "$T/perf.data"
		start perf record -q --no-buildid --no-buildid-cache -e cpu-clock -F "$hz" \
			-a -g -o "$T/perf.data"
		# Ready once perf.data is started and the synthesis of every
		# process's mappings is over (CPU clock still for 50 ms).
		prev=-1
		for _ in $(seq 200); do
			c=$("$T/prun" cpu "$ppid")
			[ -s "$T/perf.data" ] && awk -v a="$prev" -v b="$c" 'BEGIN { exit !(b - a < 0.002) }' && break
			prev=$c
			sleep 0.05
		done
		sleep "$settle"
		measure
		stop
		# perf script (6.1) can crash partway through a busy system-wide
		# file; the stats of perf report count every record.
		read -r samples lost <<<"$(perf report -i "$T/perf.data" --stats 2>/dev/null | awk '
			/ SAMPLE events:/ && !s { s = $3 }
			/ LOST events:/ { l += $3 }
			/ LOST_SAMPLES events:/ { l += $3 }
			END { print s + 0, l + 0 }')"
		rm -f "$T/perf.data"
		;;
	esac
	if [ "$cfg" = none ]; then
		result="$wall $cpu 0 0 0 0 $other"
	else
		result="$wall $cpu $(awk -v a="$c0" -v l="$life" \
			'BEGIN { printf "%.6f %.6f", l - a, a }') $samples $lost $other"
	fi
}

rate0=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
t0=$(date +%s)
redone=0
noisy=0
echo "overhead.sh: $runs runs at $rates Hz, workload $work units x 2 threads, settle ${settle}s" >&2
: >"$T/raw"
cfgs=(none flightrecd perf)
for hz in $rates; do
	for r in $(seq "$runs"); do
		for k in 0 1 2; do
			cfg=${cfgs[$(( (r + k) % 3 ))]}
			for attempt in $(seq $((retries + 1))); do
				one "$cfg" "$hz"
				echo "  $hz Hz run $r $cfg: wall cpu prof_cpu prof_start samples lost other = $result" >&2
				quiet=$(awk -v o="$other" -v w="$wall" -v n="$(nproc)" \
					'BEGIN { print (o <= 0.05 * w * n) }')
				[ "$quiet" = 1 ] && break
				if [ "$attempt" -gt "$retries" ] || [ $(( $(date +%s) - t0 )) -gt "$budget" ]; then
					noisy=$((noisy + 1))
					break
				fi
				echo "  (the rest of the machine used $other CPU s: again)" >&2
				redone=$((redone + 1))
			done
			echo "$hz $cfg $r $result" >>"$T/raw"
		done
	done
done
rate1=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
echo "overhead.sh: $(( $(date +%s) - t0 )) s, $redone runs redone, $noisy disturbed runs kept" >&2
[ -n "${OVERHEAD_RAW:-}" ] && cp "$T/raw" "$OVERHEAD_RAW"

echo "Machine: $(nproc) CPUs, kernel $(uname -r), $(perf --version);" \
	"workload $work units x 2 threads; $runs runs per cell, medians;" \
	"$redone runs redone and $noisy disturbed runs kept (busy machine)."
if [ "$rate0" != "$rate1" ]; then
	echo "Note: the kernel lowered perf_event_max_sample_rate from $rate0 to $rate1 during" \
		"the run (sampling interrupts took too long)."
fi
echo
python3 - "$T/raw" "$(nproc)" <<'EOF'
import sys
from statistics import median

rows = {}
for line in open(sys.argv[1]):
    hz, cfg, r, *v = line.split()
    # wall, cpu, profiler cpu, profiler start-up, samples, lost, other
    rows.setdefault((int(hz), cfg), []).append(tuple(map(float, v)))
ncpu = int(sys.argv[2])

def kept(runs):
    quiet = [x for x in runs if x[6] <= 0.05 * x[0] * ncpu]
    return (quiet, "") if len(quiet) >= 3 else (runs, "*")

def pct(x):
    return f"{x:+.1f}%"

print("| rate | profiler | runs | workload wall | wall slowdown | workload CPU | CPU slowdown "
      "| profiler CPU per run | % of one CPU | profiler start-up+settle CPU "
      "| samples | lost |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
ratios = []
for hz in sorted({k[0] for k in rows}):
    fig = {}
    for cfg in ("none", "flightrecd", "perf"):
        runs, mark = kept(rows[(hz, cfg)])
        n = f"{len(runs)}{mark}"
        wall = median(x[0] for x in runs)
        cpu = median(x[1] for x in runs)
        if cfg == "none":
            bw, bc = wall, cpu
            print(f"| {hz} Hz | none | {n} | {wall:.2f} s | – | {cpu:.2f} s | – | – | – | – | – | – |")
            continue
        sw = (wall / bw - 1) * 100
        sc = (cpu / bc - 1) * 100
        pc = median(x[2] for x in runs)
        pp = median(x[2] / x[0] for x in runs) * 100
        ps = median(x[3] for x in runs)
        smp = median(x[4] for x in runs)
        lost = median(x[5] for x in runs)
        fig[cfg] = (sw, sc, pc)
        print(f"| {hz} Hz | {cfg} | {n} | {wall:.2f} s | {pct(sw)} | {cpu:.2f} s | {pct(sc)} "
              f"| {pc:.3f} s | {pp:.2f}% | {ps:.3f} s | {smp:,.0f} | {lost:,.0f} |")
    ratios.append((hz, fig))

def ratio(a, b):
    # Slowdowns within the run-to-run noise (~1%) make a meaningless ratio.
    return f"{a / b:.2f}" if b >= 1 and a >= 0 else "n/a"

print()
print("| rate | wall slowdown, flightrecd / perf | CPU slowdown, flightrecd / perf "
      "| profiler CPU, flightrecd / perf |")
print("| --- | --- | --- | --- |")
for hz, fig in ratios:
    f, p = fig["flightrecd"], fig["perf"]
    cr = f"{f[2] / p[2]:.2f}" if p[2] > 0 else "n/a"
    print(f"| {hz} Hz | {ratio(f[0], p[0])} | {ratio(f[1], p[1])} | {cr} |")
EOF
