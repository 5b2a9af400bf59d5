#!/bin/bash
# flightrec serve's page in a real browser (tests/web/ui.js: headless
# Chromium driven by puppeteer-core): a recorder records burn alone (range
# A), then burn and a copy of it named burn2 (range B); the page must show
# burn in the timeline, the timeline narrowed to burn and burn2 by the
# processes box, the flame graph of A brushed with the mouse with
# fr_burn_heavy's share as in the pprof downloaded from the page (read by
# flightrec top), zoom on a click, search, the difference of B against A in
# blue and of A against B in red, another event's timeline, wakeup's and
# runqueue's with what their stacks are, and burn's threads. Screenshots
# are kept under the build's meson-logs/web_ui/. tests/web/range.js (run by
# web_range.sh) covers the page over a 30-minute ring: a burst's range,
# units, the flame graph's height, UTC times, loss shading, the address.
. "$(dirname "$0")/lib.sh"
need_root_perf
SRC=${FR_SOURCE_DIR:?}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "needs Chromium ($CHROMIUM; tools/bootstrap.sh test installs it)"
command -v node >/dev/null || skip "needs node (tools/bootstrap.sh installs it)"
[ -d "$SRC/web/node_modules/puppeteer-core" ] ||
	skip "needs web/node_modules (npm ci in web/, as tools/bootstrap.sh does)"
OUT=$BUILD/meson-logs/web_ui
rm -rf "$OUT"
mkdir -p "$OUT"
echo "screenshots and the downloaded profile: $OUT"

# The embedded default's events, and wakeup and runqueue (not in it), so
# that the page can be shown those too: the machine's own wakeups (daemons,
# the recorder's threads, other tests) are enough for a flame graph.
cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99},
  {"event": "offcpu"}, {"event": "alloc", "mean": "512KiB"}, {"event": "wakeup"},
  {"event": "runqueue"}]}]}
JSON
start_daemon --config "$T/config.json"
# Range A: burn alone; range B: burn and burn2 (the same program under
# another name), each one thread.
cp "$BURN" "$T/burn2"
"$BURN" 60 1 0 >/dev/null &
BURN_PID=$!
wait_seals
a0=$(date +%s.%N)
sleep 7
a1=$(date +%s.%N)
"$T/burn2" 7 1 0 >/dev/null &
BURN2_PID=$!
wait_until 5 "burn2 to run" has_run "$BURN2_PID"
b0=$(date +%s.%N)
sleep 6
b1=$(date +%s.%N)
wait $BURN2_PID
# The brushed ranges keep clear of the starts and ends.
read -r A0 A1 B0 B1 < <(awk -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" \
	'BEGIN { printf "%.3f %.3f %.3f %.3f\n", a0 + 1, a1 - 0.5, b0 + 0.5, b1 - 0.5 }')

"$FLIGHTREC" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url
python3 - "${url}assets/uPlot.iife.min.js" <<'PY' || skip "flightrec was built without web/node_modules"
import os, sys, urllib.request
urllib.request.urlopen(urllib.request.Request(
    sys.argv[1], headers={"Authorization": "Bearer " + os.environ["FR_SERVE_TOKEN"]}), timeout=10)
PY

NODE_PATH=$SRC/web/node_modules CHROMIUM=$CHROMIUM \
	node "$SRC/tests/web/ui.js" "$page_url" "$OUT" "$FLIGHTREC" "$BURN_PID" "$BURN2_PID" \
	"$A0" "$A1" "$B0" "$B1" || fail "the browser test failed (serve: $(tail -5 "$T/serve.err"))"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
kill "$BURN_PID"
