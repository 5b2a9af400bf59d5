#!/bin/bash
# Regression serve_rights: `flightrec serve`, run by root on loopback as
# the README says, answered every local user with root's view: another
# user's `curl URL/api/threads?pid=PID` got root's thread names, and
# /api/profile, /api/pprof root's whole-machine profile. Now a real second
# user (useradd) gets 401 or 403 from every path of the page, without the
# token and with it (a token leaked through a history or a shared screen is
# not enough: the connection's own uid is checked, 403), over IPv4
# loopback, IPv6 loopback, another loopback address, and the machine's own
# non-loopback address with --allow-remote; root, who runs serve, gets
# every answer with the token (root's process in them), and 401 without it
# or with a wrong one. A loopback connection whose owner cannot be learnt
# (its client closed before serve accepted it) is refused, and serve says
# why. Served by a user who is not root, the page answers
# that user and root, not another. With --allow-remote a peer on another
# machine (here
# another network namespace, over a veth pair) is answered on the token
# alone, as documented, and refused without it.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v python3 >/dev/null || skip "needs python3 for the HTTP client"
need_test_users
U=frrights$$
G=frrightsg$$
NS_PIDS=
serve_rights_cleanup() {
	[ -n "$NS_PIDS" ] && kill -9 $NS_PIDS 2>/dev/null
	pkill -KILL -u "$U" 2>/dev/null
	test_users_cleanup
}
trap serve_rights_cleanup EXIT
add_test_group "$G"
add_test_user "$U" "$G" -M
start_daemon

cp "$BURN" "$T/rootburn"
"$T/rootburn" 120 2 0 >/dev/null &
ROOT_PID=$!

# The client, run as root or as the user: every path of the page, each
# with no token and with the token as the query parameter, the cookie and
# a Bearer header. Modes: "owner" (200 with the token, 401 without or
# with a wrong one), "other" (403 with the token, 401 or 403 without; no
# answer holds root's data), "remote" (200 with the token, 401 without).
# With "quick", the paths that ask the recorder for a profile are left
# out (root's profiles were asked for already, on another address); with
# "page", all that asks the recorder.
cat >"$T/client.py" <<'PY'
import http.client, socket, sys, time
host, port, token, mode, root_pid = sys.argv[1:6]
quick = sys.argv[6:] in (["quick"], ["page"])
page = sys.argv[6:] == ["page"]
now = time.time()
paths = ["/", "/index.html", "/assets/app.js", "/favicon.ico", "/api/status",
         "/api/timeline", "/api/profile?window=5s",
         "/api/pprof?window=5s",
         "/api/diff?from=%d&to=%d&from2=%d&to2=%d" % (now - 8, now - 4, now - 4, now - 1),
         "/api/threads?pid=" + root_pid]
if quick:
    paths = [p for p in paths if not p.startswith(("/api/profile", "/api/pprof", "/api/diff"))]
if page:
    paths = [p for p in paths if not p.startswith("/api/")]

def get(path, headers):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    return r.status, r.read()

def with_query(path, t):
    return path + ("&" if "?" in path else "?") + "token=" + t

cookie = "flightrec_token_" + port
bad = []
for path in paths:
    tries = [("none", path, {}),
             ("wrong", with_query(path, "0" * len(token)), {}),
             ("query", with_query(path, token), {}),
             ("cookie", path, {"Cookie": "%s=%s" % (cookie, token)}),
             ("bearer", path, {"Authorization": "Bearer " + token})]
    for how, p, h in tries:
        status, body = get(p, h)
        right = how in ("query", "cookie", "bearer")
        if mode == "other":
            ok = status == 403 if right else status in (401, 403)
            ok = ok and b"rootburn" not in body and token.encode() not in body
        else:
            ok = status in (200, 204) if right else status == 401
            ok = ok and (right or token.encode() not in body)
        print("%-6s %-6s %s %s" % (mode, how, status, path))
        if not ok:
            bad.append("%s %s: %d %r" % (how, p, status, body[:200]))
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
chmod 0644 "$T/client.py"

