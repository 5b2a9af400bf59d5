#!/bin/bash
# Regression serve_concurrent: flightrec serve answered one request at a
# time, so a slow answer of the recorder held up every other request. The
# recorder is made slow for real: its ingest thread is frozen with ptrace
# (freeze_thread), so a flame graph waits out the recorder's flush timeout
# (seconds) while its request threads still answer status. With two such
# flame graphs in flight, /api/status, the page and an asset must all be
# answered before either flame graph is (ordering, not timing); then the
# flame graphs are answered too, and serve is still well.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v python3 >/dev/null || skip "needs python3 for the HTTP client"

FREEZE=$BUILD/tests/integration/freeze_thread
start_daemon --hz 199
"$BURN" 30 1 >/dev/null 2>&1 &
wait_seals
"$FLIGHTREC" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url

"$FREEZE" "$DAEMON_PID" 8 >"$T/freeze.out" 2>"$T/freeze.err" &
freezer=$!
try_until 10 'grep -q frozen "$T/freeze.out"'
grep -q frozen "$T/freeze.out" || { cat "$T/freeze.err" >&2; skip "cannot freeze a thread with ptrace here"; }

python3 - "$url" <<'PY' || fail "a fast request waited for a slow one"
import http.client, os, sys, threading, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
done = []          # paths, in the order their answers completed
lock = threading.Lock()
sent = {}

def get(path):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("GET", path,
              headers={"Authorization": "Bearer " + os.environ["FR_SERVE_TOKEN"]})
    with lock:
        sent[path] = True
    r = c.getresponse()
    body = r.read()
    with lock:
        done.append((path, r.status, len(body)))

slow = ["/api/profile?window=10m", "/api/profile?window=9m"]
fast = ["/api/status", "/", "/favicon.ico"]
ts = [threading.Thread(target=get, args=(p,)) for p in slow]
for t in ts:
    t.start()
# The slow requests are sent (and so read by serve) before the fast ones.
while len(sent) < len(slow):
    time.sleep(0.01)
time.sleep(0.5)
with lock:
    assert not done, "a flame graph of a stalled recorder was answered at once: %s" % done
fs = [threading.Thread(target=get, args=(p,)) for p in fast]
for t in fs:
    t.start()
for t in fs:
    t.join()
with lock:
    early = list(done)
for t in ts:
    t.join()
print("answered in order:", done)
assert [p for p, _, _ in early] and all(p in fast for p, _, _ in early), \
    "a fast request was answered only after a slow one: %s" % early
assert sorted(p for p, _, _ in early) == sorted(fast), early
assert all(s == 200 for p, s, _ in done if p == "/api/status" or p == "/"), done
assert all(s in (200, 204) for p, s, _ in early), early
# The slow ones are answered too (a profile, or the recorder's refusal).
assert all(s in (200, 502) for p, s, _ in done if p in slow), done
PY
wait "$freezer" || fail "freeze_thread failed: $(cat "$T/freeze.err")"
kill -0 "$SERVE_PID" || fail "serve died"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
stop_daemon
echo PASS
