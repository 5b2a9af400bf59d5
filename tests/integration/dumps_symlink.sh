#!/bin/bash
# An unprivileged user controls where the root recorder writes dumps: the
# dumps directory is under a world-writable (1777) parent, so the user can
# create it first, make it a symlink, or plant symlinks inside it at the
# names dumps use, pointing at root's files. The recorder must refuse
# such a directory with a message naming why (a symlink, the owner's uid,
# the mode bits), touch nothing through any symlink, and keep recording;
# once the directory is root's and private, dumps work again.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v useradd >/dev/null && command -v userdel >/dev/null && command -v runuser >/dev/null ||
	skip "needs useradd, userdel and runuser to act as an unprivileged user"

USER_NAME=frdump$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME" 2>"$T/useradd.err" ||
	skip "cannot create a user: $(cat "$T/useradd.err")"
trap 'userdel "$USER_NAME" 2>/dev/null; cleanup' EXIT
USER_UID=$(id -u "$USER_NAME")
as_user() { runuser -u "$USER_NAME" -- "$@"; }

# The world-writable parent, reachable by the user; on tmpfs when there
# is one, where the user's thousands of symlinks are made in time.
chmod 0711 "$T"
if [ -d /dev/shm ] && PUB=$(mktemp -d /dev/shm/flightrec-test.XXXXXX 2>/dev/null); then
	trap 'userdel "$USER_NAME" 2>/dev/null; rm -rf "$PUB"; cleanup' EXIT
else
	PUB=$T/pub
	mkdir "$PUB"
fi
chmod 1777 "$PUB"
DUMPS=$PUB/dumps
# Root's files the user would like overwritten: one that exists, one a
# dangling symlink would create.
echo "root's data" >"$T/canary"
chmod 0600 "$T/canary"
CANARY_SUM=$(sha256sum <"$T/canary")
mkdir -m 0700 "$T/private"

cp /bin/sh "$T/crashy"
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$DUMPS", "keep": 100},
 "sessions": [
  {"name": "all", "events": [{"event": "cpu", "hz": 99}]},
  {"name": "crashy", "targets": {"comm": ["crashy"]}, "events": [{"event": "cpu", "hz": 99}],
   "triggers": [{"on": "exit", "window": "2s", "cooldown": "1s"}]}
]}
JSON
start_daemon --config "$T/config.json"

# plant DIR: as the user, symlinks at every name a dump by hand would
# have used as its temporary files (the old, predictable names) in a
# window of 1.5 s starting 2.5 s from now (making them takes time),
# pointing at the canary and at a file root does not have yet; then waits
# until that window is on, so the next dump falls in it.
plant() {
	as_user python3 - "$1" "$T/canary" "$T/created-through-link" <<'PY' || fail "cannot plant symlinks in $1"
import os, socket, sys, time
d, canary, dangling = sys.argv[1:4]
host = socket.gethostname().replace('/', '_').replace(' ', '_') or 'host'
t0 = int(time.time() * 1000) + 2500
for ms in range(t0, t0 + 1500):
    t = time.gmtime(ms // 1000)
    stem = '%s/all-manual-%s-%s.%03dZ' % (d, host, time.strftime('%Y%m%dT%H%M%S', t), ms % 1000)
    os.symlink(canary, stem + '.pb.gz.tmp')
    os.symlink(dangling, stem + '.json.tmp')
time.sleep(max(0.0, (t0 + 200) / 1000 - time.time()))
PY
}

# expect_refused PATTERN: a dump by hand fails with one line matching
# PATTERN, and nothing outside the dumps directory changed.
expect_refused() {
	local rc=0
	"$FLIGHTREC" dump --session all --window 1s >"$T/out" 2>"$T/err" || rc=$?
	check_untouched
	[ "$rc" != 0 ] || fail "a dump into an unsafe directory succeeded: $(cat "$T/out")"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "the refusal is not one line: $(cat "$T/err")"
	grep -Eq -- "$1" "$T/err" || fail "the refusal does not say why (want /$1/): $(cat "$T/err")"
	grep -q "no session" "$T/err" && fail "the refusal blames the session: $(cat "$T/err")"
	[ -z "$(find "$PUB" -mindepth 1 -user 0 ! -path "$DUMPS" 2>/dev/null)" ] ||
		fail "root created files in the unsafe directory: $(find "$PUB" -mindepth 1 -user 0 ! -path "$DUMPS")"
}

check_untouched() {
	[ "$(sha256sum <"$T/canary")" = "$CANARY_SUM" ] || fail "the root-owned canary was written through a symlink"
	[ ! -e "$T/created-through-link" ] || fail "a file was created through a dangling symlink"
	[ -z "$(ls -A "$T/private")" ] || fail "files appeared in the directory a symlink pointed at: $(ls -A "$T/private")"
}

# 1. The user made the dumps directory (0755, theirs) and planted links.
as_user mkdir "$DUMPS"
plant "$DUMPS"
expect_refused "owned by uid $USER_UID, not by uid 0"
# An exit trigger into it: refused in the log, nothing touched.
"$T/crashy" -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3'
try_until 20 'grep -q "dump of session crashy (exit) failed" "$T/daemon.log"'
grep -q "dump of session crashy (exit) failed: .*owned by uid $USER_UID" "$T/daemon.log" ||
	fail "the exit dump into the user's directory was not refused with its reason: $(tail -3 "$T/daemon.log")"
check_untouched

# 2. The dumps directory is the user's symlink to a private root directory.
rm -rf "$DUMPS"
as_user ln -s "$T/private" "$DUMPS"
expect_refused "$DUMPS is a symlink"

# 3. Root's, but writable by others (the user planted links first).
rm -f "$DUMPS"
mkdir "$DUMPS"
chmod 0777 "$DUMPS"
plant "$DUMPS"
expect_refused "writable by group and others \(mode 0777\)"
chmod 0770 "$DUMPS"
expect_refused "writable by group \(mode 0770\)"

# 4. Root's and private again (the user's links still in it): dumps work, the daemon kept recording, the
# user's links are neither followed nor removed by retention.
chmod 0700 "$DUMPS"
links=$(find "$DUMPS" -type l | wc -l)
p=$("$FLIGHTREC" dump --session all --window 1s 2>"$T/err") || fail "a dump into a safe directory failed: $(cat "$T/err")"
[ -f "$p" ] && [ ! -L "$p" ] && gzip -t "$p" || fail "the dump $p is not a complete regular file"
"$FLIGHTREC" top "$p" >/dev/null 2>"$T/err" || fail "the dump $p cannot be read: $(cat "$T/err")"
check_untouched
[ "$(find "$DUMPS" -type l | wc -l)" = "$links" ] || fail "the user's symlinks changed"
daemon_alive || fail "the daemon died"
stop_daemon
