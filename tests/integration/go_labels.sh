#!/bin/bash
# A Go program's pprof labels on its samples, with the recorder on its
# embedded default configuration and a program that knows nothing of it
# (tests/integration/go/endpoints: handlers under pprof.Do with
# endpoint=/a and /b, /b three times /a's CPU):
# - the endpoint split is within 2 points of 25/75, and >= 98% of the
#   samples in main.handleA / main.handleB carry /a / /b;
# - attach --label endpoint=/a keeps /a's samples, top --by label:endpoint
#   and timeline --by label:endpoint split by it;
# - the program saying it is go1.99 (no table has it) is read from its
#   DWARF, and not read (counted) without;
# - a goroutine waiting in nanosleep under endpoint=/sleep
#   (tests/integration/go/sleeper): its off-CPU waits carry it;
# - the same program built with cgo (linked by the system linker: the
#   goroutine's slot found from runtime.tlsg) is read as well;
# - a C program that passes for Go (tests/integration/go_forged.c), its
#   runtime's structures a lie or garbage rewritten all the time: the
#   recorder goes on, the lie stays on its own samples, the real Go
#   program's labels stay right.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
need_go
FORGED=$BUILD/tests/integration/go_forged
SRC=${FR_SOURCE_DIR:-$(dirname "$0")/../..}

# build NAME [cgo|cgo_tls [LDFLAGS]]: the endpoints program into $T/NAME,
# with a C function (cgo: linked by the system linker), and a C
# thread-local (cgo_tls: more than runtime.tlsg in its TLS segment).
build() {
	local c="// int one(void) { return 1; }"
	mkdir -p "$T/src/$1"
	cp "$SRC/tests/integration/go/endpoints/main.go" "$T/src/$1/"
	[ "${2:-}" = cgo_tls ] && c="$c\n// __thread long fr_tls[4];"
	if [ -n "${2:-}" ]; then
		command -v cc >/dev/null || return 1
		printf "package main\n\n$c\nimport \"C\"\n\nvar _ = C.one\n" >"$T/src/$1/cgo.go"
	fi
	(cd "$T/src/$1" && GOPATH=$T/gopath GO111MODULE=off GOFLAGS= \
		CGO_ENABLED=$([ -n "${2:-}" ] && echo 1 || echo 0) \
		"$GO" build -ldflags="${3:-}" -o "$T/$1" . >"$T/build-$1.log" 2>&1)
}
build endpoints || fail "go build failed: $(cat "$T/build-endpoints.log")"

start_daemon
need_labels

# run NAME SECONDS: starts $T/NAME (its pid in RUN_PID).
run() {
	"$T/$1" -seconds "$2" >"$T/$1.out" &
	wait_until 10 "$1 to start" "grep -qs '^pid=' '$T/$1.out'"
	RUN_PID=$(sed -n 's/^pid=//p' "$T/$1.out")
}

# follow OUT PID SECONDS [ARGS...]: a profile of PID over the next SECONDS
# at 999 Hz (the recorder samples that fast while it runs) into OUT.
follow() {
	local out=$1 pid=$2 secs=$3
	shift 3
	rm -rf "$T/follow"
	mkdir "$T/follow"
	"$FLIGHTREC" attach --follow --count 1 --window "${secs}s" --hz 999 --pid "$pid" \
		-o "$T/follow" "$@" 2>"$T/follow.err" || fail "attach --follow failed: $(cat "$T/follow.err")"
	mv "$(ls "$T"/follow/*.pb.gz | head -1)" "$out" || fail "attach --follow wrote no profile"
	rm -rf "$T/follow"
}

# profile NAME SECONDS WINDOW OUT: runs $T/NAME for SECONDS (its pid in
# RUN_PID) and, once its labels show, profiles the next WINDOW seconds of
# it at 999 Hz into OUT.
profile() {
	run "$1" "$2"
	wait_labelled "$RUN_PID" endpoint 20
	follow "$4" "$RUN_PID" "$3"
}

