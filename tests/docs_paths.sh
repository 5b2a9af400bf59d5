#!/bin/sh
# Every path of the repository that the documentation names exists: a
# design that names a file which moved sends its reader to nothing. Reads
# README.md and docs/*.md for tokens under the repository's top folders
# (`recorder/ingest/writer.c`, `core/util/`, `tests/unit/test_*.c`,
# `core/store/sample.{c,h}`), expands braces and globs, and fails listing
# each one that names nothing, with the file and line that name it.
set -eu
cd "${FR_SOURCE_DIR:-$(dirname "$0")/..}"

tops='completions|config|core|docs|ipc|lib|man|recorder|tests|tools|web'

# A token starts at a top folder not preceded by a path character (so
# /usr/lib/debug is not lib/debug) and runs on over name characters,
# slashes, globs and one level of {a,b} braces.
tokens() {
	grep -noE "(^|[^[:alnum:]_./~$-])($tops)/([[:alnum:]_.*+-]|/|\{[[:alnum:]_.,]*\})*" "$@" |
		sed -E "s/^([^:]*:[0-9]+:)[^[:alnum:]]?/\1/; s/[.,:;]+\$//"
}

# exists PATH: true when PATH, its braces expanded and its globs matched,
# names at least one file or folder of each expansion. A program is named
# by its source (tests/bench/stacks: stacks.c), and a run of capitals is
# a placeholder (tests/unit/test_MODULE.c) when no file has that name; a
# path .gitignore names (web/node_modules) is made by a tool, not kept.
exists() {
	found "$1" && return 0
	git check-ignore "$1" "$1/" >/dev/null 2>&1 && return 0
	case $1 in *.*) ;; *) found "$1.c" || found "$1.cc" || found "$1.sh" && return 0 ;; esac
	found "$(echo "$1" | sed -E 's/[A-Z][A-Z_]*[A-Z]/*/g')"
}

found() {
	case $1 in
	*\{*\}*)
		pre=${1%%\{*}
		rest=${1#*\{}
		alts=${rest%%\}*}
		post=${rest#*\}}
		old_ifs=$IFS
		IFS=,
		for a in $alts; do
			IFS=$old_ifs
			(found "$pre$a$post") || return 1
		done
		IFS=$old_ifs
		return 0
		;;
	esac
	for f in $1; do
		[ -e "$f" ] && return 0
	done
	return 1
}

bad=$(
	tokens README.md docs/*.md | while IFS= read -r hit; do
		where=$(echo "$hit" | cut -d: -f1-2)
		path=$(echo "$hit" | cut -d: -f3-)
		exists "$path" || echo "$where names $path, which does not exist"
	done
)
if [ -n "$bad" ]; then
	echo "$bad"
	exit 1
fi
echo "every repository path README.md and docs/*.md name exists"
