#!/bin/bash
# flightrec serve's hardening at the HTTP level (serve_http.py, one named
# case each): an oversized request, a Host that is not this server (DNS
# rebinding), directory traversal, methods other than GET, malformed
# queries, slow clients (a read deadline per connection, a limit on
# connections), and the page's token (none, wrong, in the query, the
# cookie, a Bearer header: serve_rights.sh has the other users). Also: a
# non-loopback address needs --allow-remote; --token-file; the token is in
# serve's first line of output and nowhere else of it, nor in its command
# line or environment. No recorder is needed; none of these requests
# reaches one.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "needs python3 for the HTTP client"
HERE=$(cd "$(dirname "$0")" && pwd)

# case no_remote: a non-loopback address is refused without the flag.
rc=0
"$FLIGHTREC" serve --listen 0.0.0.0:0 >"$T/remote.out" 2>"$T/remote.err" || rc=$?
[ "$rc" = 2 ] || fail "serve on 0.0.0.0 without --allow-remote exited $rc"
grep -q -- --allow-remote "$T/remote.err" || fail "the refusal does not name --allow-remote"
echo "case no_remote: ok"

"$FLIGHTREC" serve --listen 127.0.0.1:0 --read-timeout 2s >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url
port=${url##*:}
port=${port%/}
[ -n "$port" ] || fail "serve printed no address: $(cat "$T/serve.err")"

case $page_url in
http://127.0.0.1:"$port"/\?token=*) ;;
*) fail "the address has no token: $page_url" ;;
esac
[ "${#token}" = 64 ] && [ -z "${token//[0-9a-f]/}" ] || fail "the token is not 256 bits of hex: $token"

python3 "$HERE/serve_http.py" 127.0.0.1 "$port" 2 || fail "an HTTP case failed"
kill -0 "$SERVE_PID" || fail "serve died"

# case token_private: the token is in the first line of stdout only: not in
# serve's errors (after every refusal above), its command line, its
# environment.
tr '\0' '\n' </proc/$SERVE_PID/cmdline | grep -qF "$token" && fail "the token is in serve's command line"
tr '\0' '\n' </proc/$SERVE_PID/environ | grep -qF "$token" && fail "the token is in serve's environment"
grep -qF "$token" "$T/serve.err" && fail "the token is in serve's errors: $(cat "$T/serve.err")"
[ "$(grep -cF "$token" "$T/serve.out")" = 1 ] || fail "the token is printed more than once"
echo "case token_private: ok"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"

# case token_file: a token of the caller's, in a file only they may read;
# the address printed then leaves it out.
tok=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$tok" >"$T/token"
chmod 0644 "$T/token"
rc=0
"$FLIGHTREC" serve --listen 127.0.0.1:0 --token-file "$T/token" >"$T/tf.out" 2>"$T/tf.err" || rc=$?
[ "$rc" = 2 ] && grep -q "chmod 600" "$T/tf.err" || fail "a token file others may read was taken ($rc): $(cat "$T/tf.err")"
chmod 0600 "$T/token"
printf 'short\n' >"$T/short"
chmod 0600 "$T/short"
rc=0
"$FLIGHTREC" serve --listen 127.0.0.1:0 --token-file "$T/short" >"$T/tf.out" 2>"$T/tf.err" || rc=$?
[ "$rc" = 2 ] && grep -q "32 to 256" "$T/tf.err" || fail "a short token was taken ($rc): $(cat "$T/tf.err")"
# A new serve.out: wait_serve_url would take the first serve's address, still
# in the file until the shell of the new one truncates it.
rm -f "$T/serve.out"
"$FLIGHTREC" serve --listen 127.0.0.1:0 --token-file "$T/token" >"$T/serve.out" 2>"$T/serve.err" &
SERVE_PID=$!
wait_serve_url
[ -z "$token" ] && [ "$page_url" = "$url" ] || fail "the address holds the token of the file: $page_url"
port=${url##*:}
port=${port%/}
FR_SERVE_TOKEN=$tok python3 "$HERE/serve_http.py" 127.0.0.1 "$port" 2 no_token token ||
	fail "the token of the file is not the page's"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
echo "case token_file: ok"
