#!/bin/bash
# HTTPS to ClickHouse with a private CA, for real: a shard serving HTTPS
# with a certificate for 127.0.0.1 signed by a CA made here with openssl.
# flightrec export --init-schema and an exporting recorder given the CA
# (--ca-file, export.clickhouse.ca_file) ship over https, and the rows add
# up exactly to the ring's samples; fleet attach over https reads the
# same samples. Without the CA, or with another CA, export, fleet and a
# second recorder all fail with an error naming the certificate problem,
# and that recorder keeps recording.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_root_perf
need_clickhouse
ch_tls_setup
ch_start_cluster 1
URL=$(ch_https_url 1)

# The CLI: no CA (the system's CAs do not know ours) and another CA fail,
# naming the certificate; the right CA works.
for ca in "" "$CH_OTHER_CA"; do
	"$FLIGHTREC" export --init-schema --clickhouse "$URL" ${ca:+--ca-file "$ca"} \
		>"$T/init.out" 2>&1 && fail "init-schema over https with CA '${ca:-system}' succeeded"
	grep -q "TLS certificate of $URL not trusted.*certificate" "$T/init.out" ||
		fail "init-schema with CA '${ca:-system}' did not name the certificate: $(cat "$T/init.out")"
done
ch_query 1 "SELECT count() FROM system.databases WHERE name = 'flightrec'" | grep -qx 0 || fail "a refused init-schema made the database"
"$FLIGHTREC" export --init-schema --clickhouse "$URL" --ca-file "$CH_CA" >"$T/init.out" 2>&1 ||
	fail "init-schema over https failed: $(cat "$T/init.out")"
"$FLIGHTREC" export --init-schema --clickhouse "$URL" --ca-file "$T/none.pem" >"$T/init.out" 2>&1 &&
	fail "init-schema with a missing CA file succeeded"
grep -q "cannot open CA file $T/none.pem" "$T/init.out" ||
	fail "a missing CA file is not named: $(cat "$T/init.out")"

config() {
	cat <<JSON
{"sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 19}]}],
 "export": {"clickhouse": {"url": "$URL", "batch": "1s", "events": ["cpu"], "hz": 19,
                           "host": "$1", "ca_file": "$2"}}}
JSON
}
config tls-good "$CH_CA" >"$T/good.json"
config tls-bad "$CH_OTHER_CA" >"$T/bad.json"
start_daemon --config "$T/good.json"
RING2=$T/ring2 SOCK2=$T/sock2
"$FLIGHTRECD" --ring "$RING2" --socket "$SOCK2" --config "$T/bad.json" >>"$T/daemon2.log" 2>&1 &
PID2=$!
trap 'kill -9 $PID2 2>/dev/null; ch_cleanup' EXIT
wait_answering "$SOCK2" "$PID2"
status_field() {
	"$FLIGHTREC" status --json --socket "$1" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

NAME=tlsburn$$
cp "$BURN" "$T/$NAME"
# The window's first whole second begins after the recorder started.
wait_until 5 "a second begun after the start" '[ "$(date +%s)000000000" -gt "$(status_int started_ns)" ]'
from=$(date +%s)
"$T/$NAME" 3 2 1 >"$T/burn.out" || fail "burn failed"
to=$(($(date +%s) + 1))
cursor_past() {
	c=$(status_field "$SOCK" 'd.get("export",{}).get("cursor_ns",0)')
	[ "${c:-0}" -ge "${to}000000000" ]
}
try_until 30 cursor_past
[ "${c:-0}" -ge "${to}000000000" ] || fail "the exporter did not pass the window: $(status_field "$SOCK" 'd.get("export")')"

# The recorder with the wrong CA: retrying, its error naming the
# certificate, nothing shipped, and still recording.
[ "$(status_field "$SOCK2" 'd["export"]["state"]')" = retrying ] ||
	fail "the wrong-CA exporter is not retrying: $(status_field "$SOCK2" 'd["export"]')"
err=$(status_field "$SOCK2" 'd["export"]["last_error"]')
case "$err" in
*"TLS certificate of $URL not trusted by the CA file"*certificate*) ;;
*) fail "the wrong-CA exporter's error does not name the certificate: $err" ;;
esac
s1=$(status_field "$SOCK2" 'd["samples"]')
"$T/$NAME" 1 1 0 >/dev/null
s2=$(status_field "$SOCK2" 'd["samples"]')
[ "$s2" -gt "$s1" ] || fail "the wrong-CA recorder stopped recording ($s1 then $s2 samples)"
[ "$(ch_query 1 "SELECT count() FROM flightrec.samples WHERE host = 'tls-bad'")" = 0 ] ||
	fail "the wrong-CA recorder's rows reached ClickHouse"
