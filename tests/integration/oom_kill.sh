#!/bin/bash
# An OOM kill is recorded: a program (oom_hog) touches memory until the
# OOM killer of its memory cgroup (64 MiB, no swap) kills it, under a
# recorder whose session has the trigger {"on": "oom"}. Then:
#  - the log says "oom: killed pid P (oom_hog) in cgroup C, RSS N MiB";
#  - the trigger wrote a dump (profile and sidecar) whose sidecar names
#    the victim: pid, comm, cgroup and its RSS (32..80 MiB);
#  - the victim opted in to allocation sampling (LD_PRELOAD of
#    libflightrec.so) and the session records alloc: the dump's profile
#    has its heap at the kill (>= 32 MiB in use), most of it at
#    oom_hog's touch, which allocated it;
#  - `flightrec timeline --event oom` counts one kill for the victim, and
#    its JSON lists it with its RSS;
#  - attach and dump refuse --event oom, pointing at the timeline.
# The memory cgroup is cgroup v2's (memory.max, memory.swap.max) where the
# unified hierarchy has the memory controller, else v1's
# (memory.limit_in_bytes, memory.memsw.limit_in_bytes); it is removed at
# the end.
. "$(dirname "$0")/lib.sh"
need_root_perf
HOG=$BUILD/tests/integration/oom_hog
LIB=$BUILD/lib/libflightrec.so
[ -x "$HOG" ] || fail "oom_hog was not built"
[ -r /sys/kernel/tracing/events/oom/mark_victim/format ] ||
	[ -r /sys/kernel/debug/tracing/events/oom/mark_victim/format ] ||
	[ -d /sys/kernel/tracing ] ||
	skip "no tracefs for the oom:mark_victim tracepoint"

# A memory cgroup of 64 MiB without swap.
memory_cgroup "fr-oom-$$"
trap 'rmdir "$CG" 2>/dev/null; cleanup' EXIT

mkdir -m 0700 "$T/dumps"
cat >"$T/config.json" <<JSON
{"dumps": {"dir": "$T/dumps"},
 "sessions": [{"name": "mem", "events": [{"event": "cpu", "hz": 99},
                                         {"event": "alloc", "mean": "512KiB"}],
               "triggers": [{"on": "oom", "window": "10s"}]}]}
JSON
start_daemon --config "$T/config.json"
state=$(status_value '[e["state"] for e in d["events"] if e["event"] == "oom"][0]')
[ "$state" = recording ] ||
	skip "the recorder cannot record OOM kills here: $(status_value '[e.get("error") for e in d["events"] if e["event"] == "oom"]')"
wait_seals 1

# The hog in the cgroup, killed by its OOM killer (SIGKILL: 137).
# It grows for a second or two (a MiB each 20 ms), as a leak does, once
# the recorder reads its ring and has had a second for its unwind tables:
# what this test checks is the heap at the kill. (A process that dies in
# its first moments has what it allocated before the recorder found it
# and built its tables read when it ends, its stacks then cut short;
# docs/architecture.md "Allocation samples".)
OOM_HOG_GO=$T/go OOM_HOG_PACE_MS=20 \
	sh -c 'echo $$ >"$1/cgroup.procs" && LD_PRELOAD=$3 exec "$2"' sh "$CG" "$HOG" "$LIB" \
	>"$T/hog.out" 2>&1 &
hog=$!
wait_until 10 "oom_hog's pid" '[ -s "$T/hog.out" ]'
PID=$(head -1 "$T/hog.out")
alloc_procs() { status_value 'd["alloc"]["processes"]'; }
wait_until 20 "the recorder reading oom_hog's allocation ring" '[ "$(alloc_procs)" -ge 1 ] 2>/dev/null'
sleep 1
touch "$T/go"
wait "$hog"
rc=$?
[ "$rc" = 137 ] || fail "oom_hog was not killed by the OOM killer (exit $rc): $(cat "$T/hog.out")"
[ -n "$PID" ] || fail "oom_hog did not say its pid"

