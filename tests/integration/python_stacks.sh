#!/bin/bash
# Python frames on the stacks of CPython processes nobody restarted or
# told of flightrec: Debian's python3 (-O2, no frame pointers, stripped
# to its dynamic symbols) and every CPython 3.10 to 3.13 pyenv has here
# each run tests/integration/py/stacks_app.py at once, under the embedded
# default configuration at 999 Hz. After they all exited (so the names
# come from what the recorder kept), for each one's cpu profile:
#  - hot_a has 25% of the samples in hot_a or hot_b, within 3 points
#    (the loops' iterations split 2500/7500);
#  - handle, main and <module> are on >= 90% of those samples, in that
#    order from hot_X to the root, and no _PyEval_EvalFrameDefault frame
#    is left between hot_X and <module> (each was replaced by the Python
#    frames it ran);
#  - hot_b's function is named with its file and first line, its samples
#    on the loop's two lines;
#  - sort_key, called back by sorted() from C, is above a native frame
#    which is above sorter;
#  - the asyncio task's running frame: spin_step under spin_task under
#    the event loop's run_until_complete;
# and the offcpu profile has the thread blocked in socket.recv under
# recv_wait under receiver for most of the window, both while it is still
# blocked (its open wait) and after its wait ended.
. "$(dirname "$0")/lib.sh"
need_root_perf
APP=$(dirname "$0")/py/stacks_app.py
pythons=()
[ -x /usr/bin/python3 ] && pythons+=(/usr/bin/python3)
root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || true)}
for v in 3.10 3.11 3.12 3.13; do
	for p in "$root"/versions/"$v".*/bin/python"$v"; do
		[ -x "$p" ] && pythons+=("$p")
	done
