#!/bin/bash
# `meson install` puts the binaries, the systemd unit and the docs in
# place; the unit verifies and agrees with the daemon's default paths
# (StateDirectory holds the ring, RuntimeDirectory the socket).
. "$(dirname "$0")/lib.sh"

meson install -C "$BUILD" --destdir "$T/root" --quiet >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; fail "meson install failed"; }
prefix=$(meson introspect "$BUILD" --buildoptions |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
root="$T/root$prefix"
for f in sbin/flightrecd bin/flightrec share/doc/flightrec/README.md \
	share/doc/flightrec/architecture.md share/doc/flightrec/config.md \
	share/doc/flightrec/performance.md share/man/man1/flightrec.1 share/man/man8/flightrecd.8 \
	share/man/man5/flightrec.json.5 share/zsh/site-functions/_flightrec; do
	[ -e "$root/$f" ] || fail "meson install did not install $prefix/$f"
done
# Shell completion: bash-completion loads it by command name, so both
# names have the file.
for c in flightrec flightrecd; do
	[ -n "$(find "$T/root" -path "*/bash-completion/completions/$c")" ] ||
		fail "meson install did not install the bash completion of $c"
done
# libflightrec for programs to link: the library, its header and its
# pkg-config file, and a program built against the installed copy runs.
[ -e "$root/include/flightrec/labels.h" ] || fail "meson install did not install flightrec/labels.h"
so=$(find "$T/root" -name 'libflightrec.so.1' | head -1)
pc=$(find "$T/root" -name flightrec.pc | head -1)
[ -n "$so" ] || fail "meson install did not install libflightrec.so.1"
[ -n "$pc" ] || fail "meson install did not install flightrec.pc"
grep -q '^Libs:.*-lflightrec' "$pc" || fail "flightrec.pc does not link -lflightrec"
printf '#include <flightrec/labels.h>\nint main(void) { return fr_labels_set("k", "v"); }\n' >"$T/use.c"
cc -I"$root/include" "$T/use.c" -L"$(dirname "$so")" -lflightrec -o "$T/use" 2>"$T/cc.err" ||
	{ cat "$T/cc.err"; fail "a program does not build against the installed libflightrec"; }
LD_LIBRARY_PATH=$(dirname "$so") "$T/use" || fail "a program using the installed libflightrec failed"
unit=$(find "$T/root" -name flightrecd.service | head -1)
[ -n "$unit" ] || fail "meson install did not install flightrecd.service"
grep -q "^ExecStart=$prefix/sbin/flightrecd " "$unit" || fail "the unit does not start $prefix/sbin/flightrecd"
grep -q "^ExecReload=$prefix/bin/flightrec reload$" "$unit" || fail "the unit's ExecReload is not flightrec reload"
grep -q '^Environment=FLIGHTREC_SOCKET=/run/flightrec/flightrec.sock$' "$unit" ||
	fail "the unit's reload does not name the instance's socket"
"$root/bin/flightrec" reload --help >/dev/null || fail "the installed flightrec has no reload"
grep -q '^StateDirectory=flightrec$' "$unit" || fail "the unit's state directory is not /var/lib/flightrec"
grep -q '^RuntimeDirectory=flightrec$' "$unit" || fail "the unit's runtime directory is not /run/flightrec"
"$root/sbin/flightrecd" --help | grep -q '/var/lib/flightrec/ring' || fail "the daemon's default ring is not under /var/lib/flightrec"
"$root/sbin/flightrecd" --help | grep -q '/run/flightrec/flightrec.sock' || fail "the daemon's default socket is not under /run/flightrec"
if command -v systemd-analyze >/dev/null; then
	# Paths in the unit point into the destdir-less prefix; verify a copy
	# whose ExecStart names the staged binary.
	sed -e "s|^ExecStart=$prefix|ExecStart=$root|" -e "s|^ExecReload=$prefix|ExecReload=$root|" \
		"$unit" >"$T/flightrecd.service"
	systemd-analyze verify "$T/flightrecd.service" >"$T/verify" 2>&1 ||
		{ cat "$T/verify"; fail "systemd-analyze verify rejects the unit"; }
	if systemd-analyze security --offline=yes "$T/flightrecd.service" >"$T/security" 2>&1; then
		tail -1 "$T/security"
	fi
else
	echo "no systemd-analyze here; the unit was not verified"
fi
echo PASS
