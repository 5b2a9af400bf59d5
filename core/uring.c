/* io_uring through liburing: the one place that submits ring operations.
 *
 * Every call submits one operation and waits for its completion, so at
 * most one entry is in flight and the submission queue can never be full.
 * Short writes and reads are resubmitted for the rest. A failed submission
 * leaves the ring in an unknown state; it is then marked broken and every
 * later call fails with the same error rather than reaping a stray
 * completion as its own.
 */
#include "core/uring.h"

#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>

/* Largest single transfer submitted, as the kernel's MAX_RW_COUNT. */
#define URING_MAX_IO ((size_t)INT_MAX & ~(size_t)4095)

struct fr_uring {
	struct io_uring ring;
	int broken; /* -errno of a failed submission, sticky */
};

int fr_uring_open(struct fr_uring **out, unsigned entries)
{
	struct fr_uring *u;
	int ret;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	/* The kernel creates the ring fd with O_CLOEXEC. */
	ret = io_uring_queue_init(entries ? entries : 8, &u->ring, 0);
	if (ret < 0)
		goto err_free;
	*out = u;
	return 0;

err_free:
	free(u);
	return ret;
}

void fr_uring_close(struct fr_uring *u)
{
	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	free(u);
}

static struct io_uring_sqe *get_sqe(struct fr_uring *u)
{
	if (u->broken)
		return NULL;
	return io_uring_get_sqe(&u->ring);
}

/* Submits the prepared entry and waits for its completion. Returns the
 * completion's result (>= 0 or -errno). */
static int run_one(struct fr_uring *u)
{
	struct io_uring_cqe *cqe;
	int ret, res;

	do
		ret = io_uring_submit(&u->ring);
	while (ret == -EINTR || ret == -EAGAIN);
	if (ret < 0)
		goto err_broken;
	do
		ret = io_uring_wait_cqe(&u->ring, &cqe);
	while (ret == -EINTR || ret == -EAGAIN);
	if (ret < 0)
		goto err_broken;
	res = cqe->res;
	io_uring_cqe_seen(&u->ring, cqe);
	return res;

err_broken:
	u->broken = ret;
	return ret;
}

ssize_t fr_uring_write(struct fr_uring *u, int fd, const void *buf, size_t len,
		       int64_t off)
{
	const unsigned char *p = buf;
	size_t done = 0;

	if (len > SSIZE_MAX)
		return -EINVAL;
	while (done < len) {
		struct io_uring_sqe *sqe = get_sqe(u);
		size_t n = len - done;
		int res;

		if (!sqe)
			return u->broken ? u->broken : -EBUSY;
		if (n > URING_MAX_IO)
			n = URING_MAX_IO;
		io_uring_prep_write(sqe, fd, p + done, (unsigned)n,
				    off < 0 ? (uint64_t)-1 : (uint64_t)off + done);
		res = run_one(u);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res < 0)
			return res;
		/* A write that makes no progress would loop forever. */
		if (res == 0)
			return -EIO;
		done += (size_t)res;
	}
	return (ssize_t)len;
}

ssize_t fr_uring_read(struct fr_uring *u, int fd, void *buf, size_t len, int64_t off)
{
	unsigned char *p = buf;
	size_t done = 0;

	if (len > SSIZE_MAX)
		return -EINVAL;
	while (done < len) {
		struct io_uring_sqe *sqe = get_sqe(u);
		size_t n = len - done;
		int res;

		if (!sqe)
			return u->broken ? u->broken : -EBUSY;
		if (n > URING_MAX_IO)
			n = URING_MAX_IO;
		io_uring_prep_read(sqe, fd, p + done, (unsigned)n,
				   off < 0 ? (uint64_t)-1 : (uint64_t)off + done);
		res = run_one(u);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res < 0)
			return res;
		if (res == 0)
			break;
		done += (size_t)res;
	}
	return (ssize_t)done;
}

int fr_uring_fdatasync(struct fr_uring *u, int fd)
{
	struct io_uring_sqe *sqe;
	int res;

	do {
		sqe = get_sqe(u);
		if (!sqe)
			return u->broken ? u->broken : -EBUSY;
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		res = run_one(u);
	} while (res == -EINTR);
	return res < 0 ? res : 0;
}

void fr_uring_writer_init(struct fr_uring_writer *w, struct fr_uring *u, int fd)
{
	w->uring = u;
	w->fd = fd;
	w->written = 0;
	w->used = 0;
	w->error = 0;
}

static int writer_out(struct fr_uring_writer *w, const void *buf, size_t len)
{
	ssize_t ret = fr_uring_write(w->uring, w->fd, buf, len, -1);

	if (ret < 0) {
		w->error = (int)ret;
		return w->error;
	}
	w->written += len;
	return 0;
}

int fr_uring_writer_flush(struct fr_uring_writer *w)
{
	int ret;

	if (w->error)
		return w->error;
	if (w->used == 0)
		return 0;
	ret = writer_out(w, w->buf, w->used);
	w->used = 0;
	return ret;
}

int fr_uring_writer_write(void *arg, const void *buf, size_t len)
{
	struct fr_uring_writer *w = arg;
	const unsigned char *p = buf;

	if (w->error)
		return w->error;
	while (len > 0) {
		size_t room = sizeof(w->buf) - w->used;
		size_t n;

		/* Large pieces skip the copy once the buffer is empty. */
		if (w->used == 0 && len >= sizeof(w->buf))
			return writer_out(w, p, len);
		n = len < room ? len : room;
		memcpy(w->buf + w->used, p, n);
		w->used += n;
		p += n;
		len -= n;
		if (w->used == sizeof(w->buf)) {
			int ret = fr_uring_writer_flush(w);

			if (ret < 0)
				return ret;
		}
	}
	return 0;
}
