#!/bin/bash
# A program built with -O2 -g, whose hot loop in outer_work runs the
# always_inline leaf_add, runs while flightrecd records: `go tool pprof
# -lines` on its attach profile shows inline_calls.c:LINE, with leaf_add as
# a frame of its own at a line of leaf_add and outer_work at the line of
# the call; the mapping says it has file names, lines and inline frames.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
INLINE_CALLS=$BUILD/tests/inline_calls

read -r leaf_first leaf_last outer_first outer_last _ < <("$INLINE_CALLS" --lines)
[ -n "$outer_last" ] || fail "inline_calls --lines said nothing"

start_daemon

"$INLINE_CALLS" 4 &
IC_PID=$!
wait "$IC_PID" || fail "inline_calls failed"

"$FLIGHTREC" attach --window 20s --pid "$IC_PID" -o "$T/ic.pb.gz" 2>"$T/attach.err" ||
	{ cat "$T/attach.err"; fail "attach --pid failed"; }
"$GO" tool pprof -symbolize=none -lines -traces "$T/ic.pb.gz" >"$T/ic.traces" 2>"$T/pprof.err" ||
	{ cat "$T/pprof.err"; fail "go tool pprof -lines could not read the profile"; }
"$GO" tool pprof -symbolize=none -raw "$T/ic.pb.gz" >"$T/ic.raw" 2>&1 ||
	fail "go tool pprof -raw could not read the profile"
head -40 "$T/ic.traces"

# The frames of each trace, one per line: "FUNCTION FILE:LINE"; a trace
# whose leaf is leaf_add must have outer_work right after it (the leaf
# frame of the sample is the inlined function, its caller the real one).
awk -v lf="$leaf_first" -v ll="$leaf_last" -v of="$outer_first" -v ol="$outer_last" '
	/^-----/ { depth = 0; leaf = 0; next }
	{ sub(/ \(inline\)$/, "") }
	NF >= 2 && $(NF) ~ /inline_calls\.c:[0-9]+$/ {
		fn = $(NF - 1); line = $(NF); sub(/.*:/, "", line)
		depth++
		if (depth == 1 && fn == "leaf_add" && line >= lf && line <= ll) leaf = 1
		else if (depth == 1) leaf = 0
		if (depth == 2 && leaf && fn == "outer_work" && line >= of && line <= ol) ok++
		next
	}
	END { exit !(ok > 0) }' "$T/ic.traces" ||
	fail "no trace has leaf_add at inline_calls.c:$leaf_first-$leaf_last inlined into outer_work at :$outer_first-$outer_last"
# pprof marks a mapping's has_functions, has_filenames, has_line_numbers
# and has_inline_frames as [FN][FL][LN][IN].
sed -n '/^Mappings/,$p' "$T/ic.raw" | grep 'inline_calls' | grep -q '\[FN\]\[FL\]\[LN\]\[IN\]' ||
	{ sed -n '/^Mappings/,$p' "$T/ic.raw"; fail "the mapping of inline_calls does not claim functions, files, lines and inline frames"; }
stop_daemon
echo PASS
