#!/bin/bash
# The CLI under pressure (issue 14), one named case each, against a real
# recorder sampling a known workload:
#   relative_times    --from -3s --to -1s, --window 1m30s, clock times in
#                     the local zone printed back in UTC, @UNIX, errors
#   empty_filter      --comm/--pid/--cgroup/--label matching nothing: named
#                     by the recorder, exit 1, no file; --allow-empty: 0
#   dump_empty_filter the same from a ring read offline
#   top_empty_filter  top --window with filters matching nothing, or a
#                     window outside the ring: said as attach says, exit
#                     1, no table; --allow-empty: 0
#   window_outside    a window before the ring's first sample: said, exit 1
#   real_span         wrote ...: the samples' span, not the asked window;
#                     no raw nanoseconds in any duration printed
#   stdout_output     -o - writes the profile on stdout, messages on stderr
#   default_names     two attaches in one second, and names taken already:
#                     no file replaced
#   stall_in_window   an ingest stall inside the window (the ingest thread
#                     frozen with ptrace, then thawed): warned, exit 1; top
#                     warns the same, shows its table and exits 1
. "$(dirname "$0")/lib.sh"
exact_losses
need_root_perf

FREEZE=$BUILD/tests/integration/freeze_thread
start_daemon --hz 199
"$BURN" 120 1 >/dev/null 2>&1 &
BURN_PID=$!
# A second busy process with a name of its own, for filters that each
# match but not together.
cp "$BURN" "$T/burnother"
"$T/burnother" 120 1 >/dev/null 2>&1 &
sleep 3
mkdir "$T/w"
cd "$T/w" || fail "no work directory"

case_() { echo "case $1" >&2; }

# attach_rc WANT ARGS...: runs attach, its stderr in $T/err, and checks
# its exit status.
attach_rc() {
	local want=$1
	shift
	"$FLIGHTREC" attach "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	[ "$rc" = "$want" ] || fail "attach $* exited $rc, want $want: $(cat "$T/err")"
}

case_ relative_times
attach_rc 0 --from -3s --to -1s -o rel.pb.gz
grep -Eq '^flightrec: wrote rel.pb.gz: [0-9]+ samples, [0-9]+ stacks, spanning [0-9.]+s \(window 2s\)' "$T/err" ||
	fail "relative window: $(cat "$T/err")"
grep -Eq '^flightrec: window [0-9]{2}:[0-9]{2}:[0-9]{2}–[0-9]{2}:[0-9]{2}:[0-9]{2} UTC \(2s\)$' "$T/err" ||
	fail "the window is not printed back in UTC: $(cat "$T/err")"
attach_rc 0 --window 1m30s -o compound.pb.gz
grep -q 'window 1m30s' "$T/err" || fail "--window 1m30s: $(cat "$T/err")"
# A clock time in the local zone (a zone with no tzdata needed), printed
# back as the same instant in UTC.
epoch=$(($(date +%s) - 4))
start_local=$(TZ=XYZ-5 date -d @$epoch +%H:%M:%S)
start_utc=$(date -u -d @$epoch +%H:%M:%S)
TZ=XYZ-5 "$FLIGHTREC" attach --from "$start_local" -o clock.pb.gz >"$T/out" 2>"$T/err" ||
	fail "attach --from $start_local (local) failed: $(cat "$T/err")"
grep -q "^flightrec: window $start_utc–" "$T/err" ||
	fail "local $start_local (UTC+5) is not printed back as $start_utc UTC: $(cat "$T/err")"
now=$(date +%s)
attach_rc 0 --from @$((now - 4)) --to @$((now - 2)) -o at.pb.gz
grep -q 'window 2s' "$T/err" || fail "--from @UNIX: $(cat "$T/err")"
# threads --at and dump --at take the same forms.
"$FLIGHTREC" threads --pid "$BURN_PID" --at -1s >"$T/out" 2>"$T/err" ||
	fail "threads --at -1s: $(cat "$T/err")"
grep -q "thread" "$T/out" || fail "threads --at -1s printed: $(cat "$T/out")"
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BURN_PID" --at "@$(date +%s)" >"$T/out" 2>"$T/err" ||
	fail "dump --threads --at @UNIX: $(cat "$T/err")"
