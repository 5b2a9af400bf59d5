#!/bin/bash
# What Python frames cost: CPython processes busy on every CPU
# (tests/integration/py/stacks_app.py, run by a wrapper that counts its
# handle() calls and writes their rate when done), under a recorder at 99 Hz
# and at 999 Hz that reads their Python frames, against the same
# recorder told to read none (FLIGHTREC_PYTHON=off in its environment:
# no process is put in the programs' Python map, so samples are as they
# were before Python frames were read), and against no recorder at all. For each: the recorder's
# CPU per second and the programs' loop rate (handle() calls per second),
# min/median/max of RUNS runs of SECONDS each.
#
#   tests/bench/python_overhead.sh BUILD_DIR [SECONDS] [RUNS] [PYTHON]
#
# Defaults: 10 s, 3 runs, /usr/bin/python3. Needs root.
set -u
B=${1:?usage: python_overhead.sh BUILD_DIR [SECONDS] [RUNS] [PYTHON]}
SECS=${2:-10}
RUNS=${3:-3}
PY=${4:-/usr/bin/python3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
NCPU=$(nproc)

# The app, counting its handle() calls in a file.
sed 's/^        handle()$/        handle(); count[0] += 1/' "$SRC/tests/integration/py/stacks_app.py" |
	sed 's/^def main(stop):$/count = [0]\ndef main(stop):/' >"$T/app.py"
# The app imported, its main called here beside a thread that counts.
cat >"$T/run.py" <<'PY'
import importlib.util, sys, threading, time
stop, out, secs, path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
spec = importlib.util.spec_from_file_location("app", path)
src = open(path).read().replace("\nmain(sys.argv[1])\n", "\n")
app = importlib.util.module_from_spec(spec)
exec(compile(src, path, "exec"), app.__dict__)
def report():
    time.sleep(1)
    c0 = app.count[0]; t0 = time.monotonic()
    time.sleep(secs)
    c1 = app.count[0]; t1 = time.monotonic()
    open(out, "w").write("%.1f\n" % ((c1 - c0) / (t1 - t0)))
    open(stop, "w").close()
threading.Thread(target=report, daemon=True).start()
app.main(stop)
PY

cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"; }

# one MODE HZ: prints "recorder_cpu_ms_per_s loops_per_s" of one run.
one() {
	local mode=$1 hz=$2 d="" c0=0 c1=0 rates=0
	rm -rf "$T/ring" "$T/symbols" "$T/stop".* "$T/rate".*
	if [ "$mode" != none ]; then
		if [ "$mode" = off ]; then
			FLIGHTREC_PYTHON=off "$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/s" \
				--hz "$hz" >"$T/d.log" 2>&1 &
		else
			"$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/s" --hz "$hz" \
				>"$T/d.log" 2>&1 &
		fi
		d=$!
		for _ in $(seq 100); do
			FLIGHTREC_SOCKET=$T/s "$B/tools/flightrec" status >/dev/null 2>&1 && break
			sleep 0.1
		done
		c0=$(cpu_ms "$d")
	fi
	for i in $(seq "$NCPU"); do
		"$PY" "$T/run.py" "$T/stop.$i" "$T/rate.$i" "$SECS" "$T/app.py" >/dev/null &
	done
	wait $(jobs -p | grep -v "^${d:-x}$") 2>/dev/null
	if [ -n "$d" ]; then
		c1=$(cpu_ms "$d")
		kill "$d"
		wait "$d" 2>/dev/null
	fi
	rates=$(cat "$T"/rate.* | awk '{ s += $1 } END { printf "%.1f", s }')
	awk -v c=$((c1 - c0)) -v s="$SECS" -v r="$rates" 'BEGIN { printf "%.1f %s\n", c / (s + 1), r }'
}

stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%s/%s/%s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }

echo "python: $PY; $NCPU processes; $SECS s x $RUNS runs; min/median/max"
for hz in 99 999; do
	for mode in none off on; do
		[ "$mode" = none ] && [ "$hz" = 999 ] && continue
		: >"$T/res"
		for _ in $(seq "$RUNS"); do one "$mode" "$hz" >>"$T/res"; done
		printf "%-5s %4s Hz: recorder CPU ms/s %s; handle() calls/s %s\n" "$mode" "$hz" \
			"$(awk '{ print $1 }' "$T/res" | stats)" "$(awk '{ print $2 }' "$T/res" | stats)"
	done
done
