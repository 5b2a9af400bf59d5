#!/bin/bash
# What reading Go programs' pprof labels costs: the endpoints program
# (tests/integration/go/endpoints: one goroutine always under pprof.Do) at
# 999 Hz, read, against its peer built the same and run the same, whose
# .go.buildinfo section is renamed (so the recorder does not take it for
# Go and reads nothing of it). Runs alternate, each with a fresh recorder;
# reported: flightrecd's CPU time (user + system, /proc) and the labels
# program's (on_sample: kernel BPF statistics, switched on for the run and
# back off after), medians.
#
#   tests/bench/go_labels_cost.sh BUILD_DIR [SECONDS] [RUNS]
#
# Defaults: 10 s, 3 runs each. Needs root, go, objcopy and bpftool.
set -u
B=${1:?usage: go_labels_cost.sh BUILD_DIR [SECONDS] [RUNS]}
S=${2:-10}
RUNS=${3:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/flightrec-bench.XXXXXX)
STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'kill -9 $(jobs -p) 2>/dev/null; echo "$STATS" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$T"' EXIT
printf '{"sessions": [{"name": "b", "events": [{"event": "cpu", "hz": 999}]}]}\n' >"$T/c.json"

mkdir "$T/src" && cp "$SRC/tests/integration/go/endpoints/main.go" "$T/src/"
(cd "$T/src" && GOCACHE=$T/gocache GOPATH=$T/gopath GO111MODULE=off GOFLAGS= CGO_ENABLED=0 \
	go build -o "$T/read" .) || exit 1
objcopy --rename-section .go.buildinfo=.go.notinfo "$T/read" "$T/unread" || exit 1
echo 1 >/proc/sys/kernel/bpf_stats_enabled

cpu_ms() { # cpu_ms PID: user + system CPU time in ms
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"
}

prog_ns() { # prog_ns: run_time_ns and run_cnt of every program named on_sample
	bpftool prog show name on_sample -j 2>/dev/null |
		python3 -c 'import json, sys
p = json.load(sys.stdin); p = p if isinstance(p, list) else [p]
print(sum(x.get("run_time_ns", 0) for x in p), sum(x.get("run_cnt", 0) for x in p))'
}

run() { # run read|unread: "recorder_ms prog_ns prog_runs" over the run
	"$B/recorder/flightrecd" --ring "$T/ring" --socket "$T/s" --config "$T/c.json" \
		>"$T/d.log" 2>&1 &
	local d=$! c0 p0 p1
	for _ in $(seq 100); do
		FLIGHTREC_SOCKET=$T/s "$B/tools/flightrec" status >/dev/null 2>&1 && break
		sleep 0.1
	done
	# The program runs 3 s before the measure: the recorder has looked it
	# up by then.
	"$T/$1" -seconds $((S + 4)) >/dev/null &
	local g=$!
	sleep 3
	c0=$(cpu_ms $d)
	read -r p0 n0 <<<"$(prog_ns)"
	sleep "$S"
	read -r p1 n1 <<<"$(prog_ns)"
	echo "$(($(cpu_ms $d) - c0)) $((p1 - p0)) $((n1 - n0))"
	wait $g
	kill -TERM $d
	wait $d
	rm -rf "$T/ring"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for _ in $(seq "$RUNS"); do
	run read >>"$T/res-read"
	run unread >>"$T/res-unread"
done
for mode in read unread; do
	ms=$(cut -d' ' -f1 "$T/res-$mode" | median)
	ns=$(awk '{ print ($3 ? $2 / $3 : 0) }' "$T/res-$mode" | median)
	echo "Go labels $mode: recorder CPU $ms ms over $S s ($(cut -d' ' -f1 "$T/res-$mode" | tr '\n' ' ')), on_sample $ns ns a run ($(awk '{ printf "%d/%d ", $2, $3 }' "$T/res-$mode"))"
done
