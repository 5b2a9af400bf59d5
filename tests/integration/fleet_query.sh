#!/bin/bash
# flightrec fleet attach, top and timeline against two real ClickHouse
# shards holding known rows (written to each shard's local tables, as
# exporters do): both hosts' functions with exact shares and the right
# host labels (the project's pprof reader through `flightrec top`, and go
# tool pprof -tags), --host globs, --comm and --label filters, a stack
# stored on both shards taken once, a window without rows (exit 1, a clear
# message), a first URL that is down, no server or a shard down (exit 1,
# never a smaller profile), a user with a password file, and
# values built to break out of their SQL literals that match nothing and
# change nothing. Two daemons exporting a live workload
# are tests/integration/fleet.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_clickhouse
ch_start_cluster 2 frtest
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frtest \
	>"$T/init.out" 2>&1 || fail "init-schema failed: $(cat "$T/init.out")"

now=$(date +%s)
t=$(((now - 60) / 10 * 10))000000000
old=$(((now - 7200) / 10 * 10))000000000
S=1000000000
# web-1 on shard 1: leaf_a 3 s, leaf_b 1 s (postgres, tenant=acme).
# db'1\x on shard 2 (a quote and a backslash in its name): schedule 6 s
# (redis), and leaf_a 2 s two hours ago (outside a 10m window).
# Stack 1 is on both shards, as when two hosts of two shards use it.
stack1="1, ['leaf_a','main'], ['a.c','main.c'], [10,20], ['/bin/app','/bin/app'], ['ab12','ab12']"
ch_query 1 "INSERT INTO flightrec.stacks VALUES ($t, $stack1),
	($t, 2, ['leaf_b','main'], ['b.c','main.c'], [11,20], ['/bin/app','/bin/app'], ['ab12','ab12'])" >/dev/null
ch_query 2 "INSERT INTO flightrec.stacks VALUES ($t, $stack1),
	($t, 3, ['schedule','serve'], ['',''], [0,0], ['[kernel.kallsyms]','/bin/redis'], ['',''])" >/dev/null
ch_query 1 "INSERT INTO flightrec.samples VALUES
	($t, 'web-1', 'cpu', 1, 10, 'postgres', ['tenant'], ['acme'], $((3 * S)), 57, 7),
	($t, 'web-1', 'cpu', 2, 10, 'postgres', ['tenant'], ['acme'], $((1 * S)), 19, 7),
	($t, 'web-1', 'offcpu', 2, 10, 'postgres', [], [], $((9 * S)), 4, 7)" >/dev/null
