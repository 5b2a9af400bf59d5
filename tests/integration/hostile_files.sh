#!/bin/bash
# Files a local user controls must never stop the root recorder.
#
# Regressions, each shown end to end on an earlier recorder:
# - fifo: a user dlopen()s a library, deletes it and puts a FIFO at its
#   path (and at the "PATH (deleted)" name /proc/PID/maps gives it). The
#   ingest thread opened it for the build id and waited for a writer:
#   recording stopped, status still said nothing was lost, attach and
#   shutdown hung.
# - truncation: a user renames a copy over a library their process maps
#   and cuts it to pieces in a loop while attach reads it; libelf read it
#   through a mapping and the daemon died of SIGBUS.
# Here recording goes on, every attach and dump --ring completes, the
# daemon survives and shuts down.
. "$(dirname "$0")/lib.sh"
need_root_perf

VICTIM=$BUILD/tests/integration/victim_lib
ZLIB=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64|libz\.so\.1 \(libc6/ { print $NF; exit }')
[ -n "$ZLIB" ] || ZLIB=$(ldconfig -p | awk '/libz\.so\.1 / { print $NF; exit }')
[ -f "$ZLIB" ] || skip "no libz.so.1 to copy"

U=$T/user
mkdir -p "$U"
"$VICTIM" fifo "$ZLIB" "$U" &
"$VICTIM" swap "$ZLIB" "$U" &
try_until 10 '[ -e "$U/ready.fifo" ] && [ -e "$U/ready.swap" ]'
[ -e "$U/ready.fifo" ] && [ -e "$U/ready.swap" ] || fail "the victims did not start"
"$VICTIM" truncate "$U/libswap.so" &

# The victims exist before the recorder: it learns their mappings from
# /proc, without the kernel's build ids, and has to read them.
start_daemon --hz 499

# samples: "SAMPLES STALLED STALLS" of status, in $T/samples.
samples() {
	timeout 20 "$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["samples"], d["ingest"]["stalled"], d["ingest"]["stalls"])' "$T/status.json" >"$T/samples"
}

samples
read -r s0 _ _ <"$T/samples"
for i in 1 2 3 4 5; do
	out=$T/a$i.pb.gz
	timeout 60 "$FLIGHTREC" attach --window 3s -o "$out" >"$T/attach.log" 2>&1
	rc=$?
	[ $rc = 124 ] && fail "attach $i hung"
	[ $rc = 0 ] || { cat "$T/attach.log" >&2; fail "attach $i exited with $rc"; }
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "flightrecd died during attach $i"
done
samples
read -r s1 stalled stalls <"$T/samples"
[ "$s1" -gt "$s0" ] || fail "recording stopped: samples $s0 then $s1"
[ "$stalled" = False ] || fail "status says the ingest thread is stalled"
echo "samples $s0 -> $s1 across five attaches; stalls $stalls"

# The victims' time is in the profile, under their own command name.
"$FLIGHTREC" top "$T/a5.pb.gz" -n 50 >"$T/top.txt" 2>&1 || fail "flightrec top could not read the profile"
grep -q 'crc32\|libvictim\|libswap' "$T/top.txt" || {
	cat "$T/top.txt" >&2
	fail "the victims' library is not in the profile"
}

timeout 60 "$FLIGHTREC" dump --ring "$RING" --window 30s -o "$T/d.pb.gz" >/dev/null 2>&1
rc=$?
[ $rc = 124 ] && fail "dump --ring hung"
[ $rc = 0 ] || fail "dump --ring exited with $rc"

kill -TERM "$DAEMON_PID"
try_until 30 '! kill -0 "$DAEMON_PID" 2>/dev/null'
kill -0 "$DAEMON_PID" 2>/dev/null && fail "flightrecd did not stop within 30 s of SIGTERM"
wait "$DAEMON_PID" || fail "flightrecd exited with status $? on SIGTERM"
DAEMON_PID=
echo "ok"
