#!/bin/bash
# What unwinding user stacks costs on a machine whose CPUs are all busy
# with code built without frame pointers: flightrecd with "unwind": "fp"
# and with "unwind": "dwarf", and perf record --call-graph dwarf -a, at the
# same rates, against no profiler, in one run.
#
#   tests/bench/unwind_overhead.sh BUILD_DIR
#
# Environment (all optional):
#   UNWIND_RUNS     rounds, medians reported (default 3)
#   UNWIND_SECONDS  seconds the load runs each time (default 10)
#   UNWIND_RATES    sampling rates in Hz per CPU (default "99 999")
#   UNWIND_RAW      file to copy the per-run figures to
#
# The load: one tests/integration/nofp_cxx per CPU (-O2, no frame
# pointers, std::sort, exceptions through libgcc's unwinder); its
# throughput is the work units (rounds of its three phases) both copies
# finish per second. Each round runs the load once under each of: nothing,
# flightrecd fp, flightrecd dwarf (per rate), perf (per rate), in an order
# that rotates from round to round.
#
# Per run:
#   - flightrecd: a fresh daemon and ring, config
#       {"event": "cpu", "hz": HZ, "unwind": MODE, "stack_copy": "8KiB"}
#     started, given the load for a second (its unwind tables are built
#     the first time a sample needs them: the tables of the load's
#     binaries are then built, as in a recorder that has been running for
#     a while; tests/bench/bench_unwind times the builds), then left until
#     its CPU time is still, so start-up is not counted. Tables of
#     whatever else the machine starts meanwhile are built in the interval;
#   - perf: perf record --no-buildid --no-buildid-cache -k CLOCK_MONOTONIC
#     -e cpu-clock -F HZ --call-graph dwarf,8192 -a, started, left until
#     its CPU time is still (the synthesis of every process's mappings is
#     over);
#   - the profiler's own CPU (utime + stime of all its threads, from its
#     process CPU clock: /proc/PID/stat counts 10 ms ticks) from the load's
#     start to 1.5 s after its end (flightrecd seals a chunk every second,
#     so every sample of the load is stored by then), as % of one CPU and
#     per sample (µs); and its main thread's alone (schedstat): flightrecd's
#     ingest thread, which unwinds each sample (the rest is the writer and
#     the table builder), and all of perf record;
#   - samples over the same interval: flightrec status (samples, lost);
#     for perf, the samples of perf.data timed within it (perf record -k
#     CLOCK_MONOTONIC; these include the idle CPUs' in the 1.5 s tail,
#     which flightrecd drops) and its losses; bytes per
#     sample: perf.data's size (the synthesis of every process at start
#     included) or the ring's growth for flightrecd.
#
# Prints progress on stderr and markdown tables on stdout. Needs root.
# Figures, not pass/fail: see docs/performance.md ("Unwinding cost").
set -eu
build=$(cd "${1:?usage: unwind_overhead.sh BUILD_DIR}" && pwd)
runs=${UNWIND_RUNS:-3}
secs=${UNWIND_SECONDS:-10}
rates=${UNWIND_RATES:-"99 999"}
tck=$(getconf CLK_TCK)
ncpu=$(nproc)
load=$build/tests/integration/nofp_cxx
FR=$build/tools/flightrec

[ "$(id -u)" = 0 ] || { echo "unwind_overhead.sh: needs root (system-wide perf events)" >&2; exit 77; }
command -v perf >/dev/null || { echo "unwind_overhead.sh: perf not found" >&2; exit 77; }
command -v python3 >/dev/null || { echo "unwind_overhead.sh: python3 not found" >&2; exit 77; }
[ -x "$load" ] || { echo "unwind_overhead.sh: no $load (no C++ compiler?)" >&2; exit 77; }

T=$(mktemp -d /tmp/fr-unwind-bench.XXXXXX)
ppid=
cleanup() {
	[ -n "$ppid" ] && kill -INT "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Process $1's CPU seconds, all its threads (those gone too): utime +
# stime as /proc/PID/stat counts them, read from the process CPU clock
# (clock_getcpuclockid) for nanoseconds where /proc counts 10 ms ticks.
pcpu() { python3 -c 'import sys, time; print("%.6f" % time.clock_gettime(((~int(sys.argv[1])) << 3) | 2))' "$1"; }
# The CPU seconds of process $1's main thread: flightrecd's ingest thread
# (the one that unwinds), all of perf record.
tcpu() { awk '{ printf "%.6f\n", $1 / 1e9 }' "/proc/$1/task/$1/schedstat"; }
mono() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }
# Busy seconds of the whole machine so far (user, nice, system, irq,
# softirq, steal).
busy() { awk -v t="$tck" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / t; exit }' /proc/stat; }

