/* Symbolization of files a user can make hostile to the root daemon that
 * reads them: a FIFO, a huge sparse file, a library truncated while it is
 * read, a FUSE file that never opens, a symlinked directory. Each must be
 * refused or given up on, never waited for or followed. */
#include "core/symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/files.h"
#include "tests/unit/fuse_hang.h"
#include "tests/unit/symbols_self.h"

/* Regression: a FIFO put where a mapped file was made the symbolizer's
 * open() wait for a writer forever (and the daemon's ingest thread with
 * it). It must be refused at once. */
static void test_fifo_not_waited(void)
{
	char dir[] = "/tmp/fr-test-fifo-XXXXXX", fifo[64];
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	uint8_t id[64];
	int ret;

	CHECK(s && mkdtemp(dir), "set-up: %s", strerror(errno));
	if (!s)
		return;
	snprintf(fifo, sizeof(fifo), "%s/libgone.so", dir);
	CHECK(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
	ret = fr_symbols_user(s, NULL, fifo, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ENOEXEC, "FIFO as a mapped file: %d, want -ENOEXEC", ret);
	ret = fr_elf_build_id(fifo, id, sizeof(id));
	CHECK(ret == -ENOEXEC, "build id of a FIFO: %d, want -ENOEXEC", ret);
	unlink(fifo);
	rmdir(dir);
	fr_symbols_free(s);
}

/* A sparse file of any size costs its owner nothing: it is not read. */
static void test_huge_refused(void)
{
	char path[] = "/tmp/fr-test-huge-XXXXXX";
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int fd = mkstemp(path), ret;

	CHECK(s && fd >= 0, "set-up: %s", strerror(errno));
	if (!s || fd < 0)
		goto out;
	CHECK(ftruncate(fd, (off_t)FR_ELF_MAX_SIZE + 4096) == 0, "ftruncate: %s", strerror(errno));
	ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -EFBIG, "a file over FR_ELF_MAX_SIZE: %d, want -EFBIG", ret);
out:
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	fr_symbols_free(s);
}

struct truncator {
	const char *path;
	const char *data;
	size_t len;
	volatile int stop;
	unsigned rounds;
};

/* Cuts the file to pieces of itself and restores it, over and over. */
static void *truncate_loop(void *arg)
{
	struct truncator *t = arg;
	int fd = open(t->path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while (!t->stop) {
		size_t cut = t->len / (2 + t->rounds % 7);

		if (ftruncate(fd, (off_t)cut) < 0 || ftruncate(fd, 0) < 0 ||
		    pwrite(fd, t->data, t->len, 0) != (ssize_t)t->len)
			break;
		t->rounds++;
	}
	close(fd);
	return NULL;
}

/* Regression: libelf read files through a mapping (ELF_C_READ_MMAP), so a
 * user who truncated their own library while the root daemon read it
 * killed the daemon with SIGBUS. Reads must only come up short. */
static void test_truncated_while_read(void)
{
	char path[] = "/tmp/fr-test-trunc-XXXXXX", *data = NULL;
	uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
	struct truncator t = {.path = path};
	unsigned reads = 0, named = 0;
	struct mapping m;
	struct stat st;
	pthread_t th;
	int fd = -1;

	if (find_mapping(fn, &m) < 0) {
		CHECK(0, "no mapping for the marker");
		return;
	}
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return;
	close(fd);
	unlink(path);
	if (test_copy_file(m.path, path, 0600) < 0 || stat(path, &st) < 0) {
		CHECK(0, "copy %s: %s", m.path, strerror(errno));
		goto out;
	}
	data = malloc((size_t)st.st_size);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(data && fd >= 0 && read(fd, data, (size_t)st.st_size) == st.st_size, "read %s", path);
	if (fd >= 0)
		close(fd);
	t.data = data;
	t.len = (size_t)st.st_size;
	if (pthread_create(&th, NULL, truncate_loop, &t) != 0) {
		CHECK(0, "pthread_create");
		goto out;
	}
	/* Each pass parses the file anew: a new cache, and a new size or
	 * mtime most of the time. */
	for (reads = 0; reads < 400; reads++) {
		struct fr_symbols *s = fr_symbols_new(NULL);
		const char *name = NULL;
		uint8_t id[64];

		if (!s)
			break;
		if (fr_symbols_user(s, NULL, path, NULL, 0, m.start, m.pgoff, fn, &name, NULL) ==
			    0 &&
		    strcmp(name, "fr_test_marker_fn") == 0)
			named++;
		fr_elf_build_id(path, id, sizeof(id));
		fr_symbols_free(s);
	}
	t.stop = 1;
	pthread_join(th, NULL);
	printf("truncation: %u reads (%u named the function) against %u truncations\n", reads,
	       named, t.rounds);
	CHECK(reads == 400 && t.rounds > 0, "reads %u, truncations %u", reads, t.rounds);
out:
	unlink(path);
	free(data);
}

/* A file on a FUSE mount whose owner never answers: the look-up gives up
 * after its deadline instead of holding the attach that asked forever. */
static void test_fuse_deadline(void)
{
	struct fuse_hang h;
	struct fr_symbols *s;
	const char *name = NULL;
	char path[128];
	int ret = fuse_hang_start(&h);

	if (ret < 0) {
		printf("note: no FUSE mount here (%s); the deadline is not exercised\n",
		       strerror(-ret));
		return;
	}
	s = fr_symbols_new(NULL);
	CHECK(s, "fr_symbols_new failed");
	for (int i = 0; s && i < 2; i++) {
		snprintf(path, sizeof(path), "%s/libhang%d.so", h.dir, i);
		ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
		CHECK(ret == -ETIMEDOUT, "a file that never opens: %d, want -ETIMEDOUT", ret);
		/* Cached: the second look-up does not wait again. */
		ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1238, &name, NULL);
		CHECK(ret == -ETIMEDOUT, "again: %d, want -ETIMEDOUT", ret);
	}
	fr_symbols_free(s);
	fuse_hang_stop(&h);
}

/* Regression: only the last component was opened with O_NOFOLLOW. A user
 * who renamed a directory of their mapped library and put a symlink to
 * /dev in its place made the root daemon open device nodes (a watchdog
 * armed by its open reboots the machine) or files only root may read. No
 * symlink is followed anywhere in a mapped path now. */
static void test_symlinked_dir(void)
{
	char dir[] = "/tmp/fr-test-lnk-XXXXXX", link[128], path[160];
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int ret;

	CHECK(s && mkdtemp(dir), "set-up: %s", strerror(errno));
	if (!s)
		return;
	snprintf(link, sizeof(link), "%s/d", dir);
	snprintf(path, sizeof(path), "%s/null", link);
	CHECK(symlink("/dev", link) == 0, "symlink: %s", strerror(errno));
	ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ELOOP, "a path through a symlinked directory: %d, want -ELOOP", ret);
	ret = fr_symbols_user(s, "/proc/self/root", path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ELOOP, "the same under a root: %d, want -ELOOP", ret);
	unlink(link);
	rmdir(dir);
	fr_symbols_free(s);
}

int main(void)
{
	test_fifo_not_waited();
	test_huge_refused();
	test_truncated_while_read();
	test_fuse_deadline();
	test_symlinked_dir();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
