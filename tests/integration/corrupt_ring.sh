#!/bin/bash
# Damage on disk: flipped bits, a zeroed page, a truncated file, a segment
# of garbage, a chunk header claiming an absurd length (with a valid crc),
# a damaged superblock. Opening never crashes or hangs; exactly the damaged
# chunks are skipped and counted, every intact chunk stays readable; a
# damaged superblock is read through its copy and repaired by the daemon;
# with both damaged the daemon moves the file aside and records; the
# daemon appends after the damage without destroying intact data; a file
# that is not a ring is never touched (see bad_input.sh).
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
		# Every intact chunk reads and decodes: the profile names no loss
		# of chunks (--allow-loss: samples a 4999 Hz recording on a busy
		# machine lost are not what is checked).
		timeout 60 "$FLIGHTREC" dump --ring "$copy" --window 1h --allow-loss -o "$T/d.pb.gz" 2>"$T/err" ||
			fail "$mode/$seed: dump of the damaged ring failed: $(cat "$T/err")"
		"$GO" tool pprof -symbolize=none -comments "$T/d.pb.gz" >"$T/comments" 2>/dev/null ||
			fail "$mode/$seed: the profile of a damaged ring is not valid pprof"
		grep -q 'could not be read' "$T/comments" &&
			fail "$mode/$seed: intact chunks could not be read: $(cat "$T/comments")"
		echo "$mode/$seed: $got of $total chunks intact, $corrupt counted as corrupt"
	done
done

"$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" || fail "dump --info failed"
samples_total=$(json_field "$T/info.json" 'd["ring"]["samples"]')

# kept_intact OLD NEW: every chunk intact in OLD is byte for byte in NEW.
kept_intact() {
	python3 - "$1" "$2" "$(dirname "$0")/ringtool.py" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("ringtool", sys.argv[3])
rt = importlib.util.module_from_spec(spec); spec.loader.exec_module(rt)
old = open(sys.argv[1], "rb").read(); new = open(sys.argv[2], "rb").read()
for off, length, seq in rt.chunks(old):
    if rt.intact(old, off, length) and new[off:off + length] != old[off:off + length]:
        sys.exit("intact chunk %d changed" % seq)
PY
}

# A damaged superblock (a flipped bit, a zeroed first page) loses nothing:
# dump reads every chunk through the copy, and says so.
for mode in sbflip sbzero; do
	for seed in 1 2 3 4 5 6; do
		[ $mode = sbzero ] && [ $seed -gt 1 ] && break
		copy="$T/ring.$mode.$seed"
		want=$($TOOL damage "$RING" "$mode" "$copy" "$seed") || fail "damaging ($mode) failed"
		timeout 30 "$FLIGHTREC" dump --ring "$copy" --info --json >"$T/info.json" 2>"$T/err" ||
			fail "$mode/$seed: dump --info of a ring with a damaged superblock: $(cat "$T/err")"
		got=$(json_field "$T/info.json" '"%d %d %s %s" % (d["ring"]["chunks"], d["ring"]["samples"], d["ring"]["superblock"], d["ring"]["superblock"] != "primary")')
		[ "$got" = "$want $samples_total copy True" ] ||
			fail "$mode/$seed: chunks, samples, superblock: $got; expected $want $samples_total copy True"
		"$FLIGHTREC" dump --ring "$copy" --info >"$T/info.txt" 2>"$T/err" || fail "$mode/$seed: dump --info failed"
		grep -q "^superblock: damaged; read through its copy" "$T/info.txt" ||
			fail "$mode/$seed: dump --info does not say the superblock was damaged: $(cat "$T/info.txt")"
		timeout 60 "$FLIGHTREC" dump --ring "$copy" --window 1h --allow-loss -o "$T/d.pb.gz" 2>"$T/err" ||
			fail "$mode/$seed: dump of a ring with a damaged superblock failed: $(cat "$T/err")"
		echo "$mode/$seed: $want chunks, $samples_total samples, all read through the superblock copy"
	done
done

