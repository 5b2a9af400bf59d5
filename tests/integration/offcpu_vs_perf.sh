#!/bin/bash
# Off-CPU caller chains of programs built without frame pointers, recorded
# on the same run by flightrecd (the embedded default configuration: the
# eBPF mechanism) and by `perf record -e sched:sched_switch --switch-events
# --call-graph dwarf -p PID`: the cumulative shares by count of the
# programs' functions (the share of the process's waits whose stack holds
# the function) agree within 2 percentage points. offcpu_waits waits in
# libc's epoll_wait, poll and pthread_cond_timedwait, offcpu_cxx in
# std::condition_variable::wait_for, each under functions of its own with
# known proportions (printed as a third column).
#
#   offcpu_vs_perf.sh         offcpu_cxx and offcpu_waits, the default
#                             mechanism (eBPF)
#   offcpu_vs_perf.sh fp      the harness itself: the _fp builds (frame
#                             pointers), "mechanism": "perf" with "unwind":
#                             "fp" against perf --call-graph fp, both the
#                             kernel's frame-pointer callchain at each
#                             switch, which must agree
#   offcpu_vs_perf.sh dwarf   the harness itself: "mechanism": "perf" with
#                             "unwind": "dwarf" (a stack copy at each
#                             switch, unwound with CFI) against perf
#                             --call-graph dwarf
#
# What is counted, the same on both sides: every wait of the programs is a
# 5 ms timeout, one switch out each. The eBPF mechanism gives a stack, one
# sample, to each wait of at least min_wait (1 ms) and adds up shorter ones
# per thread on one marker frame: those samples are left out, and so are
# perf's switches out after which the thread came back less than 1 ms
# later (by perf's PERF_RECORD_SWITCH IN of the thread). The perf
# mechanism gives every wait a stack: all are compared. A thread's last
# switch, at its exit, has no return: perf's is left out, flightrec has
# none. flightrec is asked once the program has exited, so the open waits
# (threads blocked at a seal) add nothing: each of those threads came back
# later in the window, and a wait that came back is counted by its
# completed sample alone (core/query/profile_open.c). Kernel frames are
# left out of the comparison (--user-only): a BPF program and perf's
# tracepoint skip different frames of the scheduler.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
command -v perf >/dev/null || skip "needs perf (linux-perf) as the reference profiler"
command -v python3 >/dev/null || skip "needs python3 for cum_shares.py"
SHARES=$(dirname "$0")/cum_shares.py
mode=${1:-bpf}
# At ~390 waits a second, 6 s give ~2,300 samples on each side: were they
# two independent samplings, a share's difference would have a standard
# deviation under 1.5 points; both sides see the same waits, so it is far
# less (a few samples: the main thread's waits before perf was enabled).
SECONDS_RUN=${OFFCPU_VS_PERF_SECONDS:-6}

suffix=
case $mode in
bpf)
	perf_cg=dwarf,8192
	filter=(--perf-min-wait 1 --drop "[off-CPU waits under min_wait]")
	start_daemon
	"$FLIGHTREC" status >"$T/status" || fail "status failed"
	grep -q '^offcpu:   bpf, stacks of waits >= 1ms' "$T/status" ||
		fail "the embedded default does not record offcpu by eBPF with min_wait 1ms: $(cat "$T/status")"
	;;
dwarf | fp)
	perf_cg=$mode
	[ "$mode" = dwarf ] && perf_cg=dwarf,8192
	[ "$mode" = fp ] && suffix=_fp
	filter=(--perf-min-wait 0)
	echo "{\"sessions\": [{\"name\": \"waits\", \"events\": [{\"event\": \"offcpu\", \"mechanism\": \"perf\", \"unwind\": \"$mode\"}]}]}" \
		>"$T/config.json"
	start_daemon --config "$T/config.json"
	"$FLIGHTREC" status >"$T/status" || fail "status failed"
	grep -q '^offcpu:   [0-9]* switches out' "$T/status" ||
		fail "offcpu is not recorded by the perf mechanism: $(cat "$T/status")"
	;;
*) fail "unknown mode $mode (bpf, dwarf or fp)" ;;
esac

pid_of() { sed -n 's/^pid=\([0-9]*\)$/\1/p' "$1" | head -1; }

# perf record starts with its events disabled (-D -1) and is enabled
# through its control FIFO, which acknowledges; the program, started
# first, waits for a line on its standard input (another FIFO) before its
# threads start: perf sees all of their waits, from the first.
mkfifo "$T/ctl" "$T/ack" "$T/go" || fail "mkfifo failed"
exec 7<>"$T/ctl" 8<>"$T/ack" 9<>"$T/go"

