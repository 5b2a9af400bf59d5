#!/bin/bash
# Regression: dropped off-CPU waits were not losses. 1,500 threads each
# sleeping 1 ms made the eBPF off-CPU program's ring buffer drop millions
# of waits while the offcpu event's lost stayed near 0 and profiles said
# nothing. Each wait the program drops is now one lost offcpu sample: the
# drops its per-CPU counters show at a drain go into the open chunk's lost.
#
# The storm: the same sleepers, against a ring buffer of 64 KiB (six long
# waits with their 8 KiB stack copies; FLIGHTREC_BPF_RINGBUF), so drops
# are certain on any machine. Checked: status counts drops; the offcpu
# event's lost (status), samples_lost (status and dump --info --json) are
# at least the drops counted before a flush; a profile of the window says
# the waits lost in its comments (go tool pprof -comments); the timeline
# counts them and marks the steps that lost them. The sleepers
# are labelled: labels records with no room leave their waits without
# labels, which is no loss, and status counts them apart.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
SLEEPERS=$BUILD/tests/integration/sleepers

# status --json: the offcpu event's lost, its mechanism's drops, and
# samples_lost with whether it counts every chunk yet.
offcpu_counts() {
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 - "$T/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["events"] if e["event"] == "offcpu"]
if not ev or "offcpu" not in ev[0]:
    print("none"); sys.exit()
e = ev[0]
print(e["offcpu"].get("mechanism"), e["lost"], e["offcpu"].get("ringbuf_drops", 0),
      e["offcpu"].get("ringbuf_dropped_ns", 0), d["samples_lost"], d["samples_lost_complete"],
      d.get("labels", {}).get("wait_copies_dropped", -1))
PY
}

export FLIGHTREC_BPF_RINGBUF=65536
start_daemon
unset FLIGHTREC_BPF_RINGBUF
read -r mech lost0 drops0 _ _ _ _ < <(offcpu_counts)
[ "$mech" = bpf ] || skip "offcpu is not recorded by eBPF here ($mech): $(grep offcpu "$T/daemon.log" | tail -2)"
grep -q 'a ring buffer of 65536 bytes' "$T/daemon.log" ||
	fail "the ring buffer's size was not taken from FLIGHTREC_BPF_RINGBUF"

# The sleepers start once the recorder found their labels (it reads a
# process's labels only after a look-up), when it can read labels at all.
"$SLEEPERS" 1500 3 >"$T/sleepers.out" &
sleepers=$!
try_until 10 'grep -qx ready "$T/sleepers.out"'
# labels_known: whether labels are read (labels=yes) or cannot be (an
# error in status) is known.
labels=no
labels_known() {
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status did not answer"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d.get("labelled_processes", 0) > 0 and "error" not in d.get("labels", {})))' "$T/status.json" &&
		{ labels=yes; return 0; }
	python3 -c 'import json,sys; sys.exit("error" not in json.load(open(sys.argv[1])).get("labels", {}))' "$T/status.json"
}
try_until 15 labels_known
echo "labels read: $labels"
kill -USR1 "$sleepers"
wait "$sleepers" || fail "sleepers failed: $(cat "$T/sleepers.out")"
cat "$T/sleepers.out"

# Drops counted before the flush that attach makes are in lost after it.
read -r _ _ drops drop_ns _ _ label_drops < <(offcpu_counts)
# A window that lost waits: warned of; --allow-loss keeps the status 0.
"$FLIGHTREC" attach --window 60s --event offcpu --allow-loss -o "$T/storm.pb.gz" 2>"$T/attach.err" ||
	fail "attach failed: $(cat "$T/attach.err")"
grep -Eq 'samples of offcpu (in the window|lost in the window)' "$T/attach.err" ||
	fail "attach does not say the waits lost: $(cat "$T/attach.err")"
try_until 5 'read -r _ lost _ _ ring_lost complete _ < <(offcpu_counts); [ "$complete" = True ]'
info_lost=$("$FLIGHTREC" dump --ring "$RING" --info --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_lost"])') ||
	fail "dump --info failed"
"$GO" tool pprof -comments "$T/storm.pb.gz" >"$T/comments" 2>"$T/pprof.err" ||
	fail "go tool pprof -comments: $(cat "$T/pprof.err")"
said=$(sed -n 's/^offcpu: \([0-9]*\) off-CPU waits lost in this window.*/\1/p' "$T/comments")
echo "drops: $((drops - drops0)) waits ($drop_ns ns in all) in the storm; offcpu lost $lost (was" \
	"$lost0); samples_lost: status $ring_lost, dump --info $info_lost; the profile says" \
	"${said:-nothing}; $label_drops waits kept without labels"

[ "$((drops - drops0))" -gt 0 ] || fail "the storm dropped no wait: the test forced nothing"
[ "$drop_ns" -gt 0 ] || fail "the dropped waits have no time counted"
[ "$lost" -ge "$drops" ] || fail "the offcpu event's lost is $lost, under the $drops waits dropped"
[ "$ring_lost" -ge "$drops" ] || fail "status samples_lost is $ring_lost, under the $drops waits dropped"
[ "$info_lost" -ge "$drops" ] ||
	fail "dump --info samples_lost is $info_lost, under the $drops waits dropped"
# The timeline of the window marks its steps that lost waits.
"$FLIGHTREC" timeline --event offcpu --window 2m --step 1s --json >"$T/tl.json" ||
	fail "timeline failed"
tl_lost=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["lost_total"])' "$T/tl.json")
echo "the timeline says $tl_lost waits lost"
[ "$tl_lost" -ge "$drops" ] || fail "the timeline says $tl_lost waits lost, under the $drops dropped"
"$FLIGHTREC" timeline --event offcpu --window 2m --step 1s >"$T/tl.txt" || fail "timeline failed"
grep -q '  ! [0-9]* lost' "$T/tl.txt" || fail "no step of the timeline marked as losing waits: $(cat "$T/tl.txt")"
grep -q "^! [0-9]* samples of offcpu lost in this window" "$T/tl.txt" ||
	fail "the timeline does not say the waits lost: $(cat "$T/tl.txt")"
[ "$labels" = no ] || [ "$label_drops" -gt 0 ] ||
	fail "status labels.wait_copies_dropped is $label_drops: labels records with no room not counted"
[ -n "$said" ] || fail "the profile does not say waits were lost: $(cat "$T/comments")"
[ "$said" -ge "$drops" ] || fail "the profile says $said waits lost, under the $drops dropped"
"$FLIGHTREC" status >"$T/status.txt"
grep -q '^offcpu: .* waits lost (' "$T/status.txt" ||
	fail "status does not say the waits lost: $(grep offcpu "$T/status.txt")"
stop_daemon
echo PASS
