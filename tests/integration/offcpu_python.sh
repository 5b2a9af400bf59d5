#!/bin/bash
# Off-CPU stacks of a real runtime built as distributions build it:
# Debian's python3 (-O2, no frame pointers, stripped to its dynamic
# symbols, unwound by its .eh_frame). A script's main thread sleeps in
# time.sleep() in a loop and a second thread waits on a threading.Event;
# both block in the kernel under libc's wrappers, several frames below
# the interpreter's loop. With the embedded default configuration:
#  - at least 90% of the process's off-CPU time has the interpreter in
#    its stack (the wait was unwound through libc and CPython's C
#    functions into the interpreter): its _PyEval_EvalFrameDefault, or,
#    once the recorder reads the process's Python frames (from its first
#    second on), the Python functions that frame was running;
#  - the main thread's waits reach Py_BytesMain, the program's entry.
. "$(dirname "$0")/lib.sh"
need_root_perf
PY=/usr/bin/python3.11
[ -x "$PY" ] || skip "no $PY (Debian's python3.11)"
nm -D "$PY" 2>/dev/null | grep -qw _PyEval_EvalFrameDefault ||
	skip "$PY does not export _PyEval_EvalFrameDefault"

start_daemon

cat >"$T/waits.py" <<'PY'
import os, sys, threading, time
stop = threading.Event()
def waiter():
    stop.wait()
threading.Thread(target=waiter, name="waiter").start()
print("pid=%d" % os.getpid(), flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    time.sleep(0.05)
stop.set()
PY

run() { # NAME SECONDS
	"$PY" "$T/waits.py" "$2" >"$T/$1.out" || fail "python failed"
	pid=$(sed -n 's/^pid=//p' "$T/$1.out")
	"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/$1.pb.gz" \
		2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
}

# A first, short run builds the CFI tables of python and libc.
run cold 0.3
wait_tables_built
run warm 3

python3 - "$T/warm.pb.gz" "$(dirname "$0")" <<'PY' || fail "python's waits are not unwound into the interpreter"
import sys
sys.path.insert(0, sys.argv[2])
from pprof_samples import samples
total = interp = main = 0
stacks = {}
for s in samples(sys.argv[1]):
    v = s["values"][-1]
    total += v
    if "_PyEval_EvalFrameDefault" in s["frames"] or any(
            l[1].endswith(".py") for l in s["lines"]):
        interp += v
    if "Py_BytesMain" in s["frames"]:
        main += v
    k = " <- ".join(s["frames"][:8])
    stacks[k] = stacks.get(k, 0) + v
for k, v in sorted(stacks.items(), key=lambda x: -x[1])[:6]:
    print("%12d ns  %s" % (v, k))
print("off-CPU %d ns: %.1f%% through the interpreter, %d ns from Py_BytesMain"
      % (total, 100.0 * interp / max(total, 1), main))
assert total >= 2_000_000_000, "only %d ns off-CPU" % total
assert interp >= 0.9 * total
assert main >= 0.5 * 3_000_000_000 * 0.9, "main thread's waits do not reach Py_BytesMain"
PY
echo "ok"
