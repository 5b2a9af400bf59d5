#!/bin/bash
# What a long wait's user stack costs with the off-CPU eBPF mechanism:
# the thread that waited (the task work on its way back to user space
# takes the stack: a frame-pointer walk, or a copy of stack_copy bytes of
# its stack), and the recorder (a 2 KiB record with the frames, or a
# ~9.3 KiB record with the copy, unwound with CFI on the ingest thread).
#
#   tests/bench/offcpu_long_waits.sh BUILD_DIR
#
# Environment (all optional):
#   LW_RUNS     rounds, each recorder once a round, order rotating; medians
#               (default 5)
#   LW_SECONDS  seconds the workload runs (default 5)
#   LW_THREADS  workload threads (default 8: ~5,000 long waits a second)
#   LW_WAIT_US  each wait, in nanosleep (default 1500, over min_wait's 1 ms)
#   LW_DEPTH    calls above the wait (default 8, ~300 bytes each)
#   LW_SETTLE   seconds the recorder runs once ready before it is watched
#               (its start-up: the /proc scan, the first CFI tables;
#               default 3)
#   LW_IDLE     seconds the recorder is watched before the workload and
#               again after it, with the machine's own long waits alone
#               (default 2)
#   LW_CONFIGS  recorders (default "none fp dwarf"; also "dwarf16k",
#               "dwarf32k": the default with "stack_copy" 16KiB, 32KiB;
#               "fp-sysexit", "dwarf-sysexit": fp and dwarf with the user
#               stack taken at the return of the system call instead of
#               by task work (FLIGHTREC_BPF_TASK_WORK=0, the mechanism of
#               kernels without BPF task work); "empty": an empty
#               sched_switch program (FLIGHTREC_BPF_EMPTY=1), no stacks)
#   LW_CPUS     CPUs the workload is pinned to (taskset -c; default 0)
#   LW_ALONE    1: before each run, wait (up to 2 minutes) until no other
#               off-CPU recorder's sched_switch program is loaded, and run
#               again (twice at most) a run during which one was (default
#               0: see "other recorders" below)
#
# The workload (tests/bench/long_waits.c, BUILD_DIR/tests/bench/long_waits)
# runs LW_THREADS threads that sleep LW_WAIT_US at a time and do nothing
# else, so every wait is a long wait and the threads' CPU time is the
# system calls, the wake-ups and what the recorder makes them do. The
# recorders, each started fresh for a run and stopped after it:
#   none   nothing;
#   fp     flightrecd --config {"event": "cpu", "hz": 99},
#          {"event": "offcpu", "unwind": "fp"}: user stacks by the kernel's
#          frame-pointer walk in the task work (bpf_get_task_stack);
#   dwarf  flightrecd on its embedded default (no --config): the same
#          events, offcpu's user stacks copied (8 KiB from sp,
#          bpf_probe_read_user) in the task work and unwound by the
#          recorder with CFI.
# Figures per recorder, median [min-max] over the rounds. The waiting
# threads:
#   - waits/s: the workload's waits per wall second;
#   - us CPU/wait: the workload's CPU time (getrusage, all threads) per
#     wait; "+ vs none": its excess over the same round's no-recorder run.
#   - other recorders: sched_switch programs of other off-CPU recorders
#     loaded during the runs (bpftool; the most seen, fewest-most over the
#     rounds): on a shared machine other flightrecd instances come and go,
#     and each takes its own stack of every long wait, "none" included.
# The recorder:
#   - CPU: its CPU time (the sum of its threads' runtime,
#     /proc/PID/task/*/schedstat, in ns) over the workload's run and the
#     1.2 s after it (the ring buffer is drained at least once a second),
#     % of one CPU;
#   - us/lw: that CPU time over the long waits the recorder counted in
#     the run (status "long_waits", the whole machine's, workload and
#     others);
#   - ingest us/lw: the same of its main thread alone, the ingest thread
#     (drains the ring buffer, unwinds the copies), without the threads
#     whose work depends on what else the machine starts (CFI table
#     builds, the symbol cache, build ids); "marginal": the same after
#     taking off what that thread used and the recorder counted over
#     LW_IDLE seconds before the workload and LW_IDLE seconds after it (its
#     background: cpu sampling, seals, the rest of the machine), scaled to
#     the run's length: its cost of one more long wait;
#   - lw/s: long waits the recorder counted over the run, per second of
#     the workload; drops: ring buffer records dropped in the run (status
#     "ringbuf_drops", all rounds); copies cut short: stack copies cut
#     where the stack's mapping ends (status "stack_copies_short"), of the
#     copies made; unwound whole: offcpu stacks the CFI unwinding took to
#     their end (status "unwinding").
# Then the paired differences dwarf - fp of the same round (dwarf-sysexit -
# fp-sysexit), median [min-max]: the copy's cost to the thread, and the
# copy's and unwind's cost to the recorder, per long wait.
#
# Prints markdown on stdout, progress on stderr. Needs root. Figures, not
# pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: offcpu_long_waits.sh BUILD_DIR}" && pwd)
runs=${LW_RUNS:-5}
secs=${LW_SECONDS:-5}
nthreads=${LW_THREADS:-8}
wait_us=${LW_WAIT_US:-1500}
depth=${LW_DEPTH:-8}
settle=${LW_SETTLE:-3}
idle=${LW_IDLE:-2}
configs=${LW_CONFIGS:-"none fp dwarf"}
cpus=${LW_CPUS:-0}
alone=${LW_ALONE:-0}
wl=$build/tests/bench/long_waits
fr=$build/tools/flightrec

