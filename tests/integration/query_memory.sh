#!/bin/bash
# Concurrent heavy attaches share limits.query_memory: with a small budget,
# eight at once take not much more memory than one alone (they wait their
# turn, or are told to retry), each either writes its profile or says the
# daemon is busy, and the daemon's RSS returns near its idle size after.
. "$(dirname "$0")/lib.sh"
need_root_perf
STACKS=$BUILD/tests/bench/stacks
[ -x "$STACKS" ] || skip "needs tests/bench/stacks (built with the benchmarks)"

BUDGET_MIB=8
# Frame-pointer stacks: what is measured is the queries' memory, and the
# daemon's peak RSS would otherwise also hold what CFI unwinding does
# meanwhile (16 MiB perf rings per CPU at 5000 Hz, whole files read to
# build tables for the programs the attaches exec).
printf '{"limits": {"query_memory": "%dMiB"}, "sessions": [{"name": "heavy", "events": [{"event": "cpu", "hz": 5000, "unwind": "fp"}]}]}\n' \
	"$BUDGET_MIB" >"$T/config.json"
start_daemon --config "$T/config.json"
"$FLIGHTREC" status >"$T/status" || fail "status failed"

kib() { awk -v k="$2:" '$1 == k { print $2 }' /proc/"$DAEMON_PID"/status; }

# Many distinct stacks at a high rate: each attach of the window builds
# tens of MiB of tables.
"$STACKS" 6 2 16384 >/dev/null || fail "the stacks workload failed"
sleep 1
idle=$(kib "$DAEMON_PID" VmRSS)

# One attach alone: what a query of this window takes.
echo 5 >/proc/"$DAEMON_PID"/clear_refs
"$FLIGHTREC" attach --window 7s -o "$T/one.pb.gz" 2>"$T/one.err" ||
	fail "a single attach failed: $(cat "$T/one.err")"
one=$(( $(kib "$DAEMON_PID" VmHWM) - idle ))

# Eight at once.
idle8=$(kib "$DAEMON_PID" VmRSS)
echo 5 >/proc/"$DAEMON_PID"/clear_refs
pids=()
for i in $(seq 8); do
	"$FLIGHTREC" attach --window 7s -o "$T/p$i.pb.gz" 2>"$T/err$i" &
	pids+=($!)
done
ok=0
for i in $(seq 8); do
	st=0
	wait "${pids[$((i - 1))]}" || st=$?
	if [ "$st" = 0 ]; then
		ok=$((ok + 1))
		[ -s "$T/p$i.pb.gz" ] || fail "attach $i succeeded but wrote nothing"
	else
		[ -e "$T/err$i" ] || fail "attach $i ended with status $st before it could write its stderr ($(ls "$T" | tr '\n' ' '))"
		grep -q "^flightrec: attach: busy: other queries hold the daemon's query memory (limits.query_memory, 8.0MiB) for over 30 s; retry later$" "$T/err$i" ||
			fail "attach $i failed (status $st) without the busy message: $(cat "$T/err$i")"
		[ ! -e "$T/p$i.pb.gz" ] || fail "a busy attach left $T/p$i.pb.gz"
	fi
done
[ "$ok" -ge 1 ] || fail "no attach got through"
eight=$(( $(kib "$DAEMON_PID" VmHWM) - idle8 ))
echo "RSS idle $((idle / 1024)) MiB; peak above idle: one attach $((one / 1024)) MiB, eight at once $((eight / 1024)) MiB ($ok ok)"
# Unbounded, eight concurrent queries take about eight times one.
bound=$(( 2 * one + 2 * BUDGET_MIB * 1024 ))
[ "$eight" -le "$bound" ] ||
	fail "eight concurrent attaches took $((eight / 1024)) MiB above idle; one alone took $((one / 1024)) MiB and the budget is ${BUDGET_MIB} MiB (bound $((bound / 1024)) MiB)"

# The memory goes back: RSS returns to within two queries' worth of idle
# (bounded poll). Not tighter: the daemon's own recording memory (its
# queue of sealed chunks, the tracker) moves with the machine's load, and
# malloc keeps what sits below the top of a thread's arena; on a loaded
# machine one query's worth was exceeded by a few MiB.
limit=$(( idle8 + 2 * (one > 16384 ? one : 16384) ))
try_until 10 'after=$(kib "$DAEMON_PID" VmRSS); [ "$after" -le "$limit" ]'
[ "$after" -le "$limit" ] || {
	grep -E '^(Rss|Anon|Threads)' /proc/"$DAEMON_PID"/smaps_rollup /proc/"$DAEMON_PID"/status >&2
	fail "RSS stayed at $((after / 1024)) MiB after the attaches (idle $((idle8 / 1024)) MiB, limit $((limit / 1024)) MiB)"
}
echo "RSS after: $((after / 1024)) MiB"
daemon_alive || fail "the daemon died"
stop_daemon
echo "query_memory: ok"
