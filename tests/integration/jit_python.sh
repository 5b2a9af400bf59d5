#!/bin/bash
# Python stacks unwound through CPython 3.12's perf trampolines: a program
# with a named call chain (jit/chain.py: main -> collect_rows -> score_row,
# a busy loop) runs under `python3.12 -X perf` while flightrecd records.
# Each Python call goes through a trampoline in anonymous memory, which has
# no CFI and, in 3.12, no frame pointer either (`sub $8, %rsp; call *%rcx`),
# called from libpython, which keeps none: the recorder steps it as a stub
# whose return address into libpython is at rsp + 8, and goes on with
# libpython's CFI. Of the samples in score_row, at least 95% have main's
# trampoline (py::main, named from the perf map) as a caller, and under 5%
# of the program's samples are marked truncated.
. "$(dirname "$0")/lib.sh"
need_root_perf
py=
root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || true)}
for p in $(command -v python3.12 || true) "$root"/versions/3.12.*/bin/python3.12; do
	[ -x "$p" ] && "$p" -c 'import sys; sys.exit(not hasattr(sys, "activate_stack_trampoline"))' \
		2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || skip "needs a CPython 3.12 with -X perf (python3.12, or pyenv's 3.12)"

start_daemon --hz 499
cp "$(dirname "$0")/jit/chain.py" "$T/chain.py"
"$py" -X perf "$T/chain.py" 40 >"$T/py.out" 2>&1 &
PY_PID=$!
jit_folded "$PY_PID" 3s 4 "$T/py.folded"
stop_daemon
check_jit_chain "$T/py.folded" 'score_row' 'py::main:'
echo PASS
