#!/bin/bash
# flightrec threads on a real recorder: a program with three threads
# blocked in read() on a pipe nobody writes, one sleeping in a loop and one
# spinning (block mix 3). The listing shows the readers blocked in read
# with fr_read_stuck on their stack and a waiting time that grows between
# two calls, the sleeper sleeping, the spinner running in fr_spin; --json
# agrees with /proc on state and CPU time; -o writes a pprof that go tool
# pprof reads, one sample per thread.
# Regression invalid_utf8_name: a thread named with bytes that are not
# UTF-8 (comm written by the process itself) gives valid JSON from
# threads --json and top --json, the bytes as U+FFFD.
. "$(dirname "$0")/lib.sh"
need_root_perf

cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "threads", "events": [{"event": "cpu", "hz": 99}, {"event": "offcpu"}]}]}
JSON
start_daemon --config "$T/config.json"

t_start=$(date +%s%N)
"$BLOCK" mix 3 >"$T/block.out" &
BLOCK_PID=$!
try_until 5 'grep -q "^pid=" "$T/block.out"'
wait_seals 3

"$FLIGHTREC" threads --pid "$BLOCK_PID" >"$T/text" 2>"$T/text.err" ||
	fail "threads failed: $(cat "$T/text.err")"
cat "$T/text"
grep -q "^process $BLOCK_PID: 6 threads" "$T/text" || fail "not 6 threads of $BLOCK_PID"
# The readers are one group: same state, wait and stack.
awk '/^3 threads: sleeping in read, waiting/ { g = 1; next } g && /^$/ { exit }
	g && /fr_read_stuck/ { s = 1 } END { exit !s }' "$T/text" ||
	fail "no group of 3 readers sleeping in read with fr_read_stuck on their stack"
# On a CPU, or waiting for one (preempted on a busy machine): R either way.
grep -Eq '^1 thread: (running|runnable, waiting .*)$' "$T/text" ||
	fail "the spinner is not shown running (or runnable)"
# A thread's name is its owner's choice: its escape byte is not printed.
grep -q $'\033' "$T/text" && fail "a thread name's escape sequence reached the output"
grep -qF 'rd?[2J' "$T/text" || fail "the reader named rd<ESC>[2J is not shown as rd?[2J"
# (The sleeper may be caught awake, "running" too: any such group will do.)
awk '/^1 thread: (running|runnable, waiting .*)$/ { g = 1; next } /^$/ { g = 0 } g && /fr_spin/ { s = 1 }
	END { exit !s }' "$T/text" || fail "the spinner's stack has no fr_spin"

