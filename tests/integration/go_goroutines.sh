#!/bin/bash
# flightrec goroutines: every goroutine of a running Go program, read from
# its memory without stopping it. The endpoints program
# (tests/integration/go/endpoints: five goroutines parked on a channel
# receive in main.waitForJob, started by main.spawnWaiters; the main
# goroutine serving under pprof labels) is built as is, stripped
# (-ldflags='-s -w': no .symtab, no DWARF) and position-independent
# (-buildmode=pie: its addresses move), and each build runs while
# flightrecd records:
#  - --json lists the five waiters, state waiting, "chan receive", in
#    main.waitForJob, created by main.spawnWaiters, their waiting time
#    growing from one call to the next; the main goroutine with its
#    "endpoint" label; none of the runtime's own;
#  - the text groups the five as one stack;
#  - -o writes a pprof that `go tool pprof -traces` reads, one sample
#    per goroutine with the labels;
#  - the offsets the recorder's table has for this Go are those of the
#    program's DWARF (the table is used for stripped programs);
# a dump of a session whose targets are Go programs keeps their
# goroutines beside it, which --at reads back; and the refusals: a process that is not Go, one that does not exist,
# and, for a user who is not privileged, another user's Go program (their
# own is read).
. "$(dirname "$0")/lib.sh"
need_root_perf
[ -n "$GO" ] && [ -x "$GO" ] || skip "needs go (golang-go) to build the Go program"
SRC=$(dirname "$0")/go/endpoints/main.go

need_test_users
U=frgo$$
G=frgog$$
add_test_group "$G"
add_test_user "$U" "$G"
mkdir -p "$T/go" "$T/bin" "$T/u"
chown "$U" "$T/u" && chmod 0700 "$T/u"
cp "$SRC" "$T/go/main.go"
(cd "$T/go" && export GOPATH=$T/gopath GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= &&
	"$GO" build -o "$T/bin/endpoints" main.go &&
	"$GO" build -ldflags="-s -w" -o "$T/bin/endpoints_stripped" main.go &&
	"$GO" build -buildmode=pie -o "$T/bin/endpoints_pie" main.go) \
	>"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "go build failed"; }
readelf -SW "$T/bin/endpoints_stripped" | grep -q '\.symtab' && fail "the stripped build has a .symtab"
cp "$T/bin/endpoints" "$T/u/endpoints" && chown "$U" "$T/u/endpoints"

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"},
 "dumps": {"dir": "$T/dumps"},
 "sessions": [{"name": "go", "targets": {"comm": ["endpoints", "endpoints_strip"]}}]}
JSON
start_daemon --config "$T/config.json"

pids=()
for b in endpoints endpoints_stripped endpoints_pie; do
	"$T/bin/$b" -seconds 60 >"$T/$b.out" &
	pids+=($!)
done
for b in endpoints endpoints_stripped endpoints_pie; do
	# Printed once its waiters are parked, as it starts serving.
	wait_until 10 "$b to start" grep -q '^pid=' "$T/$b.out"
done
runuser -u "$U" -- "$T/u/endpoints" -seconds 60 >"$T/user.out" &
USER_RUNNER=$!
wait_until 10 "the user's Go program" grep -q '^pid=' "$T/user.out"
USER_PID=$(sed -n 's/^pid=//p' "$T/user.out")