if [ "$(id -u)" != 0 ]; then
	echo "offcpu_long_waits.sh: needs root (eBPF)" >&2
	exit 77
fi
[ -x "$wl" ] || { echo "offcpu_long_waits.sh: no $wl (ninja -C $build)" >&2; exit 1; }

T=$(mktemp -d /tmp/fr-offcpu-lw.XXXXXX)
ppid=
cleanup() {
	[ -n "$ppid" ] && kill -INT "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu", "unwind": "fp"}]}]}' >"$T/fp.json"
for k in 16 32; do
	echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu", "stack_copy": "'$k'KiB"}]}]}' >"$T/dwarf${k}k.json"
done

# Nanoseconds of CPU of process $1's threads now.
# Nanoseconds of CPU of process $1's threads now, and of its main thread
# alone (the recorder's ingest thread): "TOTAL MAIN".
rcpu() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
	echo " $(cut -d' ' -f1 /proc/"$1"/task/"$1"/schedstat 2>/dev/null || echo 0)"
}
now_ns() { date +%s%N; }
# sched_switch programs of off-CPU recorders loaded now (the machine's
# other flightrecd instances, and ours): each takes its own stack of every
# long wait, in every row of the table. -1 without bpftool.
switch_progs() {
	if command -v bpftool >/dev/null; then
		bpftool prog show 2>/dev/null | grep -c 'name on_switch' || true
	else
		echo -1
	fi
}

# The offcpu counters of the recorder's status: "LONG DROPS COPIES SHORT
# UNWOUND WHOLE".
counters() {
	"$fr" status --socket "$T/sock" --json 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = {"events": []}
for e in d["events"]:
    if e["event"] == "offcpu":
        o, u = e.get("offcpu", {}), e.get("unwinding", {})
        print(o.get("long_waits", 0), o.get("ringbuf_drops", 0), o.get("stack_copies", 0),
              o.get("stack_copies_short", 0), u.get("stacks", 0), u.get("ends", {}).get("done", 0))
        break
else:
    print("0 0 0 0 0 0")'
}

# Waits up to 2 minutes for no sched_switch program of another recorder.
wait_alone() {
	for _ in $(seq 120); do
		[ "$(switch_progs)" -le 0 ] && return
		sleep 1
	done
	echo "offcpu_long_waits.sh: another recorder stays loaded" >&2
}

start_recorder() {
	local cfg=() tw=1 empty=0
	case $1 in
	fp | fp-sysexit) cfg=(--config "$T/fp.json") ;;
	dwarf | dwarf-sysexit) ;;
	dwarf16k | dwarf32k) cfg=(--config "$T/$1.json") ;;
	empty) empty=1 ;;
	*) echo "offcpu_long_waits.sh: unknown recorder $1" >&2; exit 2 ;;
	esac
	case $1 in *-sysexit) tw=0 ;; esac
	rm -f "$T/ring" "$T/sock"
	FLIGHTREC_BPF_TASK_WORK=$tw FLIGHTREC_BPF_EMPTY=$empty \
		"$build/recorder/flightrecd" "${cfg[@]}" --ring "$T/ring" --ring-size 64MiB \
		--socket "$T/sock" >"$T/rec.log" 2>&1 &
	ppid=$!
	for _ in $(seq 100); do
		"$fr" status --socket "$T/sock" >/dev/null 2>&1 && break
		sleep 0.1
	done
	sleep "$settle"
}

