/* File-system and naming helpers: one mkdir -p, one file-name-safe host
 * name, so that every file flightrec creates is named and placed the same
 * way.
 */
#include "core/util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/util/log.h"

int fr_mkdir_parent(const char *path, mode_t mode, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash || slash == path)
		return 0;
	if ((size_t)(slash - path) >= sizeof(dir)) {
		fr_set_err(err, errlen, "cannot create the directory of %s: %s", path,
			   strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	fd = fr_dir_open_private(dir, mode, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* Whether only `uid` or root can change the entries of directory `st`:
 * owned by one of them and not writable by anyone else, or sticky (then
 * nobody else may rename or remove an entry they do not own). */
static int dir_trusted(const struct stat *st, uid_t uid)
{
	if (st->st_uid != uid && st->st_uid != 0)
		return 0;
	return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX);
}

/* Opens component `name` of `dir` relative to `at`, creating it when
 * missing. `last`: the directory asked for, never reached through a
 * symlink. Returns a descriptor or -errno with the reason in `err`. */
static int open_component(int at, const char *name, const char *dir, int last, mode_t mode,
			  char *err, size_t errlen)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	struct stat st, parent = {0};
	uid_t uid = geteuid();
	int fd, e;

	fd = openat(at, name, flags | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		/* Created relative to the parent already opened, so a parent
		 * swapped in meanwhile cannot redirect it. */
		if (mkdirat(at, name, mode) < 0 && errno != EEXIST) {
			e = errno;
			fr_set_err(err, errlen, "cannot create directory %s (at %s): %s", dir, name,
				   strerror(e));
			return -e;
		}
		fd = openat(at, name, flags | O_NOFOLLOW);
	}
	if (fd >= 0)
		return fd;
	e = errno;
	if ((e == ELOOP || e == ENOTDIR) && fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		if (last) {
			fr_set_err(err, errlen, "%s is a symlink; it must be a directory itself",
				   dir);
			return -ELOOP;
		}
		if (st.st_uid != uid && st.st_uid != 0) {
			fr_set_err(err, errlen, "%s: its component %s is a symlink owned by uid %u",
				   dir, name, (unsigned)st.st_uid);
			return -ELOOP;
		}
		if (fstat(at, &parent) < 0 || !dir_trusted(&parent, uid)) {
			fr_set_err(err, errlen,
				   "%s: its component %s is a symlink in a directory other users can "
				   "change (owner uid %u, mode %04o)",
				   dir, name, (unsigned)parent.st_uid,
				   (unsigned)(parent.st_mode & 07777));
			return -ELOOP;
		}
		fd = openat(at, name, flags);
		if (fd >= 0)
			return fd;
		e = errno;
	}
	fr_set_err(err, errlen, "cannot open directory %s (at %s): %s", dir, name, strerror(e));
	return -e;
}

/* The directory fd (the last of `dir`) is this user's and no one else
 * can write to it. Returns 0, or -errno with err set. */
static int check_own_dir(int fd, const char *dir, uid_t uid, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int e = errno;

		fr_set_err(err, errlen, "cannot open directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (st.st_uid != uid) {
		fr_set_err(err, errlen,
			   "directory %s is owned by uid %u, not by uid %u (this process's user)",
			   dir, (unsigned)st.st_uid, (unsigned)uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fr_set_err(err, errlen,
			   "directory %s is writable by %s (mode %04o); it must not be (chmod go-w)",
			   dir,
			   (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "group and others"
			   : (st.st_mode & S_IWGRP)			    ? "group"
									    : "others",
			   (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int fr_dir_open_private(const char *dir, mode_t mode, char *err, size_t errlen)
{
	char buf[PATH_MAX], *name, *save = NULL;
	struct stat st;
	uid_t uid = geteuid();
	size_t len = dir ? strlen(dir) : 0;
	int fd, ret;

	if (len == 0 || len >= sizeof(buf)) {
		fr_set_err(err, errlen, "cannot open directory %s: %s", dir ? dir : "",
			   strerror(len ? ENAMETOOLONG : EINVAL));
		return len ? -ENAMETOOLONG : -EINVAL;
	}
	memcpy(buf, dir, len + 1);
	fd = open(dir[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		fr_set_err(err, errlen, "cannot open directory %s: %s", dir, strerror(e));
		return -e;
	}
	name = strtok_r(buf, "/", &save);
	while (name) {
		char *next = strtok_r(NULL, "/", &save);
		int sub;

		if (strcmp(name, ".") == 0) {
			name = next;
			continue;
		}
		/* Every directory passed through must be one only this user or
		 * root can change (or sticky): otherwise another user could
		 * rename what is checked here and put their own in its place
		 * once the caller goes back to the path. */
		if (fstat(fd, &st) < 0) {
			int e = errno;

			fr_set_err(err, errlen, "cannot inspect a directory of %s: %s", dir,
				   strerror(e));
			close(fd);
			return -e;
		}
		if (!dir_trusted(&st, uid)) {
			fr_set_err(err, errlen,
				   "%s: %s is in a directory other users can change (owner uid %u, "
				   "mode %04o)",
				   dir, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			close(fd);
			return -EPERM;
		}
		sub = open_component(fd, name, dir, next == NULL, mode, err, errlen);
		close(fd);
		if (sub < 0)
			return sub;
		fd = sub;
		name = next;
	}
	ret = check_own_dir(fd, dir, uid, err, errlen);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
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

int fr_reopen_regular(int pathfd, uint64_t max_size, struct stat *st)
{
	char proc[64];
	struct stat own, again;
	int fd, flags;

	if (!st)
		st = &own;
	if (fstat(pathfd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -ENOEXEC;
	if ((uint64_t)st->st_size > max_size)
		return -EFBIG;
	/* The inode O_PATH holds, opened for reading: what was checked. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	/* Reads of a regular file ignore O_NONBLOCK, but a later user of the
	 * descriptor should not have to think about it. */
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

int fr_open_untrusted(const char *root, const char *path, uint64_t max_size, struct stat *st)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int dirfd = AT_FDCWD, pfd, ret;

	if (root && root[0]) {
		dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0)
			return -errno;
		how.resolve |= RESOLVE_IN_ROOT;
	}
	pfd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (pfd < 0 && errno == ENOSYS) {
		/* Before Linux 5.6: the last component is still not followed,
		 * and nothing is opened for reading before it is checked. */
		pfd = openat(dirfd, dirfd == AT_FDCWD ? path : path + strspn(path, "/"),
			     O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	ret = pfd < 0 ? -errno : 0;
	if (dirfd >= 0)
		close(dirfd);
	if (ret < 0)
		return ret == -EXDEV ? -ELOOP : ret;
	ret = fr_reopen_regular(pfd, max_size, st);
	close(pfd);
	return ret;
}

bool fr_fd_hung_up(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};

	return fd >= 0 && poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

ssize_t fr_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int fr_read_whole(int fd, size_t max, char **buf, size_t *len)
{
	struct stat st;
	ssize_t n;

	*buf = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || (uint64_t)st.st_size > max)
		return -EFBIG;
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf)
		return -ENOMEM;
	n = fr_pread_full(fd, *buf, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		free(*buf);
		*buf = NULL;
		return n < 0 ? (int)n : -EIO;
	}
	(*buf)[n] = '\0';
	*len = (size_t)n;
	return 0;
}

int fr_replace_file(const char *dir, const char *base, const void *buf, size_t len, mode_t mode)
{
	static uint64_t counter; /* atomic; only when getrandom fails */
	char tmp[NAME_MAX + 1];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, ret = 0;

	if (dfd < 0)
		return -errno;
	for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
		uint64_t r;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = (uint64_t)fr_now_mono_ns() ^
			    (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 40);
		if (snprintf(tmp, sizeof(tmp), ".%.200s.%012" PRIx64, base,
			     r & (uint64_t)0xffffffffffff) >= (int)sizeof(tmp)) {
			errno = ENAMETOOLONG;
			break;
		}
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	for (size_t off = 0; off < len && ret == 0;) {
		ssize_t n = write(fd, (const char *)buf + off, len - off);

		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0 && renameat(dfd, tmp, dfd, base) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(dfd, tmp, 0);
	else
		fsync(dfd);
	close(dfd);
	return ret;
}
