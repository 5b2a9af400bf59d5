#!/bin/bash
# Off-CPU user stacks unwound with CFI by the default mechanism (the
# embedded default configuration): stuck_server's three threads wait in
# libc's read() under serve_loop -> handle_request -> wait_for_reply, in a
# build without frame pointers (as distributions build), where a
# frame-pointer walk finds none of them, and in one with frame pointers,
# where it skips wait_for_reply (libc's wrapper keeps no frame). For each:
#  - open waits: threads blocked for the whole 4 s window hold 3 x 4 s on
#    each of the three functions, within 10%;
#  - completed waits (~50 ms each, for 3 s): each function holds the time
#    the program measured around its reads, within 10%, and in every
#    stack through libc's read wrapper its caller is wait_for_reply;
#  - flightrec threads --json shows each blocked thread on read <-
#    wait_for_reply <- handle_request <- serve_loop;
# and after kill -9 of the recorder, dump --ring --threads shows the
# frame-pointer-less build's threads blocked on that stack, from the ring
# alone (the open waits' records).
#
#   offcpu_cfi.sh         the default mechanism (eBPF)
#   offcpu_cfi.sh perf    the harness itself: "mechanism": "perf" with
#                         "unwind": "dwarf", whose stack copies at every
#                         switch are unwound with CFI already
. "$(dirname "$0")/lib.sh"
need_root_perf
need_go

mode=${1:-bpf}
W=4
case $mode in
bpf)
	start_daemon
	"$FLIGHTREC" status >"$T/status" || fail "status failed"
	grep -q '^offcpu:   bpf, ' "$T/status" ||
		fail "the embedded default does not record offcpu by eBPF: $(cat "$T/status")"
	;;
perf)
	cat >"$T/config.json" <<'JSON'
{"sessions": [{"name": "waits", "events": [{"event": "offcpu", "mechanism": "perf", "unwind": "dwarf"}]}]}
JSON
	start_daemon --config "$T/config.json"
	"$FLIGHTREC" status >"$T/status" || fail "status failed"
	grep -q '^unwind:   offcpu with [0-9]*-byte stack copies' "$T/status" ||
		fail "offcpu is not recorded with stack copies: $(cat "$T/status")"
	;;
*) fail "unknown mode $mode (bpf or perf)" ;;
esac

pid_of() { sed -n 's/^pid=\([0-9]*\).*/\1/p' "$1"; }
blocked_of() { sed -n 's/.*blocked_ns=\([0-9]*\).*/\1/p' "$1"; }

# The names of libc's read wrapper (glibc's symbol table has aliases).
WRAPPER='read|__read|__libc_read|__GI___libc_read'

# wrapper_callers TRACES: for each stack of go tool pprof -traces that
# goes through libc's read wrapper, the frame above it ("(none)" when the
# stack ends there), one a line.
wrapper_callers() {
	awk -v w="^($WRAPPER)\$" '
		/^-+\+-+$/ { if (inw) print "(none)"; inw = 0; next }
		/^ +[A-Za-z_]+:  / { next }
		{
			f = $0
			sub(/^ +/, "", f)
			if (f ~ /^[0-9.]+(ns|us|ms|s|m|h)? +/)
				sub(/^[^ ]+ +/, "", f)
			sub(/ \(inline\)$/, "", f)
			if (f ~ w) { inw = 1; next }
			if (inw) print f
			inw = 0
		}
		END { if (inw) print "(none)" }' "$1"
}

# check_server_stacks FILE WHAT STATE: the threads answer FILE (--json)
# has the three "server" threads in STATE, each on libc's read wrapper
# directly under wait_for_reply <- handle_request <- serve_loop.
check_server_stacks() {
	python3 - "$1" "$3" "$WRAPPER" <<'PY' || fail "$2: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
state, wrapper = sys.argv[2], sys.argv[3].split("|")
srv = [t for t in doc["threads"] if t["thread"] == "server"]
assert len(srv) == 3, "%d server threads" % len(srv)
want = ["wait_for_reply", "handle_request", "serve_loop"]
for t in srv:
    # A frame's functions, innermost first: the outermost is the caller's.
    names = [f.split(" < ")[-1] for f in t["stack"]]
    at = [k for k in range(1, len(names)) if names[k:k + 3] == want and names[k - 1] in wrapper]
    assert t["state"] == state, "tid %d is %s, not %s" % (t["tid"], t["state"], state)
    assert at, "tid %d: %s" % (t["tid"], " <- ".join(names))
print("3 server threads %s on read <- %s" % (state, " <- ".join(want)))
PY
}