# Waits until process $1 has used less than 1% of a CPU over half a
# second (at most 30 s): the profiler's start-up is over.
wait_still() {
	local a b
	a=$(pcpu "$1")
	for _ in $(seq 60); do
		sleep 0.5
		b=$(pcpu "$1")
		awk -v a="$a" -v b="$b" 'BEGIN { exit !(b - a < 0.005) }' && return 0
		a=$b
	done
}

# Waits (up to 6 s) until the rest of the machine has used less than 5%
# of one CPU over half a second: other people's builds on a shared machine.
# The CPU the rest used during each run is reported beside its figures.
wait_quiet() {
	local a b
	for _ in $(seq 12); do
		a=$(busy)
		sleep 0.5
		b=$(busy)
		awk -v a="$a" -v b="$b" 'BEGIN { exit !(b - a <= 0.025) }' && return 0
	done
	return 0
}

# Runs the load, one copy per CPU, for $secs seconds; sets units and
# lcpu (both copies' work units and CPU seconds) and b0, b1 (busy()
# before and after).
run_load() {
	local pids=() i
	rm -f "$T"/load.*
	b0=$(busy)
	for i in $(seq "$ncpu"); do
		"$load" "$secs" 0 >"$T/load.$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	b1=$(busy)
	read -r units lcpu < <(cat "$T"/load.* | awk '{ for (i = 1; i <= NF; i++) {
		split($i, kv, "="); if (kv[1] == "units") u += kv[2]; if (kv[1] == "cpu") c += kv[2] } }
		END { printf "%d %.6f\n", u, c }')
}

# CPU seconds the rest of the machine used during the load: busy time
# less the load's and the profiler's ($1 seconds over the load).
other() { awk -v a="$b0" -v b="$b1" -v l="$lcpu" -v p="$1" 'BEGIN { printf "%.2f", b - a - l - p }'; }

fr_stat() { # the daemon's samples, samples lost and ring bytes used
	"$FR" status --socket "$T/sock" --json |
		python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["samples"], j["samples_lost"], j["ring"]["bytes_used"])'
}

# One run of profiler $1 (none, fp, dwarf, perf) at $2 Hz; sets result:
# "UNITS LOAD_CPU PROF_CPU SAMPLES LOST BYTES OTHER MAIN_CPU" (PROF_CPU
# over the load and its 1.5 s tail, MAIN_CPU its main thread's share;
# BYTES: perf.data's size, or the ring's growth; OTHER: CPU seconds the
# rest of the machine used during the load).
one() {
	local cfg=$1 hz=$2 c0 c1 s0 l0 r0 s1 l1 r1 m0 m1 cl t0 t1
	sync
	case $cfg in
	none)
		wait_quiet
		run_load
		result="$units $lcpu 0 0 0 0 $(other 0) 0"
		return
		;;
	fp | dwarf)
		rm -f "$T/ring" "$T/sock"
		local extra=", \"unwind\": \"$cfg\""
		[ "$cfg" = dwarf ] && extra="$extra, \"stack_copy\": \"8KiB\""
		[ -z "$modes_known" ] && extra=
		echo "{\"sessions\": [{\"name\": \"bench\", \"events\": [{\"event\": \"cpu\", \"hz\": $hz$extra}]}]}" \
			>"$T/config.json"
		"$build/recorder/flightrecd" --ring "$T/ring" --ring-size 256MiB --socket "$T/sock" \
			--config "$T/config.json" >"$T/prof.log" 2>&1 &
		ppid=$!
		for _ in $(seq 100); do "$FR" status --socket "$T/sock" >/dev/null 2>&1 && break; sleep 0.1; done
		# The load once, briefly: the recorder builds the unwind tables
		# of its binaries then, as a recorder that has been running for
		# a while has them (bench_unwind times the builds).
		"$load" 1 0 >/dev/null
		wait_still "$ppid"
		wait_quiet
		read -r s0 l0 r0 <<<"$(fr_stat)"
		c0=$(pcpu "$ppid")
		t0=$(tcpu "$ppid")
		run_load
		cl=$(pcpu "$ppid")
		sleep 1.5
		c1=$(pcpu "$ppid")
		t1=$(tcpu "$ppid")
		read -r s1 l1 r1 <<<"$(fr_stat)"
		kill -INT "$ppid"
		wait "$ppid" || { cat "$T/prof.log" >&2; exit 1; }
		ppid=
		result="$units $lcpu $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.6f", b - a }') \
$((s1 - s0)) $((l1 - l0)) $((r1 - r0)) $(other "$(awk -v a="$c0" -v b="$cl" 'BEGIN { print b - a }')") \
$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')"
		;;
	perf)
		rm -f "$T/perf.data"
		perf record -q --no-buildid --no-buildid-cache -k CLOCK_MONOTONIC -e cpu-clock \
			-F "$hz" --call-graph dwarf,8192 -a -o "$T/perf.data" >"$T/prof.log" 2>&1 &
		ppid=$!
		for _ in $(seq 100); do [ -s "$T/perf.data" ] && break; sleep 0.1; done
		wait_still "$ppid"
		wait_quiet
		c0=$(pcpu "$ppid")
		t0=$(tcpu "$ppid")
		m0=$(mono)
		run_load
		cl=$(pcpu "$ppid")
		sleep 1.5
		c1=$(pcpu "$ppid")
		t1=$(tcpu "$ppid")
		m1=$(mono)
		kill -INT "$ppid"
		# perf record finishes its file and exits; never let it run on.
		for _ in $(seq 100); do kill -0 "$ppid" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$ppid" 2>/dev/null || true
		wait "$ppid" || true
		ppid=
		# The samples of the interval, by their CLOCK_MONOTONIC times
		# (-k), and the samples lost.
		read -r s1 l1 <<<"$(python3 "$T/perfcount.py" "$T/perf.data" "$m0" "$m1")"
		result="$units $lcpu $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.6f", b - a }') $s1 $l1 \
$(stat -c %s "$T/perf.data") $(other "$(awk -v a="$c0" -v b="$cl" 'BEGIN { print b - a }')") \
$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')"
		rm -f "$T/perf.data"
		;;
	esac
}

