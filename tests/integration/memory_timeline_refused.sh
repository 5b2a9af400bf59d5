#!/bin/bash
# A timeline that would need more memory than the ceiling leaves it is
# refused with a message that says why and what to ask instead, and the
# daemon keeps recording; a timeline that fits still runs. Before, a
# timeline took whatever its window needed, outside any limit.
#
# 400 sleeping processes under a 64 MiB ceiling: their off-CPU waits,
# spread over a 7 s window in 2 ms steps, are 400 x 3,500 cells (a table
# of 64 MiB), past what the caches leave under the ceiling.
. "$(dirname "$0")/lib.sh"
need_root_perf

printf '{"limits": {"memory": "64MiB"}}\n' >"$T/config.json"
start_daemon --config "$T/config.json"
samples() { "$FLIGHTREC" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["samples"])'; }

# Started after the daemon, so that each one's wait is recorded.
for _ in $(seq 400); do
	sleep infinity &
done
sleep 9

before=$(samples)
if "$FLIGHTREC" timeline --window 7s --step 2ms --event offcpu --by process --json \
	>"$T/big.json" 2>"$T/big.err"; then
	fail "a timeline of 400 x 3,500 cells ran under a 64 MiB ceiling ($(wc -c <"$T/big.json") bytes)"
fi
grep -Eq '^flightrec timeline: timeline: refused: the window needs more than the [0-9.]+[KM]iB of memory it could reserve under limits.memory \(64MiB, shared with the daemon.s caches and other queries\); ask for a shorter window, a wider step or fewer groups$' "$T/big.err" ||
	fail "not the refusal expected: $(cat "$T/big.err")"

# Still recording: samples keep coming, and a timeline that fits runs.
try_until 10 '[ "$(samples)" -gt "$before" ]'
[ "$(samples)" -gt "$before" ] || fail "no sample recorded after the refusal"
"$FLIGHTREC" timeline --window 5s --event offcpu --by comm --json >"$T/small.json" 2>"$T/small.err" ||
	fail "a small timeline failed after the refusal: $(cat "$T/small.err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert any(g["name"] == "sleep" for g in d["groups"]), d["groups"]' "$T/small.json" ||
	fail "the small timeline has no sleep group"
# What the refused timeline reserved went back.
"$FLIGHTREC" status --json >"$T/status.json"
python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["memory"]; assert m["timelines"] == 0 and m["queries"] == 0, m' "$T/status.json" ||
	fail "memory still reserved after the timelines: $(cat "$T/status.json")"

# A reload raises the ceiling: the same timeline now fits.
printf '{"limits": {"memory": "1GiB"}}\n' >"$T/config.json"
"$FLIGHTREC" reload >/dev/null 2>"$T/reload.err" || fail "reload failed: $(cat "$T/reload.err")"
"$FLIGHTREC" status --json >"$T/status.json"
python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["memory"]; assert m["limit"] == 1 << 30, m' "$T/status.json" ||
	fail "status after the reload: $(cat "$T/status.json")"
"$FLIGHTREC" timeline --window 7s --step 2ms --event offcpu --by process --json \
	>"$T/big.json" 2>"$T/big.err" || fail "under a 1 GiB ceiling the timeline failed: $(cat "$T/big.err")"
echo "PASS"
