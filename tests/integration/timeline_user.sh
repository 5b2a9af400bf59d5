#!/bin/bash
# flightrec timeline for a user who is not root: a real unprivileged user
# in the socket's group asks for the timeline while root and the user each
# ran a burner. The user's timeline holds the user's burner and nothing of
# root's (not by name, and not in "other" or the events: everything it
# counts adds up to about the user's own CPU); it says so on stderr.
# Root's timeline of the same window has both burners.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_test_users
U=frtlu$$
G=frtlg$$
add_test_group "$G"
add_test_user "$U" "$G"
mkdir "$T/u" && chown "$U" "$T/u" && chmod 0700 "$T/u"
cp "$BURN" "$T/tlrootburn"
cp "$BURN" "$T/u/tluserburn" && chown "$U" "$T/u/tluserburn"
cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"},
 "sessions": [{"name": "ops", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
as_user() { runuser -u "$U" -- "$@"; }

FROM=$(date +%s)
"$T/tlrootburn" 3 1 0 >"$T/root.out" &
ROOT_BURN=$!
as_user "$T/u/tluserburn" 3 1 0 >"$T/user.out" || fail "the user's burner failed"
wait "$ROOT_BURN" || fail "root's burner failed"
TO=$(($(date +%s) + 1))
wait_until 5 "the window's end" '[ "$(date +%s)" -gt "$TO" ]'

as_user "$FLIGHTREC" timeline --from "$FROM" --to "$TO" --step 1s --top 32 --json \
	>"$T/user.json" 2>"$T/user.err" || fail "timeline as $U failed: $(cat "$T/user.err")"
grep -q "only your own processes" "$T/user.err" ||
	fail "the user is not told the timeline is limited: $(cat "$T/user.err")"
"$FLIGHTREC" timeline --from "$FROM" --to "$TO" --step 1s --top 32 --json >"$T/root.json" ||
	fail "timeline as root failed"
python3 - "$T" <<'PY' || fail "the user's timeline is not limited to the user's processes"
import json, sys
T = sys.argv[1]
user, root = (json.load(open(f"{T}/{n}.json")) for n in ("user", "root"))
def pid(name):
    return int(dict(kv.split("=") for kv in open(f"{T}/{name}.out").read().split())["pid"])
def cpu(name):
    return float(dict(kv.split("=") for kv in open(f"{T}/{name}.out").read().split())["cpu_seconds"]) * 1e9
# A group is a (pid, comm): runuser's child is "runuser" until its exec.
def by_pid(tl):
    d = {}
    for g in tl["groups"]:
        d[g.get("pid")] = d.get(g.get("pid"), 0) + g["total"]
    return d
un, rn = by_pid(user), by_pid(root)
assert pid("user") in un and pid("root") not in un, [g["name"] for g in user["groups"]]
assert pid("user") in rn and pid("root") in rn, [g["name"] for g in root["groups"]]
assert not any("tlrootburn" in g["name"] for g in user["groups"])
total = sum(g["total"] for g in user["groups"])
mine = un[pid("user")]
print("user: %.2f CPU-s in all, %.2f of its burner (measured %.2f); root: %d groups" % (
      total / 1e9, mine / 1e9, cpu("user") / 1e9, len(root["groups"])))
assert abs(mine - cpu("user")) <= 0.25 * cpu("user"), (mine, cpu("user"))
# Root's burner ran as long: had it leaked into "other", the sum would show it.
assert total <= mine + 0.3 * cpu("root"), (total, mine)
assert user["samples"] < root["samples"], (user["samples"], root["samples"])
PY
echo "PASS"
