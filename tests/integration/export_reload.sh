#!/bin/bash
# The export block follows `flightrec reload`: a running exporter given a
# new host, database and batch interval ships from its cursor under the
# new settings (reload prints what changed); a bad block is refused with
# its JSON path and the exporter goes on as before; a CA file that cannot
# be opened refuses the reload too; removing the block stops shipping and
# adding it back resumes from the cursor. Afterwards the rows of both
# hosts add up exactly to the ring's samples over the span shipped, none
# twice, and the two hosts' spans meet without overlapping.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_root_perf
need_clickhouse
ch_start_cluster 1
for db in flightrec second; do
	"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" --database "$db" >/dev/null 2>&1 ||
		fail "init-schema $db failed"
done
config() { # HOST DATABASE BATCH [EXTRA]
	cat <<JSON
{"sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 19}]}],
 "export": {"clickhouse": {"url": "$(ch_url 1)", "database": "$2", "batch": "$3",
                           "events": ["cpu"], "hz": 19, "host": "$1"${4:-}}}}
JSON
}
ex() {
	"$FLIGHTREC" status --json |
		python3 -c 'import json,sys; e=json.load(sys.stdin).get("export"); print(e[sys.argv[1]] if e else "none")' "$1"
}
# wait_batches N: until the exporter shipped N more batches.
wait_batches() {
	local want=$(($(ex batches) + $1))
	try_until 20 '[ "$(ex batches)" -ge "$want" ]' ||
		fail "the exporter did not ship $1 more batches: $("$FLIGHTREC" status --json)"
}
NAME=rlburn$$
cp "$BURN" "$T/$NAME"
"$T/$NAME" 60 1 0 >/dev/null &
config one flightrec 1s >"$T/config.json"
start_daemon --config "$T/config.json"
wait_batches 3

config two second 2s >"$T/config.json"
"$FLIGHTREC" reload >"$T/out" 2>&1 || fail "reload failed: $(cat "$T/out")"
for w in 'export.clickhouse.host: "one" -> "two"' 'export.clickhouse.database: "flightrec" -> "second"' \
	'export.clickhouse.batch: "1s" -> "2s"'; do
	grep -qF "$w" "$T/out" || fail "reload does not say $w: $(cat "$T/out")"
done
try_until 5 '[ "$(ex host)" = two ]'
[ "$(ex host)" = two ] && [ "$(ex batch_ns)" = 2000000000 ] && [ "$(ex database)" = second ] ||
	fail "status after the reload: $("$FLIGHTREC" status --json)"
wait_batches 2

# Refused: a bad block (its JSON path said), a CA file that is not there.
config three flightrec 7s >"$T/config.json"
"$FLIGHTREC" reload >"$T/out" 2>&1 && fail "a reload with batch 7s succeeded"
grep -q "export.clickhouse.batch: must be whole seconds dividing a day" "$T/out" ||
	fail "the bad block's reload does not name it: $(cat "$T/out")"
config three flightrec 1s ", \"ca_file\": \"$T/no-ca.pem\"" |
	sed "s|\"url\": \"http://|\"url\": \"https://|" >"$T/config.json"
"$FLIGHTREC" reload >"$T/out" 2>&1 && fail "a reload with a missing CA file succeeded"
grep -q "export.clickhouse: cannot open CA file $T/no-ca.pem" "$T/out" ||
	fail "the missing CA file's reload does not name it: $(cat "$T/out")"
[ "$(ex host)" = two ] || fail "a refused reload changed the exporter: $("$FLIGHTREC" status --json)"
wait_batches 2

# Removed: shipping stops; the cursor stays where it was.
echo '{"sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 19}]}]}' >"$T/config.json"
"$FLIGHTREC" reload >"$T/out" 2>&1 || fail "reload without the block failed: $(cat "$T/out")"
grep -q "^ *export: removed\|export.*removed\|export.*(none)" "$T/out" ||
	fail "reload does not say the block went: $(cat "$T/out")"
try_until 5 '[ "$(ex host)" = none ]'
[ "$(ex host)" = none ] || fail "status still shows the export after its block went"
c1=$(sed -n 2p "$RING.export")
sleep 4
c2=$(sed -n 2p "$RING.export")
[ "$c1" = "$c2" ] || fail "the cursor moved after the block was removed ($c1 -> $c2)"

# Back, as host two: from the cursor on.
config two second 2s >"$T/config.json"
"$FLIGHTREC" reload >"$T/out" 2>&1 || fail "reload adding the block back failed: $(cat "$T/out")"
try_until 5 '[ "$(ex host)" = two ]'
[ "$(ex host)" = two ] || fail "status does not show the export back"
wait_batches 3
stop_daemon

t1=$(sed -n 2p "$RING.export")
q() { ch_query 1 "$1"; }
t0=$(q "SELECT min(time) FROM flightrec.samples WHERE host = 'one'")
e1=$(q "SELECT max(time) FROM flightrec.samples WHERE host = 'one'")
s2=$(q "SELECT min(time) FROM second.samples WHERE host = 'two'")
[ "$t0" -gt 0 ] && [ "$s2" -gt "$e1" ] && [ "$t1" -gt "$s2" ] ||
	fail "spans: one from $t0 to $e1, two from $s2, cursor $t1"
n1=$(q "SELECT sum(count) FROM flightrec.samples WHERE host = 'one'")
n2=$(q "SELECT sum(count) FROM second.samples WHERE host = 'two' AND time < $t1")
"$FLIGHTREC" dump --ring "$RING" --from $((t0 / 1000000000)) --to $((t1 / 1000000000)) \
	--hz 19 --format folded -o "$T/ring.folded" >/dev/null 2>&1 || fail "dump failed"
ring=$(awk '{ n += $NF } END { print n + 0 }' "$T/ring.folded")
echo "one: $n1 samples, two: $n2 samples, the ring: $ring over $(((t1 - t0) / 1000000000)) s"
[ "$ring" -gt 100 ] || fail "only $ring samples in the ring"
[ $((n1 + n2)) = "$ring" ] || fail "ClickHouse holds $n1 + $n2 samples, the ring $ring"
for t in flightrec.samples second.samples; do
	d=$(q "SELECT count() FROM (SELECT count() AS n FROM $t GROUP BY host, time, event,
		stack_hash, pid, comm, label_key, label_value HAVING n > 1)")
	[ "$d" = 0 ] || fail "$d rows are in $t twice"
done
echo "export_reload: ok"