# as_user HOST PORT: the client as the other user, with root's token.
as_user() {
	runuser -u "$U" -- python3 "$T/client.py" "$1" "$2" "$token" other "$ROOT_PID" ||
		fail "serve answered uid $(id -u "$U") at $1 (serve: $(tail -3 "$T/serve.err"))"
}
as_root() { # HOST PORT [quick]
	python3 "$T/client.py" "$1" "$2" "$token" owner "$ROOT_PID" ${3:+"$3"} ||
		fail "serve did not answer root at $1 as it should"
}
# start_serve ARGS...: serve as root, its address in url, port, token.
start_serve() {
	# Not the last serve's address: wait_serve_url waits for a file.
	rm -f "$T/serve.out"
	"$FLIGHTREC" serve "$@" >"$T/serve.out" 2>"$T/serve.err" &
	SERVE_PID=$!
	wait_serve_url
	port=${url##*:}
	port=${port%/}
}
stop_serve() {
	grep -qF "$token" "$T/serve.err" && fail "the token is in serve's errors"
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
}

# case loopback: serve on 127.0.0.1, as the README has it.
start_serve --listen 127.0.0.1:0
[ -n "$token" ] || fail "the address has no token: $page_url"
# Root's page has root's data (so the other user's refusals are of
# something): its threads, its process in the flame graph.
python3 - "$url" "$token" "$ROOT_PID" <<'PY' || fail "root's page lacks root's data"
import json, sys, time, urllib.request
url, token, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
def get(path):
    req = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + token})
    return urllib.request.urlopen(req, timeout=60).read()
for _ in range(100):
    top = [c["name"] for c in json.loads(get("api/profile?window=3s"))["tree"]["children"]]
    if "rootburn" in top:
        break
    time.sleep(0.2)
assert "rootburn" in top, top
th = json.loads(get("api/threads?pid=%d" % pid))["threads"]
assert th and all(t["pid"] == pid for t in th), th
assert get("api/pprof?window=3s")[:2] == b"\x1f\x8b"
print("root's page: rootburn in the flame graph,", len(th), "threads")
PY

# case fail_closed: a loopback connection whose socket's owner cannot be
# learnt is refused and said so. Its client sends its request (with the
# token) and closes while serve is stopped, before serve accepts it: what
# is left of its socket is no one's (the kernel says uid 0 of it, which
# was taken for root's). First, so that no refusal before it holds up
# its line (serve says at most one a second).
kill -STOP "$SERVE_PID"
cport=$(python3 - "$port" "$token" <<'PY'
import socket, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
cport = s.getsockname()[1]
s.sendall(("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
           "Authorization: Bearer %s\r\n\r\n" % (port, token)).encode())
s.close()
# Until no process holds the socket: its /proc/net/tcp line has inode 0.
want = "0100007F:%04X" % cport
for _ in range(200):
    lines = [l.split() for l in open("/proc/net/tcp").read().splitlines()[1:]]
    if not any(f[1] == want and f[9] != "0" for f in lines):
        break
    time.sleep(0.01)
print(cport)
PY
)
kill -CONT "$SERVE_PID"
try_until 5 'grep -q "refused the connection from 127.0.0.1:$cport: its socket is neither" "$T/serve.err"'
grep -q "refused the connection from 127.0.0.1:$cport: its socket is neither in sock_diag's answer nor in /proc/net/tcp, so its owner cannot be learnt" "$T/serve.err" ||
	fail "a connection whose owner cannot be learnt was not refused: $(cat "$T/serve.err")"
echo "case fail_closed: ok"
as_root 127.0.0.1 "$port"
as_user 127.0.0.1 "$port"
grep -q "refused the connection from 127.0.0.1:[0-9]*: it is uid $(id -u "$U")'s" "$T/serve.err" ||
	fail "serve did not say why it refused: $(cat "$T/serve.err")"

stop_serve
echo "case loopback: ok"

# case ipv6: the same on [::1].
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
	start_serve --listen '[::1]:0'
	as_root ::1 "$port" quick
	as_user ::1 "$port"
	stop_serve
	echo "case ipv6: ok"
else
	echo "case ipv6: no IPv6 loopback here, not tested"
fi

