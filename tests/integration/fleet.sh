#!/bin/bash
# Two flightrecd daemons with different host names ("alpha-1" on shard 1,
# "beta'2" with a quote on shard 2) record a known workload (burn: three
# quarters fr_burn_heavy, one quarter fr_burn_light) and export it to two
# real ClickHouse shards; `flightrec fleet attach` over the Distributed
# table then holds both hosts, each with exactly the samples, in total and
# per function, that its own recorder gives for the window at the export
# rate, under the right host label (the project's reader and go tool pprof
# -tags), and the same samples in `fleet timeline --by host`; --host globs
# pick one host; a hostile --host matches nothing. Known rows, filters and escaping in detail:
# fleet_query.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_root_perf
need_clickhouse
ch_start_cluster 2 frfleet
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frfleet \
	>"$T/init.out" 2>&1 || fail "init-schema failed: $(cat "$T/init.out")"

NAME=fleetburn$$
cp "$BURN" "$T/$NAME"
HZ=99
config() {
	cat <<JSON
{"sessions": [{"name": "all", "events": [{"event": "cpu", "hz": $HZ}]}],
 "export": {"clickhouse": {"url": "$1", "batch": "1s", "hz": $HZ, "host": "$2"}}}
JSON
}
config "$(ch_url 1)" "alpha-1" >"$T/a.json"
config "$(ch_url 2)" "beta'2" >"$T/b.json"
start_daemon --config "$T/a.json"
RING2=$T/ring2 SOCK2=$T/sock2
"$FLIGHTRECD" --ring "$RING2" --socket "$SOCK2" --config "$T/b.json" >>"$T/daemon2.log" 2>&1 &
PID2=$!
wait_answering "$SOCK2" "$PID2"
stop_second() {
	kill -TERM "$PID2" 2>/dev/null
	wait "$PID2" 2>/dev/null
}
trap 'stop_second; ch_cleanup' EXIT

# The window's first whole second begins after both recorders started.
wait_until 5 "a second begun after the start" \
	'[ "$(date +%s)000000000" -gt "$(FLIGHTREC_SOCKET=$SOCK2 status_int started_ns)" ]'
from=$(date +%s)
"$T/$NAME" 4 2 1 >"$T/burn.out" || fail "burn failed"
to=$(($(date +%s) + 2))

# Both exporters past the window (1 s batches; the cursor is the next
# interval's start).
cursor_past() {
	c=$("$FLIGHTREC" status --json --socket "$sock" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get("export",{}).get("cursor_ns",0))')
	[ "${c:-0}" -ge "${to}000000000" ]
}
for sock in "$SOCK" "$SOCK2"; do
	try_until 30 cursor_past
	[ "${c:-0}" -ge "${to}000000000" ] ||
		fail "the exporter of $sock did not pass the window: $("$FLIGHTREC" status --json --socket "$sock")"
done

"$FLIGHTREC" fleet attach --clickhouse "$(ch_urls)" --from "$from" --to "$to" --comm "$NAME" \
	-o "$T/fleet.pb.gz" 2>"$T/attach.err" || fail "fleet attach failed: $(cat "$T/attach.err")"
grep -q "from 2 hosts" "$T/attach.err" || fail "fleet attach: $(cat "$T/attach.err")"

# Each host: exactly the samples, in total and per function, that its own
# recorder gives for the window at the export rate; and the workload's
# shape (fr_burn_heavy well above fr_burn_light; the exact 3:1 is for the
# profile tests, on a quiet machine).
"$FLIGHTREC" top "$T/fleet.pb.gz" --label-key host -n 50 >"$T/top.out" 2>&1 ||
	fail "top of the fleet profile: $(cat "$T/top.out")"
