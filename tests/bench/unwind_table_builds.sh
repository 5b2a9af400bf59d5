#!/bin/bash
# The unwind tables a fresh recorder builds on this machine as it is:
# how many, of how many distinct files, which files more than once, and
# the recorder's CPU time meanwhile.
#
#   tests/bench/unwind_table_builds.sh BUILD_DIR [SECONDS]
#
# "cpu" at 99 Hz, "unwind": "dwarf", for SECONDS (25). Needs root. The
# figures depend on what else the machine runs: compare builds run one
# after the other.
set -eu
build=$(cd "${1:?usage: unwind_table_builds.sh BUILD_DIR [SECONDS]}" && pwd)
secs=${2:-25}
T=$(mktemp -d /tmp/fr-builds.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -9 $dpid 2>/dev/null; rm -rf "$T"' EXIT
echo '{"sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 99, "unwind": "dwarf", "stack_copy": "8KiB"}]}]}' >"$T/c.json"
"$build/recorder/flightrecd" -vv --ring "$T/ring" --socket "$T/sock" --config "$T/c.json" >"$T/log" 2>&1 &
dpid=$!
sleep "$secs"
ticks=$(awk '{ print $14 + $15 }' "/proc/$dpid/stat")
kill -TERM "$dpid"
wait "$dpid" || true
dpid=
sed -n 's/.*unwind table of \([^:]*\): [0-9]* rows.*/\1/p' "$T/log" >"$T/built"
echo "$secs s: $(wc -l <"$T/built") tables built, of $(sort -u "$T/built" | wc -l) distinct paths;" \
	"recorder CPU $((ticks * 1000 / $(getconf CLK_TCK))) ms"
sort "$T/built" | uniq -c | sort -rn | awk '$1 > 1 { print "  built " $1 " times: " $2 }'
