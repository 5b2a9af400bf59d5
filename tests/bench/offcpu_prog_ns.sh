#!/bin/bash
# What the off-CPU eBPF program itself costs per context switch, from the
# kernel's own accounting (kernel.bpf_stats_enabled: run_time_ns and
# run_cnt of each program), while tests/bench/switches.c's "work" workload
# switches ~100,000 times a second on CPU 0. bpf_stats adds its own two
# clock reads to every run (~55 ns here): compare with the empty program
# (FLIGHTREC_BPF_EMPTY=1), measured in the same rounds.
#
#   tests/bench/offcpu_prog_ns.sh BUILD_DIR
#
# Environment (all optional):
#   NS_RUNS     rounds, each variant once a round, medians (default 5)
#   NS_SECONDS  seconds of workload per run (default 3)
#   NS_VARIANTS variants (default "empty tw"; also "sysexit": the program of
#               kernels without BPF task work)
# Prints "variant: ns/run median [min-max], runs/s" per variant. Needs root
# and bpftool. Figures, not pass/fail: see docs/performance.md.
set -eu
build=$(cd "${1:?usage: offcpu_prog_ns.sh BUILD_DIR}" && pwd)
runs=${NS_RUNS:-5}
secs=${NS_SECONDS:-3}
variants=${NS_VARIANTS:-"empty tw"}

if [ "$(id -u)" != 0 ]; then
	echo "offcpu_prog_ns.sh: needs root (eBPF, bpf_stats)" >&2
	exit 77
fi
command -v bpftool >/dev/null || { echo "offcpu_prog_ns.sh: bpftool not found" >&2; exit 77; }

T=$(mktemp -d /tmp/fr-offcpu-ns.XXXXXX)
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

# IDs of the sched_switch programs loaded now (other recorders' too: the
# machine is shared, bpftool here does not say which process holds which).
switch_ids() {
	bpftool prog show --json | python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)
               if p.get("name", "").startswith("on_switch")))'
}

# "RUN_TIME_NS RUN_CNT" of the program IDs given.
prog_stats() {
	bpftool prog show --json | python3 -c '
import json, sys
ids = set(int(i) for i in sys.argv[1:])
t = n = 0
for p in json.load(sys.stdin):
    if p["id"] in ids:
        t += p.get("run_time_ns", 0)
        n += p.get("run_cnt", 0)
print(t, n)' "$@"
}

one() {
	local tw=1 empty=0 a b before ids
	[ "$1" = sysexit ] && tw=0
	[ "$1" = empty ] && empty=1
	rm -f "$T/ring" "$T/sock"
	before=" $(switch_ids) "
	FLIGHTREC_BPF_TASK_WORK=$tw FLIGHTREC_BPF_EMPTY=$empty "$build/recorder/flightrecd" \
		--ring "$T/ring" --ring-size 64MiB --socket "$T/sock" >"$T/rec.log" 2>&1 &
	ppid=$!
	for _ in $(seq 100); do
		"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
		sleep 0.1
	done
	sleep 0.5
	ids=
	for i in $(switch_ids); do
		case $before in *" $i "*) ;; *) ids="$ids $i" ;; esac
	done
	[ -n "$ids" ] || { echo "offcpu_prog_ns.sh: no program loaded ($T/rec.log)" >&2; exit 1; }
	a=$(prog_stats $ids)
	taskset -c 0 "$build/tests/bench/switches" work "$secs" >/dev/null
	b=$(prog_stats $ids)
	kill -INT "$ppid"
	wait "$ppid" || true
	ppid=
	echo "$a $b" | awk -v s="$secs" '{ n = $4 - $2; printf "%.1f %.0f\n", n ? ($3 - $1) / n : 0, n / s }'
}

for r in $(seq "$runs"); do
	for v in $variants; do
		res=$(one "$v")
		echo "round $r $v: $res" >&2
		echo "$v $res" >>"$T/res"
	done
done
python3 - "$T/res" $variants <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, ns, n = line.split()
    rows.setdefault(v, []).append((float(ns), float(n)))
for v in sys.argv[2:]:
    ns = sorted(x for x, _ in rows[v])
    print("%s: %.1f ns/run [%.1f-%.1f], %.0f runs/s" % (
        v, statistics.median(ns), ns[0], ns[-1], statistics.median(n for _, n in rows[v])))
PY
