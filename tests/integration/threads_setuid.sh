#!/bin/bash
# flightrec threads for a user who is not root shows of the user's
# set-user-ID processes only what /proc shows that user (the kernel hides
# wchan, syscall and stack of a process the reader may not ptrace: another
# uid among its real, effective and saved ones, or not dumpable): pid,
# name, state, CPU time; no wait, system call, wchan or stack, and it says
# so. The user's own plain process keeps all of it, and root sees the
# set-user-ID one whole. A real second user runs copies of `block pipe 1`
# (one thread blocked in read() in fr_read_stuck), one set-user-ID root,
# and a python3 that made itself not dumpable (prctl PR_SET_DUMPABLE 0,
# as ssh-agent does: /proc gives it to root). The same holds for a past
# moment (--at), from the ring alone: the not-dumpable process is listed
# without its stack or waiting time (the recorder keeps the set-user-ID
# one as root's, or cut down the same way).
. "$(dirname "$0")/lib.sh"
need_root_perf
need_test_users
U=frsuu$$
G=frsug$$
add_test_group "$G"
add_test_user "$U" "$G"

# The set-user-ID copy must be on a file system that honours the bit.
# The blockers are ended here: the set-user-ID one runs as root, which
# test_users_cleanup's pkill -u of the user does not reach.
SUID_PID=
USER_PID=
NODUMP_PID=
suid_cleanup() {
	[ -n "$SUID_PID" ] && kill -9 "$SUID_PID" 2>/dev/null
	[ -n "$USER_PID" ] && kill -9 "$USER_PID" 2>/dev/null
	[ -n "$NODUMP_PID" ] && kill -9 "$NODUMP_PID" 2>/dev/null
	suid_dir_cleanup
	test_users_cleanup
}
trap suid_cleanup EXIT
make_suid_dir
suid_copy "$BLOCK" suidblock
cp "$BLOCK" "$SUID_DIR/userblock" && chown "$U" "$SUID_DIR/userblock" || fail "cannot copy block"
mkdir "$T/out" && chown "$U" "$T/out"

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"},
 "sessions": [{"name": "threads", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
as_user() { runuser -u "$U" -- "$@"; }

as_user sh -c "exec '$SUID_DIR/suidblock' pipe 1 >'$T/out/suid.out'" &
as_user sh -c "exec '$SUID_DIR/userblock' pipe 1 >'$T/out/user.out'" &
as_user sh -c "exec python3 -c 'import ctypes, os, time
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
print(\"pid=%d\" % os.getpid(), flush=True)
time.sleep(600)' >'$T/out/nodump.out'" &
try_until 5 'grep -q "^pid=" "$T/out/suid.out" 2>/dev/null && grep -q "^pid=" "$T/out/user.out" 2>/dev/null &&
	grep -q "^pid=" "$T/out/nodump.out" 2>/dev/null'
SUID_PID=$(sed -n 's/^pid=//p' "$T/out/suid.out")
USER_PID=$(sed -n 's/^pid=//p' "$T/out/user.out")
NODUMP_PID=$(sed -n 's/^pid=//p' "$T/out/nodump.out")
[ -n "$SUID_PID" ] && [ -n "$USER_PID" ] && [ -n "$NODUMP_PID" ] || fail "the blockers did not start"
[ "$(stat -c %u "/proc/$NODUMP_PID/status")" = 0 ] ||
	skip "prctl(PR_SET_DUMPABLE, 0) did not give /proc/$NODUMP_PID/status to root"
grep -Eq '^Uid:\s+[0-9]+\s+0\s+0\s+0' "/proc/$SUID_PID/status" ||
	skip "the set-user-ID bit was not honoured: $(grep Uid: "/proc/$SUID_PID/status")"
wait_seals

# reader FILE KEY: KEY of the blocked reader thread (not main) in threads --json.
reader() {
	python3 -c 'import json,sys
for t in json.load(open(sys.argv[1]))["threads"]:
    if t["tid"] != t["pid"]:
        v = t.get(sys.argv[2], "")
        print(" ".join(v) if isinstance(v, list) else v); break' "$1" "$2"
}
# reader_main FILE: the stack of the first thread, joined.
reader_main() {
	python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["threads"][0]["stack"]))' "$1"
}
# The data is there: root sees the set-user-ID reader's wait and stack.
"$FLIGHTREC" threads --pid "$SUID_PID" --json >"$T/root.json" || fail "threads as root failed"
[ "$(reader "$T/root.json" wait)" = read ] || fail "root does not see the reader in read: $(cat "$T/root.json")"

as_user "$FLIGHTREC" threads --pid "$USER_PID" --json >"$T/own.json" 2>"$T/own.err" ||
	fail "threads as $U on its own process failed: $(cat "$T/own.err")"
[ "$(reader "$T/own.json" wait)" = read ] || fail "the user's own reader has no wait: $(cat "$T/own.json")"
reader "$T/own.json" stack | grep -q fr_read_stuck ||
	fail "the user's own reader has no stack: $(cat "$T/own.json")"

# cut_down FILE THREADS [AT]: the answer lists THREADS threads (any number
# when empty), none with more than ps shows, and says why.
cut_down() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if sys.argv[2]:
    assert len(d["threads"]) == int(sys.argv[2]), d
for t in d["threads"]:
    if len(sys.argv) < 4:
        assert t["state"] == "sleeping", t
    for k in ("wait", "syscall", "wchan", "waiting_ns", "labels", "creator"):
        assert k not in t, (k, t)
    assert t["stack"] == [], t
if d["threads"]:
    assert any("other credentials" in w for w in d["warnings"]), d["warnings"]
PY
}
as_user "$FLIGHTREC" threads --pid "$SUID_PID" --json >"$T/suid.json" 2>"$T/suid.err" ||
	fail "threads as $U on its set-user-ID process failed: $(cat "$T/suid.err")"