# check FILE: "a_share handler_samples right_pct work_samples work_pct
# all_pct": /a's share of the samples labelled /a or /b, the samples in
# handleA or handleB and the percent of those carrying their handler's
# endpoint, the samples in main.work and the percent of those carrying
# one, the percent of all samples carrying one.
check() {
	python3 - "$1" <<'PY'
import sys
from pprof_samples import samples
n = {"/a": 0, "/b": 0}
handler = right = work = labelled = total = 0
for s in samples(sys.argv[1]):
    w = s["values"][0]
    total += w
    ep = s["str"].get("endpoint")
    if ep in n:
        n[ep] += w
    want = "/a" if "main.handleA" in s["frames"] else "/b" if "main.handleB" in s["frames"] else None
    if want:
        handler += w
        right += w * (ep == want)
    if "main.work" in s["frames"]:
        work += w
        labelled += w * (ep in n)
tot = n["/a"] + n["/b"]
print("%.2f %d %.2f %d %.2f %.2f" % (100.0 * n["/a"] / tot if tot else -1, handler,
                                     100.0 * right / handler if handler else -1, work,
                                     100.0 * labelled / work if work else -1,
                                     100.0 * tot / total if total else -1))
PY
}

# --- the split, and the labels on the handlers ---
echo "built: $(date +%T)"
run endpoints 150
EP=$RUN_PID
wait_labelled "$EP" endpoint 20
wait_until 10 "status to count the Go program" \
	'[ "$(status_value "d[\"labels\"].get(\"go_processes\", 0)")" -ge 1 ]'
follow "$T/split.pb.gz" "$EP" 20
read -r a handlers right _ _ _ <<<"$(check "$T/split.pb.gz")"
echo "endpoint=/a ${a}% of the labelled samples (want 25); $handlers handler samples, ${right}% labelled right"
[ "${handlers:-0}" -ge 3000 ] || fail "only ${handlers:-0} samples in the handlers (a machine this busy cannot tell 2 points)"
within "$a" 25 2 || fail "endpoint=/a has ${a}% of the samples, not 25 +- 2"
awk -v r="$right" 'BEGIN { exit !(r >= 98) }' || fail "only ${right}% of the handler samples carry their endpoint"

# --- --label, top --by label:, timeline --by label: ---
"$FLIGHTREC" attach --window 5s --pid "$EP" --label endpoint=/a -o "$T/only_a.pb.gz" 2>"$T/err" ||
	fail "attach --label endpoint=/a failed: $(cat "$T/err")"
python3 - "$T/only_a.pb.gz" <<'PY' || fail "attach --label endpoint=/a kept other samples"
import sys
from pprof_samples import samples
s = list(samples(sys.argv[1]))
assert s, "no sample"
bad = [x for x in s if x["str"].get("endpoint") != "/a" or "main.handleB" in x["frames"]]
assert not bad, bad[:3]
assert any("main.handleA" in x["frames"] for x in s)
print("--label endpoint=/a: %d samples, all /a" % sum(x["values"][0] for x in s))
PY
# top --by label:endpoint, on the recorder's last seconds (99 Hz: a few
# hundred samples, loosely) and on the 999 Hz profile (within 2 points).
"$FLIGHTREC" top --window 5s --pid "$EP" --by label:endpoint --json >"$T/top.json" 2>"$T/err" ||
	fail "top --by label:endpoint failed: $(cat "$T/err")"
"$FLIGHTREC" top "$T/split.pb.gz" --by label:endpoint --json >"$T/top_file.json" 2>"$T/err" ||
	fail "top FILE --by label:endpoint failed: $(cat "$T/err")"
python3 - "$T/top.json" "$T/top_file.json" <<'PY' || fail "top --by label:endpoint is not the split: $(head -c 600 "$T/top.json")"
import json, sys
for path, lo, hi in ((sys.argv[1], 15, 35), (sys.argv[2], 23, 27)):
    groups = {}
    for r in json.load(open(path)):
        if r.get("name") == "main.work":
            groups[r["group"]] = r["flat"]
    a = groups.get("/a", groups.get("endpoint=/a", 0))
    b = groups.get("/b", groups.get("endpoint=/b", 0))
    assert a and b, groups
    share = 100.0 * a / (a + b)
    print("top --by label:endpoint: main.work %.1f%% under /a (%s)" % (share, path.split("/")[-1]))
    assert lo <= share <= hi, share
PY
"$FLIGHTREC" timeline --window 5s --step 1s --by label:endpoint --json \
	>"$T/timeline.json" 2>"$T/err" || fail "timeline --by label:endpoint failed: $(cat "$T/err")"
