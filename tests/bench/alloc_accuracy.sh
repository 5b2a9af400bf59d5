#!/bin/bash
# How close the estimated bytes per allocation site are to the truth:
# alloc_sites (tests/integration/alloc_sites.c) under LD_PRELOAD of
# libflightrec for SECONDS, recorded at MEAN, RUNS times. Its truth per
# second: site_small 25 MiB (64-byte blocks), site_big 75 MiB (64 KiB
# blocks), both freed at once; site_leak 48 MiB over the run, kept. For
# each run: each site's estimated alloc_space against the truth, the
# leak's inuse_space at the end against 48 MiB, and the samples taken.
#
#   tests/bench/alloc_accuracy.sh BUILD_DIR [SECONDS] [RUNS] [MEAN]
#
# Defaults: 10 s, 3 runs, 512KiB. Needs root.
set -u
B=${1:?usage: alloc_accuracy.sh BUILD_DIR [SECONDS] [RUNS] [MEAN]}
SECS=${2:-10}
RUNS=${3:-3}
MEAN=${4:-512KiB}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
export FLIGHTREC_SOCKET=$T/sock
cat >"$T/config.json" <<JSON
{"sessions": [{"name": "mem", "events": [{"event": "alloc", "mean": "$MEAN"}]}]}
JSON
"$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --config "$T/config.json" \
	>"$T/daemon.log" 2>&1 &
for _ in $(seq 100); do "$B/tools/flightrec" status >/dev/null 2>&1 && break; sleep 0.1; done
echo "mean $MEAN, $SECS s a run; estimated / true (error)"
for r in $(seq "$RUNS"); do
	LD_PRELOAD=$B/lib/libflightrec.so "$B/tests/integration/alloc_sites" "$SECS" >"$T/out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do grep -q ready "$T/out" && break; sleep 0.1; done
	for _ in $(seq $((SECS * 10 + 100))); do grep -q done "$T/out" && break; sleep 0.1; done
	sleep 2
	"$B/tools/flightrec" attach --event heap --window $((SECS + 5))s --pid "$pid" \
		-o "$T/heap.pb.gz" 2>/dev/null
	kill "$pid"
	wait "$pid" 2>/dev/null
	python3 - "$SRC/tests/integration/pprof_samples.py" "$T/heap.pb.gz" "$SECS" "$r" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("ps", sys.argv[1])
ps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ps)
path, secs, run = sys.argv[2], int(sys.argv[3]), sys.argv[4]
types = [t for t, _ in ps.sample_types(path)]
a, u = types.index("alloc_space"), types.index("inuse_space")
est = {"site_small": 0, "site_big": 0, "site_leak": 0}
inuse = 0
n = 0
for s in ps.samples(path):
    for f in est:
        if f in s["frames"]:
            est[f] += s["values"][a]
            if f == "site_leak":
                inuse += s["values"][u]
    n += s["values"][types.index("alloc_objects")] and 1
M = 2**20
truth = {"site_small": 25 * M * secs, "site_big": 75 * M * secs, "site_leak": 48 * M}
cells = ["%s %.0f/%.0f MiB (%+.1f%%)" % (f, est[f] / M, truth[f] / M, 100 * (est[f] / truth[f] - 1))
         for f in est]
cells.append("leak in use %.1f/48 MiB (%+.1f%%)" % (inuse / M, 100 * (inuse / (48 * M) - 1)))
print("run %s: %s" % (run, "; ".join(cells)))
PY
done
"$B/tools/flightrec" status | grep '^Allocation sampling'