"$FLIGHTREC" threads --pid "$BURN_PID" --at 25:00 >"$T/out" 2>"$T/err" && fail "threads --at 25:00 succeeded"
grep -q '^flightrec threads: --at: "25:00" is not a time (hours go from 00 to 23)' "$T/err" ||
	fail "threads --at 25:00: $(cat "$T/err")"
attach_rc 2 --from 13:61 -o bad.pb.gz
grep -q '^flightrec attach: --from: "13:61" is not a time (minutes go from 00 to 59); expected -10m, 13:05' "$T/err" ||
	fail "bad clock time: $(cat "$T/err")"
attach_rc 2 --window 30m1h -o bad.pb.gz
grep -q -- '--window: "30m1h" is not a duration' "$T/err" || fail "bad compound: $(cat "$T/err")"
attach_rc 2 --from -1m --to -2m -o bad.pb.gz
grep -q -- '--to (.*) must be later than --from' "$T/err" || fail "inverted window: $(cat "$T/err")"
[ ! -e bad.pb.gz ] || fail "a refused attach wrote a file"

case_ empty_filter
attach_rc 1 --window 5s --comm nosuchcommand -o e.pb.gz
grep -Eq '^flightrec: --comm nosuchcommand matched no samples in the window \([0-9]+ processes recorded there\)$' "$T/err" ||
	fail "empty --comm: $(cat "$T/err")"
[ ! -e e.pb.gz ] || fail "an empty profile was written without --allow-empty"
# A pid that never ran (beyond pid_max) and a cgroup nothing is in.
attach_rc 1 --window 5s --pid 2147483000 --cgroup /no/such/cgroup -o e.pb.gz
grep -Eq -- '--pid 2147483000 and --cgroup /no/such/cgroup matched no samples in the window \([0-9]+ processes recorded there\); no process 2147483000 is running$' "$T/err" ||
	fail "empty --pid and --cgroup: $(cat "$T/err")"
attach_rc 1 --window 5s --label nosuchkey=x -o e.pb.gz
grep -q -- '--label nosuchkey=x matched no samples' "$T/err" || fail "empty --label: $(cat "$T/err")"
# Each matches alone, not together.
attach_rc 1 --window 5s --pid "$BURN_PID" --comm burnother -o e.pb.gz
grep -q -- "--pid $BURN_PID --comm burnother matched no samples together" "$T/err" ||
	fail "combined filters: $(cat "$T/err")"
attach_rc 0 --window 5s --comm nosuchcommand --allow-empty -o e.pb.gz
grep -q 'warning: --comm nosuchcommand matched no samples' "$T/err" || fail "--allow-empty hides the warning"
grep -q '^flightrec: wrote e.pb.gz: 0 samples, 0 stacks (window 5s)' "$T/err" || fail "--allow-empty: $(cat "$T/err")"
[ -s e.pb.gz ] || fail "--allow-empty wrote no file"
# A filter that matches is no warning.
attach_rc 0 --window 5s --pid "$BURN_PID" -o ok.pb.gz
grep -q 'matched no samples' "$T/err" && fail "a matching filter warned: $(cat "$T/err")"

case_ top_empty_filter
"$FLIGHTREC" top --window 5s --comm nosuchcommand >"$T/out" 2>"$T/err" && fail "top with an empty --comm succeeded"
grep -Eq '^flightrec: --comm nosuchcommand matched no samples in the window \([0-9]+ processes recorded there\)$' "$T/err" ||
	fail "top, empty --comm: $(cat "$T/err")"
[ -s "$T/out" ] && fail "top printed a table of nothing: $(cat "$T/out")"
"$FLIGHTREC" top --window 5s --pid 2147483000 >"$T/out" 2>"$T/err" && fail "top with an empty --pid succeeded"
grep -q -- '--pid 2147483000 matched no samples in the window .*; no process 2147483000 is running$' "$T/err" ||
	fail "top, empty --pid: $(cat "$T/err")"