python3 - "$T/timeline.json" <<'PY' || fail "timeline --by label:endpoint has no /a and /b"
import json, sys
tl = json.load(open(sys.argv[1]))
names = {g["name"]: g["total"] for g in tl["groups"]}
print("timeline --by label:endpoint:", names)
a = [v for k, v in names.items() if "/a" in k]
b = [v for k, v in names.items() if "/b" in k]
assert a and b and b[0] > 2 * a[0], names
PY

# --- a Go release no table knows: the layout from the program's DWARF ---
# release99 IN OUT: IN with its .go.buildinfo saying go1.99 (same length).
release99() {
	python3 - "$1" "$2" <<'PY'
import re, sys
b = bytearray(open(sys.argv[1], "rb").read())
at = b.find(b"\xff Go buildinf:")
m = re.match(rb"go1\.\d\d", bytes(b[at + 33:at + 39])) if at >= 0 else None
if not m:
    sys.exit(1)
b[at + 37:at + 39] = b"99"
open(sys.argv[2], "wb").write(b)
PY
	chmod +x "$2"
}
if release99 "$T/endpoints" "$T/endpoints99"; then
	profile endpoints99 25 6 "$T/e99.pb.gz"
	E99=$RUN_PID
	read -r a handlers right _ _ _ <<<"$(check "$T/e99.pb.gz")"
	echo "as go1.99 (its DWARF read): endpoint=/a ${a}%; $handlers handler samples, ${right}% labelled right"
	awk -v r="$right" -v h="$handlers" 'BEGIN { exit !(r >= 98 && h >= 500) }' ||
		fail "as go1.99: ${right}% of $handlers handler samples labelled right"
	kill "$E99"
	# Without DWARF: not read, and counted.
	build endpoints_nodwarf "" -w || fail "the build without DWARF failed"
	release99 "$T/endpoints_nodwarf" "$T/endpoints_nodwarf99" || fail "cannot rename its release"
	skipped=$(status_value 'd["labels"].get("go_skipped", 0)')
	run endpoints_nodwarf99 15
	wait_until 15 "go1.99 without DWARF counted in go_skipped" \
		'[ "$(status_value "d[\"labels\"].get(\"go_skipped\", 0)")" -gt "$skipped" ]'
	kill "$RUN_PID"
else
	echo "the Go here is not go1.NN: no release to rename"
fi

# --- off-CPU: a goroutine waiting in a system call under its label ---
mkdir -p "$T/src/sleeper"
cp "$SRC/tests/integration/go/sleeper/main.go" "$T/src/sleeper/"
(cd "$T/src/sleeper" && GOPATH=$T/gopath GO111MODULE=off GOFLAGS= CGO_ENABLED=0 \
	"$GO" build -o "$T/sleeper" . >"$T/build-sleeper.log" 2>&1) ||
	fail "go build of the sleeper failed: $(cat "$T/build-sleeper.log")"
run sleeper 20
SLEEPER=$RUN_PID
wait_labelled "$SLEEPER" endpoint 20
# The window starts after the labels showed.
sleep 5
"$FLIGHTREC" attach --window 4s --event offcpu --pid "$SLEEPER" -o "$T/off.pb.gz" 2>"$T/err" ||
	fail "attach --event offcpu failed: $(cat "$T/err")"
python3 - "$T/off.pb.gz" <<'PY' || fail "the goroutine's waits do not carry its label"
import sys
from pprof_samples import samples
sleep = right = 0
for s in samples(sys.argv[1]):
    if "main.sleepLoop" in s["frames"]:
        sleep += s["values"][-1]
        right += s["values"][-1] * (s["str"].get("endpoint") == "/sleep")
        assert s["str"].get("endpoint") in ("/sleep", None), s["str"]
print("off-CPU: %.2f s in main.sleepLoop, %.1f%% under endpoint=/sleep" % (sleep / 1e9, 100.0 * right / max(sleep, 1)))
assert sleep > 2e9 and right >= 0.98 * sleep
PY

