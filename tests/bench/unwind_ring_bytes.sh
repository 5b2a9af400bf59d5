#!/bin/bash
# Bytes per sample in the ring with CFI unwinding ("unwind": "dwarf", the
# default) and with frame pointers only ("fp"): two recorders, each with
# its own ring, record the same run of the same programs, and status
# reports what each ring holds. As root, from the build directory's
# parent:
#
#   tests/bench/unwind_ring_bytes.sh BUILD [SECONDS]
#
# The workload is nofp_sort (no frame pointers, deep qsort stacks) and
# burn (frame pointers) on their own, plus whatever else the machine runs.
set -u
B=${1:?usage: unwind_ring_bytes.sh BUILD [SECONDS]}
S=${2:-60}
D=$(mktemp -d /tmp/unwind-bytes.XXXXXX)
trap 'rm -rf "$D"' EXIT
printf '{"sessions": [{"name": "fp", "events": [{"event": "cpu", "hz": 99, "unwind": "fp"}]}]}\n' \
	>"$D/fp.json"
"$B/recorder/flightrecd" --ring "$D/dwarf.ring" --socket "$D/dwarf.sock" >"$D/dwarf.log" 2>&1 &
P1=$!
"$B/recorder/flightrecd" --ring "$D/fp.ring" --socket "$D/fp.sock" --config "$D/fp.json" \
	>"$D/fp.log" 2>&1 &
P2=$!
sleep 1
"$B/tests/integration/nofp_sort" "$S" >/dev/null &
W1=$!
"$B/tests/integration/burn" "$S" 1 0 >/dev/null &
W2=$!
wait "$W1" "$W2"
# Past the 10 s merge of the journal's last group.
sleep 11
for m in dwarf fp; do
	echo "== $m"
	FLIGHTREC_SOCKET=$D/$m.sock "$B/tools/flightrec" status | grep -E '^(event|unwind|tables|stored|journal)'
done
kill -TERM "$P1" "$P2"
wait "$P1" "$P2"
