#!/bin/bash
# Programs built without frame pointers, recorded on the same run by
# flightrecd (999 Hz, "unwind": "dwarf") and by
# `perf record --call-graph dwarf -F 999 -p PID`: the cumulative shares of
# main, the callers and the leaves (the share of the process's samples
# whose stack holds the function) agree within 2 percentage points, and
# the C++ program's inlined frames are in flightrec's profile.
#
#   unwind_vs_perf.sh          nofp_cxx and nofp_sort, "unwind": "dwarf"
#   unwind_vs_perf.sh fp       the harness itself: nofp_cxx_fp (frame
#                              pointers) with "unwind": "fp" against
#                              perf --call-graph fp, which must agree
#
# Each side is read by a reader independent of flightrec: perf script, and
# go tool pprof -raw; tests/integration/cum_shares.py computes the shares
# and prints both tables. The two profilers share 2 CPUs with the program,
# so sample counts differ a little: shares are compared, not counts.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
command -v perf >/dev/null || skip "needs perf (linux-perf) as the reference profiler"
command -v python3 >/dev/null || skip "needs python3 for cum_shares.py"
SHARES=$(dirname "$0")/cum_shares.py
mode=${1:-dwarf}
# Long enough that sampling noise stays well inside the 2 points: at 600
# to 1,000 samples a second (the program shares 2 CPUs with the profilers
# and the rest of the machine), the difference of two independent
# samplings of a share has a standard deviation of at most 0.7 points.
SECONDS_RUN=${UNWIND_VS_PERF_SECONDS:-18}

case $mode in
dwarf)
	perf_cg=dwarf,8192
	ev='{"event": "cpu", "hz": 999, "unwind": "dwarf", "stack_copy": "8KiB"}'
	;;
fp)
	perf_cg=fp
	ev='{"event": "cpu", "hz": 999, "unwind": "fp"}'
	;;
*) fail "unknown mode $mode (dwarf or fp)" ;;
esac
echo "{\"sessions\": [{\"name\": \"always\", \"events\": [$ev]}]}" >"$T/config.json"
if ! "$FLIGHTRECD" --check-config "$T/config.json" >"$T/check.log" 2>&1; then
	cat "$T/check.log"
	grep -q unwind "$T/check.log" || fail "flightrecd rejects $T/config.json"
	# A recorder that predates "unwind" follows frame pointers only.
	[ "$mode" = fp ] || skip "this flightrecd does not unwind with CFI (\"unwind\" is unknown)"
	echo '{"sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 999}]}]}' >"$T/config.json"
fi
start_daemon --config "$T/config.json"

