#!/bin/bash
# Application labels (lib/flightrec/labels.h) on a real daemon, with a
# program linked against the built libflightrec.so:
# - a 30/70 CPU split between phase=a and phase=b, over two threads and a
#   thread-pool hop (capture/apply), shows in go tool pprof -tags within 2
#   points, and the submitter's offcpu waits carry the task's phase;
# - --label, --label-key, a session's label targets and top --label-key
#   keep or split what they say;
# - labels renamed every 10 ms: no sample carries a set from before or
#   after its moment (each slot's label says which function runs then, so
#   a sample's stack gives it away);
# - after kill -9 of the recorder, the ring still holds the labels.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
DEMO=$BUILD/tests/integration/labels_demo

# A session whose dumps hold only phase=a samples (its targets' labels).
cat >"$T/config.json" <<JSON
{"limits": {"max_rate_hz": 2000}, "dumps": {"dir": "$T/dumps"},
 "sessions": [
  {"name": "always", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]},
  {"name": "phase_a", "events": [{"event": "cpu", "hz": 999}],
   "targets": {"comm": ["labels_demo"], "labels": ["phase=a"]}}
]}
JSON
start_daemon --config "$T/config.json"

# run_demo NAME ARGS...: runs labels_demo to its end; its pid in DEMO_PID.
run_demo() {
	local name=$1
	shift
	"$DEMO" "$@" >"$T/$name.out" &
	DEMO_PID=$!
	wait "$DEMO_PID" || fail "labels_demo $* failed"
	grep -q '^ready$' "$T/$name.out" || fail "labels_demo $* did not start"
}

# --- the split ---
run_demo split split 8
"$FLIGHTREC" attach --window 30s --hz 999 --pid "$DEMO_PID" -o "$T/split.pb.gz" 2>"$T/err" ||
	fail "attach failed: $(cat "$T/err")"
"$GO" tool pprof -tags "$T/split.pb.gz" >"$T/split.tags" 2>"$T/pprof.err" ||
	fail "go tool pprof -tags failed: $(cat "$T/pprof.err")"
# phase: Total 7.9s
#        5.5s (69.75%): b
#        2.4s (30.25%): a
tag_pct() { # tag_pct FILE KEY VALUE
	awk -v key="$2:" -v val="$3" '
		$1 == key { inkey = 1; next }
		/^ *[^ ]+: Total/ { inkey = 0 }
		inkey && $NF == val { p = $(NF - 1); gsub(/[(%):]/, "", p); print p; exit }' "$1"
}
a=$(tag_pct "$T/split.tags" phase a)
b=$(tag_pct "$T/split.tags" phase b)
echo "phase a ${a:-none}%, b ${b:-none}% (want 30/70)"
[ -n "$a" ] && [ -n "$b" ] || { cat "$T/split.tags" >&2; fail "no phase labels in the profile"; }
within "$a" 30 2 || fail "phase=a has ${a}% of the CPU, not 30 +- 2"
within "$b" 70 2 || fail "phase=b has ${b}% of the CPU, not 70 +- 2"
# Off-CPU samples too: the submitting thread waits for the pool under the
# task's phase, 3 ms of a and 7 ms of b (and the wake-ups' latency).
"$FLIGHTREC" attach --window 30s --event offcpu --pid "$DEMO_PID" -o "$T/off.pb.gz" 2>"$T/err" ||
	fail "attach --event offcpu failed: $(cat "$T/err")"
"$GO" tool pprof -tags -tagfocus=tid="$DEMO_PID" "$T/off.pb.gz" >"$T/off.tags" 2>/dev/null
oa=$(tag_pct "$T/off.tags" phase a)
ob=$(tag_pct "$T/off.tags" phase b)
echo "offcpu of the submitter: phase a ${oa:-none}%, b ${ob:-none}%"
[ -n "$oa" ] && [ -n "$ob" ] || { cat "$T/off.tags" >&2; fail "no phase labels on offcpu samples"; }
within "$oa" 30 5 || fail "the submitter waited ${oa}% under phase=a, not about 30"
# The recorder's own labels are still there, and none of its keys is the
# program's.
grep -q '^ *thread: Total' "$T/split.tags" || fail "the thread label is gone"

# --- filters: --label KEY=VALUE (all of them), --label-key KEY ---
"$FLIGHTREC" attach --window 30s --hz 999 --pid "$DEMO_PID" --label phase=a -o "$T/a.pb.gz" \
	2>"$T/err" || fail "attach --label failed: $(cat "$T/err")"
"$GO" tool pprof -tags "$T/a.pb.gz" >"$T/a.tags" 2>/dev/null
only_a=$(tag_pct "$T/a.tags" phase a)
[ "$only_a" = 100 ] && [ -z "$(tag_pct "$T/a.tags" phase b)" ] ||
	{ cat "$T/a.tags" >&2; fail "--label phase=a kept other samples"; }
# Both at once match nothing: said (exit 1), and with --allow-empty written.
"$FLIGHTREC" attach --window 30s --hz 999 --pid "$DEMO_PID" --label phase=a --label phase=b \
	--format folded -o "$T/none.folded" 2>"$T/err" && fail "attach with two labels succeeded"
grep -q -- '--label phase=a --label phase=b matched no samples' "$T/err" ||
	fail "attach with two labels: $(cat "$T/err")"
