#!/bin/bash
# Bad input gets a one-line error naming the problem and a non-zero exit,
# writes nothing, and leaves the daemon recording.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

# expect_error STATUS PATTERN CMD...: CMD exits with STATUS and prints one
# line on stderr matching PATTERN.
expect_error() {
	local want=$1 pattern=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	[ "$got" = "$want" ] || fail "\"$*\" exited $got, expected $want; stderr: $(cat "$T/err")"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "\"$*\" printed $(wc -l <"$T/err") lines on stderr, expected one: $(cat "$T/err")"
	grep -Eq -- "$pattern" "$T/err" || fail "\"$*\" said \"$(cat "$T/err")\", expected /$pattern/"
}

mkdir -p "$T/work"
cd "$T/work"

# No daemon yet.
expect_error 1 "^flightrec: no recorder listening at $SOCK \(is flightrecd running\?\)$" \
	"$FLIGHTREC" attach --window 10s -o x.pb.gz
[ ! -e x.pb.gz ] || fail "a failed attach left x.pb.gz behind"

# A file that is not a ring is refused and left untouched.
head -c 1048576 /dev/urandom >"$T/notring"
sum=$(sha256sum <"$T/notring")
"$FLIGHTRECD" --ring "$T/notring" --socket "$T/other.sock" >"$T/out" 2>"$T/err" &
pid=$!
try_until 5 '! kill -0 $pid 2>/dev/null'
if kill -0 $pid 2>/dev/null; then kill -9 $pid; fail "flightrecd started on a random file"; fi
wait $pid && fail "flightrecd exited 0 on a random file"
grep -q "not a flightrec ring" "$T/err" || fail "unclear message for a non-ring file: $(cat "$T/err")"
[ "$(sha256sum <"$T/notring")" = "$sum" ] || fail "flightrecd modified a file that is not a ring"

# Regression: the ring's and the socket's directories were accepted
# whoever could write them, so another user could put their own file (or
# a symlink) where the root daemon creates its ring and socket. A
# directory others can write is refused, naming its mode; nothing is
# created in it.
mkdir -m 1777 "$T/pub"
chmod 1777 "$T/pub"
for args in "--ring $T/pub/ring --socket $T/pub2.sock" "--ring $T/ring3 --socket $T/pub/x.sock"; do
	# shellcheck disable=SC2086
	timeout 20 "$FLIGHTRECD" $args >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] || fail "flightrecd started with $args (status $rc)"
	grep -q "$T/pub.*mode 1777\|$T/pub.*writable" "$T/err" ||
		fail "unclear message for a shared directory ($args): $(cat "$T/err")"
	[ -z "$(ls -A "$T/pub")" ] || fail "flightrecd created $(ls -A "$T/pub") in a shared directory"
done
rm -f "$T/ring3" "$T/pub2.sock"
# Regression: only the last directory was checked. Under a directory
# others can change (not sticky), a subdirectory the daemon creates for
# itself can be renamed away and replaced after the check.
mkdir -m 0777 "$T/open"
chmod 0777 "$T/open"
timeout 20 "$FLIGHTRECD" --ring "$T/open/sub/ring" --socket "$T/open.sock" >"$T/out" 2>"$T/err"
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "flightrecd started under a directory others can change (status $rc)"
grep -q "is in a directory other users can change (owner uid 0, mode 0777)" "$T/err" ||
	fail "unclear message for an open parent directory: $(cat "$T/err")"
[ -z "$(ls -A "$T/open")" ] || fail "flightrecd created $(ls -A "$T/open") under an open directory"
rm -f "$T/open.sock"

start_daemon

# A second daemon on the same socket refuses to start.
"$FLIGHTRECD" --ring "$T/ring2" --socket "$SOCK" >"$T/out" 2>"$T/err"
[ $? != 0 ] || fail "a second flightrecd started on a live socket"
grep -q "already listening at $SOCK" "$T/err" || fail "unclear message for a live socket: $(cat "$T/err")"
daemon_alive || fail "the first daemon died when a second one tried its socket"

# Bad arguments: usage errors (2), nothing written, daemon unaffected.
expect_error 2 '--window: "abc" is not a duration; expected one like 500ms, 10s, 5m, 1h30m or 2m30s' \
	"$FLIGHTREC" attach --window abc -o x.pb.gz
expect_error 2 '--window: must be longer than zero, got "0s"' \
	"$FLIGHTREC" attach --window 0s -o x.pb.gz
expect_error 2 '--window: "-5s" is not a duration' \
	"$FLIGHTREC" attach --window -5s -o x.pb.gz
expect_error 2 'unknown option .*--bogus' "$FLIGHTREC" attach --window 10s --bogus -o x.pb.gz
expect_error 2 '--window DURATION .* is required' "$FLIGHTREC" attach -o x.pb.gz
expect_error 2 '--pid: expected process ids' "$FLIGHTREC" attach --window 1s --pid 12x -o x.pb.gz
expect_error 2 '^flightrec attach: --format: expected one of pprof, folded, got "svg"$' \
	"$FLIGHTREC" attach --window 10s --format svg -o x.pb.gz
