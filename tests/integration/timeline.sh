#!/bin/bash
# flightrec timeline finds the minute: a real recorder records two burners
# with names of their own, one after the other (A for 4 s, then B for 4 s),
# and a sleeper (block: a thread sleeping in fr_block_here while main waits
# in pthread_join) beside them. The timeline of that window, one step a
# second:
#  - each burner's CPU is in the steps it ran (>= 90% of it), its total
#    within 25% (or 0.1 s) of the CPU time it measured itself, A before B;
#  - --by comm gives the burners the same totals as --by process; --pid
#    and --comm narrow it to those processes, with the same totals;
#  - --event offcpu --by comm gives the sleeper its two threads' waits
#    (blocked_ns + wall_ns within 20%), spread over the steps they lasted:
#    no step holds more than its two threads could wait in it;
#  - --by label:phase splits a program labelled with libflightrec 30/70
#    (within 10 points);
#  - bad options are usage errors, the charts fit 80 columns;
#  - after kill -9 of the recorder, dump --ring --timeline of the same
#    window equals the live answer, for cpu and for offcpu (waits going
#    on at the window's end from the open-wait records, the rest read
#    only up to the end, whatever chunks the ring merged since).
. "$(dirname "$0")/lib.sh"
need_root_perf

A=frtlA$$
A=${A:0:15}
B=frtlB$$
B=${B:0:15}
S=frtlS$$
S=${S:0:15}
cp "$BURN" "$T/$A"
cp "$BURN" "$T/$B"
cp "$BLOCK" "$T/$S"

# Bad options are usage errors (2) before anything is asked.
for args in "--by pid" "--top 0" "--top 33" "--step 0" "--step 1us" "--event cpu,offcpu" \
	"--window 1h --from 1" "--event nope"; do
	# shellcheck disable=SC2086
	"$FLIGHTREC" timeline $args >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || fail "timeline $args: exit $rc, want 2: $(cat "$T/err")"
done
"$FLIGHTREC" dump --ring "$T/none" --timeline --cgroup /x >/dev/null 2>&1
[ $? = 2 ] || fail "dump --timeline --cgroup is not a usage error"
"$FLIGHTREC" timeline --cgroup /x >/dev/null 2>&1
[ $? = 2 ] || fail "timeline --cgroup is not a usage error"
"$FLIGHTREC" dump --ring "$T/none" --by comm >/dev/null 2>&1
[ $? = 2 ] || fail "dump --by without --timeline is not a usage error"

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "tl", "events": [{"event": "cpu", "hz": 499}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
wait_seals 1

FROM=$(date +%s)
sleep 1.2
"$T/$S" 8 >"$T/s.out" &
S_PID=$!
TA0=$(date +%s%N)
"$T/$A" 4 1 >"$T/a.out" || fail "burner A failed"
TB0=$(date +%s%N)
"$T/$B" 4 1 >"$T/b.out" || fail "burner B failed"
TB1=$(date +%s%N)
wait "$S_PID" || fail "the sleeper failed"
# A program labelled with libflightrec: phase=a 30% of its CPU, phase=b 70%.
"$BUILD/tests/integration/labels_demo" split 3 >"$T/demo.out" || fail "labels_demo failed"
TO=$(($(date +%s) + 1))
wait_until 5 "the window's end" '[ "$(date +%s)" -gt "$TO" ]'

Q=(--from "$FROM" --to "$TO" --step 1s --top 32)
"$FLIGHTREC" timeline "${Q[@]}" --json >"$T/proc.json" 2>"$T/err" || fail "timeline failed: $(cat "$T/err")"
"$FLIGHTREC" timeline "${Q[@]}" --by comm --json >"$T/comm.json" 2>"$T/err" ||
	fail "timeline --by comm failed: $(cat "$T/err")"
"$FLIGHTREC" timeline "${Q[@]}" --event offcpu --by comm --json >"$T/off.json" 2>"$T/err" ||
	fail "timeline --event offcpu failed: $(cat "$T/err")"
"$FLIGHTREC" timeline "${Q[@]}" --by label:phase --json >"$T/label.json" 2>"$T/err" ||
	fail "timeline --by label:phase failed: $(cat "$T/err")"
# Narrowed to processes: --pid of A, --comm of B and the sleeper.
"$FLIGHTREC" timeline "${Q[@]}" --pid "$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$T/a.out")" --json \
	>"$T/pid.json" 2>"$T/err" || fail "timeline --pid failed: $(cat "$T/err")"
