/* Sharing the control socket with a group: the directories on its way,
 * and group membership of a peer (see ipc/share.h and ipc/server.h). Kept
 * apart from the server's connection handling, which it does not touch.
 */
#include "ipc/share.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "ipc/server.h"

/* Whether members of `gid` (who are not its owner) may search `st`. */
static bool group_may_pass(const struct stat *st, gid_t gid)
{
	return (st->st_mode & S_IXOTH) || (st->st_gid == gid && (st->st_mode & S_IXGRP));
}

/* Whether directory `dirfd` holds nothing but `name`: then it is the
 * socket's own directory, and letting a group search it exposes nothing
 * else. */
static bool holds_only(int dirfd, const char *name)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool only = true;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (only && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, name))
			only = false;
	closedir(d);
	return only;
}

void fr_ipc_share_dirs(const char *path, gid_t gid)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;
	size_t len;
	int fd;

	if (!slash) {
		if (!getcwd(dir, sizeof(dir)))
			return;
		len = strlen(dir);
	} else {
		len = slash == path ? 1 : (size_t)(slash - path);
		if (len >= sizeof(dir))
			return;
		memcpy(dir, path, len);
		dir[len] = '\0';
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && !group_may_pass(&st, gid) && st.st_uid == geteuid() &&
	    (st.st_mode & 07777) == 0700 && holds_only(fd, slash ? slash + 1 : path)) {
		if (fchown(fd, (uid_t)-1, gid) == 0 && fchmod(fd, 0710) == 0)
			fr_log_info("%s: group %u may pass (mode 0710) to reach the socket", dir,
				    (unsigned)gid);
		else
			fr_log_warn("%s: cannot let group %u pass: %s", dir, (unsigned)gid,
				    strerror(errno));
	}
	if (fd >= 0)
		close(fd);

	/* Every directory from the socket's up to / must let the group
	 * through; one that does not is the administrator's to change. */
	for (;;) {
		if (stat(dir, &st) == 0 && !group_may_pass(&st, gid)) {
			fr_log_warn("members of group %u cannot reach the socket %s: %s is mode "
				    "%04o %u:%u (they need search permission on it)",
				    (unsigned)gid, path, dir, (unsigned)(st.st_mode & 07777),
				    (unsigned)st.st_uid, (unsigned)st.st_gid);
			return;
		}
		if (len <= 1)
			return;
		while (len > 1 && dir[len - 1] != '/')
			len--;
		if (len > 1)
			len--;
		dir[len] = '\0';
	}
}

int fr_ipc_peer_in_group(const struct fr_ipc_peer *peer, gid_t gid)
{
	if (peer->gid == gid)
		return 1;
	for (unsigned i = 0; i < peer->ngroups; i++)
		if (peer->groups[i] == gid)
			return 1;
	return 0;
}
