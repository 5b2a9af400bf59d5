#!/bin/bash
# The black box records every exec, process exit and crash, whatever the
# sessions ask (a recorder with no session at all here):
#  - crash_prog segv (built -O2 without frame pointers) burns 2 s in
#    before_crash, then main calls crash_site, which writes to 0x10: a
#    crash event of its pid with signal SIGSEGV, code SEGV_MAPERR, addr
#    0x10, and a stack with crash_site under main (the user stack unwound
#    with CFI from the copy taken at the signal; the kernel's from
#    get_signal on, no frame of the tracing's own); its exit with signal
#    SIGSEGV, a lifetime of at least 2 s and CPU time;
#  - children that exit with 0, 3 and 42: exit events with exit_code 0, 3,
#    42; one killed by SIGKILL: signal SIGKILL and no crash (SIGKILL dumps
#    no core); one that calls abort(): a crash with SIGABRT and code
#    SI_TKILL, and an exit with signal SIGABRT and core=1 exactly when the
#    kernel says it dumped core (WCOREDUMP: allowed only where a core
#    lands in this test's directory);
#  - who sent the signal a process died of: the SIGKILL child and the
#    abort child their own pid (they signalled themselves), sleep(1)
#    killed by kill(1) with SIGTERM that kill process (comm kill, uid 0),
#    labels_demo this script (its kill builtin); no sender for a fault
#    or an exit; the timeline's mark of sleep's death names kill too;
#  - a child whose leader leaves by pthread_exit and whose last thread
#    by the exit system call with 7: the exit_code waitpid says (the
#    process's, as the kernel keeps it for its leader);
#  - exec events of each child, with the path executed and its parent;
#  - labels_demo (application labels slot and par, changing every 10 ms)
#    sent SIGSEGV by kill(1): a crash with code SI_USER and no address (a
#    signal someone sent carries its sender, not a fault address), on the
#    thread's own labels at that moment (slot, par) beside its fields;
#  - status lists exec, exit and crash recording, their samples, none lost;
#    with FLIGHTREC_BLACKBOX=off, none recorded and status says why.
# The events are read from the ring after kill -9 of the recorder. No
# core file is left anywhere: RLIMIT_CORE is 0 but for the abort child,
# and that one only with a core_pattern relative to its working directory
# (in $T, removed at the end).
#
# The events are read with `flightrec dump --ring --events --json` (one
# object a line: type, pid, tid, comm, signal, code, addr, exit_code,
# core, cpu_ns, lifetime_ns, path, ppid, stack innermost first, labels).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
PROG=$BUILD/tests/integration/crash_prog
[ -x "$PROG" ] || fail "crash_prog was not built"

start_daemon
# Listed once the program is loaded (or failed), moments after start.
crash_state() { status_value '[e["state"] for e in d["events"] if e["event"] == "crash"][0]'; }
wait_until 20 "the black box's program loaded" '[ -n "$(crash_state)" ]'
state=$(crash_state)
[ "$state" = recording ] ||
	skip "the recorder cannot record crashes here: $(status_value '[e.get("error") for e in d["events"] if e["event"] == "crash"]')"
wait_seals 1

