#!/bin/bash
# "My service was throttled": a CPU-bound program (two threads) in a
# cgroup whose CPU quota is a fifth of a CPU (cfs quota 20 ms a 100 ms
# period; cpu.max on cgroup v2) for 5 s, beside one in a cgroup without a quota. The
# recorder reads the cpu.stat of the cgroups whose processes ran once a
# second; `flightrec timeline --event throttled` shows the throttled
# program's cgroup (and, --by process, the program) throttled for the time
# cpu.stat's throttled time grew, within 15%, and nothing of the other.
# attach refuses the event (pointing to the timeline) and
# FLIGHTREC_THROTTLE_SAMPLES=off records none, status says so.
#
# The recorder's first read of a cgroup is its baseline: the program runs
# without a quota until the recorder has read its cgroup, then the quota
# is set, so both the recorder and the test count the throttling from
# nothing.
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -x "$BURN" ] || fail "burn was not built"

# Where the hierarchies are: the fstype follows " - " in mountinfo.
mount_of() { # FSTYPE [SUPER-OPTION]
	awk -v fs="$1" -v opt="${2:-}" '{
		for (i = 1; i <= NF && $i != "-"; i++) ;
		if ($(i + 1) != fs) next
		if (opt != "" && ("," $(i + 3) ",") !~ ("," opt ",")) next
		print $5; exit }' /proc/self/mountinfo
}
UNI=$(mount_of cgroup2)
V1=$(mount_of cgroup cpu)
NAME=fr-throttle-$$
FREE_NAME=fr-free-$$
if [ -n "$UNI" ] && grep -qw cpu "$UNI/cgroup.controllers" 2>/dev/null &&
	{ grep -qw cpu "$UNI/cgroup.subtree_control" ||
		echo +cpu >"$UNI/cgroup.subtree_control"; } 2>/dev/null; then
	MODE=v2 CPU=$UNI
elif [ -n "$V1" ]; then
	MODE=v1 CPU=$V1
else
	skip "no cgroup hierarchy has the cpu controller (cgroup2 ${UNI:-not mounted}" \
		"lists no cpu in cgroup.controllers, no v1 cpu mount)"
fi

BUSY='' FREE=''
remove_cgroups() {
	local d
	# Only these: a bare wait would wait for the recorder too.
	[ -n "$BUSY" ] && kill -9 "$BUSY" 2>/dev/null && wait "$BUSY" 2>/dev/null
	[ -n "$FREE" ] && kill -9 "$FREE" 2>/dev/null && wait "$FREE" 2>/dev/null
	for d in "$CPU/$NAME" "$CPU/$FREE_NAME" "$UNI/$NAME" "$UNI/$FREE_NAME"; do
		[ -d "$d" ] && try_until 5 rmdir "$d" 2>/dev/null
	done
	return 0
}
trap 'remove_cgroups; cleanup' EXIT

mkdir "$CPU/$NAME" "$CPU/$FREE_NAME" || fail "cannot make cgroups under $CPU"
# On a hybrid machine the recorder names a process's cgroup by its v2
# path: the programs go to cgroups of the same names there too.
MOVE_TO=("$CPU")
if [ "$MODE" = v1 ] && [ -n "$UNI" ] && mkdir "$UNI/$NAME" "$UNI/$FREE_NAME" 2>/dev/null; then
	MOVE_TO+=("$UNI")
fi
throttled_ns() {
	if [ "$MODE" = v2 ]; then
		awk '$1 == "throttled_usec" { print $2 * 1000 }' "$CPU/$NAME/cpu.stat"
	else
		awk '$1 == "throttled_time" { print $2 }' "$CPU/$NAME/cpu.stat"
	fi
}
set_quota() { # on|off
	if [ "$MODE" = v2 ]; then
		[ "$1" = on ] && echo "20000 100000" >"$CPU/$NAME/cpu.max" ||
			echo "max 100000" >"$CPU/$NAME/cpu.max"
	else
		echo 100000 >"$CPU/$NAME/cpu.cfs_period_us"
		[ "$1" = on ] && echo 20000 >"$CPU/$NAME/cpu.cfs_quota_us" ||
			echo -1 >"$CPU/$NAME/cpu.cfs_quota_us"
	fi
}
# run_in CGROUP-NAME THREADS: burn for 60 s (killed sooner) in that
# cgroup of every hierarchy of MOVE_TO, in the background ($! its pid).
run_in() {
	local dirs=() d
	for d in "${MOVE_TO[@]}"; do dirs+=("$d/$1/cgroup.procs"); done
	THREADS=$2 sh -c 'for f; do echo $$ >"$f" || exit 1; done; exec "$BURN" 60 "$THREADS"' \
		sh "${dirs[@]}" >/dev/null &
}
export BURN

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "s", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
[ "$(status_value '[e["state"] for e in d["events"] if e["event"] == "throttled"][0]')" = recording ] ||
	fail "throttled is not recording: $("$FLIGHTREC" status)"
