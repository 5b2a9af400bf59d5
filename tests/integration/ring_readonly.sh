#!/bin/bash
# A ring whose file system goes read-only under the recorder (ext4 with
# errors=remount-ro after an error, the way a failing disk takes it; a
# plain `mount -o remount,ro` is refused while the ring is open for
# writing) is not a silent stall: status says the ring's writes fail, since
# when and why (writer_error), and attach on a window after the failure
# says the recorder cannot write its ring since then, not that the window
# is after the ring's last sample. Before, status said writer_stalled:
# false (each append fails fast) and attach blamed the window.
. "$(dirname "$0")/lib.sh"
exact_losses
. "$(dirname "$0")/loopfs.sh"
need_root_perf
mount_loopfs errors=remount-ro
[ -w "/sys/fs/ext4/$LOOPDEV/trigger_fs_error" ] || skip "no ext4 trigger_fs_error for $LOOPDEV"
RING=$LOOPFS/ring

status_field() {
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ingest"].get(sys.argv[2], ""))' \
		"$T/status.json" "$1"
}

start_daemon --ring-size 16MiB --hz 199
"$BURN" 2 1 >/dev/null
"$FLIGHTREC" attach --window 2s -o "$T/before.pb.gz" 2>"$T/attach.err" ||
	fail "attach before the failure: $(cat "$T/attach.err")"
[ -z "$(status_field writer_error)" ] || fail "a writer error before the file system failed"

FAILED=$(date +%s)
echo "flightrec test" >"/sys/fs/ext4/$LOOPDEV/trigger_fs_error"
try_until 5 'findmnt -n -o OPTIONS "$LOOPFS" | grep -Eq "(^|,)(ro|emergency_ro)(,|\$)"'
findmnt -n -o OPTIONS "$LOOPFS" | grep -Eq '(^|,)(ro|emergency_ro)(,|$)' || skip "the file system did not go read-only"
"$BURN" 2 1 >/dev/null
try_until 10 '[ -n "$(status_field writer_error)" ]'
err=$(status_field writer_error)
[ "$err" = "Read-only file system" ] || fail "status has no writer_error for the read-only ring: '$err'"
since=$(status_field writer_error_since_ns)
[ "$((since / 1000000000))" -ge "$((FAILED - 1))" ] || fail "writer_error_since_ns $since is before the failure"
"$FLIGHTREC" status >"$T/status.txt"
grep -q 'ring writes FAIL since .* ago: Read-only file system' "$T/status.txt" ||
	fail "status text does not say the ring's writes fail: $(cat "$T/status.txt")"

"$FLIGHTREC" attach --window 2s -o "$T/after.pb.gz" 2>"$T/attach.err" &&
	fail "attach of a window the recorder could not store succeeded"
grep -q 'the recorder cannot write its ring since .* (Read-only file system)' "$T/attach.err" ||
	fail "attach does not say the ring cannot be written: $(cat "$T/attach.err")"
grep -q "after the ring's last sample" "$T/attach.err" &&
	fail "attach blames the window: $(cat "$T/attach.err")"
# The write that finds the error fails with EIO before ext4 remounts
# read-only: the log names the cause it changed to too (a suite run logged
# only the EIO)
grep -q 'cannot write the ring .*Read-only file system' "$T/daemon.log" ||
	fail "the recorder did not log the failure's cause: $(grep 'cannot write' "$T/daemon.log")"
daemon_alive || fail "the recorder died of its read-only ring"
echo PASS
