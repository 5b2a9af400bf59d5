#!/bin/bash
# Log lines: flightrecd stamps each line with RFC 3339 UTC time (ms) and a
# level; --log-format json writes one JSON object per line; on the journal
# (JOURNAL_STREAM naming stderr) lines carry a syslog priority prefix and
# no timestamp (the journal stamps them). The CLI's warnings are plain
# words with no source file:line.
. "$(dirname "$0")/lib.sh"
need_root_perf

start_daemon --hz 49
stop_daemon
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z info flightrecd: received Terminated' \
	"$T/daemon.log" || fail "text lines are not timestamped: $(tail -3 "$T/daemon.log")"
# A line's time is now (UTC), not local time or another clock.
stamp=$(grep -o '^[0-9T:.-]*Z info flightrecd: received Terminated' "$T/daemon.log" | cut -d' ' -f1)
python3 - "$stamp" <<'PY' || fail "the timestamp $stamp is not the current UTC time"
import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
sys.exit(abs((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()) > 60)
PY
grep -q '\.c:[0-9]' "$T/daemon.log" && fail "text lines carry source positions at info level"

: >"$T/daemon.log"
start_daemon --hz 49 --log-format json
stop_daemon
python3 - "$T/daemon.log" <<'PY' || fail "json log lines are not JSON objects with ts, level, msg"
import json, re, sys
n = 0
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue  # the start-up banner on stdout
    o = json.loads(line)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["ts"]), o
    assert o["level"] in ("error", "warn", "info", "debug"), o
    assert o["prog"] == "flightrecd" and isinstance(o["pid"], int) and o["msg"], o
    assert re.fullmatch(r"[a-z_]+\.c:\d+", o["src"]), o
    n += 1
assert any(json.loads(l)["msg"].startswith("received Terminated")
           for l in open(sys.argv[1]) if l.startswith("{")), "no stop line"
sys.exit(n < 2)
PY

# A failure to start is a log line too: with json, a JSON object.
echo "not a ring" >"$T/notring"
"$FLIGHTRECD" --ring "$T/notring" --socket "$T/other.sock" --log-format json >/dev/null 2>"$T/start.err" &&
	fail "flightrecd started on a file that is not a ring"
python3 - "$T/start.err" <<'PY' || fail "the start failure is not a JSON error line: $(cat "$T/start.err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(not any(o["level"] == "error" and "not a flightrec ring" in o["msg"] for o in lines))
PY

# The journal: stderr is the stream JOURNAL_STREAM names (device:inode).
: >"$T/journal.log"
dev_ino=$(stat -c '%d:%i' "$T/journal.log")
JOURNAL_STREAM=$dev_ino "$FLIGHTRECD" --ring "$RING" --socket "$SOCK" --hz 49 \
	>/dev/null 2>>"$T/journal.log" &
DAEMON_PID=$!
try_until 10 '"$FLIGHTREC" status >/dev/null 2>&1'
stop_daemon
grep -q '^<6>received Terminated' "$T/journal.log" ||
	fail "journal lines lack the priority prefix: $(tail -3 "$T/journal.log")"
grep -Eq '^[0-9]{4}-' "$T/journal.log" && fail "journal lines carry a second timestamp"
# A stale JOURNAL_STREAM (stderr redirected elsewhere) keeps timestamps.
: >"$T/daemon.log"
JOURNAL_STREAM=$dev_ino start_daemon --hz 49
stop_daemon
grep -Eq '^[0-9]{4}-.*Z info flightrecd: received Terminated' "$T/daemon.log" ||
	fail "an inherited JOURNAL_STREAM dropped the timestamps: $(tail -3 "$T/daemon.log")"

# The CLI: a warning from the ring reader (a damaged superblock) in
# plain words, no [file:line].
cp "$RING" "$T/damaged"
printf 'XXXXXXXXXXXXXXXX' | dd of="$T/damaged" bs=1 seek=40 conv=notrunc 2>/dev/null
"$FLIGHTREC" dump --ring "$T/damaged" --window 1h -o "$T/p.pb.gz" 2>"$T/cli.err" ||
	fail "dump of the damaged copy failed: $(cat "$T/cli.err")"
grep -q '^flightrec: warning: .*the superblock is damaged' "$T/cli.err" ||
	fail "the CLI's warning is not plain: $(cat "$T/cli.err")"
grep -q '\.c:[0-9]' "$T/cli.err" && fail "the CLI's warning names a source line: $(cat "$T/cli.err")"
exit 0