set_quota off
# Two threads spend the quota twice as fast, and get their share of a
# machine busy with other work.
run_in "$NAME" 2
BUSY=$!
run_in "$FREE_NAME" 1
FREE=$!
wait_until 10 "the programs to run" 'has_run "$BUSY" && has_run "$FREE"'
# Both cgroups read once (their baselines): the recorder reads the
# cgroups of the pids it noted in the last second at its next tick, and
# counts a cgroup watched as it reads it.
watched() {
	status_value '[e["cgroups"]["watched"] for e in d["events"] if e["event"] == "throttled"][0]'
}
wait_until 30 "the recorder to read both cgroups" '[ "$(watched)" -ge 2 ] 2>/dev/null'
wait_seals 2
T0=$(throttled_ns)
FROM=$(date +%s)
set_quota on
sleep 5
kill -9 "$BUSY" "$FREE"
wait "$BUSY" "$FREE" 2>/dev/null
BUSY_PID=$BUSY FREE_PID=$FREE BUSY='' FREE=''
# The last reads: the second after the programs ended.
sleep 3
T1=$(throttled_ns)
TO=$(($(date +%s) + 2))
wait_until 10 "the window's end" '[ "$(date +%s)" -gt "$TO" ]'
TRUTH=$((T1 - T0))
# Idle, the program is throttled seconds of the 5 (cpu.stat adds up the
# CPUs' throttled times); on a machine so loaded that it barely ran there
# is too little to compare.
[ "$TRUTH" -gt 200000000 ] || fail "the quota throttled only $TRUTH ns in 5 s (a loaded machine?)"

Q=(--from "$FROM" --to "$TO" --step 1s --top 32 --json)
"$FLIGHTREC" timeline --event throttled "${Q[@]}" >"$T/cg.json" 2>"$T/err" ||
	fail "timeline --event throttled failed: $(cat "$T/err")"
"$FLIGHTREC" timeline --event throttled --by process "${Q[@]}" >"$T/pid.json" 2>"$T/err" ||
	fail "timeline --event throttled --by process failed: $(cat "$T/err")"
NAMED=$([ "${#MOVE_TO[@]}" = 2 ] || [ "$MODE" = v2 ] && echo 1 || echo 0)
python3 - "$T" "$BUSY_PID" "$FREE_PID" "$TRUTH" "/$NAME" "/$FREE_NAME" "$NAMED" <<'PY' ||
import json, sys
T, busy, free, truth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
name, free_name, named = sys.argv[5], sys.argv[6], sys.argv[7] == "1"
cg = json.load(open(f"{T}/cg.json"))
pid = json.load(open(f"{T}/pid.json"))
assert cg["by"] == "cgroup" and cg["unit"] == "nanoseconds", (cg["by"], cg["unit"])
print("truth", truth / 1e9, "s; by cgroup:", [(g["name"], g["total"] / 1e9) for g in cg["groups"]])
print("by process:", [(g["name"], g["total"] / 1e9) for g in pid["groups"]])
b = [g for g in pid["groups"] if g.get("pid") == busy]
assert b, "the throttled program has no throttled time"
assert abs(b[0]["total"] - truth) <= truth * 0.15, (b[0]["total"], truth)
# Throttled while the quota was on, not in one spike: three steps at
# least (five idle; a loaded machine runs the program less).
assert sum(1 for v in b[0]["values"] if v) >= 3, b[0]["values"]
assert not [g for g in pid["groups"] if g.get("pid") == free], "the free program throttled"
if named:
    c = [g for g in cg["groups"] if g["name"] == name]
    assert c and abs(c[0]["total"] - truth) <= truth * 0.15, (c, truth)
    assert not [g for g in cg["groups"] if g["name"] == free_name], "the free cgroup throttled"
PY
	fail "the throttled timeline is not cpu.stat's"
"$FLIGHTREC" timeline --event throttled --from "$FROM" --to "$TO" --step 1s >"$T/cg.txt" 2>"$T/err" ||
	fail "timeline --event throttled (text) failed: $(cat "$T/err")"
grep -q '% throttled$' "$T/cg.txt" || fail "the text timeline: $(cat "$T/cg.txt")"
for cmd in attach "dump --ring $RING"; do
	# shellcheck disable=SC2086
	"$FLIGHTREC" $cmd --event throttled --window 1m -o "$T/x.pb.gz" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || fail "$cmd --event throttled: exit $rc, want 2"
	grep -q 'throttled is a series over time, not a profile: see `flightrec timeline --event throttled`' \
		"$T/err" || fail "$cmd --event throttled: $(cat "$T/err")"
done
"$FLIGHTREC" status >"$T/status.txt"
grep -Eq '^event: +throttled at once a second, whatever sessions ask: [1-9][0-9]* samples' \
	"$T/status.txt" || fail "status does not show the throttled samples: $(cat "$T/status.txt")"
grep -Eq "^cgroups: +[1-9][0-9]* watched \(cgroup $MODE at $CPU\): [1-9][0-9]* cpu.stat reads, 0 failed" \
	"$T/status.txt" || fail "status does not show the cgroups read: $(cat "$T/status.txt")"
[ "$(status_value '[e["cgroups"]["reads"] > 0 for e in d["events"] if e["event"] == "throttled"][0]')" = True ] ||
	fail "status --json has no cgroups reads: $("$FLIGHTREC" status --json)"
stop_daemon
# With no recorder, the ring alone gives the same series, by cgroup too.
"$FLIGHTREC" dump --ring "$RING" --timeline --event throttled "${Q[@]}" >"$T/cg-ring.json" 2>"$T/err" ||
	fail "dump --ring --timeline --event throttled failed: $(cat "$T/err")"
cmp -s <(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["groups"])' "$T/cg.json") \
	<(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["groups"])' "$T/cg-ring.json") ||
	fail "the ring's throttled series is not the live one: $(cat "$T/cg-ring.json")"

FLIGHTREC_THROTTLE_SAMPLES=off start_daemon --config "$T/config.json"
"$FLIGHTREC" status | grep -q 'throttled not recording: off (FLIGHTREC_THROTTLE_SAMPLES=off)' ||
	fail "status does not say why throttled is off: $("$FLIGHTREC" status)"
[ "$(status_value '[e["state"] for e in d["events"] if e["event"] == "rss"][0]')" = recording ] ||
	fail "FLIGHTREC_THROTTLE_SAMPLES=off stopped rss too: $("$FLIGHTREC" status)"
stop_daemon
echo "PASS"
