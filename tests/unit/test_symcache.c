/* The symbol cache (recorder/tracking/symcache.h) and its reader (core/symbols/symbols.h
 * fr_symbols_set_paths()): a copy of this test's own executable, named by
 * its build id; what was planted at a cache path (a symlink, a FIFO) is
 * neither followed nor opened but replaced; a symlink as the cache
 * directory is refused; eviction keeps the total under the cap, least
 * recently used first, and by owner (a user's files never evict root's
 * under its share); and the reader uses an entry only when it carries
 * the build id it is named by. */
#include "recorder/tracking/symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/symbols/elf_image.h"
#include "core/symbols/symbols.h"
#include "core/util/shares.h"
#include "tests/unit/check.h"
#include "tests/unit/symbols_self.h"

static char base[64];
static struct mapping self;
static uint8_t bid[FR_ELF_BUILD_ID_MAX];
static int bid_len;
static char hex[2 * FR_ELF_BUILD_ID_MAX + 1];
static uint64_t copy_bytes; /* disk the copy of this executable takes */

static void path_of(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s/%s", base, dir, name);
}

static int same_file(const char *a, const char *b)
{
	char cmd[8400];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

/* Names the marker function through the cache `dir` alone (the mapped
 * path given is gone). Returns 0, or the symbolizer's error. */
static int names_marker(const char *dir)
{
	uint64_t addr = (uint64_t)(uintptr_t)fr_test_marker_fn;
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int ret;

	if (!s || fr_symbols_set_paths(s, dir, NULL, 0) < 0) {
		fr_symbols_free(s);
		return -ENOMEM;
	}
	ret = fr_symbols_user(s, NULL, "/nonexistent/flightrec-test-gone", bid, (size_t)bid_len,
			      self.start, self.pgoff, addr, &name, NULL);
	if (ret == 0 && strcmp(name, "fr_test_marker_fn") != 0)
		ret = -EBADMSG;
	fr_symbols_free(s);
	return ret;
}

/* Whether `entry` is the cache's copy of this executable: a regular 0600
 * file of the same size and build id that names the marker (code and
 * data are holes, so the bytes differ). */
static int is_copy(const char *dir, const char *entry)
{
	uint8_t got[FR_ELF_BUILD_ID_MAX];
	struct stat st, orig;

	return lstat(entry, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600 &&
	       stat(self.path, &orig) == 0 && st.st_size == orig.st_size &&
	       fr_elf_build_id(entry, got, sizeof(got)) == bid_len &&
	       memcmp(got, bid, (size_t)bid_len) == 0 && names_marker(dir) == 0;
}

static struct fr_symcache *open_cache(const char *dir, uint64_t max_bytes)
{
	struct fr_symcache_options o = {.max_bytes = max_bytes, .file_max = 64 << 20};
	struct fr_symcache *c = NULL;
	char path[256], err[512];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", base, dir);
	o.dir = path;
	ret = fr_symcache_open(&c, &o, err, sizeof(err));
	CHECK(ret == 0, "open %s: %d %s", path, ret, err);
	return ret == 0 ? c : NULL;
}

/* Asks for this executable and waits for the copy. */
static void want_self(struct fr_symcache *c)
{
	fr_symcache_want_elf(c, (uint32_t)getpid(), getuid(), self.start, self.end, self.path, bid,
			     (uint8_t)bid_len);
	CHECK(fr_symcache_wait(c, 10000) == 0, "the copy did not finish within 10 s");
}

static void test_copy(void)
{
	struct fr_symcache *c = open_cache("copy", 1ull << 30);
	char entry[256], dir[256];
	struct stat st;
	uint64_t files = 0, bytes = 0;

	if (!c)
		return;
	want_self(c);
	path_of(entry, sizeof(entry), "copy", hex);
	snprintf(dir, sizeof(dir), "%s/copy", base);
	CHECK(is_copy(dir, entry), "no copy of %s at %s", self.path, entry);
	CHECK(!same_file(entry, self.path), "the code was copied too");
	fr_symcache_usage(c, &files, &bytes);
	copy_bytes = lstat(entry, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
	CHECK(copy_bytes && files == 1 && bytes == copy_bytes, "usage %llu files %llu bytes",
	      (unsigned long long)files, (unsigned long long)bytes);
	fr_symcache_close(c);
}

/* Regression: a symlink planted at the cache path of a build id must not
 * be written through (its target stays as it was) nor kept. */
static void test_symlink_entry_not_followed(void)
{
	char dir[256], entry[256], victim[256], buf[16] = "";
	struct fr_symcache *c;
	int fd;

	snprintf(dir, sizeof(dir), "%s/link", base);
	mkdir(dir, 0700);
	path_of(entry, sizeof(entry), "link", hex);
	snprintf(victim, sizeof(victim), "%s/victim", base);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "victim", 6) == 6, "victim");
	close(fd);
	CHECK(symlink(victim, entry) == 0, "symlink");
	c = open_cache("link", 1ull << 30);
	if (!c)
		return;
	want_self(c);
	fr_symcache_close(c);
	fd = open(victim, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) == 6 && strcmp(buf, "victim") == 0,
	      "the symlink's target was written: \"%s\"", buf);
	close(fd);
	CHECK(is_copy(dir, entry), "the planted symlink was not replaced by the copy");
}