"$FLIGHTREC" top --window 5s --cgroup /no/such/cgroup >"$T/out" 2>"$T/err" && fail "top with an empty --cgroup succeeded"
grep -q -- '--cgroup /no/such/cgroup matched no samples' "$T/err" || fail "top, empty --cgroup: $(cat "$T/err")"
"$FLIGHTREC" top --window 5s --label nosuchkey=x >"$T/out" 2>"$T/err" && fail "top with an empty --label succeeded"
grep -q -- '--label nosuchkey=x matched no samples' "$T/err" || fail "top, empty --label: $(cat "$T/err")"
"$FLIGHTREC" top --window 5s --comm nosuchcommand --allow-empty >"$T/out" 2>"$T/err" ||
	fail "top --allow-empty failed: $(cat "$T/err")"
grep -q '^flightrec: warning: --comm nosuchcommand matched no samples' "$T/err" || fail "top --allow-empty: $(cat "$T/err")"
now=$(date +%s)
"$FLIGHTREC" top --from @$((now - 7200)) --to @$((now - 7140)) >"$T/out" 2>"$T/err" &&
	fail "top of a window before the ring succeeded"
grep -q "^flightrec: the window .* is before the ring's first sample" "$T/err" || fail "top, window outside: $(cat "$T/err")"
# A filter that matches shows its table and no warning.
"$FLIGHTREC" top --window 5s --pid "$BURN_PID" -n 3 >"$T/out" 2>"$T/err" || fail "top --pid failed: $(cat "$T/err")"
grep -q 'matched no samples' "$T/err" && fail "a matching filter warned: $(cat "$T/err")"
grep -q burn "$T/out" || fail "top --pid printed no table: $(cat "$T/out")"

case_ window_outside
now=$(date +%s)
attach_rc 1 --from @$((now - 7200)) --to @$((now - 7140)) -o old.pb.gz
# Times alone, or with their date when the window is on another day than
# the ring (a suite run at 00:24 UTC asked for 22:24 the day before)
at='([0-9]{4}-[0-9]{2}-[0-9]{2} )?[0-9:]+'
grep -Eq "^flightrec: the window $at–$at UTC \(1m\) is before the ring's first sample at $at UTC \(the ring holds $at–$at UTC" "$T/err" ||
	fail "window before the ring: $(cat "$T/err")"
[ ! -e old.pb.gz ] || fail "a window outside the ring wrote a file"
# Accepted empty, it still never says "the last 0s".
attach_rc 0 --from @$((now - 7200)) --to @$((now - 7140)) --allow-empty -o old.pb.gz
grep -q "warning: the window .* is before the ring's first sample" "$T/err" || fail "--allow-empty: $(cat "$T/err")"
grep -q 'the last 0s' "$T/err" && fail "a window outside the ring is 'the last 0s': $(cat "$T/err")"

case_ real_span
# The ring is seconds old: a 1h window holds seconds of samples, and says so.
attach_rc 0 --window 1h -o span.pb.gz
line=$(grep '^flightrec: wrote span.pb.gz' "$T/err")
[[ $line =~ wrote\ span.pb.gz:\ [0-9]+\ samples,\ [0-9]+\ stacks,\ spanning\ ([0-9.]+)s\ \(window\ 1h,\ the\ ring\ starts\ [0-9m.]+s?\ in\) ]] ||
	fail "wrote line: $line"
span=${BASH_REMATCH[1]}
awk -v s="$span" 'BEGIN { exit !(s > 1 && s < 60) }' || fail "span $span s for a ring seconds old"
"$FLIGHTREC" status >"$T/status" 2>&1 || fail "status failed"
"$FLIGHTREC" dump --ring "$RING" --info >"$T/info" 2>&1 || fail "dump --info failed"
if grep -Eh '[0-9]{7,} ?ns' "$T/status" "$T/info" "$T/err"; then
	fail "a duration in raw nanoseconds"
fi

case_ stdout_output
"$FLIGHTREC" attach --window 2s -o - >"$T/stdout.pb.gz" 2>"$T/err" || fail "-o - failed: $(cat "$T/err")"
gzip -t "$T/stdout.pb.gz" || fail "stdout is not the gzip'ed profile"
grep -q '^flightrec: wrote standard output: ' "$T/err" || fail "-o -: $(cat "$T/err")"
"$FLIGHTREC" attach --window 2s --format folded -o - 2>"$T/err" | grep -q ' [0-9]*$' ||
	fail "folded on stdout: $(cat "$T/err")"
