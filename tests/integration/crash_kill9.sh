#!/bin/bash
# kill -9 of flightrecd at 50 random moments while it records a busy
# machine. After every kill the ring opens (read-only, no daemon), holds
# every sample the daemon had stored before the kill (in chunks of the
# segments or of the journal: merging a group changes how many chunks hold
# them, never the samples), and has at most one damaged chunk more (the
# one being written); after every restart the daemon appends behind them. In the end, windows of every run that lived
# long enough to seal a chunk return that run's samples, and a window
# spanning all the restarts returns samples from all of them.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go
KILLS=${FR_KILLS:-50}

json_field() { # json_field FILE EXPR
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

"$BURN" 600 1 >/dev/null &
BURN_PID=$!
RANDOM=4242 # reproducible moments
prev_samples=0
prev_corrupt=0
: >"$T/runs"
for k in $(seq 1 "$KILLS"); do
	start_daemon --ring-size 64MiB
	t_start=$(date +%s%N)
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed in run $k"
	samples_at_start=$(json_field "$T/status.json" 'd["ring"]["samples"]')
	[ "$samples_at_start" -ge "$prev_samples" ] ||
		fail "run $k: the restarted daemon holds $samples_at_start samples, $prev_samples were on disk"
	# A random moment between 0.3 s and 2.3 s: some kills land before the
	# first seal, some during a write, some between writes.
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 0.3 + (r % 2000) / 1000 }')"
	"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed in run $k"
	stored=$(json_field "$T/status.json" 'd["ring"]["samples"]')
	kill9_daemon
	t_kill=$(date +%s%N)
	echo "$t_start $t_kill" >>"$T/runs"

	timeout 30 "$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" ||
		fail "run $k: the ring does not open after kill -9"
	samples=$(json_field "$T/info.json" 'd["ring"]["samples"]')
	corrupt=$(json_field "$T/info.json" 'd["ring"]["corrupt_chunks"]')
	[ "$samples" -ge "$stored" ] ||
		fail "run $k: $stored samples were stored before kill -9, $samples survived"
	[ "$corrupt" -le "$((prev_corrupt + 1))" ] ||
		fail "run $k: kill -9 damaged $((corrupt - prev_corrupt)) chunks (at most the one being written)"
	prev_samples=$samples
	prev_corrupt=$corrupt
done
echo "$KILLS kills: $prev_samples samples kept, $prev_corrupt chunks damaged"
json_field "$T/info.json" '"%d chunks, %d of them in the journal" % (d["ring"]["chunks"], d["ring"].get("journal_chunks", 0))' 

# Every run that lived past the first seal (1 s plus start-up) has samples
# of the busy program in its own window, read back with no daemon.
n=0
sum=0
while read -r t0 t1; do
	n=$((n + 1))
	[ $((t1 - t0)) -ge 1500000000 ] || continue
	from=$(awk -v t="$t0" 'BEGIN { printf "%.9f", t / 1e9 }')
	to=$(awk -v t="$t1" 'BEGIN { printf "%.9f", t / 1e9 }')
	"$FLIGHTREC" dump --ring "$RING" --from "$from" --to "$to" --pid "$BURN_PID" \
		-o "$T/run.pb.gz" 2>"$T/dump.err" || fail "dump of run $n failed: $(cat "$T/dump.err")"
	# "flightrec: wrote FILE: N samples, ..."
	got=$(sed -n 's/.*: \([0-9]*\) samples, .*/\1/p' "$T/dump.err")
	[ "${got:-0}" -gt 0 ] || fail "run $n ($(( (t1 - t0) / 1000000 )) ms) left no samples"
	sum=$((sum + got))
done <"$T/runs"

# One window across every restart, through a live daemon.
start_daemon --ring-size 64MiB
first=$(head -1 "$T/runs" | awk '{ printf "%.9f", $1 / 1e9 }')
"$FLIGHTREC" attach --from "$first" --pid "$BURN_PID" -o "$T/all.pb.gz" 2>/dev/null ||
	fail "attach across the restarts failed"
pprof_top "$T/all.pb.gz" >"$T/all.top"
all=$(awk '/^Showing nodes accounting for/ { print $8; exit }' "$T/all.top")
echo "runs of 1.5 s or more: $sum samples; one window across all restarts: $all"
[ "${all:-0}" -ge "$sum" ] || fail "the window across the restarts has $all samples, fewer than its runs' $sum"
kill "$BURN_PID"
stop_daemon
echo PASS
