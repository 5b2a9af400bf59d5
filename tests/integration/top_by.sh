#!/bin/bash
# flightrec top on two processes of one program (burn twice): the process
# column names the busiest and "+1" for the other; --by process gives one
# table per process holding only its samples; --json gives the rows with
# each process's share adding up to the row's cum; the same from a window
# of the recorder and from a profile file. --by label:KEY names itself
# when no sample has the key; a profile of cpu and offcpu shows one
# event's table with that event's totals, never the two added up.
. "$(dirname "$0")/lib.sh"
need_root_perf

start_daemon
"$BURN" 3 1 >"$T/a.out" &
a=$!
"$BURN" 3 1 >"$T/b.out" &
b=$!
wait "$a" "$b" || fail "burn failed"

"$FLIGHTREC" top --window 30s --pid "$a,$b" -n 3 >"$T/top.txt" 2>"$T/top.err" ||
	{ cat "$T/top.err"; fail "top --window failed"; }
cat "$T/top.txt"
grep -Eq "  burn\[($a|$b)\]\+1 +fr_burn_heavy$" "$T/top.txt" ||
	fail "the process column does not name a burn and +1 for fr_burn_heavy"

"$FLIGHTREC" top --window 30s --pid "$a,$b" --by process --json >"$T/by.json" 2>"$T/top.err" ||
	{ cat "$T/top.err"; fail "top --by process --json failed"; }
"$FLIGHTREC" attach --window 30s --pid "$a,$b" -o "$T/burn.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach failed"; }
"$FLIGHTREC" top "$T/burn.pb.gz" --json -n 1000 >"$T/file.json" 2>"$T/top.err" ||
	{ cat "$T/top.err"; fail "top FILE --json failed"; }
"$FLIGHTREC" top "$T/burn.pb.gz" --by comm -n 3 >"$T/comm.txt" 2>"$T/top.err" ||
	{ cat "$T/top.err"; fail "top FILE --by comm failed"; }
cat "$T/comm.txt"
[ "$(head -1 "$T/comm.txt")" = burn ] || fail "top --by comm does not head its table with the comm"

# --by label:KEY is accepted, and a key no sample has is said as typed,
# not as an option the user never gave (--label-key).
"$FLIGHTREC" top --window 30s --pid "$a,$b" --by label:endpoint >"$T/label.txt" 2>"$T/label.err" &&
	fail "top --by label:endpoint of processes without labels succeeded: $(cat "$T/label.txt")"
cat "$T/label.err"
grep -q -- "--by label:endpoint matched no samples" "$T/label.err" ||
	fail "top --by label:endpoint does not name --by label:endpoint: $(cat "$T/label.err")"
! grep -q -- "--label-key" "$T/label.err" ||
	fail "top --by label:endpoint speaks of --label-key: $(cat "$T/label.err")"

# A profile of cpu and offcpu (the session records both): the table is
# cpu's, its total and samples cpu's alone (never offcpu's added), and
# offcpu is named with its own total; --event offcpu shows that column.
"$FLIGHTREC" attach --window 30s --event cpu,offcpu -o "$T/two.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --event cpu,offcpu failed"; }
for e in cpu offcpu; do
	"$FLIGHTREC" top "$T/two.pb.gz" --event "$e" -n 3 >"$T/two-$e.txt" 2>"$T/top.err" ||
		{ cat "$T/top.err"; fail "top FILE --event $e failed"; }
	cat "$T/two-$e.txt"
done
"$FLIGHTREC" top "$T/two.pb.gz" -n 3 | cmp -s - "$T/two-cpu.txt" ||
	fail "top of a cpu+offcpu profile does not show cpu, the first event, by default"
python3 - "$(dirname "$0")" "$T/two.pb.gz" "$T/two-cpu.txt" "$T/two-offcpu.txt" <<'PY' ||
import re, sys
sys.path.insert(0, sys.argv[1])
import pprof_samples as ps
path = sys.argv[2]
names = [t for t, _ in ps.sample_types(path)]
n = {"cpu": 0, "offcpu": 0}
for s in ps.samples(path):
    for e in n:
        if s["values"][names.index(e)]:
            n[e] += s["values"][names.index("samples")]
assert n["cpu"] and n["offcpu"], n
for e, other, txt in (("cpu", "offcpu", sys.argv[3]), ("offcpu", "cpu", sys.argv[4])):
    head = open(txt).read()
    m = re.search(r"functions, %s total \S+ \((\d+) samples\)" % e, head)
    assert m and int(m.group(1)) == n[e], (e, n, head)
    m = re.search(r"also holds %s: total \S+ \((\d+) samples\)" % other, head)
    assert m and int(m.group(1)) == n[other], (other, n, head)
print("cpu %d samples, offcpu %d: each table counts its own" % (n["cpu"], n["offcpu"]))
PY
	fail "top of a cpu+offcpu profile mixes the events' samples"

python3 - "$T/by.json" "$T/file.json" "$a" "$b" <<'PY' || fail "the JSON rows are wrong"
import json, sys
by, whole = (json.load(open(f)) for f in sys.argv[1:3])
pids = {int(sys.argv[3]), int(sys.argv[4])}
# A process is its pid and comm: the shell's fork before it exec'd burn
# is a group of its own.
groups = {r["group"] for r in by}
want = {"burn[%d]" % p for p in pids}
assert want <= groups, (groups, want)
for r in by:
    pid = int(r["group"].rsplit("[", 1)[1][:-1])
    assert pid in pids, r
    assert r["unit"] == "nanoseconds", r
    assert [(p["pid"], p["comm"] + "[%d]" % p["pid"]) for p in r["processes"]] == [(pid, r["group"])], r
    assert 0 <= r["flat_percent"] <= r["cum_percent"] <= 100.0001, r
heavy = [r for r in whole if r["name"] == "fr_burn_heavy"]
assert len(heavy) == 1 and "group" not in heavy[0], heavy
h = heavy[0]
assert {p["pid"] for p in h["processes"]} == pids, h
assert sum(p["cum"] for p in h["processes"]) == h["cum"], h
assert h["processes"][0]["cum"] >= h["processes"][1]["cum"], h
print("fr_burn_heavy: cum %d in %s" % (h["cum"], [(p["pid"], p["cum"]) for p in h["processes"]]))
PY
stop_daemon
echo PASS
