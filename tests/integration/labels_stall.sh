#!/bin/bash
# Label memory and label libraries a process holds back, on a FUSE file
# system that answers opens and never reads (fuse_hold open):
# - labels_fuse_lib maps a file of it named libflightrec.so.1: the
#   recorder's look-up of its registry reads that file and never gets an
#   answer; it is left to its worker after its deadline, the process's
#   samples say "unreadable: read stalled" and the daemon logs it;
# - labels_demo hostile stall points its thread's current record into a
#   mapping of such a file: reads at samples cannot wait for a page (they
#   fail, and are counted), and the thread's samples carry no labels from
#   there.
# Proven: meanwhile the recorder answers, drains (its ingest thread never
# stalled), labels an honest process alongside; once the file system goes
# away the stuck reads return and the daemon stops cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
DEMO=$BUILD/tests/integration/labels_demo
FUSE_LIB=$BUILD/tests/integration/labels_fuse_lib

"$BUILD/tests/integration/fuse_hold" open >"$T/fuse.out" 2>"$T/fuse.err" &
FUSE_PID=$!
try_until 5 '[ -s "$T/fuse.out" ] || ! kill -0 "$FUSE_PID" 2>/dev/null'
if ! kill -0 "$FUSE_PID" 2>/dev/null; then
	wait "$FUSE_PID"
	[ $? = 77 ] && skip "cannot mount a FUSE file system here"
	fail "fuse_hold did not mount: $(cat "$T/fuse.err")"
fi
[ -s "$T/fuse.out" ] || fail "fuse_hold printed no directory: $(cat "$T/fuse.err")"
FUSE_DIR=$(cat "$T/fuse.out")
export LABELS_STALL_FILE=$FUSE_DIR/file

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels
faults0=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["labels"]["read_faults"])' \
	< <("$FLIGHTREC" status --json))

"$FUSE_LIB" "$FUSE_DIR/libflightrec.so.1" 8 >"$T/lib.out" 2>"$T/lib.err" &
LIB=$!
"$DEMO" hostile stall 8 >"$T/stall.out" 2>"$T/stall.err" &
STALL=$!
"$DEMO" split 8 >"$T/honest.out" &
HONEST=$!
from=$(($(date +%s) + 2))
for _ in $(seq 8); do
	sleep 1
	daemon_alive || fail "flightrecd stopped answering with reads stuck"
	ingest_fresh
done
wait "$LIB" || fail "labels_fuse_lib failed: $(cat "$T/lib.err")"
wait "$STALL" || fail "labels_demo hostile stall failed: $(cat "$T/stall.err")"
wait "$HONEST" || fail "labels_demo split failed"
to=$(date +%s)
daemon_alive || fail "flightrecd stopped answering with reads stuck"
timeout 60 "$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$LIB,$STALL,$HONEST" \
	-o "$T/all.pb.gz" 2>"$T/err" || fail "attach failed with reads stuck: $(cat "$T/err")"
faults=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["labels"]["read_faults"])' \
	"$T/status.json")
echo "reads at samples that failed: $((faults - faults0))"

python3 - "$T/all.pb.gz" "$LIB" "$STALL" "$HONEST" <<'PY' || fail "labels wrong with reads stuck"
import collections, sys
from pprof_samples import samples

lib, stall, honest = (int(x) for x in sys.argv[2:])
c = collections.defaultdict(collections.Counter)
bad = 0
for s in samples(sys.argv[1]):
    n, pid = s["values"][0], s["num"].get("pid")
    app = {k: v for k, v in s["str"].items() if k not in ("comm", "thread", "cgroup")}
    if pid == lib:
        ok = app == {"flightrec.labels": "unreadable: read stalled"}
        c["fuse library"]["read stalled" if ok else repr(app)] += n
    elif pid == stall:
        ok = app in ({}, {"victim": "stall"})
        c["record in FUSE"]["none" if not app else "victim=stall" if ok else repr(app)] += n
    elif pid == honest:
        ok = set(app) <= {"phase"}
        c["honest"]["phase" if app else "none"] += n
    else:
        continue
    if not ok:
        bad += n
for k in sorted(c):
    print("%-15s %s" % (k, ", ".join("%s %d" % kv for kv in sorted(c[k].items()))))
if c["fuse library"]["read stalled"] == 0 or len(c["fuse library"]) != 1:
    print("the process whose library never answers is not said to have stalled")
    bad += 1
if c["honest"]["phase"] == 0:
    print("the honest process lost its labels")
    bad += 1
sys.exit(1 if bad else 0)
PY
grep -q 'took longer than' "$T/daemon.log" || fail "the daemon did not log the stalled read"
# The file system goes: the stuck reads fail and their workers end.
kill -TERM "$FUSE_PID"
wait "$FUSE_PID"
ingest_fresh
stop_daemon
echo PASS