# check NAME PID: two --json listings a second apart, the text and -o.
check() {
	local name=$1 pid=$2
	"$FLIGHTREC" goroutines --pid "$pid" --json >"$T/$name.1.json" 2>"$T/$name.err" ||
		{ cat "$T/$name.err"; fail "$name: goroutines --json failed"; }
	sleep 1.5
	"$FLIGHTREC" goroutines --pid "$pid" --json >"$T/$name.2.json" 2>"$T/$name.err" ||
		{ cat "$T/$name.err"; fail "$name: the second goroutines --json failed"; }
	python3 - "$T/$name.1.json" "$T/$name.2.json" "$name" <<'PY' || fail "$name: the listing is not as expected"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
name = sys.argv[3]
def waiters(doc):
    out = {}
    for g in doc["goroutines"]:
        fns = [f["function"] for f in g.get("stack", [])]
        if "main.waitForJob" in fns:
            out[g["goid"]] = g
    return out
for doc in (a, b):
    assert doc["go"].startswith("go1."), doc["go"]
    w = waiters(doc)
    assert len(w) == 5, "%s: %d goroutines in main.waitForJob, want 5" % (name, len(w))
    for g in w.values():
        assert g["state"] == "waiting" and g["wait"] == "chan receive", g
        assert g["created_by"] == "main.spawnWaiters", g
        assert g["created_at"].endswith("/main.go:47"), g
        fns = [f["function"] for f in g["stack"]]
        assert fns[0] == "runtime.gopark" and fns[-1] == "runtime.goexit", fns
        assert all(f.get("line", 0) > 0 for f in g["stack"]), g["stack"]
    assert not any(g.get("start", "").startswith("runtime.") and g["start"] != "runtime.main"
                   for g in doc["goroutines"]), "the runtime's own goroutines listed"
    assert doc["system"] >= 3, doc["system"]
mains = [g for doc in (a, b) for g in doc["goroutines"] if g["goid"] == 1]
# The main goroutine serves under pprof.Do all but an instant of the time.
assert len(mains) == 2 and any(g["labels"].get("endpoint") in ("/a", "/b") for g in mains), mains
w1, w2 = waiters(a), waiters(b)
assert set(w1) == set(w2), (set(w1), set(w2))
for goid in w1:
    x, y = w1[goid].get("waiting_ns", 0), w2[goid].get("waiting_ns", 0)
    assert y >= x + 1000000000, "goroutine %d waited %d then %d ns" % (goid, x, y)
print("%s: %d goroutines, 5 waiters, waiting %.1f s by the second call" %
      (name, len(b["goroutines"]), min(g["waiting_ns"] for g in w2.values()) / 1e9))
PY
	"$FLIGHTREC" goroutines --pid "$pid" >"$T/$name.txt" 2>"$T/$name.err" ||
		{ cat "$T/$name.err"; fail "$name: goroutines (text) failed"; }
	grep -Eq '^5 goroutines? \[chan receive' "$T/$name.txt" ||
		{ cat "$T/$name.txt"; fail "$name: the text does not group the five waiters"; }
	grep -q 'main.waitForJob' "$T/$name.txt" || fail "$name: the text does not name main.waitForJob"
	"$FLIGHTREC" goroutines --pid "$pid" -o "$T/$name.pb.gz" 2>"$T/$name.err" ||
		{ cat "$T/$name.err"; fail "$name: goroutines -o failed"; }
	"$GO" tool pprof -traces "$T/$name.pb.gz" >"$T/$name.traces" 2>"$T/$name.pprof.err" ||
		{ cat "$T/$name.pprof.err"; fail "$name: go tool pprof cannot read the profile"; }
	[ "$(grep -c 'main.waitForJob' "$T/$name.traces")" -ge 1 ] &&
		grep -Eq 'wait: +chan receive' "$T/$name.traces" ||
		{ head -40 "$T/$name.traces"; fail "$name: go tool pprof -traces does not show the waiters"; }
}

check normal "${pids[0]}"
check stripped "${pids[1]}"
check pie "${pids[2]}"

