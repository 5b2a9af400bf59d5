#!/bin/bash
# Regression serve_sort_race: flame graphs (their node cap) and thread
# views (their grouping) were sorted with comparators that read their
# data from a global each caller set, and flightrec serve answers on
# several threads at once: two answers built together sorted one's data
# by the other's, past its end, and serve crashed (a fresh clone's run of
# serve_concurrent died of SIGSEGV). Four clients ask for flame graphs
# of different windows and the threads of a 32-thread process, 10 times
# each, all at once (alone: their load made serve_concurrent, beside
# it, see a stalled recorder answer at once): every answer is 200 with
# its own content, and serve is still well. The race's window is narrow: on an idle machine one run
# of this test did not crash the old code, while tests/unit/test_serve.c
# (trees_on_threads) crashes the old flame graph sort every time; this
# test is the whole path's guard, for the thread view's sort too.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v python3 >/dev/null || skip "needs python3 for the HTTP client"

start_daemon --hz 199
"$BUILD/tests/integration/sleepers" 32 120 >"$T/sleepers.out" 2>&1 &
SLEEPERS=$!
try_until 10 "grep -q ready '$T/sleepers.out'"
kill -USR1 "$SLEEPERS"
"$BURN" 120 2 >/dev/null 2>&1 &
BURNER=$!
wait_seals 3
"$FLIGHTREC" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url

python3 - "$url" "$SLEEPERS" <<'PY' || fail "answers built together: $(tail -5 "$T/serve.err")"
import json, os, sys, threading, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
errors = []
def get(path):
    req = urllib.request.Request(
        url + path, headers={"Authorization": "Bearer " + os.environ["FR_SERVE_TOKEN"]})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, json.loads(r.read())
def client(k):
    for i in range(10):
        try:
            if k % 2:
                st, o = get("api/threads?pid=%d" % pid)
                ok = st == 200 and len(o["threads"]) >= 32 and \
                    all(t["pid"] == pid for t in o["threads"])
            else:
                st, o = get("api/profile?window=%ds" % (2 + k + i % 3))
                ok = st == 200 and o["tree"]["value"] > 0
            if not ok:
                errors.append((k, i, st))
        except Exception as e:
            errors.append((k, i, repr(e)))
ts = [threading.Thread(target=client, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("40 answers built together, %d wrong %s" % (len(errors), errors[:5]))
sys.exit(1 if errors else 0)
PY
kill -0 "$SERVE_PID" || fail "serve died"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
kill "$SLEEPERS" "$BURNER" 2>/dev/null
wait "$SLEEPERS" "$BURNER" 2>/dev/null
stop_daemon
echo PASS
