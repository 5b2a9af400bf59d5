#!/bin/sh
# The tree is formatted with the repository's .clang-format (kernel brace
# style, tabs, 100 columns): lists each C file clang-format would change,
# and fails. Fix with: clang-format -i FILE. Skips (77) without clang-format.
set -eu
cd "${FR_SOURCE_DIR:-$(dirname "$0")/..}"
command -v clang-format >/dev/null 2>&1 || {
	echo "clang-format is not installed (Debian: apt-get install clang-format)"
	exit 77
}
bad=0
for f in $(find lib core config ipc recorder tools tests -name '*.[ch]' | sort); do
	if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "$f is not formatted: clang-format -i $f"
		bad=1
	fi
done
[ $bad = 0 ] && echo "every C file is formatted"
exit $bad
