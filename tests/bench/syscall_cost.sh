#!/bin/bash
# What the off-CPU eBPF program costs each system call of the machine:
# dd copying 1,000,000 single bytes (2,000,000 system calls) pinned to CPU
# 0, with no recorder, flightrecd on its embedded default (user stacks by
# BPF task work: no program at system calls) and the same with
# FLIGHTREC_BPF_TASK_WORK=0 (user stacks at sys_exit, the mechanism of
# kernels without task work). Best wall time of SYSCALL_RUNS runs each.
#
#   tests/bench/syscall_cost.sh BUILD_DIR
#
# Prints one line per recorder. Needs root. Figures, not pass/fail: see
# docs/performance.md.
set -eu
build=$(cd "${1:?usage: syscall_cost.sh BUILD_DIR}" && pwd)
runs=${SYSCALL_RUNS:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Best of $runs: ms of the dd run.
best_ms() {
	local best=0 t0 t1 ms
	for _ in $(seq "$runs"); do
		t0=$(date +%s%N)
		taskset -c 0 dd if=/dev/zero of=/dev/null bs=1 count=1000000 2>/dev/null
		t1=$(date +%s%N)
		ms=$(((t1 - t0) / 1000000))
		if [ "$best" = 0 ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
	done
	echo "$best"
}

for rec in none task_work sys_exit; do
	pid=
	if [ "$rec" != none ]; then
		tw=1
		[ "$rec" = sys_exit ] && tw=0
		rm -f "$T/ring" "$T/sock"
		FLIGHTREC_BPF_TASK_WORK=$tw "$build/recorder/flightrecd" --ring "$T/ring" \
			--ring-size 64MiB --socket "$T/sock" >"$T/rec.log" 2>&1 &
		pid=$!
		for _ in $(seq 100); do
			"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
			sleep 0.1
		done
		sleep 1
	fi
	echo "$rec: $(best_ms) ms"
	if [ -n "$pid" ]; then
		kill -TERM "$pid"
		wait "$pid" || true
	fi
done