# run_case NAME REQUIRED: runs NAME for SECONDS_RUN seconds under perf
# record -p, then compares the REQUIRED functions and every user function
# named on both sides with 5% or more on either.
run_case() {
	local name=$1 require=$2 prog=$BUILD/tests/integration/$1 pid perf_pid truth ack
	echo "=== $name"
	# A first, short run: until the recorder has built a binary's CFI
	# table, the first time a sample needs it, its stacks stop there. The
	# comparison is of the steady state, with the tables built; what the
	# cold run lost is printed.
	"$prog" 0.5 0 >"$T/$name.cold.out" || fail "$name failed"
	pid=$(pid_of "$T/$name.cold.out")
	"$FLIGHTREC" attach --window 60s --event offcpu --pid "$pid" -o "$T/$name.cold.pb.gz" \
		2>"$T/attach.err" || fail "attach --pid $pid failed: $(cat "$T/attach.err")"
	"$GO" tool pprof -symbolize=none -comments "$T/$name.cold.pb.gz" 2>/dev/null |
		sed -n 's/^offcpu: unwinding stopped/cold run: unwinding stopped/p'
	wait_tables_built

	"$prog" "$SECONDS_RUN" - <"$T/go" >"$T/$name.out" &
	pid=$!
	perf record --no-buildid --no-buildid-cache -e sched:sched_switch --switch-events \
		--call-graph "$perf_cg" -D -1 --control "fifo:$T/ctl,$T/ack" -p "$pid" \
		-o "$T/$name.data" >"$T/$name.perf.log" 2>&1 &
	perf_pid=$!
	echo enable >&7
	if ! read -r -t 30 ack <&8 || [ "$ack" != ack ]; then
		cat "$T/$name.perf.log"
		skip "perf record -D -1 --control (perf 5.10+) did not enable its events here"
	fi
	echo go >&9
	wait "$pid" || fail "$name failed"
	if ! wait "$perf_pid" || [ ! -s "$T/$name.data" ]; then
		cat "$T/$name.perf.log"
		skip "perf record -e sched:sched_switch --call-graph $perf_cg cannot record here"
	fi
	# --no-inline: see cum_shares.py. --no-demangle: flightrec names C++
	# functions by their symbols, as the symbol table spells them.
	perf script -i "$T/$name.data" --no-inline --no-demangle --show-switch-events \
		-F comm,pid,tid,time,ip,sym >"$T/$name.script" 2>"$T/$name.script.err" ||
		{ cat "$T/$name.script.err"; fail "perf script failed"; }
	"$FLIGHTREC" attach --window 60s --event offcpu --pid "$pid" -o "$T/$name.pb.gz" \
		2>"$T/attach.err" || fail "attach --pid $pid failed: $(cat "$T/attach.err")"
	"$GO" tool pprof -symbolize=none -raw "$T/$name.pb.gz" >"$T/$name.raw" 2>"$T/pprof.err" ||
		{ cat "$T/pprof.err"; fail "go tool pprof -raw could not read the profile"; }
	"$GO" tool pprof -symbolize=none -comments "$T/$name.pb.gz" 2>/dev/null |
		sed -n 's/^offcpu: unwinding stopped/flightrec: unwinding stopped/p'
	cat "$T/$name.out"
	# The program's own count of its waits under each function, as shares.
	truth=$(awk -F'[ =]' '/^pid=/ { w = $4 } $1 == "under" && w > 0 {
			printf "%s%s=%.2f", (n++ ? "," : ""), $2, 100 * $3 / w }' "$T/$name.out")
	python3 "$SHARES" --perf "$T/$name.script" --pprof "$T/$name.raw" --pid "$pid" \
		--require "$require" --truth "$truth" --user-only "${filter[@]}" ||
		fail "$name: flightrec's off-CPU shares are not perf's (within 2 points)"
}

# C++ names as the symbol table spells them (static functions: _ZL...).
cxx_req=_ZL9read_rowsR6Waiter,_ZL9fetch_rowR6Waiter,_ZL11fetch_indexR6Waiter,_ZL9write_logR6Waiter,_ZL9flush_logR6Waiter
waits_req=events_round,wait_events,wait_socket,jobs_round,wait_job
if [ "$mode" = fp ]; then
	# A frame-pointer walk from a wait skips the caller of libc's leaf
	# wrappers (epoll_wait and poll keep no frame: wait_events and
	# wait_socket), and stops in libc's futex code, which keeps no frame
	# pointer (the jobs thread's and the C++ program's functions): only
	# what it can see is required; every user function both name is
	# compared.
	cxx_req=
	waits_req=events_round
fi
cxx=$BUILD/tests/integration/offcpu_cxx$suffix
[ -x "$cxx" ] && run_case "offcpu_cxx$suffix" "$cxx_req"
run_case "offcpu_waits$suffix" "$waits_req"
stop_daemon
[ -x "$cxx" ] || skip "offcpu_cxx$suffix was not built (no C++ compiler); offcpu_waits$suffix agreed"
echo PASS
