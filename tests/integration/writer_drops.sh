#!/bin/bash
# Chunks the writer drops are losses. While the ring's file system is
# frozen (fsfreeze: the writer's append waits for the thaw), sealed chunks
# pile up in the writer's queue; past its bound (here 64 KiB, the test
# setting FLIGHTREC_WRITER_QUEUE) each new one is dropped rather than the
# daemon growing. Their samples must not vanish silently: after the thaw,
# status's samples_lost_since_start and samples_lost (the ring's chunks'
# count), dump --info's samples_lost and the profile's comments of the
# window count at least the dropped chunks' samples, and the recorder
# went on recording.
. "$(dirname "$0")/lib.sh"
exact_losses
. "$(dirname "$0")/loopfs.sh"
need_root_perf
need_go
mount_loopfs
RING=$LOOPFS/ring

# js KEY: the first member KEY anywhere in status --json.
js() {
	"$FLIGHTREC" status --json 2>/dev/null | python3 -c '
import json, sys
def find(o, k):
    if isinstance(o, dict):
        if k in o:
            return o[k]
        for v in o.values():
            r = find(v, k)
            if r is not None:
                return r
    return None
print(find(json.load(sys.stdin), sys.argv[1]))' "$1"
}

FLIGHTREC_WRITER_QUEUE=65536 start_daemon --ring-size 16MiB --hz 999
"$BURN" 60 1 >/dev/null &
BURN_PID=$!
wait_seals
FROM=$(date +%s)
fsfreeze -f "$LOOPFS" || skip "cannot freeze $LOOPFS"
try_until 30 '[ "$(js chunks_dropped)" -ge 3 ]'
dropped=$(js chunks_dropped)
lost_frozen=$(js samples_lost_since_start)
fsfreeze -u "$LOOPFS"
[ "$dropped" -ge 3 ] || fail "no chunk dropped in 30 s of a frozen disk ($dropped)"
wait_seals 3 # recording goes on after the thaw
TO=$(date +%s)
kill "$BURN_PID"
wait "$BURN_PID" 2>/dev/null
# The window lost the dropped chunks' samples: said, and exit 1 but for
# --allow-loss.
"$FLIGHTREC" attach --from "@$((FROM - 1))" --to "@$TO" --hz 999 -o "$T/w.pb.gz" 2>"$T/attach.err"
[ $? = 1 ] || fail "attach of a window that lost chunks did not exit 1: $(cat "$T/attach.err")"
grep -q 'warning: the recorder lost [0-9]* of [0-9]* samples of cpu in the window' "$T/attach.err" ||
	fail "attach does not say the samples lost: $(cat "$T/attach.err")"
"$FLIGHTREC" attach --from "@$((FROM - 1))" --to "@$TO" --hz 999 --allow-loss -o "$T/w.pb.gz" \
	2>"$T/attach.err" || fail "attach --allow-loss after the thaw failed: $(cat "$T/attach.err")"
since=$(js samples_lost_since_start)
ring_lost=$(js samples_lost)
"$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" || fail "dump --info failed"
info_lost=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples_lost"])' "$T/info.json")
"$GO" tool pprof -comments "$T/w.pb.gz" >"$T/comments" 2>/dev/null
cat "$T/comments"
echo "chunks dropped: $dropped; lost: $lost_frozen while frozen, $since since start, $ring_lost in the ring, $info_lost by dump --info"
grep -q 'ring writes are falling behind; dropping a chunk' "$T/daemon.log" ||
	fail "the log does not say chunks were dropped"
# A chunk at 999 Hz on a busy CPU holds hundreds of samples: three
# dropped chunks are far more than 100 lost samples.
[ "$lost_frozen" -ge 100 ] || fail "the dropped chunks' samples are not counted lost ($lost_frozen)"
[ "$ring_lost" -ge "$lost_frozen" ] || fail "the ring's samples_lost ($ring_lost) misses the dropped chunks ($lost_frozen)"
[ "$info_lost" -ge "$lost_frozen" ] || fail "dump --info's samples_lost ($info_lost) misses the dropped chunks ($lost_frozen)"
grep -qi 'lost' "$T/comments" || fail "the profile of the window does not say samples were lost"
echo "ok"
