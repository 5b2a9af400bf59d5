#!/bin/bash
# A process that passes for CPython cannot crash or stall the recorder or
# put its lies in other processes' stacks: tests/integration/py_forged,
# run as "python3.11", defines _PyRuntime, Py_Version and
# _PyEval_EvalFrameDefault (where it burns CPU), its thread list loops,
# its main thread's frames loop (A -> B -> A), their code objects are a
# str of 2^60 characters, an unmapped address and a struct pointing into
# itself, a second thread's frame pointer is misaligned, and a second
# copy swaps its frame pointer with NULL all the time. Beside them Debian's
# python3 runs tests/integration/py/stacks_app.py. Proven:
#  - the recorder stays up and answers, and found all three as CPython;
#  - a forged process's samples hold at most the 96 Python frames a walk
#    sends (the loop is cut), none named from the real process's code;
#  - the real process's samples still name hot_a/hot_b under handle, and
#    none of its stacks hold a forged process's frames;
#  - attach of the forged processes' window succeeds (the names that do
#    not read are "[python] 0x..." or "<bad-str>", never a crash).
. "$(dirname "$0")/lib.sh"
need_root_perf
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no $PY"

start_daemon --hz 499
cp "$BUILD/tests/integration/py_forged" "$T/python3.11" || fail "no py_forged built"
"$T/python3.11" 6 >"$T/forged.out" &
F1=$!
"$T/python3.11" 6 --swap >"$T/forged2.out" &
F2=$!
"$PY" "$(dirname "$0")/py/stacks_app.py" "$T/stop" >"$T/app.out" &
A=$!
try_until 10 'grep -qs ^ready "$T/forged.out" && grep -qs ^ready "$T/forged2.out" && grep -qs ^pid= "$T/app.out"'
START=$(date +%s)
wait $F1 $F2
touch "$T/stop"
wait $A
sleep 1.5
daemon_alive || fail "the recorder died of the forged interpreters"
WINDOW=$(($(date +%s) - START + 3))
for p in $F1 $F2 $A; do
	"$FLIGHTREC" attach --window "${WINDOW}s" --pid "$p" -o "$T/cpu.$p.pb.gz" 2>"$T/attach.err" ||
		fail "attach --pid $p: $(cat "$T/attach.err")"
done
grep -q "Python frames of pid $F1 read" "$T/daemon.log" ||
	fail "the forged process was not taken for CPython: $(grep -i python "$T/daemon.log")"
python3 - "$T/cpu.$F1.pb.gz" "$T/cpu.$F2.pb.gz" "$T/cpu.$A.pb.gz" "$(dirname "$0")" <<'PY' ||
import sys
sys.path.insert(0, sys.argv[4])
from pprof_samples import samples
real = {"hot_a", "hot_b", "handle", "<module>", "sorter", "sort_key", "recv_wait", "receiver"}
err = []
for path in sys.argv[1:3]:
    n = deep = 0
    for s in samples(path):
        if set(s["frames"]) & real:
            err.append("a forged process's sample names %s" % (set(s["frames"]) & real))
            break
        n += s["values"][0]
        pyn = sum(1 for f in s["frames"] if f.startswith("[python]") or f in ("<bad-str>", "<unreadable>"))
        if pyn > 96:
            err.append("%d Python frames in one sample" % pyn)
            break
        deep += s["values"][0] if pyn else 0
    print("%s: %d samples, %d with forged Python frames" % (path.split("/")[-1], n, deep))
    if n < 100:
        err.append("only %d samples of %s" % (n, path))
hot = under = 0
for s in samples(sys.argv[3]):
    f = s["frames"]
    if "hot_a" in f or "hot_b" in f:
        hot += s["values"][0]
        if "handle" in f and "<module>" in f:
            under += s["values"][0]
if hot < 20 or under < 0.9 * hot:
    err.append("the real process: %d samples in hot_a/hot_b, %d under handle and <module>" % (hot, under))
print("real: %d samples in hot_a/hot_b, %d under handle and <module>" % (hot, under))
if err:
    print("; ".join(err), file=sys.stderr)
    sys.exit(1)
PY
	fail "the forged interpreters' lies went where they should not"
# A release the recorder does not know (pyenv's 3.9, when there) is said,
# in its profile's comments and in status, and its stacks stay native.
root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || true)}
for old in "$root"/versions/3.9.*/bin/python3.9; do
	[ -x "$old" ] || continue
	"$old" -c 'import time
t = time.time() + 3
while time.time() < t: pass' &
	O=$!
	wait $O
	sleep 1.5
	"$FLIGHTREC" attach --window 10s --pid "$O" -o "$T/old.pb.gz" 2>"$T/attach.err" ||
		fail "attach --pid $O: $(cat "$T/attach.err")"
	python3 - "$T/old.pb.gz" "$O" <<'PY' || fail "the 3.9 process's profile does not say its frames were not read"
import gzip, sys
raw = gzip.decompress(open(sys.argv[1], "rb").read())
want = b"python: pid %s (CPython 3.9" % sys.argv[2].encode()
if want not in raw or b"release 3.9" not in raw:
    sys.exit(1)
PY
	"$FLIGHTREC" status --json >"$T/status.json"
	python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["python"]
sys.exit(not (p["refused"] >= 1 and "3.9" in p.get("last_refused", "")))' "$T/status.json" ||
		fail "status does not say the 3.9 process was refused: $(cat "$T/status.json")"
	break
done
"$FLIGHTREC" status >"$T/status.txt" || fail "status did not answer"
grep -q "Python frames: .* CPython processes read now, .* samples given" "$T/status.txt" ||
	fail "status does not count the Python processes: $(cat "$T/status.txt")"
echo PASS
