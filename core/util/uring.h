/* The only file that talks to liburing.
 *
 * A struct fr_uring is a small io_uring owned by one thread (liburing
 * submission queues are not shared between threads here). Writes are
 * complete writes: short completions are resubmitted until every byte is
 * written or an error occurs.
 */
#ifndef FR_CORE_URING_H
#define FR_CORE_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fr_uring;

/* Sets up an io_uring with `entries` submission entries (8 is plenty).
 * Returns 0 and the ring in *out, or -errno (-ENOSYS / -EPERM when the
 * kernel has io_uring disabled). Close with fr_uring_close(). */
int fr_uring_open(struct fr_uring **out, unsigned entries);

/* Tears the ring down; accepts NULL. */
void fr_uring_close(struct fr_uring *u);

/* Writes all `len` bytes of `buf` to `fd` at `off`, or at and advancing the
 * file position when `off` is -1 (works for pipes and sockets too).
 * Returns `len`, or -errno from the first failed completion. */
ssize_t fr_uring_write(struct fr_uring *u, int fd, const void *buf, size_t len, int64_t off);

/* Reads up to `len` bytes from `fd` at `off` (looping over short reads
 * until EOF). Returns the number of bytes read or -errno. */
ssize_t fr_uring_read(struct fr_uring *u, int fd, void *buf, size_t len, int64_t off);

/* fdatasync(2) of `fd` through the ring. Returns 0 or -errno. */
int fr_uring_fdatasync(struct fr_uring *u, int fd);

/* A buffered writer on top of fr_uring_write(), usable as an fr_write_fn
 * sink (see core/util/compress.h): bytes are collected into a 256 KiB buffer
 * and written when it fills, at the file position (offset -1). */
struct fr_uring_writer {
	struct fr_uring *uring; /* borrowed */
	int fd;			/* borrowed */
	uint64_t written;	/* bytes handed to the kernel so far */
	size_t used;
	int error;	     /* first -errno, sticky */
	bool paced;	     /* not a regular file: writes wait with deadlines */
	int64_t stall_ns;    /* see fr_uring_writer_limit() */
	int64_t deadline_ns; /* CLOCK_MONOTONIC */
	int hangup_fd;	     /* borrowed, or -1 */
	unsigned char buf[256 * 1024];
};

/* Initializes `w` to write to `fd` through `u` (both borrowed). */
void fr_uring_writer_init(struct fr_uring_writer *w, struct fr_uring *u, int fd);

/* Bounds what the reader of the writer's descriptor can cost: when it is
 * not a regular file (a pipe, socket or device someone else reads), no
 * write blocks in the kernel, and the writer fails with -ETIMEDOUT once no
 * byte was taken for `stall_ns` or `total_ns` have passed since this call.
 * Any descriptor: when `hangup_fd` (a socket, borrowed; -1 for none) hangs
 * up, the next write fails with -ECONNRESET, so work for a client that
 * left stops at its next write. Call after fr_uring_writer_init(). */
void fr_uring_writer_limit(struct fr_uring_writer *w, int64_t stall_ns, int64_t total_ns,
			   int hangup_fd);

/* fr_write_fn: appends bytes, writing full buffers. `arg` is the writer.
 * Returns 0 or the sticky -errno. */
int fr_uring_writer_write(void *arg, const void *buf, size_t len);

/* Writes what is buffered. Returns 0 or the sticky -errno. */
int fr_uring_writer_flush(struct fr_uring_writer *w);

#endif