# run_case NAME REQUIRED INLINED MIN_SHARE: runs NAME for SECONDS_RUN
# seconds under perf record -p, then compares the REQUIRED functions and
# those named on both sides with MIN_SHARE % or more on either. nofp_cxx
# sleeps a second first (its second argument), so perf is attached for all
# of its work; nofp_sort starts at once, and perf misses its first tenth of
# a second or so, which flightrec keeps: too few samples to move a share.
# (Starting it with `sh -c 'sleep 1; exec ...'` instead makes perf 6.1's
# perf script abort in its build-id code at the exec.)
run_case() {
	local name=$1 require=$2 inlined=$3 min=$4 prog=$BUILD/tests/integration/$1 pid truth
	echo "=== $name"
	# A first, short run: the recorder builds a binary's unwind table the
	# first time a sample needs it, and until then marks the samples in
	# it "[truncated: unwind table not ready]" (the first 50-350 ms of CPU
	# in each new binary here). The comparison is of the steady state,
	# with every table built; what the cold run lost is printed.
	"$prog" 1 0 >/dev/null &
	pid=$!
	wait "$pid" || fail "$name failed"
	wait_seals 1
	"$FLIGHTREC" attach --window 60s --pid "$pid" -o "$T/$name.cold.pb.gz" 2>"$T/attach.err" ||
		{ cat "$T/attach.err"; fail "attach --pid $pid failed"; }
	"$GO" tool pprof -symbolize=none -comments "$T/$name.cold.pb.gz" 2>/dev/null |
		sed -n 's/^cpu: unwinding stopped/cold run: unwinding stopped/p'
	"$prog" "$SECONDS_RUN" 1 >"$T/$name.out" &
	pid=$!
	perf record --no-buildid --no-buildid-cache -e cpu-clock -F 999 --call-graph "$perf_cg" \
		-p "$pid" -o "$T/$name.data" >"$T/$name.perf.log" 2>&1 &
	local perf_pid=$!
	wait "$pid" || fail "$name failed"
	if ! wait "$perf_pid" || [ ! -s "$T/$name.data" ]; then
		cat "$T/$name.perf.log"
		skip "perf record --call-graph $perf_cg cannot record here"
	fi
	# --no-inline: see cum_shares.py. --no-demangle: flightrec names C++
	# functions by their symbols, as the symbol table spells them.
	perf script -i "$T/$name.data" --no-inline --no-demangle -F comm,pid,tid,ip,sym \
		>"$T/$name.script" 2>"$T/$name.script.err" ||
		{ cat "$T/$name.script.err"; fail "perf script failed"; }
	"$FLIGHTREC" attach --window 60s --pid "$pid" -o "$T/$name.pb.gz" 2>"$T/attach.err" ||
		{ cat "$T/attach.err"; fail "attach --pid $pid failed"; }
	"$GO" tool pprof -symbolize=none -raw "$T/$name.pb.gz" >"$T/$name.raw" 2>"$T/pprof.err" ||
		{ cat "$T/pprof.err"; fail "go tool pprof -raw could not read the profile"; }
	cat "$T/$name.out"
	# The program's own measure of its phases, when it has one, under the
	# phases' symbol names (static C++ functions without arguments).
	truth=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		END { if (v["cpu"] > 0) for (k in v) if (k ~ /^phase_/)
			printf "%s_ZL%d%sv=%.2f", (n++ ? "," : ""), length(k), k, 100 * v[k] / v["cpu"] }' \
		"$T/$name.out")
	python3 "$SHARES" --perf "$T/$name.script" --pprof "$T/$name.raw" --pid "$pid" \
		--require "$require" --inline "$inlined" --truth "$truth" --min-share "$min" ||
		fail "$name: flightrec's cumulative shares are not perf's (within 2 points)"
}

# C++ names as the symbol table spells them (static functions: _ZL...).
cxx_funcs=main,_ZL10phase_sortv,_ZL11phase_throwv,_ZL9phase_mixv,_ZL9mix_blockm,_ZL11parse_fieldi
if [ "$mode" = fp ]; then
	[ -x "$BUILD/tests/integration/nofp_cxx_fp" ] || skip "no C++ compiler: nofp_cxx_fp was not built"
	# The libgcc unwinder has no frame pointers: under it the kernel's
	# walk reads garbage for return addresses, which the two name
	# differently (perf gives an address past a symbol's end that symbol's
	# name, flightrec does not), so only the program's own functions are
	# compared.
	run_case nofp_cxx_fp "$cxx_funcs" "sort_key,step,rotate" 101
	stop_daemon
	echo PASS
	exit 0
fi

ran=0
if [ -x "$BUILD/tests/integration/nofp_cxx" ]; then
	run_case nofp_cxx "$cxx_funcs,__cxa_throw,_Unwind_RaiseException" "sort_key,step,rotate" 5
	ran=$((ran + 1))
else
	echo "no C++ compiler: nofp_cxx was not built"
fi
if [ -x "$BUILD/tests/integration/nofp_sort" ]; then
	run_case nofp_sort main,outer_a,sort_phase,msort_with_tmp,cmp "" 5
	ran=$((ran + 1))
else
	echo "nofp_sort was not built"
fi
[ "$ran" -gt 0 ] || skip "neither nofp_cxx nor nofp_sort was built"
stop_daemon
echo PASS