# A core lands in the abort child's working directory only with a
# relative core_pattern; elsewhere (a pipe, an absolute path) none is
# allowed at all.
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
CORE_OK=0
case "$pattern" in
'|'* | */* | '') ;;
*) CORE_OK=1 ;;
esac
mkdir "$T/cores"

python3 - "$PROG" "$T/cores" "$CORE_OK" >"$T/children.jsonl" <<'PY' || fail "running the children failed"
import json, os, resource, subprocess, sys
prog, cores, core_ok = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def run(mode, *args, core=False):
    lim = resource.RLIM_INFINITY if core else 0
    p = subprocess.Popen([prog, mode, *args], cwd=cores, stdout=subprocess.PIPE,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (lim, lim)))
    p.stdout.read()
    _, st = os.waitpid(p.pid, 0)
    r = {"mode": mode if not args else mode + " " + " ".join(args), "pid": p.pid,
         "ppid": os.getpid()}
    if os.WIFEXITED(st):
        r["exit_code"] = os.WEXITSTATUS(st)
    else:
        r["signal"] = os.WTERMSIG(st)
        r["core"] = bool(os.WCOREDUMP(st))
    print(json.dumps(r), flush=True)
run("segv")
for code in ("0", "3", "42"):
    run("exit", code)
run("kill")
run("leader_exit")
run("abort", core=core_ok)
PY
cat "$T/children.jsonl"

# A labelled process, killed by a SIGSEGV someone sent.
(cd "$T/cores" && ulimit -c 0 && exec "$BUILD/tests/integration/labels_demo" slots 60) \
	>"$T/demo.out" 2>&1 &
DEMO_PID=$!
wait_lines "$T/demo.out" ready
wait_labelled "$DEMO_PID" slot
kill -SEGV "$DEMO_PID"
wait "$DEMO_PID"
[ $? = 139 ] || fail "labels_demo did not die of SIGSEGV"
rm -f "$T"/cores/core*

# A process another one killed: sleep, sent SIGTERM by kill(1).
sleep 300 &
SLEEP_PID=$!
/bin/kill -TERM "$SLEEP_PID"
wait "$SLEEP_PID"
[ $? = 143 ] || fail "sleep did not die of SIGTERM"

# A real runtime crashing in code it loaded a moment before: Debian's
# CPython (-O2, no frame pointers) faults in ctypes' string_at, a library
# dlopen'ed just then, whose unwind table is not built when the crash is
# read. The crash waits for it (at most 2 s): its stack is whole, through
# libffi and the eval loop down to Py_BytesMain, never "[truncated:
# unwind table not ready]" (as it was before the wait).
PY_CRASH=
if [ -x /usr/bin/python3 ]; then
	(cd "$T/cores" && ulimit -c 0 && exec /usr/bin/python3 -c 'import ctypes; ctypes.string_at(16)') \
		>/dev/null 2>&1 &
	PY_CRASH=$!
	wait "$PY_CRASH"
	[ $? = 139 ] || fail "python3's ctypes.string_at(16) did not die of SIGSEGV"
fi
# Their events sealed into chunks, then the recorder killed (-9): what it
# stored is all there is, as after a crash of the host or the recorder.
wait_seals 2
kill9_daemon

# events: the black box's events of the ring, read with no recorder
# (`flightrec dump --ring --events --json`, the JSON lines `flightrec
# events --json` writes), the stack reduced to its function names and the
# core flag to "1" for the checks below.
events() {
	"$FLIGHTREC" dump --ring "$RING" --events --type exec,exit,crash --window 10m --json \
		>"$T/raw.jsonl" 2>"$T/err" || fail "dump --ring --events: $(cat "$T/err")"
	python3 - "$T/raw.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    o["stack"] = [f["function"] for f in o.get("stack") or []]
    if o.get("core"):
        o["core"] = "1"
    else:
        o.pop("core", None)
    o.setdefault("labels", {})
    print(json.dumps(o))
PY
}
events >"$T/events.jsonl"
grep -c . "$T/events.jsonl" | sed 's/^/events read: /'

python3 - "$T/events.jsonl" "$SLEEP_PID" "$DEMO_PID" "$$" <<'PY' || fail "the senders of the signals: $(grep -E "\"type\": \"exit\".*\"pid\": ($SLEEP_PID|$DEMO_PID)," "$T/events.jsonl")"
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
sleeper, demo, me = map(int, sys.argv[2:5])
x = [e for e in evs if e["type"] == "exit" and e["pid"] == sleeper]
assert len(x) == 1 and x[0]["signal"] == "SIGTERM", x
s = x[0].get("sender")
assert s and s["kind"] == "process" and s["comm"] == "kill" and s["uid"] == 0, x[0]
assert s["pid"] not in (sleeper, me), x[0]
x = [e for e in evs if e["type"] == "exit" and e["pid"] == demo]
assert len(x) == 1 and x[0]["signal"] == "SIGSEGV", x
assert x[0].get("sender") == {"kind": "process", "pid": me, "uid": 0, "comm": "bash"}, x[0]
print("senders: sleep killed by kill (pid %d), labels_demo by this script" % s["pid"])
PY
"$FLIGHTREC" dump --ring "$RING" --events --type exit --window 10m >"$T/exits.txt" 2>"$T/err" ||
	fail "dump --ring --events (text): $(cat "$T/err")"
grep -Eq " exit +pid $SLEEP_PID \(sleep\) killed by SIGTERM from pid [0-9]+ \(kill\) uid 0 after " "$T/exits.txt" ||
	fail "the text does not say who killed sleep: $(grep -w "$SLEEP_PID" "$T/exits.txt")"
# The timeline's mark of that death names its sender too (the web page
# draws "exit PID SIGTERM from kill PID").
"$FLIGHTREC" dump --ring "$RING" --timeline --window 10m --json >"$T/timeline.json" 2>"$T/err" ||
	fail "dump --ring --timeline: $(cat "$T/err")"
python3 - "$T/timeline.json" "$SLEEP_PID" <<'PY' || fail "the timeline's marks: $(cat "$T/timeline.json")"
import json, sys
pid = int(sys.argv[2])
m = [m for m in json.load(open(sys.argv[1])).get("marks", []) if m["pid"] == pid]
assert len(m) == 1 and m[0]["type"] == "exit" and m[0]["signal"] == "SIGTERM", m
s = m[0].get("sender")
assert s and s["kind"] == "process" and s["comm"] == "kill" and s["pid"] != pid, m
PY

python3 - "$T/events.jsonl" "$DEMO_PID" <<'PY' || fail "labels_demo's crash: $(grep -w "$DEMO_PID" "$T/events.jsonl")"
import json, sys
pid = int(sys.argv[2])
cr = [e for e in map(json.loads, open(sys.argv[1])) if e["type"] == "crash" and e["pid"] == pid]
assert len(cr) == 1, cr
c = cr[0]
assert c["signal"] == "SIGSEGV" and c["code"] == "SI_USER" and "addr" not in c, c
assert c["comm"] == "labels_demo", c
assert c["labels"].get("slot", "").isdigit() and c["labels"].get("par") in ("even", "odd"), c
assert any(f in ("fr_demo_even", "fr_demo_odd") for f in c["stack"]), c["stack"]
PY
if [ -n "$PY_CRASH" ]; then
	python3 - "$T/events.jsonl" "$PY_CRASH" <<'PY' || fail "python3's crash: $(grep -w "$PY_CRASH" "$T/events.jsonl")"
import json, sys
pid = int(sys.argv[2])
cr = [e for e in map(json.loads, open(sys.argv[1])) if e["type"] == "crash" and e["pid"] == pid]
assert len(cr) == 1, cr
st = cr[0]["stack"]
assert cr[0]["signal"] == "SIGSEGV" and cr[0]["addr"] == "0x10", cr[0]
assert not any(f.startswith("[truncated") for f in st), st
# Debian's _ctypes keeps no local symbols: string_at is an offset in it.
assert "ffi_call" in st and "_PyEval_EvalFrameDefault" in st and "Py_BytesMain" in st, st
print("python3's crash: %d frames, %s to %s" % (len(st), st[4], st[-1]))
PY
fi
python3 - "$T/children.jsonl" "$T/events.jsonl" "$PROG" <<'PY' || fail "the black box's events are not what the children did"
import json, sys
kids = [json.loads(l) for l in open(sys.argv[1])]
evs = [json.loads(l) for l in open(sys.argv[2])]
prog = sys.argv[3]
sig = {6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV"}
def of(kind, pid):
    return [e for e in evs if e["type"] == kind and e["pid"] == pid]
for k in kids:
    pid = k["pid"]
    ex = of("exec", pid)
    assert len(ex) == 1, ("exec", k, ex)
    assert ex[0]["path"] == prog and ex[0]["ppid"] == k["ppid"] and ex[0]["comm"] == "crash_prog", ex
    xs = of("exit", pid)
    assert len(xs) == 1, ("exit", k, xs)
    x = xs[0]
    if "exit_code" in k:
        assert x.get("exit_code") == k["exit_code"] and "signal" not in x, (k, x)
    else:
        assert x.get("signal") == sig[k["signal"]] and "exit_code" not in x, (k, x)
        assert (x.get("core") == "1") == k["core"], ("core flag", k, x)
    # kill(getpid(), SIGKILL) and abort(): sent by the process itself; a
    # fault and an exit: no sender.
    if k["mode"] in ("kill", "abort"):
        assert x.get("sender") == {"kind": "process", "pid": pid, "uid": 0,
                                   "comm": "crash_prog"}, ("sender", k, x)
    else:
        assert "sender" not in x, ("no sender", k, x)
    assert x["comm"] == "crash_prog" and x["cpu_ns"] >= 0, x
    cr = of("crash", pid)
    if k["mode"] == "segv":
        assert len(cr) == 1, ("crash", k, cr)
        c = cr[0]
        assert c["signal"] == "SIGSEGV" and c["code"] == "SEGV_MAPERR" and c["addr"] == "0x10", c
        assert c["tid"] == pid and c["comm"] == "crash_prog", c
        st = c["stack"]
        assert "crash_site" in st and "main" in st and st.index("crash_site") < st.index("main"), st
        assert "before_crash" not in st, st
        # The kernel part from get_signal on: the tracing's frames
        # (the program's, bpf_trace_run3) are dropped.
        assert st[0] == "get_signal" and not any(f.startswith("bpf_") for f in st), st
        # Its last seconds: 2 s of life, most of it on the CPU.
        assert x["lifetime_ns"] >= 2e9, x
        assert x["cpu_ns"] >= 0.2e9, x
    elif k["mode"] == "abort":
        assert len(cr) == 1, ("crash", k, cr)
        c = cr[0]
        assert c["signal"] == "SIGABRT" and c["code"] == "SI_TKILL" and "addr" not in c, c
        # abort() never returns: its call is in main's cold part.
        assert any(f in ("main", "main.cold") for f in c["stack"]), c
    else:
        assert not cr, ("no crash", k, cr)
print("all %d children's exec, exit and crash events as they happened" % len(kids))
PY

# Nothing lost, each counted.
start_daemon
python3 - <<PY || fail "status: $("$FLIGHTREC" status --json)"
import json, subprocess
d = json.loads(subprocess.check_output(["$FLIGHTREC", "status", "--json"]))
ev = {e["event"]: e for e in d["events"]}
for name in ("exec", "exit", "crash"):
    assert ev[name]["state"] == "recording" and ev[name]["lost"] == 0, ev[name]
PY
"$FLIGHTREC" status | grep -q "^event:    crash at every crash (fatal signal), whatever sessions ask" ||
	fail "status does not say crashes are recorded always: $("$FLIGHTREC" status)"
stop_daemon

# FLIGHTREC_BLACKBOX=off: not recorded, and status says why.
FLIGHTREC_BLACKBOX=off start_daemon
wait_until 20 "the black box's state" '[ -n "$(crash_state)" ]'
[ "$(crash_state)" = failed ] &&
	[ "$(status_value '[e.get("error") for e in d["events"] if e["event"] == "exec"][0]')" = "off (FLIGHTREC_BLACKBOX=off)" ] ||
	fail "FLIGHTREC_BLACKBOX=off: $("$FLIGHTREC" status | grep -E '^event: +(exec|exit|crash)')"
n=$(status_value '[e["samples"] for e in d["events"] if e["event"] == "exec"][0]')
"$PROG" exit 0 >/dev/null
sleep 1
[ "$(status_value '[e["samples"] for e in d["events"] if e["event"] == "exec"][0]')" = "$n" ] ||
	fail "FLIGHTREC_BLACKBOX=off still records execs"
stop_daemon
! ls "$T"/cores/core* >/dev/null 2>&1 || fail "a core file was left"
echo "PASS"
