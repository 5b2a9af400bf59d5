#!/bin/bash
# Processes that lie in their allocation ring (tests/integration/alloc_forged.c:
# a memfd not sealed, a size that is not the registry's, a pipe for a
# ring, a child keeping its parent's ring, records of garbage lengths,
# well-formed records of random registers, stacks and labels, a record
# never completed, its tail and head moved back): the recorder refuses
# the rings it cannot trust (counted, said in the log and status), reads
# the others without crashing, stalling or growing, skips what never
# completes, and goes on recording everyone else.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"

FORGED=$BUILD/tests/integration/alloc_forged
FLIB=$BUILD/tests/integration/liballoc_forged_lib.so
[ -x "$FORGED" ] && [ -f "$FLIB" ] || fail "alloc_forged is not built"
# The recorder looks up a library by its name.
cp "$FLIB" "$T/libflightrec.so"

alloc() { status_value "d.get('alloc', {}).get('$1', 0)"; }

start_daemon
need_labels
"$BURN" 20 1 >/dev/null 2>&1 &
BURN_PID=$!
pids=
for m in unsealed size fifo dup garbage records stuck tailback; do
	"$FORGED" "$T/libflightrec.so" $m 10 >"$T/$m.out" 2>&1 &
	pids="$pids $!"
done
wait_until 15 "four rings refused" '[ "$(alloc refused)" -ge 4 ]'
wait_until 15 "malformed records counted" '[ "$(alloc bad_records)" -ge 1 ]'
wait_until 15 "a record never completed skipped" '[ "$(alloc skipped_bytes)" -ge 1 ]'
for why in "ring not sealed against shrinking and growing" "ring size is not the registry's" \
	"ring descriptor is not a regular file" "its ring is another process's"; do
	grep -q "allocation samples of pid [0-9]* not read: $why" "$T/daemon.log" ||
		fail "the log does not say '$why'"
done
[ -n "$(status_value "d['alloc'].get('last_refusal', '')")" ] || fail "status has no last refusal"
# The good rings among the liars are read.
[ "$(alloc processes)" -ge 3 ] || fail "only $(alloc processes) forged rings read"
ingest_fresh
daemon_alive || fail "the recorder died"

# Everyone else is still recorded.
"$FLIGHTREC" attach --window 2s --pid "$BURN_PID" --format folded -o "$T/burn.folded" \
	2>"$T/attach.err" || fail "attach of burn: $(cat "$T/attach.err")"
n=$(awk '!/^#/ { s += $NF } END { print s + 0 }' "$T/burn.folded")
[ "$n" -gt 0 ] || fail "no cpu sample of burn in the last 2 s"
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status")
[ "$rss" -lt $((512 * 1024)) ] || fail "the recorder holds $rss KiB"

# shellcheck disable=SC2086
wait $pids 2>/dev/null
wait_until 10 "the forged rings dropped" '[ "$(alloc processes)" = 0 ]'
ingest_fresh
echo "PASS: refused $(alloc refused), bad records $(alloc bad_records), skipped $(alloc skipped_bytes) bytes, unmatched frees $(alloc frees_unmatched), recorder RSS $rss KiB"
