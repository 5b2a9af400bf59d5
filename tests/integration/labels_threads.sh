#!/bin/bash
# flightrec threads of a process labelled with libflightrec
# (labels_threads): each thread's application labels are those of the row
# its stack comes from. Proven, with threads that labelled themselves and
# then spun, or blocked in read() for 3 s and more (their labels come from
# their open wait, read with their stack):
# - --json: each thread's "labels" object holds exactly its own labels,
#   none for a thread without; the readers are sleeping in read, waiting
#   over 2 s;
# - -o: each thread's pprof sample carries its labels as string labels;
# - the text: a "labels k=v ..." line under each group of labelled
#   threads; threads with the same state and stack but different labels
#   are not grouped together, those with the same labels are.
# Said but not required (both depend on timing): the labels of a thread
# blocked since the process's first milliseconds ("early": its wait's
# stack may be read before the recorder found the process, and is not
# read again), and of the spinner when it is runnable (a wait begun since
# the last seal is not read yet).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
LT=$BUILD/tests/integration/labels_threads

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels

"$LT" >"$T/lt.out" &
LT_PID=$!
wait_lines "$T/lt.out" ready
# The readers label themselves and block once the recorder reads the
# process (the spinner's samples carry its labels).
wait_labelled "$LT_PID" tenant
kill -USR1 "$LT_PID"
wait_lines "$T/lt.out" go
ready=$(date +%s%N)
# The readers blocked before "go": waiting over 2 s once 3 s went by.
try_until 10 '[ $(($(date +%s%N) - ready)) -ge 3000000000 ]'
"$FLIGHTREC" threads --pid "$LT_PID" --json >"$T/t.json" 2>"$T/err" ||
	fail "threads --json failed: $(cat "$T/err")"
"$FLIGHTREC" threads --pid "$LT_PID" -o "$T/t.pb.gz" >"$T/o.out" 2>"$T/err" ||
	fail "threads -o failed: $(cat "$T/err")"
"$FLIGHTREC" threads --pid "$LT_PID" >"$T/t.txt" 2>"$T/err" ||
	fail "threads failed: $(cat "$T/err")"
cat "$T/t.txt"

python3 - "$T/lt.out" "$T/t.json" "$T/t.pb.gz" "$T/t.txt" <<'PY' || fail "threads do not show their labels"
import json, sys
from pprof_samples import samples

want = {
    "spinner": {"role": "spin", "tenant": "t1"},
    "reader-1": {"role": "read", "req": "r1"},
    "reader-2": {"role": "read", "req": "r2"},
    "reader-3": {"role": "read", "req": "r1"},
    "plain": {},
    "main": {},
    "early": {"role": "early"},
}
names = {}
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) == 2:
        names[int(w[0])] = w[1]
bad = 0

# --json
threads = json.load(open(sys.argv[2]))["threads"]
seen = set()
def timing(name, state):
    """Whether a thread's labels may be missing for reasons of timing."""
    return name == "early" or (name == "spinner" and state == "runnable")

for t in threads:
    name = names.get(t["tid"])
    if name is None:
        continue
    seen.add(name)
    got = t.get("labels", {})
    ok = got == want[name]
    if name.startswith("reader") or name in ("plain", "early"):
        ok = ok and t["state"] == "sleeping" and t.get("wait") == "read" and \
            t.get("waiting_ns", 0) > 2 * 10**9
    verdict = "ok  " if ok else "NOTE" if timing(name, t["state"]) and not got else "BAD "
    print("json %-8s %s labels %s, %s%s" % (name, verdict, got, t["state"],
          ", in %s for %.1f s" % (t.get("wait"), t.get("waiting_ns", 0) / 1e9) if "wait" in t else ""))
    bad += verdict == "BAD "
if seen != set(want):
    print("json: threads missing: %s" % (set(want) - seen))
    bad += 1

# -o
seen = set()
for s in samples(sys.argv[3]):
    name = names.get(s["num"].get("tid"))
    if name is None:
        continue
    seen.add(name)
    app = {k: v for k, v in s["str"].items()
           if k not in ("comm", "thread", "cgroup", "state", "wait", "syscall", "wchan", "stack")}
    if app != want[name]:
        note = timing(name, s["str"].get("state")) and not app
        print("pprof %s %s: labels %s, not %s" % ("NOTE" if note else "BAD ", name, app, want[name]))
        bad += not note
if seen != set(want):
    print("pprof: threads missing: %s" % (set(want) - seen))
    bad += 1

# text: groups of "N thread(s): ...", an optional "    labels k=v ..." line,
# then "    tids TID (NAME) ...".
groups, cur = [], None
for line in open(sys.argv[4]):
    if line[:1].isdigit() and " thread" in line:
        cur = {"labels": {}, "names": set(), "state": line.split(": ", 1)[1].split(",")[0].split()[0]}
        groups.append(cur)
    elif cur is not None and line.startswith("    labels "):
        cur["labels"] = dict(kv.split("=", 1) for kv in line.split()[1:])
    elif cur is not None and line.startswith("    tids "):
        for w in line.split()[1:]:
            w = w.strip("(),")
            if w in want:
                cur["names"].add(w)
for g in groups:
    for name in g["names"]:
        if g["labels"] != want[name]:
            note = timing(name, g["state"]) and not g["labels"]
            print("text %s: %s in a group labelled %s" % ("NOTE" if note else "BAD ", name, g["labels"]))
            bad += not note
r1 = [g for g in groups if "reader-1" in g["names"]]
if not r1 or "reader-3" not in r1[0]["names"] or r1[0]["names"] & {"reader-2", "plain"}:
    print("text: reader-1 and reader-3 (same labels) are not one group without the others")
    bad += 1
else:
    print("text: reader-1 and reader-3 grouped, reader-2 and plain apart")
sys.exit(1 if bad else 0)
PY
kill "$LT_PID"
wait "$LT_PID" 2>/dev/null
stop_daemon
echo PASS
