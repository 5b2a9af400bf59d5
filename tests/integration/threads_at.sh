#!/bin/bash
# flightrec dump --ring FILE --threads after a crash: three threads blocked
# in read() on a pipe nobody writes (block mix 3) are recorded with cpu and
# offcpu; the recorder is killed with -9 while they are blocked. From the
# ring alone, the readers are shown blocked with fr_read_stuck on their
# stack and a waiting time that puts their switch-out at their start; the
# spinner is running; --at an earlier moment gives the wait they had then,
# from the dead recorder's ring and, before it died, through the daemon
# (flightrec threads --at). The process is chosen by pid, by its command
# name (a shell that exec'd a copy of block named for this test) and by
# its cgroup v2 (a child of one created for this test), as they were at
# that moment: each way gives the readers of that process and no other.
. "$(dirname "$0")/lib.sh"
need_root_perf

CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG_ROOT" ] && [ -w "$CG_ROOT/cgroup.procs" ] || skip "needs a writable cgroup v2 hierarchy"
CG_NAME=frtest-at-$$
CG_DIR=$CG_ROOT/$CG_NAME
mkdir "$CG_DIR" "$CG_DIR/job" || fail "cannot create $CG_DIR/job"
BLOCK_PID=
cleanup_cgroup() {
	if [ -n "$BLOCK_PID" ]; then
		kill -9 "$BLOCK_PID" 2>/dev/null
		wait "$BLOCK_PID" 2>/dev/null
	fi
	rmdir "$CG_DIR/job" "$CG_DIR" 2>/dev/null
	cleanup
}
trap cleanup_cgroup EXIT
# A name of its own (the kernel keeps 15 characters), so that no other
# process on the machine matches --comm.
COMM=frat$$
COMM=${COMM:0:15}
cp "$BLOCK" "$T/$COMM"

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "threads", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"

# The shell joins the cgroup, then becomes the program: the ring sees its
# name change at the exec.
sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" mix 3' sh "$CG_DIR/job" "$T/$COMM" \
	>"$T/block.out" &
BLOCK_PID=$!
try_until 5 'grep -q "^pid=" "$T/block.out"'
t_start=$(date +%s%N)
sleep 4
t_mid=$(date +%s.%N)
wait_seals
"$FLIGHTREC" threads --pid "$BLOCK_PID" --at "$t_mid" --json >"$T/daemon_mid.json" ||
	fail "threads --at failed"
"$FLIGHTREC" threads --pid "$BLOCK_PID" --json >"$T/now.json" || fail "threads failed"
python3 - "$T/daemon_mid.json" "$T/now.json" "$t_start" "$t_mid" <<'PY' ||
import json, sys
mid, now = (json.load(open(p)) for p in sys.argv[1:3])
t_start, t_mid = int(sys.argv[3]), int(float(sys.argv[4]) * 1e9)
r_mid = [t for t in mid["threads"] if t["thread"].startswith("r")]
r_now = [t for t in now["threads"] if t["thread"].startswith("r")]
assert len(r_mid) == 3 and len(r_now) == 3, (mid, now)
for t in r_mid:
    assert t["state"] == "blocked" and "fr_read_stuck" in t["stack"], t
    assert t_start - 2e9 <= t_mid - t["waiting_ns"] <= t_start + 2e9, (t, t_mid, t_start)
assert max(t["waiting_ns"] for t in r_mid) < min(t["waiting_ns"] for t in r_now) - 1e9, (mid, now)
print("through the daemon: %.1f s at --at, %.1f s now" % (
    max(t["waiting_ns"] for t in r_mid) / 1e9, min(t["waiting_ns"] for t in r_now) / 1e9))
PY
	fail "threads --at disagrees: $(cat "$T/daemon_mid.json")"
CGROUP=$(sed -n 's/^0:://p' /proc/"$BLOCK_PID"/cgroup)
[ "${CGROUP##*/}" = job ] || fail "block is in cgroup '$CGROUP', not $CG_NAME/job"
CGROUP_PARENT=${CGROUP%/job}

# check_readers FILE WHAT: the answer in FILE has the 3 readers blocked
# in fr_read_stuck, since about t_start, and only threads of block.
check_readers() {
	python3 - "$1" "$BLOCK_PID" "$t_start" "$t_mid" <<'PY' || fail "$2: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
pid, t_start, t_mid = int(sys.argv[2]), int(sys.argv[3]), int(float(sys.argv[4]) * 1e9)
assert doc["threads"] and all(t["pid"] == pid for t in doc["threads"]), doc
r = [t for t in doc["threads"] if t["thread"].startswith("r")]
assert len(r) == 3, doc
for t in r:
    assert t["state"] == "blocked" and "fr_read_stuck" in t["stack"], t
    assert t_start - 2e9 <= t_mid - t["waiting_ns"] <= t_start + 2e9, (t, t_mid, t_start)
PY
}

# check_none FILE WHAT: the answer in FILE lists no thread.
check_none() {
	python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["threads"] == []' "$1" ||
		fail "$2: $(cat "$1")"
}

"$FLIGHTREC" threads --comm "$COMM" --at "$t_mid" --json >"$T/d_comm.json" ||
	fail "threads --comm --at failed"
check_readers "$T/d_comm.json" "threads --comm $COMM --at"
"$FLIGHTREC" threads --cgroup "$CGROUP_PARENT" --at "$t_mid" --json >"$T/d_cg.json" ||
	fail "threads --cgroup --at failed"
