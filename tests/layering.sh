#!/bin/sh
# The direction of dependencies between the parts, checked on includes:
# each part may include only itself and the parts below it.
#   core/util <- core/store <- core/query <- core/clickhouse
#   core/util <- core/symbols <- core/query
#   core/util <- core/pprof <- core/query
#   core/util <- core/unwind
#   core <- config <- ipc <- recorder, tools
#   lib (libflightrec, included as flightrec/...) uses nothing of the
#   project; the recorder reads its memory layout (flightrec/labels_abi.h)
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
				case $inc in "$a"/*) ok=1 ;; esac
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
	check tools core config ipc
)
if [ -n "$bad" ]; then
	echo "$bad"
	exit 1
fi
echo "every include of lib/, core/, config/, ipc/, recorder/ and tools/ goes down"
