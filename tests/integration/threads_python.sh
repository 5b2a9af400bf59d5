#!/bin/bash
# flightrec threads names the Python function each thread of a CPython
# process runs now, read from its memory without stopping it: for Debian's
# python3 and every CPython 3.11 to 3.13 pyenv has here, a script
# (tests/integration/py/threads_app.py) whose main thread is busy in hot_b
# under handle under the module, and whose Worker thread is blocked on a
# lock in waiter under Worker.run: --json gives each thread its "python"
# stack, innermost first with file and line, and the text shows it.
. "$(dirname "$0")/lib.sh"
need_root_perf
APP=$(dirname "$0")/py/threads_app.py
pythons=()
[ -x /usr/bin/python3 ] && pythons+=(/usr/bin/python3)
root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || true)}
for v in 3.11 3.12 3.13; do
	for p in "$root"/versions/"$v".*/bin/python"$v"; do
		[ -x "$p" ] && pythons+=("$p")
	done
done
[ ${#pythons[@]} -gt 0 ] || skip "needs a CPython 3.11 to 3.13 (Debian's python3, or pyenv's)"

# stacks_ok N PID PYTHON [quiet]: threads --json of PID has the main
# thread in hot_b under handle under the module, and a thread in waiter
# under Worker.run.
stacks_ok() {
	"$FLIGHTREC" threads --pid "$2" --json >"$T/threads.$1.json" 2>"$T/threads.err" ||
		{ [ -n "${4:-}" ] || cat "$T/threads.err"; return 1; }
	python3 - "$T/threads.$1.json" "$2" "$3" "${4:-}" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
py = {t["tid"]: t.get("python", "") for t in d["threads"] if t["pid"] == pid}
main = py.get(pid, "")
others = [s for tid, s in py.items() if tid != pid and s]
ok = re.match(r"hot_b \(threads_app\.py:2[4-7]\) < handle \(threads_app\.py:31\) < <module> \(threads_app\.py:36\)$", main) and \
    any(re.match(r"waiter \(threads_app\.py:14\) < Worker\.run \(threads_app\.py:19\)", s) for s in others)
if ok:
    print("%s: main %s; worker %s" % (sys.argv[3], main, [s for s in others if "waiter" in s][0][:80]))
elif not sys.argv[4]:
    print("%s: main %r; others %r" % (sys.argv[3], main, others), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

start_daemon
n=0
for py in "${pythons[@]}"; do
	n=$((n + 1))
	stop=$T/stop.$n
	"$py" "$APP" "$stop" >"$T/app.$n" 2>&1 &
	app=$!
	wait_until 10 "$py to start" grep -q '^pid=' "$T/app.$n"
	# The worker blocks and the main thread reaches hot_b at once, but a
	# loaded machine may run them late: asked again until they have.
	try_until 15 stacks_ok "$n" "$app" "$py" quiet || stacks_ok "$n" "$app" "$py" ||
		fail "$py: the Python stacks are not as expected"
	"$FLIGHTREC" threads --pid "$app" >"$T/threads.$n.txt" || fail "$py: threads (text) failed"
	# (a moment later than the JSON: the main thread may be in the
	# os.path.exists it calls, a Python frame of CPython 3.13's)
	grep -Eq '^    python (exists \(<frozen genericpath>:[0-9]+\) < )?hot_b \(threads_app\.py:' \
		"$T/threads.$n.txt" ||
		{ cat "$T/threads.$n.txt"; fail "$py: the text does not show the Python stack"; }
	touch "$stop"
	wait "$app" || fail "$py: the script failed"
done
daemon_alive || fail "the recorder died"
echo "ok: ${#pythons[@]} interpreters"
