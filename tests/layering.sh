#!/bin/sh
# The direction of dependencies between the parts, checked on includes:
# each part may include only itself and the parts below it.
#   core/util <- core/store <- core/query <- core/clickhouse
#   core/util <- core/symbols <- core/query
#   core/util <- core/pprof <- core/query
#   core/util <- core/unwind
#   core <- config <- ipc <- recorder, tools
#   inside recorder/, each wing uses only the wings below it:
#   bpf, export <- sampling <- tracking <- triggers <- ingest <- requests
#   (and requests uses export); the daemon's own files (daemon*, reload.c,
#   memory.c, main.c) wire the wings and are used by requests alone,
#   through daemon_int.h
#   lib (libflightrec, included as flightrec/...) uses nothing of the
#   project; the recorder reads its memory layouts (flightrec/labels_abi.h,
#   flightrec/alloc_abi.h)
# (linking each library's unit tests with only that library and those
# below checks the calls the same way). Prints each violation and fails.
set -eu
cd "${FR_SOURCE_DIR:-$(dirname "$0")/..}"

# check PART ALLOWED...: prints the includes of PART outside PART and ALLOWED.
check() {
	part=$1
	shift
	find "$part" -name '*.[ch]' | sort | while read -r f; do
		sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
			case $inc in fr_version.h) continue ;; esac
			ok=0
			for a in "$part" "$@"; do
				case $inc in "$a"/* | "$a") ok=1 ;; esac
			done
			[ $ok = 1 ] || echo "$f includes \"$inc\": $part may use only ${*:-itself}"
		done
	done
}

bad=$(
	check lib flightrec
	check core/util
	check core/store core/util
	check core/unwind core/util
	check core/symbols core/util
	check core/pprof core/util
	check core/query core/store core/symbols core/pprof core/util
	check core/clickhouse core/query core/store core/symbols core/pprof core/util
	check config core
	check ipc core config
	check recorder core config ipc flightrec
	check recorder/bpf core
	check recorder/export core config ipc
	check recorder/sampling core config ipc flightrec recorder/bpf recorder/labels.skel.h recorder/offcpu.skel.h recorder/events.skel.h
	check recorder/tracking core config ipc flightrec recorder/bpf recorder/sampling
	check recorder/triggers core config ipc recorder/tracking recorder/sampling
	check recorder/ingest core config ipc recorder/export recorder/sampling recorder/tracking recorder/triggers
	check recorder/requests core config ipc recorder/daemon_int.h recorder/options.h recorder/export \
		recorder/ingest recorder/sampling recorder/tracking recorder/triggers
	check tools core config ipc
)
# recorder/ speaks JSON only through ipc/'s typed messages: no file of it
# includes cJSON, directly or through an ipc/ header (those name the type
# only; ipc/msg_int.h is the codec's own).
json=$(
	grep -l '^#include <cjson/cJSON.h>' -r recorder --include='*.[ch]' |
		sed 's|$| includes cJSON: recorder/ encodes through ipc/|'
	grep -l '^#include <cjson/cJSON.h>' ipc/*.h | grep -v '^ipc/msg_int.h$' |
		sed 's|$| includes cJSON: a public ipc/ header names struct cJSON only|'
)
bad=$(printf '%s\n%s' "$bad" "$json" | sed '/^$/d')
if [ -n "$bad" ]; then
	echo "$bad"
	exit 1
fi
echo "every include of lib/, core/, config/, ipc/, recorder/ (and its wings) and tools/ goes down; recorder/ includes no cJSON"
