#!/bin/bash
# flightrec serve adds no rights: run by a user who is not root (in the
# socket's group), its page's timeline, flame graph, pprof download and
# threads show that user's processes and none of root's, as the recorder
# answers that user's own attach.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v python3 >/dev/null || skip "needs python3 for the HTTP client"
need_test_users
U=frsrv$$
G=frsrvg$$
serve_user_cleanup() {
	# runuser forks: killing its job leaves the user's serve and burn
	# running. Every process of this test-only user is the test's.
	pkill -KILL -u "$U" 2>/dev/null
	test_users_cleanup
}
trap serve_user_cleanup EXIT
add_test_group "$G"
add_test_user "$U" "$G"
mkdir "$T/u" && chown "$U" "$T/u" && chmod 0700 "$T/u"
cp "$BURN" "$T/rootburn"
cp "$BURN" "$T/u/userburn" && chown "$U" "$T/u/userburn"
cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"}}
JSON
start_daemon --config "$T/config.json"

"$T/rootburn" 12 1 0 >/dev/null &
ROOT_PID=$!
runuser -u "$U" -- "$T/u/userburn" 12 1 0 >/dev/null &
wait_until 5 "userburn running as $U" 'pgrep -u "$U" -x userburn >/dev/null'
wait_seals 3
USER_PID=$(pgrep -u "$U" -x userburn)
[ -n "$USER_PID" ] || fail "userburn is not running"

runuser -u "$U" -- "$FLIGHTREC" serve --socket "$SOCK" --listen 127.0.0.1:0 \
	>"$T/serve.out" 2>"$T/serve.err" &
wait_serve_url

python3 - "$url" "$ROOT_PID" "$USER_PID" "$T/range.pb.gz" <<'PY' || fail "the page showed what the user may not see"
import json, os, sys, urllib.request
url, root_pid, user_pid, pb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def get(path):
    auth = {"Authorization": "Bearer " + os.environ["FR_SERVE_TOKEN"]}
    return urllib.request.urlopen(urllib.request.Request(url + path, headers=auth),
                                  timeout=60).read()
def names(node, out):
    out.add(node["name"])
    for c in node.get("children", []):
        names(c, out)
    return out

t = json.loads(get("api/timeline?top=32"))
groups = [g["name"] for g in t["groups"]]
assert "userburn (%d)" % user_pid in groups, groups
assert not any(g.startswith("rootburn") for g in groups), groups
print("case timeline: ok", groups)

tree = json.loads(get("api/profile?window=3s"))["tree"]
top = [c["name"] for c in tree["children"]]
assert "userburn" in top and "rootburn" not in top, top
print("case profile: ok", top)

tree = json.loads(get("api/profile?window=3s&pid=%d" % root_pid))["tree"]
assert tree["value"] == 0 and not tree["children"], tree
print("case profile_root_pid: ok")

open(pb, "wb").write(get("api/pprof?window=3s"))
print("case pprof: ok")

th = json.loads(get("api/threads?pid=%d" % root_pid))
assert th["threads"] == [], th
th = json.loads(get("api/threads?pid=%d" % user_pid))
assert th["threads"] and all(x["pid"] == user_pid for x in th["threads"]), th
print("case threads: ok")
PY
# The download is the user's own attach: no root process in it.
"$FLIGHTREC" top "$T/range.pb.gz" -n 100 >"$T/top" || fail "the download cannot be read"
grep -q fr_burn "$T/top" || fail "the download has no burn frames: $(cat "$T/top")"
kill "$ROOT_PID" "$USER_PID"
