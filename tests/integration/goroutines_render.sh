#!/bin/bash
# flightrec goroutines' renderer on a profile of the recorder's contract
# (recorder/requests/goroutines.h), written by goroutines_pprof with the
# project's encoder and read back with --from, no recorder: the text
# grouped like Go's debug=1 (largest group first, labels, inlined frames,
# "created by ... in goroutine N at FILE:LINE", the running and changed
# notes, nothing of the program's bytes reaching the terminal raw), the
# JSON, the errors of a missing or corrupt file and of bad options, and
# go tool pprof reading the same file.
. "$(dirname "$0")/lib.sh"
HELPER=$BUILD/tests/integration/goroutines_pprof
P=$T/g.pb.gz

"$HELPER" "$P" || fail "goroutines_pprof could not write $P"

# expect STATUS PATTERN CMD...: CMD exits with STATUS, stderr matches.
expect() {
	local want=$1 pattern=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	[ "$got" = "$want" ] || fail "\"$*\" exited $got, expected $want; stderr: $(cat "$T/err")"
	grep -Eq -- "$pattern" "$T/err" || fail "\"$*\" said \"$(cat "$T/err")\", expected /$pattern/"
}

# has LINE: the text output holds this exact line.
has() { grep -Fxq -- "$1" "$T/text" || fail "the text lacks the line \"$1\"; it is:"$'\n'"$(cat -A "$T/text")"; }

"$FLIGHTREC" goroutines --from "$P" >"$T/text" 2>"$T/err" || fail "--from $P failed: $(cat "$T/err")"
has "process 4242 (go1.19.8): 8 goroutines, 4 of the runtime's own not shown, 1 changed while read"
has "5 goroutines [chan receive, waiting 12s or more]: 18 19 20 21 22"
has '# labels: {"endpoint":"/a", "state":"busy"}'
has "#	0x43c5f6	runtime.gopark	/usr/lib/go-1.19/src/runtime/proc.go:363"
has "#	0x4a1b2c	main.inner	/src/app/main.go:25"
has "#	0x4a1b2c	main.waitForJob	/src/app/main.go:31"
has "created by main.spawnWaiters in goroutine 1 at /src/app/main.go:40"
has "1 goroutine [running]: 7"
has "# (running on thread 4250, stack not read)"
has "created by main.main at /src/app/main.go:20"
has "1 goroutine [sleep]: 9"
has "# (stack changed while read)"
has "1 goroutine [IO wait, waiting 3s]: 30"
has '# labels: {"user":"bad\x1b[2J\xff"}'
# The largest group first, right after the header and its blank line.
[ "$(sed -n 3p "$T/text")" = "5 goroutines [chan receive, waiting 12s or more]: 18 19 20 21 22" ] ||
	fail "the largest group is not first: $(sed -n 3p "$T/text")"
# The gopark frame shown once per group that has the stack: 2 groups.
[ "$(grep -c 'runtime.gopark' "$T/text")" = 2 ] || fail "the waiters were not grouped: $(cat "$T/text")"
if grep -q $'\x1b' "$T/text"; then fail "a raw escape byte of the program reached the terminal"; fi

"$FLIGHTREC" goroutines --from "$P" --json >"$T/json" 2>"$T/err" || fail "--json failed: $(cat "$T/err")"
python3 - "$T/json" <<'EOF' || fail "the JSON is not as expected: $(cat "$T/json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["pid"], d["go"], d["system"], d["changed"]) == (4242, "go1.19.8", 4, 1), d
g = {x["goid"]: x for x in d["goroutines"]}
assert [x["goid"] for x in d["goroutines"]] == [7, 9, 18, 19, 20, 21, 22, 30], list(g)
w = g[18]
assert (w["state"], w["wait"], w["waiting_ns"]) == ("waiting", "chan receive", 12 * 10**9), w
assert (w["creator_goid"], w["start"], w["created_by"], w["created_at"]) == \
    (1, "main.waitForJob", "main.spawnWaiters", "/src/app/main.go:40"), w
