#!/bin/bash
# One user's binaries cannot push root's symbols out of the symbol cache.
# A root program's binary is deleted while it runs, and the cache keeps
# the copy that names its frames once it has exited (a profile of its
# window, which uses the copy last). Then another local user (a real
# useradd user) runs ten binaries of their own, each with a build id of
# its own and a 6 MiB section that copies keep, against a cache of
# 48 MiB. The cache evicts the user's own oldest copies, never root's (a
# user's files compete with that user's), so a profile of root's past
# window still names gone_old_hot rather than "rootvictim+0x...". Status
# shows the budget and what each owner holds. (The machine's other root
# processes fill root's half of the cache too, and root's own least
# recently used copies go first: the profile before the flood makes
# root's copy of rootvictim its most recently used, and files over 8 MiB,
# such as a large library with its debug sections, are not copied.)
. "$(dirname "$0")/lib.sh"
need_root_perf
need_test_users
for c in objcopy readelf python3; do
	command -v "$c" >/dev/null || skip "needs $c (binutils, python3) to make the user's binaries"
done
OLD=$BUILD/tests/integration/gone_hot_old
NEW=$BUILD/tests/integration/gone_hot_new
U=frsym$$
add_test_user "$U" ""
uid=$(id -u "$U")

build_id() {
	readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'
}

# named FOLDED FUNCTION: samples whose leaf is FUNCTION.
named() {
	awk -v fn="$2" '{ n_ = split($0, a, ";"); sub(/ [0-9]+$/, "", a[n_]) }
		a[n_] == fn { split($0, b, " "); n += b[length(b)] } END { print n + 0 }' "$1"
}

# The user's binaries: gone_hot_new with a 3 MiB section of random bytes
# (not code or data: a copy keeps it) and build id N.
mkdir "$T/u" && chown "$U" "$T/u"
head -c $((6 << 20)) /dev/urandom >"$T/fill.bin"
for i in $(seq 0 9); do
	python3 - "$T/note$i" "$i" <<'PY'
import struct, sys
bid = bytes([0xf1, 0x00, 0xd0, int(sys.argv[2])]) + bytes(16)
open(sys.argv[1], "wb").write(struct.pack("<III", 4, len(bid), 3) + b"GNU\0" + bid)
PY
	objcopy --add-section .fill="$T/fill.bin" --update-section .note.gnu.build-id="$T/note$i" \
		"$NEW" "$T/u/flood$i" 2>"$T/objcopy.err" || fail "objcopy: $(cat "$T/objcopy.err")"
	chown "$U" "$T/u/flood$i"
done
[ "$(build_id "$T/u/flood3")" = f100d003000000000000000000000000000000000000 ] ||
	[ "$(build_id "$T/u/flood3")" = f100d00300000000000000000000000000000000 ] ||
	fail "the user's binaries do not carry the build ids written: $(build_id "$T/u/flood3")"

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK"},
 "symbols": {"cache_size": "48MiB", "cache_file_max": "8MiB"},
 "sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 199}]}]}
JSON
start_daemon --config "$T/config.json"

# Root's binary, deleted while it runs.
mkdir -p "$T/bin"
cp "$OLD" "$T/bin/rootvictim"
"$T/bin/rootvictim" 3 >/dev/null &
ROOT_PID=$!
wait_seals # recorded: its samples, mapping and build id
rm -f "$T/bin/rootvictim"
wait "$ROOT_PID" || fail "rootvictim failed"
bid=$(build_id "$OLD")
try_until 30 '[ -f "$T/symbols/$bid" ]'
[ -f "$T/symbols/$bid" ] || { ls -la "$T/symbols" >&2; fail "root's binary was not cached"; }

# profile NAME: root's window, folded, and how many samples gone_old_hot
# names.
profile() {
	"$FLIGHTREC" attach --window 5m --pid "$ROOT_PID" --format folded -o "$T/$1.folded" \
		2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach failed"; }
	total=$(awk '{ n += $NF } END { print n + 0 }' "$T/$1.folded")
	hot=$(named "$T/$1.folded" gone_old_hot)
	echo "root's deleted binary, $1: $total samples, $hot in gone_old_hot"
	[ "$total" -gt 20 ] || fail "too few samples of rootvictim ($total)"
	[ $((hot * 2)) -gt "$total" ] || { head "$T/$1.folded"; fail "gone_old_hot is not named ($1)"; }
}
profile before

# The flood: each of the user's binaries sampled for a while, so that a
# sealed chunk refers to it and the cache copies it.
for i in $(seq 0 9); do
	runuser -u "$U" -- "$T/u/flood$i" 0.5 >/dev/null || fail "the user's flood$i failed"
done
last=$(build_id "$T/u/flood9").u$uid
try_until 30 '[ -f "$T/symbols/$last" ]'
ls -la "$T/symbols" >"$T/symbols.ls"
[ -f "$T/symbols/$last" ] || { cat "$T/symbols.ls" >&2; fail "the user's last binary was not cached"; }
user_copies=$(ls "$T/symbols" | grep -c "\.u$uid\$")
echo "after the flood: $user_copies of the user's 10 copies kept"
# 60 MiB of the user's against 48: some went.
[ "$user_copies" -lt 10 ] || { cat "$T/symbols.ls" >&2; fail "no copy of the user's was evicted"; }
[ -f "$T/symbols/$bid" ] || { cat "$T/symbols.ls" >&2; fail "the user's flood evicted root's copy"; }

# Status: the budget and each owner's part.
"$FLIGHTREC" status >"$T/status.out" || fail "status failed"
grep -E "^symbols: +[0-9]+ files, [0-9.]+MiB of 48.0MiB \(root [0-9.]+[KM]iB, uid $uid [0-9.]+MiB\) cached in $T/symbols$" \
	"$T/status.out" || { cat "$T/status.out"; fail "status does not show the cache's owners"; }
"$FLIGHTREC" status --json >"$T/status.json" || fail "status --json failed"
check_owners "$T/status.json" symbol_cache $((48 << 20)) "$uid"
python3 -c 'import json, sys; o = {x["uid"]: x for x in json.load(open(sys.argv[1]))["symbol_cache"]["owners"]}; sys.exit(o[int(sys.argv[2])]["bytes"] <= 12 << 20)' \
	"$T/status.json" "$uid" || fail "the user's copies take under 12 MiB: $(cat "$T/status.json")"
stop_daemon

# Offline, from the cache on disk alone (the recorder kept no parsed
# image of it in memory there): still named.
"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$ROOT_PID" --format folded \
	-o "$T/after.folded" >/dev/null 2>"$T/dump.err" || { cat "$T/dump.err"; fail "dump failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/after.folded")
hot=$(named "$T/after.folded" gone_old_hot)
echo "root's deleted binary after the flood, dump --ring: $total samples, $hot in gone_old_hot"
[ $((hot * 2)) -gt "$total" ] && [ "$total" -gt 20 ] ||
	{ head "$T/after.folded"; fail "gone_old_hot is not named after the flood"; }
echo PASS