ch_query 2 "INSERT INTO flightrec.samples VALUES
	($t, 'db\\'1\\\\x', 'cpu', 3, 11, 'redis', [], [], $((6 * S)), 114, 8),
	($old, 'db\\'1\\\\x', 'cpu', 1, 11, 'redis', [], [], $((2 * S)), 38, 9)" >/dev/null
rows_before=$(ch_query 1 "SELECT count() FROM flightrec.samples_all")

fleet() {
	"$FLIGHTREC" fleet "$@" --clickhouse "$(ch_urls)"
}

# The whole fleet over the last 10 minutes.
fleet attach --window 10m -o "$T/all.pb.gz" 2>"$T/attach.err" ||
	fail "fleet attach failed: $(cat "$T/attach.err")"
grep -q "wrote $T/all.pb.gz: 190 samples from 2 hosts, 3 stacks" "$T/attach.err" ||
	fail "fleet attach said: $(cat "$T/attach.err")"
# The project's reader: one table per host, exact shares.
"$FLIGHTREC" top "$T/all.pb.gz" --label-key host >"$T/top.out" 2>&1 ||
	fail "top of the fleet profile failed: $(cat "$T/top.out")"
awk '/^host=/ {h = $0} / leaf_a$/ {print h, $1, $2} / leaf_b$/ {print h, $1, $2}
	/ schedule_\[k\]$/ {print h, $1, $2}' "$T/top.out" | sort >"$T/shares"
sort >"$T/want" <<'EOF2'
host=web-1 3s 75.0%
host=web-1 1s 25.0%
host=db'1\x 6s 100.0%
EOF2
diff "$T/want" "$T/shares" >/dev/null ||
	fail "per-host shares: $(cat "$T/shares") (top: $(cat "$T/top.out"))"
# The whole profile: leaf_a is 3 of 10 s, schedule 6 of 10.
fleet top --window 10m >"$T/ftop.out" 2>&1 || fail "fleet top failed: $(cat "$T/ftop.out")"
grep -Eq '^ +6s +60\.0% .* schedule_\[k\]$' "$T/ftop.out" &&
	grep -Eq '^ +3s +30\.0% .* leaf_a$' "$T/ftop.out" || fail "fleet top: $(cat "$T/ftop.out")"
fleet top --window 10m --by host -n 1 >"$T/ftop_by.out" 2>&1 &&
	grep -q "^host=web-1" "$T/ftop_by.out" && grep -q "^host=db'1\\\\x" "$T/ftop_by.out" ||
	fail "fleet top --by host: $(cat "$T/ftop_by.out")"

# The timeline by host: each host's total in the step of its rows; with
# --top 1 the other host is "other"; by comm the command names.
fleet timeline --window 10m --step 1m --json >"$T/tl.json" 2>"$T/tl.err" ||
	fail "fleet timeline failed: $(cat "$T/tl.err")"
fleet timeline --window 10m --top 1 --json >"$T/tl1.json" 2>"$T/tl1.err" ||
	fail "fleet timeline --top 1 failed: $(cat "$T/tl1.err")"
fleet timeline --window 10m --by comm --json >"$T/tlc.json" 2>"$T/tlc.err" ||
	fail "fleet timeline --by comm failed: $(cat "$T/tlc.err")"
python3 - "$T" "$t" <<'PY' || fail "fleet timeline: $(cat "$T/tl.json" "$T/tl1.json" "$T/tlc.json")"
import json, sys
d, t = sys.argv[1], int(sys.argv[2])
tl = json.load(open(d + "/tl.json"))
assert tl["by"] == "host" and tl["event"] == "cpu" and tl["step_ns"] == 60 * 10**9, tl
assert tl["samples"] == 190, tl["samples"]
groups = {g["name"]: g for g in tl["groups"]}
assert set(groups) == {"db'1\\x", "web-1"}, groups.keys()
k = (t - tl["start_ns"]) // tl["step_ns"]
for name, total in (("db'1\\x", 6 * 10**9), ("web-1", 4 * 10**9)):
    g = groups[name]
    assert g["total"] == total and g["values"][k] == total and sum(g["values"]) == total, g
top1 = json.load(open(d + "/tl1.json"))
assert [(g["name"], g["total"]) for g in top1["groups"]] == [("db'1\\x", 6 * 10**9), ("other", 4 * 10**9)], top1
byc = json.load(open(d + "/tlc.json"))
assert sorted((g["name"], g["total"]) for g in byc["groups"]) == [("postgres", 4 * 10**9), ("redis", 6 * 10**9)], byc
PY
fleet timeline --window 10m >"$T/tl.txt" 2>&1 && grep -q "^cpu by host" "$T/tl.txt" && grep -q "web-1" "$T/tl.txt" ||
	fail "fleet timeline chart: $(cat "$T/tl.txt")"

if [ -n "$GO" ] && [ -x "$GO" ]; then
	"$GO" tool pprof -tags "$T/all.pb.gz" >"$T/tags" 2>&1 || fail "go tool pprof -tags: $(cat "$T/tags")"
	grep -Eq '6\.0s \(60\.00%\): db.1.x$' "$T/tags" && grep -Eq '4\.0s \(40\.00%\): web-1$' "$T/tags" ||
		fail "go tool pprof -tags: $(cat "$T/tags")"
	"$GO" tool pprof -top -tagfocus host=web-1 "$T/all.pb.gz" >"$T/gotop" 2>&1
	grep -q "leaf_b" "$T/gotop" && ! grep -q schedule "$T/gotop" ||
		fail "go tool pprof -tagfocus host=web-1: $(cat "$T/gotop")"
else
	echo "fleet_query: go not found, go tool pprof checks left out" >&2
fi

# Filters: a host glob, comm, label, another event.
fleet top --window 10m --host 'web-*' >"$T/f1" 2>&1 && grep -q leaf_b "$T/f1" &&
	! grep -q schedule "$T/f1" || fail "--host web-*: $(cat "$T/f1")"
fleet top --window 10m --host "db?1*" >"$T/f2" 2>&1 && grep -q schedule "$T/f2" &&
	! grep -q leaf_b "$T/f2" || fail "--host db?1*: $(cat "$T/f2")"
fleet top --window 10m --host "db'1\\x" >"$T/f3" 2>&1 && grep -q schedule "$T/f3" ||
	fail "--host with a quote and a backslash: $(cat "$T/f3")"
fleet top --window 10m --comm postgres --label tenant=acme >"$T/f4" 2>&1 &&
	grep -q leaf_b "$T/f4" && ! grep -q schedule "$T/f4" || fail "--comm --label: $(cat "$T/f4")"
fleet top --window 10m --event offcpu >"$T/f5" 2>&1 && grep -Eq '^ +9s +100\.0% .* leaf_b$' "$T/f5" ||
	fail "--event offcpu: $(cat "$T/f5")"
# A LIKE wildcard typed by the user matches only itself.
fleet top --window 10m --host 'web-%' >"$T/f6" 2>&1
[ $? = 1 ] || fail "--host web-% matched: $(cat "$T/f6")"
# The old row is in a window of its own.
fleet top --from $((now - 7300)) --to $((now - 7000)) >"$T/f7" 2>&1 &&
	grep -Eq '^ +2s +100\.0% .* leaf_a$' "$T/f7" || fail "--from/--to: $(cat "$T/f7")"

# A window with no rows: exit 1, said, and no file left.
fleet attach --from 2020-01-01T00:00:00Z --to 2020-01-01T00:01:00Z -o "$T/none.pb.gz" 2>"$T/none.err"
[ $? = 1 ] && grep -q "no samples of cpu in 2020-01-01T00:00:00" "$T/none.err" && [ ! -e "$T/none.pb.gz" ] ||
	fail "an empty window: $(cat "$T/none.err")"

# Values built to leave their literal match nothing and change nothing.
for h in "x' OR '1'='1" "x\\' OR 1=1 --" "%' OR host LIKE '%" "web-1'; DROP TABLE flightrec.samples; --"; do
	fleet attach --window 10m --host "$h" -o "$T/inj.pb.gz" 2>"$T/inj.err"
	[ $? = 1 ] && grep -q "no samples" "$T/inj.err" || fail "--host \"$h\": $(cat "$T/inj.err")"
done
for c in "x'OR'1'='1" "p') OR (1=1"; do
	fleet attach --window 10m --comm "$c" -o "$T/inj.pb.gz" 2>"$T/inj.err"
	[ $? = 1 ] && grep -q "no samples" "$T/inj.err" || fail "--comm \"$c\": $(cat "$T/inj.err")"
done
fleet attach --window 10m --label "tenant=acme' OR '1'='1" -o "$T/inj.pb.gz" 2>"$T/inj.err"
[ $? = 1 ] || fail "--label injection: $(cat "$T/inj.err")"
[ "$(ch_query 1 "SELECT count() FROM flightrec.samples_all")" = "$rows_before" ] ||
	fail "the samples changed"

# The first URL is down: the second answers.
"$FLIGHTREC" fleet attach --clickhouse "http://127.0.0.1:1,$(ch_url 2)" --window 10m \
	-o "$T/failover.pb.gz" 2>"$T/failover.err" ||
	fail "failover: $(cat "$T/failover.err")"
grep -q "190 samples from 2 hosts" "$T/failover.err" || fail "failover: $(cat "$T/failover.err")"

# No server answers: exit 1, curl's reason. A shard down: ClickHouse's
# error and exit 1, never a profile of the shards that are left.
"$FLIGHTREC" fleet attach --clickhouse "http://127.0.0.1:1" --window 10m -o "$T/down.pb.gz" 2>"$T/down.err"
[ $? = 1 ] && grep -qi "connect" "$T/down.err" || fail "no server: $(cat "$T/down.err")"
ch_stop 2
"$FLIGHTREC" fleet attach --clickhouse "$(ch_url 1)" --window 10m -o "$T/half.pb.gz" 2>"$T/half.err"
[ $? = 1 ] && [ ! -e "$T/half.pb.gz" ] && grep -q "ClickHouse at" "$T/half.err" ||
	fail "a shard down: $(cat "$T/half.err")"
ch_start 2

# A user with a password from a file (ClickHouse 18.16 has users only in
# users.xml, which it reloads): the right one answers, a wrong one is
# ClickHouse's refusal and exit 1.
sed -i "s#</users>#<reader><password>s3cr'et</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></reader></users>#" \
	"$T/ch/1/users.xml"
reader_ok() { [ "$(curl -s -u "reader:s3cr'et" --data-binary 'SELECT 1' "$(ch_url 1)/")" = 1 ]; }
try_until 20 reader_ok
printf "%s\n" "s3cr'et" >"$T/pw"
printf "%s\n" "wrong" >"$T/pw.bad"
"$FLIGHTREC" fleet attach --clickhouse "$(ch_url 1)" --user reader --password-file "$T/pw" \
	--window 10m -o "$T/user.pb.gz" 2>"$T/user.err" || fail "--user reader: $(cat "$T/user.err")"
"$FLIGHTREC" fleet attach --clickhouse "$(ch_url 1)" --user reader --password-file "$T/pw.bad" \
	--window 10m -o "$T/user.pb.gz" 2>"$T/user.err"
[ $? = 1 ] && grep -qi "password" "$T/user.err" || fail "a wrong password: $(cat "$T/user.err")"

# Refused before any query.
"$FLIGHTREC" fleet attach --clickhouse "$(ch_url 1)" --window 1m --database 'x;y' -o "$T/x" 2>"$T/err"
[ $? = 2 ] || fail "a hostile --database was not refused: $(cat "$T/err")"
"$FLIGHTREC" fleet attach --clickhouse "file:///etc/passwd" --window 1m -o "$T/x" 2>"$T/err"
[ $? = 2 ] || fail "a file:// URL was not refused: $(cat "$T/err")"
# Regression: with the stacks asked first, a batch landing between the two
# queries (its stack, then its samples, as exporters insert) left a total
# without its stack. A proxy lands one right after the first query.
python3 "$(dirname "$0")/ch_between.py" "$T/proxy.port" "$(ch_url 1)" "" \
	"INSERT INTO flightrec.stacks VALUES ($t, 77, ['late_fn'], [''], [0], ['/bin/app'], [''])" \
	"INSERT INTO flightrec.samples VALUES ($t, 'web-1', 'cpu', 77, 10, 'postgres', [], [], $S, 19, 99)" &
try_until 5 '[ -s "$T/proxy.port" ]'
"$FLIGHTREC" fleet attach --clickhouse "http://127.0.0.1:$(cat "$T/proxy.port")" --window 10m \
	-o "$T/late.pb.gz" 2>"$T/late.err" || fail "fleet attach through the proxy: $(cat "$T/late.err")"
"$FLIGHTREC" top "$T/late.pb.gz" -n 100 >"$T/late.top" 2>&1
! grep -q "stack not in the stacks table" "$T/late.top" ||
	fail "a batch between the queries left a total without its stack: $(cat "$T/late.top")"
[ "$(ch_query 1 "SELECT count() FROM flightrec.samples WHERE stack_hash = 77")" = 1 ] ||
	fail "the proxy's batch did not land"
echo "fleet_query: ok"