"$FLIGHTREC" dump --ring "$RING" --window 2s -o - 2>"$T/err" | gzip -t || fail "dump -o -: $(cat "$T/err")"
"$FLIGHTREC" threads --pid "$BURN_PID" -o - 2>"$T/err" | gzip -t || fail "threads -o -: $(cat "$T/err")"
grep -q '^flightrec: standard output: [0-9]* threads of 1 processes' "$T/err" || fail "threads -o -: $(cat "$T/err")"
ls flightrec-*.pb.gz >/dev/null 2>&1 && fail "-o - also wrote a file"

case_ default_names
# Every name of the next three seconds taken already (empty files): the
# attach picks NAME-1, replacing none.
host=$(hostname | tr '/ ' '__')
[ -n "$host" ] || host=host
mkdir taken && cd taken || fail "mkdir"
# Taken until at least two seconds after they are all made (a slow
# machine makes them again, further ahead).
for _ in 1 2 3; do
	base=$(date +%s)
	for s in 0 1 2 3 4; do
		stamp=$(date -u -d @$((base + s)) +%Y%m%dT%H%M%S)
		for ms in $(seq -w 0 999); do
			: >"flightrec-$host-$stamp.${ms}Z.pb.gz"
		done
	done
	[ "$(date +%s)" -le $((base + 2)) ] && break
done
before=$(ls | wc -l)
"$FLIGHTREC" attach --window 1s >"$T/out" 2>"$T/err" || fail "attach to a default name failed: $(cat "$T/err")"
name=$(cat "$T/out")
[ -s "$name" ] || fail "the printed name $name is not the profile"
[[ $name == *-1.pb.gz ]] || fail "a taken name was not avoided: $name"
[ "$(find . -name 'flightrec-*' -size +0 | wc -l)" = 1 ] || fail "a taken file was replaced"
[ "$(ls | wc -l)" = $((before + 1)) ] || fail "not one new file"
cd .. || fail "cd"
a=$("$FLIGHTREC" attach --window 1s 2>/dev/null) && b=$("$FLIGHTREC" attach --window 1s 2>/dev/null) ||
	fail "default-name attaches failed"
[ "$a" != "$b" ] && [ -s "$a" ] && [ -s "$b" ] || fail "two attaches in a row: $a and $b"

case_ stall_in_window
"$FREEZE" "$DAEMON_PID" 6 >"$T/freeze.out" 2>"$T/freeze.err" || {
	grep -q frozen "$T/freeze.out" || skip "cannot freeze a thread with ptrace here: $(cat "$T/freeze.err")"
	fail "freeze_thread failed: $(cat "$T/freeze.err")"
}
sleep 1
attach_rc 1 --window 20s -o stalled.pb.gz
grep -Eq '^flightrec: warning: the recorder was held up [0-9:]+–[0-9:]+ UTC \([0-9.]+s\) within the window' "$T/err" ||
	fail "no stall warning: $(cat "$T/err")"
[ -s stalled.pb.gz ] || fail "the profile of a stalled window was not kept"
# top of the same window warns the same way, still shows its table, and
# exits 1 (--allow-loss: 0).
"$FLIGHTREC" top --window 20s -n 3 >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "top of a stalled window did not exit 1: $(cat "$T/err")"
"$FLIGHTREC" top --window 20s -n 3 --allow-loss >/dev/null 2>&1 || fail "top --allow-loss of a stalled window failed"
grep -Eq '^flightrec: warning: the recorder was held up [0-9:]+–[0-9:]+ UTC \([0-9.]+s\) within the window' "$T/err" ||
	fail "top gave no stall warning: $(cat "$T/err")"
grep -q 'flat%' "$T/out" || fail "top of a stalled window printed no table: $(cat "$T/out")"
# A window after the stall is clean.
sleep 1
attach_rc 0 --window 1s -o after.pb.gz
grep -q 'held up' "$T/err" && fail "a window after the stall warns: $(cat "$T/err")"

stop_daemon
echo "cli under pressure: all cases passed"
