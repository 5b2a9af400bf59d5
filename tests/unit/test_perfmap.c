/* Perf maps (core/symbols/perfmap.h): parsing of good, malformed and hostile
 * maps, reading them as files another user controls, and naming JIT
 * frames of a live process through the symbols cache. */
#include "core/symbols/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/symbols/symbols.h"
#include "tests/unit/check.h"

static struct fr_perfmap *parse(const char *text)
{
	struct fr_perfmap *m = NULL;
	int ret = fr_perfmap_parse(text, strlen(text), &m);

	CHECK(ret == 0, "parse: %d", ret);
	return m;
}

/* The name at `addr`, or "-" when none. */
static const char *name_at(const struct fr_perfmap *m, uint64_t addr)
{
	const char *name = NULL;

	return fr_perfmap_lookup(m, addr, &name) == 0 ? name : "-";
}

#define CHECK_NAME(m, addr, want)                                           \
	do {                                                                \
		const char *got_ = name_at(m, addr);                        \
		CHECK(strcmp(got_, want) == 0, "at %#llx: '%s', want '%s'", \
		      (unsigned long long)(addr), got_, want);              \
	} while (0)

static void test_good(void)
{
	struct fr_perfmap *m = parse("7f0000001000 40 LazyCompile:~main /app/x.js:1\n"
				     "0x7f0000002000 0x10 py::spin:/t.py\r\n"
				     "7F0000003000 8 Interpreter\n");

	CHECK(fr_perfmap_count(m) == 3, "%zu entries, want 3", fr_perfmap_count(m));
	CHECK_NAME(m, 0x7f0000001000, "LazyCompile:~main /app/x.js:1");
	CHECK_NAME(m, 0x7f000000103f, "LazyCompile:~main /app/x.js:1");
	CHECK_NAME(m, 0x7f0000001040, "-");
	CHECK_NAME(m, 0x7f0000002008, "py::spin:/t.py");
	CHECK_NAME(m, 0x7f0000003007, "Interpreter");
	CHECK_NAME(m, 0x7f0000000fff, "-");
	CHECK_NAME(m, 0x7f0000003008, "-");
	fr_perfmap_free(m);
}

/* Lines that are not "START SIZE NAME" are skipped, the rest kept. */
static void test_malformed_skipped(void)
{
	struct fr_perfmap *m = parse("garbage\n"
				     "\n"
				     "1000 10\n"		      /* no name */
				     "1000 10 \n"		      /* empty name */
				     "2000 0 zero\n"		      /* no size */
				     "zz00 10 nothex\n"		      /* bad start */
				     "3000  10 twospaces\n"	      /* no size */
				     "fffffffffffffff0 20 wraps\n"    /* overflows */
				     "10000000000000000 10 toolong\n" /* 17 digits */
				     "4000 10 good\n"
				     "5000 10 unterminated");

	CHECK(fr_perfmap_count(m) == 1, "%zu entries, want 1", fr_perfmap_count(m));
	CHECK_NAME(m, 0x4008, "good");
	CHECK_NAME(m, 0x5000, "-");
	CHECK_NAME(m, 0x1000, "-");
	fr_perfmap_free(m);
}

/* Overlaps: the later start wins from there on; at equal starts, the later
 * line (whatever the order they came in, the same answer). */
static void test_overlaps(void)
{
	struct fr_perfmap *m = parse("1000 100 outer\n"
				     "1080 10 inner\n"
				     "2000 10 old\n"
				     "2000 20 new\n"
				     "500 10 before\n");

	CHECK_NAME(m, 0x1000, "outer");
	CHECK_NAME(m, 0x107f, "outer");
	CHECK_NAME(m, 0x1080, "inner");
	CHECK_NAME(m, 0x1090, "-");
	CHECK_NAME(m, 0x2000, "new");
	CHECK_NAME(m, 0x2018, "new");
	CHECK_NAME(m, 0x500, "before");
	fr_perfmap_free(m);
}

/* A huge name is cut; control characters cannot break folded output. */
static void test_hostile_names(void)
{
	size_t len = 1 << 20;
	char *text = malloc(len + 64);
	struct fr_perfmap *m;
	const char *name;

	CHECK(text != NULL, "malloc");
	if (!text)
		return;
	strcpy(text, "1000 10 ");
	memset(text + 8, 'A', len);
	strcpy(text + 8 + len, "\n2000 10 a;b\tc\033d\n");
	m = parse(text);
	name = name_at(m, 0x1000);
	CHECK(strlen(name) == FR_PERFMAP_MAX_NAME, "name of %zu bytes, want %d", strlen(name),
	      FR_PERFMAP_MAX_NAME);
	CHECK_NAME(m, 0x2000, "a;b?c?d");
	fr_perfmap_free(m);
	free(text);
}

