# Shared helpers for the integration tests: a real flightrecd in a private
# temporary directory, driven by the real flightrec CLI.
#
# Exit codes follow meson: 0 pass, 77 skip, anything else fail.

set -u

BUILD=${FR_BUILD_DIR:?FR_BUILD_DIR must point at the build directory}
FLIGHTRECD=$BUILD/recorder/flightrecd
FLIGHTREC=$BUILD/tools/flightrec
BURN=$BUILD/tests/integration/burn
BLOCK=$BUILD/tests/integration/block
RENAMER=$BUILD/tests/integration/renamer
SPAWNER=$BUILD/tests/integration/spawner
GO=${FR_GO:-$(command -v go || true)}

T=$(mktemp -d /tmp/flightrec-test.XXXXXX)
RING=$T/ring
SOCK=$T/flightrec.sock
DAEMON_PID=
export FLIGHTREC_SOCKET=$SOCK
# The suite's machine is overloaded by design (three tests at a time beside
# a sanitizer build): a window that lost over 1% of its samples is not what
# most tests check, so attach, top and dump keep exit 0 for it. The tests
# of that exit status (loss_in_window, writer_drops, cli_pressure, stall,
# ring_readonly) call exact_losses first.
export FLIGHTREC_ALLOW_LOSS=1
exact_losses() { unset FLIGHTREC_ALLOW_LOSS; }
# go tool pprof wants a writable home and cache.
export HOME=$T/home GOCACHE=$T/gocache PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

