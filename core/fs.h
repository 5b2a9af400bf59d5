/* Small file-system and naming helpers shared by the daemon, the IPC
 * server and the CLI.
 */
#ifndef FR_CORE_FS_H
#define FR_CORE_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Creates directory `dir` and its missing parents with `mode`; existing
 * ones are left as they are. Returns 0, or -errno with "cannot create
 * directory X: reason" in `err`. */
int fr_mkdir_p(const char *dir, mode_t mode, char *err, size_t errlen);

/* Creates the directory holding `path` (everything before its last '/')
 * and checks it as fr_dir_open_private() does: the ring's and the
 * socket's directories must be the daemon user's alone, or another user
 * could put a file of their choosing where the daemon creates its own.
 * A path without a directory part (the working directory) or directly
 * under "/" needs nothing: 0. */
int fr_mkdir_parent(const char *path, mode_t mode, char *err, size_t errlen);

/* Opens directory `dir` for files that only this process's user may
 * touch, creating it and its missing parents with `mode` first. Each
 * component is opened relative to the one before with O_NOFOLLOW, so the
 * descriptor returned is the directory that was checked, whatever is
 * renamed later. A symlink on the way is followed only when the caller's
 * user or root owns it and the directory holding it (not group- or
 * other-writable, or sticky), so nobody else can point the path
 * elsewhere; the last component is never a symlink. The directory must be
 * owned by the caller's euid and not be writable by group or others.
 * Returns an O_DIRECTORY descriptor (close-on-exec), or -errno with a
 * message naming the reason in `err`: -ELOOP for a symlink, -EPERM for
 * the wrong owner (its uid) or mode (its bits), -ENOTDIR, or what the
 * file system said. */
int fr_dir_open_private(const char *dir, mode_t mode, char *err, size_t errlen);

/* Whether cgroup v2 path `path` is `root` or below it: "/a/b" and
 * "/a/b/c" are within "/a/b" (and "/a/b/"), "/a/bc" is not; every known
 * path is within "/". An unknown path (NULL or "") is within nothing. */
int fr_cgroup_within(const char *path, const char *root);

/* This machine's host name, made safe inside a file name ('/' and spaces
 * become '_'; "host" when it has none). Returns buf. */
char *fr_host_name(char *buf, size_t len);

/* Opens `path` (relative to `dirfd`, or AT_FDCWD) for reading when it may
 * be controlled by another user: the open never blocks (O_NONBLOCK, so a
 * FIFO put at the path does not wait for a writer), never follows a
 * symbolic link in the last component, and only a regular file of at most
 * `max_size` bytes is handed back (a FIFO, socket or device is closed
 * again at once). `st` (may be NULL) receives the file's fstat. Returns
 * the descriptor (O_CLOEXEC, in blocking mode again), or -ELOOP for a
 * symbolic link, -ENOEXEC for something that is not a regular file,
 * -EFBIG for a larger file, or the open's -errno. */
int fr_open_untrusted(int dirfd, const char *path, uint64_t max_size, struct stat *st);

#endif
