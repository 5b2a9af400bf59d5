#!/bin/bash
# Who kept a thread waiting: wakeup_mutex's `requests` thread waits for a
# mutex its `holder` thread holds 4 ms at a time in holder_slow (a build
# without frame pointers: only CFI unwinding finds it on the waker's
# stack). With a session recording offcpu, wakeup and runqueue:
#  - of the requests thread's wakeup time, at least 80% has holder_slow on
#    the waker's stack;
#  - that total matches the thread's waits in pthread_mutex_lock in the
#    offcpu profile within 20%, less their delays for a CPU once woken
#    (the runqueue samples on the same stacks: what a wake's weight does
#    not hold);
#  - its samples carry waker_comm=holder and waker_tid (the holder's tid);
# and asking wakeup of the perf mechanism, or an unknown event, is refused
# with a message that says why.
. "$(dirname "$0")/lib.sh"
need_root_perf
PPROF_PY=$(dirname "$0")/pprof_samples.py

# The refusals first (no daemon needed: flightrecd --check-config).
cat >"$T/bad.json" <<'JSON'
{"sessions": [{"name": "w", "events": [{"event": "offcpu", "mechanism": "perf"}, {"event": "wakeup"}]}]}
JSON
if "$FLIGHTRECD" --check-config "$T/bad.json" >"$T/bad.out" 2>&1; then
	fail "wakeup beside offcpu's perf mechanism was accepted: $(cat "$T/bad.out")"
fi
grep -q 'eBPF' "$T/bad.out" || fail "no reason given for wakeup on perf: $(cat "$T/bad.out")"
cat >"$T/bad2.json" <<'JSON'
{"sessions": [{"name": "w", "events": [{"event": "wakeups"}]}]}
JSON
if "$FLIGHTRECD" --check-config "$T/bad2.json" >"$T/bad2.out" 2>&1; then
	fail "an unknown event was accepted"
fi
grep -q 'unknown event.*wakeup, runqueue' "$T/bad2.out" ||
	fail "the unknown event's message does not list wakeup: $(cat "$T/bad2.out")"

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "waits", "events": [{"event": "offcpu"}, {"event": "wakeup"}, {"event": "runqueue"}]}]}
JSON
start_daemon --config "$T/config.json"

prog=$BUILD/tests/integration/wakeup_mutex
# A first run builds the program's and libc's CFI tables.
"$prog" 0.5 >/dev/null || fail "wakeup_mutex failed"
wait_tables_built
"$prog" 3 >"$T/prog.out" || fail "wakeup_mutex failed"
cat "$T/prog.out"
pid=$(sed -n 's/^pid=//p' "$T/prog.out")
want=$(sed -n 's/^lock_wait_ns=//p' "$T/prog.out")
sleep 1.5 # the last wakes' waits and the seal after them
"$FLIGHTREC" attach --window 20s --event wakeup --pid "$pid" -o "$T/wakeup.pb.gz" \
	2>"$T/attach.err" || fail "attach --event wakeup failed: $(cat "$T/attach.err")"
"$FLIGHTREC" attach --window 20s --event offcpu --pid "$pid" -o "$T/offcpu.pb.gz" \
	2>"$T/attach.err" || fail "attach --event offcpu failed: $(cat "$T/attach.err")"
"$FLIGHTREC" attach --window 20s --event runqueue --pid "$pid" -o "$T/runqueue.pb.gz" \
	2>"$T/attach.err" || fail "attach --event runqueue failed: $(cat "$T/attach.err")"

check() { python3 - "$PPROF_PY" "$T/wakeup.pb.gz" "$T/offcpu.pb.gz" "$want" "$T/runqueue.pb.gz"; }
check <<'PY' || fail "wakeup profile check failed"
import sys, importlib.util
spec = importlib.util.spec_from_file_location("pp", sys.argv[1])
pp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pp)
wake, off, want = sys.argv[2], sys.argv[3], int(sys.argv[4])
def ns_index(path, name):
    return [t for t, _ in pp.sample_types(path)].index(name)
wi, oi = ns_index(wake, "wakeup"), ns_index(off, "offcpu")
req = [s for s in pp.samples(wake) if s["str"].get("thread") == "requests"]
total = sum(s["values"][wi] for s in req)
held = sum(s["values"][wi] for s in req if "holder_slow" in s["frames"])
print("requests: %d wakeup samples, %d ns, %d ns under holder_slow" % (len(req), total, held))
assert total > 0, "no wakeup samples of the requests thread"
assert held >= 0.8 * total, "only %.0f%% under holder_slow: %s" % (
    100.0 * held / total, [s["frames"] for s in req if "holder_slow" not in s["frames"]][:3])
# The holder's wakes carry who woke (wakes from interrupt context, the
# thread's nanosleep between requests late on a busy machine, do not).
by_holder = [s for s in req if "holder_slow" in s["frames"]]
comms = {s["str"].get("waker_comm") for s in by_holder}
assert comms == {"holder"}, "waker_comm: %s" % comms
assert all(s["str"].get("waker_tid", "").isdigit() for s in by_holder), "no waker_tid"
LOCK = ("pthread_mutex_lock", "___pthread_mutex_lock", "__pthread_mutex_lock_full",
        "__lll_lock_wait", "lll_lock_wait", "futex_wait", "__futex_abstimed_wait_common")
lock = sum(s["values"][oi] for s in pp.samples(off)
           if s["str"].get("thread") == "requests" and any(f in LOCK for f in s["frames"]))
# A wait's off-CPU time is its blocked time (what the wake's weight is)
# plus its delay for a CPU once woken (runqueue, on the same stack): on a
# busy machine the latter is no small part.
ri = ns_index(sys.argv[5], "runqueue")
rq = sum(s["values"][ri] for s in pp.samples(sys.argv[5])
         if s["str"].get("thread") == "requests" and any(f in LOCK for f in s["frames"]))
print("requests: %d ns waiting for the lock in offcpu (%d ns of it for a CPU), %d ns measured"
      % (lock, rq, want))
assert lock > 0, "no offcpu lock waits"
blocked = lock - rq
assert abs(total - blocked) <= 0.2 * blocked, "wakeup %d ns vs offcpu lock waits %d - %d ns" % (
    total, lock, rq)
assert any(s["str"].get("ran_instead") for s in pp.samples(sys.argv[5])), "no ran_instead label"
PY
"$FLIGHTREC" status >"$T/status" || fail "status failed"
grep '^wakeup:' "$T/status" || fail "status shows no wakeup counters: $(cat "$T/status")"
grep -q '^wakeup:   [1-9][0-9]* wakes of long waits .*; [1-9][0-9]* with the woken thread.s labels' \
	"$T/status" || fail "status: no wakes joined to their waits' labels"
grep -q 'runqueue: [1-9][0-9]* delays >= min_wait, [1-9][0-9]* short-delay records' "$T/status" ||
	fail "status: no runqueue samples"
echo "ok"
