#!/bin/bash
# flightrec serve's page over a ring of 30 minutes, in a real browser
# (tests/web/range.js: headless Chromium driven by puppeteer-core). The
# ring's first 30 minutes are the synthetic stream of tests/bench/synth.h
# (24 processes "server-N" keeping 2 CPUs busy, written by the recorder's
# chunk builder and ring: tests/bench/bench_timeline_ring.c); a real
# recorder then records on it a real `burst` (2 threads, 20 s) beside
# `stacks` (deep, rare stacks), and its ingest thread is frozen for 3 s
# inside the burst at 4999 Hz, so that the kernel loses samples there. Over
# the whole ring burst is among "other"; the page must list it in the
# legend of the range brushed over it. Also: the processes box filters the
# timeline and the flame graph, values in their units, the flame graph as
# tall as what it draws, times in UTC on the axis and in the text, the lost
# steps shaded, and the address's state opened in a new page (a round
# trip). Screenshots are kept under the build's meson-logs/web_range/.
. "$(dirname "$0")/lib.sh"
need_root_perf
SRC=${FR_SOURCE_DIR:?}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
SYNTH=$BUILD/tests/bench/bench_timeline_ring
STACKS=$BUILD/tests/bench/stacks
FREEZE=$BUILD/tests/integration/freeze_thread
[ -x "$CHROMIUM" ] || skip "needs Chromium ($CHROMIUM; tools/bootstrap.sh test installs it)"
command -v node >/dev/null || skip "needs node (tools/bootstrap.sh installs it)"
[ -d "$SRC/web/node_modules/puppeteer-core" ] ||
	skip "needs web/node_modules (npm ci in web/, as tools/bootstrap.sh does)"
OUT=$BUILD/meson-logs/web_range
rm -rf "$OUT"
mkdir -p "$OUT"
echo "screenshots: $OUT"

# 30 minutes of history, ending now, at 99 Hz on 2 CPUs.
"$SYNTH" "$RING" 99 2 1800 >"$T/synth.out" || fail "the synthetic ring was not written"
start_daemon --hz 4999
"$FLIGHTREC" status | grep -i ring
cp "$BURN" "$T/burst"
cp "$STACKS" "$T/stacks"
wait_seals
b0=$(date +%s.%N)
"$T/burst" 20 2 0 >/dev/null &
BURST_PID=$!
"$T/stacks" 20 1 >/dev/null &
STACKS_PID=$!
sleep 8
# The kernel loses samples while the ingest thread does not read them.
froze=1
"$FREEZE" "$DAEMON_PID" 3 >"$T/freeze.out" 2>"$T/freeze.err" ||
	{ froze=0; echo "cannot freeze a thread with ptrace here: $(cat "$T/freeze.err")"; }
wait "$BURST_PID" "$STACKS_PID"
b1=$(date +%s.%N)
wait_seals
"$FLIGHTREC" status | grep -iE 'lost|stall' || true
# The brushed range keeps clear of the burst's start and end.
read -r B0 B1 < <(awk -v a="$b0" -v b="$b1" 'BEGIN { printf "%.3f %.3f\n", a + 2, b - 2 }')

"$FLIGHTREC" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url
python3 - "${url}assets/uPlot.iife.min.js" <<'PY' || skip "flightrec was built without web/node_modules"
import os, sys, urllib.request
urllib.request.urlopen(urllib.request.Request(
    sys.argv[1], headers={"Authorization": "Bearer " + os.environ["FR_SERVE_TOKEN"]}), timeout=10)
PY

NODE_PATH=$SRC/web/node_modules CHROMIUM=$CHROMIUM \
	node "$SRC/tests/web/range.js" "$page_url" "$OUT" "$BURST_PID" "$STACKS_PID" "$B0" "$B1" \
	"$froze" || fail "the browser test failed (serve: $(tail -5 "$T/serve.err"))"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
stop_daemon
echo PASS
