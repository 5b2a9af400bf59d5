#!/bin/bash
# The ClickHouse exporter against two real shards and a Distributed table:
# two recorders with different host names ship a busy workload; shard 1
# stops for 20 s and comes back; meanwhile recorder B is killed with -9
# while a batch's request hangs on its frozen shard (which then runs it),
# its cursor moved back two batches (the state a kill between a batch's
# insert and its cursor's move leaves), and restarted. Afterwards each
# host's rows add up exactly to its ring's samples over the shipped span
# (sessions and export both at 19 Hz, so nothing is downsampled), no row
# is there twice, B skipped the batches it had already shipped, and the
# stacks carry names, files and lines. A third recorder whose ring keeps
# only 3 s (max_age) loses batches while shard 1 is down, and says so in
# status. The same ring shipped again by flightrec export --ring gives the
# same count, and running it twice adds nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_root_perf
need_clickhouse
ch_start_cluster 2 frtest
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frtest >/dev/null 2>&1 ||
	fail "init-schema failed"

declare -A PID
# start_rec NAME SHARD [RING_EXTRA]: a recorder of its own (ring, socket,
# log in $T/NAME), cpu at 19 Hz, exporting to SHARD as host NAME every 5 s
# (few batches to catch up after the outage on a busy machine, where the
# exporter thread, at nice 10, gets little CPU).
start_rec() {
	local n=$1 d=$T/$1
	mkdir -p "$d"
	cat >"$d/config.json" <<JSON
{"ring": {"path": "$d/ring"${3:+, $3}},
 "socket": {"path": "$d/sock"},
 "sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 19}]}],
 "export": {"clickhouse": {"url": "$(ch_url "$2")", "batch": "5s", "events": ["cpu"],
                           "hz": 19, "host": "$n"}}}
JSON
	"$FLIGHTRECD" --config "$d/config.json" >>"$d/daemon.log" 2>&1 &
	PID[$n]=$!
	try_until 10 '"$FLIGHTREC" status --socket "$d/sock" >/dev/null 2>&1 || ! kill -0 "${PID[$n]}" 2>/dev/null'
	kill -0 "${PID[$n]}" 2>/dev/null || fail "recorder $n exited at start: $(tail -5 "$d/daemon.log")"
	"$FLIGHTREC" status --socket "$d/sock" >/dev/null 2>&1 || fail "recorder $n did not answer within 10 s"
}
# export_field NAME KEY: a member of NAME's status export object.
export_field() {
	"$FLIGHTREC" status --json --socket "$T/$1/sock" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["export"][sys.argv[1]])' "$2"
}
stop_rec() {
	kill -TERM "${PID[$1]}"
	wait "${PID[$1]}" || fail "recorder $1 exited with status $? on SIGTERM"
}

NAME=chburn$$
cp "$BURN" "$T/$NAME"
"$T/$NAME" 150 2 0 >/dev/null &
start_rec hostA 1
start_rec hostB 2
start_rec hostC 1 '"max_age": "3s"'
sleep 12

# Shard 1 away for 20 s: A and C retry and fall behind, B goes on.
echo "$SECONDS s: shard 1 stops"
ch_stop 1
down_at=$SECONDS
try_until 20 '[ "$(export_field hostA state)" = retrying ]'
[ "$(export_field hostA state)" = retrying ] || fail "A does not say it is retrying"
[ "$(export_field hostA retries)" -gt 0 ] || fail "A counted no retries"
export_field hostA last_error | grep -q . || fail "A has no last error while shard 1 is down"

