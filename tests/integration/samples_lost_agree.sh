#!/bin/bash
# Regression: status --json said samples_lost 0 where dump --info --json
# said 3100 for one ring. status counted what the kernel lost since the
# recorder started, dump what the ring's chunks hold. samples_lost is now
# the ring's in both (this run's count is samples_lost_since_start).
# Losses are forced: 4999 Hz on a busy machine while the ingest thread is
# frozen, so the kernel's perf rings overflow; then the recorder restarts
# on the same ring, where the old count said 0.
. "$(dirname "$0")/lib.sh"
need_root_perf
FREEZE=$BUILD/tests/integration/freeze_thread

lost() {
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["samples_lost"], d["samples_lost_complete"], d["samples_lost_since_start"])' "$T/status.json"
}
dump_lost() {
	"$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" || fail "dump --info failed"
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples_lost"])' "$T/info.json"
}
# agree: status and dump --info give the same count, status unchanged
# around the dump (the recorder may lose more meanwhile: then again).
agree() {
	local a b c complete since
	agrees_once() {
		"$FLIGHTREC" attach --window 1s -o "$T/flush.pb.gz" 2>/dev/null # a flush
		read -r a complete since < <(lost)
		b=$(dump_lost)
		read -r c _ _ < <(lost)
		[ "$complete" = True ] && [ "$a" = "$b" ] && [ "$b" = "$c" ]
	}
	try_until 10 agrees_once && { echo "$a $since"; return 0; }
	fail "status says $a (complete: $complete), dump --info $b"
}

start_daemon --hz 4999
"$BURN" 8 0 2 >/dev/null 2>&1 &
burn=$!
sleep 1
"$FREEZE" "$DAEMON_PID" 3 >"$T/freeze.out" 2>"$T/freeze.err" ||
	{ cat "$T/freeze.err" >&2; kill "$burn"; skip "cannot freeze a thread with ptrace here"; }
wait "$burn"
agree >"$T/agree.out"
read -r first since <"$T/agree.out"
echo "after the freeze: status and dump --info both say $first lost ($since since start)"
[ "$first" -gt 0 ] || fail "no sample was lost: the test forced nothing"
[ "$since" -ge "$first" ] || fail "$since lost since start, fewer than the ring's $first"

# A new recorder on the same ring: the chunks it finds are counted.
stop_daemon
start_daemon
agree >"$T/agree.out"
read -r second since <"$T/agree.out"
echo "after a restart: both say $second lost ($since since start)"
[ "$second" -ge "$first" ] || fail "the restarted recorder counts $second of the ring's $first"
stop_daemon
echo PASS
