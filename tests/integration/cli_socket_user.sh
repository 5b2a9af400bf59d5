#!/bin/bash
# A user who is not root, with no recorder of its own, is told about the
# system recorder's socket (/run/flightrec/flightrec.sock) instead of "no
# recorder listening at /tmp/flightrec-UID/...", as a real unprivileged
# user, named cases:
#   no_daemon          no system recorder: both places said, and how to check
#   not_in_group       the socket's group and mode, and how to join it
#   joined_after_login in /etc/group but not in this login's groups
#   in_group           served by the system recorder without --socket
#   user_empty_pid     another user's pid is named as no process of theirs
# Uses the real system path, so it skips when a recorder is there already.
. "$(dirname "$0")/lib.sh"
need_root_perf
for c in useradd userdel groupadd groupdel runuser setpriv; do
	command -v "$c" >/dev/null || skip "needs $c (passwd, util-linux) to create a test user"
done
SYS=/run/flightrec/flightrec.sock
[ -e /run/flightrec ] && skip "/run/flightrec exists (a system recorder, or another test's): not touching it"

U=frsock$$
G=frsockg$$
socket_cleanup() {
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	rm -rf /run/flightrec
	userdel -r "$U" >/dev/null 2>&1
	groupdel "$G" >/dev/null 2>&1
	cleanup
}
trap socket_cleanup EXIT
groupadd "$G" || fail "groupadd $G failed"
useradd -m -s /bin/sh "$U" || fail "useradd $U failed"
UID_U=$(id -u "$U")
unset FLIGHTREC_SOCKET
# The user's environment: no XDG_RUNTIME_DIR, so its own default is
# /tmp/flightrec-UID/flightrec.sock.
as_user() { runuser -u "$U" -- env -u XDG_RUNTIME_DIR -u FLIGHTREC_SOCKET "$@"; }

echo "case no_daemon" >&2
as_user "$FLIGHTREC" status >"$T/out" 2>"$T/err" && fail "status with no recorder succeeded"
grep -q "^flightrec: no recorder listening: none of yours at /tmp/flightrec-$UID_U/flightrec.sock, and the system recorder's socket $SYS does not exist (is flightrecd running?" "$T/err" ||
	fail "no daemon: $(cat "$T/err")"

echo "case not_in_group" >&2
cat >"$T/config.json" <<JSON
{"socket": {"path": "$SYS", "group": "$G"}}
JSON
"$FLIGHTRECD" --ring "$RING" --config "$T/config.json" --hz 19 >>"$T/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_answering "$SYS"
as_user "$FLIGHTREC" status >"$T/out" 2>"$T/err" && fail "status outside the socket's group succeeded"
grep -q "^flightrec: not allowed to use the recorder's socket $SYS (/run/flightrec is root:$G mode 0710, and you are not in group $G): ask an administrator to add you (usermod -aG $G $U, then log in again), or run as root$" "$T/err" ||
	fail "not in group: $(cat "$T/err")"
# top connects the same way.
as_user "$FLIGHTREC" top --window 2s >"$T/out" 2>"$T/err" && fail "top outside the socket's group succeeded"
grep -q "^flightrec top: not allowed to use the recorder's socket $SYS (/run/flightrec is root:$G mode 0710, and you are not in group $G)" "$T/err" ||
	fail "top, not in group: $(cat "$T/err")"

echo "case joined_after_login" >&2
usermod -aG "$G" "$U" || fail "usermod failed"
# A login from before: the user's own groups, without the new one.
setpriv --reuid "$U" --regid "$U" --clear-groups env -u XDG_RUNTIME_DIR "$FLIGHTREC" status \
	>"$T/out" 2>"$T/err" && fail "status from a login before joining succeeded"
grep -q "you were added to group $G after this login; log in again (or run newgrp $G)" "$T/err" ||
	fail "joined after login: $(cat "$T/err")"

echo "case in_group" >&2
as_user "$FLIGHTREC" status >"$T/out" 2>"$T/err" || fail "status in the group failed: $(cat "$T/err")"
grep -q '^recorder:' "$T/out" || grep -q 'ring' "$T/out" || fail "status in the group printed: $(cat "$T/out")"
# A user's empty --pid: root's pid 1 is no process of theirs, and is
# named so (not told apart from one that does not exist).
echo "case user_empty_pid" >&2
as_user "$FLIGHTREC" attach --window 2s --pid 1 -o - 2>"$T/err" | cat >/dev/null
grep -Eq -- '^flightrec: --pid 1 matched no samples in the window \([0-9]+ process(es)? recorded there\); no process 1 is running$' "$T/err" ||
	fail "a user's empty --pid 1: $(cat "$T/err")"
echo "non-root socket messages: all cases passed"
