# shellcheck shell=bash
# Helpers of the application labels tests (labels_*.sh, otel_*.sh), on top
# of lib.sh: sourced after it.
#
# Labels are read at samples only once the recorder has looked the process
# up (on a worker, after its first samples were sealed): a process's first
# second or two carries none. The tests wait for its labels to show, then
# measure over a window that starts after.

PPROF_SAMPLES=$(dirname "$0")/pprof_samples.py
PYTHONPATH=$(dirname "$0")${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH

# wait_lines FILE LINE [SECONDS]: waits until FILE has the line LINE (10 s
# by default); fails the test without.
wait_lines() {
	try_until "${3:-10}" grep -qsx -- "$2" "$1" ||
		fail "no line '$2' in $1 after ${3:-10} s: $(tail -5 "$1" 2>/dev/null)"
}

# wait_labelled PID KEY [SECONDS]: waits until the last second's samples of
# PID carry the label KEY (15 s by default); fails the test without. A
# profile attach calls incomplete (exit 1 with the profile kept: on a
# machine that busy the recorder had not stored its last second yet) is
# looked at as it is and asked for again. (This said exit 2, which attach
# never gives for it, so a storm that delayed the writer failed the
# test.)
wait_labelled() {
	local _ st
	for _ in $(seq "${3:-15}"); do
		"$FLIGHTREC" attach --window 1s --pid "$1" --allow-empty -o "$T/probe.pb.gz" \
			>/dev/null 2>"$T/probe.err"
		st=$?
		# An incomplete profile (the recorder did not store its last
		# samples in time: exit 1, the profile kept, stderr says so) is
		# looked at and asked again; any other failure fails.
		[ $st = 0 ] || { [ $st = 1 ] && grep -q ': incomplete: ' "$T/probe.err" &&
			[ -s "$T/probe.pb.gz" ]; } || fail "attach --pid $1 failed: $(cat "$T/probe.err")"
		python3 "$PPROF_SAMPLES" keys "$T/probe.pb.gz" >"$T/probe.keys" ||
			fail "cannot read the profile of pid $1"
		grep -qx -- "$2" "$T/probe.keys" && return 0
		kill -0 "$1" 2>/dev/null || fail "process $1 exited before its labels showed"
		sleep 1
	done
	fail "no sample of pid $1 carries the label $2 after ${3:-15} s"
}

# ingest_fresh: the recorder answers status, its ingest thread is not
# stalled and had drained within 2 s of the status's moment (its start
# time plus its uptime, so that a slow client does not count); leaves the
# status JSON in $T/status.json.
ingest_fresh() {
	timeout 10 "$FLIGHTREC" status --json >"$T/status.json" 2>"$T/status.err" ||
		fail "status failed: $(cat "$T/status.err")"
	python3 - "$T/status.json" <<'PY' || fail "the ingest thread is stalled"
import json, sys
st = json.load(open(sys.argv[1]))
s = st["ingest"]
age = (st["started_ns"] + st["uptime_ns"] - s["last_drain_ns"]) / 1e9
if s["stalled"] or age > 2:
    sys.stderr.write("ingest.stalled %s, last drain %.1f s ago\n" % (s["stalled"], age))
    sys.exit(1)
PY
}

# need_labels: skips when the running recorder reads no labels at samples
# (its eBPF program did not load: status says why in labels.error).
need_labels() {
	local why
	why=$("$FLIGHTREC" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin).get("labels", {}).get("error") or "")') ||
		fail "status failed"
	[ -z "$why" ] || skip "the recorder reads no application labels here: $why"
}
