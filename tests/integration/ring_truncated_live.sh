#!/bin/bash
# A ring truncated while the recorder runs (by root, to nothing: the
# superblock, its copy and every chunk gone) gets its size back, allocated,
# before the next append, and its superblocks written again: the file is
# full-size with no hole, the recorder says so in its log, new windows are
# answered, `dump --info` reads the file beside the running recorder, and a
# restart opens it as it is (not moved aside as a damaged ring). Before,
# the appends after the cut left a sparse file without a superblock. A
# ring file moved away while recording is said in the log.
. "$(dirname "$0")/lib.sh"
need_root_perf

start_daemon --ring-size 16MiB --hz 199
size0=$(stat -c %s "$RING")
"$BURN" 2 1 >/dev/null
truncate -s 0 "$RING" || fail "cannot truncate the ring"
FROM=$(date +%s)
"$BURN" 3 1 >/dev/null
try_until 10 '[ "$(stat -c %s "$RING")" = "$size0" ]'
size1=$(stat -c %s "$RING")
[ "$size1" = "$size0" ] || fail "the ring is $size1 bytes after the truncation, was $size0"
# Allocated again: no hole where the appends after the cut would have left one.
read -r blocks bsize < <(stat -c '%b %B' "$RING")
[ $((blocks * bsize)) -ge "$size0" ] ||
	fail "the ring is sparse after the truncation: $((blocks * bsize)) of $size0 bytes allocated"
"$FLIGHTREC" attach --from "@$FROM" --to "@$(($(date +%s) + 1))" -o "$T/after.pb.gz" 2>"$T/attach.err" ||
	fail "no window after the truncation: $(cat "$T/attach.err")"
"$FLIGHTREC" dump --ring "$RING" --info >"$T/info.txt" 2>&1 ||
	fail "dump --info cannot read the ring after the truncation: $(cat "$T/info.txt")"
grep -q 'truncated to 0 bytes while recording; its size of .* is restored' "$T/daemon.log" ||
	fail "the recorder does not log the truncation"
stop_daemon
start_daemon --ring-size 16MiB --hz 199
grep -q 'moved it aside' "$T/daemon.log" && fail "the restart took the ring for a damaged one"
"$FLIGHTREC" attach --from "@$FROM" --to "@$(($(date +%s) + 1))" -o "$T/restart.pb.gz" 2>"$T/attach.err" ||
	fail "the window after the truncation is gone after a restart: $(cat "$T/attach.err")"
# Moved away: said, since a restart would not find what is recorded now.
mv "$RING" "$RING.moved"
"$BURN" 2 1 >/dev/null
try_until 5 'grep -q "was removed or replaced while recording" "$T/daemon.log"'
grep -q 'was removed or replaced while recording' "$T/daemon.log" ||
	fail "the recorder did not say its ring file was moved away"
mv "$RING.moved" "$RING"
stop_daemon
echo PASS
