/* File-system and naming helpers: one mkdir -p, one file-name-safe host
 * name, so that every file flightrec creates is named and placed the same
 * way.
 */
#include "core/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

int fr_mkdir_p(const char *dir, mode_t mode, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(buf)) {
		fr_set_err(err, errlen, "cannot create directory %s: %s", dir,
			   strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(buf, dir, len + 1);
	for (char *p = buf + 1;; p++) {
		char saved = *p;

		if (saved != '/' && saved != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST) {
			int e = errno;

			fr_set_err(err, errlen, "cannot create directory %s: %s", buf, strerror(e));
			return -e;
		}
		*p = saved;
		if (saved == '\0')
			return 0;
	}
}

int fr_mkdir_parent(const char *path, mode_t mode, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		return 0;
	if ((size_t)(slash - path) >= sizeof(dir)) {
		fr_set_err(err, errlen, "cannot create the directory of %s: %s", path,
			   strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	return fr_mkdir_p(dir, mode, err, errlen);
}

int fr_cgroup_within(const char *path, const char *root)
{
	size_t len;

	if (!path || !path[0])
		return 0;
	while (*root == '/')
		root++;
	while (*path == '/')
		path++;
	len = strlen(root);
	while (len > 0 && root[len - 1] == '/')
		len--;
	if (len == 0)
		return 1;
	return strncmp(path, root, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

char *fr_host_name(char *buf, size_t len)
{
	if (gethostname(buf, len) < 0 || len == 0)
		snprintf(buf, len, "host");
	buf[len - 1] = '\0';
	if (!buf[0])
		snprintf(buf, len, "host");
	for (char *c = buf; *c; c++)
		if (*c == '/' || *c == ' ')
			*c = '_';
	return buf;
}

int fr_open_untrusted(int dirfd, const char *path, uint64_t max_size, struct stat *st)
{
	struct stat own;
	int fd, flags, ret;

	if (!st)
		st = &own;
	fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		ret = -errno;
		goto err;
	}
	if (!S_ISREG(st->st_mode)) {
		ret = -ENOEXEC;
		goto err;
	}
	if ((uint64_t)st->st_size > max_size) {
		ret = -EFBIG;
		goto err;
	}
	/* Reads of a regular file ignore O_NONBLOCK, but a later user of the
	 * descriptor should not have to think about it. */
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
err:
	close(fd);
	return ret;
}
