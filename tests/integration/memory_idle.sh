#!/bin/bash
# Memory given back when idle: after a storm of eight heavy attaches and
# one of sixty concurrent timelines, the daemon's RSS returns near its
# idle size (within 64 MiB), polled with a generous deadline. Each query
# and timeline trims what it freed when it ends, and the caches unused for
# a minute (symbol images, unwind tables) go. Before, timelines never
# trimmed (sixty of them left the daemon hundreds of MiB larger until an
# attach happened to) and symbol images stayed up to 256 MiB for good.
# Then status shows the ceiling (limits.memory, default 512 MiB) and what
# holds it, in its JSON and as one line of text.
. "$(dirname "$0")/lib.sh"
need_root_perf
STACKS=$BUILD/tests/bench/stacks
[ -x "$STACKS" ] || skip "needs tests/bench/stacks (built with the benchmarks)"

# Many distinct stacks at 999 Hz: each attach of the window has tens of
# MiB of tables to build; off-CPU waits give the timelines cells.
printf '{"sessions": [{"name": "heavy", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}\n' \
	>"$T/config.json"
start_daemon --config "$T/config.json"

kib() { awk '$1 == "VmRSS:" { print $2 }' /proc/"$DAEMON_PID"/status; }
# KiB of unwind tables: the recorder builds them for whatever the machine
# runs meanwhile (within their share of the ceiling), which is not what
# the storms left.
tables_kib() {
	"$FLIGHTREC" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["unwind_tables"]["bytes"] // 1024)'
}

"$STACKS" 8 2 16384 >/dev/null || fail "the stacks workload failed"
wait_tables_built
# One attach and one timeline first, so that idle is the size of a daemon
# that has answered queries (its threads' stacks, libraries touched), not
# of one that never did.
"$FLIGHTREC" attach --window 1s -o "$T/warm.pb.gz" 2>"$T/warm.err" ||
	fail "the warm-up attach failed: $(cat "$T/warm.err")"
"$FLIGHTREC" timeline --window 1s >/dev/null 2>&1 || fail "the warm-up timeline failed"
sleep 2
idle=$(kib)
idle_tables=$(tables_kib)

# The attach storm: eight at once over the whole busy window.
pids=()
for i in $(seq 8); do
	"$FLIGHTREC" attach --window 30s -o "$T/p$i.pb.gz" 2>"$T/attach$i.err" &
	pids+=($!)
done
for i in $(seq 8); do
	wait "${pids[$((i - 1))]}" || grep -q "busy" "$T/attach$i.err" ||
		fail "attach $i failed: $(cat "$T/attach$i.err")"
done
storm_attach=$(kib)

# The timeline storm: sixty at once, fine steps over the whole ring.
pids=()
for i in $(seq 60); do
	"$FLIGHTREC" timeline --window 1h --step 10ms --event offcpu --json \
		>/dev/null 2>"$T/tl$i.err" &
	pids+=($!)
done
for i in $(seq 60); do
	wait "${pids[$((i - 1))]}" || grep -q "busy\|refused" "$T/tl$i.err" ||
		fail "timeline $i failed: $(cat "$T/tl$i.err")"
done
storm_timeline=$(kib)

# Back near idle: queries trim at their end, caches unused for a minute
# go (the housekeeping wakes every 10 s): 150 s is generous. Tables built
# meanwhile for other programs of the machine are allowed for.
settled() {
	more=$(($(tables_kib) - idle_tables))
	limit=$((idle + 64 * 1024 + (more > 0 ? more : 0)))
	after=$(kib)
	[ "$after" -le "$limit" ]
}
try_until 150 settled
echo "RSS idle $((idle / 1024)) MiB; after the attaches $((storm_attach / 1024)) MiB, after the timelines $((storm_timeline / 1024)) MiB; then $((after / 1024)) MiB"
[ "$after" -le "$limit" ] || {
	"$FLIGHTREC" status >&2
	fail "RSS stayed at $((after / 1024)) MiB after the storms (idle $((idle / 1024)) MiB, limit $((limit / 1024)) MiB)"
}

# Status: the ceiling, in JSON and in one line of text.
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
python3 - "$T/status.json" <<'EOF' || fail "status --json: no memory ceiling: $(cat "$T/status.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
assert m["limit"] == 512 << 20, m
parts = ("queries", "timelines", "unwind_tables", "symbols", "labels")
assert m["used"] == sum(m[k] for k in parts), m
assert m["unwind_tables"] > 0 and m["labels"] > 0, m
EOF
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep -Eq '^memory: +[0-9]+ MiB of 512 MiB \(queries [0-9]+, timelines [0-9]+, unwind tables [0-9]+, symbols [0-9]+, labels [0-9]+\)$' "$T/status" ||
	fail "status shows no memory line: $(cat "$T/status")"
echo "PASS"
