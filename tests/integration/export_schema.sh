#!/bin/bash
# flightrec export --init-schema on two real ClickHouse shards: the tables
# exist on each, the cluster-wide tables see both shards' rows, a second
# run changes nothing but the retention, --expire drops only the days past
# the retention, bad names or an unreachable server fail clearly, and a
# password is read from a file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
need_clickhouse
ch_start_cluster 2 frtest

"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frtest --ttl 3d \
	>"$T/init.out" 2>&1 || fail "init-schema failed: $(cat "$T/init.out")"
for i in 1 2; do
	tables=$(ch_query "$i" "SHOW TABLES FROM flightrec" | tr '\n' ' ')
	[ "$tables" = "samples samples_all settings stacks stacks_all " ] ||
		fail "shard $i has tables \"$tables\""
done

now=$(date +%s)
old=$((now - 10 * 86400))
ch_query 1 "INSERT INTO flightrec.samples (time, host, value, count) VALUES (${now}000000000, 'h1', 5, 1)" >/dev/null
ch_query 2 "INSERT INTO flightrec.samples (time, host, value, count) VALUES (${now}000000000, 'h2', 7, 1)" >/dev/null
ch_query 2 "INSERT INTO flightrec.samples (time, host, value, count) VALUES (${old}000000000, 'h2', 11, 1)" >/dev/null
ch_query 2 "INSERT INTO flightrec.stacks (time, stack_hash) VALUES (${old}000000000, 42)" >/dev/null

# Both shards through either server's Distributed table.
got=$(ch_query 1 "SELECT host, sum(value) FROM flightrec.samples_all GROUP BY host ORDER BY host" | tr '\t\n' ':,')
[ "$got" = "h1:5,h2:18," ] || fail "samples_all on shard 1 gives \"$got\", want h1:5,h2:18,"

# Again, with a longer retention: no error, rows kept, the new retention read.
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frtest --ttl 20d \
	>"$T/init2.out" 2>&1 || fail "second init-schema failed: $(cat "$T/init2.out")"
"$FLIGHTREC" export --expire --clickhouse "$(ch_urls)" >"$T/exp1.out" 2>&1 ||
	fail "expire failed: $(cat "$T/exp1.out")"
got=$(ch_query 1 "SELECT count() FROM flightrec.samples_all")
[ "$got" = 3 ] || fail "20-day retention dropped rows: $got left of 3"

# Back to 3 days: the 10-day-old samples and stacks go, today's stay.
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_urls)" --cluster frtest --ttl 3d >/dev/null 2>&1 ||
	fail "third init-schema failed"
"$FLIGHTREC" export --expire --clickhouse "$(ch_urls)" >"$T/exp2.out" 2>&1 ||
	fail "expire failed: $(cat "$T/exp2.out")"
grep -q "2 day partitions dropped" "$T/exp2.out" || fail "expire said: $(cat "$T/exp2.out")"
got=$(ch_query 1 "SELECT host, sum(value) FROM flightrec.samples_all GROUP BY host ORDER BY host" | tr '\t\n' ':,')
[ "$got" = "h1:5,h2:7," ] || fail "after expire samples_all gives \"$got\", want h1:5,h2:7,"
[ "$(ch_query 2 "SELECT count() FROM flightrec.stacks")" = 0 ] || fail "old stacks were kept"

# Without --cluster the *_all tables are views of the server's own tables.
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" --database solo >/dev/null 2>&1 ||
	fail "init-schema without a cluster failed"
[ "$(ch_query 1 "SELECT count() FROM solo.samples_all")" = 0 ] || fail "solo.samples_all is not empty"

# Refused before any request: hostile names, a URL that is not http(s).
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" --database 'x;DROP' 2>"$T/err"
[ $? = 2 ] && grep -q "database and cluster names" "$T/err" || fail "a hostile database name was not refused"
"$FLIGHTREC" export --init-schema --clickhouse "file:///etc/passwd" 2>"$T/err"
[ $? = 2 ] && grep -q "not an http" "$T/err" || fail "a file:// URL was not refused"
# A server that is not there: exit 1, curl's reason.
"$FLIGHTREC" export --init-schema --clickhouse "http://127.0.0.1:1" 2>"$T/err"
[ $? = 1 ] && grep -q "connect" "$T/err" || fail "an unreachable server: $(cat "$T/err")"
# A user with a password, read from a file: right, then wrong.
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" --database pw --user frpw \
	--password-file "$CH_PASSWORD_FILE" >"$T/out" 2>&1 || fail "with the password: $(cat "$T/out")"
echo wrong >"$T/wrong"
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" --database pw --user frpw \
	--password-file "$T/wrong" 2>"$T/err"
[ $? = 1 ] && grep -q "HTTP" "$T/err" || fail "a wrong password: $(cat "$T/err")"
"$FLIGHTREC" export --init-schema --clickhouse "$(ch_url 1)" --user frpw \
	--password-file "$T/none" 2>"$T/err"
[ $? = 1 ] && grep -q "cannot open password file" "$T/err" || fail "a missing password file: $(cat "$T/err")"
echo "export_schema: ok"
