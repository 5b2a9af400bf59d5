#!/bin/bash
# No reader of our profiles can be made to hang by whatever is at a
# mapped path when the profile is read. Two copies of burn run while
# flightrecd records, one stripped of everything (its frames are named
# "stripped+0xOFFSET"), one of its debug information only (named from its
# symbols); after the attach both paths become FIFOs, which an open blocks
# on until a writer comes. `go tool pprof` with its default symbolization
# (-top, -raw, -traces, -peek, -list) must return within seconds and show our
# names: before, a mapping with a frame no symbol named lacked
# has_functions, pprof opened its path to name it again, and blocked for
# ever (timeout 20 -> 124); and a function named from a symbol had the
# binary as its source file, which -list opens.
# Then the same with a program run from a FUSE file system that answers
# the open of its exec and never another (fuse_hold exec).
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
command -v strip >/dev/null || skip "needs strip (binutils)"
HOLD_PID=
FUSE_PID=
release() {
	[ -n "$FUSE_PID" ] && kill -9 "$FUSE_PID" 2>/dev/null
	if [ -n "$HOLD_PID" ]; then
		kill -TERM "$HOLD_PID" 2>/dev/null
		wait "$HOLD_PID" 2>/dev/null
		HOLD_PID=
	fi
}
trap 'release; cleanup' EXIT

mkdir -p "$T/run"
strip -s -o "$T/run/stripped" "$BURN"
strip -g -o "$T/run/symbols" "$BURN"

# reader PROFILE MODE...: go tool pprof MODE... on PROFILE, as a user
# types it (symbolization on), into $T/out; fails when it does not return
# within 20 s or fails.
reader() {
	local f=$1 t0 ms rc
	shift
	t0=${EPOCHREALTIME/./}
	timeout -k 5 20 "$GO" tool pprof "$@" "$f" >"$T/out" 2>"$T/err"
	rc=$?
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	echo "go tool pprof $*: exit $rc, $ms ms"
	[ "$rc" = 124 ] || [ "$rc" = 137 ] &&
		fail "go tool pprof $* did not return in 20 s (it opened a mapped path)"
	[ "$rc" = 0 ] || { cat "$T/err"; fail "go tool pprof $* failed ($rc)"; }
}

start_daemon
"$T/run/stripped" 3 >"$T/stripped.out" &
P1=$!
"$T/run/symbols" 3 >"$T/symbols.out" &
P2=$!
wait "$P1" "$P2" || fail "burn failed"
"$FLIGHTREC" attach --window 15s --pid "$P1" --pid "$P2" -o "$T/p.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach failed"; }

for f in stripped symbols; do
	rm "$T/run/$f"
	mkfifo "$T/run/$f"
done

reader "$T/p.pb.gz" -top -nodecount=1000
cat "$T/out"
grep -q 'fr_burn_heavy' "$T/out" || fail "-top does not show fr_burn_heavy (named from a symbol)"
grep -q 'stripped+0x[0-9a-f]' "$T/out" || fail "-top does not show stripped+0xOFFSET"
reader "$T/p.pb.gz" -raw
sed -n '/^Mappings/,$p' "$T/out"
grep -q 'stripped+0x[0-9a-f]' "$T/out" || fail "-raw does not show stripped+0xOFFSET"
reader "$T/p.pb.gz" -traces
grep -q 'fr_burn_heavy' "$T/out" || fail "-traces does not show fr_burn_heavy"
reader "$T/p.pb.gz" -peek 'fr_burn_heavy'
grep -q 'fr_burn_heavy' "$T/out" || fail "-peek does not show fr_burn_heavy"
reader "$T/p.pb.gz" -list 'fr_burn_heavy|stripped'
head -5 "$T/out"
grep -q 'No source information for fr_burn_heavy' "$T/out" ||
	fail "-list fr_burn_heavy found source for a function named from a symbol alone"

# A program whose executable is on a file system that never answers
# another open: the recorder cannot read it either, so all of its frames
# are unnamed ("prog+0xOFFSET").
strip -s -o "$T/fuse-prog" "$BURN"
start_fuse_hold exec "$T/fuse-prog" 1
"$FUSE_DIR/prog" 3 >"$T/fuse.out" &
FUSE_PID=$!
P3=$FUSE_PID
wait "$FUSE_PID" || fail "burn on the held file system failed"
FUSE_PID=
"$FLIGHTREC" attach --window 15s --pid "$P3" -o "$T/f.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach of the FUSE program failed"; }
for mode in -top -raw -traces; do
	reader "$T/f.pb.gz" "$mode"
	grep -q 'prog+0x[0-9a-f]' "$T/out" || { cat "$T/out"; fail "$mode does not show prog+0xOFFSET"; }
done
release
stop_daemon
echo PASS