cut_down "$T/suid.json" 2 || fail "the set-user-ID process is shown beyond what /proc shows its user"
as_user "$FLIGHTREC" threads --pid "$NODUMP_PID" --json >"$T/nodump.json" 2>"$T/nodump.err" ||
	fail "threads as $U on its not-dumpable process failed: $(cat "$T/nodump.err")"
cut_down "$T/nodump.json" 1 || fail "the not-dumpable process is shown beyond what /proc shows its user"
"$FLIGHTREC" threads --pid "$NODUMP_PID" --json >"$T/nodump_root.json" || fail "threads as root failed"
[ -n "$(reader_main "$T/nodump_root.json")" ] || fail "root sees no stack of the not-dumpable process"

# A past moment, from the ring alone: the same.
AT=$(date +%s)
wait_seals
as_user "$FLIGHTREC" threads --pid "$USER_PID" --at "@$AT" --json >"$T/own_at.json" 2>"$T/own_at.err" ||
	fail "threads --at as $U on its own process failed: $(cat "$T/own_at.err")"
reader "$T/own_at.json" stack | grep -q fr_read_stuck ||
	fail "the user's own reader has no stack at a past moment: $(cat "$T/own_at.json")"
as_user "$FLIGHTREC" threads --pid "$SUID_PID" --at "@$AT" --json >"$T/suid_at.json" 2>"$T/suid_at.err" ||
	fail "threads --at as $U on its set-user-ID process failed: $(cat "$T/suid_at.err")"
cut_down "$T/suid_at.json" "" at ||
	fail "the set-user-ID process is shown at a past moment beyond what /proc shows"
"$FLIGHTREC" threads --pid "$NODUMP_PID" --at "@$AT" --json >"$T/nodump_root_at.json" || fail "threads --at as root failed"
[ -n "$(reader_main "$T/nodump_root_at.json")" ] || fail "root sees no stack of the not-dumpable process at a past moment"
as_user "$FLIGHTREC" threads --pid "$NODUMP_PID" --at "@$AT" --json >"$T/nodump_at.json" 2>"$T/nodump_at.err" ||
	fail "threads --at as $U on its not-dumpable process failed: $(cat "$T/nodump_at.err")"
cut_down "$T/nodump_at.json" 1 at ||
	fail "the not-dumpable process is shown at a past moment beyond what /proc shows its user"
echo PASS
