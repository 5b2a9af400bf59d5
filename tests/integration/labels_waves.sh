#!/bin/bash
# 10,000 threads over a process's life, 2,000 alive at once, each with
# labels of its own (libflightrec has no table of threads or sets to run
# out of): labels_waves runs 5 waves of 2,000 threads, each labelled
# worker=<its index>, burning 1 ms (as many at a time as there are CPUs),
# sleeping 2 ms and burning 1 ms again; recorded at 999 Hz with off-CPU
# waits. Proven:
# - every cpu sample of a worker in its burning function carries
#   worker=<its own index>, found from the thread's id the program printed
#   (save reads that faulted, below);
# - no sample of a worker, cpu or off-CPU, anywhere in its life, carries
#   another worker's index (at its start and end it may carry none);
# - every one of the workers' 2 ms sleeps carries its own index;
# save the few samples whose labels read found the record's memory not
# there (status labels.read_faults: a read at a sample cannot wait for a
# page), which carry none: no more than those, and under 0.1%.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
WAVES=$BUILD/tests/integration/labels_waves

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels
# labels.read_faults of status: reads at samples that found the record's
# memory not there (a read at a sample cannot wait for a page).
read_faults() {
	"$FLIGHTREC" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["labels"]["read_faults"])'
}
faults0=$(read_faults)

"$WAVES" 5 2000 1000 >"$T/waves.out" 2>"$T/waves.err" &
WAVES_PID=$!
wait_lines "$T/waves.out" ready
wait_labelled "$WAVES_PID" warmup
from=$(date +%s)
kill -USR1 "$WAVES_PID"
wait "$WAVES_PID" || fail "labels_waves failed: $(cat "$T/waves.err")"
to=$(($(date +%s) + 1))
grep -q '^done$' "$T/waves.out" || fail "labels_waves did not finish"
[ "$(grep -c '^wave ' "$T/waves.out")" = 5 ] || fail "not every wave was all alive at once"
echo "5 waves of 2000 threads in $((to - from)) s"
"$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$WAVES_PID" -o "$T/cpu.pb.gz" 2>"$T/err" ||
	fail "attach failed: $(cat "$T/err")"
"$FLIGHTREC" attach --from "@$from" --to "@$to" --event offcpu --pid "$WAVES_PID" \
	-o "$T/off.pb.gz" 2>"$T/err" || fail "attach --event offcpu failed: $(cat "$T/err")"
daemon_alive || fail "flightrecd died"

faults=$(($(read_faults) - faults0))
echo "label reads that found no memory: $faults"
python3 - "$T/waves.out" "$T/cpu.pb.gz" "$T/off.pb.gz" "$faults" <<'PY' || fail "worker samples do not carry their own index"
import collections, sys
from pprof_samples import samples

index, dup = {}, set()
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) == 2 and w[0].isdigit() and w[1].isdigit():
        t = int(w[0])
        if t in index:
            dup.add(t)
        index[t] = w[1]
for t in dup:
    del index[t]
if dup:
    print("%d thread ids were used twice (pid_max wrapped): left out" % len(dup))

bad = 0
shown = {}
# A sample whose labels read found the record's memory not there carries
# none (counted in status: read_faults); the burning samples without an
# index must be no more than those.
faults = int(sys.argv[4])
unindexed = 0
for name, path in (("cpu", sys.argv[2]), ("off-CPU", sys.argv[3])):
    c = collections.Counter()
    threads = set()
    for s in samples(path):
        n = s["values"][0]
        tid = s["num"].get("tid")
        if tid not in index:
            continue
        threads.add(tid)
        v = s["str"].get("worker")
        if name == "cpu":
            where = "burn" if "waves_burn" in s["frames"] else "other"
        elif any(f.startswith("[user stack not captured") for f in s["frames"]):
            # A wait whose thread could not be given task work (status:
            # no_user_stack): neither its user stack nor its labels were
            # read where it ran.
            where = "no user stack"
        else:
            where = "sleep" if "hrtimer_nanosleep" in s["frames"] else "other"
        what = "own" if v == index[tid] else "none" if v is None else "wrong"
        if what == "none" and where in ("burn", "sleep") and not shown.get(name):
            shown[name] = True
            print("  e.g. %s sample without an index: %s" % (name, " <- ".join(s["frames"][:12])))
        c[where, what] += n
        if what == "wrong":
            print("  %d %s sample(s) of worker %s carry worker=%s" % (n, name, index[tid], v))
    print("%s: samples of %d workers; %s" % (name, len(threads),
          ", ".join("%s %s %d" % (w, x, c[w, x]) for w, x in sorted(c))))
    wrong = sum(v for (w, x), v in c.items() if x == "wrong")
    if wrong:
        print("%d %s samples carry another worker's index" % (wrong, name))
        bad += 1
    main = "burn" if name == "cpu" else "sleep"
    if c[main, "none"]:
        print("%d %s samples in %s carry no index" % (c[main, "none"], name,
              "waves_burn" if name == "cpu" else "the 2 ms sleep"))
        unindexed += c[main, "none"]
    if c[main, "own"] < 2000 or len(threads) < 2000:
        print("too few %s samples of the workers" % name)
        bad += 1
if unindexed > faults or unindexed * 1000 > 20000:
    print("%d samples in waves_burn or the sleep carry no index, beyond the %d reads that faulted"
          % (unindexed, faults))
    bad += 1
sys.exit(1 if bad else 0)
PY
stop_daemon
echo PASS
