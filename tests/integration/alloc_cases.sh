#!/bin/bash
# The cases of allocation sampling beyond malloc and free, through the
# recorder, in alloc_cases (tests/integration/alloc_cases.c) run under
# LD_PRELOAD=libflightrec.so at a 64 KiB mean:
#  - realloc chains: each chain's last block (1 MiB) is the one kept, so
#    the heap holds about 1 MiB at case_realloc_chain, not the chains'
#    hundreds of MiB allocated;
#  - memalign, posix_memalign and aligned_alloc: 16 MiB kept at
#    case_memalign, within 25%;
#  - blocks allocated on one thread and freed on another: allocated at
#    case_cross_alloc (many MiB), next to nothing of them in the heap;
#  - fork and exec: the child's allocations are its own pid's (8 MiB at
#    case_fork_leak allocated), and after its exec its heap is the new
#    image's 16 MiB at case_exec_leak, the old image's blocks gone;
#  - a process that never loaded the library beside them has no
#    allocation samples and its cpu profile is whole.
. "$(dirname "$0")/lib.sh"
need_root_perf
LIB=$BUILD/lib/libflightrec.so
CASES=$BUILD/tests/integration/alloc_cases
PPROF_PY=$(dirname "$0")/pprof_samples.py
[ -x "$CASES" ] || fail "alloc_cases was not built"

cat >"$T/config.json" <<JSON
{"sessions": [{"name": "mem", "events": [{"event": "cpu", "hz": 99},
                                         {"event": "alloc", "mean": "64KiB"}]}]}
JSON
start_daemon --config "$T/config.json"
"$BURN" 30 >"$T/burn.out" 2>&1 &
BURNER=$!
START=$(date +%s)
# The work waits until the recorder reads the process's ring: what a
# process allocates before that is sampled at the library's own mean, and
# a burst can fill its ring before anyone reads it. A ring of 16 MiB
# (rather than 2) holds the realloc chains' bursts of samples at this
# mean between two drains. The child and the program it executes start
# at the session's mean too (FLIGHTREC_ALLOC_MEAN): they allocate before
# the recorder reads their new rings.
ALLOC_CASES_GO=$T/go FLIGHTREC_ALLOC_MEAN=65536 FLIGHTREC_ALLOC_RING=$((16 << 20)) LD_PRELOAD=$LIB "$CASES" 4 >"$T/cases.out" 2>&1 &
CASES_PID=$!
wait_until 10 "the ring of pid $CASES_PID read" \
	"grep -q 'allocation samples of pid $CASES_PID: its ring of' '$T/daemon.log'"
touch "$T/go"
wait_until 40 "alloc_cases to fork and exec" "grep -q '^exec ready' '$T/cases.out'"
CHILD=$(sed -n 's/^child //p' "$T/cases.out")
[ -n "$CHILD" ] && grep -q "^exec ready $CHILD\$" "$T/cases.out" ||
	fail "the child's pid: $(cat "$T/cases.out")"
sleep 2
wait_tables_built
win=$(($(date +%s) - START + 5))s

# bytes FILE TYPE FUNC...: MiB of sample type TYPE on samples holding
# each function, then the total.
bytes() {
	python3 "$PPROF_PY" sum "$@" |
		awk '{ for (i = 1; i <= NF; i++) printf "%.2f%s", $i / 1048576, i < NF ? " " : "\n" }'
}
profile() { # EVENT PID OUT [ARGS...]
	local ev=$1 pid=$2 out=$3
	shift 3
	"$FLIGHTREC" attach --event "$ev" --window "$win" --pid "$pid" -o "$out" "$@" 2>"$T/err" ||
		fail "attach --event $ev --pid $pid: $(cat "$T/err")"
}

profile alloc "$CASES_PID" "$T/alloc.pb.gz"
"$FLIGHTREC" status | grep '^Allocation sampling'
read -r chain aligned cross total < <(bytes "$T/alloc.pb.gz" alloc_space case_realloc_chain case_memalign case_cross_alloc)
echo "parent allocated (MiB): realloc chains $chain, aligned $aligned, cross-thread $cross, all $total"
profile heap "$CASES_PID" "$T/heap.pb.gz" 
read -r hchain haligned hcross htotal < <(bytes "$T/heap.pb.gz" inuse_space case_realloc_chain case_memalign case_cross_alloc)
echo "parent in use (MiB): realloc chains $hchain, aligned $haligned, cross-thread $hcross, all $htotal"
python3 - "$chain" "$aligned" "$cross" "$hchain" "$haligned" "$hcross" <<'PY' || fail "the parent's profiles"
import sys
chain, aligned, cross, hchain, haligned, hcross = map(float, sys.argv[1:])
assert chain > 50, "realloc chains allocated %.1f MiB" % chain
assert 0.5 <= hchain <= 2, "realloc chains in use %.2f MiB, want 1" % hchain
assert abs(haligned - 16) <= 4, "aligned blocks in use %.2f MiB, want 16" % haligned
assert cross > 16, "cross-thread blocks allocated %.1f MiB" % cross
assert hcross <= 0.1 * cross and hcross <= 4, "cross-thread blocks in use %.2f of %.1f MiB" % (hcross, cross)
PY

profile alloc "$CHILD" "$T/child_alloc.pb.gz"
read -r fork exec_ _ < <(bytes "$T/child_alloc.pb.gz" alloc_space case_fork_leak case_exec_leak)
profile heap "$CHILD" "$T/child_heap.pb.gz"
read -r hfork hexec _ < <(bytes "$T/child_heap.pb.gz" inuse_space case_fork_leak case_exec_leak)
echo "child allocated (MiB): fork $fork, exec $exec_; in use: fork $hfork, exec $hexec"
python3 - "$fork" "$exec_" "$hfork" "$hexec" <<'PY' || fail "the child's profiles"
import sys
fork, exec_, hfork, hexec = map(float, sys.argv[1:])
assert abs(fork - 8) <= 2.5, "the child allocated %.2f MiB at case_fork_leak, want 8" % fork
assert abs(exec_ - 16) <= 4, "the exec'd image allocated %.2f MiB, want 16" % exec_
assert hfork == 0, "the old image's blocks still in use after exec: %.2f MiB" % hfork
assert abs(hexec - 16) <= 4, "the exec'd image has %.2f MiB in use, want 16" % hexec
PY

# The burner never loaded the library: no allocation samples, and its
# cpu samples are there.
"$FLIGHTREC" attach --event alloc --window "$win" --pid "$BURNER" -o "$T/burn.pb.gz" 2>"$T/err"
[ -s "$T/burn.pb.gz" ] && n=$(python3 "$PPROF_PY" jsonl "$T/burn.pb.gz" | wc -l) || n=0
[ "$n" = 0 ] || fail "a process without the library has $n allocation samples"
profile cpu "$BURNER" "$T/burn_cpu.pb.gz"
python3 "$PPROF_PY" jsonl "$T/burn_cpu.pb.gz" | grep -q fr_burn_heavy ||
	fail "the burner's cpu profile has no fr_burn_heavy"
kill "$CASES_PID" "$BURNER" 2>/dev/null
echo "PASS"