# check_chain PROFILE WANT WHAT: each of the three functions holds WANT ns
# of off-CPU time (cum), within 10%.
check_chain() {
	local f v bad=
	for f in wait_for_reply handle_request serve_loop; do
		v=$(cum_ns "$1" "$f")
		echo "$3: $v ns under $f, want $2"
		near "$v" "$2" || bad="$bad $f=$v"
	done
	if [ -n "$bad" ]; then
		"$GO" tool pprof -symbolize=none -traces -sample_index=offcpu "$1" 2>&1 | head -60
		fail "$3: off-CPU time not within 10% of $2 ns:$bad"
	fi
}

# sleep_until NS: returns once date +%s%N has passed NS.
sleep_until() {
	local now
	now=$(date +%s%N)
	[ "$now" -ge "$1" ] || sleep "$(awk -v d="$(($1 - now))" 'BEGIN { printf "%.3f", d / 1e9 }')"
}

# run_build NAME: the three checks on tests/integration/NAME; leaves its
# block process running (SPID) for the caller.
run_build() {
	local name=$1 prog=$BUILD/tests/integration/$1 cpid want t_ready
	echo "=== $name"
	# A first, short run: until the recorder has built a binary's CFI
	# table, the first time a sample needs it, its stacks stop there; the
	# checks are of the steady state, with the tables of the program and
	# libc built.
	"$prog" cycle 0.3 >"$T/$name.cold.out" || fail "$name cycle failed"
	"$FLIGHTREC" attach --window 20s --event offcpu --pid "$(pid_of "$T/$name.cold.out")" \
		-o "$T/$name.cold.pb.gz" 2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
	"$GO" tool pprof -symbolize=none -comments "$T/$name.cold.pb.gz" 2>/dev/null |
		sed -n 's/^offcpu: unwinding stopped/cold run: unwinding stopped/p'
	wait_tables_built

	"$prog" block >"$T/$name.block.out" &
	SPID=$!
	try_until 10 'grep -q "^ready\$" "$T/$name.block.out" || ! kill -0 "$SPID" 2>/dev/null'
	grep -q '^ready$' "$T/$name.block.out" || fail "$name block: its threads did not all block in read"
	t_ready=$(date +%s%N)

	# Completed waits, while the blocked ones wait out their window.
	"$prog" cycle 3 >"$T/$name.cycle.out" || fail "$name cycle failed"
	cat "$T/$name.cycle.out"
	cpid=$(pid_of "$T/$name.cycle.out")
	want=$(blocked_of "$T/$name.cycle.out")
	"$FLIGHTREC" attach --window 20s --event offcpu --pid "$cpid" -o "$T/$name.cycle.pb.gz" \
		2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
	check_chain "$T/$name.cycle.pb.gz" "$want" "$name completed waits"
	"$GO" tool pprof -symbolize=none -traces -sample_index=offcpu "$T/$name.cycle.pb.gz" \
		>"$T/$name.cycle.traces" 2>&1
	wrapper_callers "$T/$name.cycle.traces" | sort | uniq -c | sed 's/^/  caller of read: /'
	[ -n "$(wrapper_callers "$T/$name.cycle.traces")" ] ||
		fail "$name completed waits: no stack through libc's read: $(head -40 "$T/$name.cycle.traces")"
	wrapper_callers "$T/$name.cycle.traces" | grep -qvx wait_for_reply &&
		fail "$name completed waits: libc's read is called by something other than wait_for_reply"

	# Open waits: blocked for the whole window.
	sleep_until "$((t_ready + W * 1000000000 + 200000000))"
	"$FLIGHTREC" attach --window "${W}s" --event offcpu --pid "$SPID" -o "$T/$name.block.pb.gz" \
		2>"$T/attach.err" || fail "attach failed: $(cat "$T/attach.err")"
	check_chain "$T/$name.block.pb.gz" "$((3 * W * 1000000000))" "$name blocked ${W} s"

	"$FLIGHTREC" threads --pid "$SPID" >"$T/$name.threads" 2>&1 || fail "threads failed"
	cat "$T/$name.threads"
	"$FLIGHTREC" threads --pid "$SPID" --json >"$T/$name.threads.json" || fail "threads --json failed"
	check_server_stacks "$T/$name.threads.json" "$name: flightrec threads" sleeping
}

run_build stuck_server_fp
kill "$SPID"
wait "$SPID" 2>/dev/null
run_build stuck_server

# kill -9 with stuck_server's threads blocked for more than 4 s: the
# ring alone shows them blocked where they are.
kill9_daemon
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$SPID" >"$T/dump.text" 2>"$T/dump.err" ||
	fail "dump --threads failed: $(cat "$T/dump.err")"
cat "$T/dump.text"
"$FLIGHTREC" dump --ring "$RING" --threads --pid "$SPID" --json >"$T/dump.json" 2>"$T/dump.err" ||
	fail "dump --threads --json failed: $(cat "$T/dump.err")"
kill "$SPID"
check_server_stacks "$T/dump.json" "dump --ring --threads after kill -9" blocked
echo "ok"