# perfcount.py PERF_DATA A B: the samples of PERF_DATA timed within
# [A, B] and the samples lost, read from its records: perf's own readers
# of 6.1 (perf script, perf report -D) abort in their build-id code on some
# files with execs in them, and perf report --stats ignores --time.
cat >"$T/perfcount.py" <<'EOF'
import struct
import sys

path, a, b = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
with open(path, "rb") as f:
    head = f.read(104)
    magic, _, attr_size = struct.unpack_from("<8sQQ", head)
    if magic != b"PERFILE2":
        sys.exit(path + ": not a perf.data file")
    attrs_off, _, data_off, data_size = struct.unpack_from("<QQQQ", head, 24)
    f.seek(attrs_off)
    sample_type = struct.unpack_from("<Q", f.read(attr_size), 24)[0]
    if not sample_type >> 2 & 1:
        sys.exit(path + ": samples have no time")
    # The fields before TIME: IDENTIFIER (bit 16), IP (bit 0), TID (bit 1).
    at = 8 + 8 * sum(1 for bit in (16, 0, 1) if sample_type >> bit & 1)
    f.seek(data_off)
    buf = f.read(data_size)
n = lost = i = 0
while i + 8 <= len(buf):
    typ, _, size = struct.unpack_from("<IHH", buf, i)
    if size < 8:
        break
    if typ == 9:  # PERF_RECORD_SAMPLE
        n += a <= struct.unpack_from("<Q", buf, i + at)[0] / 1e9 <= b
    elif typ == 2:  # PERF_RECORD_LOST: id, lost
        lost += struct.unpack_from("<Q", buf, i + 16)[0]
    elif typ == 13:  # PERF_RECORD_LOST_SAMPLES: lost
        lost += struct.unpack_from("<Q", buf, i + 8)[0]
    i += size
print(n, lost)
EOF

# A recorder from before CFI unwinding knows no "unwind": frame pointers
# are its only mode, run without the key, and dwarf runs are left out.
modes="fp dwarf"
modes_known=1
echo '{"sessions": [{"name": "b", "events": [{"event": "cpu", "hz": 99, "unwind": "dwarf"}]}]}' >"$T/check.json"
"$build/recorder/flightrecd" --check-config "$T/check.json" >/dev/null 2>&1 || modes=fp modes_known=
cfgs=(none)
for hz in $rates; do
	for m in $modes perf; do cfgs+=("$m:$hz"); done
