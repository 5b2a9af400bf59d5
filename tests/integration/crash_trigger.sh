#!/bin/bash
# A session's {"on": "crash"} trigger: crash_prog burns 2 s in
# before_crash, then dies of SIGSEGV writing to 0x10, under a recorder
# with two sessions:
#   c      no targets: any crash fires it; its dump's profile holds the
#          crashed process's last seconds (samples of before_crash, its
#          pid), and the sidecar says "trigger": "crash" with "crash":
#          {"pid", "tid", "comm": "crash_prog", "signal": "SIGSEGV",
#          "addr": "0x10"} and a reason naming them;
#   other  targets a command that never runs: no dump (the targets
#          filter crashes).
# A cooldown of 1s: another process's crash on this machine moments before
# must not keep c from firing on this one.
. "$(dirname "$0")/lib.sh"
need_root_perf
PROG=$BUILD/tests/integration/crash_prog
[ -x "$PROG" ] || fail "crash_prog was not built"

mkdir -m 0700 "$T/dumps"
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$T/dumps"},
 "sessions": [{"name": "c", "events": [{"event": "cpu", "hz": 99}],
               "triggers": [{"on": "crash", "window": "10s", "cooldown": "1s"}]},
              {"name": "other", "targets": {"comm": ["no-such-prog"]},
               "events": [{"event": "cpu", "hz": 99}],
               "triggers": [{"on": "crash", "window": "10s"}]}]}
JSON
start_daemon --config "$T/config.json"
crash_state() { status_value '[e["state"] for e in d["events"] if e["event"] == "crash"][0]'; }
wait_until 20 "the black box's program loaded" '[ -n "$(crash_state)" ]'
[ "$(crash_state)" = recording ] ||
	skip "the recorder cannot record crashes here: $(status_value '[e.get("error") for e in d["events"] if e["event"] == "crash"]')"
wait_seals 1

(cd "$T" && ulimit -c 0 && exec "$PROG" segv) >"$T/prog.out" 2>&1
rc=$?
PID=$(head -1 "$T/prog.out")
[ "$rc" = 139 ] || fail "crash_prog did not die of SIGSEGV (exit $rc): $(cat "$T/prog.out")"

wait_until 20 "the crash dump of pid $PID" \
	'grep -lE "\"pid\":[[:space:]]*$PID([^0-9]|$)" "$T"/dumps/c-crash-*.json >/dev/null 2>&1'
SIDECAR=$(grep -lE "\"pid\":[[:space:]]*$PID([^0-9]|$)" "$T"/dumps/c-crash-*.json | head -1)
PROFILE=${SIDECAR%.json}.pb.gz
[ -s "$PROFILE" ] || fail "the dump has no profile beside $SIDECAR"
python3 - "$SIDECAR" "$PID" <<'PY' || fail "the sidecar does not name the crash: $(cat "$SIDECAR")"
import json, sys
s = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
c = s["crash"]
assert s["trigger"] == "crash" and s["session"] == "c" and s["pid"] == pid, s
assert c["pid"] == pid and c["tid"] == pid and c["comm"] == "crash_prog", c
assert c["signal"] == "SIGSEGV" and c["addr"] == "0x10", c
assert s["reason"] == "pid %d (crash_prog) killed by SIGSEGV at 0x10" % pid, s["reason"]
PY
python3 - "$(dirname "$0")" "$PROFILE" "$PID" <<'PY' || fail "the dump's profile lacks the crashed process's last seconds"
import sys
sys.path.insert(0, sys.argv[1])
import pprof_samples
pid = int(sys.argv[3])
mine = [s for s in pprof_samples.samples(sys.argv[2]) if s["num"].get("pid") == pid]
burn = [s for s in mine if "before_crash" in s["frames"]]
n = sum(s["values"][0] for s in burn)
print("pid %d: %d samples, %d in before_crash" % (pid, sum(s["values"][0] for s in mine), n))
# 2 s at 99 Hz is ~200 samples where the CPU is the program's alone; the
# machine is shared, a twentieth of that is plenty to say it is there.
assert n >= 10, burn[:1]
# Under main once its unwind table is built (a new program's first
# samples, before it is, end at a marker: many of them on a loaded
# machine, docs/architecture.md "Unwind tables").
under = sum(s["values"][0] for s in burn
            if "main" in s["frames"] and s["frames"].index("before_crash") < s["frames"].index("main"))
assert under > 0, [s["frames"] for s in burn]
PY
sleep 1
! ls "$T"/dumps/other-* >/dev/null 2>&1 || fail "a crash of a process not among its targets fired session other"
stop_daemon
echo "PASS"
