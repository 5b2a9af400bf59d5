#!/bin/bash
# Thread names true at each sample's time: a thread that burns CPU and
# renames itself A/B every 100 ms (tests/integration/renamer.c, which logs
# each rename's time) is recorded at 999 Hz. For each 100 ms between two
# renames, the profile of exactly that stretch (a window a few ms inside
# it) must name every sample of the thread with the name in force then,
# and over the whole run A and B share the samples about evenly. Before
# names over time, all samples of a chunk (a second) took the thread's
# name at seal time.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "names", "events": [{"event": "cpu", "hz": 999}]}]}
JSON
start_daemon --config "$T/config.json"

"$RENAMER" 4 >"$T/renames" || fail "renamer failed"
PID=$(sed -n 's/^pid=\([0-9]*\) tid=.*/\1/p' "$T/renames")
TID=$(sed -n 's/^pid=[0-9]* tid=\([0-9]*\) .*/\1/p' "$T/renames")
[ -n "$PID" ] && [ -n "$TID" ] || fail "renamer printed no pid: $(cat "$T/renames")"
wait_seals
stop_daemon

# Profiles of the stretches between renames, 3 ms inside them: the
# renames' CLOCK_MONOTONIC times (perf's clock) made Unix times as the
# ring's are.
python3 - "$T/renames" <<'PY' >"$T/stretches" || fail "no renames logged"
import re, sys
text = open(sys.argv[1]).read()
off = int(re.search(r"offset=(-?\d+)", text).group(1))
r = [l.split() for l in text.splitlines() if l.startswith("rename ")]
assert len(r) >= 30, r
for (_, _, after, name), (_, before, _, _) in zip(r[1:-2], r[2:-1]):
    lo, hi = int(after) + off + 3000000, int(before) + off - 3000000
    print("%d.%09d %d.%09d %s" % (lo // 10**9, lo % 10**9, hi // 10**9, hi % 10**9, name))
PY
n=0
while read -r from to name; do
	n=$((n + 1))
	"$FLIGHTREC" dump --ring "$RING" --from "$from" --to "$to" --pid "$PID" \
		-o "$T/s$n.pb.gz" 2>"$T/dump.err" || fail "dump of stretch $n failed: $(cat "$T/dump.err")"
	"$GO" tool pprof -symbolize=none -raw "$T/s$n.pb.gz" >"$T/s$n.raw" 2>"$T/pprof.err" ||
		fail "pprof -raw of stretch $n failed: $(cat "$T/pprof.err")"
	echo "$n $name $T/s$n.raw"
done <"$T/stretches" >"$T/raws"

# Each sample of the thread in a stretch has the stretch's name; summed
# over all stretches, A and B about half each.
python3 - "$T/raws" "$TID" <<'PY' || fail "samples named other than at their time"
import re, sys
tid = sys.argv[2]
count = {"A": 0, "B": 0}
wrong = []
for line in open(sys.argv[1]):
    n, want, path = line.split()
    text = open(path).read()
    # -raw prints each sample as "count value: locations" followed by its
    # labels, one "key:[value]" line each.
    samples = re.split(r"\n(?=\s+\d+\s+\d+: )", text.split("Samples:", 1)[1])
    got = 0
    for s in samples:
        m = re.match(r"\s+(\d+)\s+\d+:", s)
        if not m or "tid:[%s]" % tid not in s:
            continue
        name = re.search(r"thread:\[([^\]]*)\]", s).group(1)
        k = int(m.group(1))
        got += k
        if name != want:
            wrong.append((n, want, name, k))
        elif name in count:
            count[name] += k
    assert got > 0, "no sample of the thread in stretch %s: %s" % (n, text[:2000])
total = count["A"] + count["B"]
print("samples named as at their time: A %d, B %d; wrong %s" % (count["A"], count["B"], wrong))
assert not wrong, wrong
assert total > 0 and 0.4 <= count["A"] / total <= 0.6, count
PY
echo "names_at_time: ok"