done
echo "unwind_overhead.sh: $runs rounds of ${cfgs[*]}, load ${secs}s x $ncpu nofp_cxx" >&2
rate0=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
t0=$(date +%s)
: >"$T/raw"
n=${#cfgs[@]}
for r in $(seq "$runs"); do
	for k in $(seq 0 $((n - 1))); do
		c=${cfgs[$(((r + k) % n))]}
		cfg=${c%%:*} hz=${c#*:}
		[ "$cfg" = none ] && hz=0
		one "$cfg" "$hz"
		echo "  round $r $cfg $hz Hz: units load_cpu prof_cpu samples lost bytes other main_cpu = $result" >&2
		echo "$cfg $hz $r $result" >>"$T/raw"
	done
done
rate1=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
echo "unwind_overhead.sh: $(($(date +%s) - t0)) s" >&2
[ -n "${UNWIND_RAW:-}" ] && cp "$T/raw" "$UNWIND_RAW"

echo "Machine: $ncpu CPUs, kernel $(uname -r), $(perf --version); load: $ncpu x nofp_cxx" \
	"for ${secs}s; $runs rounds, medians."
[ "$rate0" != "$rate1" ] && echo "Note: the kernel lowered perf_event_max_sample_rate from $rate0" \
	"to $rate1 during the run (sampling interrupts took too long)."
echo
python3 - "$T/raw" "$secs" "$ncpu" <<'EOF'
import sys
from statistics import median

raw, secs, ncpu = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rows = {}
for line in open(raw):
    cfg, hz, r, *v = line.split()
    # units, load cpu, profiler cpu, samples, lost, bytes, other, main cpu
    rows.setdefault((cfg, int(hz)), []).append([float(x) for x in v])
# The profiler's CPU is counted over the load plus a 1.5 s tail.
span = secs + 1.5
none = rows[("none", 0)]
base_w = median(x[0] for x in none) / secs
base_c = median(x[0] / x[1] for x in none)
names = {"fp": 'flightrecd, "unwind": "fp"', "dwarf": 'flightrecd, "unwind": "dwarf"',
         "perf": "perf record --call-graph dwarf -a"}


def other(v):
    return median(x[6] for x in v) / (secs * ncpu) * 100


print("| rate | profiler | load units/s | slowdown (wall) | load units per CPU-s "
      "| slowdown (CPU) | profiler CPU, % of one CPU | µs per sample | main thread, µs per sample "
      "| samples | lost | bytes per sample | rest of machine |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
print(f"| – | none | {base_w:,.1f} | – | {base_c:,.1f} | – | – | – | – | – | – | – "
      f"| {other(none):.1f}% |")
fig = {}
for hz in sorted({k[1] for k in rows if k[1]}):
    for cfg in ("fp", "dwarf", "perf"):
        if (cfg, hz) not in rows:
            continue
        v = rows[(cfg, hz)]
        w = median(x[0] for x in v) / secs
        c = median(x[0] / x[1] for x in v)
        sw = (1 - w / base_w) * 100
        sc = (1 - c / base_c) * 100
        pct = median(x[2] for x in v) / span * 100
        us = median(x[2] / x[3] * 1e6 for x in v if x[3])
        mus = median(x[7] / x[3] * 1e6 for x in v if x[3])
        smp = median(x[3] for x in v)
        lost = median(x[4] for x in v)
        bps = median(x[5] / x[3] for x in v if x[3])
        fig[(cfg, hz)] = (sw, sc, pct, us, mus)
        print(f"| {hz} Hz | {names[cfg]} | {w:,.1f} | {sw:+.1f}% | {c:,.1f} | {sc:+.1f}% "
              f"| {pct:.2f}% | {us:.1f} | {mus:.1f} | {smp:,.0f} | {lost:,.0f} | {bps:,.0f} "
              f"| {other(v):.1f}% |")
print()
print("| rate | CPU per sample, flightrecd dwarf / fp | CPU per sample, perf / flightrecd dwarf "
      "| main thread per sample, perf / flightrecd dwarf | slowdown (CPU), flightrecd dwarf / perf |")
print("| --- | --- | --- | --- | --- |")


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


for hz in sorted({k[1] for k in fig}):
    fp, dw, pf = fig.get(("fp", hz)), fig.get(("dwarf", hz)), fig.get(("perf", hz))
    a = ratio(dw[3], fp[3]) if fp and dw else "n/a"
    b = ratio(pf[3], dw[3]) if pf and dw else "n/a"
    m = ratio(pf[4], dw[4]) if pf and dw else "n/a"
    # Slowdowns within the run-to-run noise (~1%) make a meaningless ratio.
    c = f"{dw[1] / pf[1]:.2f}" if pf and dw and pf[1] >= 1 else "n/a"
    print(f"| {hz} Hz | {a} | {b} | {m} | {c} |")
EOF