# field JSONFILE NAME KEY: KEY of the first thread named NAME. Waiting
# times are exact: since the thread left the CPU, from the recorder's
# open-wait records of the seal the request forced.
field() {
	python3 -c 'import json,sys
for t in json.load(open(sys.argv[1]))["threads"]:
    if t["thread"] == sys.argv[2]:
        print(t.get(sys.argv[3], "")); break' "$@"
}
# The sleeper is asleep but for the moments it wakes: ask until seen so.
for _ in 1 2 3 4 5; do
	ticks0=$(awk '{ print $14 + $15 }' "/proc/$BLOCK_PID/task/$((BLOCK_PID))/stat")
	spin_tid=$(grep -l '^spinner$' /proc/"$BLOCK_PID"/task/*/comm | cut -d/ -f5)
	spin0=$(awk '{ print $14 + $15 }' "/proc/$BLOCK_PID/task/$spin_tid/stat")
	ta=$(date +%s%N)
	"$FLIGHTREC" threads --pid "$BLOCK_PID" --json >"$T/a.json" || fail "threads --json failed"
	tb=$(date +%s%N)
	spin1=$(awk '{ print $14 + $15 }' "/proc/$BLOCK_PID/task/$spin_tid/stat")
	[ "$(field "$T/a.json" sleeper state)" = sleeping ] && break
done
[ "$(field "$T/a.json" sleeper state)" = sleeping ] || fail "the sleeper is never sleeping: $(cat "$T/a.json")"
[ "$(field "$T/a.json" sleeper wait)" = nanosleep ] || fail "the sleeper is not in nanosleep"
case $(field "$T/a.json" spinner state) in
running | runnable) ;;
*) fail "the spinner is not running (or runnable)" ;;
esac
[ "$(field "$T/a.json" reader state)" = sleeping ] || fail "a reader is not sleeping"
[ "$(field "$T/a.json" reader wait)" = read ] || fail "a reader is not in read"
python3 - "$T/a.json" "$BLOCK_PID" "$spin_tid" "$spin0" "$spin1" "$(getconf CLK_TCK)" \
	"$t_start" "$ta" "$tb" <<'PY' ||
import json, sys
doc = json.load(open(sys.argv[1]))
pid, spin_tid, spin0, spin1, tck, t_start, ta, tb = (int(a) for a in sys.argv[2:])
tick = 1000000000 // tck
threads = doc["threads"]
assert len(threads) == 6, "%d threads" % len(threads)
for t in threads:
    assert t["pid"] == pid, t
    stat = open("/proc/%d/task/%d/stat" % (pid, t["tid"])).read()
    rest = stat[stat.rindex(")") + 2:].split()
    letter = {"running": "R", "runnable": "R", "sleeping": "S"}[t["state"]]
    if t["thread"] != "sleeper":
        assert rest[0] == letter, "tid %d: %s, /proc says %s" % (t["tid"], t["state"], rest[0])
    if t["tid"] == spin_tid:
        # CPU time read between two reads of /proc.
        assert spin0 * tick <= t["cpu_ns"] <= spin1 * tick, (spin0, t["cpu_ns"], spin1)
    else:
        ticks = int(rest[11]) + int(rest[12])
        assert abs(t["cpu_ns"] - ticks * tick) <= 2 * tick, (t, ticks)
    if t["thread"] == "reader":
        assert "fr_read_stuck" in t["stack"], t
        # Blocked since just after the start: the recorder's answer was
        # made between ta and tb, so it left the CPU between these.
        out_lo, out_hi = ta - t["waiting_ns"], tb - t["waiting_ns"]
        assert out_hi >= t_start and out_lo <= t_start + 1000000000, (t, t_start, ta, tb)
    if t["thread"] == "sleeper" and "waiting_ns" in t:
        # Asleep 20 ms at a time: its current sleep, not the sum of them.
        assert t["waiting_ns"] < 1000000000, t
print("json agrees with /proc")
PY
	fail "threads --json disagrees with /proc: $(cat "$T/a.json")"

w1=$(field "$T/a.json" reader waiting_ns)
sleep 2
"$FLIGHTREC" threads --pid "$BLOCK_PID" --json >"$T/b.json" || fail "threads --json failed"
w2=$(field "$T/b.json" reader waiting_ns)
echo "a reader waited $w1 ns, then $w2 ns"
[ "$w2" -gt "$((w1 + 2000000000))" ] || fail "the readers' waiting time did not grow by 2 s: $w1 -> $w2"

# -o: one sample per thread, labels go tool pprof groups by.
"$FLIGHTREC" threads --pid "$BLOCK_PID" -o "$T/t.pb.gz" >"$T/o.out" || fail "threads -o failed"
grep -q "6 threads of 1 processes" "$T/o.out" || fail "threads -o said: $(cat "$T/o.out")"
if [ -n "$GO" ] && [ -x "$GO" ]; then
	"$GO" tool pprof -symbolize=none -raw "$T/t.pb.gz" >"$T/t.raw" 2>&1 || fail "pprof cannot read it"
	[ "$(grep -c 'state:\[' "$T/t.raw")" = 6 ] || fail "not 6 samples with a state: $(cat "$T/t.raw")"
	grep -q 'wait:\[read\]' "$T/t.raw" || fail "no wait:[read] label"
fi

# A process that is gone, and one that never was: no threads, no error.
"$FLIGHTREC" threads --pid 999999999 >"$T/none" 2>&1 || fail "threads of no process failed"
grep -q '^no threads' "$T/none" || fail "threads of no process said: $(cat "$T/none")"
kill "$BLOCK_PID"

echo "case invalid_utf8_name" >&2
# bash writes its own comm (a builtin's redirection opens /proc/self in
# the shell itself), then spins so the recorder samples it under that name.
bash -c 'printf "bad\xff\xfe\xc0name" >/proc/self/comm; end=$((SECONDS + 8)); while [ $SECONDS -lt $end ]; do :; done' &
BAD_PID=$!
try_until 5 '[ "$(head -c 3 "/proc/$BAD_PID/comm")" = bad ]'
wait_seals 3
[ "$(head -c 3 "/proc/$BAD_PID/comm")" = bad ] || fail "the comm was not written: $(cat -v "/proc/$BAD_PID/comm")"
"$FLIGHTREC" threads --pid "$BAD_PID" --json >"$T/bad.json" 2>"$T/bad.err" ||
	fail "threads --json failed: $(cat "$T/bad.err")"
"$FLIGHTREC" top --window 2s --pid "$BAD_PID" --by process --json >"$T/badtop.json" 2>"$T/bad.err" ||
	fail "top --json failed: $(cat "$T/bad.err")"
kill "$BAD_PID"
python3 - "$T/bad.json" "$T/badtop.json" <<'PY' || fail "JSON with a name of invalid UTF-8: $(cat -v "$T/bad.json" "$T/badtop.json")"
import json, sys
# Strict UTF-8: raw bytes of the name would make decode() fail.
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
names = [t["thread"] for t in doc["threads"]]
assert names == ["bad\ufffd\ufffd\ufffdname"], names
rows = json.loads(open(sys.argv[2], "rb").read().decode("utf-8"))
assert rows and all(r["group"].startswith("bad\ufffd\ufffd\ufffdname[") for r in rows), rows
print("invalid UTF-8 names: U+FFFD in threads --json and top --json")
PY
echo "ok"
