#!/bin/bash
# Regression: a process whose name is not UTF-8 (a program file named with
# byte 0xff) made /api/profile and /api/threads send bytes that are not
# UTF-8, and the page's JSON.parse refused them. Every name must arrive as
# valid UTF-8, the bad byte as U+FFFD, in the flame graph, the threads and
# the timeline.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v python3 >/dev/null || skip "needs python3 for the HTTP client"

start_daemon
name=$(printf 'b\377urn')
cp "$BURN" "$T/$name"
"$T/$name" 8 1 0 >/dev/null &
PID=$!
wait_seals 3
"$FLIGHTREC" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
wait_serve_url

python3 - "$url" "$PID" <<'PY' || fail "a name was not sent as UTF-8"
import json, os, sys, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
def get(path):
    # Strict decoding, as a browser's JSON.parse of response.text() would
    # need: a byte that is not UTF-8 raises here.
    req = urllib.request.Request(
        url + path, headers={"Authorization": "Bearer " + os.environ["FR_SERVE_TOKEN"]})
    return json.loads(urllib.request.urlopen(req, timeout=60).read().decode("utf-8"))
tree = get("api/profile?window=3s&pid=%d" % pid)["tree"]
assert [c["name"] for c in tree["children"]] == ["b\ufffdurn"], tree["children"]
threads = get("api/threads?pid=%d" % pid)["threads"]
assert threads and threads[0]["thread"] == "b\ufffdurn", threads
groups = [g["name"] for g in get("api/timeline?top=32")["groups"]]
assert "b\ufffdurn (%d)" % pid in groups, groups
print("names arrive as UTF-8:", tree["children"][0]["name"], threads[0]["thread"])
PY
kill "$PID"