# B: killed with -9 during a batch (its shard frozen, so a request of the
# batch hangs; the shard runs it once B is dead, an answer nobody reads),
# its cursor moved two batches back, restarted on the same ring.
kill -STOP "${CH_PID[2]}"
sleep 3
kill -9 "${PID[hostB]}"
wait "${PID[hostB]}" 2>/dev/null
kill -CONT "${CH_PID[2]}"
cur=$(sed -n 2p "$T/hostB/ring.export")
[ -n "$cur" ] || fail "B left no cursor"
back=$((cur - 10000000000))
printf 'flightrec-export 1\n%s\n' "$back" >"$T/hostB/ring.export"
# The batches of [back, cur) with rows: all shipped before the kill (the
# cursor passed them), so the restarted B must find each one there.
shipped=$(ch_query 2 "SELECT count(DISTINCT time) FROM flightrec.samples
	WHERE host = 'hostB' AND time >= $back AND time < $cur")
[ "$shipped" -ge 1 ] || fail "B shipped no batch in the 10 s before its cursor"
start_rec hostB 2
left=$((20 - (SECONDS - down_at)))
[ "$left" -gt 0 ] && sleep "$left"
ch_start 1
echo "$SECONDS s: shard 1 back"

# Catching up: A's cursor within two batches of now.
try_until 60 'lag=$(export_field hostA lag_ns); [ "$lag" -lt 12000000000 ]'
[ "$lag" -lt 12000000000 ] || fail "A did not catch up: lag $lag ns"
[ "$(export_field hostA state)" = shipping ] || fail "A still retrying after shard 1 is back"
dups=$(export_field hostB duplicates_skipped)
[ "$dups" -ge "$shipped" ] ||
	fail "B skipped $dups batches it had shipped before its kill, want >= $shipped"
lostc=$(export_field hostC lost_batches)
[ "$lostc" -gt 0 ] && [ "$(export_field hostC lost_ns)" -gt 0 ] ||
	fail "C's ring dropped data before it was shipped, status says lost_batches $lostc"
# The restarted B ships batches of its own (its counts are a new
# process's: batches less the duplicates it skipped), within a few
# batches of its restart. Before, this compared its count with the killed
# B's, so a B restarted not long before A caught up failed it.
b_new() { echo $(($(export_field hostB batches) - $(export_field hostB duplicates_skipped))); }
try_until 20 '[ "$(b_new)" -gt 0 ]'
[ "$(b_new)" -gt 0 ] || fail "B shipped nothing after its restart"
# A and B lost nothing: their rings hold all they recorded (time before a
# recorder's first sample is no loss).
for h in hostA hostB; do
	[ "$(export_field $h lost_ns)" = 0 ] || fail "$h counts $(export_field $h lost_ns) ns lost"
done
echo "$SECONDS s: A caught up"
sleep 3
stop_rec hostA
stop_rec hostB
stop_rec hostC

# Exact: each host's rows in ClickHouse over [its first batch, its cursor)
# against its ring over the same span, through the Distributed table.
for h in hostA hostB; do
	t0=$(ch_query 1 "SELECT min(time) FROM flightrec.samples_all WHERE host = '$h'")
	t1=$(sed -n 2p "$T/$h/ring.export")
	[ "$t0" -gt 0 ] && [ "$t1" -gt "$t0" ] || fail "$h: nothing shipped (first $t0, cursor $t1)"
	ch=$(ch_query 1 "SELECT sum(count) FROM flightrec.samples_all WHERE host = '$h' AND time < $t1")
	"$FLIGHTREC" dump --ring "$T/$h/ring" --from $((t0 / 1000000000)) --to $((t1 / 1000000000)) \
		--hz 19 --format folded -o "$T/$h.folded" >/dev/null 2>&1 || fail "$h: dump failed"
	ring=$(awk '{ n += $NF } END { print n + 0 }' "$T/$h.folded")
	echo "$h: $ch samples in ClickHouse, $ring in the ring over $(((t1 - t0) / 1000000000)) s"
	[ "$ring" -gt 100 ] || fail "$h: only $ring samples in the ring"
	[ "$ch" = "$ring" ] || fail "$h: ClickHouse holds $ch samples, the ring $ring"
	d=$(ch_query 1 "SELECT count() FROM (SELECT count() AS n FROM flightrec.samples_all
		WHERE host = '$h' GROUP BY time, event, stack_hash, pid, comm, label_key, label_value
		HAVING n > 1)")
	[ "$d" = 0 ] || fail "$h: $d rows are in ClickHouse twice"
	eval "RING_$h=$ring T0_$h=$t0 T1_$h=$t1"
done

echo "$SECONDS s: counts checked"
# The same ring shipped again without a recorder (flightrec export --ring)
# into a database of its own, as a host named with a quote and a
# backslash: the same count; a second run adds nothing (its duplicate
# check finds the batches under that name).
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 2)" --database offline >/dev/null 2>&1 ||
	fail "init-schema offline failed"
for run in 1 2; do
	"$FLIGHTREC" export --ring "$T/hostA/ring" --host "o'ff\\line" --clickhouse "$(ch_url 2)" \
		--database offline --from $((T0_hostA / 1000000000)) --to $((T1_hostA / 1000000000)) \
		--batch 5s --event cpu --hz 19 >"$T/offline$run.out" 2>&1 ||
		fail "export --ring failed: $(cat "$T/offline$run.out")"
	got=$(ch_query 2 "SELECT sum(count) FROM offline.samples WHERE host = 'o\\'ff\\\\line'")
	[ "$got" = "$RING_hostA" ] || fail "export --ring run $run: $got samples, want $RING_hostA"
done
grep -Eq ": ([0-9]+) batches of o'ff.line \(\1 already there\), 0 rows" "$T/offline2.out" ||
	fail "the second export --ring was not all duplicates: $(cat "$T/offline2.out")"
# Each host's rows on its own shard; the burner's frames named, with lines.
[ "$(ch_query 2 "SELECT count() FROM flightrec.samples WHERE host = 'hostA'")" = 0 ] ||
	fail "hostA rows on shard 2"
got=$(ch_query 1 "SELECT any(file[1]), max(line[1]) FROM flightrec.stacks_all
	WHERE function[1] = 'fr_burn_heavy'" | tr '\t' ' ')
case "$got" in
*burn.c\ [1-9]*) ;;
*) fail "fr_burn_heavy's stack has no file and line: $got" ;;
esac
w=$(ch_query 1 "SELECT sum(count) FROM flightrec.samples_all WHERE comm = '$NAME'
	AND stack_hash GLOBAL IN (SELECT stack_hash FROM flightrec.stacks_all
	WHERE has(function, 'fr_burn_heavy'))")
[ "$w" -gt 0 ] || fail "no samples of $NAME in fr_burn_heavy"
echo "$SECONDS s: export_clickhouse: ok"
