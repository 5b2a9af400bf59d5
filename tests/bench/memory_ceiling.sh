#!/bin/bash
# The recorder's resident memory through the storms that used to grow it
# without bound: idle; the peak under 8 heavy attaches at once; under 60
# concurrent timelines; under a table flood (30 distinct -O2 binaries of
# 200,000 functions each, exec'd two at a time); then 10 s, 60 s and
# 120 s after the last storm. Each phase's peak is VmHWM from a reset (clear_refs),
# its end VmRSS when it is over.
#
#   tests/bench/memory_ceiling.sh BUILD_DIR [BUILD_DIR...]
#
# Each build in turn, same workload (a stacks program at 999 Hz with
# off-CPU waits, as tests/integration/memory_idle.sh). Needs root, cc and
# as. The figures depend on what else the machine runs: compare builds in
# one run.
set -eu
[ $# -ge 1 ] || { echo "usage: memory_ceiling.sh BUILD_DIR [BUILD_DIR...]" >&2; exit 2; }
T=$(mktemp -d /tmp/fr-memory.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -9 $dpid 2>/dev/null; jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$T"' EXIT

# The flood's binaries: one object of 200,000 local functions with CFI
# (an FDE each; the table keeps a few rows of each), linked
# 30 times with a main that differs, so each has its own build id (and
# its own table). Each spins 1.5 s so that its table is built.
python3 - "$T/funcs.s" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write(".text\n.globl f0\n")
    for i in range(200000):
        f.write(f"f{i}:\n.cfi_startproc\npushq %rbp\n"
                ".cfi_def_cfa_offset 16\n.cfi_offset 6, -16\nmovq %rsp, %rbp\n"
                ".cfi_def_cfa_register 6\npopq %rbp\n.cfi_def_cfa 7, 8\nret\n.cfi_endproc\n")
    f.write(".section .note.GNU-stack,\"\",@progbits\n")
EOF
as -o "$T/funcs.o" "$T/funcs.s"
cat >"$T/main.c" <<'EOF'
#include <time.h>
int f0(void);
int main(void)
{
	struct timespec a, b;
	volatile unsigned long n = SEED;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			n += (unsigned long)f0;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 1500000000L);
	return 0;
}
EOF
for i in $(seq 30); do
	cc -O2 -s -DSEED="$i" -o "$T/flood$i" "$T/main.c" "$T/funcs.o"
done

rss() { awk -v k="$1:" '$1 == k { print int($2 / 1024) }' "/proc/$dpid/status"; }
reset_peak() { echo 5 >"/proc/$dpid/clear_refs"; }

run() { # BUILD
	local b=$1 fr=$1/tools/flightrec i pids idle
	printf '{"sessions": [{"name": "heavy", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}\n' >"$T/c.json"
	rm -rf "$T/ring"
	"$b/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/c.json" >"$T/log" 2>&1 &
	dpid=$!
	export FLIGHTREC_SOCKET=$T/sock
	for _ in $(seq 100); do "$fr" status >/dev/null 2>&1 && break; sleep 0.1; done
	"$b/tests/bench/stacks" 8 2 16384 >/dev/null
	"$fr" attach --window 1s -o /dev/null 2>/dev/null || true
	"$fr" timeline --window 1s >/dev/null 2>&1 || true
	sleep 2
	idle=$(rss VmRSS)

	reset_peak
	pids=()
	for i in $(seq 8); do
		"$fr" attach --window 30s -o "$T/p$i.pb.gz" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	local a_peak a_end t_peak t_end f_peak f_end tables
	a_peak=$(rss VmHWM) a_end=$(rss VmRSS)

	reset_peak
	pids=()
	for i in $(seq 60); do
		"$fr" timeline --window 1h --step 10ms --event offcpu --json >/dev/null 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	t_peak=$(rss VmHWM) t_end=$(rss VmRSS)

	reset_peak
	for i in $(seq 1 2 30); do
		"$T/flood$i" &
		pids=($!)
		"$T/flood$((i + 1))" &
		wait "${pids[0]}" $!
	done
	sleep 2
	f_peak=$(rss VmHWM) f_end=$(rss VmRSS)
	tables=$("$fr" status --json | python3 -c 'import json, sys; t = json.load(sys.stdin)["unwind_tables"]; print(t["bytes"] >> 20, t["budget"] >> 20)')

	sleep 10
	local after10 after60 after120
	after10=$(rss VmRSS)
	sleep 50
	after60=$(rss VmRSS)
	sleep 60
	after120=$(rss VmRSS)
	echo "$b: RSS MiB idle $idle | 8 attaches peak $a_peak end $a_end |" \
		"60 timelines peak $t_peak end $t_end | table flood peak $f_peak end $f_end" \
		"(tables ${tables% *} MiB of ${tables#* }) | 10 s after $after10 | 60 s after $after60" \
		"| 120 s after $after120"
	echo "  unwind tables at the end: $("$fr" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["unwind_tables"]["bytes"] >> 20)') MiB"
	"$fr" status 2>/dev/null | grep '^memory:' || true
	kill -TERM "$dpid"
	wait "$dpid" || true
	dpid=
}

for b in "$@"; do
	run "$(cd "$b" && pwd)"
done