/* Regression: a FIFO planted at the cache path is never opened (an open
 * would wait for a writer forever) and is replaced by the copy. */
static void test_fifo_entry_not_opened(void)
{
	char dir[256], entry[256];
	struct fr_symcache *c;

	snprintf(dir, sizeof(dir), "%s/fifo", base);
	mkdir(dir, 0700);
	path_of(entry, sizeof(entry), "fifo", hex);
	CHECK(mkfifo(entry, 0600) == 0, "mkfifo");
	c = open_cache("fifo", 1ull << 30);
	if (!c)
		return;
	want_self(c);
	fr_symcache_close(c);
	CHECK(is_copy(dir, entry), "the planted FIFO was not replaced by the copy");
}

/* Regression: a symlink as the cache directory is refused. */
static void test_symlink_dir_refused(void)
{
	struct fr_symcache_options o = {.max_bytes = 1 << 20};
	char link[256], err[512];
	struct fr_symcache *c = NULL;
	int ret;

	snprintf(link, sizeof(link), "%s/dirlink", base);
	CHECK(symlink("/tmp", link) == 0, "symlink");
	o.dir = link;
	ret = fr_symcache_open(&c, &o, err, sizeof(err));
	CHECK(ret == -ELOOP && !c, "a symlinked cache directory was opened: %d %s", ret, err);
	fr_symcache_close(c);
}

static void make_file(const char *dir, const char *name, size_t size, time_t mtime)
{
	struct timespec ts[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
	char path[256], *buf = calloc(1, size);
	int fd;

	path_of(path, sizeof(path), dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && buf && write(fd, buf, size) == (ssize_t)size, "make %s", path);
	close(fd);
	free(buf);
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0, "utimensat %s", path);
}

static int exists(const char *dir, const char *name)
{
	char path[256];

	path_of(path, sizeof(path), dir, name);
	return access(path, F_OK) == 0;
}

/* Eviction keeps the total under the cap, oldest mtime (least recently
 * used) first: at open, and after a copy. */
static void test_evict_lru(void)
{
	time_t now = time(NULL);
	uint64_t files, bytes, file;
	struct fr_symcache *c;
	char dir[256], path[256];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/lru", base);
	mkdir(dir, 0700);
	make_file("lru", "aaaa", 100000, now - 300);
	make_file("lru", "bbbb", 100000, now - 100); /* used most recently */
	make_file("lru", "cccc", 100000, now - 200);
	path_of(path, sizeof(path), "lru", "bbbb");
	file = stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0; /* on disk */
	CHECK(file >= 100000 && file < 125000, "100000 bytes take %llu on disk",
	      (unsigned long long)file);
	/* Room for two of the three: the oldest goes. */
	c = open_cache("lru", 2 * file + file / 2);
	if (!c)
		return;
	fr_symcache_usage(c, &files, &bytes);
	CHECK(!exists("lru", "aaaa") && exists("lru", "bbbb") && exists("lru", "cccc"),
	      "at open: the oldest file was not the one evicted");
	CHECK(files == 2 && bytes == 2 * file, "at open: %llu files %llu bytes",
	      (unsigned long long)files, (unsigned long long)bytes);
	fr_symcache_close(c);

	/* Room for the copy and one of the two: the older goes. */
	c = open_cache("lru", copy_bytes + file + file / 2);
	if (!c)
		return;
	want_self(c);
	fr_symcache_usage(c, &files, &bytes);
	CHECK(exists("lru", hex) && exists("lru", "bbbb") && !exists("lru", "cccc"),
	      "after a copy: cccc (older) should be evicted, bbbb and the copy kept");
	CHECK(bytes <= copy_bytes + file + file / 2 && files == 2,
	      "after a copy: %llu files %llu bytes", (unsigned long long)files,
	      (unsigned long long)bytes);
	fr_symcache_close(c);
}

/* Regression: one user's files never evict root's under its share. Root
 * holds the oldest file (the copy of a deleted binary nobody used for a
 * while); ten newer files of user 1001 (and a perf map of theirs) need
 * more than the budget: the user's oldest go, root's stays, both owners
 * are counted apart, and a smaller budget set later evicts the user's
 * again, then root's own once root is over its share. */
