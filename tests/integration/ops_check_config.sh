#!/bin/bash
# flightrecd --check-config FILE applies the options given with it (--ring,
# --ring-size, --socket, --hz) and prints the configuration the daemon
# would run; without them it prints the file's own. A flag missing its
# value is named, in flightrecd and in flightrec, instead of getopt's
# "unknown or needs a value".
. "$(dirname "$0")/lib.sh"

cat >"$T/config.json" <<'JSON'
{"ring": {"size": "128MiB"},
 "sessions": [{"name": "always", "events": [{"event": "cpu", "hz": 49}]},
              {"name": "faults", "events": [{"event": "page-faults", "period": 100}]}]}
JSON
field() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

"$FLIGHTRECD" --check-config "$T/config.json" >"$T/plain.json" 2>"$T/err" ||
	fail "check-config failed: $(cat "$T/err")"
[ "$(field "$T/plain.json" 'd["ring"]["size"]')" = 128MiB ] || fail "file's ring size lost: $(cat "$T/plain.json")"
[ "$(field "$T/plain.json" 'd["sessions"][0]["events"][0]["hz"]')" = 49 ] ||
	fail "file's rate lost: $(cat "$T/plain.json")"

"$FLIGHTRECD" --check-config "$T/config.json" --ring "$T/r" --ring-size 64MiB --socket "$T/s" \
	--hz 199 >"$T/eff.json" 2>"$T/err" || fail "check-config with flags failed: $(cat "$T/err")"
[ "$(field "$T/eff.json" 'd["ring"]["path"]')" = "$T/r" ] || fail "--ring ignored: $(cat "$T/eff.json")"
[ "$(field "$T/eff.json" 'd["ring"]["size"]')" = 64MiB ] || fail "--ring-size ignored: $(cat "$T/eff.json")"
[ "$(field "$T/eff.json" 'd["socket"]')" = "$T/s" ] || fail "--socket ignored: $(cat "$T/eff.json")"
[ "$(field "$T/eff.json" 'd["sessions"][0]["events"][0]["hz"]')" = 199 ] ||
	fail "--hz ignored: $(cat "$T/eff.json")"
# --hz is the cpu rate; an event sampled by period keeps its period.
[ "$(field "$T/eff.json" 'd["sessions"][1]["events"][0].get("period")')" = 100 ] ||
	fail "--hz changed a period event: $(cat "$T/eff.json")"
# What check-config prints is itself a valid configuration.
"$FLIGHTRECD" --check-config "$T/eff.json" >/dev/null 2>"$T/err" ||
	fail "the effective configuration does not check: $(cat "$T/err")"

# Bad flag values are refused as the daemon refuses them (usage, 2).
"$FLIGHTRECD" --check-config "$T/config.json" --hz 0 >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "--hz 0 with --check-config was not a usage error"
grep -q -- '--hz: expected 1..' "$T/err" || fail "--hz 0 not explained: $(cat "$T/err")"
"$FLIGHTRECD" --check-config "$T/config.json" --config "$T/config.json" >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "--check-config with --config was accepted"

# A flag missing its value is named.
expect_usage() { # WANT CMD...
	local want=$1
	shift
	"$@" >/dev/null 2>"$T/err"
	local rc=$?
	[ $rc = 2 ] || fail "$* exited $rc, want 2"
	grep -qF -- "$want" "$T/err" || fail "$*: want \"$want\", got: $(cat "$T/err")"
}
expect_usage "flightrecd: --ring needs a value" "$FLIGHTRECD" --ring
expect_usage "flightrecd: --check-config needs a value" "$FLIGHTRECD" --check-config
expect_usage "flightrecd: --hz needs a value" "$FLIGHTRECD" --check-config "$T/config.json" --hz
expect_usage "flightrecd: --log-format needs a value" "$FLIGHTRECD" --log-format
expect_usage "flightrecd: unknown option --rings" "$FLIGHTRECD" --rings x
expect_usage "flightrecd: --help takes no value" "$FLIGHTRECD" --help=1
expect_usage "flightrec attach: --window needs a value" "$FLIGHTREC" attach --window
expect_usage "flightrec status: --socket needs a value" "$FLIGHTREC" status --socket
expect_usage "flightrec dump: --ring needs a value" "$FLIGHTREC" dump --ring
expect_usage "flightrec top: --window needs a value" "$FLIGHTREC" top --window
expect_usage "flightrec trigger: --reason needs a value" "$FLIGHTREC" trigger db --reason
expect_usage "flightrec status: unknown option --sockets" "$FLIGHTREC" status --sockets x
exit 0
