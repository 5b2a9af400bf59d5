/* A file system that never answers, for tests of deadlines on files other
 * users control: a user can mount one with fusermount, and any open of a
 * file on it then waits for as long as its owner likes.
 *
 * fuse_hang_start() forks a minimal FUSE server speaking the kernel
 * protocol on /dev/fuse (no libfuse): it answers INIT, LOOKUP and GETATTR
 * (every name is a regular file of 64 KiB, except hidden names starting
 * with "." which do not exist) and never answers OPEN, CREATE or READ: a
 * file created there waits as long as an opened one. fuse_hang_stop() unmounts it and kills the server, which aborts
 * every request still waiting (they fail with ENOTCONN).
 *
 * With fuse_hang_file set to a descriptor, every name is that file
 * instead (its size, mode 0755): its READs are answered from it and the
 * first fuse_hang_opens OPENs are answered, the later ones never: a
 * program run from there, whose executable cannot be opened again.
 *
 * Needs root and /dev/fuse: returns -EPERM/-ENOENT otherwise, for the
 * test to skip.
 */
#ifndef FR_TESTS_FUSE_HANG_H
#define FR_TESTS_FUSE_HANG_H

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct fuse_hang {
	char dir[64];
	pid_t server;
};

/* Set before fuse_hang_start(): the file every name is (-1: none), and
 * how many of its OPENs are answered. */
static int fuse_hang_file = -1;
static int fuse_hang_opens;

static void fuse_hang_attr(struct fuse_attr *a, uint64_t ino)
{
	struct stat st;

	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->size = fuse_hang_file >= 0 && fstat(fuse_hang_file, &st) == 0 ? (uint64_t)st.st_size
									 : 65536;
	a->blocks = (a->size + 511) / 512;
	a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755
				      : S_IFREG | (fuse_hang_file >= 0 ? 0755 : 0644);
	a->nlink = 1;
	a->blksize = 4096;
}

static void fuse_hang_reply(int fd, const struct fuse_in_header *in, int error, const void *body,
			    size_t len)
{
	static char buf[sizeof(struct fuse_out_header) + 65536];
	struct fuse_out_header *out = (struct fuse_out_header *)buf;

	out->len = (uint32_t)(sizeof(*out) + len);
	out->error = error;
	out->unique = in->unique;
	memcpy(buf + sizeof(*out), body, len);
	if (write(fd, buf, out->len) < 0)
		_exit(0);
}

/* Set before fuse_hang_start(): OPEN is answered, so the file can be
 * opened and mapped, and only its READs never are (a mapping whose pages
 * never come in). */
static int fuse_hang_answer_open;

static void fuse_hang_serve(int fd)
{
	static char buf[FUSE_MIN_READ_BUFFER + 65536];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		const struct fuse_in_header *in = (const struct fuse_in_header *)buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0);
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o;

			memset(&o, 0, sizeof(o));
			o.major = FUSE_KERNEL_VERSION;
			o.minor = 31;
			o.max_readahead = 65536;
			o.max_write = 65536;
			o.max_pages = 16;
			fuse_hang_reply(fd, in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o;

			if (buf[sizeof(*in)] == '.') {
				fuse_hang_reply(fd, in, -ENOENT, NULL, 0);
				break;
			}
			memset(&o, 0, sizeof(o));
			o.nodeid = 2;
			o.attr_valid = o.entry_valid = 3600;
			fuse_hang_attr(&o.attr, 2);
			fuse_hang_reply(fd, in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o;

			memset(&o, 0, sizeof(o));
			o.attr_valid = 3600;
			fuse_hang_attr(&o.attr, in->nodeid);
			fuse_hang_reply(fd, in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN:
			if (fuse_hang_answer_open ||
			    (fuse_hang_file >= 0 && fuse_hang_opens-- > 0)) {
				struct fuse_open_out o;

				memset(&o, 0, sizeof(o));
				o.fh = 1;
				fuse_hang_reply(fd, in, 0, &o, sizeof(o));
			}
			break;
		case FUSE_READ:
			if (fuse_hang_file >= 0) {
				static char data[65536];
				const struct fuse_read_in *r = (const void *)(in + 1);
				ssize_t got = pread(fuse_hang_file, data,
						    r->size < sizeof(data) ? r->size : sizeof(data),
						    (off_t)r->offset);

				fuse_hang_reply(fd, in, got < 0 ? -EIO : 0, data,
						got < 0 ? 0 : (size_t)got);
			}
			break;
		case FUSE_FLUSH:
		case FUSE_RELEASE: fuse_hang_reply(fd, in, 0, NULL, 0); break;
		case FUSE_CREATE:
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT: break; /* never answered (or needs no answer) */
		default: fuse_hang_reply(fd, in, -ENOSYS, NULL, 0); break;
		}
	}
}

/* Mounts the server on a new directory under /tmp. Returns 0, or -errno
 * when this machine or user cannot. */
static int fuse_hang_start(struct fuse_hang *h)
{
	char opts[128];
	int fd, ready[2];
	char c;

	if (geteuid() != 0)
		return -EPERM;
	snprintf(h->dir, sizeof(h->dir), "/tmp/fr-test-fuse-XXXXXX");
	if (!mkdtemp(h->dir))
		return -errno;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rmdir(h->dir);
		return -errno;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (mount("frtest", h->dir, "fuse.frtest", MS_NOSUID | MS_NODEV, opts) < 0) {
		int e = errno;

		close(fd);
		rmdir(h->dir);
		return -e;
	}
	if (pipe(ready) < 0)
		return -errno;
	h->server = fork();
	if (h->server == 0) {
		close(ready[0]);
		close(ready[1]);
		fuse_hang_serve(fd);
		_exit(0);
	}
	close(fd);
	close(ready[1]);
	if (read(ready[0], &c, 1) < 0) {
		/* nothing: the pipe only tells that the fork happened */
	}
	close(ready[0]);
	return h->server > 0 ? 0 : -ECHILD;
}

static void fuse_hang_stop(struct fuse_hang *h)
{
	umount2(h->dir, MNT_DETACH);
	if (h->server > 0) {
		kill(h->server, SIGKILL);
		waitpid(h->server, NULL, 0);
	}
	rmdir(h->dir);
}

#endif