check_readers "$T/d_cg.json" "threads --cgroup $CGROUP_PARENT --at"
"$FLIGHTREC" threads --comm "$COMM" --cgroup "$CGROUP" --at "$t_mid" --json >"$T/d_both.json" ||
	fail "threads --comm --cgroup --at failed"
check_readers "$T/d_both.json" "threads --comm --cgroup --at"
# The program's name was "sh" only before the exec, and a cgroup whose
# name merely starts as ours is not ours.
"$FLIGHTREC" threads --comm sh --cgroup "$CGROUP" --at "$t_mid" --json >"$T/d_sh.json" ||
	fail "threads --comm sh --at failed"
check_none "$T/d_sh.json" "threads --comm sh --at lists the program"
"$FLIGHTREC" threads --cgroup "${CGROUP_PARENT}x" --at "$t_mid" --json >"$T/d_cgx.json" ||
	fail "threads --cgroup ...x --at failed"
check_none "$T/d_cgx.json" "threads --cgroup ${CGROUP_PARENT}x --at lists block"
wait_seals
kill9_daemon
kill "$BLOCK_PID"

"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" >"$T/text" 2>"$T/text.err" ||
	fail "dump --threads failed: $(cat "$T/text.err")"
cat "$T/text.err" "$T/text"
grep -q "^process $BLOCK_PID: 6 threads" "$T/text" || fail "not 6 threads of $BLOCK_PID"
awk '/^3 threads: blocked, waiting/ { g = 1; next } g && /^$/ { exit }
	g && /fr_read_stuck/ { s = 1 } END { exit !s }' "$T/text" ||
	fail "no group of 3 readers blocked with fr_read_stuck on their stack"
grep -q "kernel's exact state is not recorded" "$T/text.err" || fail "no word on the state's source"

"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" --json >"$T/last.json" ||
	fail "dump --threads --json failed"
"$FLIGHTREC" dump --ring "$RING" --info --json >"$T/info.json" || fail "dump --info failed"
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$BLOCK_PID" --at "$t_mid" --json \
	>"$T/mid.json" || fail "dump --threads --at failed"
python3 - "$T/last.json" "$T/mid.json" "$T/info.json" "$t_start" "$t_mid" <<'PY' ||
import json, sys
last, mid, info = (json.load(open(p)) for p in sys.argv[1:4])
t_start, t_mid = int(sys.argv[4]), int(float(sys.argv[5]) * 1e9)
seal = info["ring"]["newest_ns"]
def readers(doc):
    r = [t for t in doc["threads"] if t["thread"].startswith("r")]  # reader, rd<ESC>[2J
    assert len(r) == 3, doc
    for t in r:
        assert t["state"] == "blocked" and "fr_read_stuck" in t["stack"], t
        assert "cpu_ns" not in t, t  # not in the ring: not shown as 0
    return r
spin = [t for t in last["threads"] if t["thread"] == "spinner"]
# On a CPU, or preempted and waiting for one at the seal (the recorder
# says which): never blocked.
assert spin and spin[0]["state"] in ("running", "runnable"), last
for t in readers(last):
    # Blocked since just after the start (switch-out = last seal - wait).
    out = seal - t["waiting_ns"]
    assert t_start - 2e9 <= out <= t_start + 2e9, (t, seal, t_start)
w_last = max(t["waiting_ns"] for t in readers(last))
w_mid = max(t["waiting_ns"] for t in readers(mid))
assert w_mid < w_last - 2e9, (w_mid, w_last)
assert abs((t_mid - w_mid) - (seal - w_last)) < 1.5e9, (t_mid, w_mid, seal, w_last)
print("readers blocked: %.1f s at the crash, %.1f s at --at" % (w_last / 1e9, w_mid / 1e9))
PY
	fail "dump --threads disagrees: $(cat "$T/last.json") $(cat "$T/mid.json")"

# From the dead recorder's ring: by name and by cgroup as then.
"$FLIGHTREC" dump --ring "$RING" --threads --comm "$COMM" --at "$t_mid" --json >"$T/comm.json" ||
	fail "dump --threads --comm --at failed"
check_readers "$T/comm.json" "dump --threads --comm $COMM --at"
"$FLIGHTREC" dump --ring "$RING" --threads --cgroup "$CGROUP_PARENT" --at "$t_mid" --json \
	>"$T/cg.json" || fail "dump --threads --cgroup --at failed"
check_readers "$T/cg.json" "dump --threads --cgroup $CGROUP_PARENT --at"
"$FLIGHTREC" dump --ring "$RING" --threads --cgroup "${CGROUP_PARENT}x" --at "$t_mid" --json \
	>"$T/cgx.json" || fail "dump --threads --cgroup ...x --at failed"
check_none "$T/cgx.json" "dump --threads --cgroup ${CGROUP_PARENT}x --at lists block"
"$FLIGHTREC" dump --ring "$RING" --threads --cgroup "$CGROUP_PARENT" >"$T/cg.text" ||
	fail "dump --threads --cgroup failed"
grep -q "^process $BLOCK_PID: 6 threads" "$T/cg.text" || fail "--cgroup: not 6 threads of $BLOCK_PID"
"$FLIGHTREC" dump --ring "$RING" --threads --label a=b >/dev/null 2>&1 &&
	fail "dump --threads --label accepted"

"$FLIGHTREC" dump --ring "$RING" --at "$t_mid" >/dev/null 2>&1 && fail "--at without --threads accepted"
echo "ok"
