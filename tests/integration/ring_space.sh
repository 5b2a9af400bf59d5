#!/bin/bash
# The ring file is allocated in full at start and never grows: a disk too
# small for it is a clear error at start (nothing left behind), and a ring
# that wraps keeps its size while the oldest data makes way.
. "$(dirname "$0")/lib.sh"
need_root_perf

json_field() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# A full disk at start: a 2 MiB tmpfs cannot hold a 16 MiB ring.
mkdir "$T/small"
# mode=0700: a ring's directory must be the daemon's alone (a tmpfs is 1777).
if mount -t tmpfs -o size=2m,mode=0700 flightrec-test "$T/small" 2>/dev/null; then
	"$FLIGHTRECD" --ring "$T/small/ring" --ring-size 16MiB --socket "$T/small.sock" \
		>"$T/out" 2>"$T/err"
	st=$?
	umount "$T/small"
	[ $st != 0 ] || fail "flightrecd started with a ring larger than the disk"
	grep -q 'No space left on device' "$T/err" ||
		fail "unclear message for a full disk: $(cat "$T/err")"
	grep -q "$T/small/ring" "$T/err" || fail "the message does not name the ring: $(cat "$T/err")"
	echo "full disk: $(head -1 "$T/err")"
else
	echo "cannot mount a tmpfs here; skipping the full-disk case"
fi

# Wrapping: 5 segments of 64 KiB on a busy machine, until more chunks
# were sealed than the ring holds.
echo '{"ring": {"size": "324KiB", "segment": "64KiB"}}' >"$T/config.json"
start_daemon --config "$T/config.json" --hz 4999
size0=$(stat -c %s "$RING")
[ "$size0" -le $((324 * 1024)) ] || fail "the ring file ($size0 bytes) is larger than its configured 324KiB"
for _ in $(seq 30); do
	"$BURN" 1 2 >/dev/null
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed"
	sealed=$(json_field "$T/status.json" 'd["chunks_sealed"]')
	held=$(json_field "$T/status.json" 'd["ring"]["chunks"]')
	[ "$sealed" -gt $((held + 5)) ] && break
done
[ "$sealed" -gt "$held" ] || fail "the ring did not wrap ($sealed chunks sealed, $held held)"
size1=$(stat -c %s "$RING")
[ "$size1" = "$size0" ] || fail "the ring grew from $size0 to $size1 bytes"
# (--allow-loss: what a 4999 Hz recording on a busy machine lost is not
# what is checked)
"$FLIGHTREC" attach --window 1h --allow-loss -o "$T/wrapped.pb.gz" 2>"$T/attach.err" ||
	fail "attach on a wrapped ring failed: $(cat "$T/attach.err")"
stop_daemon
size2=$(stat -c %s "$RING")
[ "$size2" = "$size0" ] || fail "the ring grew from $size0 to $size2 bytes"
echo "wrapped: $sealed chunks sealed, $held held; the file stays $size0 bytes"
echo PASS