static void test_too_many_entries(void)
{
	size_t n = FR_PERFMAP_MAX_ENTRIES + 1, len = n * 6;
	char *text = malloc(len);
	struct fr_perfmap *m = NULL;
	int ret;

	CHECK(text != NULL, "malloc");
	if (!text)
		return;
	for (size_t i = 0; i < n; i++)
		memcpy(text + i * 6, "1 1 a\n", 6);
	ret = fr_perfmap_parse(text, len, &m);
	CHECK(ret == -E2BIG, "%zu entries: %d, want -E2BIG", n, ret);
	ret = fr_perfmap_parse(text, len - 6, &m);
	CHECK(ret == 0, "%zu entries: %d, want 0", n - 1, ret);
	fr_perfmap_free(m);
	free(text);
}

/* A directory standing for a process's root, with its tmp/. */
static void make_root(char *root)
{
	char tmp[128];

	CHECK(mkdtemp(root) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(tmp, sizeof(tmp), "%s/tmp", root);
	CHECK(mkdir(tmp, 0755) == 0, "mkdir: %s", strerror(errno));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL, "%s: %s", path, strerror(errno));
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

/* The map is one file its owner controls: a symlink (perhaps to a file
 * only root may read), a FIFO (an open that waits forever) and a file of
 * another user are refused; the process's own is read. */
static void test_read_untrusted(void)
{
	char root[] = "/tmp/fr-test-perfmap-XXXXXX", path[128], target[128];
	struct fr_perfmap *m = NULL;
	uid_t me = geteuid();
	int ret;

	make_root(root);
	snprintf(target, sizeof(target), "%s/tmp/real", root);
	write_file(target, "1000 10 secret\n");

	snprintf(path, sizeof(path), "%s/tmp/perf-11.map", root);
	CHECK(symlink(target, path) == 0, "symlink: %s", strerror(errno));
	ret = fr_perfmap_read(root, 11, me, &m);
	CHECK(ret == -ELOOP, "symlink: %d, want -ELOOP", ret);
	unlink(path);

	snprintf(path, sizeof(path), "%s/tmp/perf-12.map", root);
	CHECK(mkfifo(path, 0644) == 0, "mkfifo: %s", strerror(errno));
	ret = fr_perfmap_read(root, 12, me, &m);
	CHECK(ret == -ENOEXEC, "FIFO: %d, want -ENOEXEC", ret);
	unlink(path);

	snprintf(path, sizeof(path), "%s/tmp/perf-13.map", root);
	write_file(path, "1000 10 jit\n");
	ret = fr_perfmap_read(root, 13, me + 1, &m);
	CHECK(ret == -EPERM, "another user's map: %d, want -EPERM", ret);
	ret = fr_perfmap_read(root, 13, me, &m);
	CHECK(ret == 0 && fr_perfmap_count(m) == 1, "own map: %d", ret);
	CHECK_NAME(m, 0x1000, "jit");
	fr_perfmap_free(m);
	unlink(path);

	ret = fr_perfmap_read(root, 14, me, &m);
	CHECK(ret == -ENOENT, "no map: %d, want -ENOENT", ret);
	unlink(target);
	snprintf(path, sizeof(path), "%s/tmp", root);
	rmdir(path);
	rmdir(root);
}

/* A map still being written: only the size taken at open is read, and a
 * line cut in the middle is dropped rather than named half. */
static void test_growing(void)
{
	char path[] = "/tmp/fr-test-perfmap-grow-XXXXXX";
	int fd = mkstemp(path), ret;
	struct fr_perfmap *m = NULL;
	const char *first = "1000 10 one\n2000 10 tw";
	struct stat st;

	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return;
	CHECK(write(fd, first, strlen(first)) == (ssize_t)strlen(first), "write");
	CHECK(fstat(fd, &st) == 0, "fstat");
	CHECK(write(fd, "o\n3000 10 three\n", 16) == 16, "write");
	ret = fr_perfmap_load(fd, (uint64_t)st.st_size, &m);
	CHECK(ret == 0 && fr_perfmap_count(m) == 1, "load: %d, %zu entries, want 1", ret,
	      fr_perfmap_count(m));
	CHECK_NAME(m, 0x2000, "-");
	CHECK_NAME(m, 0x3000, "-");
	fr_perfmap_free(m);
	/* Truncated since: parsed as found. */
	CHECK(ftruncate(fd, 12) == 0, "ftruncate");
	ret = fr_perfmap_load(fd, (uint64_t)st.st_size, &m);
	CHECK(ret == 0 && fr_perfmap_count(m) == 1, "truncated: %d", ret);
	CHECK_NAME(m, 0x1000, "one");
	fr_perfmap_free(m);
	ret = fr_perfmap_load(fd, FR_PERFMAP_MAX_SIZE + 1, &m);
	CHECK(ret == -EFBIG, "over FR_PERFMAP_MAX_SIZE: %d, want -EFBIG", ret);
	close(fd);
	unlink(path);
}

/* Through the symbols cache, for this very process: its anonymous memory
 * is named from /tmp/perf-PID.map, read in place and through
 * /proc/PID/root; a file mapping is not looked up there; a process gone
 * has no names. */
static void test_symbols_jit(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	char path[64];
	pid_t child;
	int ret;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	write_file(path, "7f0000001000 100 jit_spin\n");
	ret = fr_symbols_jit(s, (uint32_t)getpid(), 0, true, "//anon", 0x7f0000001010, &name);
	CHECK(ret == 0 && name && strcmp(name, "jit_spin") == 0, "//anon: %d %s", ret,
	      name ? name : "(null)");
	ret = fr_symbols_jit(s, (uint32_t)getpid(), 0, true, "/usr/lib/libc.so.6", 0x7f0000001010,
			     &name);
	CHECK(ret == -ENOENT, "a file mapping: %d, want -ENOENT", ret);
	fr_symbols_free(s);

	s = fr_symbols_new(NULL);
	name = NULL;
	ret = fr_symbols_jit(s, (uint32_t)getpid(), 0, false, "[anon:jit]", 0x7f0000001010, &name);
	CHECK(ret == 0 && name && strcmp(name, "jit_spin") == 0, "under /proc/PID/root: %d", ret);
	unlink(path);

	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
	write_file(path, "7f0000001000 100 stale\n");
	ret = fr_symbols_jit(s, (uint32_t)child, 0, true, "//anon", 0x7f0000001010, &name);
	CHECK(ret == -ESRCH, "a process gone: %d, want -ESRCH", ret);
	unlink(path);
	fr_symbols_free(s);
}

/* One profile reads at most FR_PERFMAPS_MAX_TOTAL bytes of perf maps, so
 * many processes with large maps cannot make it read (and keep) their sum. */
static void test_maps_total_bounded(void)
{
	enum { LARGE = (int)(FR_PERFMAPS_MAX_TOTAL / FR_PERFMAP_MAX_SIZE) };
	struct fr_symbols *s = fr_symbols_new(NULL);
	pid_t kids[LARGE + 1];
	const char *name = NULL;
	char path[64];
	int ret = 0;

	for (int i = 0; i <= LARGE; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)kids[i]);
		write_file(path, "7f0000001000 100 jit_big\n");
		/* Sparse: the rest is zeros, one last line without its newline. */
		if (i < LARGE && truncate(path, (off_t)FR_PERFMAP_MAX_SIZE) != 0)
			CHECK(0, "truncate %s", path);
	}
	for (int i = 0; i < LARGE; i++) {
		ret = fr_symbols_jit(s, (uint32_t)kids[i], 0, true, "//anon", 0x7f0000001010,
				     &name);
		CHECK(ret == 0, "map %d of %d: %d", i, LARGE, ret);
	}
	ret = fr_symbols_jit(s, (uint32_t)kids[LARGE], 0, true, "//anon", 0x7f0000001010, &name);
	CHECK(ret == -EFBIG, "a map past the total: %d, want -EFBIG", ret);
	fr_symbols_free(s);
	for (int i = 0; i <= LARGE; i++) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)kids[i]);
		unlink(path);
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

int main(void)
{
	test_good();
	test_malformed_skipped();
	test_overlaps();
	test_hostile_names();
	test_too_many_entries();
	test_read_untrusted();
	test_growing();
	test_symbols_jit();
	test_maps_total_bounded();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