"$FLIGHTREC" timeline "${Q[@]}" --comm "$B,$S" --json >"$T/comms.json" 2>"$T/err" ||
	fail "timeline --comm failed: $(cat "$T/err")"

python3 - "$T" "$A" "$B" "$S" "$TA0" "$TB0" "$TB1" <<'PY' || fail "the timeline is not the workload's"
import json, re, sys
T, A, B, S = sys.argv[1:5]
ta0, tb0, tb1 = (int(x) for x in sys.argv[5:8])
proc, comm, off, lab = (json.load(open(f"{T}/{n}.json")) for n in ("proc", "comm", "off", "label"))
def out(name):
    return dict(kv.split("=") for kv in open(f"{T}/{name}.out").read().split())
step, start = proc["step_ns"], proc["start_ns"]
assert step == 1_000_000_000 and proc["version"] == 1 and proc["unit"] == "nanoseconds"
n = -(-(proc["end_ns"] - start) // step)
assert "cpu" in proc["events"] and "offcpu" in proc["events"], proc["events"]
def group(tl, name):
    g = [g for g in tl["groups"] if g["name"] == name]
    assert len(g) == 1, (name, [g["name"] for g in tl["groups"]])
    assert len(g[0]["values"]) == n and sum(g[0]["values"]) == g[0]["total"], g[0]
    return g[0]
def within(g, t0, t1):
    """Share of g's total in the steps that overlap [t0, t1)."""
    v = g["values"]
    k0, k1 = (t0 - start) // step, -(-(t1 - start) // step)
    return sum(v[max(k0, 0):k1]) / g["total"]
ga = group(proc, "%s (%s)" % (A, out("a")["pid"]))
gb = group(proc, "%s (%s)" % (B, out("b")["pid"]))
assert ga["pid"] == int(out("a")["pid"])
for g, t0, t1, o in ((ga, ta0, tb0, "a"), (gb, tb0, tb1, "b")):
    share = within(g, t0, t1)
    cpu = float(out(o)["cpu_seconds"]) * 1e9
    print("%s: %.0f%% in its steps, %.2f CPU-s (measured %.2f)" % (g["name"], 100 * share,
          g["total"] / 1e9, cpu / 1e9))
    assert share >= 0.9, (g, share)
    # A busy machine leaves a burner little CPU: a few dozen samples.
    assert abs(g["total"] - cpu) <= max(0.25 * cpu, 0.1e9), (g["total"], cpu)
first = lambda g: next(k for k, v in enumerate(g["values"]) if v)
assert first(ga) < first(gb), (ga, gb)
assert group(comm, A)["total"] == ga["total"] and group(comm, B)["total"] == gb["total"]
assert comm["by"] == "comm" and "pid" not in group(comm, A)
gs = group(off, S)
s = out("s")
want = int(s["blocked_ns"]) + int(s["wall_ns"])
print("%s: %.2f s off-CPU (measured %.2f), at most %.2f s in a step" % (S, gs["total"] / 1e9,
      want / 1e9, max(gs["values"]) / 1e9))
assert abs(gs["total"] - want) <= 0.2 * want, (gs, want)
assert max(gs["values"]) <= 2.02 * step, gs
assert sum(1 for v in gs["values"] if v >= step // 2) >= 6, gs
la, lb = group(lab, "a")["total"], group(lab, "b")["total"]
print("label:phase: a %.0f%%, b %.0f%% (want 30/70); [none] %.2f CPU-s" % (100 * la / (la + lb),
      100 * lb / (la + lb), group(lab, "[none]")["total"] / 1e9))
assert lab["by"] == "label:phase" and abs(lb / (la + lb) - 0.7) <= 0.1, (la, lb)
# --pid and --comm: those processes alone, with the totals they have among
# all.
pid, comms = (json.load(open(f"{T}/{n}.json")) for n in ("pid", "comms"))
# (its pid was the shell's a moment before the exec: both names are its)
assert pid["groups"] and all(g["pid"] == ga["pid"] for g in pid["groups"]), pid["groups"]
assert group(pid, ga["name"])["total"] == ga["total"]
names = sorted(g["name"] for g in comms["groups"])
assert gb["name"] in names and any(n.startswith(S + " (") for n in names), names
assert group(comms, gb["name"])["total"] == gb["total"], names
assert all(g["name"].startswith((B + " (", S + " (")) for g in comms["groups"]), names
assert comms["samples"] < proc["samples"], (comms["samples"], proc["samples"])
print("--pid: %s alone; --comm %s,%s: %s" % (ga["name"], B, S, ", ".join(names)))
PY

# The charts fit 80 columns, whatever the names.
for args in "" "--by comm" "--event offcpu --by cgroup" "--top 32"; do
	# shellcheck disable=SC2086
	"$FLIGHTREC" timeline --from "$FROM" --to "$TO" $args >"$T/chart" 2>"$T/err" ||
		fail "timeline $args failed: $(cat "$T/err")"
	wide=$(LC_ALL=C awk 'length($0) > 80' "$T/chart")
	[ -z "$wide" ] || fail "timeline $args draws lines over 80 columns: $wide"
done
grep -q "^[^ ] $A " "$T/chart" || fail "the chart's legend lacks $A: $(cat "$T/chart")"
# A minute by default in steps of a second, aligned to whole seconds: 60
# rows, or 61 when the minute does not start on one.
"$FLIGHTREC" timeline --window 1m >"$T/chart" 2>"$T/err" || fail "timeline --window 1m failed"
rows=$(grep -c '^[0-2][0-9]:[0-5][0-9]:[0-5][0-9] ' "$T/chart")
# The steps before the ring's first sample are one line "A–B  no samples:
# before the ring's first, ..." (the ring may be younger than a minute).
before=$(grep -E "^[0-9:]{8}–[0-9:]{8}  no samples: before the ring's first" "$T/chart")
if [ -n "$before" ]; then
	a=$(date -u -d "${before:0:8}" +%s)
	b=$(date -u -d "$(echo "$before" | sed 's/^[0-9:]*–\([0-9:]*\) .*/\1/')" +%s)
	rows=$((rows + (b - a + 86400) % 86400))
fi
[ "$rows" = 60 ] || [ "$rows" = 61 ] || fail "a 1m window is $rows rows, not 60 of 1s: $(cat "$T/chart")"

# The ring of a recorder killed with -9 gives the same answer.
kill9_daemon
"$FLIGHTREC" dump --ring "$RING" --timeline "${Q[@]}" --comm "$B,$S" --json >"$T/dump-comms.json" \
	2>"$T/err" || fail "dump --ring --timeline --comm failed: $(cat "$T/err")"
"$FLIGHTREC" dump --ring "$RING" --timeline "${Q[@]}" --json >"$T/dump.json" 2>"$T/err" ||
	fail "dump --timeline failed: $(cat "$T/err")"
"$FLIGHTREC" dump --ring "$RING" --timeline "${Q[@]}" --event offcpu --by comm --json \
	>"$T/dump_off.json" 2>"$T/err" || fail "dump --timeline --event offcpu failed: $(cat "$T/err")"
python3 - "$T" <<'PY' || fail "dump --ring --timeline differs from the live answer"
import json, sys
T = sys.argv[1]
for l, d in (("proc", "dump"), ("off", "dump_off"), ("comms", "dump-comms")):
    live, dead = (json.load(open(f"{T}/{n}.json")) for n in (l, d))
    live.pop("ring"); dead.pop("ring")
    # Losses are per chunk: the journal's merge moves a group's to its end
    # (core/query/timeline.h, "lost"), so they may move between the two.
    for k in ("lost", "lost_total"):
        live.pop(k, None); dead.pop(k, None)
    assert live == dead, (live, dead)
    print("dump --ring --timeline (%s): %d groups, %d samples, as live" % (
          dead["event"], len(dead["groups"]), dead["samples"]))
PY
echo "PASS"
