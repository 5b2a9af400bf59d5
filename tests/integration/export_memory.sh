#!/bin/bash
# The exporter's batches share limits.query_memory with attaches: with a
# 1 MiB budget, a batch whose insert hangs (ClickHouse frozen with
# SIGSTOP) holds the whole budget, status shows it, and an attach waits
# for it instead of running beside it; once ClickHouse is back both go
# on. An attach whose reader is slow holds the budget in turn, and the
# exporter's batch waits for it (status says so), then ships. Attaches
# run back to back beside the exporter all succeed (the
# batches that had to wait for them are printed, not required: whether
# one collides is up to timing), and the rows shipped add up exactly to
# the ring's samples, none twice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_root_perf
need_clickhouse
ch_start_cluster 1
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" >/dev/null 2>&1 || fail "init-schema failed"
cat >"$T/config.json" <<JSON
{"limits": {"query_memory": "1MiB"},
 "sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 19}]}],
 "export": {"clickhouse": {"url": "$(ch_url 1)", "batch": "1s", "events": ["cpu"], "hz": 19,
                           "host": "mem"}}}
JSON
NAME=memburn$$
cp "$BURN" "$T/$NAME"
"$T/$NAME" 40 1 0 >/dev/null &
start_daemon --config "$T/config.json"
st() {
	"$FLIGHTREC" status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
ex() { st "d['export']['$1']"; }
try_until 20 '[ "$(ex batches)" -ge 2 ]'
[ "$(st 'd["export"]["batches"]')" -ge 2 ] || fail "no batches shipped: $("$FLIGHTREC" status --json)"

kill -STOP "${CH_PID[1]}"
try_until 10 '[ "$(ex query_memory_reserved)" = 1048576 ]'
[ "$(st 'd["export"]["query_memory_reserved"]')" = 1048576 ] &&
	[ "$(st 'd["query_memory_used"]')" = 1048576 ] ||
	fail "a hanging batch does not hold the query memory: $("$FLIGHTREC" status --json)"
"$FLIGHTREC" status | grep -q "^export:   holds 1MiB of the query memory" ||
	fail "status does not show the exporter's memory: $("$FLIGHTREC" status | grep export) $("$FLIGHTREC" status --json)"
"$FLIGHTREC" attach --window 5s -o "$T/held.pb.gz" 2>"$T/held.err" &
apid=$!
sleep 3
kill -0 "$apid" 2>/dev/null || fail "an attach ran while the exporter held the whole query memory"
kill -CONT "${CH_PID[1]}"
wait "$apid" || fail "the waiting attach failed: $(cat "$T/held.err")"

# The other way round: an attach whose reader is slow (a 4 KiB pipe read
# only after 8 s) holds the whole budget while the daemon waits to write;
# the exporter's next batch waits for it, and ships once it is done.
w0=$(st 'd["export"]["memory_waits"]')
python3 - "$FLIGHTREC" "$T/slow.pb.gz" <<'PY' &
import fcntl, os, subprocess, sys, time
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: smaller than the profile
p = subprocess.Popen([sys.argv[1], "attach", "--window", "30s", "-o", "-"], stdout=w)
os.close(w)
time.sleep(8)
with open(sys.argv[2], "wb") as f:
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        f.write(b)
sys.exit(p.wait())
PY
spid=$!
try_until 7 '[ "$(ex state)" = "waiting for query memory" ]'
[ "$(st 'd["export"]["state"]')" = "waiting for query memory" ] ||
	fail "the exporter does not wait for the attach holding the query memory: $("$FLIGHTREC" status --json)"
wait "$spid" || fail "the slow attach failed"
[ "$(stat -c %s "$T/slow.pb.gz")" -gt 4096 ] || fail "the slow attach's profile fits the pipe"
b=$(st 'd["export"]["batches"]')
try_until 10 '[ "$(ex batches)" -gt "$b" ]'
[ "$(st 'd["export"]["batches"]')" -gt "$b" ] || fail "the exporter did not go on after the attach"
[ "$(st 'd["export"]["memory_waits"]')" -gt "$w0" ] || fail "the wait is not counted"

# Attaches back to back, two at a time, for 8 s, beside the exporter.
end=$((SECONDS + 8))
for k in 1 2; do
	(while [ $SECONDS -lt $end ]; do
		"$FLIGHTREC" attach --window 20s -o "$T/loop$k.pb.gz" 2>>"$T/loop.err" || exit 1
	done) &
	loops[$k]=$!
done
for k in 1 2; do
	wait "${loops[$k]}" || fail "an attach beside the exporter failed: $(tail -3 "$T/loop.err")"
done
b=$(st 'd["export"]["batches"]')
try_until 10 '[ "$(ex batches)" -ge $((b + 2)) ]'
echo "exporter: $(st 'd["export"]["memory_waits"]') batches waited for the query memory"
stop_daemon

t0=$(ch_query 1 "SELECT min(time) FROM flightrec.samples WHERE host = 'mem'")
t1=$(sed -n 2p "$RING.export")
ch=$(ch_query 1 "SELECT sum(count) FROM flightrec.samples WHERE host = 'mem' AND time < $t1")
"$FLIGHTREC" dump --ring "$RING" --from $((t0 / 1000000000)) --to $((t1 / 1000000000)) \
	--hz 19 --format folded -o "$T/ring.folded" >/dev/null 2>&1 || fail "dump failed"
ring=$(awk '{ n += $NF } END { print n + 0 }' "$T/ring.folded")
echo "$ch samples in ClickHouse, $ring in the ring over $(((t1 - t0) / 1000000000)) s"
[ "$ring" -gt 100 ] || fail "only $ring samples in the ring"
[ "$ch" = "$ring" ] || fail "ClickHouse holds $ch samples, the ring $ring"
d=$(ch_query 1 "SELECT count() FROM (SELECT count() AS n FROM flightrec.samples
	GROUP BY host, time, event, stack_hash, pid, comm, label_key, label_value HAVING n > 1)")
[ "$d" = 0 ] || fail "$d rows are in ClickHouse twice"
echo "export_memory: ok"