"$FLIGHTREC" attach --window 30s --hz 999 --pid "$DEMO_PID" --label phase=a --label phase=b \
	--allow-empty --format folded -o "$T/none.folded" 2>"$T/err" || fail "attach with two labels failed"
[ ! -s "$T/none.folded" ] || fail "--label phase=a --label phase=b (both at once) kept samples"
"$FLIGHTREC" attach --window 30s --hz 999 --pid "$DEMO_PID" --label-key phase -o "$T/k.pb.gz" \
	2>"$T/err" || fail "attach --label-key failed: $(cat "$T/err")"
"$GO" tool pprof -tags "$T/k.pb.gz" >"$T/k.tags" 2>/dev/null
ka=$(tag_pct "$T/k.tags" phase a)
kb=$(tag_pct "$T/k.tags" phase b)
total_k=$("$GO" tool pprof -tags "$T/k.pb.gz" 2>/dev/null | awk '$1 == "tid:" { print $3 }')
total_p=$("$GO" tool pprof -tags "$T/k.pb.gz" 2>/dev/null | awk '$1 == "phase:" { print $3 }')
[ -n "$ka" ] && [ -n "$kb" ] && [ "$total_k" = "$total_p" ] ||
	fail "--label-key phase: every sample should have a phase (tid total $total_k, phase $total_p)"
echo "filters: --label phase=a keeps only a, --label-key phase only labelled samples"
# A session's dump keeps only its labels.
p=$("$FLIGHTREC" dump --session phase_a --window 30s 2>"$T/err") ||
	fail "dump --session phase_a failed: $(cat "$T/err")"
"$GO" tool pprof -tags "$p" >"$T/session.tags" 2>/dev/null
[ "$(tag_pct "$T/session.tags" phase a)" = 100 ] && [ -z "$(tag_pct "$T/session.tags" phase b)" ] ||
	{ cat "$T/session.tags" >&2; fail "the phase_a session's dump holds other samples"; }
# flightrec top splits by the key: a table per phase, each with the spin.
"$FLIGHTREC" top "$T/split.pb.gz" --label-key phase >"$T/top.txt" 2>&1 || fail "top --label-key failed"
grep -qx 'phase=a' "$T/top.txt" && grep -qx 'phase=b' "$T/top.txt" ||
	{ cat "$T/top.txt" >&2; fail "top --label-key phase has no table per phase"; }
[ "$(grep -c 'fr_demo_spin' "$T/top.txt")" = 2 ] ||
	{ cat "$T/top.txt" >&2; fail "top --label-key phase: fr_demo_spin is not in both tables"; }

# --- the 10 ms slots ---
# The window starts once the recorder has found the process's labels (a
# few milliseconds after it loaded the library, longer on a loaded
# machine): before that its samples cannot carry them.
"$DEMO" slots 6 >"$T/slots.out" &
DEMO_PID=$!
. "$(dirname "$0")/labels_lib.sh"
wait_labelled "$DEMO_PID" slot
from=$(date +%s.%N)
wait "$DEMO_PID" || fail "labels_demo slots failed"
"$FLIGHTREC" attach --from "@$from" --to "@$(date +%s.%N)" --hz 999 --pid "$DEMO_PID" \
	-o "$T/slots.pb.gz" 2>"$T/err" || fail "attach failed: $(cat "$T/err")"
"$GO" tool pprof -symbolize=none -traces "$T/slots.pb.gz" >"$T/slots.traces" 2>"$T/pprof.err" ||
	fail "go tool pprof -traces failed: $(cat "$T/pprof.err")"
# Each trace: label lines ("par:  even"), then the frames, leaf first.
awk '
	function done() {
		if (fn == "") return
		if (par == "") unlabelled++
		else if ((fn == "fr_demo_even") != (par == "even")) wrong++
		else if (slot % 2 != (par == "odd")) wrong++
		else right++
	}
	/^-+\+-+$/ { done(); par = ""; slot = ""; fn = ""; next }
	$1 == "par:" { par = $2 }
	$1 == "slot:" { slot = $2 }
	/fr_demo_even|fr_demo_odd/ { fn = /fr_demo_even/ ? "fr_demo_even" : "fr_demo_odd" }
	END { done(); printf "%d %d %d\n", right, wrong, unlabelled }' "$T/slots.traces" >"$T/slots.count"
read -r right wrong unlabelled <"$T/slots.count"
echo "10 ms slots: $right samples with their moment's labels, $wrong with another's," \
	"$unlabelled without"
[ "$right" -gt 300 ] || fail "only $right labelled samples of the slot functions"
[ "$wrong" = 0 ] || fail "$wrong samples carry the labels of another moment"
# Labels are read at each sample: none is lost, not even in the last
# moments before the process exits.
[ "$unlabelled" = 0 ] || fail "$unlabelled samples of the slot functions have no labels"

# --- kill -9: the labels are in the ring ---
kill9_daemon
timeout 60 "$FLIGHTREC" dump --ring "$RING" --window 10m -o "$T/after.pb.gz" 2>"$T/err" ||
	fail "dump --ring after kill -9 failed: $(cat "$T/err")"
"$GO" tool pprof -tags "$T/after.pb.gz" >"$T/after.tags" 2>/dev/null
a2=$(tag_pct "$T/after.tags" phase a)
[ -n "$a2" ] || fail "the ring has no phase labels after kill -9"
grep -q '^ *slot: Total' "$T/after.tags" || fail "the ring has no slot labels after kill -9"
echo "after kill -9: phase a ${a2}% in the ring"
echo "PASS"
