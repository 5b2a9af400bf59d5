#!/bin/bash
# A process that lies in the memory the recorder reads its labels from
# (garbage magic, pointers to nowhere, tids and logs rewritten under the
# reader, absurd set counts and pairs, labels churning faster than the log
# holds) never hangs or crashes the daemon, and never gets labels out of
# it: its samples carry the recorder's reason ("flightrec.labels") or
# nothing, while an honest process alongside keeps its labels.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
DEMO=$BUILD/tests/integration/labels_demo

start_daemon
pids=
for mode in magic pointers tids logs sets churn; do
	"$DEMO" hostile "$mode" 8 >"$T/$mode.out" &
	pids="$pids $!"
done
"$DEMO" split 8 >"$T/honest.out" &
HONEST=$!
for p in $pids $HONEST; do
	wait "$p" || fail "labels_demo $p failed"
done
daemon_alive || fail "flightrecd died reading hostile labels"
timeout 60 "$FLIGHTREC" attach --window 30s -o "$T/all.pb.gz" 2>"$T/err" ||
	fail "attach failed: $(cat "$T/err")"
"$GO" tool pprof -tags "$T/all.pb.gz" >"$T/all.tags" 2>/dev/null
# The honest process keeps its labels.
grep -q '^ *phase: Total' "$T/all.tags" || fail "the honest process lost its labels"
# Nothing of the scribbles became a label: every user key is one the
# programs set (victim, churn, phase) or the recorder's reason.
awk '/^ *[^ ]+: Total/ { k = $1; sub(":", "", k); print k }' "$T/all.tags" | sort -u >"$T/keys"
bad=$(grep -v -x -e pid -e tid -e comm -e thread -e cgroup -e victim -e churn -e phase \
	-e flightrec.labels "$T/keys")
[ -z "$bad" ] || fail "labels that no program set: $bad"
# The processes whose registry was corrupted are marked, not trusted.
grep -q 'application labels of pid' "$T/daemon.log" ||
	fail "the daemon did not report the unreadable processes"
awk '/^ *flightrec.labels: Total/ { on = 1; next } /: Total/ { on = 0 } on' "$T/all.tags"
# status counts them: at least the garbage magic and the wild pointers.
"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed"
unreadable=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unreadable_label_processes"])' "$T/status.json")
[ "$unreadable" -ge 2 ] || fail "status says $unreadable processes were not read, expected 2 or more"
echo "status: $unreadable processes whose labels were not read"
daemon_alive || fail "flightrecd died"
stop_daemon
echo "PASS"
