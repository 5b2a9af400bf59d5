#!/bin/bash
# Regression: a process whose label logs sit in a mapping whose pages never
# come in (a FUSE file that answers opens, never reads) makes the
# recorder's read wait forever. The read is left to its worker after its
# deadline; the daemon goes on recording, answers, labels an honest process
# alongside, and says the other's labels stalled. Once the file system
# goes away the stuck read returns and the daemon stops cleanly.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
DEMO=$BUILD/tests/integration/labels_demo

"$BUILD/tests/integration/fuse_hold" open >"$T/fuse.out" 2>"$T/fuse.err" &
FUSE_PID=$!
for _ in $(seq 50); do [ -s "$T/fuse.out" ] && break; sleep 0.1; done
wait_fuse_status=0
kill -0 "$FUSE_PID" 2>/dev/null || { wait "$FUSE_PID"; wait_fuse_status=$?; }
[ "$wait_fuse_status" = 77 ] && skip "cannot mount a FUSE file system here"
[ -s "$T/fuse.out" ] || fail "fuse_hold did not mount: $(cat "$T/fuse.err")"
export LABELS_STALL_FILE="$(cat "$T/fuse.out")/file"

start_daemon
"$DEMO" hostile stall 6 >"$T/stall.out" &
STALL=$!
"$DEMO" split 6 >"$T/honest.out" &
HONEST=$!
wait "$STALL" || fail "labels_demo hostile stall failed"
wait "$HONEST" || fail "labels_demo split failed"
daemon_alive || fail "flightrecd stopped answering with a read stuck"
timeout 60 "$FLIGHTREC" attach --window 30s -o "$T/all.pb.gz" 2>"$T/err" ||
	fail "attach failed with a read stuck: $(cat "$T/err")"
"$GO" tool pprof -tags "$T/all.pb.gz" >"$T/all.tags" 2>/dev/null
grep -q '^ *phase: Total' "$T/all.tags" || fail "the honest process lost its labels"
grep -q 'read stalled' "$T/all.tags" || { cat "$T/all.tags" >&2; fail "no sample says the read stalled"; }
grep -q 'took longer than' "$T/daemon.log" || fail "the daemon did not log the stalled read"
# The file system goes: the stuck read fails and its worker ends.
kill -TERM "$FUSE_PID"
wait "$FUSE_PID"
stop_daemon
echo PASS
