# bash completion for flightrec and flightrecd.
# Installed by `meson install` into bash-completion's completions directory
# (as flightrec, and flightrecd linked to it). tests/man.sh checks that
# every command of `flightrec --help` is in the command list below.

_flightrec_commands="attach status dump sessions top threads goroutines timeline events serve reload trigger export fleet"

# Options of each command (those that exist in this version).
_flightrec_filters="--pid --children --comm --cgroup --label --label-key --event --hz --socket"
_flightrec_opts_attach="--window --from --to -o --output $_flightrec_filters --by-cpu --diff --allow-empty --allow-loss --format --follow --count --since-last --help"
_flightrec_opts_status="--json --socket --help"
_flightrec_opts_dump="--ring --window --from --to -o --output $_flightrec_filters --by-cpu --diff --allow-empty --allow-loss --format --symbol-cache --debug-dir --info --threads --at --json --session --timeline --by --step --top --events --type --help"
_flightrec_opts_sessions="--json --socket --help"
_flightrec_opts_top="--window --from --to $_flightrec_filters --diff --allow-empty --allow-loss -n --sort --by --json --help"
_flightrec_opts_threads="--pid --comm --cgroup --at --json -o --output --socket --help"
_flightrec_opts_goroutines="--pid --at --json -o --output --from --socket --help"
_flightrec_opts_timeline="--window --from --to --event --pid --comm --by --step --top --json --socket --help"
_flightrec_opts_events="--window --from --to --pid --comm --cgroup --type --json --socket --help"
_flightrec_event_types="crash oom_kill oom exec exit memory-pressure cpu-pressure io-pressure pressure throttled"
_flightrec_opts_serve="--listen --allow-remote --token-file --read-timeout --socket --help"
_flightrec_opts_reload="--socket --json --help"
_flightrec_opts_trigger="--reason --window --socket --json --help"
_flightrec_opts_export="--init-schema --expire --clickhouse --database --cluster --ttl --user --password-file --ca-file --ring --host --from --to --batch --event --hz --help"
_flightrec_fleet_commands="attach top timeline"
_flightrec_opts_fleet="--clickhouse --database --user --password-file --ca-file --window --from --to --host --comm --label --event --timeout -o --output -n --sort --by --step --top --json --help"
_flightrec_events="cpu offcpu cycles instructions cache-references cache-misses branch-instructions branch-misses page-faults context-switches cpu-migrations"

# The recorder's session names, for trigger and dump --session (quietly
# nothing when no recorder answers).
_flightrec_sessions()
{
	flightrec sessions --json 2>/dev/null |
		sed -n 's/.*"name"[[:space:]]*:[[:space:]]*"\([A-Za-z0-9_.-]*\)".*/\1/p'
}

_flightrec()
{
	local cur prev cmd opts var
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$_flightrec_commands --help --version" -- "$cur"))
		return
	fi
	cmd=${COMP_WORDS[1]}
	case $prev in
	-o | --output | --ring | --symbol-cache | --debug-dir | --password-file | --ca-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--from)
		# goroutines --from is a file; the time of the other commands is not.
		[ "$cmd" = goroutines ] && COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--socket)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--cgroup)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--event)
		COMPREPLY=($(compgen -W "$_flightrec_events" -- "$cur"))
		return ;;
	--type)
		# A comma-separated list: the last name is completed.
		local done=${cur%"${cur##*,}"}
		COMPREPLY=($(compgen -P "$done" -W "$_flightrec_event_types" -- "${cur##*,}"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W "pprof folded" -- "$cur"))
		return ;;
	--sort)
		COMPREPLY=($(compgen -W "flat cum" -- "$cur"))
		return ;;
	--session)
		COMPREPLY=($(compgen -W "$(_flightrec_sessions)" -- "$cur"))
		return ;;
	--window | --to | --at | --pid | --comm | --label | --label-key | --hz | --count | \
		--since-last | --reason | -n | --clickhouse | --database | --user | --host | --timeout | \
		--step | --top | --by)
		return ;;
	esac
	var=_flightrec_opts_${cmd}
	opts=${!var-}
	if [ "$cmd" = trigger ] && [[ $cur != -* ]]; then
		COMPREPLY=($(compgen -W "$(_flightrec_sessions)" -- "$cur"))
		return
	fi
	if [ "$cmd" = fleet ] && [ "$COMP_CWORD" -eq 2 ]; then
		COMPREPLY=($(compgen -W "$_flightrec_fleet_commands" -- "$cur"))
		return
	fi
	if [ "$cmd" = top ] && [[ $cur != -* ]]; then
		COMPREPLY=($(compgen -f -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}

_flightrecd()
{
	local cur prev
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	case $prev in
	--config | --check-config | --ring | --socket)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--log-format)
		COMPREPLY=($(compgen -W "text json journal" -- "$cur"))
		return ;;
	--ring-size | --hz)
		return ;;
	esac
	COMPREPLY=($(compgen -W "--config --check-config --ring --ring-size --socket --hz --log-format --verbose --help --version" -- "$cur"))
}

complete -F _flightrec flightrec
complete -F _flightrecd flightrecd
