#!/bin/bash
# What 10,000 blocked threads cost the off-CPU recorder (eBPF mechanism):
# at each seal (once a second) the task iterator lists every thread
# switched out for at least min_wait (an open-wait record each), and the
# walker reads each blocked thread's user stack once per wait (cached by
# thread and switch-out time): with "unwind": "fp" it follows the frame
# pointers itself; by default it copies 8 KiB from sp (process_vm_readv)
# and the ingest thread unwinds the copy with CFI.
#
#   tests/bench/offcpu_blocked.sh BUILD_DIR
#
# Environment (all optional):
#   BL_THREADS    blocked threads (default 10000)
#   BL_STACK_KIB  their stack size (default 64)
#   BL_DEPTH      calls above the blocking read (default 8)
#   BL_RUNS       rounds, each recorder once a round, order rotating
#                 (default 2)
#   BL_CONFIGS    recorders (default "fp dwarf")
#   BL_BASE       seconds the recorder is watched before the threads start
#                 (default 3)
#   BL_FIRST      seconds from the threads' start during which the walks
#                 are followed by status alone (default 5)
#   BL_STEADY     seconds of steady state measured after that (default 10)
#   BL_QUERIES    timed `flightrec threads --pid P --json` answers
#                 (default 3)
#
# The threads: tests/bench/blocked.c (BUILD_DIR/tests/bench/blocked), each
# blocked in read() on a pipe nobody writes, under DEPTH frames; built with
# frame pointers, so both recorders can walk them. vm.max_map_count and
# kernel.pid_max are raised for the run if too small for BL_THREADS (and
# put back). The recorders, each started fresh for a run and stopped after:
#   fp     flightrecd --config {"event": "cpu", "hz": 99},
#          {"event": "offcpu", "unwind": "fp"};
#   dwarf  flightrecd on its embedded default (the same events, offcpu's
#          stacks copied and unwound with CFI).
# Figures per run (recorder CPU is the sum of its threads' runtime from
# /proc/PID/task/*/schedstat, in ns; "walker" is the fr-stackwalk thread's
# share):
#   - base: the recorder's CPU per second before the threads start;
#   - start: how long the helper took to start its threads;
#   - asked: seconds from the threads started until status "stack_walks"
#     (walks asked for) counted all of them; unwound (dwarf): until the
#     offcpu "unwinding" stacks counted as many more (the copies unwound on
#     the ingest thread); whole by: the first seal (status
#     ingest.last_seal_ns) after that, whose open-wait records carry the
#     whole stacks;
#   - first CPU: the recorder's CPU over the BL_FIRST seconds from the
#     threads' start (the first listings, the walks, the unwinds), in ms;
#   - threads whole: threads of the helper whose stack in `flightrec threads
#     --pid P --json` (asked once after BL_FIRST) holds blocked_descend (and
#     blocked_leaf, the caller of libc's read(), which a frame-pointer walk
#     from inside read() skips);
#   - steady CPU: the recorder's CPU over BL_STEADY seconds after that, %
#     of one CPU (walker's in brackets); RSS: its VmRSS before the threads,
#     after the BL_FIRST seconds (the walks), after the steady state (the
#     threads query before it keeps the symbols it parsed), and VmHWM
#     (peak);
#   - threads query: wall time of `flightrec threads --pid P --json`
#     (recorder and CLI), median of BL_QUERIES, after the steady state;
#   - dropped: status "stack_walks_dropped"; cut short: walker copies cut
#     where the stack's mapping ends ("stack_walk_copies_short": a 64 KiB
#     thread stack has less than 8 KiB above sp).
#
# Prints markdown on stdout, progress on stderr. Needs root. Figures, not
# pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: offcpu_blocked.sh BUILD_DIR}" && pwd)
n=${BL_THREADS:-10000}
stack_kib=${BL_STACK_KIB:-64}
depth=${BL_DEPTH:-8}
runs=${BL_RUNS:-2}
configs=${BL_CONFIGS:-"fp dwarf"}
base=${BL_BASE:-3}
first=${BL_FIRST:-5}
steady=${BL_STEADY:-10}
queries=${BL_QUERIES:-3}
helper=$build/tests/bench/blocked
fr=$build/tools/flightrec

if [ "$(id -u)" != 0 ]; then
	echo "offcpu_blocked.sh: needs root (eBPF)" >&2
	exit 77
fi
[ -x "$helper" ] || { echo "offcpu_blocked.sh: no $helper (ninja -C $build)" >&2; exit 1; }

