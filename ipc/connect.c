/* Connecting as a person would want it explained (ipc/client.h,
 * fr_ipc_connect_why()): a user who is not root and has no recorder of
 * its own at the default path is served by the system recorder when its
 * socket's group lets the user in, and otherwise told why not — no daemon
 * at either place, or the socket's (or its directory's) owner, group and
 * mode with how to join the group, or that the group was joined after
 * this login. Every command connects through here.
 */
#include "ipc/client.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/paths.h"

/* Whether the caller is in group `gid` now (the session's groups), and
 * whether /etc/group lists `user` in it (added since this login). */
static void group_state(gid_t gid, const char *user, int *now, int *listed)
{
	gid_t groups[256];
	int n = getgroups(256, groups);
	struct group *gr = getgrgid(gid);

	*now = getegid() == gid;
	for (int i = 0; i < n && !*now; i++)
		*now = groups[i] == gid;
	*listed = 0;
	for (char **m = gr ? gr->gr_mem : NULL; m && *m && user && !*listed; m++)
		*listed = strcmp(*m, user) == 0;
}

/* "root:flightrec mode 0660" of `st`. */
static void owner_mode(const struct stat *st, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(st->st_uid);
	struct group *gr = getgrgid(st->st_gid);

	snprintf(buf, len, "%s:%s mode %04o", pw ? pw->pw_name : "?", gr ? gr->gr_name : "?",
		 (unsigned)(st->st_mode & 07777));
}

/* Says why connecting to the recorder's socket `sys` was refused
 * (`err`): the socket's (or its directory's) owner, group and mode, and
 * how to join the group. */
static void explain_denied(const char *sys, int err, char *why, size_t len)
{
	const char *slash = strrchr(sys, '/');
	char dir[PATH_MAX], om[160], user[64] = "USER", gname[64];
	struct passwd *pw = getpwuid(geteuid());
	struct group *gr;
	const char *what;
	struct stat st;
	int in_now, listed;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - sys) : 0, sys);
	/* The socket, or the directory that hides it from other users. */
	if (stat(sys, &st) < 0 && stat(dir, &st) < 0) {
		snprintf(why, len, "cannot reach the recorder at %s: %s", sys, strerror(-err));
		return;
	}
	/* Copied: the next getpwuid() or getgrgid() reuses their buffers. */
	if (pw)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	gr = getgrgid(st.st_gid);
	snprintf(gname, sizeof(gname), "%s", gr ? gr->gr_name : "?");
	owner_mode(&st, om, sizeof(om));
	group_state(st.st_gid, pw ? user : NULL, &in_now, &listed);
	what = S_ISDIR(st.st_mode) ? dir : sys;
	if (in_now)
		snprintf(why, len,
			 "not allowed to use the recorder's socket %s (%s is %s) although you "
			 "are in group %s: its mode is not the daemon's (restart flightrecd)",
			 sys, what, om, gname);
	else if (listed)
		snprintf(why, len,
			 "not allowed to use the recorder's socket %s (%s is %s): you were "
			 "added to group %s after this login; log in again (or run newgrp %s)",
			 sys, what, om, gname, gname);
	else
		snprintf(why, len,
			 "not allowed to use the recorder's socket %s (%s is %s, and you are "
			 "not in group %s): ask an administrator to add you (usermod -aG %s %s, "
			 "then log in again), or run as root",
			 sys, what, om, gname, gname, user);
}

/* Says why a user cannot reach the system recorder at `sys`, whose
 * connect failed with `err`, having none of its own at `own`. */
static void explain_system(const char *own, const char *sys, int err, char *why, size_t len)
{
	if (err == -ENOENT || err == -ECONNREFUSED)
		snprintf(why, len,
			 "no recorder listening: none of yours at %s, and the system recorder's "
			 "socket %s %s (is flightrecd running? systemctl status flightrecd)",
			 own, sys, err == -ENOENT ? "does not exist" : "has no daemon behind it");
	else
		explain_denied(sys, err, why, len);
}

int fr_ipc_connect_why(const char *path, char *why, size_t len)
{
	int fd = fr_ipc_connect(path), sys_fd;
	char *own = NULL;

	why[0] = '\0';
	if ((fd == -ENOENT || fd == -ECONNREFUSED) && geteuid() != 0 &&
	    (own = fr_ipc_default_socket()) && strcmp(own, path) == 0 &&
	    strcmp(path, FR_IPC_SYSTEM_SOCKET) != 0) {
		sys_fd = fr_ipc_connect(FR_IPC_SYSTEM_SOCKET);
		if (sys_fd < 0)
			explain_system(path, FR_IPC_SYSTEM_SOCKET, sys_fd, why, len);
		free(own);
		return sys_fd;
	}
	free(own);
	if (fd == -ENOENT || fd == -ECONNREFUSED)
		snprintf(why, len, "no recorder listening at %s (is flightrecd running?)", path);
	else if (fd == -EACCES || fd == -EPERM)
		explain_denied(path, fd, why, len);
	else if (fd < 0)
		snprintf(why, len, "cannot connect to %s: %s", path, strerror(-fd));
	return fd;
}
