#!/bin/bash
# One command from a fresh Debian 12 machine, as root:
#
#   tools/bootstrap.sh run    install dependencies, build, install, and start
#                             flightrecd in the foreground on its embedded
#                             default configuration
#   tools/bootstrap.sh test   install dependencies, build, and run the whole
#                             test suite; ends with "N passed, N failed"
#
# BUILD_DIR (default: build) selects the build directory.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-build}
cd "$here"

packages=(
	build-essential meson ninja-build pkg-config
	liburing-dev libzstd-dev zlib1g-dev libcjson-dev libelf-dev libdw-dev
	golang-go linux-perf python3 gzip clang-format
	clang libbpf-dev bpftool
	man-db # renders the man pages in the docs_cli_render test (man --warnings)
	libcurl4-openssl-dev
)
# What only the tests use: real ClickHouse servers for the export tests.
test_packages=(
	clickhouse-server clickhouse-client curl openssl
)

# The web page of flightrec serve takes its libraries from npm
# (web/package-lock.json): Debian's nodejs and npm only where there is no
# node already (a newer one from elsewhere is fine), which the jit_node test
# also runs; the browser test drives Debian's chromium.
web_packages() {
	command -v node >/dev/null && command -v npm >/dev/null || echo nodejs npm
}

# install_deps [PACKAGE...]: the packages above and these.
install_deps() {
	local missing=()
	for p in "${packages[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "bootstrap: missing packages (${missing[*]}); run as root to install them" >&2
		exit 1
	fi
	echo "bootstrap: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# npm ci in web/ when its lockfile changed since the last one; a build
# directory set up before then is reconfigured, so the build embeds them.
web_deps() {
	if [ ! -f web/node_modules/.package-lock.json ] ||
		[ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
		echo "bootstrap: npm ci in web/"
		(cd web && npm ci --no-audit --no-fund)
		if [ -f "$build/build.ninja" ]; then
			meson setup --reconfigure "$build" >/dev/null
		fi
	fi
}

# build [installed]: sets up the build directory once and builds
# everything, or with `installed` only what `meson install` installs
# (flightrecd, flightrec with its web page, libflightrec) and what they
# need: not the test programs, about nine tenths of the targets.
build() {
	web_deps
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" --buildtype=debugoptimized
	fi
	if [ "${1:-}" = installed ]; then
		local targets
		targets=$(meson introspect "$build" --targets | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    if t["installed"]:
        for f in t["filename"]:
            print(os.path.relpath(os.path.realpath(f), build))' "$build")
		[ -n "$targets" ] || { echo "bootstrap: meson lists nothing to install" >&2; exit 1; }
		# shellcheck disable=SC2086 # one target a word
		ninja -C "$build" $targets
	else
		meson compile -C "$build"
	fi
}

case "${1:-}" in
run)
	# shellcheck disable=SC2046 # web_packages prints words, or nothing
	install_deps $(web_packages)
	build installed
	meson install -C "$build" --quiet --no-rebuild
	hash -r
	echo "bootstrap: installed flightrecd and flightrec under /usr/local; starting the recorder"
	exec /usr/local/sbin/flightrecd
	;;
test)
	packages+=("${test_packages[@]}")
	# shellcheck disable=SC2046
	install_deps chromium $(web_packages)
	build
	status=0
	# The unit and fuzz suites two at a time (they measure nothing). Then
	# the integration tests that share the machine, three at a time (each
	# has its own recorder, ring, socket, users and ports, and mostly
	# waits), while the unit suite and the fuzz corpus replays are built
	# and run again under AddressSanitizer and UBSan at nice 10 beside
	# them; then, on a quiet machine, each alone, the tests that compare
	# CPU shares or rates or need a quiet machine (suite `alone`:
	# serial_tests in tests/integration/meson.build). Each stage's wall
	# time is printed.
	t0=$SECONDS
	meson test -C "$build" --print-errorlogs --suite unit --suite fuzz --num-processes 2 \
		--logbase unitlog || status=$?
	t1=$SECONDS
	asan="$build-asan"
	sanitizers() {
		if [ ! -f "$asan/build.ninja" ]; then
			meson setup "$asan" --buildtype=debug -Db_sanitize=address,undefined \
				-Db_lundef=false >/dev/null || return 1
		fi
		if ! meson compile -C "$asan" >"$asan/compile.log" 2>&1; then
			echo "bootstrap: the sanitizer build failed:"
			grep -A12 '^FAILED' "$asan/compile.log" | head -60
			return 1
		fi
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			meson test -C "$asan" --suite unit --suite fuzz --print-errorlogs
	}
	mkdir -p "$build/meson-logs"
	nice -n 10 bash -c "$(declare -f sanitizers); asan=$(printf %q "$asan"); sanitizers" \
		>"$build/meson-logs/sanitizers.out" 2>&1 &
	sanitizers_pid=$!
	meson test -C "$build" --print-errorlogs --suite integration --no-suite alone \
		--num-processes 3 || status=$?
	wait "$sanitizers_pid" || status=1
	t2=$SECONDS
	meson test -C "$build" --print-errorlogs --suite alone --logbase alonelog || status=$?
	t3=$SECONDS
	echo "bootstrap: under AddressSanitizer and UBSan:"
	cat "$build/meson-logs/sanitizers.out"
	echo "bootstrap: wall time: unit and fuzz $((t1 - t0)) s; integration beside the" \
		"sanitizer build and run $((t2 - t1)) s; integration alone $((t3 - t2)) s;" \
		"tests in all $((t3 - t0)) s"
	python3 - "$build/meson-logs/unitlog.json" "$build/meson-logs/testlog.json" \
		"$build/meson-logs/alonelog.json" "$asan/meson-logs/testlog.json" <<'PY'
import json, os, sys
counts = {}
named = {"failed": [], "skipped": []}
for path in sys.argv[1:]:
    if not os.path.exists(path):
        counts["MISSING"] = counts.get("MISSING", 0) + 1
        named["failed"].append(f"(no results in {path})")
        continue
    for line in open(path):
        line = line.strip()
        if line:
            t = json.loads(line)
            r = t["result"]
            counts[r] = counts.get(r, 0) + 1
            if r == "SKIP":
                named["skipped"].append(t["name"])
            elif r not in ("OK", "EXPECTEDFAIL"):
                named["failed"].append(f"{t['name']} ({r})")
# Named above the count, so a log cut short still says which ones
for k in ("skipped", "failed"):
    if named[k]:
        print(f"bootstrap: {k}: " + ", ".join(named[k]))
passed = counts.get("OK", 0) + counts.get("EXPECTEDFAIL", 0)
skipped = counts.get("SKIP", 0)
failed = sum(v for k, v in counts.items() if k not in ("OK", "EXPECTEDFAIL", "SKIP"))
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
	exit $status
	;;
*)
	echo "usage: tools/bootstrap.sh run|test" >&2
	exit 2
	;;
esac