wait_until 10 "the log line of the kill" \
	'grep -Eq "warn flightrecd: oom: killed pid $PID \(oom_hog\) in cgroup [^ ]+, RSS [0-9.]+ MiB$" "$T/daemon.log"'
wait_until 20 "the oom dump" 'ls "$T"/dumps/mem-oom-*.json >/dev/null 2>&1'
SIDECAR=$(ls "$T"/dumps/mem-oom-*.json | head -1)
[ -s "${SIDECAR%.json}.pb.gz" ] || fail "the dump has no profile beside $SIDECAR"
python3 - "$SIDECAR" "$PID" <<'PY' || fail "the sidecar does not name the victim: $(cat "$SIDECAR")"
import json, sys
s = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
v = s["victim"]
assert s["trigger"] == "oom" and s["pid"] == pid, s
assert v["pid"] == pid and v["comm"] == "oom_hog" and v["cgroup"], v
assert 32 << 20 <= v["rss"] <= 80 << 20, v["rss"]
assert "oom_hog" in s["reason"] and str(pid) in s["reason"], s["reason"]
PY

# Its heap at the kill, in the dump: what it allocated and still held.
read -r touch total < <(python3 "$(dirname "$0")/pprof_samples.py" sum "${SIDECAR%.json}.pb.gz" \
	inuse_space "pid=$PID" touch)
echo "the victim's heap at the kill: $((${total:-0} >> 20)) MiB, $((${touch:-0} >> 20)) MiB at touch"
# Most of it at touch: a new process's first samples may come before its
# unwind tables are built, their stacks ending "[truncated: unwind table
# not ready]" (a fifth of the heap once, in a full run).
[ "${total:-0}" -ge $((32 << 20)) ] && [ $((touch * 2)) -ge "$total" ] ||
	fail "the dump has not the victim's heap at the kill: $touch of $total bytes in use at touch"

# The ring has it: one kill for the victim, listed with its RSS.
"$FLIGHTREC" timeline --event oom --window 2m --step 1s --json >"$T/oom.json" 2>"$T/err" ||
	fail "timeline --event oom failed: $(cat "$T/err")"
python3 - "$T/oom.json" "$PID" <<'PY' || fail "the oom timeline: $(cat "$T/oom.json")"
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
assert d["event"] == "oom" and d["unit"] == "count", d["unit"]
g = [g for g in d["groups"] if g.get("pid") == pid]
assert g and g[0]["total"] == 1 and sum(1 for x in g[0]["values"] if x) == 1, g
v = [v for v in d["victims"] if v["pid"] == pid]
assert len(v) == 1 and v[0]["comm"] == "oom_hog" and v[0]["cgroup"], v
assert 32 << 20 <= v[0]["rss"] <= 80 << 20, v[0]["rss"]
PY
"$FLIGHTREC" timeline --event oom --window 2m >"$T/oom.txt" 2>"$T/err" ||
	fail "timeline --event oom (text) failed: $(cat "$T/err")"
grep -Eq "^killed [0-9:]+ UTC: pid $PID \(oom_hog\) in cgroup .*, RSS [0-9.]+ MiB$" "$T/oom.txt" ||
	fail "the text timeline does not list the victim: $(cat "$T/oom.txt")"

# A profile of kills would read like one of CPU: refused, with the way.
for cmd in attach "dump --ring $RING"; do
	# shellcheck disable=SC2086
	"$FLIGHTREC" $cmd --event oom --window 1m -o "$T/x.pb.gz" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || fail "$cmd --event oom: exit $rc, want 2"
	grep -q 'oom is a series over time, not a profile: see `flightrec timeline --event oom`' "$T/err" ||
		fail "$cmd --event oom: $(cat "$T/err")"
done
stop_daemon
echo "PASS"