static void test_evict_fair_shares(void)
{
	time_t now = time(NULL);
	struct fr_share own[4];
	uint64_t files, bytes, file, budget;
	struct fr_symcache *c;
	char dir[256], name[64];
	size_t n;
	int kept = 0;

	snprintf(dir, sizeof(dir), "%s/shares", base);
	mkdir(dir, 0700);
	make_file("shares", "00aa", 100000, now - 1000);
	make_file("shares", "00bb", 100000, now - 900);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "%02x%02x.u1001", i, i);
		make_file("shares", name, 100000, now - 500 + i);
	}
	make_file("shares", "perf-7-8.u1001.map", 100000, now - 1);
	file = 0;
	{
		struct stat st;
		char path[256];

		path_of(path, sizeof(path), "shares", "00aa");
		file = stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
	}
	/* Room for six files: root keeps its two, the user four. */
	c = open_cache("shares", 6 * file + file / 2);
	if (!c)
		return;
	CHECK(exists("shares", "00aa") && exists("shares", "00bb"),
	      "a user's newer files evicted root's");
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "%02x%02x.u1001", i, i);
		kept += exists("shares", name);
		if (i >= 7)
			CHECK(exists("shares", name), "the user's newest file %s was evicted",
			      name);
	}
	CHECK(kept == 3 && exists("shares", "perf-7-8.u1001.map"),
	      "the user keeps %d of their 10 files and their perf map (%d): want 3 and 1", kept,
	      exists("shares", "perf-7-8.u1001.map"));
	fr_symcache_usage(c, &files, &bytes);
	CHECK(files == 6 && bytes == 6 * file, "%llu files %llu bytes", (unsigned long long)files,
	      (unsigned long long)bytes);
	n = fr_symcache_owners(c, own, 4, NULL, &budget);
	CHECK(n == 2 && own[0].uid == 0 && own[0].bytes == 2 * file && own[0].entries == 2 &&
		      own[1].uid == 1001 && own[1].bytes == 4 * file &&
		      budget == 6 * file + file / 2,
	      "owners: %zu, root %llu bytes, uid %u %llu bytes", n,
	      (unsigned long long)own[0].bytes, own[1].uid, (unsigned long long)own[1].bytes);
	/* Room for four and a half: root's two are within its half, the
	 * user keeps two; then for two and a half, root is over its share
	 * too and its older file goes, as does another of the user's. */
	fr_symcache_set_budget(c, 4 * file + file / 2);
	for (int i = 0; i < 50 && (fr_symcache_usage(c, &files, &bytes), files > 4); i++)
		usleep(20000);
	CHECK(files == 4 && exists("shares", "00aa") && exists("shares", "00bb") &&
		      exists("shares", "0909.u1001") && exists("shares", "perf-7-8.u1001.map"),
	      "budget of 4.5: %llu files, root's %d %d", (unsigned long long)files,
	      exists("shares", "00aa"), exists("shares", "00bb"));
	fr_symcache_set_budget(c, 2 * file + file / 2);
	for (int i = 0; i < 50 && (fr_symcache_usage(c, &files, &bytes), files > 2); i++)
		usleep(20000);
	CHECK(files == 2 && !exists("shares", "00aa") && exists("shares", "00bb") &&
		      exists("shares", "perf-7-8.u1001.map"),
	      "budget of 2.5: %llu files, root's older %d, newer %d", (unsigned long long)files,
	      exists("shares", "00aa"), exists("shares", "00bb"));
	fr_symcache_close(c);
}

/* The reader: an entry is used for a file that is gone only when it has
 * the build id it is named by; another ELF file at that name is refused,
 * and so is a symlink to the right file (the gone file's error is
 * reported). */
