#!/bin/bash
# Damage on disk: flipped bits, a zeroed page, a truncated file, a segment
# of garbage, a chunk header claiming an absurd length (with a valid crc).
# Opening never crashes or hangs; exactly the damaged chunks are skipped
# and counted, every intact chunk stays readable; the daemon appends after
# the damage without destroying intact data; a file that is not a ring is
# never touched (see bad_input.sh).
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
TOOL="python3 $(dirname "$0")/ringtool.py"

json_field() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# Small segments so the recording spreads over several of them.
echo '{"ring": {"size": "4MiB", "segment": "64KiB"}}' >"$T/config.json"
# Record until the chunks span at least 3 segments (how long that takes
# depends on how well the chunks compress).
start_daemon --config "$T/config.json" --hz 4999
for _ in $(seq 15); do
	"$BURN" 1 2 >/dev/null
	segs=$($TOOL chunks "$RING" | awk '{ print $4 }' | sort -u | wc -l)
	[ "$segs" -ge 4 ] && break
done
stop_daemon
total=$($TOOL chunks "$RING" | wc -l)
segs=$($TOOL chunks "$RING" | awk '{ print $4 }' | sort -u | wc -l)
echo "recorded $total chunks in $segs segments"
[ "$total" -ge 6 ] && [ "$segs" -ge 3 ] || fail "expected at least 6 chunks over 3 segments"

# The text form of --info tells the same facts as --json.
"$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" || fail "dump --info --json failed"
"$FLIGHTREC" dump --ring "$RING" --info >"$T/info.txt" || fail "dump --info failed"
want=$(json_field "$T/info.json" '"stored:   %d samples in %d chunks" % (d["ring"]["samples"], d["ring"]["chunks"])')
grep -q "^$want," "$T/info.txt" || fail "dump --info says \"$(grep stored: "$T/info.txt")\", --json says \"$want\""
grep -q "bytes/sample" "$T/info.txt" || fail "dump --info shows no bytes/sample: $(cat "$T/info.txt")"

for mode in flip zero truncate segment length; do
	for seed in 1 2 3; do
		copy="$T/ring.$mode.$seed"
		want=$($TOOL damage "$RING" "$mode" "$copy" "$seed") || fail "damaging ($mode) failed"
		timeout 30 "$FLIGHTREC" dump --ring "$copy" --info --json >"$T/info.json" 2>"$T/err"
		st=$?
		[ $st = 124 ] && fail "$mode/$seed: opening the damaged ring hangs"
		[ $st = 0 ] || fail "$mode/$seed: dump --info exited $st: $(cat "$T/err")"
		got=$(json_field "$T/info.json" 'd["ring"]["chunks"]')
		corrupt=$(json_field "$T/info.json" 'd["ring"]["corrupt_chunks"]')
		[ "$got" = "$want" ] ||
			fail "$mode/$seed: $got chunks readable, expected exactly the $want intact ones of $total"
		if [ "$mode" != truncate ] && [ "$want" -lt "$total" ]; then
			[ "$corrupt" -ge 1 ] || fail "$mode/$seed: damage not counted (corrupt_chunks $corrupt)"
		fi
		# Every intact chunk reads and decodes: the profile names no loss.
		timeout 60 "$FLIGHTREC" dump --ring "$copy" --window 1h -o "$T/d.pb.gz" 2>"$T/err" ||
			fail "$mode/$seed: dump of the damaged ring failed: $(cat "$T/err")"
		"$GO" tool pprof -symbolize=none -comments "$T/d.pb.gz" >"$T/comments" 2>/dev/null ||
			fail "$mode/$seed: the profile of a damaged ring is not valid pprof"
		grep -q 'could not be read' "$T/comments" &&
			fail "$mode/$seed: intact chunks could not be read: $(cat "$T/comments")"
		echo "$mode/$seed: $got of $total chunks intact, $corrupt counted as corrupt"
	done
done

# The daemon starts on a damaged ring, keeps the intact chunks and appends.
copy="$T/ring.flip.1"
before=$($TOOL damage "$RING" flip "$copy" 1)
cp "$copy" "$T/damaged"
"$FLIGHTRECD" --config "$T/config.json" --ring "$copy" --socket "$SOCK" --hz 4999 >>"$T/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 100); do "$FLIGHTREC" status >/dev/null 2>&1 && break; sleep 0.1; done
"$BURN" 1.5 >/dev/null
stop_daemon
"$FLIGHTREC" dump --ring "$copy" --info --json >"$T/info.json" || fail "dump --info after restart failed"
after=$(json_field "$T/info.json" 'd["ring"]["chunks"]')
[ "$after" -gt "$before" ] || fail "the daemon appended nothing after the damage ($before -> $after chunks)"
# The intact chunks are byte for byte where they were.
python3 - "$T/damaged" "$copy" "$(dirname "$0")/ringtool.py" <<'PY' || fail "the daemon changed intact chunks of a damaged ring"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("ringtool", sys.argv[3])
rt = importlib.util.module_from_spec(spec); spec.loader.exec_module(rt)
old = open(sys.argv[1], "rb").read(); new = open(sys.argv[2], "rb").read()
for off, length, seq in rt.chunks(old):
    if rt.intact(old, off, length) and new[off:off + length] != old[off:off + length]:
        sys.exit("intact chunk %d changed" % seq)
PY
echo "restart on a damaged ring: $before intact chunks kept, $after after appending"
echo PASS
