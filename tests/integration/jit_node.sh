#!/bin/bash
# JavaScript stacks unwound through V8's JIT code: a Node program with a
# named call chain (jit/chain.js: buildJsonReport -> collectRows ->
# scoreRow, a busy loop) runs under --perf-basic-prof while flightrecd
# records (--no-turbo-inlining keeps each function a frame of its own).
# V8's code has no CFI (its JIT code is in anonymous memory, its
# builtins in gaps between the FDEs of node's text): the recorder steps
# those frames by their frame pointers and goes on with CFI in node's C++.
# Of the samples in collectRows or scoreRow (which V8 may inline into
# it), at least 95% have buildJsonReport, the
# outermost JS function, as a caller, and under 5% of the program's
# samples are marked truncated.
. "$(dirname "$0")/lib.sh"
need_root_perf
NODE=${FR_NODE:-$(command -v node || command -v nodejs || true)}
[ -n "$NODE" ] || skip "needs node (Debian's nodejs)"
"$NODE" --v8-options 2>/dev/null | grep -q -- --perf-basic-prof || skip "$NODE has no --perf-basic-prof"

start_daemon --hz 499
cp "$(dirname "$0")/jit/chain.js" "$T/chain.js"
# In $T: node writes an isolate-*.log where it runs.
(cd "$T" && exec "$NODE" --perf-basic-prof --no-turbo-inlining chain.js 40) >"$T/node.out" 2>&1 &
NODE_PID=$!
jit_folded "$NODE_PID" 4s 3 "$T/node.folded"
stop_daemon
check_jit_chain "$T/node.folded" '(scoreRow|collectRows) ' 'buildJsonReport '
echo PASS
