#!/bin/bash
# flightrec reload and flightrec trigger over the socket, instead of
# signals: a changed file is reloaded and status shows the new rate, the
# reply says what changed; a bad file is refused with its JSON path while
# the recorder keeps its configuration and keeps recording; a user who is
# not root (nor the recorder's user) may not reload, even in the admin
# group; trigger writes the session's dump with the reason given, for
# root and for a session's "users", and is refused to others.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_test_users
U=frrel$$
A=frrela$$
G=frrelg$$
GA=frrelga$$
add_test_group "$G"
add_test_group "$GA"
add_test_user "$U" "$G" -M
add_test_user "$A" "$G,$GA" -M
as() { local who=$1; shift; runuser -u "$who" -- "$@"; }

write_config() { # RATE [RING_SIZE]
	cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G", "admin_group": "$GA"},
 "ring": {"size": "${2:-256MiB}"},
 "dumps": {"dir": "$T/dumps"},
 "sessions": [
  {"name": "ops", "events": [{"event": "cpu", "hz": $1}]},
  {"name": "team", "users": ["$U"], "events": [{"event": "cpu", "hz": 49}]}
 ]}
JSON
}
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
cpu_hz() { "$FLIGHTREC" status | sed -n 's/^event: *cpu at \([0-9]*\) Hz.*/\1/p'; }
samples() { "$FLIGHTREC" status --json | json 'd["samples"]'; }

write_config 99
start_daemon --config "$T/config.json"
"$BURN" 60 1 >/dev/null 2>&1 &
[ "$(cpu_hz)" = 99 ] || fail "starts at $(cpu_hz) Hz, want 99"

# Unchanged: nothing to say.
"$FLIGHTREC" reload >"$T/out" 2>"$T/err" || fail "reload of an unchanged file failed: $(cat "$T/err")"
grep -q "^reloaded $T/config.json: nothing changed$" "$T/out" || fail "unchanged reload: $(cat "$T/out")"

# A new rate: applied at once, and the reply names it.
write_config 199
"$FLIGHTREC" reload >"$T/out" 2>"$T/err" || fail "reload failed: $(cat "$T/err")"
grep -q "^  sessions\[ops\]\.events\[0\]\.hz: 99 -> 199$" "$T/out" ||
	fail "the reply does not say what changed: $(cat "$T/out")"
[ "$(cpu_hz)" = 199 ] || fail "status shows $(cpu_hz) Hz after the reload, want 199"
"$FLIGHTREC" status | grep -q "event:    cpu at 199 Hz" || fail "status text still shows the old rate"
"$FLIGHTREC" reload --json | json 'd["ok"] and d["config"]' >/dev/null || fail "reload --json"
# What a reload cannot apply is said to wait for the next start.
write_config 199 128MiB
"$FLIGHTREC" reload >"$T/out" 2>"$T/err" || fail "reload failed: $(cat "$T/err")"
grep -qx '  ring.size: "256MiB" -> "128MiB" (at the next start)' "$T/out" ||
	fail "a ring size change is not said to wait: $(cat "$T/out")"
write_config 199

# A bad file: refused with its JSON path, exit 1; the recorder keeps 199 Hz
# and goes on recording.
sed -i 's/"hz": 199/"hz": 0/' "$T/config.json"
"$FLIGHTREC" reload >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "a bad file's reload exited $rc, want 1"
grep -q 'rejected; the running configuration stays: .*sessions\[0\]\.events\[0\]\.hz: must be 1\.\.' \
	"$T/err" || fail "the refusal does not name the JSON path: $(cat "$T/err")"
[ "$(cpu_hz)" = 199 ] || fail "a refused reload changed the rate to $(cpu_hz)"
before=$(samples)
try_until 10 '[ "$(samples)" -gt "$before" ]'
after=$(samples)
[ "$after" -gt "$before" ] || fail "the recorder stopped recording after a refused reload ($before -> $after)"
"$FLIGHTREC" status --json | json 'd["reloads_rejected"]' | grep -qx 1 || fail "the refusal is not counted"

# Who may reload: not a user of the socket's group, not even the admin group.
for who in "$U" "$A"; do
	as "$who" "$FLIGHTREC" reload >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 1 ] || fail "$who's reload exited $rc, want 1"
	grep -q "only root and the recorder's own user (uid 0) may reload" "$T/err" ||
		fail "$who's refusal is not explained: $(cat "$T/err")"
done
write_config 199

# trigger: root, with a reason and a window.
"$FLIGHTREC" trigger ops --reason "INC-42 p99 over 2s" --window 5s >"$T/path" 2>"$T/err" ||
	fail "trigger failed: $(cat "$T/err")"
dump=$(cat "$T/path")
[ -s "$dump" ] || fail "trigger printed \"$dump\", which is no dump"
grep -Eq "^flightrec: session ops: wrote the window from .* to .* \(5(\.0)?s\)$" "$T/err" ||
	fail "trigger does not say the window: $(cat "$T/err")"
sidecar=${dump%.pb.gz}.json
[ "$(json 'd["reason"]' <"$sidecar")" = "INC-42 p99 over 2s" ] || fail "the reason is not in $sidecar"
[ "$(json 'd["t1_ns"] - d["t0_ns"]' <"$sidecar")" = 5000000000 ] || fail "the window is not 5s"
"$GO" version >/dev/null 2>&1 && { "$GO" tool pprof -top "$dump" >/dev/null 2>&1 ||
	fail "go tool pprof cannot read the dump"; }

# trigger: a session's user may fire it, not another session; bad input.
as "$U" "$FLIGHTREC" trigger team >"$T/path" 2>"$T/err" || fail "a session's user was refused: $(cat "$T/err")"
[ -s "$(cat "$T/path")" ] || fail "the user's trigger wrote no dump"
as "$U" "$FLIGHTREC" trigger ops >/dev/null 2>"$T/err" && fail "a user triggered a session not theirs"
grep -q "may not trigger session \"ops\"" "$T/err" || fail "the refusal is not explained: $(cat "$T/err")"
"$FLIGHTREC" trigger nosuch >/dev/null 2>"$T/err" && fail "a session that does not exist fired"
grep -q 'no session named "nosuch"' "$T/err" || fail "unknown session: $(cat "$T/err")"
"$FLIGHTREC" trigger ops --reason "$(printf 'two\nlines')" >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "a reason with a newline was accepted"

# A recorder on its embedded default has no file to reload, and says so.
stop_daemon
start_daemon
"$FLIGHTREC" reload >/dev/null 2>"$T/err" && fail "a recorder without a file reloaded"
grep -q "embedded default configuration; there is no file to reload" "$T/err" ||
	fail "no file to reload is not explained: $(cat "$T/err")"
exit 0
