#!/bin/bash
# A recorder whose ClickHouse stopped answering mid-request (the server
# frozen with SIGSTOP: connections accepted, nothing answered) still stops
# at once on SIGTERM: the exporter's request is cancelled instead of
# running into its 60 s timeout, nothing is logged as a failure, and the
# cursor file is intact.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_root_perf
need_clickhouse
ch_start_cluster 1
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" >/dev/null 2>&1 || fail "init-schema failed"
cat >"$T/config.json" <<JSON
{"sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 19}]}],
 "export": {"clickhouse": {"url": "$(ch_url 1)", "batch": "1s", "events": ["cpu"]}}}
JSON
start_daemon --config "$T/config.json"
try_until 10 '[ -s "$RING.export" ]'
[ -s "$RING.export" ] || fail "no batch shipped within 10 s"
kill -STOP "${CH_PID[1]}"
# Two batch intervals: a request is now waiting on the frozen server.
sleep 3
start=$SECONDS
kill -TERM "$DAEMON_PID"
try_until 15 '! kill -0 "$DAEMON_PID" 2>/dev/null'
kill -0 "$DAEMON_PID" 2>/dev/null && fail "flightrecd still runs 15 s after SIGTERM (export request not cancelled)"
wait "$DAEMON_PID" || fail "flightrecd exited with status $? on SIGTERM"
DAEMON_PID=
kill -CONT "${CH_PID[1]}"
echo "stopped $((SECONDS - start)) s after SIGTERM"
grep -q "export:.*retrying" "$T/daemon.log" && fail "the cancelled request was logged as a failure"
grep -qx "flightrec-export 1" <(head -1 "$RING.export") || fail "cursor file damaged: $(cat "$RING.export")"
echo "export_shutdown: ok"
