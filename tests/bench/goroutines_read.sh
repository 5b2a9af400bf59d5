#!/bin/bash
# What `flightrec goroutines` costs on a Go service with many goroutines
# (tests/bench/go/many: N goroutines parked on a channel, the main one
# doing fixed units of CPU work): the wall time of the command (read,
# named, written as pprof; min/median/max of RUNS), the recorder's CPU
# time for it, and the target's work rate while the command runs in a
# loop against the rate just before (the target is never stopped). The
# peer: Go's own goroutine profile taken inside the program
# (pprof.Lookup("goroutine"), which stops the world), timed by the
# program itself.
#
#   tests/bench/goroutines_read.sh BUILD_DIR [GOROUTINES] [RUNS]
#
# Defaults: 100000 goroutines, 5 runs. Needs root and go.
set -u
B=${1:?usage: goroutines_read.sh BUILD_DIR [GOROUTINES] [RUNS]}
N=${2:-100000}
RUNS=${3:-5}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT

mkdir "$T/src" && cp "$SRC/tests/bench/go/many/main.go" "$T/src/"
(cd "$T/src" && GOCACHE=$T/gocache GOPATH=$T/gopath GO111MODULE=off GOFLAGS= \
	go build -o "$T/many" .) || exit 1
"$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/s" >"$T/d.log" 2>&1 &
D=$!
export FLIGHTREC_SOCKET=$T/s
for _ in $(seq 100); do "$B/tools/flightrec" status >/dev/null 2>&1 && break; sleep 0.1; done
"$T/many" -n "$N" >"$T/many.out" &
G=$!
for _ in $(seq 600); do grep -q '^ready' "$T/many.out" && break; sleep 0.1; done
grep -q '^ready' "$T/many.out" || { echo "the program did not start"; exit 1; }

cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
rate() { # units per 500 ms over the lines printed in the last SECONDS
	sleep "$1"
	tail -n "$(($1 * 2))" "$T/many.out" | awk '/^units/ { s += $2; n++ } END { printf "%.0f", s / n }'
}

walls=()
c0=$(cpu_ms $D)
for _ in $(seq "$RUNS"); do
	t0=$(now_ms)
	"$B/tools/flightrec" goroutines --pid "$G" -o "$T/g.pb.gz" 2>"$T/g.err" || { cat "$T/g.err"; exit 1; }
	walls+=($(($(now_ms) - t0)))
done
c1=$(cpu_ms $D)
listed=$(sed -n 's/.* \([0-9]*\) goroutines.*/\1/p' "$T/g.err" | head -1)
read -r wmin wmed wmax <<<"$(printf '%s\n' "${walls[@]}" | sort -n |
	awk '{ v[NR] = $1 } END { print v[1], v[int((NR + 1) / 2)], v[NR] }')"
kill -USR1 "$G"
sleep 3
goprof=$(grep '^goprofile_ms' "$T/many.out" | tail -1 | awk '{ print $2 }')

before=$(rate 4)
( while :; do "$B/tools/flightrec" goroutines --pid "$G" -o "$T/g2.pb.gz" 2>/dev/null; done ) &
L=$!
during=$(rate 4)
kill $L; wait $L 2>/dev/null
after=$(rate 4)

echo "goroutines: $N parked ($listed listed; $(stat -c %s "$T/g.pb.gz") bytes of pprof)"
echo "flightrec goroutines: wall ${wmin}/${wmed}/${wmax} ms (min/median/max of $RUNS); recorder CPU $(((c1 - c0) / RUNS)) ms per call"
echo "Go's own goroutine profile (stops the world): ${goprof} ms; ratio $(awk -v a="$wmed" -v b="$goprof" 'BEGIN { printf "%.1f", a / b }')"
echo "target work rate: ${before} units/500ms before, ${during} while read in a loop, ${after} after ($(awk -v a="$before" -v b="$during" -v c="$after" 'BEGIN { printf "%+.1f%%", (b - (a + c) / 2) * 100 / ((a + c) / 2) }'))"
kill -TERM $D
