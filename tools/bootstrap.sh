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
# node already (a newer one from elsewhere is fine); the browser test drives
# Debian's chromium.
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

build() {
	web_deps
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" --buildtype=debugoptimized
	fi
	meson compile -C "$build"
}

case "${1:-}" in
run)
	# shellcheck disable=SC2046 # web_packages prints words, or nothing
	install_deps $(web_packages)
	build
	meson install -C "$build" --quiet
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
	# The unit and fuzz suites two at a time (they measure nothing); the
	# integration suite two at a time too, except the tests that compare
	# CPU shares or rates or need a quiet machine: meson runs those alone
	# (is_parallel false, serial_tests in tests/integration/meson.build).
	meson test -C "$build" --print-errorlogs --suite unit --suite fuzz --num-processes 2 \
		--logbase unitlog || status=$?
	meson test -C "$build" --print-errorlogs --suite integration --num-processes 2 ||
		status=$?
	# The unit suite and the fuzz corpus replays again under AddressSanitizer
	# and UBSan.
	asan="$build-asan"
	if [ ! -f "$asan/build.ninja" ]; then
		meson setup "$asan" --buildtype=debug -Db_sanitize=address,undefined \
			-Db_lundef=false >/dev/null
	fi
	meson compile -C "$asan" >/dev/null || status=1
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C "$asan" --suite unit --suite fuzz --print-errorlogs || status=$?
	python3 - "$build/meson-logs/unitlog.json" "$build/meson-logs/testlog.json" \
		"$asan/meson-logs/testlog.json" <<'PY'
import json, os, sys
counts = {}
for path in sys.argv[1:]:
    if not os.path.exists(path):
        counts["MISSING"] = counts.get("MISSING", 0) + 1
        continue
    for line in open(path):
        line = line.strip()
        if line:
            r = json.loads(line)["result"]
            counts[r] = counts.get(r, 0) + 1
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
