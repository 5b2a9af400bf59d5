#!/bin/bash
# On-call users without root: a real unprivileged user in the socket's
# group gets status, attach, top and threads over the socket, sees only its own
# processes, has its --follow rate capped, and cannot dump a session that
# does not list it; a member of the admin group is served like root.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
# The users must pass through the test directory to the socket's; the
# daemon opens the socket's own directory to the group itself.
need_test_users
U=frtest$$
A=frtesta$$
G=frtestg$$
GA=frtestga$$
add_test_group "$G"
add_test_group "$GA"
add_test_user "$U" "$G"
add_test_user "$A" "$G,$GA"
UID_U=$(id -u "$U")

mkdir "$T/u" && chown "$U" "$T/u" && chmod 0700 "$T/u"
cp "$BURN" "$T/rootburn"
cp "$BURN" "$T/u/userburn" && chown "$U" "$T/u/userburn"

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G", "admin_group": "$GA"},
 "limits": {"user_max_rate_hz": 49},
 "dumps": {"dir": "$T/dumps"},
 "sessions": [
  {"name": "ops", "events": [{"event": "cpu", "hz": 99}]},
  {"name": "team", "users": ["$U"], "targets": {"uid": "$U"}}
 ]}
JSON
start_daemon --config "$T/config.json"
as_user() { runuser -u "$U" -- "$@"; }

# The socket: 0660 root:GROUP, its directory passable by the group only.
[ "$(stat -c '%a %U %G' "$SOCK")" = "660 root $G" ] ||
	fail "socket is $(stat -c '%a %U %G' "$SOCK"), want 660 root $G"
[ "$(stat -c '%a %G' "$T/run")" = "710 $G" ] ||
	fail "socket directory is $(stat -c '%a %G' "$T/run"), want 710 $G"