assert w["labels"] == {"endpoint": "/a", "state": "busy"}, w["labels"]
assert "waited" not in w and "thread" not in w and "stack_note" not in w, w
assert g[22]["waited"] == "at least" and g[22]["waiting_ns"] == 20 * 10**9, g[22]
s = w["stack"]
assert [f["function"] for f in s] == ["runtime.gopark", "runtime.chanrecv", "runtime.chanrecv1",
                                      "main.inner", "main.waitForJob", "runtime.goexit"], s
assert s[0] == {"function": "runtime.gopark", "file": "/usr/lib/go-1.19/src/runtime/proc.go",
                "line": 363, "address": "0x43c5f6"}, s[0]
assert s[3].get("inlined") is True and "inlined" not in s[4], s
assert s[3]["address"] == s[4]["address"] == "0x4a1b2c", s
r = g[7]
assert (r["state"], r["thread"], r["stack_note"], r["stack"]) == ("running", 4250, "running", []), r
assert "wait" not in r and "creator_goid" not in r, r
assert (g[9]["stack_note"], g[9]["wait"], g[9]["stack"]) == ("changed", "sleep", []), g[9]
assert g[30]["labels"]["user"] == "bad\x1b[2J\ufffd", g[30]["labels"]
assert d["warnings"] == [], d["warnings"]
EOF

# A missing, a corrupt, an empty and a non-gzip file: a clear error, 1.
expect 1 "^flightrec goroutines: cannot open $T/none.pb.gz: No such file or directory$" \
	"$FLIGHTREC" goroutines --from "$T/none.pb.gz"
head -c 100 "$P" >"$T/cut.pb.gz"
expect 1 "^flightrec goroutines: $T/cut.pb.gz is not a goroutine profile written by -o \(not gzip data, or corrupt or truncated\)$" \
	"$FLIGHTREC" goroutines --from "$T/cut.pb.gz"
: >"$T/empty.pb.gz"
expect 1 "is not a goroutine profile written by -o \(the file is empty\)$" \
	"$FLIGHTREC" goroutines --from "$T/empty.pb.gz" --json
echo "not a profile" | gzip >"$T/text.pb.gz"
expect 1 "is not a goroutine profile written by -o \(not pprof" \
	"$FLIGHTREC" goroutines --from "$T/text.pb.gz"
expect 1 "is not a goroutine profile written by -o" "$FLIGHTREC" goroutines --from "$T"
[ ! -s "$T/out" ] || fail "a failed --from printed on standard output: $(cat "$T/out")"

# Options that do not go together, and no recorder to ask.
expect 2 "name the Go process: --pid PID" "$FLIGHTREC" goroutines --json
expect 2 "--from renders a file" "$FLIGHTREC" goroutines --from "$P" --pid 1
expect 2 "--json and -o do not go together" "$FLIGHTREC" goroutines --pid 1 --json -o "$T/x.pb.gz"
expect 2 "--pid: expected a process id" "$FLIGHTREC" goroutines --pid 0
expect 2 "unknown option --bogus" "$FLIGHTREC" goroutines --bogus
expect 1 "no recorder listening at $T/none.sock" \
	"$FLIGHTREC" goroutines --pid $$ --socket "$T/none.sock" -o "$T/x.pb.gz"
[ ! -e "$T/x.pb.gz" ] || fail "a failed goroutines -o left $T/x.pb.gz behind"
ls "$T" | grep -q '\.tmp\.' && fail "a failed goroutines -o left a temporary file: $(ls "$T")"

# An independent reader takes the same file.
if [ -z "$GO" ] || [ ! -x "$GO" ]; then
	echo "goroutines_render: go tool pprof not checked: needs go (golang-go)" >&2
	exit 0
fi
"$GO" tool pprof -symbolize=none -traces "$P" >"$T/traces" 2>"$T/pprof.err" ||
	fail "go tool pprof -traces cannot read the profile: $(cat "$T/pprof.err")"
for want in runtime.gopark main.waitForJob 'main.inner \(inline\)' 'endpoint: +/a$' 'goid: +18$'; do
	grep -Eq -- "$want" "$T/traces" || fail "go tool pprof -traces lacks $want: $(cat "$T/traces")"
done
exit 0