flat_samples() { awk -v f="$2" '$NF == f {print $5}' "$1"; }
total_samples() { sed -n 's/^Showing .*(\([0-9]*\) samples).*/\1/p' "$1"; }
for h in "alpha-1:$SOCK" "beta'2:$SOCK2"; do
	host=${h%%:*} sock=${h#*:}
	awk -v h="host=$host" '/^host=/ {on = ($0 == h)} on' "$T/top.out" >"$T/top.$host"
	"$FLIGHTREC" attach --socket "$sock" --from "$from" --to "$to" --hz "$HZ" --comm "$NAME" \
		-o "$T/local.pb.gz" 2>/dev/null || fail "attach on $host failed"
	"$FLIGHTREC" top "$T/local.pb.gz" -n 50 >"$T/local.$host" || fail "top of $host's attach"
	for what in total fr_burn_heavy fr_burn_light; do
		if [ $what = total ]; then
			got=$(total_samples "$T/top.$host") want=$(total_samples "$T/local.$host")
		else
			got=$(flat_samples "$T/top.$host" $what) want=$(flat_samples "$T/local.$host" $what)
		fi
		[ -n "$got" ] && [ "$got" = "$want" ] ||
			fail "host $host, $what: ${got:-no} samples in ClickHouse, ${want:-no} from its recorder"
	done
	heavy=$(flat_samples "$T/top.$host" fr_burn_heavy)
	light=$(flat_samples "$T/top.$host" fr_burn_light)
	[ "$light" -gt 0 ] && [ $((2 * heavy)) -ge $((3 * light)) ] ||
		fail "host $host: fr_burn_heavy $heavy and fr_burn_light $light samples"
	echo "$host: $(total_samples "$T/top.$host") samples, fr_burn_heavy $heavy, fr_burn_light $light"
	echo "$host $(total_samples "$T/top.$host")" >>"$T/totals"
done

# The timeline by host: the same samples, each host's under its name.
"$FLIGHTREC" fleet timeline --clickhouse "$(ch_urls)" --from "$from" --to "$to" --comm "$NAME" \
	--by host --step 1s --json >"$T/tl.json" 2>"$T/tl.err" || fail "fleet timeline: $(cat "$T/tl.err")"
python3 - "$T/tl.json" "$T/totals" <<'PY' || fail "fleet timeline: $(cat "$T/tl.json")"
import json, sys
tl = json.load(open(sys.argv[1]))
want = dict(l.rsplit(" ", 1) for l in open(sys.argv[2]).read().splitlines())
assert tl["by"] == "host" and sorted(g["name"] for g in tl["groups"]) == sorted(want), tl
assert tl["samples"] == sum(int(v) for v in want.values()), (tl["samples"], want)
for g in tl["groups"]:
    assert g["total"] == sum(g["values"]) and g["total"] > 0, g
PY

if [ -n "$GO" ] && [ -x "$GO" ]; then
	"$GO" tool pprof -tags "$T/fleet.pb.gz" >"$T/tags" 2>&1 || fail "go tool pprof -tags: $(cat "$T/tags")"
	grep -q ": alpha-1$" "$T/tags" && grep -q ": beta'2$" "$T/tags" || fail "go tool pprof -tags: $(cat "$T/tags")"
fi

# One host by glob; a glob that would leave its literal matches nothing.
"$FLIGHTREC" fleet top --clickhouse "$(ch_urls)" --from "$from" --to "$to" --host 'beta?2' \
	--by host >"$T/beta" 2>&1 && grep -q "^host=beta'2" "$T/beta" && ! grep -q "^host=alpha" "$T/beta" ||
	fail "--host beta?2: $(cat "$T/beta")"
"$FLIGHTREC" fleet attach --clickhouse "$(ch_urls)" --from "$from" --to "$to" \
	--host "alpha-1' OR '1'='1" -o "$T/inj.pb.gz" 2>"$T/inj.err"
[ $? = 1 ] && grep -q "no samples" "$T/inj.err" || fail "a hostile --host: $(cat "$T/inj.err")"
echo "fleet: ok"
