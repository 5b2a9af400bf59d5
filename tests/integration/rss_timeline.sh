#!/bin/bash
# "When did it start growing?": a program grows its resident set by 20 MiB
# a second for 5 s, then holds it for 5 s; the recorder samples the RSS of
# processes that ran once a second. `flightrec timeline --event rss` shows
# the program's steps rising (a gauge: each step's value is what was
# sampled in it, never a sum of samples) up to its RSS within 10% (read by
# the test from /proc/PID/statm while it holds); memory-pressure has its
# samples (values >= 0, the machine's group); FLIGHTREC_MEMORY_SAMPLES=off
# records neither.
. "$(dirname "$0")/lib.sh"
need_root_perf
HOG=$BUILD/tests/integration/oom_hog
[ -x "$HOG" ] || fail "oom_hog was not built"
[ -r /proc/pressure/memory ] || skip "no /proc/pressure/memory (a kernel without PSI, or psi=0)"

# cpu and offcpu: a program that mostly sleeps has samples each second.
cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "s", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
wait_seals 1
FROM=$(date +%s)
"$HOG" 20 5 >"$T/hog.out" &
HPID=$!
# While it holds, the truth.
wait_until 15 "the stair's top" '[ "$(wc -l <"$T/hog.out")" -ge 5 ]'
sleep 2
TRUTH=$(awk -v p="$(getconf PAGESIZE)" '{ print $2 * p }' "/proc/$HPID/statm")
wait "$HPID" || fail "oom_hog (stair) failed"
TO=$(($(date +%s) + 2))
wait_until 10 "the window's end" '[ "$(date +%s)" -gt "$TO" ]'

Q=(--from "$FROM" --to "$TO" --step 1s --top 32 --json)
"$FLIGHTREC" timeline --event rss "${Q[@]}" >"$T/rss.json" 2>"$T/err" ||
	fail "timeline --event rss failed: $(cat "$T/err")"
"$FLIGHTREC" timeline --event memory-pressure "${Q[@]}" >"$T/psi.json" 2>"$T/err" ||
	fail "timeline --event memory-pressure failed: $(cat "$T/err")"
python3 - "$T" "$HPID" "$TRUTH" <<'PY' || fail "the RSS timeline is not the stair's"
import json, sys
T, pid, truth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(open(f"{T}/rss.json"))
assert d["unit"] == "bytes", d["unit"]
g = [g for g in d["groups"] if g.get("pid") == pid]
assert g, [x["name"] for x in d["groups"]]
vals = [v for v in g[0]["values"] if v]
print("rss steps (MiB):", [round(v / 2**20, 1) for v in vals], "truth", round(truth / 2**20, 1))
# Rising: at least four distinct levels, never falling by more than a page
# or two, from under half the top to the top.
assert len(set(vals)) >= 4, vals
assert all(b >= a - 65536 for a, b in zip(vals, vals[1:])), vals
assert vals[0] < max(vals) / 2, vals
# A gauge: the top is the RSS, within 10%, and the total is the peak.
assert abs(max(vals) - truth) <= truth / 10, (max(vals), truth)
assert g[0]["total"] == max(g[0]["values"]), g[0]["total"]
p = json.load(open(f"{T}/psi.json"))
assert p["unit"] == "nanoseconds" and p["samples"] >= 5, (p["unit"], p["samples"])
m = [g for g in p["groups"] if g["name"] == "[machine]"]
assert m and all(v >= 0 for v in m[0]["values"]), p["groups"]
assert sum(1 for x in p["events"] if x == "memory-pressure") == 1, p["events"]
PY
# The text form names the unit a person reads.
"$FLIGHTREC" timeline --event rss --from "$FROM" --to "$TO" --step 1s >"$T/rss.txt" 2>"$T/err" ||
	fail "timeline --event rss (text) failed: $(cat "$T/err")"
grep -q 'MiB$' "$T/rss.txt" || fail "the text timeline of rss is not in MiB: $(cat "$T/rss.txt")"
"$FLIGHTREC" status >"$T/status.txt"
grep -Eq '^event: +rss at once a second, whatever sessions ask: [1-9][0-9]* samples' "$T/status.txt" ||
	fail "status does not show the rss samples: $(cat "$T/status.txt")"
kill9_daemon
# After a crash the ring alone gives the same series.
"$FLIGHTREC" dump --ring "$RING" --timeline --event rss "${Q[@]}" >"$T/rss-ring.json" 2>"$T/err" ||
	fail "dump --ring --timeline --event rss failed: $(cat "$T/err")"
python3 - "$T" "$HPID" <<'PY' || fail "the ring's RSS series is not the live one"
import json, sys
T, pid = sys.argv[1], int(sys.argv[2])
live, ring = (json.load(open(f"{T}/{n}.json")) for n in ("rss", "rss-ring"))
g = lambda d: [x for x in d["groups"] if x.get("pid") == pid][0]["values"]
assert g(live) == g(ring), (g(live), g(ring))
PY

# Off: neither is recorded, status says so.
FLIGHTREC_MEMORY_SAMPLES=off start_daemon --config "$T/config.json"
wait_seals 2
[ "$(status_value '[e["state"] for e in d["events"] if e["event"] == "rss"][0]')" = failed ] ||
	fail "FLIGHTREC_MEMORY_SAMPLES=off still samples: $("$FLIGHTREC" status)"
"$FLIGHTREC" status | grep -q 'rss not recording: off (FLIGHTREC_MEMORY_SAMPLES=off)' ||
	fail "status does not say why rss is off: $("$FLIGHTREC" status)"
stop_daemon
echo "PASS"
