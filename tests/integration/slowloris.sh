#!/bin/bash
# Slow clients cannot lock the daemon: more connections than
# limits.max_clients, each sending a byte of a request every 4 s (under
# any per-receive timeout), are dropped once their request deadline
# passes, and status gets in meanwhile. (That the last slot is kept for
# status is test_ipc_server's status_slot: here the slow clients take it too.)
# An attach whose output is a pipe nobody reads gives up and frees its
# connection. The daemon keeps recording throughout.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v python3 >/dev/null || skip "needs python3 for the slow client"
HERE=$(cd "$(dirname "$0")" && pwd)

start_daemon
samples_before=$("$FLIGHTREC" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])')

# 70 slow clients for the 64 slots of limits.max_clients: 63 ordinary
# slots, the status slot and 6 refused at once. Each would keep its
# connection for 60 s at a byte per 4 s if nothing enforced a deadline per
# request.
python3 "$HERE/slowloris.py" "$SOCK" 70 4 60 >"$T/slow.out" 2>"$T/slow.err" &
SLOW_PID=$!
try_until 10 'grep -q "^connected" "$T/slow.out"'
grep -q '^connected 70$' "$T/slow.out" || fail "the slow client did not connect: $(cat "$T/slow.err")"

# status answers while the slow clients are there (bounded poll: a slow
# client holds the slot kept for status, too, until its deadline).
try_until 30 '"$FLIGHTREC" status >"$T/status.out" 2>"$T/status.err"' ||
	fail "status never got in past the slow clients: $(cat "$T/status.err")"

# Every slow connection is closed by the daemon (the slow client gives up
# after 60 s and exits 1 if one is still open).
wait "$SLOW_PID" || fail "slow connections still open after 60 s: $(tail -1 "$T/slow.out")"
daemon_alive || fail "the daemon died"

# An attach into a pipe that is never read: the daemon gives up on the
# output and answers, instead of holding the connection for good. The
# pipe is made small so any profile fills it.
"$BURN" 4 1 0 >/dev/null &
sleep 3
python3 - "$SOCK" >"$T/pipe.out" 2>"$T/pipe.err" <<'PY' &
import array, fcntl, json, os, socket, sys
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = json.dumps({"v": 1, "req": "attach", "window_ns": 60_000_000_000}).encode()
s.sendmsg([len(body).to_bytes(4, "little") + body],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [w]))])
os.close(w)  # the daemon holds the only write end; r is never read
hdr = b""
while len(hdr) < 4:
    b = s.recv(4 - len(hdr))
    if not b:
        sys.exit("the daemon closed the connection without a reply")
    hdr += b
n = int.from_bytes(hdr, "little")
data = b""
while len(data) < n:
    data += s.recv(n - len(data))
print(json.loads(data).get("error", "ok"))
PY
PIPE_PID=$!
# Bounded: the daemon gives up after 15 s without progress.
try_until 120 '! kill -0 "$PIPE_PID" 2>/dev/null'
kill -0 "$PIPE_PID" 2>/dev/null && fail "an attach into an unread pipe still holds its connection after 120 s"
wait "$PIPE_PID" || fail "the unread-pipe client failed: $(cat "$T/pipe.err")"
grep -q "took no bytes" "$T/pipe.out" || fail "unclear error for an unread pipe: $(cat "$T/pipe.out")"

# And the daemon recorded all along.
daemon_alive || fail "the daemon died"
samples_after=$("$FLIGHTREC" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
[ "$samples_after" -gt "$samples_before" ] || fail "no samples recorded during the test"
stop_daemon
echo "slowloris: ok"