# --- hostile: a lie, and garbage, beside the real program ---
"$FORGED" lie 20 >"$T/lie.out" &
"$FORGED" garbage 20 >"$T/garbage.out" &
wait_until 10 "go_forged to start" "grep -qs '^pid=' '$T/lie.out' && grep -qs '^pid=' '$T/garbage.out'"
LIE=$(sed -n 's/^pid=//p' "$T/lie.out")
GARBAGE=$(sed -n 's/^pid=//p' "$T/garbage.out")
wait_labelled "$LIE" endpoint 20
follow "$T/hostile.pb.gz" "$EP,$LIE,$GARBAGE" 8
daemon_alive || fail "the recorder died reading forged Go programs"
ingest_fresh
python3 - "$T/hostile.pb.gz" "$EP" "$LIE" "$GARBAGE" <<'PY' || fail "a forged Go program's labels went astray"
import sys
from pprof_samples import samples
path, ep, lie, garbage = sys.argv[1:]
per = {}
for s in samples(path):
    pid = str(s["num"].get("pid", s["str"].get("pid", "")))
    v = s["str"].get("endpoint")
    per.setdefault(pid, {}).setdefault(v, 0)
    per[pid][v] += s["values"][0]
print("endpoint values per pid:", per)
assert "/forged" not in per.get(ep, {}), "the real program got the forged label"
assert per.get(lie, {}).get("/forged"), "the lie was not read (the test proves nothing)"
assert per.get(garbage), "no sample of the garbage process"
PY
read -r a handlers right _ _ _ <<<"$(check "$T/hostile.pb.gz")"
echo "beside them: $handlers handler samples, ${right}% labelled right"
awk -v r="$right" 'BEGIN { exit !(r >= 98) }' || fail "the real program's labels went wrong beside the forged ones"
faults=$(status_value 'd["labels"]["read_faults"]')
echo "label read faults: $faults"

# --- cgo: the g's slot from runtime.tlsg ---
if build endpoints_cgo cgo; then
	profile endpoints_cgo 30 10 "$T/cgo.pb.gz"
	# Its stacks stop at main.work today (the system linker's binary is
	# not unwound through): main.work, only ever called by the handlers,
	# must carry an endpoint, in the split.
	read -r a _ _ work labelled _ <<<"$(check "$T/cgo.pb.gz")"
	echo "cgo build: endpoint=/a ${a}%; $work samples in main.work, ${labelled}% with an endpoint"
	awk -v l="$labelled" -v w="$work" 'BEGIN { exit !(l >= 98 && w >= 1000) }' ||
		fail "the cgo build's main.work samples: ${labelled}% of $work carry an endpoint"
	within "$a" 25 2 || fail "the cgo build's endpoint=/a has ${a}% of the samples, not 25 +- 2"
	# Stripped, runtime.tlsg alone in its TLS segment: read.
	build endpoints_cgo_s cgo '-s -w' || fail "the stripped cgo build failed"
	profile endpoints_cgo_s 20 5 "$T/cgo_s.pb.gz"
	# (Its functions have no names here: the share of all its samples.)
	read -r a _ _ _ _ all <<<"$(check "$T/cgo_s.pb.gz")"
	echo "stripped cgo build: endpoint=/a ${a}%, ${all}% of its samples with an endpoint"
	awk -v l="$all" 'BEGIN { exit !(l >= 90) }' ||
		fail "the stripped cgo build: only ${all}% of its samples carry an endpoint"
	within "$a" 25 3 || fail "the stripped cgo build's endpoint=/a has ${a}% of the samples"
	# Stripped with a C thread-local beside runtime.tlsg: its g's slot is
	# not known, it is not read, and counted.
	build endpoints_cgo_tls cgo_tls '-s -w' || fail "the cgo build with a thread-local failed"
	skipped=$(status_value 'd["labels"].get("go_skipped", 0)')
	run endpoints_cgo_tls 15
	wait_until 15 "the stripped cgo build with a thread-local counted in go_skipped" \
		'[ "$(status_value "d[\"labels\"].get(\"go_skipped\", 0)")" -gt "$skipped" ]'
	"$FLIGHTREC" attach --window 3s --pid "$RUN_PID" -o "$T/cgo_tls.pb.gz" 2>"$T/err" ||
		fail "attach failed: $(cat "$T/err")"
	python3 "$PPROF_SAMPLES" count "$T/cgo_tls.pb.gz" endpoint=/a >"$T/cgo_tls.n"
	[ "$(cat "$T/cgo_tls.n")" = 0 ] || fail "a program whose g's slot is not known got labels"
else
	echo "no cgo build here (no C compiler): $(tail -3 "$T/build-endpoints_cgo.log" 2>/dev/null)"
fi
echo "go_labels: ok"