expect_error 2 '^flightrec dump: --format: expected one of pprof, folded, got "svg"$' \
	"$FLIGHTREC" dump --ring "$RING" --window 10s --format svg -o x.pb.gz
expect_error 2 'unknown command "atach"' "$FLIGHTREC" atach --window 10s
# top takes the same query options, checked the same way.
expect_error 2 '^flightrec top: --event: unknown event "cpuu"' "$FLIGHTREC" top --window 10s --event cpuu
expect_error 2 '^flightrec top: --children goes with --pid' "$FLIGHTREC" top --window 10s --children
expect_error 2 '^flightrec top: shows a table' "$FLIGHTREC" top --window 10s --output x.pb.gz
expect_error 1 "cannot create $T/nodir/x.pb.gz: No such file or directory" \
	"$FLIGHTREC" attach --window 10s -o "$T/nodir/x.pb.gz"
expect_error 1 'above this recorder.s limit of 10000 Hz \(limits.max_rate_hz\)' \
	"$FLIGHTREC" attach --window 10s --hz 20000 -o x.pb.gz
[ -z "$(ls -A "$T/work")" ] || fail "failed attaches left files: $(ls -A "$T/work")"
[ ! -e "$T/nodir" ] || fail "attach created a directory"
daemon_alive || fail "bad input disturbed the daemon"

# A window longer than the ring holds: what exists, and it says so.
wait_seals
"$FLIGHTREC" attach --window 1h -o long.pb.gz 2>"$T/err" || fail "attach --window 1h failed: $(cat "$T/err")"
grep -q 'warning: the window asks for 1h but the ring holds samples only since' "$T/err" ||
	fail "no warning for a window longer than the ring: $(cat "$T/err")"
"$GO" tool pprof -symbolize=none -comments long.pb.gz 2>/dev/null | grep -q 'holds samples only since' ||
	fail "the profile's comments do not say the window was cut"
"$GO" tool pprof -symbolize=none -raw long.pb.gz >/dev/null 2>&1 || fail "the cut profile is not valid pprof"

# Garbage on the socket does not hurt the daemon.

python3 - "$SOCK" <<'PY' 2>/dev/null || true
import socket, struct, sys
for payload in [b'{"v":1,"req":"attach","window_ns":"x"}', b'not json', b'{"v":9,"req":"status"}',
                b'{"v":1,"req":"nope"}', b'[1,2]']:
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(struct.pack('<I', len(payload)) + payload)
    s.settimeout(5); s.recv(65536); s.close()
PY
daemon_alive || fail "malformed requests killed the daemon"

# The daemon checks "format" too, for clients other than flightrec.
python3 - "$SOCK" >"$T/resp" 2>&1 <<'PY' || fail "format request failed: $(cat "$T/resp")"
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
fd = os.open("/dev/null", os.O_WRONLY)
p = b'{"v":1,"req":"attach","window_ns":1000000000,"format":"svg"}'
socket.send_fds(s, [struct.pack('<I', len(p)) + p], [fd])
s.settimeout(5)
buf = b''
while len(buf) < 4 or len(buf) < 4 + struct.unpack('<I', buf[:4])[0]:
    chunk = s.recv(65536)
    if not chunk: break
    buf += chunk
r = json.loads(buf[4:])
print(r.get("ok"), r.get("error"))
PY
grep -q '^False attach: "format" must be one of: pprof, folded$' "$T/resp" ||
	fail "unclear answer to a bad \"format\": $(cat "$T/resp")"

# A slow answer shows progress on a terminal, and nothing when piped: the
# recorder is stopped while the client waits (script(1) gives it a tty).
# hold_recorder: stops the recorder for 1.5 s, in the background (WAKER).
hold_recorder() {
	kill -STOP "$DAEMON_PID"
	(sleep 1.5; kill -CONT "$DAEMON_PID") &
	WAKER=$!
}
# The recorder held by SIGSTOP loses samples meanwhile: --allow-loss, the
# loss is not what is tested here.
if command -v script >/dev/null; then
	hold_recorder
	script -qec "\"$FLIGHTREC\" attach --window 5s --allow-loss -o \"$T/tty.pb.gz\"" /dev/null >"$T/tty.out" 2>&1 ||
		fail "attach on a terminal failed: $(cat "$T/tty.out")"
	grep -q 'the recorder is building the profile\.\.\. [0-9.]*s' "$T/tty.out" ||
		fail "no progress on a terminal while the recorder was slow: $(cat "$T/tty.out")"
	wait "$WAKER"
	hold_recorder
	"$FLIGHTREC" attach --window 5s --allow-loss -o "$T/pipe.pb.gz" 2>"$T/pipe.err" || fail "attach failed"
	wait "$WAKER"
	grep -q 'building the profile' "$T/pipe.err" && fail "progress written when stderr is not a terminal"
fi

stop_daemon
echo PASS