# Stops the recorder; 1 (and its log's end on stderr) when it had already
# exited.
stop_recorder() {
	local alive=0
	kill -INT "$ppid" 2>/dev/null || alive=1
	wait "$ppid" || true
	ppid=
	if [ "$alive" = 1 ]; then
		echo "offcpu_long_waits.sh: the recorder exited during the run; its log ends:" >&2
		tail -n 20 "$T/rec.log" >&2
	fi
	return "$alive"
}

# one CONFIG: prints "WAITS LONG WALL WCPU UT ST RUN_US RCPU_NS LW DROPS
# COPIES SHORT UNWOUND WHOLE IDLE_LW IDLE_US IDLE_RCPU_NS MAIN_NS
# IDLE_MAIN_NS": the workload's line, then the recorder's over the run,
# then over the two idle windows together, then its main thread's CPU over
# the run and the idle windows (recorder figures 0 for none), then the
# other recorders' sched_switch programs loaded (the most seen).
one() {
	local out t0 t1 t2 t3 c0 c1 c2 c3 g0 g1 g2 g3 a b c d o1 o2
	if [ "$1" = none ]; then
		o1=$(switch_progs)
		t1=$(now_ns)
		out=$(taskset -c "$cpus" "$wl" "$nthreads" "$secs" "$wait_us" "$depth") ||
			{ echo "offcpu_long_waits.sh: the workload failed" >&2; echo dead; return; }
		t2=$(now_ns)
		o2=$(switch_progs)
		echo "$out $(((t2 - t1) / 1000)) 0 0 0 0 0 0 0 0 0 0 0 0 $((o1 > o2 ? o1 : o2))"
		return
	fi
	start_recorder "$1"
	t0=$(now_ns)
	read -r c0 g0 <<<"$(rcpu "$ppid")"
	a=$(counters)
	sleep "$idle"
	t1=$(now_ns)
	read -r c1 g1 <<<"$(rcpu "$ppid")"
	b=$(counters)
	o1=$(switch_progs)
	if ! out=$(taskset -c "$cpus" "$wl" "$nthreads" "$secs" "$wait_us" "$depth"); then
		# (A shared machine out of processes or threads, say.)
		echo "offcpu_long_waits.sh: the workload failed" >&2
		stop_recorder || true
		echo dead
		return
	fi
	# The ring buffer is drained at least once a second: the run's last
	# records are unwound within it.
	sleep 1.2
	t2=$(now_ns)
	read -r c2 g2 <<<"$(rcpu "$ppid")"
	c=$(counters)
	o2=$(switch_progs)
	sleep "$idle"
	t3=$(now_ns)
	read -r c3 g3 <<<"$(rcpu "$ppid")"
	d=$(counters)
	stop_recorder || { echo dead; return; }
	# Counters: a before the first idle window, b before the run, c after
	# it, d after the second idle window.
	echo "$out $(((t2 - t1) / 1000)) $((c2 - c1)) $(echo "$a $b $c $d" | awk '{
		printf "%d %d %d %d %d %d %d", $13 - $7, $14 - $8, $15 - $9, $16 - $10, $17 - $11,
			$18 - $12, $7 - $1 + $19 - $13 }') $(((t1 - t0 + t3 - t2) / 1000)) $((c1 - c0 + c3 - c2))"\
" $((g2 - g1)) $((g1 - g0 + g3 - g2)) $(((o1 > o2 ? o1 : o2) - 1))"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
set -- $configs
for r in $(seq "$runs"); do
	for i in $(seq 0 $(($# - 1))); do
		k=$(((i + r) % $# + 1))
		cfg=${!k}
		for try in 1 2 3; do
			[ "$alone" = 1 ] && wait_alone
			res=$(one "$cfg")
			# The last field: other recorders seen during the run.
			[ "$alone" = 1 ] && [ "$res" != dead ] && [ "${res##* }" -gt 0 ] &&
				[ "$try" -lt 3 ] && { echo "$cfg round $r: another recorder loaded, again" >&2; continue; }
			break
		done
		echo "$cfg round $r: $res" >&2
		# A run whose recorder died, or whose workload failed, is left out.
		[ "$res" = dead ] || echo "$cfg $r $res" >>"$T/res"
	done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average after: $load" >&2

echo
echo "### long waits: $nthreads threads sleeping ${wait_us} us at a time, depth $depth ($runs rounds of ${secs} s on CPU $cpus, medians; load average $load at the end)"
echo
python3 - "$T/res" $configs <<'PY'
import statistics, sys
med = statistics.median
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    c, r = f[0], f[1]
    v = [float(x) for x in f[2:]]
    d = dict(zip("waits long wall wcpu ut st run_us rcpu lw drops copies short unw whole ilw idle_us icpu main imain others".split(), v))
    rows.setdefault(c, {})[r] = d
def per_wait(d):
    return 1e6 * d["wcpu"] / d["waits"]
def rec_per_lw(d):
    return d["rcpu"] / 1e3 / d["lw"] if d["lw"] else float("nan")
def main_per_lw(d):
    return d["main"] / 1e3 / d["lw"] if d["lw"] else float("nan")
def marginal(d, cpu="rcpu", icpu="icpu"):
    if not d["idle_us"]:
        return float("nan")
    scale = d["run_us"] / d["idle_us"]
    lw = d["lw"] - d["ilw"] * scale
    return (d[cpu] - d[icpu] * scale) / 1e3 / lw if lw > 0 else float("nan")
def main_marginal(d):
    return marginal(d, "main", "imain")
def spread(v):
    v = sorted(x for x in v if x == x)
    return "%.2f [%.2f-%.2f]" % (med(v), v[0], v[-1]) if v else "-"
none = rows.get("none", {})
cfgs = [c for c in sys.argv[2:] if c in rows]
print("The waiting threads:")
print()
print("| recorder | waits/s | us CPU/wait | + vs none, us/wait | other recorders |")
print("|---|---|---|---|---|")
for c in cfgs:
    ds = list(rows[c].values())
    vs = [per_wait(d) - per_wait(none[r]) for r, d in rows[c].items() if r in none]
    oth = sorted(int(d["others"]) for d in ds)
    print("| %s | %.0f | %s | %s | %s |" % (c, med(d["waits"] / d["wall"] for d in ds),
                                          spread(per_wait(d) for d in ds),
                                          spread(vs) if c != "none" else "-",
                                          "%d-%d" % (oth[0], oth[-1]) if oth[0] != oth[-1]
                                          else "%d" % oth[0]))
print()
print("The recorder (us per long wait it counted; ingest: its main thread):")
print()
print("| recorder | CPU | us/lw | ingest us/lw | ingest marginal us/lw | lw/s | drops | copies cut short | unwound whole |")
print("|---|---|---|---|---|---|---|---|---|")
for c in cfgs:
    if c == "none":
        continue
    ds = list(rows[c].values())
    print("| %s | %.1f%% | %s | %s | %s | %.0f | %d | %s | %s |" % (
        c, med(100 * d["rcpu"] / 1e3 / d["run_us"] for d in ds), spread(rec_per_lw(d) for d in ds),
        spread(main_per_lw(d) for d in ds),
        spread(main_marginal(d) for d in ds), med(d["lw"] / d["wall"] for d in ds),
        sum(d["drops"] for d in ds),
        "%.0f%% of %.0f" % (100 * sum(d["short"] for d in ds) / max(1, sum(d["copies"] for d in ds)),
                            med(d["copies"] for d in ds)) if any(d["copies"] for d in ds) else "-",
        "%.0f%%" % (100 * sum(d["whole"] for d in ds) / max(1, sum(d["unw"] for d in ds)))
        if any(d["unw"] for d in ds) else "-"))
print()
for c in cfgs:
    # Each copy against the frame-pointer walk of the same mechanism.
    peer = "fp-sysexit" if c.endswith("-sysexit") else "fp"
    if not c.startswith("dwarf") or peer not in rows:
        continue
    rs, fp = rows[c], rows[peer]
    both = [r for r in rs if r in fp]
    print("%s - %s, same round: waiting threads %s us/wait; recorder %s us/long wait, "
          "ingest thread %s (marginal %s)" % (
        c, peer, spread(per_wait(rs[r]) - per_wait(fp[r]) for r in both),
        spread(rec_per_lw(rs[r]) - rec_per_lw(fp[r]) for r in both),
        spread(main_per_lw(rs[r]) - main_per_lw(fp[r]) for r in both),
        spread(main_marginal(rs[r]) - main_marginal(fp[r]) for r in both)))
PY
