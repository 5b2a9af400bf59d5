#!/bin/bash
# The OpenTelemetry thread context of a shared library (otel_lib.c, the
# way SDKs in other languages publish it), read at each sample: the
# library's block of thread-locals is placed by the dynamic linker at run
# time, and the recorder finds the thread-local through the GOT slot the
# linker filled (a TLS descriptor, the specification's recommended form,
# and an initial-exec slot). Every cpu sample of the program, after the
# recorder found it, carries its trace_id and span_id.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/labels_lib.sh"
need_root_perf
start_daemon
need_labels

for model in desc ie; do
	prog=$BUILD/tests/integration/otel_lib_main_$model
	"$prog" 6 >"$T/$model.out" &
	pid=$!
	wait_lines "$T/$model.out" ready
	wait_labelled "$pid" trace_id
	from=$(($(date +%s) + 1))
	wait_until 10 "the window's end" '[ "$(date +%s)" -ge $((from + 3)) ]'
	"$FLIGHTREC" attach --from "@$from" --to "@$((from + 3))" --pid "$pid" -o "$T/$model.pb.gz" \
		2>"$T/err" || fail "attach failed ($model): $(cat "$T/err")"
	total=$(python3 "$(dirname "$0")/pprof_samples.py" jsonl "$T/$model.pb.gz" |
		python3 -c 'import json, sys
n = t = 0
for l in sys.stdin:
    s = json.loads(l)
    c = s["values"][0]
    n += c
    if (s["str"].get("trace_id") == "404142434445464748494a4b4c4d4e4f" and
            s["str"].get("span_id") == "b0b1b2b3b4b5b6b7" and
            s["str"].get("http.route") == "GET /x" and "otel.attr.0" not in s["str"]):
        t += c
print(n, t)')
	read -r n t <<<"$total"
	echo "$model: $t of $n samples carry the library's trace and span ids and http.route"
	[ "$n" -gt 20 ] || fail "$model: only $n samples in the window"
	[ "$t" = "$n" ] || fail "$model: $((n - t)) of $n samples lack the library's context"
	wait "$pid"
done
stop_daemon
echo PASS
