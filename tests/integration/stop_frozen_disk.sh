#!/bin/bash
# SIGTERM while the ring's file system is frozen (fsfreeze: every write
# waits until the thaw, and cannot be interrupted): the recorder's
# shutdown has a deadline (10 s, below the unit's TimeoutStopSec=15), past
# which it logs what it did not store and exits, rather than wait for the
# disk forever. The thread the kernel holds in the write stays until the
# thaw (the process is a zombie until then, the rest of it gone); after
# the thaw the ring opens with everything stored before the freeze.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/loopfs.sh"
need_root_perf
mount_loopfs
RING=$LOOPFS/ring

start_daemon --ring-size 16MiB --hz 199
"$BURN" 3 1 >"$T/burn.out"
TO=$(date +%s)
FROM=$((TO - 3))
wait_until 5 "the window's end" '[ "$(date +%s)" -gt "$TO" ]'
# In the ring (the flush), then on the disk (a freeze syncs the file system).
"$FLIGHTREC" attach --from "@$FROM" --to "@$TO" --format folded -o "$T/before.folded" \
	2>"$T/attach.err" || fail "attach before the freeze: $(cat "$T/attach.err")"
fsfreeze -f "$LOOPFS" || skip "cannot freeze $LOOPFS"
# The writer blocks at its next append (a chunk a second).
"$BURN" 2 1 >/dev/null
kill -TERM "$DAEMON_PID"
SENT=$(date +%s)
# gone: the process has left (a zombie while the kernel holds a thread in
# the frozen write, or reaped).
gone() {
	local st
	st=$(ps -o stat= -p "$DAEMON_PID" 2>/dev/null)
	[ -z "$st" ] || [ "${st#Z}" != "$st" ]
}
try_until 40 'gone'
gone || fail "flightrecd has not exited $(($(date +%s) - SENT)) s after SIGTERM on a frozen disk"
echo "exited $(($(date +%s) - SENT)) s after SIGTERM"
grep -q 'shutdown did not finish within 10 s .*exiting without storing' "$T/daemon.log" ||
	fail "the recorder did not say what it did not store"
fsfreeze -u "$LOOPFS"
try_until 10 '! kill -0 "$DAEMON_PID" 2>/dev/null'
wait "$DAEMON_PID"
st=$?
DAEMON_PID=
[ "$st" = 1 ] || fail "flightrecd exited with $st after its shutdown deadline, not 1"
"$FLIGHTREC" dump --ring "$RING" --info >"$T/info.txt" 2>&1 ||
	fail "dump --info cannot read the ring after the thaw: $(cat "$T/info.txt")"
"$FLIGHTREC" dump --ring "$RING" --from "@$FROM" --to "@$TO" --format folded -o "$T/after.folded" \
	2>"$T/dump.err" || fail "the samples before the freeze are gone: $(cat "$T/dump.err")"
# sum FILE: the samples of a folded profile.
sum() { awk '{ n += $NF } END { print n + 0 }' "$1"; }
before=$(sum "$T/before.folded")
after=$(sum "$T/after.folded")
echo "samples of [$FROM, $TO): $before before the freeze, $after in the ring after the thaw"
[ "$before" -gt 0 ] && [ "$after" -ge "$before" ] ||
	fail "the ring lost samples stored before the freeze: $after of $before"
echo PASS