# The daemon on a ring with a damaged superblock repairs it, keeps every
# chunk and records.
copy="$T/ring.sbzero.1"
cp "$copy" "$T/damaged"
"$FLIGHTRECD" --config "$T/config.json" --ring "$copy" --socket "$SOCK" --hz 4999 >"$T/daemon.log" 2>&1 &
DAEMON_PID=$!
try_until 10 '"$FLIGHTREC" status >/dev/null 2>&1'
"$BURN" 1.5 >/dev/null
stop_daemon
grep -q "rewrote the damaged superblock from its copy" "$T/daemon.log" ||
	fail "the daemon did not log the repair of the superblock"
"$FLIGHTREC" dump --ring "$copy" --info --json >"$T/info.json" || fail "dump --info after the repair failed"
got=$(json_field "$T/info.json" '"%s %s" % (d["ring"]["superblock"], d["ring"]["superblock_copy"])')
[ "$got" = "primary True" ] || fail "after the repair the superblock is: $got"
after=$(json_field "$T/info.json" 'd["ring"]["chunks"]')
[ "$after" -gt "$total" ] || fail "the daemon appended nothing after the repair ($total -> $after chunks)"
kept_intact "$T/damaged" "$copy" || fail "the daemon changed intact chunks of a ring with a damaged superblock"
echo "sbzero: the daemon repaired the superblock and recorded ($total -> $after chunks)"

# Both superblocks damaged: dump says why it cannot read the ring (the
# geometry is not guessed); the daemon moves the file aside untouched and
# records in a new ring.
copy="$T/ring.sbboth"
$TOOL damage "$RING" sbboth "$copy" 1 >/dev/null || fail "damaging (sbboth) failed"
cp "$copy" "$T/damaged"
timeout 30 "$FLIGHTREC" dump --ring "$copy" --info >/dev/null 2>"$T/err"
st=$?
[ $st = 124 ] && fail "sbboth: opening hangs"
[ $st != 0 ] || fail "sbboth: dump --info read a ring without a superblock"
grep -q "superblock is damaged" "$T/err" || fail "sbboth: unclear message: $(cat "$T/err")"
"$FLIGHTRECD" --config "$T/config.json" --ring "$copy" --socket "$SOCK" --hz 4999 >"$T/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_answering
"$BURN" 1.5 >/dev/null
stop_daemon
aside=$(ls "$copy".damaged-* 2>/dev/null | head -1)
[ -n "$aside" ] || fail "sbboth: the damaged ring was not moved aside"
grep -q "moved it aside to $aside" "$T/daemon.log" || fail "sbboth: the daemon did not log where the ring went"
cmp -s "$aside" "$T/damaged" || fail "sbboth: the ring moved aside was modified"
"$FLIGHTREC" dump --ring "$copy" --info --json >"$T/info.json" || fail "sbboth: the new ring does not open"
new=$(json_field "$T/info.json" 'd["ring"]["chunks"]')
[ "$new" -gt 0 ] || fail "sbboth: the daemon recorded nothing in the new ring"
echo "sbboth: dump refused with \"$(head -1 "$T/err")\"; moved aside to $(basename "$aside"), $new new chunks"

# The daemon starts on a damaged ring, keeps the intact chunks and appends.
copy="$T/ring.flip.1"
before=$($TOOL damage "$RING" flip "$copy" 1)
cp "$copy" "$T/damaged"
"$FLIGHTRECD" --config "$T/config.json" --ring "$copy" --socket "$SOCK" --hz 4999 >>"$T/daemon.log" 2>&1 &
DAEMON_PID=$!
try_until 10 '"$FLIGHTREC" status >/dev/null 2>&1'
"$BURN" 1.5 >/dev/null
stop_daemon
"$FLIGHTREC" dump --ring "$copy" --info --json >"$T/info.json" || fail "dump --info after restart failed"
after=$(json_field "$T/info.json" 'd["ring"]["chunks"]')
[ "$after" -gt "$before" ] || fail "the daemon appended nothing after the damage ($before -> $after chunks)"
# The intact chunks are byte for byte where they were.
kept_intact "$T/damaged" "$copy" || fail "the daemon changed intact chunks of a damaged ring"
echo "restart on a damaged ring: $before intact chunks kept, $after after appending"
echo PASS
