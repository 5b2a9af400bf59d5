#!/bin/bash
# Incident triggers write dumps on their own: a signal, CPU above a
# threshold, a target process that exits badly, and a dump asked for by
# hand. Each dump is a valid profile of the session's window and targets
# with a sidecar saying what fired; cooldowns suppress repeats; retention
# keeps the newest dumps.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

DUMPS=$T/dumps
# Programs with names of their own, for command-name targets: of this run
# alone (the suffix of its directory), since exit and cpu_above triggers
# watch the whole machine, where another run of this test may be busy.
CRASHY_NAME=crashy-${T##*.}
HOT_NAME=hot-${T##*.}
cp /bin/sh "$T/$CRASHY_NAME"
cp "$BURN" "$T/$HOT_NAME"
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$DUMPS", "keep": 4},
 "sessions": [
  {"name": "always", "events": [{"event": "cpu", "hz": 99}],
   "triggers": [{"on": "signal", "signal": "USR1", "window": "5s", "cooldown": "30s"}]},
  {"name": "hot", "targets": {"comm": ["$HOT_NAME"]}, "events": [{"event": "cpu", "hz": 199}],
   "triggers": [{"on": "cpu_above", "percent": 30, "for": "2s", "window": "4s", "cooldown": "1h"}]},
  {"name": "crashy", "targets": {"comm": ["$CRASHY_NAME"]}, "events": [{"event": "cpu", "hz": 99}],
   "triggers": [{"on": "exit", "window": "10s", "after": "1s", "cooldown": "1s"}]}
]}
JSON
start_daemon --config "$T/config.json"
"$FLIGHTREC" sessions >"$T/sessions" || fail "sessions failed"
grep -Eq '^always +cpu@99Hz +all processes +signal:SIGUSR1 +never$' "$T/sessions" ||
	fail "sessions does not show the signal trigger: $(cat "$T/sessions")"
grep -Eq '^hot +cpu@199Hz +comm '"$HOT_NAME"' +cpu>30% +never$' "$T/sessions" ||
	fail "sessions does not show the cpu trigger: $(cat "$T/sessions")"

# wait_dump GLOB SECONDS: waits for a dump matching GLOB (and its sidecar).
wait_dump() {
	try_until "$2" dump_there "$1" && echo "$found"
}
dump_there() {
	for found in $DUMPS/$1.pb.gz; do
		[ -f "$found" ] && [ -f "${found%.pb.gz}.json" ] && return 0
	done
	return 1
}
sidecar() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
valid() { "$GO" tool pprof -raw "$1" >/dev/null 2>"$T/pprof.err" || fail "$1 is not a valid profile: $(cat "$T/pprof.err")"; }

# 1. A signal: the last 5 s of the whole machine.
"$BURN" 3 1 0 >/dev/null
kill -USR1 "$DAEMON_PID"
f=$(wait_dump "always-signal-*" 10) || fail "SIGUSR1 wrote no dump: $(ls "$DUMPS" 2>&1); $(tail -3 "$T/daemon.log")"
valid "$f"
j=${f%.pb.gz}.json
[ "$(sidecar "$j" 'd["session"]')" = always ] && [ "$(sidecar "$j" 'd["trigger"]')" = signal ] ||
	fail "the sidecar does not say what fired: $(cat "$j")"
[ "$(sidecar "$j" 'd["t1_ns"] - d["t0_ns"]')" = 5000000000 ] || fail "the signal dump's window is not 5s: $(cat "$j")"
[ "$(sidecar "$j" 'd["events"][0]["event"]')" = cpu ] || fail "the sidecar has no events: $(cat "$j")"
pprof_top "$f" >"$T/sig.top"
grep -q fr_burn_heavy "$T/sig.top" || fail "the signal dump misses the busy program of the last 5 s"
# Within the cooldown, a second signal writes nothing.
kill -USR1 "$DAEMON_PID"
sleep 1.5
# (A dump of the whole machine keeps the goroutines of any Go program
# running then beside it: its profiles are those ending in Z.pb.gz.)
[ "$(ls "$DUMPS"/always-signal-*Z.pb.gz | wc -l)" = 1 ] || fail "a signal within the cooldown wrote a second dump"

# 2. By hand, whatever the cooldown.
p=$("$FLIGHTREC" dump --session always --window 3s 2>"$T/err") || fail "dump --session failed: $(cat "$T/err")"
[ -f "$p" ] && [ -f "${p%.pb.gz}.json" ] || fail "dump --session printed $p, which is not a dump"
case "$p" in "$DUMPS"/always-manual-*) ;; *) fail "manual dump named $p" ;; esac
valid "$p"
"$FLIGHTREC" dump --session nosuch 2>"$T/err" && fail "dump of an unknown session succeeded"
grep -q 'no session named "nosuch"' "$T/err" || fail "unclear error for an unknown session: $(cat "$T/err")"

