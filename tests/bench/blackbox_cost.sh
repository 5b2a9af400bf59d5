#!/bin/bash
# What the black box costs the programs that start processes: an exec
# storm (a parent forks a child RATE times a second, each execs
# /bin/true: tests/bench/exec_storm.c), a fork/exit storm (the same,
# each child exiting at once) and a kill storm (BB_STORMS=kill: each
# child killed by its parent's SIGTERM), each run
#   none      without a recorder,
#   bb-off    under flightrecd with FLIGHTREC_BLACKBOX=off (exec, exit and
#             crash capture off; the rest of the embedded default on),
#   default   under flightrecd as it starts by default (embedded default
#             configuration, the black box on),
# in rounds, the order rotating so that a change in the machine's load
# does not fall on one configuration.
#
#   tests/bench/blackbox_cost.sh BUILD_DIR
#
# Per storm and configuration, medians over the rounds [min-max]:
#   ops/s       children started a second (the storm asks for RATE);
#   CPU us/op   the storm's CPU (parent and children, getrusage) per
#               child: what the recorder's work at each exec and exit
#               adds to the processes that do them;
#   vs none     CPU us/op over the same round's none run;
#   recorder    the recorder's own CPU (utime + stime of /proc/PID/stat
#               over the storm), % of one CPU, and per op in us.
#
# Environment: BB_RUNS (default 3), BB_SECONDS (default 5), BB_RATE
# (default 1500), BB_STORMS (default "exec fork"; also "kill"), BB_CONFIGS (default
# "none bb-off default"). Prints markdown; needs root. Figures, not
# pass/fail: see docs/performance.md, "The black box: exec and exit
# storms".
set -eu
build=$(cd "${1:?usage: blackbox_cost.sh BUILD_DIR}" && pwd)
runs=${BB_RUNS:-3}
secs=${BB_SECONDS:-5}
rate=${BB_RATE:-1500}
storms=${BB_STORMS:-exec fork}
configs=${BB_CONFIGS:-none bb-off default}
storm=$build/tests/bench/exec_storm
[ -x "$storm" ] || { echo "blackbox_cost.sh: $storm was not built" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "blackbox_cost.sh: needs root (the recorder)" >&2; exit 1; }

T=$(mktemp -d /tmp/fr-blackbox-cost.XXXXXX)
ppid=
cleanup() {
	[ -n "$ppid" ] && kill -INT "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
tck=$(getconf CLK_TCK)

# ticks PID: utime + stime of PID, clock ticks.
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# one STORM CONFIG ROUND: "OPS WALL_S CPU_S REC_S" into $T/r.STORM.CONFIG.ROUND.
one() {
	local t0=0 t1=0 out
	if [ "$2" != none ]; then
		rm -f "$T/ring" "$T/sock"
		if [ "$2" = bb-off ]; then
			FLIGHTREC_BLACKBOX=off "$build/recorder/flightrecd" --ring "$T/ring" \
				--ring-size 64MiB --socket "$T/sock" >"$T/rec.log" 2>&1 &
		else
			"$build/recorder/flightrecd" --ring "$T/ring" --ring-size 64MiB \
				--socket "$T/sock" >"$T/rec.log" 2>&1 &
		fi
		ppid=$!
		for _ in $(seq 100); do
			"$build/tools/flightrec" status --socket "$T/sock" >/dev/null 2>&1 && break
			sleep 0.1
		done
		sleep 2
		t0=$(ticks "$ppid")
	fi
	out=$("$storm" "$1" "$rate" "$secs")
	if [ -n "$ppid" ]; then
		t1=$(ticks "$ppid")
		kill -INT "$ppid"
		wait "$ppid" || true
		ppid=
	fi
	echo "$out $(awk -v a="$t0" -v b="$t1" -v h="$tck" 'BEGIN { printf "%.3f", (b - a) / h }')" \
		>"$T/r.$1.$2.$3"
}

read -r -a cfgs <<<"$configs"
n=${#cfgs[@]}
for r in $(seq "$runs"); do
	for s in $storms; do
		# The order rotates each round.
		for i in $(seq 0 $((n - 1))); do
			c=${cfgs[$(((i + r - 1) % n))]}
			one "$s" "$c" "$r"
			echo "$s $c round $r: $(cat "$T/r.$s.$c.$r")" >&2
		done
	done
done

echo
echo "### Exec and fork/exit storms at $rate/s ($runs rounds of $secs s, medians [min-max])"
echo
echo "| storm | recorder | ops/s | CPU us/op | vs none (per round) | recorder CPU | recorder us/op |"
echo "|---|---|---|---|---|---|---|"
python3 - "$T" "$runs" "$storms" "$configs" <<'PY'
import statistics, sys
d, runs = sys.argv[1], int(sys.argv[2])
storms, configs = sys.argv[3].split(), sys.argv[4].split()
med = statistics.median
def rd(s, c, r):
    ops, wall, cpu, rec = (float(x) for x in open("%s/r.%s.%s.%d" % (d, s, c, r)).read().split())
    return ops, wall, cpu, rec
def span(v, fmt):
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med(v), min(v), max(v))
for s in storms:
    for c in configs:
        rows = [rd(s, c, r) for r in range(1, runs + 1)]
        rate = [o / w for o, w, _, _ in rows]
        us = [cpu / o * 1e6 for o, _, cpu, _ in rows]
        vs = ["%.3f" % ((rows[r][2] / rows[r][0]) / (x[2] / x[0]))
              for r in range(runs) for x in [rd(s, "none", r + 1)]] if "none" in configs else []
        vsv = [float(x) for x in vs]
        rec = [x / w * 100 for _, w, _, x in rows]
        rec_op = [x / o * 1e6 for o, _, _, x in rows]
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            s, c, span(rate, "%.0f"), span(us, "%.0f"),
            span(vsv, "%.3f") if vsv else "-",
            span(rec, "%.1f%%") if c != "none" else "-",
            span(rec_op, "%.1f") if c != "none" else "-"))
PY
