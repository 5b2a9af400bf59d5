#!/bin/bash
# Symbols of binaries that are gone. A program run from a copy burns CPU
# while flightrecd records; its file is deleted while it runs, and it
# exits: a later attach, and an offline dump of the ring after the daemon
# stopped, both name its hot function from the symbol cache beside the
# ring (and a dump given an empty cache does not: the names come from the
# cache). Then a binary replaced by another build (another build id) while
# its old process runs: the old process's frames get the old build's
# names, never the new file's.
. "$(dirname "$0")/lib.sh"
need_root_perf
OLD=$BUILD/tests/integration/gone_hot_old
NEW=$BUILD/tests/integration/gone_hot_new
command -v readelf >/dev/null || skip "needs readelf (binutils) to read build ids"

build_id() {
	readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'
}

# named FOLDED FUNCTION: samples whose leaf is FUNCTION.
named() {
	awk -v fn="$2" '{ n_ = split($0, a, ";"); sub(/ [0-9]+$/, "", a[n_]) }
		a[n_] == fn { split($0, b, " "); n += b[length(b)] } END { print n + 0 }' "$1"
}

mkdir -p "$T/bin" "$T/empty"
chmod 700 "$T/empty"
start_daemon

# 1. Deleted while it runs.
cp "$OLD" "$T/bin/gone_hot"
"$T/bin/gone_hot" 4 >"$T/gone.out" &
GONE_PID=$!
wait_seals # recorded: its samples, mapping and build id
rm -f "$T/bin/gone_hot"
wait "$GONE_PID" || fail "gone_hot failed"
wait_seals
bid=$(build_id "$OLD")
[ -n "$bid" ] || fail "no build id in $OLD"
[ -f "$T/symbols/$bid" ] || { ls -la "$T/symbols" >&2; fail "the symbol cache has no copy of $bid"; }
# The copy keeps what names addresses (its code and data are holes).
[ "$(stat -c %s "$OLD")" = "$(stat -c %s "$T/symbols/$bid")" ] || fail "the copy's size differs"
cmp -s <(readelf -sW "$OLD") <(readelf -sW "$T/symbols/$bid") ||
	fail "the cached copy's symbol tables differ from the binary's"
cmp -s <(readelf -wL "$OLD" 2>&1) <(readelf -wL "$T/symbols/$bid" 2>&1) ||
	fail "the cached copy's line tables differ from the binary's"
mode=$(stat -c %a "$T/symbols/$bid")
[ "$mode" = 600 ] || fail "cached copy has mode $mode"
dmode=$(stat -c %a "$T/symbols")
[ "$dmode" = 700 ] || fail "the cache directory has mode $dmode"

"$FLIGHTREC" attach --window 30s --pid "$GONE_PID" --format folded -o "$T/gone.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/gone.folded")
hot=$(named "$T/gone.folded" gone_old_hot)
echo "deleted binary, attach: $total samples, $hot in gone_old_hot"
[ "$total" -gt 20 ] || fail "too few samples of gone_hot ($total)"
[ $((hot * 2)) -gt "$total" ] || { head "$T/gone.folded"; fail "gone_old_hot is not named by attach"; }

# 2. Replaced by another build while the old process runs.
cp "$OLD" "$T/bin/app"
"$T/bin/app" 4 >"$T/app.out" &
APP_PID=$!
wait_seals # recorded: its samples, mapping and build id
cp "$NEW" "$T/bin/app.new"
mv -f "$T/bin/app.new" "$T/bin/app"
wait "$APP_PID" || fail "app failed"
wait_seals
"$FLIGHTREC" attach --window 30s --pid "$APP_PID" --format folded -o "$T/app.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/app.folded")
old=$(named "$T/app.folded" gone_old_hot)
new=$(named "$T/app.folded" gone_new_hot)
echo "replaced binary, attach: $total samples, $old in gone_old_hot, $new in gone_new_hot"
[ "$new" = 0 ] || fail "frames of the old process were named from the new file"
[ $((old * 2)) -gt "$total" ] || { head "$T/app.folded"; fail "gone_old_hot is not named"; }

"$FLIGHTREC" status >"$T/status.out" || fail "status failed"
grep -E "^symbols: +[1-9][0-9]* files, .* cached in $T/symbols$" "$T/status.out" ||
	{ cat "$T/status.out"; fail "status does not show the symbol cache"; }
stop_daemon

# 3. Offline, after the daemon stopped: the cache beside the ring.
"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$GONE_PID" --format folded \
	-o "$T/dump.folded" >/dev/null 2>"$T/dump.err" || { cat "$T/dump.err"; fail "dump failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/dump.folded")
hot=$(named "$T/dump.folded" gone_old_hot)
echo "deleted binary, dump --ring: $total samples, $hot in gone_old_hot"
[ $((hot * 2)) -gt "$total" ] || fail "gone_old_hot is not named by dump --ring"
# An empty cache names nothing there: the names above came from the cache.
"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$GONE_PID" --format folded \
	--symbol-cache "$T/empty" -o "$T/nocache.folded" >/dev/null 2>"$T/dump.err" ||
	{ cat "$T/dump.err"; fail "dump --symbol-cache failed"; }
hot=$(named "$T/nocache.folded" gone_old_hot)
[ "$hot" = 0 ] || fail "gone_old_hot named without the cache ($hot)"
# The replaced binary, offline: still the old names.
"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$APP_PID" --format folded \
	-o "$T/dump2.folded" >/dev/null 2>"$T/dump.err" || { cat "$T/dump.err"; fail "dump failed"; }
new=$(named "$T/dump2.folded" gone_new_hot)
old=$(named "$T/dump2.folded" gone_old_hot)
[ "$new" = 0 ] && [ "$old" -gt 0 ] || fail "dump --ring of the replaced binary: old $old new $new"
echo PASS
