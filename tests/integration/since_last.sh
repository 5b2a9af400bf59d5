#!/bin/bash
# attach --since-last NAME: a script polling 8 times, across a restart of
# the recorder and a kill -9, sees every sample exactly once: the deltas
# add up, stack by stack, to one window over the whole span. A cursor is
# per user (another user's cursor of the same name is its own, and no
# user moves root's); hostile names are refused with a clear error;
# --follow resumes from a cursor; the cursors file is 0600 beside the
# ring.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_test_users
U=frcur$$
G=frcurg$$
add_test_group "$G"
add_test_user "$U" "$G"
mkdir "$T/u" && chown "$U" "$T/u"

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"},
 "sessions": [{"name": "all", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
# A name of its own, apart from other tests' programs on the machine.
NAME=slburn$$
cp "$BURN" "$T/$NAME"
"$T/$NAME" 60 2 0 >/dev/null &
BURN_PID=$!

poll() {
	"$FLIGHTREC" attach --since-last poll --format folded -o "$T/d$1.folded" >/dev/null 2>"$T/err" ||
		fail "poll $1 failed: $(cat "$T/err")"
}
wait_samples 100
poll 1
wait_samples 100
poll 2
stop_daemon
start_daemon --config "$T/config.json"
wait_samples 100
poll 3
wait_samples 100
poll 4
kill9_daemon
start_daemon --config "$T/config.json"
wait_samples 100
poll 5
wait_samples 100
poll 6
# Another user's "poll" is its own cursor: it starts anew and does not
# move root's.
runuser -u "$U" -- "$FLIGHTREC" attach --since-last poll -o "$T/u/p.pb.gz" >/dev/null 2>"$T/err" ||
	fail "a user's poll failed: $(cat "$T/err")"
wait_samples 100
poll 7
wait_samples 100
poll 8

[ "$(stat -c '%a %U' "$RING.cursors")" = "600 root" ] ||
	fail "the cursors file is $(stat -c '%a %U' "$RING.cursors"), want 600 root"
end=$(awk '$1 == 0 && $2 == "poll" { print $3 }' "$RING.cursors")
[ -n "$end" ] || fail "root's cursor is not in the file: $(cat "$RING.cursors")"
grep -q "^$(id -u "$U") poll " "$RING.cursors" || fail "the user's cursor is not in the file"
to=$(printf '%d.%09d' $((end / 1000000000)) $((end % 1000000000)))
"$FLIGHTREC" attach --from 0 --to "$to" --format folded -o "$T/whole.folded" >/dev/null 2>"$T/err" ||
	fail "the whole window failed: $(cat "$T/err")"

# Stack by stack, the deltas add up to the whole. A kernel frame inside an
# eBPF program (the recorder's own, when a sample lands in it) is named
# from /proc/kallsyms at the query: by a later query, after a recorder
# killed here unloaded its programs, it is an address; the recorder's
# own programs are named for what they do ("[flightrec: reading
# labels]"), and a program loaded by the recorder started after it may
# sit at the address since, under another name, one frame or two. A run
# of such frames is one "[bpf]".
sum_stacks() {
	sed -E -e 's/(bpf_prog_[0-9a-f]+_[A-Za-z0-9_]*|0xffffffff[0-9a-f]+|\[bpf\]|\[flightrec: [^];]*\])_\[k\]/[bpf]_[k]/g' \
		-e ':a' -e 's/\[bpf\]_\[k\];\[bpf\]_\[k\]/[bpf]_[k]/' -e 'ta' "$@" |
		awk '{ n = $NF; $NF = ""; s[$0] += n } END { for (k in s) print k, s[k] }' | LC_ALL=C sort
}
sum_stacks "$T"/d[1-8].folded >"$T/deltas.sum"
sum_stacks "$T/whole.folded" >"$T/whole.sum"
nd=$(awk '{ s += $NF } END { print s + 0 }' "$T/deltas.sum")
nw=$(awk '{ s += $NF } END { print s + 0 }' "$T/whole.sum")
echo "8 deltas: $nd samples; one window over the span: $nw samples"
[ "$nw" -gt 500 ] || fail "the span has only $nw samples"
[ "$nd" = "$nw" ] || fail "the deltas have $nd samples, the whole window $nw"
# Per process name; and stack by stack for our burn, which runs throughout (a
# process that exited, as the recorders killed here did, may be named
# differently by a later query).
awk '{ split($1, c, ";"); s[c[1]] += $NF } END { for (k in s) print k, s[k] }' "$T/deltas.sum" | sort >"$T/deltas.comm"
awk '{ split($1, c, ";"); s[c[1]] += $NF } END { for (k in s) print k, s[k] }' "$T/whole.sum" | sort >"$T/whole.comm"
diff "$T/deltas.comm" "$T/whole.comm" >"$T/diff" || fail "the deltas are not the whole window, per command: $(cat "$T/diff")"
grep -q "^$NAME;" "$T/deltas.sum" || fail "no samples of $NAME"
diff <(grep "^$NAME;" "$T/deltas.sum") <(grep "^$NAME;" "$T/whole.sum") >"$T/diff" ||
	fail "the deltas are not the whole window, stack by stack: $(head -5 "$T/diff")"
for i in 1 2 3 4 5 6 7 8; do
	[ -s "$T/d$i.folded" ] || fail "delta $i is empty"
done

# Hostile names: refused by the CLI and by the recorder.
for name in '../x' 'a/b' '' "$(printf 'a\nb')" "$(head -c 65 /dev/zero | tr '\0' a)"; do
	"$FLIGHTREC" attach --since-last "$name" -o "$T/x.pb.gz" 2>"$T/err" && fail "--since-last '$name' was accepted"
	grep -q 'cursor name is 1 to 64 characters' "$T/err" || fail "--since-last '$name': $(cat "$T/err")"
done
python3 - "$SOCK" <<'PY' || fail "the recorder took a hostile cursor name"
import array, json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
fd = os.open("/dev/null", os.O_WRONLY)
req = json.dumps({"v": 1, "req": "attach", "since_last": "../../etc/x"}).encode()
s.sendmsg([struct.pack("<I", len(req)) + req], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
    if len(data) >= 4 and len(data) >= 4 + struct.unpack("<I", data[:4])[0]:
        break
resp = json.loads(data[4:])
print(resp)
sys.exit(0 if resp.get("ok") is False and "cursor name" in resp.get("error", "") else 1)
PY

# --follow resumes from the cursor: its first window starts where the
# last poll ended.
"$FLIGHTREC" attach --follow --since-last poll --window 1s --count 2 -o "$T/u" >"$T/follow.out" 2>"$T/follow.err" ||
	fail "attach --follow --since-last failed: $(cat "$T/follow.err")"
first=$(sed -n 's/.*: window \([0-9.]*\) \.\. .*/\1/p' "$T/follow.err" | head -1)
# (The reply's times pass through a double on the wire: within 1 us.)
python3 -c 'import sys; a, b = (int(x.replace(".", "")) for x in sys.argv[1:]); sys.exit(abs(a - b) > 1000)' \
	"${first:-0.000000000}" "$to" ||
	fail "the resumed follow starts at $first, not at the cursor $to: $(cat "$T/follow.err")"
daemon_alive || fail "flightrecd died"
kill "$BURN_PID" 2>/dev/null
echo PASS
