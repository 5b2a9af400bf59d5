#!/bin/bash
# The machine's pressure, recorded and triggering. A session has the
# trigger {"on": "pressure", "resource": "cpu", "above": "some 50%",
# "for": "2s"}; then real CPU pressure: burn runs 2 x CPUs + 1 busy threads,
# so that most of the time some runnable task waits for a CPU (PSI's cpu
# "some"). Then:
#  - status lists cpu-pressure and io-pressure as recording, once a second,
#    with samples; `flightrec sessions` shows the trigger;
#  - the trigger wrote a dump fired after the load began, whose sidecar
#    says "trigger": "pressure" and "pressure": {"resource": "cpu", "kind":
#    "some", "share" >= 50, "above": 50}, and whose profile holds burn's
#    fr_burn_heavy (the window is the pressure's);
#  - `flightrec timeline --event cpu-pressure --json` has the machine's
#    series with a step of at least 0.5 s stalled in the second (the load),
#    and `--event io-pressure --json` the machine's series too (values
#    >= 0, one a second);
#  - where cgroup v2 is mounted, a session whose target is the cgroup burn
#    runs in watches that cgroup's own cpu.pressure: its dump's sidecar
#    names the cgroup; a session whose target is an empty cgroup never
#    fires, however loaded the machine is.
# Skips (77) where /proc/pressure is absent: a kernel without PSI, or
# booted with psi=0.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -x "$BURN" ] || fail "burn was not built"
for r in cpu io memory; do
	[ -r /proc/pressure/$r ] ||
		skip "no /proc/pressure/$r (a kernel without PSI, or booted with psi=0)"
done
NCPU=$(getconf _NPROCESSORS_ONLN)

# The cgroups (v2: a cgroup's own pressure files exist there alone): one
# that burn runs in, one left empty.
V2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
CG=
if [ -n "$V2" ] && [ -r "$V2/cpu.pressure" ] && mkdir "$V2/fr-psi-$$" 2>/dev/null; then
	CG=fr-psi-$$
	mkdir "$V2/$CG-idle"
	trap 'cleanup; sleep 0.2; rmdir "$V2/$CG" "$V2/$CG-idle" 2>/dev/null' EXIT
else
	echo "no cgroup v2 with pressure files: the cgroup sessions are left out"
fi
TRIG='{"on": "pressure", "resource": "cpu", "above": "some 50%", "for": "2s", "window": "10s",
       "cooldown": "1s"}'