# 3. A target process that exits badly; one that exits well does not fire.
"$T/$CRASHY_NAME" -c 'exit 0'
sleep 2
ls "$DUMPS"/crashy-exit-*.pb.gz >/dev/null 2>&1 && fail "an exit with status 0 fired the exit trigger"
"$T/$CRASHY_NAME" -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3' &
CRASHY=$!
wait "$CRASHY"
f=$(wait_dump "crashy-exit-*" 10) || fail "an exit with status 3 wrote no dump: $(tail -5 "$T/daemon.log")"
valid "$f"
j=${f%.pb.gz}.json
[ "$(sidecar "$j" 'd["pid"]')" = "$CRASHY" ] || fail "the exit dump names pid $(sidecar "$j" 'd.get("pid")'), not $CRASHY"
sidecar "$j" 'd["reason"]' | grep -q "exited with status 3" || fail "the exit reason is unclear: $(cat "$j")"
[ "$(sidecar "$j" 'd["t1_ns"] - d["t0_ns"]')" = 11000000000 ] || fail "the exit dump's window is not 10s + 1s: $(cat "$j")"
"$GO" tool pprof -symbolize=none -traces "$f" 2>/dev/null | grep -q "comm:  *$CRASHY_NAME" ||
	fail "the exit dump holds no samples of crashy (the seconds before its death)"
"$GO" tool pprof -symbolize=none -traces "$f" 2>/dev/null | grep -v "comm:  *$CRASHY_NAME" | grep -q 'comm:' &&
	fail "the exit dump holds processes other than its targets"
"$T/$CRASHY_NAME" -c 'kill -SEGV $$' &
SEGV=$!
wait "$SEGV"
try_until 10 '[ "$(ls "$DUMPS"/crashy-exit-*.json 2>/dev/null | wc -l)" -ge 2 ]'
grep -l "killed by SIGSEGV" "$DUMPS"/crashy-exit-*.json >/dev/null || fail "a death by SIGSEGV fired no dump"

# 4. CPU above 30% of the machine for 2 s, by the "hot" processes only.
"$T/$HOT_NAME" 6 2 0 >/dev/null &
HOT=$!
f=$(wait_dump "hot-cpu_above-*" 12) || fail "cpu_above wrote no dump: $(tail -5 "$T/daemon.log")"
valid "$f"
sidecar "${f%.pb.gz}.json" 'd["reason"]' | grep -q 'cpu' || fail "the cpu reason is unclear"
"$GO" tool pprof -symbolize=none -traces "$f" 2>/dev/null | grep 'comm:' | grep -vq "comm:  *$HOT_NAME" &&
	fail "the cpu dump holds processes other than hot"
wait "$HOT"

# 5. Retention: at most 4 dumps, the newest.
for i in 1 2 3; do "$FLIGHTREC" dump --session always --window 1s >/dev/null || fail "manual dump $i failed"; sleep 0.05; done
n=$(ls "$DUMPS"/*.pb.gz | grep -vc '\.goroutines\.pb\.gz$')
[ "$n" = 4 ] || fail "dumps.keep is 4 but $n dumps are kept"
[ "$(ls "$DUMPS"/*.json | wc -l)" = 4 ] || fail "sidecars were not removed with their dumps"
ls "$DUMPS"/always-signal-*.pb.gz >/dev/null 2>&1 && fail "the oldest dump was not the one removed"

"$FLIGHTREC" sessions >"$T/sessions" || fail "sessions failed"
grep -Eq '^always .* [0-9]{4}-[0-9]{2}-[0-9]{2}T' "$T/sessions" || fail "sessions does not show the last dump: $(cat "$T/sessions")"
"$FLIGHTREC" sessions --json >"$T/sessions.json"
[ "$(sidecar "$T/sessions.json" 'd["sessions"][0]["suppressed"]')" -ge 1 ] ||
	fail "the suppressed signal is not counted: $(cat "$T/sessions.json")"
daemon_alive || fail "the daemon died"
stop_daemon
echo PASS
