#!/bin/bash
# The CLI's documentation keeps up with the CLI.
#   docs_cli.sh coverage  every command of `flightrec --help` has its
#     section in flightrec(1) and an entry in both completions; every long
#     option of each command's --help (and of flightrecd's) is completed
#     by bash and named in the man page or the completion; every command
#     of this round's CLI is among the completed names; no --help
#     suggests reading a pipe with go tool pprof (it opens its argument
#     twice: `go tool pprof /dev/stdin` fails, as the README says).
#   docs_cli.sh render    each man page renders with `man --warnings`
#     without a warning (skipped without man and groff).
set -u
src=${FR_SOURCE_DIR:?}
build=${FR_BUILD_DIR:?}
flightrec=$build/tools/flightrec
flightrecd=$build/recorder/flightrecd
fails=0
bad() { echo "docs_cli: $*" >&2; fails=$((fails + 1)); }

render() {
	command -v man >/dev/null && command -v groff >/dev/null ||
		{ echo "docs_cli: needs man and groff to render the man pages" >&2; exit 77; }
	for page in "$src"/man/*.[158]; do
		out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -z "$out" ] || bad "$(basename "$page") renders with warnings: $out"
		MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q NAME || bad "$(basename "$page") renders empty"
	done
}

coverage() {
	local bash_c=$src/completions/flightrec.bash zsh_c=$src/completions/_flightrec
	local man1=$src/man/flightrec.1 man8=$src/man/flightrecd.8
	cmds=$("$flightrec" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z]\+\) .*/\1/p')
	[ "$(echo "$cmds" | wc -w)" -ge 6 ] || bad "could not read the commands of flightrec --help: $cmds"
	# shellcheck source=/dev/null
	. "$bash_c" || bad "the bash completion does not load"
	names=$_flightrec_commands
	for c in $cmds attach status dump sessions top threads goroutines timeline serve reload trigger export fleet; do
		grep -q "^\.SS $c\$" "$man1" || bad "flightrec(1) has no section for $c"
		[[ " $names " == *" $c "* ]] || bad "bash completion does not complete the command $c"
		grep -q "[\"']$c:" "$zsh_c" || bad "zsh completion does not list the command $c"
	done
	for c in $cmds; do
		"$flightrec" "$c" --help | grep -q 'pprof.*/dev/stdin' &&
			bad "flightrec $c --help suggests go tool pprof /dev/stdin, which cannot read a pipe"
		var=_flightrec_opts_$c
		opts=${!var-}
		[ -n "$opts" ] || { bad "bash completion has no options for $c"; continue; }
		for o in $("$flightrec" "$c" --help | grep -o '^  \(-[a-z], \)\?--[a-z][a-z-]*' | grep -o -- '--[a-z-]*' | sort -u); do
			[[ " $opts " == *" $o "* ]] || bad "bash completion of $c lacks $o"
			grep -qE -- "'\*?$o\[" "$zsh_c" || grep -q -- "{-[a-z],$o}" "$zsh_c" ||
				bad "zsh completion lacks $o (of $c)"
		done
	done
	for o in $("$flightrecd" --help | grep -o '^  \(-[a-z], \)\?--[a-z][a-z-]*' | grep -o -- '--[a-z-]*' | sort -u); do
		grep -q -- "--${o#--}" "$bash_c" || bad "bash completion of flightrecd lacks $o"
		grep -qF -- "${o//-/\\-}" "$man8" || bad "flightrecd(8) does not name $o"
	done
}

case ${1:-} in
render) render ;;
coverage) coverage ;;
*) echo "usage: docs_cli.sh render|coverage" >&2; exit 2 ;;
esac
[ "$fails" = 0 ]
