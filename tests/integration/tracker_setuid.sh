#!/bin/bash
# A set-user-ID program is its user's process. An exec that leaves a
# process not dumpable ends its perf task context, and the kernel sends an
# EXIT record for it although the process goes on under the same pid; the
# tracker took it for an exit and made the new program's records a new,
# empty process: uid 0, no cgroup, no executable, so its user's profiles
# (and threads) left it out. Here a real second user runs a set-user-ID
# root copy of burn; the user's own attach --pid has its samples, each with
# the process's cgroup, and the ring names the executable.
. "$(dirname "$0")/lib.sh"
need_root_perf
need_test_users
U=frtsu$$
G=frtsg$$
add_test_group "$G"
add_test_user "$U" "$G"

tracker_cleanup() {
	pkill -KILL -u "$U" 2>/dev/null
	suid_dir_cleanup
	test_users_cleanup
}
trap tracker_cleanup EXIT
make_suid_dir
suid_copy "$BURN" suidburn
mkdir "$T/out" && chown "$U" "$T/out"

cat >"$T/config.json" <<JSON
{"socket": {"path": "$SOCK", "group": "$G"},
 "sessions": [{"name": "cpu", "events": [{"event": "cpu", "hz": 99}]}]}
JSON
start_daemon --config "$T/config.json"
as_user() { runuser -u "$U" -- "$@"; }

as_user sh -c "echo \$\$ >'$T/out/pid'; exec '$SUID_DIR/suidburn' 2 1 >'$T/out/burn.out'" ||
	fail "the set-user-ID burn failed"
pid=$(cat "$T/out/pid")
cpu_s=$(sed -n 's/.*cpu_seconds=\([0-9.]*\).*/\1/p' "$T/out/burn.out")
[ -n "$cpu_s" ] || fail "burn did not say its CPU time: $(cat "$T/out/burn.out")"
# Half its CPU time at 99 Hz (about 100 for its 2 s on an idle CPU): the
# samples of the CPU it had, which a loaded machine makes less.
want=$(awk -v c="$cpu_s" 'BEGIN { w = c * 99 / 2; printf "%d", w < 10 ? 10 : w }')
as_user "$FLIGHTREC" attach --window 30s --pid "$pid" --format folded -o "$T/out/user.folded" \
	2>"$T/attach.err" || fail "the user's attach --pid of its set-user-ID process failed: $(cat "$T/attach.err")"
n=$(awk '{ n += $NF } END { print n + 0 }' "$T/out/user.folded")
echo "the user's profile of its set-user-ID process: $n samples"
[ "$n" -ge "$want" ] || fail "the user sees $n samples of its set-user-ID process ($cpu_s s of CPU)"
"$FLIGHTREC" attach --window 30s --pid "$pid" -o "$T/root.pb.gz" 2>"$T/attach.err" ||
	fail "root's attach failed: $(cat "$T/attach.err")"
python3 - "$T/root.pb.gz" "$(dirname "$0")" "$SUID_DIR/suidburn" "$want" <<'PY' || fail "the set-user-ID process's samples lack its cgroup or executable"
import gzip, sys
sys.path.insert(0, sys.argv[2])
from pprof_samples import samples
total = with_cgroup = 0
for s in samples(sys.argv[1]):
    v = s["values"][0]
    total += v
    with_cgroup += v if s["str"].get("cgroup") else 0
print("root's profile: %d samples, %d with the process's cgroup" % (total, with_cgroup))
assert total >= int(sys.argv[4]) and with_cgroup >= 0.95 * total
assert sys.argv[3].encode() in gzip.open(sys.argv[1]).read(), "no mapping of the executable"
PY
echo "ok"