cleanup() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -9 "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	jobs -p | xargs -r kill -9 2>/dev/null
	# FR_KEEP=1 keeps the directory to look at, never a daemon running.
	[ -n "${FR_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	if [ -f "$T/daemon.log" ]; then
		echo "--- daemon log (last 20 lines)" >&2
		tail -20 "$T/daemon.log" >&2
	fi
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# Tests of what a user who is not root may do. need_test_users skips
# without the tools to make users, removes on exit (test_users_cleanup,
# which a test with more to undo calls from its own trap) every group and
# user add_test_group and add_test_user made, and moves the socket to
# $T/run: the daemon opens that directory to its group, and $T is made
# passable for the users.
TEST_USERS=
TEST_GROUPS=
# memory_cgroup NAME: a memory cgroup of 64 MiB without swap, its path in
# CG (cgroup v2 where its memory controller is, else v1's memory
# hierarchy); skips where there is none. The caller removes it (rmdir).
memory_cgroup() {
	local v2
	CG=
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	if [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
		grep -qw memory "$v2/cgroup.subtree_control" ||
			echo +memory >"$v2/cgroup.subtree_control" ||
			skip "cannot enable the memory controller under $v2"
		CG=$v2/$1
		mkdir "$CG" || skip "cannot create a cgroup under $v2"
		echo 64M >"$CG/memory.max"
		[ -e "$CG/memory.swap.max" ] && echo 0 >"$CG/memory.swap.max"
	elif [ -d /sys/fs/cgroup/memory ]; then
		CG=/sys/fs/cgroup/memory/$1
		mkdir "$CG" || skip "cannot create a cgroup under /sys/fs/cgroup/memory"
		echo $((64 << 20)) >"$CG/memory.limit_in_bytes"
		[ -e "$CG/memory.memsw.limit_in_bytes" ] &&
			echo $((64 << 20)) >"$CG/memory.memsw.limit_in_bytes"
	else
		skip "no memory cgroup controller (cgroup v2 without memory, no v1 memory hierarchy)"
	fi
	return 0
}

need_test_users() {
	local c
	for c in useradd userdel groupadd groupdel runuser; do
		command -v "$c" >/dev/null || skip "needs $c (passwd, util-linux) to create a test user"
	done
	trap test_users_cleanup EXIT
	chmod 0711 "$T"
	SOCK=$T/run/flightrec.sock
	export FLIGHTREC_SOCKET=$SOCK
}

test_users_cleanup() {
	local x i
	# userdel refuses a user who still runs something (a burner the test
	# started as them): end their processes first, and wait for them.
	for x in $TEST_USERS; do
		pkill -KILL -u "$x" 2>/dev/null
		try_until 5 "userdel -r $x >/dev/null 2>&1 || ! id -u $x >/dev/null 2>&1"
	done
	for x in $TEST_GROUPS; do groupdel "$x" >/dev/null 2>&1; done
	TEST_USERS=
	TEST_GROUPS=
	cleanup
}

add_test_group() { # NAME
	TEST_GROUPS="$TEST_GROUPS $1"
	groupadd "$1" || fail "groupadd $1 failed"
}

add_test_user() { # NAME GROUPS [-M: no home]
	TEST_USERS="$TEST_USERS $1"
	useradd "${3:--m}" -s /bin/sh -G "$2" "$1" || fail "useradd $1 failed"
}

# Waits up to 30 s (a loaded machine starts serve slowly) for the address
# `flightrec serve` prints first to $T/serve.out (its errors in
# $T/serve.err; fails the test without) and
# sets page_url to it as printed ("http://127.0.0.1:PORT/?token=HEX"), url
# to the server's root without the token ("http://127.0.0.1:PORT/", to
# which the tests add paths) and token, also in FR_SERVE_TOKEN, to the
# token, which every request needs (the tests send it as a Bearer header).
wait_serve_url() {
	try_until 30 '[ -s "$T/serve.out" ]'
	page_url=$(head -1 "$T/serve.out")
	[ -n "$page_url" ] || fail "serve printed no address: $(cat "$T/serve.err")"
	url=${page_url%%\?*}
	token=
	case $page_url in *"?token="*) token=${page_url##*\?token=} ;; esac
	export FR_SERVE_TOKEN=$token
}

# wait_until SECONDS WHAT COMMAND [ARGS...]: runs COMMAND (one argument:
# evaluated as shell code, so it may hold pipes and tests; several: run as
# they are) every 0.1 s until it succeeds, and fails the test with "timed
# out after SECONDS s waiting for WHAT" when it has not by then. Tests wait
# on the condition they need, not on a guess of how long it takes: on a
# loaded machine a guess is either too short (a flaky test) or far too long
# (a slow suite). The deadline (whole seconds) is generous for the same
# reason; a test that passes waits only as long as the condition takes.
# Code evaluated here sees this function's $1, $2...: a function that waits
# on its own arguments passes them as COMMAND's arguments instead.
wait_until() {
	local _wu_secs=$1 _wu_what=$2
	shift 2
	try_until "$_wu_secs" "$@" || fail "timed out after $_wu_secs s waiting for $_wu_what"
}

# try_until SECONDS COMMAND [ARGS...]: wait_until's loop alone; returns 1
# at the deadline, for a test with more to say (a fail message with what it
# saw) or to do then.
#
# The deadline is counted in tries too (ten a second): on a loaded machine
# a check that asks the recorder can take most of a second, and gets as
# many chances as on an idle one before the wait gives up.
try_until() {
	local _wu_end=$((${EPOCHREALTIME/./} + $1 * 1000000)) _wu_tries=$(($1 * 10))
	shift
	while :; do
		if [ $# = 1 ]; then eval "$1" && return 0; else "$@" && return 0; fi
		_wu_tries=$((_wu_tries - 1))
		[ "${EPOCHREALTIME/./}" -lt "$_wu_end" ] || [ "$_wu_tries" -gt 0 ] || return 1
		sleep 0.1
	done
}

need_root_perf() {
	[ "$(id -u)" = 0 ] || skip "needs root to sample the whole machine with perf_event_open"
	[ -e /proc/sys/kernel/perf_event_paranoid ] || skip "kernel has no perf events"
}

need_go() {
	[ -n "$GO" ] && [ -x "$GO" ] || skip "needs go (golang-go) for go tool pprof"
}

# start_fuse_hold [ARGS...]: mounts the file system of
# tests/integration/fuse_hold (given ARGS) and sets FUSE_DIR to it and
# HOLD_PID to its server (stopping it unmounts); skips the test where FUSE
# cannot be mounted.
start_fuse_hold() {
	"$BUILD/tests/integration/fuse_hold" "$@" >"$T/fuse.dir" 2>"$T/fuse.err" &
	HOLD_PID=$!
	try_until 10 '[ -s "$T/fuse.dir" ] || ! kill -0 "$HOLD_PID" 2>/dev/null'
	if [ ! -s "$T/fuse.dir" ] && ! kill -0 "$HOLD_PID" 2>/dev/null; then
		wait "$HOLD_PID"
		[ $? = 77 ] && { HOLD_PID=; skip "cannot mount a FUSE file system: $(cat "$T/fuse.err")"; }
		fail "fuse_hold failed: $(cat "$T/fuse.err")"
	fi
	FUSE_DIR=$(cat "$T/fuse.dir")
}

# start_daemon [ARGS...]: starts flightrecd on the private ring and socket
# and waits until it answers status.
start_daemon() {
	"$FLIGHTRECD" --ring "$RING" --socket "$SOCK" "$@" >>"$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	wait_answering
}

# wait_answering [SOCKET [PID]]: waits (10 s at most) until the flightrecd
# of PID (DAEMON_PID) answers status on SOCKET ($SOCK); fails at once when
# it exits.
wait_answering() {
	local _wa_sock=${1:-$SOCK} _wa_pid=${2:-$DAEMON_PID}
	wait_until 10 "flightrecd to answer status on $_wa_sock" \
		'"$FLIGHTREC" status --socket "$_wa_sock" >/dev/null 2>&1 ||
			{ kill -0 "$_wa_pid" 2>/dev/null || fail "flightrecd exited at start"; false; }'
}

# wait_seals [N]: waits (30 s at most) until the recorder has sealed N (2)
# more chunks than when called: what it recorded before the call is then in
# sealed chunks of the ring (it seals at least once a second), with the
# processes and threads the seals list.
wait_seals() {
	local _ws_n=${1:-2} _ws_from
	_ws_from=$(chunks_sealed)
	[ -n "$_ws_from" ] || fail "status does not answer"
	wait_until 30 "$_ws_n more chunks sealed" '[ "$(chunks_sealed)" -ge $((_ws_from + _ws_n)) ]'
}
chunks_sealed() { status_int chunks_sealed; }

# wait_samples N: waits (30 s at most) until the recorder has recorded N
# more samples than when called (status's samples, of this run).
wait_samples() {
	local _ws_n=$1 _ws_from
	_ws_from=$(samples_recorded)
	[ -n "$_ws_from" ] || fail "status does not answer"
	wait_until 30 "$_ws_n more samples" '[ "$(samples_recorded)" -ge $((_ws_from + _ws_n)) ]'
}
samples_recorded() { status_int samples; }

# status_int NAME: the first integer member NAME in status --json (the
# top-level ones come before the nested objects); nothing when the recorder
# does not answer. Cheaper than status_value for a wait that asks often.
status_int() {
	"$FLIGHTREC" status --json 2>/dev/null | grep -o "\"$1\": *[0-9]*" | head -1 | grep -o '[0-9]*$'
}

# has_run PID: PID has had CPU time.
has_run() {
	[ "$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0)" -gt 0 ]
}

# status_value EXPR: EXPR (Python, over status --json's object d) printed;
# nothing when the recorder does not answer.
status_value() {
	"$FLIGHTREC" status --json 2>/dev/null |
		python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>/dev/null
}

stop_daemon() {
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" || fail "flightrecd exited with status $? on SIGTERM"
	DAEMON_PID=
}

kill9_daemon() {
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
}

daemon_alive() {
	kill -0 "$DAEMON_PID" 2>/dev/null && "$FLIGHTREC" status >/dev/null 2>&1
}

# wait_tables_built: waits (10 s at most) until the recorder has no CFI
# table pending (status --json: unwind_tables.pending is 0), so that the
# tables the samples stored so far asked for are built. An attach first
# flushes the last samples into the ring, and so queues their requests.
wait_tables_built() {
	try_until 10 tables_pending_none ||
		echo "CFI tables still pending after 10 s" >&2
}
tables_pending_none() {
	"$FLIGHTREC" status --json 2>/dev/null |
		python3 -c 'import json, sys; sys.exit(json.load(sys.stdin).get("unwind_tables", {}).get("pending", 0) != 0)'
}

# pprof_top FILE [ARGS...]: go tool pprof -top with flat values in samples.
pprof_top() {
	local f=$1
	shift
	"$GO" tool pprof -symbolize=none -top -nodecount=1000 -sample_index=samples "$@" "$f" 2>"$T/pprof.err" ||
		{ cat "$T/pprof.err" >&2; fail "go tool pprof could not read $f"; }
}

# flat_pct TOPFILE FUNCTION: the flat% of FUNCTION in pprof -top output.
flat_pct() {
	awk -v fn="$2" '$6 == fn { sub("%", "", $2); print $2; found=1; exit }
		END { if (!found) print "0" }' "$1"
}

# cum_ns FILE FUNCTION [INDEX]: the ns of FUNCTION (cum, INDEX offcpu
# unless given) in a profile, 0 when it is not there; FUNCTION may be a
# name with spaces ("[off-CPU waits under min_wait]").
cum_ns() {
	"$GO" tool pprof -symbolize=none -top -cum -nodecount=1000 -unit=ns \
		-sample_index="${3:-offcpu}" "$1" 2>/dev/null |
		awk -v fn="$2" '{ name = $6; for (i = 7; i <= NF; i++) name = name " " $i }
			name == fn { v = $4; sub("ns", "", v); print v; found = 1; exit }
			END { if (!found) print 0 }'
}

# near VALUE WANT: VALUE within 10% of WANT.
near() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= 0.9 * b && a <= 1.1 * b) }'; }

# within A B TOL: |A - B| <= TOL (floats).
within() {
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
}

# start_jit_spin SECONDS: runs tests/integration/jit_spin in the background
# (its pid in JIT_PID, its perf map in MAP) and waits until it has spun
# the code it wrote; skips where it cannot write code (not x86-64).
start_jit_spin() {
	"$BUILD/tests/integration/jit_spin" "$1" >"$T/jit.out" &
	JIT_PID=$!
	MAP=/tmp/perf-$JIT_PID.map
	try_until 60 'grep -qs "^spun$" "$T/jit.out" || ! kill -0 "$JIT_PID" 2>/dev/null'
	grep -q '^spun$' "$T/jit.out" && return 0
	kill "$JIT_PID" 2>/dev/null
	wait "$JIT_PID"
	[ $? = 77 ] && skip "jit_spin writes x86-64 code only"
	rm -f "$MAP"
	fail "jit_spin did not spin"
}

# jit_folded PID WINDOW SETTLE OUT: the folded profile of the last WINDOW
# of a JIT runtime's process PID into OUT, taken once its unwind tables
# are built (a JIT runtime's text is large: the samples taken before count
# as truncated, "unwind table not ready") and SETTLE more seconds have
# passed; then PID is killed and its perf map removed.
jit_folded() {
	local pid=$1 window=$2 settle=$3 out=$4 ret
	sleep 3
	wait_tables_built
	sleep "$settle"
	"$FLIGHTREC" attach --window "$window" --pid "$pid" --format folded -o "$out" \
		2>"$T/attach.err"
	ret=$?
	kill "$pid"
	wait "$pid" 2>/dev/null
	rm -f "/tmp/perf-$pid.map"
	[ "$ret" = 0 ] || { cat "$T/attach.err"; fail "attach --pid failed"; }
}

# check_jit_chain FOLDED LEAF OUTER: in a folded profile, the samples with
# a frame matching the awk regex LEAF have one matching OUTER above it in
# at least 95% of cases, and under 5% of all samples end in a
# [truncated: ...] marker.
check_jit_chain() {
	local counts
	counts=$(awk -v leaf="$2" -v outer="$3" '
		{ n = $NF; total += n; s = $0; sub(/ [0-9]+$/, "", s) }
		s ~ /\[truncated: / { trunc += n }
		s ~ leaf { inleaf += n; if (s ~ (outer ".*" leaf)) chain += n }
		END { print total + 0, trunc + 0, inleaf + 0, chain + 0 }' "$1")
	set -- "$1" "$2" "$3" $counts
	echo "$4 samples, $5 truncated; $6 in $2, $7 of them under $3"
	[ "$4" -ge 100 ] || fail "only $4 samples"
	[ "$6" -ge 50 ] || { top_folded <"$1"; fail "only $6 samples in $2"; }
	[ $(($5 * 100)) -lt $(($4 * 5)) ] ||
		{ grep -F '[truncated' "$1" | top_folded; fail "$5 of $4 samples truncated"; }
	[ $(($7 * 100)) -ge $(($6 * 95)) ] ||
		{ grep -E "$2" "$1" | grep -Ev "$3" | top_folded; fail "$2 has $3 as a caller in only $7 of $6 samples"; }
}

# top_folded: the five heaviest stacks of a folded profile on stdin.
top_folded() {
	awk '{ print $NF "\t" $0 }' | sort -rn | head -5 | cut -f2-
}

# traces PROFILE OUT: one line per pprof sample, "COUNT root;...;leaf", from
# go tool pprof -traces (frames leaf first, one per line, between rules).
traces() {
	"$GO" tool pprof -symbolize=none -sample_index=samples -traces "$1" >"$2.raw" 2>"$T/pprof.err" ||
		{ cat "$T/pprof.err"; fail "go tool pprof -traces could not read $1"; }
	awk '
		function flush() { if (s != "") print n, s; s = ""; n = 0 }
		/^-+\+-+$/ { flush(); next }
		/^ *[a-z_]+:\[/ { next }
		NF == 0 { next }
		s == "" && n == 0 && $1 ~ /^[0-9]+$/ { n = $1; sub(/^ *[0-9]+ +/, ""); s = $0; next }
		n > 0 { sub(/^ +/, ""); s = $0 ";" s }
		END { flush() }' "$2.raw" >"$2"
}

# make_suid_dir: $SUID_DIR ($T/u), a directory on a file system that
# honours the set-user-ID bit: $T's, or a tmpfs mounted there with suid
# when $T's is nosuid (the caller's cleanup unmounts it: suid_dir_cleanup).
# suid_copy PROG NAME: a set-user-ID root copy of PROG at $SUID_DIR/NAME.
SUID_DIR=$T/u
make_suid_dir() {
	mkdir "$SUID_DIR"
	if findmnt -n -o OPTIONS --target "$T" | grep -Eq '(^|,)nosuid(,|$)'; then
		mount -t tmpfs -o mode=0755,suid flightrec-suid "$SUID_DIR" ||
			skip "$T is nosuid and no tmpfs can be mounted with suid"
	fi
	chmod 0755 "$SUID_DIR"
}
suid_dir_cleanup() { mountpoint -q "$SUID_DIR" && umount "$SUID_DIR"; }
suid_copy() {
	cp "$1" "$SUID_DIR/$2" && chown root:root "$SUID_DIR/$2" && chmod 4755 "$SUID_DIR/$2" ||
		fail "cannot make the set-user-ID copy of $1"
}

# check_owners STATUS_JSON FIELD BUDGET UID: status --json's FIELD
# (symbol_cache, unwind_tables) has budget BUDGET bytes and lists what
# root and UID hold of it, adding up to its bytes.
check_owners() {
	python3 - "$@" <<'PY' || fail "status --json's $2 owners: $(cat "$1")"
import json, sys
t = json.load(open(sys.argv[1]))[sys.argv[2]]
owners = {o["uid"]: o for o in t["owners"]}
assert t["budget"] == int(sys.argv[3]), t
assert 0 in owners and int(sys.argv[4]) in owners, owners
assert sum(o["bytes"] for o in t["owners"]) == t["bytes"], t
PY
}