# Refusals, each with a reason and a failing exit status.
refused() { # WHAT PATTERN CMD...
	local what=$1 pat=$2
	shift 2
	"$@" >"$T/refused.out" 2>"$T/refused.err" && fail "$what: answered"
	grep -q "$pat" "$T/refused.err" || { cat "$T/refused.err"; fail "$what: not said why"; }
}
refused "a shell" "not a Go program" "$FLIGHTREC" goroutines --pid $$ --json
# A C program that passes for Go (its .go.buildinfo says go1.19.8), its
# runtime's structures rewritten with garbage all the time.
"$BUILD/tests/integration/go_forged" garbage 20 >"$T/forged.out" &
FORGED_PID=$!
wait_until 10 "go_forged to start" grep -qs '^pid=' "$T/forged.out"
refused "a forged Go program" "not a Go program this recorder reads" "$FLIGHTREC" goroutines --pid "$FORGED_PID"
kill "$FORGED_PID" 2>/dev/null
refused "no process" "no process" "$FLIGHTREC" goroutines --pid 999999999 --json
refused "another user's program" "not yours" runuser -u "$U" -- "$FLIGHTREC" goroutines --pid "${pids[0]}" --json
runuser -u "$U" -- "$FLIGHTREC" goroutines --pid "$USER_PID" --json >"$T/user.json" 2>"$T/user.err" ||
	{ cat "$T/user.err"; fail "the user cannot read their own Go program"; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len([g for g in d["goroutines"] if g.get("wait")=="chan receive"])==5' "$T/user.json" ||
	fail "the user's own listing lacks the waiters"
# A dump of the session whose targets are Go programs carries what every
# goroutine of each did at the trigger: the normal and stripped builds and
# the user's copy (the position-independent build is not a target).
p=$("$FLIGHTREC" dump --session go --window 5s 2>"$T/dump.err") || { cat "$T/dump.err"; fail "dump --session go failed"; }
side=${p%.pb.gz}.json
gor=${p%.pb.gz}.goroutines.pb.gz
[ -f "$gor" ] || { ls -l "$T/dumps"; fail "the dump has no goroutines file"; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["go_processes"]==3 and d["goroutines"]==sys.argv[2].split("/")[-1], d' "$side" "$gor" ||
	{ cat "$side"; fail "the sidecar does not name the goroutines of the 3 Go programs"; }
"$FLIGHTREC" goroutines --from "$gor" --json >"$T/dump.json" || fail "goroutines --from the dump's file failed"
python3 - "$T/dump.json" "${pids[0]}" "${pids[1]}" "$USER_PID" <<'PY' || fail "the dump's goroutines are not the 3 programs' waiters"
import json, sys
d = json.load(open(sys.argv[1]))
want = set(int(p) for p in sys.argv[2:5])
per = {}
for g in d["goroutines"]:
    if g.get("wait") == "chan receive" and any(f["function"] == "main.waitForJob" for f in g["stack"]):
        per[g["pid"]] = per.get(g["pid"], 0) + 1
assert per == {p: 5 for p in want}, per
PY
"$FLIGHTREC" goroutines --from "$gor" | grep -Eq '^process [0-9]+: 5 goroutines \[chan receive' ||
	fail "the dump's goroutines in text are not grouped by process"
# --at: one process's goroutines as the newest snapshot at or before then
# kept them; the user gets only their own; before any snapshot, none.
sleep 1.1
"$FLIGHTREC" goroutines --pid "${pids[1]}" --at -1s --json >"$T/at.json" 2>"$T/at.err" ||
	{ cat "$T/at.err"; fail "goroutines --at failed"; }
cat "$T/at.err" "$T/at.json" | grep -q 'as a dump kept them at' || { cat "$T/at.err"; fail "--at does not say when the goroutines were kept"; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); w=[g for g in d["goroutines"] if g.get("wait")=="chan receive"]; assert len(w)==5 and all(g["pid"]==int(sys.argv[2]) for g in d["goroutines"]), d' "$T/at.json" "${pids[1]}" ||
	fail "--at does not give the stripped build's 5 waiters alone"
refused "--at before any snapshot" "no goroutines were kept" "$FLIGHTREC" goroutines --pid "${pids[1]}" --at @1000
refused "--at, another user's process" "hold no process" runuser -u "$U" -- "$FLIGHTREC" goroutines --pid "${pids[1]}" --at -1s
runuser -u "$U" -- "$FLIGHTREC" goroutines --pid "$USER_PID" --at -1s >"$T/user_at.txt" 2>&1 ||
	{ cat "$T/user_at.txt"; fail "the user cannot read their own program's kept goroutines"; }
daemon_alive || fail "the recorder died"

kill "${pids[@]}" "$USER_PID" 2>/dev/null
wait "${pids[@]}" "$USER_RUNNER" 2>/dev/null
echo "ok"
