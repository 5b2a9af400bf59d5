#!/bin/bash
# Allocation samples of a program run under LD_PRELOAD=libflightrec.so
# (tests/integration/alloc_labelled.c: 64-byte and 64 KiB blocks freed at
# once, 4 KiB blocks kept): the recorder maps its ring while it runs,
# drops it when it exits, its samples have the allocating site as their
# leaf (the library's own frames dropped), its frees are matched and its
# blocks still live at the exit are freed then; the default session asks
# for the 512 KiB mean; the ring file alone gives the same samples after
# the recorder stopped; the thread's labels are the samples'.
# FR_ALLOC_LIB names another libflightrec.so.
. "$(dirname "$0")/lib.sh"

LIB=${FR_ALLOC_LIB:-$BUILD/lib/libflightrec.so}
SITES=$BUILD/tests/integration/alloc_labelled
[ -x "$SITES" ] || fail "$SITES is not built"
grep -q fr_alloc_registry "$LIB" 2>/dev/null ||
	skip "$LIB does not sample allocations (no fr_alloc_registry)"

alloc() { status_value "d.get('alloc', {}).get('$1', 0)"; }

start_daemon
why=$("$FLIGHTREC" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin).get("labels", {}).get("error") or "")') ||
	fail "status failed"
[ -z "$why" ] || skip "the recorder looks no process up here (its labels' look-ups need eBPF): $why"

# The recorder reads every ring on the machine: the counts are taken
# as differences, this process's own ring known by the log.
for c in samples frees_matched bad_records skipped_bytes evicted; do
	eval "before_$c=\$(alloc $c)"
done
LD_PRELOAD=$LIB "$SITES" 8 >"$T/sites.out" 2>&1 &
PID=$!
wait_until 10 "the ring of pid $PID read" \
	"grep -q 'allocation samples of pid $PID: its ring of' '$T/daemon.log'"
[ "$(alloc mean)" = 524288 ] || fail "the rings are asked for a mean of $(alloc mean), not 512 KiB"
"$FLIGHTREC" status | grep -Eq '^Allocation sampling: [1-9][0-9]* processes' ||
	fail "status has no allocation line: $("$FLIGHTREC" status)"
wait "$PID" || fail "alloc_labelled failed: $(cat "$T/sites.out")"
# Its ring goes once the recorder knows it ended (its next seal), its
# kept blocks freed at its exit.
wait_until 10 "the ring of pid $PID dropped" \
	"grep -q 'allocation samples of pid $PID: its ring is dropped' '$T/daemon.log'"
samples=$(($(alloc samples) - before_samples))
matched=$(($(alloc frees_matched) - before_frees_matched))
[ "$samples" -ge 200 ] || fail "only $samples allocations sampled in 8 s"
[ "$matched" -ge 100 ] || fail "only $matched frees of sampled blocks matched"
for c in bad_records skipped_bytes evicted; do
	eval "b=\$before_$c"
	[ "$(alloc $c)" = "$b" ] || fail "alloc.$c went from $b to $(alloc $c)"
done

# The samples, by stack: each leaf an allocating site (a few may end at
# an unwind marker while the tables are built), none in the library. The
# program allocates as fast as it can: its ring drops samples, which
# attach counts and says (--allow-loss: the stacks are what is checked).
"$FLIGHTREC" attach --window 60s --pid "$PID" --event alloc --allow-loss --format folded \
	-o "$T/alloc.folded" 2>"$T/attach.err" || fail "attach: $(cat "$T/attach.err")"
python3 - "$T/alloc.folded" <<'PY' || fail "the alloc samples' stacks are wrong: $(head -20 "$T/alloc.folded")"
import sys
leaves = {}
total = 0
for line in open(sys.argv[1]):
    if line.startswith('#') or not line.strip():
        continue
    stack, n = line.rsplit(' ', 1)
    leaf = stack.split(';')[-1]
    leaves[leaf] = leaves.get(leaf, 0) + int(n)
    total += int(n)
sites = sum(v for k, v in leaves.items() if k in ('site_small', 'site_big', 'site_kept'))
print('leaves', leaves, file=sys.stderr)
bad = [k for k in leaves if 'fr_alloc' in k or 'libflightrec' in k]
sys.exit(0 if total and sites >= 0.9 * total and not bad and 'site_kept' in leaves
         and 'site_small' in leaves and 'site_big' in leaves else 1)
PY

# The labels the thread had at each allocation.
"$FLIGHTREC" attach --window 60s --pid "$PID" --event alloc --allow-loss --label site=loop --format folded \
	-o "$T/label.folded" 2>"$T/attach.err" || fail "attach --label: $(cat "$T/attach.err")"
cmp -s <(grep -v '^#' "$T/alloc.folded" | sort) <(grep -v '^#' "$T/label.folded" | sort) ||
	fail "the samples with label site=loop are not all of them"

# The same from the ring file alone, the recorder stopped.
stop_daemon
"$FLIGHTREC" dump --ring "$RING" --window 10m --pid "$PID" --event alloc --allow-loss --format folded \
	-o "$T/dump.folded" 2>"$T/dump.err" || fail "dump --ring: $(cat "$T/dump.err")"
cmp -s <(grep -v '^#' "$T/alloc.folded" | sort) <(grep -v '^#' "$T/dump.folded" | sort) ||
	fail "dump --ring differs from attach: $(diff <(sort "$T/alloc.folded") <(sort "$T/dump.folded") | head)"
echo "PASS: $samples samples, $matched frees matched"
