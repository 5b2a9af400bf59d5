#!/bin/bash
# Labels that change far faster than the sampling rate are still those of
# the instruction sampled (libflightrec, read at each sample): labels_trust
# recorded at 999 Hz, its samples of an 8 s window after the recorder found
# it. Proven:
# - a thread changing req ~20,000 times a second between a (25% of its
#   CPU) and b (75%): the split within 2 points, under 1% of its samples
#   without req, and no sample in the function running under one value
#   carries the other;
# - a thread created with pthread_create by a thread labelled tenant=acme,
#   setting none itself: every sample carries tenant=acme, and only that;
# - a thread labelling each request with a fresh req_id (160,000 or more
#   distinct values in the window): at least 99% of its samples carry one,
#   each a number of a request the program made within the window (no
#   value from before it, none it never used), nearly all distinct.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
TRUST=$BUILD/tests/integration/labels_trust

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels

"$TRUST" >"$T/trust.out" &
TRUST_PID=$!
wait_lines "$T/trust.out" ready
wait_labelled "$TRUST_PID" req_id
from=$(($(date +%s) + 1))
to=$((from + 8))
# Until the window is over (and a tick printed after it).
try_until 15 '[ "$(date +%s)" -gt "$to" ]'
"$FLIGHTREC" attach --from "@$from" --to "@$to" --hz 999 --pid "$TRUST_PID" \
	-o "$T/cpu.pb.gz" 2>"$T/err" || fail "attach failed: $(cat "$T/err")"
gzip -dc "$T/cpu.pb.gz" | grep -aq "could not be read" &&
	fail "chunks of the window could not be read (the query met the journal's merge)"
kill -USR1 "$TRUST_PID"
wait "$TRUST_PID" || fail "labels_trust failed"
grep -q '^done ' "$T/trust.out" || fail "labels_trust did not finish: $(tail -3 "$T/trust.out")"
daemon_alive || fail "flightrecd died"

python3 - "$T/trust.out" "$T/cpu.pb.gz" "$from" "$to" <<'PY'
import sys
from pprof_samples import samples

roles, ticks = {}, []
for line in open(sys.argv[1]):
    w = line.split()
    if w[0] == "tick":
        ticks.append((int(w[1]), int(w[2])))
    elif w[0] == "done":
        done = [int(x) for x in w[1:]]
    elif len(w) == 2:
        roles[int(w[0])] = w[1]
t0, t1 = int(sys.argv[3]) * 10**9, int(sys.argv[4]) * 10**9
# The requests of the window: from the one in course at its start (the
# last tick before) to the one in course at its end (the first tick after).
lo = max([r for t, r in ticks if t <= t0] or [0])
hi = min([r for t, r in ticks if t >= t1] or [done[0]])
print("requests %d..%d in the window: %d in 8 s (%d a second)" % (lo, hi, hi - lo, (hi - lo) / 8))
print("the churning thread changed its labels %d times in %.1f s of CPU (%d a second of CPU)"
      % (done[1], done[2] / 1e9, done[1] / (done[2] / 1e9)))
if hi - lo < 160000:
    print("SKIP: reqid made only %d requests in the window (160,000 wanted): too little CPU" % (hi - lo))
    sys.exit(77)

st = {r: {} for r in ("churn", "created", "reqid")}
wrong_fn = 0
bad_ids = []
ids = set()
for s in samples(sys.argv[2]):
    n = s["values"][0]
    role = roles.get(s["num"].get("tid"))
    app = {k: v for k, v in s["str"].items() if k not in ("comm", "thread", "cgroup")}
    if role == "churn":
        v = app.get("req", "none")
        st[role][v] = st[role].get(v, 0) + n
        if set(app) - {"req"}:
            print("  %d churn sample(s) carry %s" % (n, app))
            wrong_fn += n
        if ("trust_unit_a" in s["frames"] and v != "a") or ("trust_unit_b" in s["frames"] and v != "b"):
            print("  %d churn sample(s) in %s carry req=%s" % (n, s["frames"][:3], v))
            wrong_fn += n
    elif role == "created":
        k = "acme" if app == {"tenant": "acme"} else repr(app)
        st[role][k] = st[role].get(k, 0) + n
    elif role == "reqid":
        v = app.get("req_id")
        if v is None:
            st[role]["none"] = st[role].get("none", 0) + n
            continue
        st[role]["labelled"] = st[role].get("labelled", 0) + n
        if set(app) != {"req_id"} or not v.isdigit() or not lo <= int(v) <= hi:
            bad_ids.append((n, app))
        else:
            ids.add(int(v))

bad = 0
c = st["churn"]
total = sum(c.values())
a, b, none = c.get("a", 0), c.get("b", 0), c.get("none", 0)
share = 100.0 * a / (a + b) if a + b else 0
print("churn: %d samples, req=a %d, req=b %d, none %d: a %.2f%% of the labelled, %.2f%% unlabelled"
      % (total, a, b, none, share, 100.0 * none / max(total, 1)))
if total < 1000:
    print("too few samples of the churning thread"); bad += 1
if abs(share - 25) > 2:
    print("the split is not 25/75 within 2 points"); bad += 1
if none * 100 >= total:
    print("1% or more of the churning thread's samples carry no req"); bad += 1
if wrong_fn:
    print("%d churn samples carry another moment's labels" % wrong_fn); bad += 1
c = st["created"]
total = sum(c.values())
print("created: %d samples, %d with tenant=acme alone%s" % (total, c.get("acme", 0),
      "".join("; %d with %s" % (v, k) for k, v in c.items() if k != "acme")))
if total < 1000:
    print("too few samples of created"); bad += 1
if c.get("acme", 0) != total:
    print("not every sample of created carries tenant=acme alone"); bad += 1
c = st["reqid"]
total = sum(c.values())
lab = c.get("labelled", 0)
print("reqid: %d samples, %d with a req_id (%.2f%%), %d distinct values, %d outside %d..%d or not numbers"
      % (total, lab, 100.0 * lab / max(total, 1), len(ids), sum(n for n, _ in bad_ids), lo, hi))
for n, app in bad_ids[:10]:
    print("  %d sample(s) carry %s" % (n, app))
if total < 1000:
    print("too few samples of reqid"); bad += 1
if lab * 100 < 99 * total:
    print("fewer than 99% of reqid's samples carry a req_id"); bad += 1
if bad_ids:
    bad += 1
if len(ids) < 0.9 * (lab - sum(n for n, _ in bad_ids)):
    print("the req_id values are not nearly all distinct"); bad += 1
sys.exit(1 if bad else 0)
PY
status=$?
[ $status = 77 ] && skip "reqid made too few requests (the machine is too busy)"
[ $status = 0 ] || fail "samples do not carry the labels of their moment"
stop_daemon
echo PASS