as_user "$FLIGHTREC" status >"$T/status.user" 2>&1 || fail "status as $U failed: $(cat "$T/status.user")"
# The user's status has the numbers but not root's configuration path, nor
# which of root's processes follow; its own follower it does see.
mkdir -p "$T/rootfollow" "$T/u/ownfollow" && chown "$U" "$T/u/ownfollow"
"$FLIGHTREC" attach --follow --hz 49 --window 30s --count 1 -o "$T/rootfollow" >/dev/null 2>&1 &
ROOT_FOLLOW=$!
as_user "$FLIGHTREC" attach --follow --hz 49 --window 30s --count 1 -o "$T/u/ownfollow" >/dev/null 2>"$T/ownfollow.err" &
USER_FOLLOW=$!
try_until 10 '[ "$("$FLIGHTREC" status --json 2>/dev/null | grep -o "\"client pid " | wc -l)" = 2 ]'
"$FLIGHTREC" status --json >"$T/status.root.json" || fail "status as root failed"
as_user "$FLIGHTREC" status --json >"$T/status.user.json" || fail "status --json as $U failed"
grep -q '"config"' "$T/status.root.json" || fail "root's status lacks the configuration"
grep -q '"config"' "$T/status.user.json" && fail "the user's status shows the configuration path"
grep -q '"client pid ' "$T/status.root.json" || fail "root's status does not name the following client"
[ "$(grep -o '"client pid ' "$T/status.root.json" | wc -l)" = 2 ] ||
	fail "root's status does not name both followers: $(cat "$T/ownfollow.err")"
[ "$(grep -o '"client pid ' "$T/status.user.json" | wc -l)" = 1 ] ||
	fail "the user's status should name its own follower and no other: $(cat "$T/status.user.json")"
grep -q '"a client"' "$T/status.user.json" || fail "the user's status hides root's follower altogether"
kill "$ROOT_FOLLOW" "$USER_FOLLOW" 2>/dev/null
wait "$ROOT_FOLLOW" "$USER_FOLLOW" 2>/dev/null

# One busy process of root's, one of the user's, at the same time.
"$T/rootburn" 3 1 0 >"$T/root.out" &
ROOT_JOB=$!
as_user "$T/u/userburn" 3 1 0 >"$T/user.out" &
USER_JOB=$!
wait "$ROOT_JOB" "$USER_JOB"
ROOT_PID=$(sed -n 's/^pid=\([0-9]*\).*/\1/p' "$T/root.out")
USER_PID=$(sed -n 's/^pid=\([0-9]*\).*/\1/p' "$T/user.out")
[ -n "$ROOT_PID" ] && [ -n "$USER_PID" ] || fail "burn did not report its pids"

# The user's profile: its own process, none of root's, and it says so.
as_user "$FLIGHTREC" attach --window 15s -o "$T/u/mine.pb.gz" 2>"$T/attach.err" ||
	fail "attach as $U failed: $(cat "$T/attach.err")"
"$GO" tool pprof -symbolize=none -raw "$T/u/mine.pb.gz" >"$T/mine.raw" 2>"$T/pprof.err" ||
	fail "pprof -raw failed: $(cat "$T/pprof.err")"
grep -q "pid:\[$USER_PID\]" "$T/mine.raw" || fail "the user's profile misses its own process $USER_PID"
grep -q "pid:\[$ROOT_PID\]" "$T/mine.raw" && fail "the user's profile holds root's process $ROOT_PID"
grep -q 'comm:\[rootburn\]' "$T/mine.raw" && fail "the user's profile holds root's rootburn"
grep -q "warning: the profile holds only your own processes (uid $UID_U)" "$T/attach.err" ||
	fail "attach as $U did not warn that the profile was limited: $(cat "$T/attach.err")"
grep -q "limited to the processes of uid $UID_U" "$T/mine.raw" ||
	fail "the user's profile does not say it was limited to uid $UID_U"
# Every process in it is the user's: each pid label is of a process the
# user ran (only userburn and what the user's own commands did).
for p in $(grep -o 'pid:\[[0-9]*\]' "$T/mine.raw" | tr -dc '0-9\n' | sort -u); do
	[ "$p" = "$USER_PID" ] && continue
	owner=$(stat -c %u "/proc/$p" 2>/dev/null || echo gone)
	[ "$owner" = 0 ] && fail "the user's profile holds pid $p, a process of root"
done
as_user "$FLIGHTREC" top "$T/u/mine.pb.gz" -n 5 >"$T/top.user" 2>&1 ||
	fail "top of the file as $U failed: $(cat "$T/top.user")"
grep -q fr_burn_heavy "$T/top.user" || fail "top of the user's profile misses its functions: $(cat "$T/top.user")"
as_user "$FLIGHTREC" top --window 15s -n 5 >"$T/topw.user" 2>&1 ||
	fail "top --window as $U failed: $(cat "$T/topw.user")"
grep -q fr_burn_heavy "$T/topw.user" || fail "top --window as $U misses its functions: $(cat "$T/topw.user")"

# flightrec threads: the user sees the threads of its own processes, and
# none of root's, asked by pid or by name.
"$T/rootburn" 30 1 0 >/dev/null &
ROOT_LIVE=$!
as_user "$T/u/userburn" 30 1 0 >/dev/null &
USER_LIVE=$!
wait_until 5 "userburn running as $U" 'pgrep -u "$U" -x userburn >/dev/null'
USER_LIVE=$(pgrep -u "$U" -x userburn | head -1)
as_user "$FLIGHTREC" threads --pid "$ROOT_LIVE" --json >"$T/threads.root" 2>&1 ||
	fail "threads as $U failed: $(cat "$T/threads.root")"
grep -q '"threads":\[\]' "$T/threads.root" ||
	fail "the user sees root's threads: $(cat "$T/threads.root")"
grep -q "only your own processes (uid $UID_U)" "$T/threads.root" ||
	fail "threads as $U does not say it was limited: $(cat "$T/threads.root")"
as_user "$FLIGHTREC" threads --comm rootburn,userburn --json >"$T/threads.user" 2>&1 ||
	fail "threads --comm as $U failed: $(cat "$T/threads.user")"
grep -q "\"pid\":$USER_LIVE," "$T/threads.user" ||
	fail "the user misses its own threads: $(cat "$T/threads.user")"
grep -q "\"pid\":$ROOT_LIVE," "$T/threads.user" && fail "the user sees rootburn's threads"
"$FLIGHTREC" threads --comm rootburn,userburn --json >"$T/threads.all" 2>&1 || fail "threads as root failed"
grep -q "\"pid\":$ROOT_LIVE," "$T/threads.all" && grep -q "\"pid\":$USER_LIVE," "$T/threads.all" ||
	fail "root does not see both burns' threads: $(cat "$T/threads.all")"
# --at a past moment, from the ring: the same rule, by the uid the ring
# recorded for each process, by pid and by name.
wait_seals
at=$(date +%s.%N)
as_user "$FLIGHTREC" threads --pid "$ROOT_LIVE,$USER_LIVE" --at "$at" --json \
	>"$T/threads_at.user" 2>&1 || fail "threads --at as $U failed: $(cat "$T/threads_at.user")"
grep -q "\"pid\":$USER_LIVE," "$T/threads_at.user" ||
	fail "threads --at: the user misses its own threads: $(cat "$T/threads_at.user")"
grep -q "\"pid\":$ROOT_LIVE," "$T/threads_at.user" && fail "threads --at: the user sees rootburn's threads"
as_user "$FLIGHTREC" threads --comm rootburn,userburn --at "$at" --json \
	>"$T/threads_at_comm.user" 2>&1 ||
	fail "threads --comm --at as $U failed: $(cat "$T/threads_at_comm.user")"
grep -q "\"pid\":$USER_LIVE," "$T/threads_at_comm.user" ||
	fail "threads --comm --at: the user misses its own threads: $(cat "$T/threads_at_comm.user")"
grep -q "\"pid\":$ROOT_LIVE," "$T/threads_at_comm.user" &&
	fail "threads --comm --at: the user sees rootburn's threads"
"$FLIGHTREC" threads --pid "$ROOT_LIVE,$USER_LIVE" --at "$at" --json >"$T/threads_at.all" 2>&1 ||
	fail "threads --at as root failed"
grep -q "\"pid\":$ROOT_LIVE," "$T/threads_at.all" ||
	fail "threads --at: root does not see rootburn: $(cat "$T/threads_at.all")"
"$FLIGHTREC" threads --comm rootburn,userburn --at "$at" --json >"$T/threads_at_comm.all" 2>&1 ||
	fail "threads --comm --at as root failed"
grep -q "\"pid\":$ROOT_LIVE," "$T/threads_at_comm.all" ||
	fail "threads --comm --at: root does not see rootburn: $(cat "$T/threads_at_comm.all")"
kill "$ROOT_LIVE" "$USER_LIVE" 2>/dev/null

# Root, asking the same, sees both: the user's view was filtered, not empty.
"$FLIGHTREC" attach --window 15s -o "$T/all.pb.gz" 2>"$T/attach.err" || fail "attach as root failed"
"$GO" tool pprof -symbolize=none -raw "$T/all.pb.gz" >"$T/all.raw" 2>"$T/pprof.err" || fail "pprof -raw failed"
grep -q "pid:\[$ROOT_PID\]" "$T/all.raw" && grep -q "pid:\[$USER_PID\]" "$T/all.raw" ||
	fail "root's profile does not hold both burns"
grep -q "limited to the processes" "$T/all.raw" && fail "root's profile says it was limited"
# So does a member of the admin group, through the same socket.
mkdir "$T/a" && chown "$A" "$T/a"
runuser -u "$A" -- "$FLIGHTREC" attach --window 15s -o "$T/a/admin.pb.gz" 2>"$T/attach.err" ||
	fail "attach as admin $A failed: $(cat "$T/attach.err")"
"$GO" tool pprof -symbolize=none -raw "$T/a/admin.pb.gz" >"$T/admin.raw" 2>"$T/pprof.err" || fail "pprof -raw failed"
grep -q "pid:\[$ROOT_PID\]" "$T/admin.raw" && grep -q "pid:\[$USER_PID\]" "$T/admin.raw" ||
	fail "the admin group member's profile does not hold both burns"
grep -q "limited to the processes" "$T/admin.raw" && fail "the admin's profile says it was limited"

# The user's --follow at 10000 Hz is capped at limits.user_max_rate_hz.
mkdir "$T/u/follow" && chown "$U" "$T/u/follow"
as_user "$FLIGHTREC" attach --follow --hz 10000 --window 1s --count 1 -o "$T/u/follow" \
	2>"$T/follow.err" || fail "attach --follow as $U failed: $(cat "$T/follow.err")"
grep -q "warning: 10000 Hz is above the limit for users (limits.user_max_rate_hz); recording at 49 Hz" \
	"$T/follow.err" || fail "no warning that the rate was capped: $(cat "$T/follow.err")"
grep -q "following cpu at 49 Hz" "$T/follow.err" || fail "the follow did not run at 49 Hz: $(cat "$T/follow.err")"
ls "$T/u/follow"/*.pb.gz >/dev/null 2>&1 || fail "the capped follow wrote no profile"
grep -q "client pid [0-9]* (uid $UID_U) asks for cpu at 49 Hz" "$T/daemon.log" ||
	fail "the daemon did not record the capped rate"

# offcpu (every context switch, no rate to cap) cannot be started by a user.
if as_user "$FLIGHTREC" attach --follow --event offcpu --window 1s --count 1 -o "$T/u/follow" \
	>"$T/offcpu.err" 2>&1; then
	fail "$U started offcpu recording: $(cat "$T/offcpu.err")"
fi
grep -q "offcpu is not being recorded, and it records every context switch" "$T/offcpu.err" ||
	fail "the refused offcpu follow does not say why: $(cat "$T/offcpu.err")"
# While root records offcpu, the user may follow it; when root stops, the
# user's follower does not keep it open.
offcpu_on() { "$FLIGHTREC" status --json | python3 -c 'import json,sys; print(any(e["event"] == "offcpu" and e["state"] == "recording" for e in json.load(sys.stdin)["events"]))'; }
mkdir -p "$T/rootoff"
"$FLIGHTREC" attach --follow --event offcpu --window 60s --count 1 -o "$T/rootoff" >/dev/null 2>&1 &
ROOT_OFF=$!
try_until 10 '[ "$(offcpu_on)" = True ]'
[ "$(offcpu_on)" = True ] || fail "root's offcpu follow did not start offcpu"
as_user "$FLIGHTREC" attach --follow --event offcpu --window 60s --count 1 -o "$T/u/follow" \
	>/dev/null 2>"$T/useroff.err" &
USER_OFF=$!
try_until 10 'grep -q following "$T/useroff.err"'
grep -q following "$T/useroff.err" || fail "the user could not follow offcpu: $(cat "$T/useroff.err")"
kill "$ROOT_OFF"
wait "$ROOT_OFF" 2>/dev/null
try_until 10 '[ "$(offcpu_on)" = False ]'
[ "$(offcpu_on)" = False ] || fail "the user's follower kept offcpu open after root's left"
kill "$USER_OFF" 2>/dev/null
wait "$USER_OFF" 2>/dev/null

# A session that does not list the user cannot be dumped by it; one that
# does can.
if as_user "$FLIGHTREC" dump --session ops >"$T/dump.out" 2>&1; then
	fail "$U dumped root's session ops: $(cat "$T/dump.out")"
fi
grep -q "uid $UID_U may not dump session \"ops\"" "$T/dump.out" ||
	fail "the refused dump does not say why: $(cat "$T/dump.out")"
ls "$T/dumps"/ops-* >/dev/null 2>&1 && fail "a refused dump wrote files"
as_user "$FLIGHTREC" dump --session team >"$T/dump.out" 2>&1 ||
	fail "$U could not dump session team, which lists it: $(cat "$T/dump.out")"
"$FLIGHTREC" dump --session ops >"$T/dump.out" 2>&1 || fail "root could not dump session ops: $(cat "$T/dump.out")"
runuser -u "$A" -- "$FLIGHTREC" dump --session ops >"$T/dump.out" 2>&1 ||
	fail "admin $A could not dump session ops: $(cat "$T/dump.out")"

daemon_alive || fail "the daemon died"
stop_daemon

# users_removed: the test's users are gone afterwards, even with a process
# of theirs still running (userdel refused such a user, and the machine
# kept one frtest user per run).
runuser -u "$U" -- sleep infinity >/dev/null 2>&1 &
wait_until 5 "a process of $U" 'pgrep -u "$U" -x sleep >/dev/null'
trap - EXIT
test_users_cleanup
for x in "$U" "$A"; do
	! id -u "$x" >/dev/null 2>&1 || fail "users_removed: user $x is still there after the test"
done
echo "PASS"
