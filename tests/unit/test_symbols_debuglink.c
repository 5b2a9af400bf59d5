/* Debug files named by .gnu_debuglink: a stripped program names its static
 * function from the debug file beside it, in its .debug/ directory, or
 * under /usr/lib/debug/ of its root; a debug file whose CRC-32 is not the
 * one the link carries, or of another build, names nothing.
 *
 *   test_symbols_debuglink PROG STRIPPED DEBUG MISLINKED OTHER_DEBUG
 *
 * (tests/meson.build builds them with objcopy and strip; without those
 * tools the test is skipped.) */
#include "core/symbols/symbols.h"

#include "core/symbols/debuglink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/check.h"

#define MARKER "fr_debuglink_marker"

static char tmp[] = "/tmp/fr-test-debuglink-XXXXXX";

/* Copies `src` to TMP/`dst` (directories made), flipping its last byte
 * when `corrupt`. */
static void copy(const char *src, const char *dst, int corrupt)
{
	char path[PATH_MAX], *buf = NULL, *slash;
	FILE *in = fopen(src, "rb"), *out;
	long len;

	snprintf(path, sizeof(path), "%s/%s", tmp, dst);
	for (slash = strchr(path + strlen(tmp) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	CHECK(in != NULL, "%s: %s", src, strerror(errno));
	if (!in)
		return;
	fseek(in, 0, SEEK_END);
	len = ftell(in);
	rewind(in);
	buf = malloc((size_t)len);
	CHECK(buf && fread(buf, 1, (size_t)len, in) == (size_t)len, "reading %s", src);
	fclose(in);
	if (!buf)
		return;
	if (corrupt)
		buf[len - 1] ^= 0x55;
	out = fopen(path, "wb");
	CHECK(out && fwrite(buf, 1, (size_t)len, out) == (size_t)len, "writing %s", path);
	if (out)
		fclose(out);
	chmod(path, 0755);
	free(buf);
}

/* The file offset of MARKER in `prog`, found by asking the symbolizer
 * about each offset (the test assumes no layout, and a debug file of
 * another build would name it elsewhere). 0 when none is named so. */
static uint64_t marker_offset(const char *prog)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	struct stat st;
	uint64_t off = 0;

	CHECK(stat(prog, &st) == 0, "%s: %s", prog, strerror(errno));
	for (uint64_t o = 0; o < (uint64_t)st.st_size; o++) {
		const char *name = NULL;

		if (fr_symbols_user(s, NULL, prog, NULL, 0, 0, 0, o, &name, NULL) == 0 &&
		    strcmp(name, MARKER) == 0) {
			off = o;
			break;
		}
	}
	fr_symbols_free(s);
	return off;
}

/* Whether TMP/`file` names MARKER anywhere. */
static bool names_marker(const char *file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp, file);
	return marker_offset(path) != 0;
}

/* The name at file offset `off` of TMP/`file` (under TMP/`root` when
 * given), or "-" when none. Each call has a cache of its own. */
static const char *name_of(const char *root, const char *file, uint64_t off)
{
	static char got[256];
	struct fr_symbols *s = fr_symbols_new(NULL);
	char rootp[PATH_MAX], path[PATH_MAX];
	const char *name = NULL;
	int ret;

	snprintf(rootp, sizeof(rootp), "%s/%s", tmp, root ? root : "");
	snprintf(path, sizeof(path), root ? "/%s" : "%s/%s", root ? file : tmp, file);
	ret = fr_symbols_user(s, root ? rootp : NULL, path, NULL, 0, 0, 0, off, &name, NULL);
	snprintf(got, sizeof(got), "%s", ret == 0 ? name : "-");
	fr_symbols_free(s);
	return got;
}

#define CHECK_NAME(root, file, off, want)                                                \
	do {                                                                             \
		const char *got_ = name_of(root, file, off);                             \
		CHECK(strcmp(got_, want) == 0, "%s: '%s', want '%s'", file, got_, want); \
	} while (0)

/* The section's contents as a binary that lies would have them. */
static void test_parse(void)
{
	static const char good[] = "a.debug\0\x78\x56\x34\x12";
	struct fr_elf_image img = {0};
	static const struct {
		const char *sec;
		size_t len;
	} bad[] = {
		{"../x.debug\0\0\x78\x56\x34\x12", 16}, /* a path */
		{"..\0\0\x78\x56\x34\x12", 8},		/* the parent */
		{"\0\0\0\0\x78\x56\x34\x12", 8},	/* no name */
		{"a.debug", 7},				/* no NUL */
		{"a.debug\0\x78\x56", 10},		/* no CRC */
	};

	fr_debuglink_parse(&img, good, sizeof(good) - 1, false);
	CHECK(strcmp(img.debuglink, "a.debug") == 0 && img.debuglink_crc == 0x12345678,
	      "little-endian: '%s' %#x", img.debuglink, img.debuglink_crc);
	fr_debuglink_parse(&img, good, sizeof(good) - 1, true);
	CHECK(img.debuglink_crc == 0x78563412, "big-endian: %#x", img.debuglink_crc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fr_debuglink_parse(&img, bad[i].sec, bad[i].len, false);
		CHECK(!img.debuglink[0], "bad link %zu taken: '%s'", i, img.debuglink);
	}
}

int main(int argc, char **argv)
{
	const char *stripped, *debug, *mislinked, *other_debug;
	char *prog;
	uint64_t off;

	test_parse();
	if (argc < 6) {
		printf("SKIP: objcopy or strip not found\n");
		return 77;
	}
	/* Mapped paths are absolute; meson passes them relative. */
	prog = realpath(argv[1], NULL);
	stripped = argv[2];
	debug = argv[3];
	mislinked = argv[4];
	other_debug = argv[5];
	CHECK(prog != NULL, "%s: %s", argv[1], strerror(errno));
	if (!prog)
		return 1;
	CHECK(mkdtemp(tmp) != NULL, "mkdtemp: %s", strerror(errno));
	off = marker_offset(prog);
	CHECK(off != 0, "%s: no " MARKER, prog);

	/* Stripped and alone: the static function has no name. */
	copy(stripped, "alone/prog", 0);
	CHECK(!names_marker("alone/prog"), "alone/prog names " MARKER);

	copy(stripped, "beside/prog", 0);
	copy(debug, "beside/debuglink_prog.debug", 0);
	CHECK_NAME(NULL, "beside/prog", off, MARKER);

	copy(stripped, "sub/prog", 0);
	copy(debug, "sub/.debug/debuglink_prog.debug", 0);
	CHECK_NAME(NULL, "sub/prog", off, MARKER);

	/* Under /usr/lib/debug of the process's root (a container). */
	copy(stripped, "root/opt/app/prog", 0);
	copy(debug, "root/usr/lib/debug/opt/app/debuglink_prog.debug", 0);
	CHECK_NAME("root", "opt/app/prog", off, MARKER);

	/* Regression guards: a debug file that is not the one linked. */
	copy(stripped, "badcrc/prog", 0);
	copy(debug, "badcrc/debuglink_prog.debug", 1);
	CHECK(!names_marker("badcrc/prog"), "a debug file with a wrong CRC was used");

	copy(mislinked, "otherbuild/prog", 0);
	copy(other_debug, "otherbuild/debuglink_other.debug", 0);
	CHECK(!names_marker("otherbuild/prog"), "the debug file of another build was used");

	if (!getenv("FR_KEEP")) {
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		CHECK(system(cmd) == 0, "%s", cmd);
	}
	free(prog);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
