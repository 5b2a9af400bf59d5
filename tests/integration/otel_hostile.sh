#!/bin/bash
# A process that exports the OpenTelemetry thread context and then breaks
# every rule of its record (otel_garbage: pointers to nowhere, to pages that
# fault, records claiming 64 KiB of attributes, a record at the end of its
# mapping, random bytes rewritten in place, a pointer swapped as fast as a
# thread can) runs beside an honest publisher (otel_ctx). Proven:
# - the recorder neither dies nor stalls: status answers all along, its
#   ingest thread is not stalled and drained within the last 2 s, its
#   eBPF program counted the failed reads, and it stops cleanly;
# - a valid record whose attributes lie in a page that faults is said to be
#   unreadable (flightrec.labels), never shown as its ids without them;
# - no sample of the hostile process carries an id the process could not
#   have had: none, or the ids of the record its pointer could have held
#   at that instruction (for the rapid swapper, trace, span and attribute
#   always of one record, never mixed), never the honest process's;
# - every sample of the honest process's traced threads keeps its own
#   trace_id and span_id, and its switching thread's samples carry the
#   record of the function they are in.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
GARBAGE=$BUILD/tests/integration/otel_garbage
OTEL=$BUILD/tests/integration/otel_ctx

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels

# Niced: thirteen spinning threads on a small machine would otherwise
# starve the recorder of CPU, which is not what is tested here.
nice -n 10 "$GARBAGE" >"$T/garbage.out" &
GARBAGE_PID=$!
nice -n 10 "$OTEL" aa >"$T/otel.out" &
OTEL_PID=$!
wait_lines "$T/garbage.out" ready
wait_lines "$T/otel.out" ready
wait_labelled "$OTEL_PID" trace_id
wait_labelled "$GARBAGE_PID" trace_id
from=$(($(date +%s) + 1))
# Six seconds of both, the recorder's health looked at each second.
for _ in $(seq 6); do
	sleep 1
	daemon_alive || fail "flightrecd died reading hostile thread contexts"
	ingest_fresh
done
to=$((from + 5))
faults=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["labels"]["read_faults"])' "$T/status.json")
echo "the labels program counted $faults failed reads"
[ "$faults" -gt 0 ] || fail "no read of the hostile pointers failed: were they read at all?"
"$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$GARBAGE_PID,$OTEL_PID" \
	-o "$T/cpu.pb.gz" 2>"$T/err" || fail "attach failed: $(cat "$T/err")"

python3 - "$T/garbage.out" "$T/otel.out" "$T/cpu.pb.gz" "$GARBAGE_PID" "$OTEL_PID" <<'PY' ||
import re, sys
from pprof_samples import samples

def roles(path):
    r = {}
    for line in open(path):
        w = line.split()
        if len(w) == 2:
            r[int(w[0])] = w[1]
    return r

groles, oroles = roles(sys.argv[1]), roles(sys.argv[2])
gpid, opid = int(sys.argv[4]), int(sys.argv[5])

def ids(trace, span, second=None):
    t = bytearray([trace] * 16)
    if second is not None:
        t[1] = second
    return bytes(t).hex(), bytes([span] * 8).hex()

HUGE, END = ids(0x71, 0x17), ids(0x72, 0x27)
R1, R2 = ids(0x73, 0x37) + ({"otel.attr.0": "r1"},), ids(0x74, 0x47) + ({"otel.attr.0": "r2"},)
E = re.compile(r"^(e[0-9a-f])+$")

def ctx(s):
    l = s["str"]
    return (l.get("trace_id"), l.get("span_id"),
            {k: v for k, v in l.items() if k.startswith("otel.")})

def legit(role, c):
    """Whether the context c can have been read from the thread's memory."""
    t, sp, attrs = c
    if role in ("unmapped", "absent", "main"):
        return c == (None, None, {})
    if role == "huge":
        return (t, sp) in (HUGE, (None, None))
    if role == "end":
        # Its record's attributes are in a page that faults: unreadable,
        # never its ids without them.
        return c == (None, None, {})
    if role == "random":
        return (t is None or (len(t) == 32 and E.match(t))) and \
               (sp is None or (len(sp) == 16 and E.match(sp))) and (t is None) == (sp is None)
    if role == "rapid":
        return c in (R1, R2, (None, None, {}))
    return False

bad = 0
seen = {}
for s in samples(sys.argv[3]):
    n = s["values"][0]
    pid, tid = s["num"].get("pid"), s["num"].get("tid")
    c = ctx(s)
    if len([k for k in s["str"] if k not in ("comm", "thread", "cgroup")]) > 16:
        print("  %d sample(s) of %d carry more than 16 application labels" % (n, tid))
        bad += n
    if pid == gpid:
        role = groles.get(tid, "?")
        ok = legit(role, c)
        key = role
    elif pid == opid:
        role = oroles.get(tid, "?")
        A = ids(0x0A, 0xA1, 0xAA) + ({"otel.attr.0": "GET /a"},)
        B = ids(0x0B, 0xB2, 0xAA) + ({"otel.attr.5": "tenant b"},)
        ONE = ids(0x51, 0x11, 0xAA) + ({"otel.attr.1": "one"},)
        TWO = ids(0x52, 0x22, 0xAA) + ({"otel.attr.1": "two"},)
        if role == "traced-a":
            ok = c == A
        elif role == "traced-b":
            ok = c == B
        elif role == "switch" and "otel_spin_one" in s["frames"]:
            ok = c == ONE
        elif role == "switch" and "otel_spin_two" in s["frames"]:
            ok = c == TWO
        else:
            ok = True
        key = "honest " + role
    else:
        continue
    st = seen.setdefault(key, [0, 0, 0, 0])
    st[0] += n
    st[1] += n if c[0] else 0
    st[3] += n if s["str"].get("flightrec.labels") == "unreadable: attributes not readable" else 0
    if not ok:
        st[2] += n
        bad += n
        print("  %d sample(s) of %s carry %s" % (n, key, c))
for k in sorted(seen):
    print("%-16s %5d samples, %5d with a trace_id, %d wrong" % (k, seen[k][0], seen[k][1], seen[k][2]))
for k in ("huge", "end", "random", "rapid", "unmapped", "absent", "honest traced-a", "honest traced-b"):
    if seen.get(k, [0])[0] < 100:
        print("only %d samples of %s" % (seen.get(k, [0])[0], k))
        bad += 1
# The valid records were read: the hostile process was not just ignored.
for k in ("huge", "rapid"):
    if seen.get(k, [0, 0])[1] == 0:
        print("no sample of %s carries a trace_id: its records were never read" % k)
        bad += 1
if seen.get("end", [0, 0, 0, 0])[3] == 0:
    print("no sample of end says its attributes were not readable")
    bad += 1
sys.exit(1 if bad else 0)
PY
	fail "samples carry contexts their thread did not have"
kill "$GARBAGE_PID" "$OTEL_PID"
wait "$GARBAGE_PID" "$OTEL_PID" 2>/dev/null
ingest_fresh
stop_daemon
echo PASS
