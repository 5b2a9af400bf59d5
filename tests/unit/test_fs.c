/* fr_replace_file(): the small files the daemon keeps beside the ring
 * (attach --since-last's cursors, the exporter's cursor) replaced in one
 * step, never through a link someone planted at the name. */
#include "core/util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/check.h"

static char dir[64];

static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/* The entries of the directory (a temporary file left would be one more). */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

int main(void)
{
	char path[128], target[128], buf[64];
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/fr-test-fs.XXXXXX");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/cursor", dir);
	snprintf(target, sizeof(target), "%s/victim", dir);

	/* A new file, then its replacement, mode as asked, nothing else left. */
	CHECK(fr_replace_file(dir, "cursor", "one\n", 4, 0600) == 0, "first write");
	CHECK(fr_replace_file(dir, "cursor", "two\n", 4, 0600) == 0, "replacement");
	slurp(path, buf, sizeof(buf));
	CHECK(strcmp(buf, "two\n") == 0, "content %s", buf);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode %o", st.st_mode);
	CHECK(entries() == 1, "%d entries", entries());

	/* A symlink planted at the name is replaced, its target untouched. */
	CHECK(unlink(path) == 0, "unlink");
	CHECK(fr_replace_file(dir, "victim", "keep\n", 5, 0644) == 0, "victim");
	CHECK(symlink(target, path) == 0, "symlink");
	CHECK(fr_replace_file(dir, "cursor", "three\n", 6, 0600) == 0, "over a symlink");
	slurp(target, buf, sizeof(buf));
	CHECK(strcmp(buf, "keep\n") == 0, "the link's target was written: %s", buf);
	CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the name is a file again");

	/* A directory that is not there: an error, nothing created. */
	CHECK(fr_replace_file("/nonexistent-fr-dir", "x", "a", 1, 0600) == -ENOENT, "no dir");

	unlink(path);
	unlink(target);
	rmdir(dir);
	if (failures)
		return 1;
	printf("fs: ok\n");
	return 0;
}
