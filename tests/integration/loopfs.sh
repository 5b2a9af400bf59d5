# A small ext4 file system on a loop device for the tests of a ring whose
# disk fails (ring_readonly.sh, stop_frozen_disk.sh): sourced after
# lib.sh. mount_loopfs makes one at $T/mnt (mode 0700, as a ring's
# directory must be) and arranges, on exit, the recorder killed, the file
# system thawed and unmounted, then lib.sh's cleanup.
LOOPFS=$T/mnt
LOOPDEV=

loopfs_cleanup() {
	if [ -n "$DAEMON_PID" ]; then
		kill -9 "$DAEMON_PID" 2>/dev/null
		fsfreeze -u "$LOOPFS" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
		DAEMON_PID=
	fi
	fsfreeze -u "$LOOPFS" 2>/dev/null
	mountpoint -q "$LOOPFS" && umount "$LOOPFS"
	cleanup
}

# mount_loopfs [MOUNT OPTIONS]: a 64 MiB ext4 at $LOOPFS, its device's
# name (loopN) in LOOPDEV; skips where loop devices cannot be had.
mount_loopfs() {
	local c
	for c in mkfs.ext4 losetup fsfreeze mountpoint; do
		command -v "$c" >/dev/null || skip "needs $c to make a file system that fails"
	done
	truncate -s 64M "$T/fs.img" && mkfs.ext4 -q -F "$T/fs.img" || fail "mkfs.ext4 failed"
	mkdir "$LOOPFS"
	trap loopfs_cleanup EXIT
	mount -o "loop${1:+,$1}" "$T/fs.img" "$LOOPFS" 2>"$T/mount.err" ||
		skip "cannot mount a loop device here: $(cat "$T/mount.err")"
	chmod 0700 "$LOOPFS"
	LOOPDEV=$(basename "$(findmnt -n -o SOURCE "$LOOPFS")")
}
