#!/bin/bash
# Who may read a profile: `flightrec attach` and `dump --ring` create their
# output with the caller's umask (a profile names the commands, threads and
# files of every user); the recorder's dumps and sidecars are 0600 whatever
# its umask, or dumps.mode when configured.
. "$(dirname "$0")/lib.sh"
need_root_perf

mode_of() { stat -c %a "$1"; }

DUMPS=$T/dumps
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$DUMPS"},
 "sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
# A permissive umask in the recorder must not make dumps readable.
(umask 000 && exec "$FLIGHTRECD" --ring "$RING" --socket "$SOCK" --config "$T/config.json" \
	>>"$T/daemon.log" 2>&1) &
DAEMON_PID=$!
wait_answering
"$BURN" 1 1 0 >/dev/null

# attach: 077 -> 0600, 022 -> 0644, 027 -> 0640.
for case in 077:600 022:644 027:640; do
	u=${case%%:*} want=${case##*:}
	(umask "$u" && "$FLIGHTREC" attach --window 1s -o "$T/attach-$u.pb.gz") 2>"$T/err" ||
		fail "attach with umask $u failed: $(cat "$T/err")"
	[ "$(mode_of "$T/attach-$u.pb.gz")" = "$want" ] ||
		fail "attach with umask $u wrote mode $(mode_of "$T/attach-$u.pb.gz"), want $want"
done
# Replacing an existing file does not keep its looser mode.
(umask 077 && "$FLIGHTREC" attach --window 1s -o "$T/attach-022.pb.gz") 2>"$T/err" ||
	fail "attach over an existing file failed: $(cat "$T/err")"
[ "$(mode_of "$T/attach-022.pb.gz")" = 600 ] || fail "attach over a 0644 file with umask 077 left it $(mode_of "$T/attach-022.pb.gz")"

# dump --ring writes the same way.
(umask 077 && "$FLIGHTREC" dump --ring "$RING" --window 1s -o "$T/ring-077.pb.gz") 2>"$T/err" ||
	fail "dump --ring failed: $(cat "$T/err")"
[ "$(mode_of "$T/ring-077.pb.gz")" = 600 ] || fail "dump --ring with umask 077 wrote mode $(mode_of "$T/ring-077.pb.gz")"

# The recorder's dumps: 0600 by default, the profile and its sidecar.
p=$("$FLIGHTREC" dump --session all --window 1s 2>"$T/err") || fail "dump --session failed: $(cat "$T/err")"
[ "$(mode_of "$p")" = 600 ] || fail "a dump is mode $(mode_of "$p"), want 600"
[ "$(mode_of "${p%.pb.gz}.json")" = 600 ] || fail "a dump's sidecar is mode $(mode_of "${p%.pb.gz}.json"), want 600"
[ "$(mode_of "$DUMPS")" = 700 ] || fail "the dumps directory was created mode $(mode_of "$DUMPS"), want 700"

# dumps.mode "0640", applied on reload.
sed -i 's/"dir": "[^"]*"/&, "mode": "0640"/' "$T/config.json"
kill -HUP "$DAEMON_PID"
try_until 10 'grep -q "reload" "$T/daemon.log"'
try_until 5 'p=$("$FLIGHTREC" dump --session all --window 1s 2>"$T/err") || fail "dump --session failed: $(cat "$T/err")"
	[ "$(mode_of "$p")" = 640 ]'
[ "$(mode_of "$p")" = 640 ] || fail "with dumps.mode 0640 a dump is mode $(mode_of "$p")"
[ "$(mode_of "${p%.pb.gz}.json")" = 640 ] || fail "with dumps.mode 0640 a sidecar is mode $(mode_of "${p%.pb.gz}.json")"

# A mode that lets others write is refused at reload, and changes nothing.
sed -i 's/"mode": "0640"/"mode": "0666"/' "$T/config.json"
kill -HUP "$DAEMON_PID"
try_until 10 'grep -q "dumps.mode: must be an octal string" "$T/daemon.log"'
grep -q 'dumps.mode: must be an octal string' "$T/daemon.log" || fail "a dumps.mode of 0666 was not refused clearly"
p=$("$FLIGHTREC" dump --session all --window 1s 2>"$T/err") || fail "dump --session failed: $(cat "$T/err")"
[ "$(mode_of "$p")" = 640 ] || fail "a refused reload changed the dumps' mode to $(mode_of "$p")"

daemon_alive || fail "the daemon died"
stop_daemon
