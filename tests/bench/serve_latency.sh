#!/bin/bash
# What flightrec serve's flame graph costs over the profile it is made of:
# the same range asked of one recorder in turn as `flightrec attach`
# (a .pb.gz written), /api/pprof (the same file over HTTP) and
# /api/profile (that profile read back, folded into the tree and sent as
# JSON), against a live flightrecd that recorded a busy machine.
#
#   tests/bench/serve_latency.sh BUILD_DIR [HZ] [WINDOW_SECONDS] [RUNS]
#
# Needs root and python3. Prints each way's wall times, medians, the tree's
# size and the ratios to attach's median (docs/performance.md, "Web page").
set -eu
build=$(cd "${1:?usage: serve_latency.sh BUILD_DIR [HZ] [WINDOW_SECONDS] [RUNS]}" && pwd)
hz=${2:-99}
secs=${3:-60}
runs=${4:-7}
T=$(mktemp -d /tmp/fr-serve-latency.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null || true; done; rm -rf "$T"' EXIT
FR=$build/tools/flightrec

"$build/recorder/flightrecd" --ring "$T/ring" --socket "$T/sock" --hz "$hz" >"$T/d.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
	"$FR" status --socket "$T/sock" >/dev/null 2>&1 && break
	sleep 0.1
done
from=$(date +%s)
"$build/tests/integration/burn" "$secs" 2 >/dev/null
to=$(date +%s)
"$FR" serve --socket "$T/sock" --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
pids+=($!)
sleep 0.5
url=$(head -1 "$T/serve.out")

python3 - "$FR" "$T" "$url" "$from" "$to" "$runs" "$hz" <<'PY'
import statistics, subprocess, sys, time, urllib.request
fr, tmp, page_url, t0, t1 = sys.argv[1:6]
# The address serve printed holds the page's token; sent as a header.
url, _, token = page_url.partition("?token=")
auth = {"Authorization": "Bearer " + token}
runs, hz = int(sys.argv[6]), sys.argv[7]
q = "from=%s&to=%s" % (t0, t1)
def attach():
    subprocess.run([fr, "attach", "--socket", tmp + "/sock", "--from", t0, "--to", t1,
                    "-o", tmp + "/p.pb.gz"], check=True, capture_output=True)
    return None
def http(path):
    return lambda: len(urllib.request.urlopen(
        urllib.request.Request(url + path + "?" + q, headers=auth), timeout=300).read())
ways = [("attach (file)", attach), ("/api/pprof", http("api/pprof")),
        ("/api/profile (tree JSON)", http("api/profile"))]
times = {name: [] for name, _ in ways}
sizes = {}
for _ in range(runs):
    for name, f in ways:   # in turn, so the machine's load lands on all alike
        a = time.monotonic()
        n = f()
        times[name].append((time.monotonic() - a) * 1000)
        if n is not None:
            sizes[name] = n
base = statistics.median(times["attach (file)"])
print("range of %d s at %s Hz, 2 busy threads, %d runs each" % (int(t1) - int(t0), hz, runs))
for name, _ in ways:
    t = sorted(times[name])
    m = statistics.median(t)
    size = " %d bytes," % sizes[name] if name in sizes else ""
    print("%-26s ms per run: %s; median %.0f ms,%s %.2fx attach" %
          (name, " ".join("%.0f" % x for x in t), m, size, m / base))
PY
