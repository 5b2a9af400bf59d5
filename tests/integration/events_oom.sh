#!/bin/bash
# The black box read back: `flightrec events` lists what happened.
#  - A process the OOM killer ends in a memory cgroup of 64 MiB (v2 or
#    v1, as oom_kill.sh): `events --json` has an oom_kill event with its
#    pid, comm, cgroup and RSS (32..80 MiB); the text line says the same.
#  - A user's events are hidden from another user: a test user's hog,
#    killed the same way, is listed to that user, root's is not (and the
#    machine's pressure is, being no process's); root sees both.
#  - `dump --ring --events` after kill -9 of the recorder still lists the
#    kills, from the ring file alone.
#  - Bad arguments give clear errors: an unknown --type, a bad --window.
#  - The machine's memory pressure, where /proc/pressure/memory exists
#    (else this part skips with 77, naming it): a JSON line per second,
#    pid 0, and one summary line in text.
. "$(dirname "$0")/lib.sh"
need_root_perf
HOG=$BUILD/tests/integration/oom_hog
[ -x "$HOG" ] || fail "oom_hog was not built"
[ -d /sys/kernel/tracing ] || [ -d /sys/kernel/debug/tracing ] ||
	skip "no tracefs for the oom:mark_victim tracepoint"

need_test_users
U=frev$$
G=frevg$$
add_test_group "$G"
add_test_user "$U" "$G" -M

