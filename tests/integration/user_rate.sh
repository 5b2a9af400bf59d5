#!/bin/bash
# A following client that is not root may raise the recorder only to
# limits.user_max_rate_hz, so that it cannot wrap the ring's history away;
# root keeps limits.max_rate_hz. A higher rate is capped, with a warning
# that names the limit.
. "$(dirname "$0")/lib.sh"
need_root_perf
command -v setpriv >/dev/null || skip "needs setpriv (util-linux) to run a client as nobody"

printf '{"limits": {"max_rate_hz": 5000, "user_max_rate_hz": 500}}\n' >"$T/config.json"
start_daemon --config "$T/config.json"
# Let nobody reach the socket (as a deployment granting socket access to
# other users would) and write its profiles.
chmod 0755 "$T"
chmod 0666 "$SOCK"
mkdir -m 0777 "$T/out"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

as_nobody "$FLIGHTREC" attach --follow --count 1 --window 1s --hz 999 -o "$T/out" \
	>"$T/out.txt" 2>"$T/err.txt" || fail "a user's follow above its limit failed: $(cat "$T/err.txt")"
grep -q "limits.user_max_rate_hz.*500 Hz" "$T/err.txt" ||
	fail "no warning that the user's rate was capped: $(cat "$T/err.txt")"

as_nobody "$FLIGHTREC" attach --follow --count 1 --window 1s --hz 500 -o "$T/out" \
	>"$T/out.txt" 2>"$T/err.txt" || fail "a user's follow at its limit failed: $(cat "$T/err.txt")"
[ "$(wc -l <"$T/out.txt")" = 1 ] || fail "the user's follow wrote no profile"

# Root may go up to limits.max_rate_hz.
"$FLIGHTREC" attach --follow --count 1 --window 1s --hz 999 -o "$T/out" \
	>"$T/out.txt" 2>"$T/err.txt" || fail "root's follow at 999 Hz failed: $(cat "$T/err.txt")"
grep -q "user_max_rate_hz" "$T/err.txt" && fail "root's follow was capped: $(cat "$T/err.txt")"
grep -q "following cpu at 999 Hz" "$T/err.txt" ||
	fail "root's follow did not run at 999 Hz: $(cat "$T/err.txt")"
daemon_alive || fail "the daemon died"
stop_daemon
echo "user_rate: ok"
