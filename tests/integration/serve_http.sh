#!/bin/bash
# flightrec serve's hardening at the HTTP level (serve_http.py, one named
# case each): an oversized request, a Host that is not this server (DNS
# rebinding), directory traversal, methods other than GET, malformed
# queries, and slow clients (a read deadline per connection, a limit on
# connections). Also: a non-loopback address needs --allow-remote. No
# recorder is needed; none of these requests reaches one.
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

python3 "$HERE/serve_http.py" 127.0.0.1 "$port" 2 || fail "an HTTP case failed"
kill -0 "$SERVE_PID" || fail "serve died"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited with $? on SIGTERM"
