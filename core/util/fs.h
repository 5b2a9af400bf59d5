/* Small file-system and naming helpers shared by the daemon, the IPC
 * server and the CLI.
 */
#ifndef FR_CORE_FS_H
#define FR_CORE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

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
 * renamed later. Every directory passed through must be owned by the
 * caller's user or root and not group- or other-writable (or be sticky),
 * so nobody else can rename a component and put theirs in its place; a
 * symlink on the way is followed only when the caller's user or root owns
 * it; the last component is never a symlink. The directory must be
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

/* Opens the absolute `path` for reading when it may be controlled by
 * another user; with `root` (e.g. "/proc/PID/root"), `path` is resolved
 * as if `root` were "/". No symbolic link is followed on the way (a
 * mapped path is what the kernel resolved; a link in it was put there
 * since, perhaps to /dev or to a file only root may read), the file is
 * first opened with O_PATH, which runs no driver's open and does not wait
 * on a FIFO, and only a regular file of at most `max_size` bytes is then
 * opened for reading (fr_reopen_regular()). `st` (may be NULL) receives
 * its fstat. Returns the descriptor (O_CLOEXEC), or -ELOOP for a symbolic
 * link, -ENOEXEC for something that is not a regular file, -EFBIG for a
 * larger file, or the open's -errno. */
int fr_open_untrusted(const char *root, const char *path, uint64_t max_size, struct stat *st);

/* Opens for reading the inode an O_PATH descriptor holds, when it is a
 * regular file of at most `max_size` bytes (-ENOEXEC, -EFBIG otherwise),
 * through /proc/self/fd. `st` (may be NULL) receives its fstat. Returns
 * the descriptor or -errno. */
int fr_reopen_regular(int pathfd, uint64_t max_size, struct stat *st);

/* Reads `len` bytes at `off` of `fd` unless the file ends first, retrying
 * after EINTR. Returns the bytes read (fewer at the end of the file) or
 * -errno. */
ssize_t fr_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* The whole of file `fd` from its start (the memory file a recorder wrote
 * its answer into), at most `max` bytes, into a malloc'd *buf with a NUL
 * after its *len bytes (the caller frees). Returns 0, -EFBIG when it is
 * larger, -EIO when it changed size while read, or -errno. */
int fr_read_whole(int fd, size_t max, char **buf, size_t *len);

/* Replaces file `base` in directory `dir` with `len` bytes of `buf`, as one
 * step a crash cannot split: a new file under a random ".BASE.XXXX" name
 * (O_EXCL|O_NOFOLLOW, `mode`: nothing already there is opened, a symlink
 * least of all), written, fsync'ed, renamed over `base`, and the directory
 * fsync'ed so the rename survives a power loss. On failure nothing new is
 * left. Returns 0 or -errno. */
int fr_replace_file(const char *dir, const char *base, const void *buf, size_t len, mode_t mode);

/* Whether the peer at the other end of socket, pipe or terminal `fd` has
 * hung up or shut down its side (POLLRDHUP, POLLHUP, POLLERR); false for
 * -1 and for a peer still there. Never waits. */
bool fr_fd_hung_up(int fd);

#endif
