#!/bin/bash
# Many `flightrec dump --session NAME` at once against one recorder: each
# request either gets a dump of its own (a distinct path holding a
# complete gzip'ed pprof with its sidecar) or a clean "busy" refusal.
# Never a wrong "no session" error, never a path handed to two requests,
# never a truncated file reported as written; the daemon keeps recording.
. "$(dirname "$0")/lib.sh"
need_root_perf

N=48
DUMPS=$T/dumps
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$DUMPS", "keep": 1000},
 "limits": {"max_clients": 128},
 "sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
"$BURN" 2 1 0 >/dev/null

# Started together: every client waits for a shared lock on go.lock,
# held exclusively until they are all ready, then asks.
exec 9>"$T/go.lock"
flock 9
pids=
for i in $(seq 1 $N); do
	(
		exec 9>&-
		touch "$T/ready.$i"
		flock -s "$T/go.lock" true
		"$FLIGHTREC" dump --session all --window 2s >"$T/out.$i" 2>"$T/err.$i"
		echo $? >"$T/rc.$i"
	) &
	pids="$pids $!"
done
wait_until 30 "the $N clients" '[ "$(ls "$T"/ready.* | wc -l)" = "$N" ]'
flock -u 9
for p in $pids; do wait "$p"; done

ok=0
busy=0
for i in $(seq 1 $N); do
	[ -f "$T/rc.$i" ] || fail "request $i did not finish"
	rc=$(cat "$T/rc.$i")
	if [ "$rc" = 0 ]; then
		p=$(cat "$T/out.$i")
		[ -f "$p" ] || fail "request $i succeeded with $p, which does not exist"
		case "$p" in "$DUMPS"/all-manual-*.pb.gz) ;; *) fail "request $i named its dump $p" ;; esac
		[ -f "${p%.pb.gz}.json" ] || fail "request $i: $p has no sidecar"
		gzip -t "$p" 2>"$T/gz.err" || fail "request $i: $p is not complete gzip: $(cat "$T/gz.err")"
		"$FLIGHTREC" top "$p" >"$T/top.$i" 2>"$T/top.err" ||
			fail "request $i: flightrec top cannot read $p: $(cat "$T/top.err")"
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["profile"] != sys.argv[2])' \
			"${p%.pb.gz}.json" "$(basename "$p")" || fail "request $i: the sidecar of $p names another profile"
		echo "$p" >>"$T/paths"
		ok=$((ok + 1))
	else
		[ "$(wc -l <"$T/err.$i")" = 1 ] || fail "request $i failed with $(wc -l <"$T/err.$i") lines: $(cat "$T/err.$i")"
		grep -q "no session" "$T/err.$i" && fail "request $i was told the session does not exist: $(cat "$T/err.$i")"
		grep -q "refused: busy" "$T/err.$i" || fail "request $i failed without saying it was busy: $(cat "$T/err.$i")"
		busy=$((busy + 1))
	fi
done
[ "$ok" -ge 1 ] || fail "none of $N requests got a dump"
dup=$(sort "$T/paths" | uniq -d)
[ -z "$dup" ] || fail "one path was handed to several requests: $dup"
# No file but the dumps reported: no leftover temporary file, no orphan
# (a dump keeps the goroutines of any Go program running then beside it).
n=$(find "$DUMPS" -mindepth 1 ! -name '*.goroutines.pb.gz' | wc -l)
[ "$n" = $((ok * 2)) ] || fail "$ok dumps reported but $DUMPS holds $n files: $(ls -a "$DUMPS")"
echo "$ok dumps written, $busy requests refused as busy"

# One after another, as fast as possible: each gets its own name even
# within one millisecond, and all succeed.
rm -f "$T/paths"
for i in $(seq 1 10); do
	"$FLIGHTREC" dump --session all --window 1s >>"$T/paths" 2>"$T/err" ||
		fail "sequential dump $i failed: $(cat "$T/err")"
done
[ "$(sort -u "$T/paths" | wc -l)" = 10 ] || fail "sequential dumps shared names: $(cat "$T/paths")"
while read -r p; do gzip -t "$p" || fail "$p is not complete gzip"; done <"$T/paths"

daemon_alive || fail "the daemon died"
"$FLIGHTREC" top --window 2s >/dev/null 2>"$T/err" || fail "the daemon stopped answering: $(cat "$T/err")"
stop_daemon
