#!/bin/bash
# The OpenTelemetry thread context (OTEP 4947) of an executable, read at
# each sample: otel_ctx (a publisher written from the specification, each
# thread with its own record) recorded at 999 Hz with off-CPU waits.
# Proven, on the samples of a window after the recorder found the process:
# - every cpu sample of a thread with a context carries its trace_id and
#   span_id (32 and 16 lowercase hex digits) and its attribute as
#   otel.attr.N, and nothing else of the context (or, in at most 1% of
#   the samples, says its attributes were unreadable at that instant: a
#   read the kernel could not serve without a fault);
# - a thread whose pointer is NULL, and one whose record has valid = 0,
#   get no trace_id, span_id or attribute at all; a valid record whose ids
#   are all zeros gives its attribute and no ids;
# - a thread that swaps its pointer between two records every ~50 us:
#   each sample in the function that runs under a record carries that
#   record's ids and attribute, never the other's (the labels of the
#   instruction sampled, not of a moment around it);
# - a thread that sleeps under its context: its off-CPU waits carry it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
OTEL=$BUILD/tests/integration/otel_ctx

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels

"$OTEL" >"$T/otel.out" &
OTEL_PID=$!
wait_lines "$T/otel.out" ready
wait_labelled "$OTEL_PID" trace_id
# Whole seconds after the labels showed: the window holds none from before.
from=$(($(date +%s) + 1))
to=$((from + 5))
wait_until 10 "the window's end" '[ "$(date +%s)" -gt "$to" ]'
"$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$OTEL_PID" -o "$T/cpu.pb.gz" 2>"$T/err" ||
	fail "attach failed: $(cat "$T/err")"
"$FLIGHTREC" attach --from "@$from" --to "@$to" --event offcpu --pid "$OTEL_PID" \
	-o "$T/off.pb.gz" 2>"$T/err" || fail "attach --event offcpu failed: $(cat "$T/err")"
daemon_alive || fail "flightrecd died"

python3 - "$T/otel.out" "$T/cpu.pb.gz" "$T/off.pb.gz" <<'PY' || fail "samples do not carry their thread's context"
import sys
from pprof_samples import samples

roles = {}
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) == 2:
        roles[int(w[0])] = w[1]

def ids(trace, span):
    t = bytes([trace] * 16)
    t = t[:1] + b"\x00" + t[2:]
    return t.hex(), bytes([span] * 8).hex()

def ctx(s):
    """The context labels of a sample: (trace_id, span_id, {attr: value})."""
    l = s["str"]
    return (l.get("trace_id"), l.get("span_id"),
            {k: v for k, v in l.items() if k.startswith("otel.")})

A = ids(0x0A, 0xA1) + ({"otel.attr.0": "GET /a"},)
B = ids(0x0B, 0xB2) + ({"otel.attr.5": "tenant b"},)
ONE = ids(0x51, 0x11) + ({"otel.attr.1": "one"},)
TWO = ids(0x52, 0x22) + ({"otel.attr.1": "two"},)
SLEEP = ids(0x0C, 0xC3) + ({},)
NONE = (None, None, {})
ZERO = (None, None, {"otel.attr.2": "no trace"})
want = {"traced-a": A, "traced-b": B, "null": NONE, "invalid": NONE, "zero-ids": ZERO,
        "sleeper": SLEEP, "main": NONE}

bad = 0
unread = 0
total = {}
right = {}
sw = {"one": [0, 0], "two": [0, 0], "between": 0}
for s in samples(sys.argv[2]):
    n = s["values"][0]
    role = roles.get(s["num"].get("tid"), "?")
    c = ctx(s)
    total[role] = total.get(role, 0) + n
    if s["str"].get("flightrec.labels") == "unreadable: attributes not readable":
        # A read the kernel could not serve without a fault (a page being
        # moved): said so, rare, never a context without its attributes.
        unread += n
        continue
    if "flightrec.labels" in s["str"]:
        print("  %d sample(s) of %s say %s" % (n, role, s["str"]["flightrec.labels"]))
        bad += n
    if role == "switch":
        fn = "one" if "otel_spin_one" in s["frames"] else "two" if "otel_spin_two" in s["frames"] else None
        if fn is None:
            sw["between"] += n
            ok = c in (ONE, TWO)
        else:
            ok = c == (ONE if fn == "one" else TWO)
            sw[fn][0 if ok else 1] += n
    elif role in want:
        ok = c == want[role]
    else:
        ok = c == NONE
    if ok:
        right[role] = right.get(role, 0) + n
    else:
        bad += n
        print("  %d cpu sample(s) of %s (%s) carry %s" % (n, role, s["frames"][:1], c))
for r in sorted(total):
    print("cpu %-9s %5d samples, %5d with their context" % (r, total[r], right.get(r, 0)))
print("switch: otel_spin_one %d right, %d wrong; otel_spin_two %d right, %d wrong; %d elsewhere"
      % (sw["one"][0], sw["one"][1], sw["two"][0], sw["two"][1], sw["between"]))
if unread * 100 > sum(total.values()):
    print("%d cpu samples say their context was unreadable, of %d" % (unread, sum(total.values())))
    bad += 1
elif unread:
    print("%d cpu sample(s) say their context's attributes were unreadable" % unread)
for r in ("traced-a", "traced-b", "null", "invalid", "zero-ids", "switch", "sleeper"):
    if total.get(r, 0) < (50 if r == "sleeper" else 300):
        print("only %d cpu samples of %s" % (total.get(r, 0), r))
        bad += 1
if min(sw["one"][0], sw["two"][0]) < 100:
    print("too few samples in the switch's two functions")
    bad += 1

# Off-CPU: the sleeper's sleeps carry its context; nobody's carries another's.
off_total = off_right = 0
for s in samples(sys.argv[3]):
    n = s["values"][0]
    role = roles.get(s["num"].get("tid"), "?")
    c = ctx(s)
    if role == "sleeper" and "hrtimer_nanosleep" in s["frames"]:
        off_total += n
        off_right += n if c == SLEEP else 0
        if c != SLEEP:
            print("  %d sleep(s) of the sleeper carry %s" % (n, c))
    elif role == "switch":
        if c not in (ONE, TWO, NONE):
            print("  %d off-CPU sample(s) of switch carry %s" % (n, c))
            bad += n
    elif c not in (want.get(role, NONE), NONE):
        print("  %d off-CPU sample(s) of %s carry %s" % (n, role, c))
        bad += n
print("off-CPU: %d of the sleeper's %d sleeps carry its context" % (off_right, off_total))
if off_total < 100 or off_right != off_total:
    bad += 1
sys.exit(1 if bad else 0)
PY
kill "$OTEL_PID"
wait "$OTEL_PID" 2>/dev/null
stop_daemon
echo PASS