CGS=
[ -n "$CG" ] && CGS=",
 {\"name\": \"cg\", \"targets\": {\"cgroup\": \"/$CG\"}, \"triggers\": [$TRIG]},
 {\"name\": \"idle\", \"targets\": {\"cgroup\": \"/$CG-idle\"}, \"triggers\": [$TRIG]}"

mkdir -m 0700 "$T/dumps"
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$T/dumps"},
 "sessions": [{"name": "psi", "events": [{"event": "cpu", "hz": 99}], "triggers": [$TRIG]}$CGS]}
JSON
start_daemon --config "$T/config.json"
wait_seals 2
for e in cpu-pressure io-pressure; do
	state=$(status_value "[e['state'] for e in d['events'] if e['event'] == '$e']")
	[ "$state" = "['recording']" ] || fail "status: $e is $state: $("$FLIGHTREC" status)"
done

"$FLIGHTREC" sessions >"$T/sessions.txt" 2>&1 || fail "sessions failed: $(cat "$T/sessions.txt")"
grep -q 'pressure:cpu>=some 50%' "$T/sessions.txt" ||
	fail "sessions does not show the pressure trigger: $(cat "$T/sessions.txt")"

FROM=$(date +%s)
START_NS=$(date +%s%N)
if [ -n "$CG" ]; then
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 15 "$3"' sh "$V2/$CG" "$BURN" \
		$((2 * NCPU + 1)) >"$T/burn.out" &
else
	"$BURN" 15 $((2 * NCPU + 1)) >"$T/burn.out" &
fi
BPID=$!
# fired [SESSION]: the first dump of SESSION (psi) fired after the load began.
fired() {
	python3 - "$T/dumps" "$START_NS" "${1:-psi}" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/" + sys.argv[3] + "-pressure-*.json"):
    s = json.load(open(f))
    if s["fired_ns"] > int(sys.argv[2]):
        print(f)
        break
PY
}
wait_until 15 "a pressure dump fired under the load" '[ -n "$(fired)" ]'
SIDECAR=$(fired)
[ -z "$CG" ] || wait_until 15 "the cgroup's pressure dump" '[ -n "$(fired cg)" ]'
wait "$BPID" || fail "burn failed"
TO=$(($(date +%s) + 2))
wait_until 10 "the window's end" '[ "$(date +%s)" -gt "$TO" ]'

[ -s "${SIDECAR%.json}.pb.gz" ] || fail "the dump has no profile beside $SIDECAR"
python3 - "$SIDECAR" <<'PY' || fail "the sidecar does not say the pressure: $(cat "$SIDECAR")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["pressure"]
print("fired:", s["reason"], p)
assert s["trigger"] == "pressure" and "pid" not in s, s
assert p["resource"] == "cpu" and p["kind"] == "some", p
assert p["above"] == 50 and 50 <= p["share"] <= 100, p
assert s["reason"].startswith("cpu pressure some ") and s["reason"].endswith(" >= 50% for 2s"), s
assert s["window_ns"] == 10 * 10**9, s["window_ns"]
PY
if [ -n "$CG" ]; then
	python3 - "$(fired cg)" "/$CG" <<'PY' || fail "the cgroup's sidecar: $(cat "$(fired cg)")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["pressure"]
print("cgroup fired:", s["reason"], p)
assert p["cgroup"] == sys.argv[2] and p["resource"] == "cpu" and p["share"] >= 50, p
assert s["reason"].endswith(" for 2s in cgroup " + sys.argv[2]), s["reason"]
PY
	# The empty cgroup stalled on nothing, whatever the machine did.
	! ls "$T"/dumps/idle-* >/dev/null 2>&1 ||
		fail "the empty cgroup's session fired: $(cat "$T"/dumps/idle-*.json)"
	! grep -q "cannot read the cpu pressure of cgroup" "$T/daemon.log" ||
		fail "a cgroup's pressure was not read: $(grep 'cannot read' "$T/daemon.log")"
fi
read -r heavy total < <(python3 "$(dirname "$0")/pprof_samples.py" sum "${SIDECAR%.json}.pb.gz" \
	samples fr_burn_heavy)
[ "${heavy:-0}" -gt 0 ] ||
	fail "the dump's profile has not burn's fr_burn_heavy ($heavy of $total samples)"

Q=(--from "$FROM" --to "$TO" --step 1s --json)
for e in cpu-pressure io-pressure; do
	"$FLIGHTREC" timeline --event $e "${Q[@]}" >"$T/$e.json" 2>"$T/err" ||
		fail "timeline --event $e failed: $(cat "$T/err")"
done
python3 - "$T" <<'PY' || fail "the pressure series are not in the timeline"
import json, sys
T = sys.argv[1]
for e in ("cpu-pressure", "io-pressure"):
    d = json.load(open(f"{T}/{e}.json"))
    assert d["event"] == e and d["unit"] == "nanoseconds", (d["event"], d["unit"])
    m = [g for g in d["groups"] if g["name"] == "[machine]"]
    assert m and all(v >= 0 for v in m[0]["values"]), d["groups"]
    # One sample a second over the window (a second or two at its edges
    # may miss).
    assert d["samples"] >= len(m[0]["values"]) - 3, (e, d["samples"], len(m[0]["values"]))
    print(e, "per second (ms):", [round(v / 1e6) for v in m[0]["values"]])
    if e == "cpu-pressure":
        assert max(m[0]["values"]) >= 5 * 10**8, m[0]["values"]
PY
"$FLIGHTREC" timeline --event cpu-pressure --from "$FROM" --to "$TO" --step 1s >"$T/cpu.txt" \
	2>"$T/err" || fail "timeline --event cpu-pressure (text) failed: $(cat "$T/err")"
grep -q '% stall' "$T/cpu.txt" || fail "the text timeline is not in % stall: $(cat "$T/cpu.txt")"
"$FLIGHTREC" status >"$T/status.txt"
for e in cpu-pressure io-pressure; do
	grep -Eq "^event: +$e at once a second, whatever sessions ask: [1-9][0-9]* samples" \
		"$T/status.txt" || fail "status does not show the $e samples: $(cat "$T/status.txt")"
done
stop_daemon
echo "PASS"