# case all_addresses: --allow-remote on 0.0.0.0; a local user is local on
# any address of this machine: another loopback address, and a
# non-loopback one.
start_serve --listen 0.0.0.0:0 --allow-remote
as_root 127.0.0.2 "$port" quick
as_user 127.0.0.2 "$port"
addr=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
if [ -n "$addr" ]; then
	as_root "$addr" "$port" quick
	as_user "$addr" "$port"
	echo "case all_addresses: ok (127.0.0.2 and $addr)"
else
	echo "case all_addresses: ok (127.0.0.2; no global address here)"
fi
stop_serve

# case user_serve: serve run by a user who is not root answers that user
# and root, and not another user (nobody), token or not. The user may not
# use the recorder here: the page and its assets are what is asked.
rm -f "$T/serve.out"
runuser -u "$U" -- "$FLIGHTREC" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url
port=${url##*:}
port=${port%/}
runuser -u "$U" -- python3 "$T/client.py" 127.0.0.1 "$port" "$token" owner "$ROOT_PID" page ||
	fail "serve run by $U did not answer $U"
as_root 127.0.0.1 "$port" page
runuser -u nobody -- python3 "$T/client.py" 127.0.0.1 "$port" "$token" other "$ROOT_PID" page ||
	fail "serve run by $U answered nobody"
grep -q "it is uid 65534's; serve answers uid $(id -u "$U") and root only" "$T/serve.err" ||
	fail "serve did not say why it refused nobody: $(cat "$T/serve.err")"
# runuser forks: serve is its child.
kill -TERM $(pgrep -P "$SERVE_PID")
wait "$SERVE_PID" || fail "serve run by $U exited with $? on SIGTERM"
echo "case user_serve: ok"

# case remote: serve in a network namespace of its own, the client in
# another, joined by a veth pair: a peer on another machine as far as
# serve can tell. It is answered with the token alone (whoever it is), and
# refused without. A user of serve's own namespace is still refused.
unshare -n sleep infinity &
NS_A=$!
unshare -n sleep infinity &
NS_B=$!
NS_PIDS="$NS_A $NS_B"
own_ns() { [ "$(readlink "/proc/$1/ns/net")" != "$(readlink /proc/self/ns/net)" ]; }
wait_until 5 "the two network namespaces" 'own_ns "$NS_A" && own_ns "$NS_B"'
inA() { nsenter -t "$NS_A" -n -- "$@"; }
inB() { nsenter -t "$NS_B" -n -- "$@"; }
if inA ip link add name frra type veth peer name frrb 2>"$T/veth.err" &&
	inA ip link set frrb netns "$NS_B"; then
	inA ip link set lo up && inA ip addr add 10.231.7.1/24 dev frra && inA ip link set frra up &&
		inB ip link set lo up && inB ip addr add 10.231.7.2/24 dev frrb &&
		inB ip link set frrb up || fail "cannot set up the veth pair"
	rm -f "$T/serve.out"
	nsenter -t "$NS_A" -n -- "$FLIGHTREC" serve --listen 10.231.7.1:0 --allow-remote >"$T/serve.out" 2>"$T/serve.err" &
	SERVE_PID=$!
	wait_serve_url
	port=${url##*:}
	port=${port%/}
	try_until 5 'inB python3 -c "import socket; socket.create_connection(("10.231.7.1", $port), 1)" 2>/dev/null'
	inB python3 "$T/client.py" 10.231.7.1 "$port" "$token" remote "$ROOT_PID" ||
		fail "a remote peer was not answered on the token alone"
	inB runuser -u "$U" -- python3 "$T/client.py" 10.231.7.1 "$port" "$token" remote "$ROOT_PID" quick ||
		fail "a remote peer of another uid was not answered on the token alone"
	inA runuser -u "$U" -- python3 "$T/client.py" 10.231.7.1 "$port" "$token" other "$ROOT_PID" ||
		fail "a user of serve's own namespace was answered"
	stop_serve
	echo "case remote: ok"
else
	echo "case remote: cannot make a veth pair here ($(cat "$T/veth.err")), not tested"
fi
kill $NS_PIDS
NS_PIDS=
kill "$ROOT_PID"
echo PASS
