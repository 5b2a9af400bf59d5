#!/bin/bash
# The cpu label on request: burn pinned to CPU 1 (taskset) is recorded;
# attach --label-key cpu (and --by-cpu, and dump --ring --by-cpu) label
# every one of its samples cpu=1, burn pinned to CPU 0 alongside cpu=0;
# without the option no sample has a cpu label (it multiplies the rows).
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
command -v taskset >/dev/null || skip "needs taskset (util-linux)"
[ "$(nproc)" -ge 2 ] || skip "needs two CPUs"

start_daemon
taskset -c 1 "$BURN" 4 1 0 >"$T/one.out" &
ONE=$!
taskset -c 0 "$BURN" 4 1 0 >"$T/zero.out" &
ZERO=$!
wait "$ONE" "$ZERO"
P1=$(sed -n 's/^pid=\([0-9]*\).*/\1/p' "$T/one.out")
P0=$(sed -n 's/^pid=\([0-9]*\).*/\1/p' "$T/zero.out")
[ -n "$P1" ] && [ -n "$P0" ] || fail "burn printed no pid"

# cpu_of RAW PID: the cpu labels of PID's samples once it was burn, "cpu=N
# count" lines.
cpu_of() {
	python3 - "$1" "$2" <<'PY'
import re, sys
text = open(sys.argv[1]).read().split("Samples:", 1)[1]
count = {}
for s in re.split(r"\n(?=\s+\d+\s+\d+: )", text):
    m = re.match(r"\s+(\d+)\s+\d+:", s)
    if not m or "pid:[%s]" % sys.argv[2] not in s:
        continue
    # taskset itself, before it pinned itself and became burn, ran
    # wherever the scheduler put it: those samples are not burn's.
    if "comm:[taskset]" in s:
        continue
    c = re.search(r"\bcpu:\[(\d+)\]", s)
    key = "cpu=" + (c.group(1) if c else "none")
    count[key] = count.get(key, 0) + int(m.group(1))
for k, v in sorted(count.items()):
    print(k, v)
PY
}
mostly() { # COUNTS WANT: every "cpu=N count" line of COUNTS is WANT but one sample
	awk -v want="$2" '$1 == want { w += $2; next } { o += $2 } END { exit !(w > 0 && o <= 1) }' "$1"
}
check() { # PROFILE WHAT WANT1 WANT0
	"$GO" tool pprof -symbolize=none -raw "$1" >"$1.raw" 2>"$T/pprof.err" ||
		fail "$2: pprof -raw failed: $(cat "$T/pprof.err")"
	cpu_of "$1.raw" "$P1" >"$1.one"
	cpu_of "$1.raw" "$P0" >"$1.zero"
	echo "$2: pinned to 1: $(tr '\n' ' ' <"$1.one"); to 0: $(tr '\n' ' ' <"$1.zero")"
	# All of them but at most one: the sample that may land in the instant
	# of the exec, named burn by the recorder while taskset had not moved
	# it yet (a suite run had one of 78).
	mostly "$1.one" "$3" || fail "$2: burn on CPU 1 is labelled $(cat "$1.one")"
	mostly "$1.zero" "$4" || fail "$2: burn on CPU 0 is labelled $(cat "$1.zero")"
}

"$FLIGHTREC" attach --window 10s --pid "$P1,$P0" --label-key cpu -o "$T/key.pb.gz" ||
	fail "attach --label-key cpu failed"
check "$T/key.pb.gz" "--label-key cpu" cpu=1 cpu=0
"$FLIGHTREC" attach --window 10s --pid "$P1,$P0" --by-cpu -o "$T/by.pb.gz" ||
	fail "attach --by-cpu failed"
check "$T/by.pb.gz" "--by-cpu" cpu=1 cpu=0
"$FLIGHTREC" attach --window 10s --pid "$P1,$P0" -o "$T/plain.pb.gz" || fail "attach failed"
check "$T/plain.pb.gz" "default" cpu=none cpu=none
# Other keys are the program's own labels (labels.sh); one of them at most.
"$FLIGHTREC" attach --window 10s --label-key tenant,endpoint -o "$T/x.pb.gz" 2>"$T/err" &&
	fail "two application label keys were taken"
grep -q 'expected cpu or one application label key' "$T/err" || fail "unclear error: $(cat "$T/err")"

stop_daemon
"$FLIGHTREC" dump --ring "$RING" --window 30s --pid "$P1,$P0" --by-cpu -o "$T/ring.pb.gz" ||
	fail "dump --ring --by-cpu failed"
check "$T/ring.pb.gz" "dump --ring --by-cpu" cpu=1 cpu=0
echo "cpu_label: ok"