done
[ ${#pythons[@]} -gt 0 ] || skip "needs a CPython 3.10 to 3.13 (Debian's python3, or pyenv's)"

start_daemon --hz 999
stop=$T/stop
pids=()
jobs_=()
n=0
for py in "${pythons[@]}"; do
	n=$((n + 1))
	"$py" "$APP" "$stop" >"$T/app.$n" 2>&1 &
	jobs_+=($!)
	try_until 10 "grep -qs '^pid=' '$T/app.$n'"
	pid=$(sed -n 's/^pid=//p' "$T/app.$n")
	[ -n "$pid" ] || fail "$py did not start: $(cat "$T/app.$n")"
	pids+=("$pid")
done
START=$(date +%s)
# Each is read from its first sealed chunk on: status says so.
py_read() { status_value 'd["python"]["processes"]'; }
try_until 20 '[ "$(py_read)" -ge ${#pids[@]} ] 2>/dev/null'
[ "$(py_read)" -ge ${#pids[@]} ] ||
	fail "status does not count ${#pids[@]} Python processes read: $("$FLIGHTREC" status)"
sleep 8
# While the receiver is still blocked: its open wait (the blocked
# threads' reader's stack) has its Python caller too.
for pid in "${pids[@]}"; do
	"$FLIGHTREC" attach --window 4s --pid "$pid" --event offcpu -o "$T/open.$pid.pb.gz" \
		2>"$T/attach.err" || fail "attach of pid $pid's open waits: $(cat "$T/attach.err")"
	python3 - "$T/open.$pid.pb.gz" "$(dirname "$0")" <<'PY' ||
import sys
sys.path.insert(0, sys.argv[2])
from pprof_samples import samples
blocked = sum(s["values"][-1] for s in samples(sys.argv[1])
              if "recv_wait" in s["frames"] and "receiver" in s["frames"])
sys.exit(0 if blocked >= 2e9 else 1)
PY
		fail "pid $pid: the thread blocked in recv now does not show recv_wait < receiver"
done
touch "$stop"
wait "${jobs_[@]}"
sleep 1.5 # the chunks of their last moments sealed
WINDOW=$(($(date +%s) - START + 5))

i=0
for py in "${pythons[@]}"; do
	pid=${pids[$i]}
	i=$((i + 1))
	"$FLIGHTREC" attach --window "${WINDOW}s" --pid "$pid" -o "$T/cpu.$pid.pb.gz" 2>"$T/attach.err" ||
		fail "attach --pid $pid: $(cat "$T/attach.err")"
	"$FLIGHTREC" attach --window "${WINDOW}s" --pid "$pid" --event offcpu \
		-o "$T/off.$pid.pb.gz" 2>"$T/attach.err" ||
		fail "attach --event offcpu --pid $pid: $(cat "$T/attach.err")"
	python3 - "$T/cpu.$pid.pb.gz" "$T/off.$pid.pb.gz" "$(dirname "$0")" "$py" "$APP" <<'PY' ||
import sys
sys.path.insert(0, sys.argv[3])
from pprof_samples import samples
py = sys.argv[4]
B_DEF = [i for i, l in enumerate(open(sys.argv[5]), 1) if l.startswith("def hot_b")][0]
hot = {"hot_a": 0, "hot_b": 0}
spin_n = spin_ok = 0
under = 0
order_bad = []
b_lines = {}
b_named = None
sort_n = sort_ok = 0
for s in samples(sys.argv[1]):
    f = s["frames"]
    v = s["values"][0]
    leaf = next((x for x in f if x in hot), None)
    if leaf:
        hot[leaf] += v
        try:
            i = f.index(leaf)
            h = f.index("handle", i)
            m = f.index("main", h)
            mod = f.index("<module>", m)
            if "_PyEval_EvalFrameDefault" not in f[i:mod]:
                under += v
            elif len(order_bad) < 3:
                order_bad.append(f)
        except ValueError:
            if len(order_bad) < 3:
                order_bad.append(f)
        if leaf == "hot_b":
            for name, fname, line, start in s["lines"]:
                if name == "hot_b":
                    b_named = (fname, start)
                    b_lines[line] = b_lines.get(line, 0) + v
    if "spin_step" in f:
        spin_n += v
        i = f.index("spin_step")
        # 3.10 names a function, 3.11+ its qualified name
        if "spin_task" in f[i:] and any(x.endswith("run_until_complete")
                                        for x in f[f.index("spin_task", i):]):
            spin_ok += v
    if "sort_key" in f:
        sort_n += v
        i = f.index("sort_key")
        lines = s["lines"]
        native = [j for j in range(i + 1, len(f)) if not lines[j][1].endswith(".py")]
        if "sorter" in f[i:] and native and native[0] < f.index("sorter", i):
            sort_ok += v
total = hot["hot_a"] + hot["hot_b"]
err = []
if total < 300:
    err.append("only %d samples in hot_a or hot_b" % total)
else:
    share = 100.0 * hot["hot_a"] / total
    if abs(share - 25) > 3:
        err.append("hot_a has %.1f%% of hot_a+hot_b, not 25%% +- 3" % share)
    if under < 0.9 * total:
        err.append("handle < main < <module> on %d of %d samples: %s" % (under, total, order_bad))
    if not b_named or not b_named[0].endswith("stacks_app.py") or b_named[1] != B_DEF:
        err.append("hot_b named %s, not stacks_app.py from line %d" % (b_named, B_DEF))
    on_loop = b_lines.get(B_DEF + 2, 0) + b_lines.get(B_DEF + 3, 0)
    if on_loop < 0.9 * sum(b_lines.values()):
        err.append("hot_b's lines %s, not %d-%d" % (b_lines, B_DEF + 2, B_DEF + 3))
if spin_n < 10 or spin_ok < 0.9 * spin_n:
    err.append("spin_step < spin_task < run_until_complete on %d of %d samples" % (spin_ok, spin_n))
if sort_n < 10 or sort_ok < 0.9 * sort_n:
    err.append("sort_key above a native frame above sorter on %d of %d samples" % (sort_ok, sort_n))
recv = total_off = 0
for s in samples(sys.argv[2]):
    f = s["frames"]
    v = s["values"][-1]
    if "recv_wait" in f and "receiver" in f[f.index("recv_wait"):]:
        recv += v
    total_off += v
if recv < 5e9:
    err.append("%.1f s off-CPU under recv_wait < receiver, not the window's most" % (recv / 1e9))
if err:
    print("%s: %s" % (py, "; ".join(err)), file=sys.stderr)
    sys.exit(1)
print("%s: hot_a %.1f%% of %d; handle<main<module %.0f%%; hot_b at %s; sorted %d/%d; asyncio %d/%d; recv %.1f s" % (
    py, 100.0 * hot["hot_a"] / total, total, 100.0 * under / total, sorted(b_lines.items())[:3],
    sort_ok, sort_n, spin_ok, spin_n, recv / 1e9))
PY
		fail "the Python frames of $py (pid $pid) are not right (status: python $(status_value 'd["python"]'))"
done
daemon_alive || fail "the recorder died"
echo PASS