static void test_reader_checks_build_id(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)fr_test_marker_fn;
	const char *gone = "/nonexistent/flightrec-test-gone";
	char dir[256], entry[256], cmd[8400];
	const char *name = NULL;
	struct fr_symbols *s;
	int ret;

	snprintf(dir, sizeof(dir), "%s/reader", base);
	mkdir(dir, 0700);
	path_of(entry, sizeof(entry), "reader", hex);

	/* Another ELF file (a libc-linked program) under this build id. */
	snprintf(cmd, sizeof(cmd), "cp /bin/true '%s'", entry);
	CHECK(system(cmd) == 0, "cp");
	s = fr_symbols_new(NULL);
	fr_symbols_set_paths(s, dir, NULL, 0);
	ret = fr_symbols_user(s, NULL, gone, bid, (size_t)bid_len, self.start, self.pgoff, addr,
			      &name, NULL);
	CHECK(ret < 0, "an entry with another build id was used: %d %s", ret, ret == 0 ? name : "");
	fr_symbols_free(s);

	/* A symlink to the right file is not followed. */
	unlink(entry);
	CHECK(symlink(self.path, entry) == 0, "symlink");
	s = fr_symbols_new(NULL);
	fr_symbols_set_paths(s, dir, NULL, 0);
	ret = fr_symbols_user(s, NULL, gone, bid, (size_t)bid_len, self.start, self.pgoff, addr,
			      &name, NULL);
	CHECK(ret < 0, "a symlinked entry was used");
	fr_symbols_free(s);

	/* The real copy names the marker. */
	unlink(entry);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", self.path, entry);
	CHECK(system(cmd) == 0, "cp");
	s = fr_symbols_new(NULL);
	fr_symbols_set_paths(s, dir, NULL, 0);
	ret = fr_symbols_user(s, NULL, gone, bid, (size_t)bid_len, self.start, self.pgoff, addr,
			      &name, NULL);
	CHECK(ret == 0 && strcmp(name, "fr_test_marker_fn") == 0,
	      "the copy did not name the marker: %d %s", ret, ret == 0 ? name : "");
	fr_symbols_free(s);
	/* Without the cache the gone file names nothing. */
	s = fr_symbols_new(NULL);
	ret = fr_symbols_user(s, NULL, gone, bid, (size_t)bid_len, self.start, self.pgoff, addr,
			      &name, NULL);
	CHECK(ret == -ENOENT, "a gone file without a cache: %d", ret);
	fr_symbols_free(s);
}

/* Names the marker from the cache `dir` for a process of user `owner`
 * (-1: none set). Returns 0 or the symbolizer's error. */
static int names_marker_for(const char *dir, long owner)
{
	uint64_t addr = (uint64_t)(uintptr_t)fr_test_marker_fn;
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int ret;

	if (!s || fr_symbols_set_paths(s, dir, NULL, 0) < 0) {
		fr_symbols_free(s);
		return -ENOMEM;
	}
	if (owner >= 0)
		fr_symbols_set_owner(s, (uint32_t)owner);
	ret = fr_symbols_user(s, NULL, "/nonexistent/flightrec-test-gone", bid, (size_t)bid_len,
			      self.start, self.pgoff, addr, &name, NULL);
	fr_symbols_free(s);
	return ret;
}

/* Regression: a build id is a note any user can write into a file, so a
 * copy of a file a user owns is named for its owner ("<id>.u<uid>") and
 * used only for that user's processes, never for root's or another's. */
static void test_user_copy_serves_its_owner(void)
{
	char dir[256], entry[512], root_entry[512], cmd[8400];
	struct fr_symcache *c;
	struct stat st;

	if (stat(self.path, &st) < 0 || chown(self.path, 4242, st.st_gid) < 0) {
		CHECK(0, "chown %s: %s", self.path, strerror(errno));
		return;
	}
	c = open_cache("owner", 1ull << 30);
	if (c) {
		want_self(c);
		fr_symcache_close(c);
	}
	if (chown(self.path, st.st_uid, st.st_gid) < 0)
		CHECK(0, "chown back: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "%s/owner", base);
	snprintf(entry, sizeof(entry), "%s/%s.u4242", dir, hex);
	snprintf(root_entry, sizeof(root_entry), "%s/%s", dir, hex);
	CHECK(access(entry, F_OK) == 0, "no copy named for its owner at %s", entry);
	CHECK(access(root_entry, F_OK) < 0, "a user's file was cached as root's");
	CHECK(names_marker_for(dir, 4242) == 0, "the owner's copy did not serve its owner");
	CHECK(names_marker_for(dir, -1) < 0, "a user's copy served a root process");
	CHECK(names_marker_for(dir, 4243) < 0, "a user's copy served another user");
	/* Root's copy serves everyone. */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", self.path, root_entry);
	CHECK(system(cmd) == 0, "cp");
	CHECK(names_marker_for(dir, -1) == 0 && names_marker_for(dir, 4243) == 0,
	      "root's copy did not serve every user");
}

int main(void)
{
	char cmd[128];

	fr_test_marker_fn();
	if (find_mapping((uint64_t)(uintptr_t)fr_test_marker_fn, &self) < 0) {
		fprintf(stderr, "SKIP: no mapping of this program's code\n");
		return 77;
	}
	bid_len = fr_elf_build_id(self.path, bid, sizeof(bid));
	if (bid_len <= 0) {
		fprintf(stderr, "SKIP: this program has no build id\n");
		return 77;
	}
	fr_build_id_hex(bid, (size_t)bid_len, hex);
	snprintf(base, sizeof(base), "/tmp/fr-symcache-XXXXXX");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_copy();
	test_user_copy_serves_its_owner();
	test_symlink_entry_not_followed();
	test_fifo_entry_not_opened();
	test_symlink_dir_refused();
	test_evict_lru();
	test_evict_fair_shares();
	test_reader_checks_build_id();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("symcache: all checks passed\n");
	return 0;
}
