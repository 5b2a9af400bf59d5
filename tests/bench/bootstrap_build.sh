#!/bin/bash
# The build before the first recording: what `tools/bootstrap.sh run`
# builds (the targets meson installs: flightrecd, flightrec with its web
# page, libflightrec) against what `tools/bootstrap.sh test` builds
# (everything, the test suite included), each in a fresh build directory
# of the source tree, one after the other.
#
#   tests/bench/bootstrap_build.sh [SOURCE_DIR]
#
# Prints ninja's step count and the wall time (meson setup included) of
# each. No root needed; the build directories are removed at the end.
set -eu
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
tmp=$(mktemp -d /tmp/flightrec-build-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$src"

# now: microseconds; secs T0 T1: the seconds between, to a tenth
now() { echo "${EPOCHREALTIME/./}"; }
secs() { echo "$((($2 - $1) / 1000000)).$(((($2 - $1) / 100000) % 10))"; }

t0=$(now)
meson setup "$tmp/run" --buildtype=debugoptimized >/dev/null
targets=$(meson introspect "$tmp/run" --targets | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    if t["installed"]:
        for f in t["filename"]:
            print(os.path.relpath(os.path.realpath(f), build))' "$tmp/run")
# shellcheck disable=SC2086 # one target a word
steps=$(ninja -C "$tmp/run" -n $targets | grep -c '^\[')
# shellcheck disable=SC2086
ninja -C "$tmp/run" $targets >/dev/null
t1=$(now)
echo "run (installed targets): $steps steps, $(secs "$t0" "$t1") s"

t0=$(now)
meson setup "$tmp/all" --buildtype=debugoptimized >/dev/null
steps=$(ninja -C "$tmp/all" -n | grep -c '^\[')
meson compile -C "$tmp/all" >/dev/null
t1=$(now)
echo "test (everything): $steps steps, $(secs "$t0" "$t1") s"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
