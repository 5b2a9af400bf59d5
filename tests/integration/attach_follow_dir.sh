#!/bin/bash
# attach --follow -o DIR names its profiles DIR/NAME whether DIR is given
# with a trailing slash or not: before, "-o out/" printed and wrote
# "out//flightrec-HOST-TIME.pb.gz".
. "$(dirname "$0")/lib.sh"
need_root_perf
start_daemon
mkdir -p "$T/out"
for dir in "$T/out/" "$T/out" "$T/out//"; do
	"$FLIGHTREC" attach --follow --count 1 --window 1s -o "$dir" \
		>"$T/follow.out" 2>"$T/follow.err" ||
		{ cat "$T/follow.err"; fail "attach --follow -o $dir failed"; }
	path=$(tail -1 "$T/follow.out")
	echo "-o $dir: $path"
	case $path in
	"$T/out/flightrec-"*.pb.gz) ;;
	*) fail "attach --follow -o $dir wrote '$path', not $T/out/flightrec-...pb.gz" ;;
	esac
	[ -s "$path" ] || fail "no profile at $path"
done
stop_daemon
echo PASS
