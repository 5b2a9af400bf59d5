#!/bin/bash
# Allocation and heap profiles of a program that opted in with
# LD_PRELOAD=libflightrec.so and nothing else (alloc_sites: -O2, no frame
# pointers, unwound with CFI). Its three sites: site_small (64-byte
# blocks) and site_big (64 KiB blocks), allocated and freed 25/75 by
# bytes, and site_leak (4 KiB blocks, never freed, 48 MiB by the end).
#  - attach --event alloc splits small/big 25/75 by alloc_space within
#    5 points;
#  - attach --event heap at the end puts >= 90% of inuse_space on
#    site_leak and estimates its 48 MiB within 25%;
#  - --diff over the run gives the leak's growth, and nothing to the
#    sites whose blocks were freed;
#  - after kill -9 of the recorder, dump --ring --event heap of the ring
#    file gives the same heap;
#  - a process beside it that did not load the library has no allocation
#    samples, and its cpu profile is whole.
# The session samples at a 64 KiB mean (about 770 samples of the leak: a
# 25% error is 7 standard deviations away).
. "$(dirname "$0")/lib.sh"
need_root_perf
LIB=$BUILD/lib/libflightrec.so
SITES=$BUILD/tests/integration/alloc_sites
PPROF_PY=$(dirname "$0")/pprof_samples.py
[ -x "$SITES" ] || fail "alloc_sites was not built"
[ -e "$LIB" ] || fail "libflightrec.so was not built"

cat >"$T/config.json" <<JSON
{"sessions": [{"name": "mem", "events": [{"event": "cpu", "hz": 99},
                                         {"event": "alloc", "mean": "64KiB"}]}]}
JSON
start_daemon --config "$T/config.json"
"$BURN" 30 >/dev/null 2>&1 &
BURNER=$!

LD_PRELOAD=$LIB "$SITES" 8 >"$T/sites.out" 2>&1 &
SITES_PID=$!
try_until 10 "grep -q ready '$T/sites.out'"
START=$(date +%s)
wait_until 40 "alloc_sites to finish its work" "grep -q done '$T/sites.out'"
mapped=$(status_value 'd["alloc"]["processes"]')
[ "${mapped:-0}" -ge 1 ] || fail "status maps no allocation ring: $("$FLIGHTREC" status)"
# Its last records drained and a snapshot or more behind them.
sleep 2
wait_tables_built
win=$(($(date +%s) - START + 5))s

# share FILE TYPE FUNC...: each function's share (%) of sample type
# TYPE's total, by the samples whose frames hold it; then the total.
share() {
	python3 "$PPROF_PY" sum "$@" |
		awk '{ for (i = 1; i < NF; i++) printf "%.2f ", $NF ? 100 * $i / $NF : 0; print $NF }'
}

"$FLIGHTREC" attach --event alloc --window "$win" --pid "$SITES_PID" -o "$T/alloc.pb.gz" \
	2>"$T/err" || fail "attach --event alloc: $(cat "$T/err")"
read -r small big leak total < <(share "$T/alloc.pb.gz" alloc_space site_small site_big site_leak)
echo "alloc_space: small $small% big $big% leak $leak% of $total bytes"
python3 - "$small" "$big" <<'PY' || fail "alloc: small/big is $small/$big, want 25/75 within 5 points"
import sys
s, b = map(float, sys.argv[1:])
assert s + b > 0
assert abs(100 * s / (s + b) - 25) <= 5, (s, b)
PY

"$FLIGHTREC" attach --event heap --window 1s --pid "$SITES_PID" -o "$T/heap.pb.gz" \
	2>"$T/err" || fail "attach --event heap: $(cat "$T/err")"
read -r leak small big total < <(share "$T/heap.pb.gz" inuse_space site_leak site_small site_big)
echo "inuse_space: leak $leak% small $small% big $big% of $total bytes"
python3 - "$leak" "$total" <<'PY' || fail "heap: site_leak has $leak% of $total bytes in use, want >= 90% and 48 MiB within 25%"
import sys
share, total = float(sys.argv[1]), int(sys.argv[2])
est = total * share / 100
assert share >= 90, share
assert abs(est - (48 << 20)) <= 0.25 * (48 << 20), est / 2**20
PY

# The growth over the run: the leak's, and the freed sites' net nothing.
"$FLIGHTREC" attach --event heap --diff --window "$win" --pid "$SITES_PID" -o "$T/diff.pb.gz" \
	2>"$T/err" || fail "attach --event heap --diff: $(cat "$T/err")"
read -r dleak dtotal < <(share "$T/diff.pb.gz" inuse_space site_leak)
echo "growth: leak $dleak% of $dtotal bytes"
python3 - "$dleak" "$dtotal" <<'PY' || fail "diff: the growth is $dtotal bytes, $dleak% site_leak's"
import sys
share, total = float(sys.argv[1]), int(sys.argv[2])
assert share >= 90, share
assert abs(total - (48 << 20)) <= 0.3 * (48 << 20), total / 2**20
PY

# The process that did not opt in: no allocation samples.
"$FLIGHTREC" attach --event alloc --window "$win" --pid "$BURNER" -o "$T/burn.pb.gz" 2>"$T/err"
rc=$?
if [ $rc = 0 ]; then
	n=$(python3 "$PPROF_PY" jsonl "$T/burn.pb.gz" | wc -l)
	[ "$n" = 0 ] || fail "a process without the library has $n allocation samples"
fi

# After kill -9 of the recorder, the ring file alone gives the same heap.
kill9_daemon
"$FLIGHTREC" dump --ring "$RING" --event heap --window 1s --pid "$SITES_PID" \
	-o "$T/heap9.pb.gz" 2>"$T/err" || fail "dump --ring --event heap: $(cat "$T/err")"
read -r leak9 total9 < <(share "$T/heap9.pb.gz" inuse_space site_leak)
echo "after kill -9: leak $leak9% of $total9 bytes"
python3 - "$leak" "$total" "$leak9" "$total9" <<'PY' || fail "the ring's heap ($leak9% of $total9) is not the recorder's ($leak% of $total)"
import sys
l, t, l9, t9 = map(float, sys.argv[1:])
assert l9 >= 90 and abs(t9 - t) <= 0.02 * t, (l, t, l9, t9)
PY
kill "$SITES_PID" "$BURNER" 2>/dev/null
echo "PASS"
