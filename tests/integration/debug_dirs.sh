#!/bin/bash
# "symbols": {"debug_dirs": [...]}: a stripped binary whose debug file
# (build-id layout, DIR/.build-id/xx/rest.debug) lies in the second of two
# configured debug directories is named, with source lines that agree with
# addr2line; a debug file copied in after the daemon started is used by the
# next attach, without a restart (the attach before it named nothing).
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
OLD=$BUILD/tests/integration/gone_hot_old
NEW=$BUILD/tests/integration/gone_hot_new
for t in objcopy strip readelf addr2line; do
	command -v $t >/dev/null || skip "needs $t (binutils)"
done

build_id() {
	readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'
}

# debug_file BINARY DIR: BINARY's debug file in DIR's build-id layout.
debug_file() {
	local bid
	bid=$(build_id "$1")
	mkdir -p "$2/.build-id/${bid:0:2}"
	objcopy --only-keep-debug "$1" "$2/.build-id/${bid:0:2}/${bid:2}.debug"
}

named() {
	awk -v fn="$2" '{ n_ = split($0, a, ";"); sub(/ [0-9]+$/, "", a[n_]) }
		a[n_] == fn { split($0, b, " "); n += b[length(b)] } END { print n + 0 }' "$1"
}

mkdir -p "$T/bin" "$T/dbg1" "$T/dbg2"
strip -o "$T/bin/old_stripped" "$OLD"
strip -o "$T/bin/new_stripped" "$NEW"
debug_file "$OLD" "$T/dbg2"
cat >"$T/config.json" <<JSON
{"symbols": {"debug_dirs": ["$T/dbg1", "$T/dbg2"]},
 "sessions": [{"name": "default", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"

# 1. The debug file is in the second directory from the start.
"$T/bin/old_stripped" 3 >/dev/null &
OLD_PID=$!
wait "$OLD_PID" || fail "old_stripped failed"
"$FLIGHTREC" attach --window 30s --pid "$OLD_PID" --format folded -o "$T/old.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/old.folded")
hot=$(named "$T/old.folded" gone_old_hot)
echo "stripped, debug file in the second debug dir: $total samples, $hot in gone_old_hot"
[ "$total" -gt 20 ] || fail "too few samples ($total)"
[ $((hot * 2)) -gt "$total" ] || { head "$T/old.folded"; fail "gone_old_hot not named from its debug file"; }

# Lines: the leaf location's line as pprof shows it, against addr2line
# on the unstripped binary at the same file-relative address.
"$FLIGHTREC" attach --window 30s --pid "$OLD_PID" -o "$T/old.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach failed"; }
"$GO" tool pprof -symbolize=none -raw "$T/old.pb.gz" >"$T/old.raw" 2>&1 ||
	fail "go tool pprof -raw could not read the profile"
# "Mappings" lines: "ID: START/LIMIT/OFFSET PATH ...".
read -r mstart moff < <(awk '/^Mappings/ { m = 1; next }
	m && /old_stripped/ { split($2, a, "/"); print a[1], a[3]; exit }' "$T/old.raw")
# "Locations" lines: "ID: ADDR M=ID FUNCTION FILE:LINE s=..".
read -r addr fline < <(awk '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 }
	l && $4 == "gone_old_hot" && $5 ~ /gone_hot\.c:[0-9]+$/ { print $2, $5; exit }' "$T/old.raw")
[ -n "${addr:-}" ] && [ -n "${mstart:-}" ] ||
	{ sed -n '/^Locations/,$p' "$T/old.raw" | head -20; fail "no gone_old_hot location with a line"; }
vaddr=$(printf '0x%x' $((addr - mstart + moff)))
want=$(addr2line -e "$OLD" "$vaddr" | sed 's/ .*//')
echo "leaf at $vaddr: profile $fline, addr2line $want"
[ "${fline##*/}" = "${want##*/}" ] || fail "the profile's line $fline is not addr2line's $want"

# 2. A debug file installed while the daemon runs.
"$T/bin/new_stripped" 3 >/dev/null &
NEW_PID=$!
wait "$NEW_PID" || fail "new_stripped failed"
"$FLIGHTREC" attach --window 30s --pid "$NEW_PID" --format folded -o "$T/new1.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach failed"; }
before=$(named "$T/new1.folded" gone_new_hot)
[ "$before" = 0 ] || fail "gone_new_hot named before its debug file exists"
debug_file "$NEW" "$T/dbg1"
"$FLIGHTREC" attach --window 30s --pid "$NEW_PID" --format folded -o "$T/new2.folded" \
	2>"$T/attach.err" || { cat "$T/attach.err"; fail "attach failed"; }
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/new2.folded")
after=$(named "$T/new2.folded" gone_new_hot)
echo "debug file installed later: $after of $total samples in gone_new_hot (before: $before)"
[ $((after * 2)) -gt "$total" ] || fail "the debug file installed later was not used"
stop_daemon
echo PASS
