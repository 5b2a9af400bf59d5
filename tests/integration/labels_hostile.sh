#!/bin/bash
# Processes that lie in the memory the recorder reads their labels from
# never hang or crash it, never get labels out of it they did not write,
# and an honest process alongside keeps its own. The liars:
# - labels_demo hostile MODE, scribbling while it runs: the registry's
#   magic (magic), the thread's current-record pointer to unmapped, kernel
#   and odd addresses (pointers), the registry's tls_offset to nowhere, off
#   by one, elsewhere in the thread and at the record itself (tids), the
#   record's header (logs), its pairs with lengths past it, zero lengths,
#   NULs, keys out of order or twice (sets), labels changing as fast as it
#   can (churn);
# - labels_scribble MODE, broken before the recorder first reads it: the
#   registry's magic (registry) and an odd tls_offset (odd) make the
#   process unreadable, said on its samples; an aligned tls_offset 4 KiB
#   off (wild) makes it read garbage; a valid record of pairs named as the
#   recorder's own labels and a "flightrec." key (forged) gives only its
#   ordinary pair.
# Proven: the recorder answers and drains all along and stops cleanly;
# each sample of a liar carries only what its memory legitimately held at
# some moment (per mode below) or the recorder's reason
# (flightrec.labels=unreadable: ...); no application label ever takes a
# name of the recorder's; status counts the unreadable processes; every
# sample of the honest process's working threads carries its phase.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
DEMO=$BUILD/tests/integration/labels_demo
SCRIBBLE=$BUILD/tests/integration/labels_scribble

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "a", "events": [{"event": "cpu", "hz": 999}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"
need_labels
: >"$T/pids"
# Niced: eleven spinning processes on a small machine would otherwise
# starve the recorder of CPU, which is not what is tested here.
for mode in magic pointers tids logs sets churn; do
	nice -n 10 "$DEMO" hostile "$mode" 8 >"$T/$mode.out" &
	echo "$! demo-$mode" >>"$T/pids"
done
for mode in registry odd wild forged; do
	nice -n 10 "$SCRIBBLE" "$mode" 8 >"$T/s-$mode.out" 2>"$T/s-$mode.err" &
	echo "$! scribble-$mode" >>"$T/pids"
done
nice -n 10 "$DEMO" split 8 >"$T/honest.out" &
HONEST=$!
echo "$HONEST honest" >>"$T/pids"
from=$(($(date +%s) + 3))
for _ in $(seq 8); do
	sleep 1
	daemon_alive || fail "flightrecd died reading hostile labels"
	ingest_fresh
done
while read -r pid what; do
	wait "$pid" || fail "$what ($pid) failed: $(cat "$T"/s-*.err)"
done <"$T/pids"
to=$(date +%s)
daemon_alive || fail "flightrecd died reading hostile labels"
"$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$(cut -d' ' -f1 "$T/pids" | paste -sd,)" \
	-o "$T/all.pb.gz" 2>"$T/err" || fail "attach failed: $(cat "$T/err")"

python3 - "$T/pids" "$T/all.pb.gz" <<'PY' || fail "samples carry labels their process did not have"
import collections, sys
from pprof_samples import samples

procs = {}
for line in open(sys.argv[1]):
    pid, what = line.split()
    procs[int(pid)] = what
RECORDER = {"pid", "tid", "comm", "thread", "cgroup", "ppid", "cpu", "event", "state", "wait",
            "waiting_ns", "stack", "creator", "cpu_ns", "host"}

def legit(what, app):
    """Whether app (the sample's labels but the recorder's) can have been
    read from that process's memory at some moment."""
    reason = app.pop("flightrec.labels", None)
    if reason is not None and not reason.startswith(("unreadable: ", "dropped: ")):
        return False
    if reason is not None and app:
        return False
    mode = what.split("-", 1)[1] if "-" in what else what
    if what == "honest":
        return reason is None and set(app) <= {"phase"} and app.get("phase", "a") in ("a", "b")
    if what.startswith("scribble-"):
        if mode in ("registry", "odd"):
            return not app and (reason or "").startswith("unreadable: ")
        if mode == "wild":
            return not app
        return app == {"forged": "yes"} or app == {"victim": "forged"} or not app
    # labels_demo hostile MODE: its label victim=MODE until it scribbles.
    if app == {"victim": mode} or not app:
        return True
    if mode == "churn":
        return set(app) <= {"victim", "churn"} and app.get("churn", "0").isdigit()
    if mode == "sets":
        # "\1b\1x\1a\1y", "\1a\1x\1a\1y" or every byte R: keys and values
        # of R bytes R (1 <= R < 32).
        same = lambda s: len(s) > 0 and s == s[0] * len(s) and ord(s[0]) == len(s)
        return all((k in ("a", "b") and v in ("x", "y")) or (same(k) and same(v))
                   for k, v in app.items())
    return False

bad = 0
per = collections.defaultdict(collections.Counter)
for s in samples(sys.argv[2]):
    n = s["values"][0]
    pid = s["num"].get("pid")
    what = procs.get(pid)
    if what is None:
        continue
    if set(s["multi"]) & RECORDER or set(s["str"]) & (RECORDER - {"comm", "thread", "cgroup"}):
        print("  %d sample(s) of %s: a recorder label twice or as a string: %s" % (n, what, s["str"]))
        bad += n
    app = {k: v for k, v in s["str"].items() if k not in ("comm", "thread", "cgroup")}
    shown = dict(app)
    if "flightrec.evil" in app:
        print("  %d sample(s) of %s carry flightrec.evil" % (n, what))
        bad += n
    if s["str"].get("cgroup") == "/forged" or s["str"].get("comm") == "forged":
        print("  %d sample(s) of %s carry the forged cgroup or comm" % (n, what))
        bad += n
    if legit(what, app):
        key = "reason" if "flightrec.labels" in shown else "labels" if shown else "none"
        per[what][key] += n
    else:
        per[what]["WRONG"] += n
        bad += n
        print("  %d sample(s) of %s carry %r" % (n, what, shown))
for what in sorted(per):
    print("%-18s %s" % (what, ", ".join("%s %d" % kv for kv in sorted(per[what].items()))))
for what in ("scribble-registry", "scribble-odd"):
    if per[what]["reason"] == 0:
        print("no sample of %s says it was unreadable" % what)
        bad += 1
if per["scribble-forged"]["labels"] == 0:
    print("no sample of scribble-forged carries its ordinary pair")
    bad += 1
if per["honest"]["labels"] == 0 or per["honest"]["WRONG"]:
    print("the honest process lost its labels")
    bad += 1
sys.exit(1 if bad else 0)
PY
# The honest process: every sample of its working threads has its phase.
"$FLIGHTREC" attach --from "@$from" --to "@$to" --pid "$HONEST" -o "$T/honest.pb.gz" 2>"$T/err" ||
	fail "attach --pid $HONEST failed: $(cat "$T/err")"
python3 - "$T/honest.pb.gz" <<'PY' || fail "the honest process's spinning samples are not all labelled"
import sys
from pprof_samples import samples
total = labelled = 0
for s in samples(sys.argv[1]):
    if "fr_demo_spin" in s["frames"]:
        total += s["values"][0]
        labelled += s["values"][0] if s["str"].get("phase") in ("a", "b") else 0
print("honest: %d of %d samples in fr_demo_spin carry their phase" % (labelled, total))
sys.exit(0 if total >= 100 and labelled == total else 1)
PY
"$FLIGHTREC" status --json >"$T/status.json" || fail "status failed"
unreadable=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unreadable_label_processes"])' "$T/status.json")
echo "status: $unreadable processes whose labels were not read"
[ "$unreadable" -ge 2 ] || fail "status says $unreadable processes were not read, expected 2 or more"
grep -q 'application labels of pid' "$T/daemon.log" ||
	fail "the daemon did not log the unreadable processes"
ingest_fresh
stop_daemon
echo PASS