T=$(mktemp -d /tmp/fr-offcpu-blocked.XXXXXX)
ppid= bpid= old_maps= old_pids=
cleanup() {
	[ -n "$bpid" ] && kill -9 "$bpid" 2>/dev/null && wait "$bpid" 2>/dev/null
	[ -n "$ppid" ] && kill -INT "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null
	[ -n "$old_maps" ] && echo "$old_maps" >/proc/sys/vm/max_map_count
	[ -n "$old_pids" ] && echo "$old_pids" >/proc/sys/kernel/pid_max
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two mappings a thread (stack and guard page), one pid each, and room for
# the rest of the machine.
if [ "$(cat /proc/sys/vm/max_map_count)" -lt $((2 * n + 4096)) ]; then
	old_maps=$(cat /proc/sys/vm/max_map_count)
	echo $((2 * n + 4096)) >/proc/sys/vm/max_map_count
	echo "vm.max_map_count raised from $old_maps for the run" >&2
fi
if [ "$(cat /proc/sys/kernel/pid_max)" -lt $((n + 16384)) ]; then
	old_pids=$(cat /proc/sys/kernel/pid_max)
	echo $((n + 16384)) >/proc/sys/kernel/pid_max
	echo "kernel.pid_max raised from $old_pids for the run" >&2
fi

echo '{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu", "unwind": "fp"}]}]}' >"$T/fp.json"

now_ns() { date +%s%N; }
# "TOTAL_NS WALKER_NS" of the recorder's threads now.
rcpu() {
	local t tot=0 wk=0 ns
	for t in /proc/"$ppid"/task/*; do
		ns=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
		tot=$((tot + ns))
		[ "$(cat "$t/comm" 2>/dev/null)" = fr-stackwalk ] && wk=$((wk + ns))
	done
	echo "$tot $wk"
}
rss_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$ppid/status" 2>/dev/null || echo 0; }
# "STACK_WALKS DROPPED CUT_SHORT UNWOUND LAST_SEAL_NS" (last seal in Unix
# ns, as date +%s%N).
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
        print(o.get("stack_walks", 0), o.get("stack_walks_dropped", 0),
              o.get("stack_walk_copies_short", 0), u.get("stacks", 0),
              d["ingest"]["last_seal_ns"])
        break
else:
    print("0 0 0 0 0")'
}

start_recorder() {
	local cfg=()
	[ "$1" = fp ] && cfg=(--config "$T/fp.json")
	rm -rf "$T/ring" "$T/sock"
	"$build/recorder/flightrecd" "${cfg[@]}" --ring "$T/ring" --ring-size 64MiB \
		--socket "$T/sock" >"$T/rec.log" 2>&1 &
	ppid=$!
	for _ in $(seq 100); do
		"$fr" status --socket "$T/sock" >/dev/null 2>&1 && break
		sleep 0.1
	done
	# Its start-up (the /proc scan, the first CFI tables) out of the way.
	sleep 2
}

# one CONFIG: prints "key=value ..." figures.
one() {
	local t0 c0 c1 t1 t2 t3 c2 c3 r0 a0 k tz tw=0 tu=0 wall seals=" " qs=() st
	start_recorder "$1"
	# Before the threads.
	read -r c0 _ <<<"$(rcpu)"
	t0=$(now_ns) r0=$(rss_kib VmRSS)
	sleep "$base"
	read -r c1 _ <<<"$(rcpu)"
	t1=$(now_ns)
	a0=$(counters)
	# The threads.
	tl=$(now_ns)
	"$helper" "$n" "$stack_kib" "$depth" >"$T/b.out" 2>"$T/b.err" &
	bpid=$!
	while ! grep -q '^pid=' "$T/b.out" 2>/dev/null; do
		kill -0 "$bpid" 2>/dev/null || { cat "$T/b.err" >&2; exit 1; }
		sleep 0.02
	done
	tz=$(now_ns)
	read -r c2 w2 <<<"$(rcpu)"
	# Status alone for BL_FIRST seconds: when the walks were asked for,
	# when the copies were unwound, the seals.
	while [ $(($(now_ns) - tz)) -lt $((first * 1000000000)) ]; do
		k=$(counters)
		read -r sw _ _ un seal <<<"$k"
		read -r sw0 _ _ un0 _ <<<"$a0"
		t=$(now_ns)
		[ "$tw" = 0 ] && [ $((sw - sw0)) -ge "$n" ] && tw=$t
		[ "$tu" = 0 ] && [ $((un - un0)) -ge "$n" ] && tu=$t
		case $seals in *" $seal "*) ;; *) seals="$seals$seal " ;; esac
		sleep 0.1
	done
	read -r c3 w3 <<<"$(rcpu)"
	r1=$(rss_kib VmRSS)
	# Every thread's stack, as flightrec threads shows it.
	"$fr" threads --socket "$T/sock" --pid "$bpid" --json >"$T/t.json" || true
	whole=$(python3 -c '
import json, sys
try:
    t = json.load(open(sys.argv[1]))["threads"]
except (ValueError, KeyError):
    t = []
s = [" ".join(x.get("stack", [])) for x in t]
print("%d/%d" % (sum("blocked_descend" in x for x in s), sum("blocked_leaf" in x for x in s)))' "$T/t.json")
	# Steady state.
	sleep 1
	read -r c4 w4 <<<"$(rcpu)"
	t4=$(now_ns)
	sleep "$steady"
	read -r c5 w5 <<<"$(rcpu)"
	t5=$(now_ns)
	rss=$(rss_kib VmRSS) hwm=$(rss_kib VmHWM)
	for _ in $(seq "$queries"); do
		a=$(now_ns)
		"$fr" threads --socket "$T/sock" --pid "$bpid" --json >/dev/null || true
		qs+=($((($(now_ns) - a) / 1000000)))
	done
	k=$(counters)
	kill -9 "$bpid"
	wait "$bpid" 2>/dev/null || true
	bpid=
	if ! kill -INT "$ppid" 2>/dev/null; then
		wait "$ppid" || true
		ppid=
		echo "offcpu_blocked.sh: the recorder exited during the run; its log ends:" >&2
		tail -n 20 "$T/rec.log" >&2
		echo dead
		return
	fi
	wait "$ppid" || true
	ppid=
	threads_made=$(sed -n 's/.*threads=//p' "$T/b.out")
	python3 - "$1" "$n" "$threads_made" "$t0 $t1 $c0 $c1" "$tz $c2 $w2 $c3 $w3 $tl" \
		"$tw $tu" "$seals" "$whole" "$t4 $t5 $c4 $c5 $w4 $w5" "$r0 $r1 $rss $hwm" \
		"${qs[*]}" "$a0" "$k" <<'PY'
import statistics, sys
a = sys.argv[1:]
cfg, n, made = a[0], int(a[1]), int(a[2] or 0)
t0, t1, c0, c1 = map(int, a[3].split())
tz, c2, w2, c3, w3, tl = map(int, a[4].split())
tw, tu = map(int, a[5].split())
seals = sorted(int(s) for s in a[6].split())
whole = a[7]
t4, t5, c4, c5, w4, w5 = map(int, a[8].split())
r0, r1, rss, hwm = a[9].split()
qs = [int(q) for q in a[10].split()]
sw0, dr0, sh0, un0, _ = map(int, a[11].split())
sw1, dr1, sh1, un1, _ = map(int, a[12].split())
sec = lambda t: "%.1f" % ((t - tz) / 1e9) if t else "-"
ready = max(tw, tu) if tu else tw
after = [s for s in seals if ready and s > ready]
print("config=%s threads=%d start_s=%.2f base_cpu=%.1f%% asked=%s unwound=%s whole_by=%s first_cpu_ms=%.0f "
      "first_walker_ms=%.0f whole=%s steady_cpu=%.2f%% steady_walker=%.2f%% rss_before_kib=%s "
      "rss_first_kib=%s rss_kib=%s hwm_kib=%s query_ms=%d dropped=%d cut_short=%d walks=%d" % (
    cfg, made, (tz - tl) / 1e9, 100 * (c1 - c0) / (t1 - t0), sec(tw), sec(tu) if tu else "-",
    sec(after[0]) if after else "-", (c3 - c2) / 1e6, (w3 - w2) / 1e6, whole,
    100 * (c5 - c4) / (t5 - t4), 100 * (w5 - w4) / (t5 - t4), r0, r1, rss, hwm,
    statistics.median(qs) if qs else 0, dr1 - dr0, sh1 - sh0, sw1 - sw0))
PY
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
set -- $configs
for r in $(seq "$runs"); do
	for i in $(seq 0 $(($# - 1))); do
		k=$(((i + r) % $# + 1))
		res=$(one "${!k}")
		echo "round $r: $res" >&2
		[ "$res" = dead ] || echo "$res" >>"$T/res"
	done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average after: $load" >&2

echo
echo "### $n threads blocked in read(), ${stack_kib} KiB stacks, depth $depth ($runs rounds; load average $load at the end)"
echo
echo "| recorder | start (s) | base CPU | asked (s) | unwound (s) | whole by (s) | first ${first} s CPU (walker), ms | threads whole (with leaf) | steady CPU (walker) | RSS before / after walks / steady / peak, MiB | threads query, ms | dropped | cut short |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
python3 - "$T/res" $configs <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    d = dict(kv.split("=", 1) for kv in line.split())
    rows.setdefault(d["config"], []).append(d)
mib = lambda k: "%.0f" % (int(k) / 1024)
for c in sys.argv[2:]:
    for d in rows.get(c, []):
        print("| %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s (%s) | %s / %s / %s / %s | %s | %s | %s |" % (
            c, d["start_s"], d["base_cpu"], d["asked"], d["unwound"], d["whole_by"], d["first_cpu_ms"],
            d["first_walker_ms"], d["whole"].replace("/", " (") + ")", d["steady_cpu"],
            d["steady_walker"], mib(d["rss_before_kib"]), mib(d["rss_first_kib"]), mib(d["rss_kib"]), mib(d["hwm_kib"]),
            d["query_ms"], d["dropped"], d["cut_short"]))
PY