memory_cgroup "fr-ev-$$"
trap 'rmdir "$CG" 2>/dev/null; test_users_cleanup' EXIT

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"},
 "sessions": [{"name": "cpu", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
state=$(status_value '[e["state"] for e in d["events"] if e["event"] == "oom"][0]')
[ "$state" = recording ] ||
	skip "the recorder cannot record OOM kills here: $(status_value '[e.get("error") for e in d["events"] if e["event"] == "oom"]')"
wait_seals 1

# hog AS: oom_hog run in the cgroup as root or as the test user, killed
# by the cgroup's OOM killer (137); its pid in $hog_pid. It waits for a
# go file until the recorder has sealed what it learned of it at its exec
# (its uid: a process killed at once would have died before the recorder
# read it, and keep the uid of the root shell that forked it).
hog() {
	local out=$T/hog-$1.out go=$T/go-$1
	if [ "$1" = root ]; then
		OOM_HOG_GO=$go sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2"' sh "$CG" "$HOG" >"$out" 2>&1 &
	else
		OOM_HOG_GO=$go sh -c 'echo $$ >"$1/cgroup.procs" &&
			exec setpriv --reuid "$3" --regid "$3" --clear-groups "$2"' \
			sh "$CG" "$HOG" "$U" >"$out" 2>&1 &
	fi
	local job=$!
	wait_until 10 "oom_hog's pid" '[ -s "$out" ]'
	hog_pid=$(head -1 "$out")
	wait_seals 2
	touch "$go"
	wait "$job"
	rc=$?
	[ "$rc" = 137 ] || fail "oom_hog ($1) was not killed by the OOM killer (exit $rc): $(cat "$out")"
	[ -n "$hog_pid" ] || fail "oom_hog ($1) did not say its pid"
}
command -v setpriv >/dev/null || skip "needs setpriv (util-linux) to run a program as the test user"
hog root
PID=$hog_pid
hog "$U"
UPID=$hog_pid
wait_until 10 "the log lines of both kills" \
	'grep -q "oom: killed pid $PID " "$T/daemon.log" && grep -q "oom: killed pid $UPID " "$T/daemon.log"'

# Root sees both, as JSON lines with the contract's keys.
"$FLIGHTREC" events --window 5m --json >"$T/all.jsonl" 2>"$T/err" || fail "events --json failed: $(cat "$T/err")"
# The chunks name a process's cgroup v2 path: on a machine whose memory
# controller is v1's, the hog's v2 cgroup is another (often "/").
want_cg=
[ "$CG" != "/sys/fs/cgroup/memory/fr-ev-$$" ] && want_cg=/fr-ev-$$
python3 - "$T/all.jsonl" "$PID" "$UPID" "$want_cg" <<'PY' || fail "events --json: $(cat "$T/all.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
pid, upid = int(sys.argv[2]), int(sys.argv[3])
times = [l["time_ns"] for l in lines]
assert times == sorted(times), "not in time order"
for l in lines:
    assert l["time"].endswith("Z") and "T" in l["time"], l
    assert l["type"] in ("oom_kill", "memory-pressure", "cpu-pressure", "io-pressure",
                         "throttled", "exec", "exit", "crash"), l
for p in (pid, upid):
    k = [l for l in lines if l["type"] == "oom_kill" and l["pid"] == p]
    assert len(k) == 1, (p, k)
    k = k[0]
    assert k["comm"] == "oom_hog" and k["tid"] == p and k["cgroup"].startswith("/"), k
    assert k["cgroup"].endswith(sys.argv[4]), (k, sys.argv[4])
    assert 32 << 20 <= k["rss"] <= 80 << 20, k["rss"]
    # The killer ran in the memory cgroup's charge path: its limit, not
    # the machine's memory.
    assert k.get("constraint") == "memcg", k
    # Its exit: SIGKILL, sent by the kernel (not by the process that
    # happened to run the OOM killer).
    x = [l for l in lines if l["type"] == "exit" and l["pid"] == p]
    assert len(x) == 1 and x[0].get("signal") == "SIGKILL", (p, x)
    assert x[0].get("sender") == {"kind": "kernel"}, x[0]
PY
"$FLIGHTREC" events --window 5m --type oom >"$T/all.txt" 2>"$T/err" || fail "events failed: $(cat "$T/err")"
grep -Eq "^[0-9-]{10}T[0-9:]{8}\.[0-9]{3}Z oom_kill +pid $PID \(oom_hog\) rss [0-9.]+MiB \(its memory cgroup's limit\) cgroup /.*$want_cg$" "$T/all.txt" ||
	fail "the text does not list the kill: $(cat "$T/all.txt")"

# The test user sees their own kill, not root's.
as_user() { runuser -u "$U" -- env -u XDG_RUNTIME_DIR "$@"; }
as_user "$FLIGHTREC" events --window 5m --json >"$T/user.jsonl" 2>"$T/user.err" ||
	fail "events as $U failed: $(cat "$T/user.err")"
grep -q "your own processes only" "$T/user.err" || fail "no warning that the list is the user's: $(cat "$T/user.err")"
python3 - "$T/user.jsonl" "$PID" "$UPID" <<'PY' || fail "events as the user: $(cat "$T/user.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
pid, upid = int(sys.argv[2]), int(sys.argv[3])
assert [l for l in lines if l["pid"] == upid and l["type"] == "oom_kill"], "the user's own kill is missing"
assert not [l for l in lines if l["pid"] == pid], "root's process is shown to the user"
# Besides the machine's series and the user's hog, only the user's own
# command (runuser's env, then flightrec: its exec) is theirs to see.
others = [l for l in lines if l["pid"] not in (0, upid) and l["comm"] not in ("env", "flightrec")]
assert not others, ("another process is shown to the user", others)
PY

# The timeline marks both kills, whatever its event; the user's marks
# only theirs.
"$FLIGHTREC" timeline --window 5m --json >"$T/tl.json" 2>"$T/err" || fail "timeline failed: $(cat "$T/err")"
as_user "$FLIGHTREC" timeline --window 5m --json >"$T/tl_user.json" 2>"$T/err" ||
	fail "timeline as $U failed: $(cat "$T/err")"
python3 - "$T/tl.json" "$T/tl_user.json" "$PID" "$UPID" <<'PY' || fail "timeline marks: $(cat "$T/tl.json" "$T/tl_user.json")"
import json, sys
root, user = (json.load(open(f)) for f in sys.argv[1:3])
pid, upid = int(sys.argv[3]), int(sys.argv[4])
kills = lambda d: sorted(m["pid"] for m in d.get("marks", []) if m["type"] == "oom_kill")
assert kills(root) == sorted([pid, upid]), root.get("marks")
assert all(m["comm"] == "oom_hog" for m in root["marks"] if m["pid"] in (pid, upid)), root["marks"]
assert kills(user) == [upid], user.get("marks")
PY
"$FLIGHTREC" timeline --window 5m >"$T/tl.txt" 2>"$T/err" || fail "timeline (text) failed: $(cat "$T/err")"
grep -q "^oom_kill [0-9:]* UTC: pid $PID (oom_hog)$" "$T/tl.txt" || fail "the text timeline does not mark the kill: $(cat "$T/tl.txt")"

# A profile of the window says how they ended, in its comments.
"$FLIGHTREC" attach --window 5m -o "$T/p.pb.gz" >/dev/null 2>"$T/err" || fail "attach failed: $(cat "$T/err")"
gzip -dc "$T/p.pb.gz" | strings -n 8 >"$T/p.strings"
grep -Eq "event: [^ ]+Z oom_kill +pid $PID \(oom_hog\) rss [0-9.]+MiB" "$T/p.strings" ||
	fail "the profile's comments do not list the kill: $(grep "event: " "$T/p.strings")"

# Bad arguments: clear errors, exit 2.
"$FLIGHTREC" events --type crash,bogus >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q 'unknown event type "bogus" (types: crash, oom_kill' "$T/err" ||
	fail "--type bogus: exit $rc, $(cat "$T/err")"
"$FLIGHTREC" events --window 5x >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q -- '--window' "$T/err" || fail "--window 5x: exit $rc, $(cat "$T/err")"
"$FLIGHTREC" events --type , >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] || fail "--type ,: exit $rc, $(cat "$T/err")"
# A profile of crashes would read like one of CPU: the way to them.
"$FLIGHTREC" attach --event crash --window 1m -o "$T/x.pb.gz" 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q 'crash is a series over time, not a profile: see `flightrec timeline --event crash` and `flightrec events --type crash`' "$T/err" ||
	fail "attach --event crash: exit $rc, $(cat "$T/err")"

# After kill -9 of the recorder the ring file still has them (and the
# pressure of the seconds so far is kept for the end).
if [ -r /proc/pressure/memory ]; then
	wait_until 20 "3 seconds of memory pressure" \
		'"$FLIGHTREC" events --window 5m --type memory-pressure --json >"$T/psi.jsonl" 2>"$T/err" &&
			[ "$(wc -l <"$T/psi.jsonl")" -ge 3 ]'
fi
"$FLIGHTREC" events --window 5m >"$T/summary.txt" 2>"$T/err" || fail "events failed: $(cat "$T/err")"
kill9_daemon
"$FLIGHTREC" dump --ring "$RING" --events --window 10m --type oom_kill --json >"$T/dump.jsonl" 2>"$T/err" ||
	fail "dump --events failed: $(cat "$T/err")"
python3 - "$T/dump.jsonl" "$PID" "$UPID" <<'PY' || fail "dump --ring --events: $(cat "$T/dump.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for p in sys.argv[2:]:
    k = [l for l in lines if l["pid"] == int(p)]
    assert len(k) == 1 and k[0]["type"] == "oom_kill" and k[0]["comm"] == "oom_hog", k
    assert 32 << 20 <= k[0]["rss"] <= 80 << 20, k
assert all(l["type"] == "oom_kill" for l in lines), "--type oom_kill lists others"
PY
"$FLIGHTREC" dump --ring "$RING" --events --window 10m --pid "$PID" >"$T/dump.txt" 2>"$T/err" ||
	fail "dump --events (text) failed: $(cat "$T/err")"
grep -q "oom_kill *pid $PID (oom_hog) rss" "$T/dump.txt" && ! grep -q "pid $UPID" "$T/dump.txt" ||
	fail "dump --events --pid $PID: $(cat "$T/dump.txt")"
"$FLIGHTREC" dump --ring "$RING" --type crash --window 1m >"$T/out" 2>"$T/err"
[ $? = 2 ] && grep -q -- "--type goes with --events" "$T/err" || fail "dump --type without --events: $(cat "$T/err")"

# The machine's memory pressure, once a second.
[ -r /proc/pressure/memory ] || skip "no /proc/pressure/memory (a kernel without PSI, or psi=0): no pressure series to list"
python3 - "$T/psi.jsonl" <<'PY' || fail "memory-pressure: $(cat "$T/psi.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) >= 3, "fewer than 3 seconds of memory pressure"
for l in lines:
    assert l["type"] == "memory-pressure" and l["pid"] == 0 and "comm" not in l, l
    assert 0 <= l["stall_ns"] <= 2 * 10**9, l
PY
[ "$(grep -c ' memory-pressure ' "$T/summary.txt")" = 1 ] &&
	grep -Eq '^[^ ]+Z memory-pressure +\[machine\] [0-9]+ s to [0-9:.]+Z: stalled .* in all \([0-9.]+%\)' "$T/summary.txt" ||
	fail "no one-line summary of memory pressure: $(cat "$T/summary.txt")"
grep -q '"type":"memory-pressure"' "$T/user.jsonl" || fail "the user does not see the machine's pressure"
echo "PASS"