echo "wrong CA: $err"

# Exact: ClickHouse over [first batch, cursor) against the ring.
stop_daemon
t0=$(ch_query 1 "SELECT min(time) FROM flightrec.samples WHERE host = 'tls-good'")
t1=$(sed -n 2p "$RING.export")
[ "$t0" -gt 0 ] && [ "$t1" -gt "$t0" ] || fail "nothing shipped over https (first $t0, cursor $t1)"
ch=$(ch_query 1 "SELECT sum(count) FROM flightrec.samples WHERE host = 'tls-good' AND time < $t1")
"$FLIGHTREC" dump --ring "$RING" --from $((t0 / 1000000000)) --to $((t1 / 1000000000)) \
	--hz 19 --format folded -o "$T/ring.folded" >/dev/null 2>&1 || fail "dump failed"
ring=$(awk '{ n += $NF } END { print n + 0 }' "$T/ring.folded")
echo "https: $ch samples in ClickHouse, $ring in the ring over $(((t1 - t0) / 1000000000)) s"
[ "$ring" -gt 20 ] || fail "only $ring samples in the ring"
[ "$ch" = "$ring" ] || fail "ClickHouse holds $ch samples over https, the ring $ring"

# fleet attach over https: the window's samples of the workload, as many
# as ClickHouse holds for it; without the CA it fails naming the
# certificate.
want=$(ch_query 1 "SELECT sum(count) FROM flightrec.samples WHERE host = 'tls-good'
	AND comm = '$NAME' AND time >= ${from}000000000 AND time < ${to}000000000")
"$FLIGHTREC" fleet attach --clickhouse "$URL" --ca-file "$CH_CA" --from "$from" --to "$to" \
	--comm "$NAME" -o "$T/fleet.pb.gz" 2>"$T/attach.err" ||
	fail "fleet attach over https failed: $(cat "$T/attach.err")"
"$FLIGHTREC" top "$T/fleet.pb.gz" -n 5 >"$T/top.out" 2>&1 || fail "top of the fleet profile failed"
got=$(sed -n 's/^Showing .*(\([0-9]*\) samples).*/\1/p' "$T/top.out")
echo "fleet attach over https: $got samples, ClickHouse $want"
[ "$want" -gt 0 ] && [ "$got" = "$want" ] || fail "fleet attach read ${got:-no} samples, want $want"
for ca in "" "$CH_OTHER_CA"; do
	"$FLIGHTREC" fleet attach --clickhouse "$URL" ${ca:+--ca-file "$ca"} --from "$from" \
		--to "$to" -o "$T/bad.pb.gz" 2>"$T/attach.err" &&
		fail "fleet attach with CA '${ca:-system}' succeeded"
	grep -q "TLS certificate of $URL not trusted.*certificate" "$T/attach.err" ||
		fail "fleet attach with CA '${ca:-system}' did not name the certificate: $(cat "$T/attach.err")"
done
kill -TERM "$PID2"
wait "$PID2" || fail "the wrong-CA flightrecd exited with status $? on SIGTERM"
echo "export_tls: ok"
