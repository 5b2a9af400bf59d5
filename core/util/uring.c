/* io_uring through liburing: the one place that submits ring operations.
 *
 * Every call submits one operation and waits for its completion, so at
 * most one request is in flight and the submission queue can never be
 * full. Short writes and reads are resubmitted for the rest.
 *
 * A request that has not completed after URING_STALL_NS is cancelled if it
 * has not started. Some kernels can leave a request queued for an io-wq
 * worker that never picks it up (seen on 6.18 with buffered writes to
 * ext4, which io_uring always hands to io-wq); waiting for it would hang
 * the caller forever. A cancelled request did nothing, so it is redone with
 * the plain system call, and the ring is marked degraded: every later
 * request uses plain system calls. A request that had already started (a
 * slow fdatasync) is waited for and changes nothing. A failed submission
 * degrades the ring the same way.
 */
#include "core/util/uring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/time.h"

/* Largest single transfer submitted, as the kernel's MAX_RW_COUNT. */
#define URING_MAX_IO ((size_t)INT_MAX & ~(size_t)4095)

/* How long a request may sit without completing before it is cancelled. */
#define URING_STALL_NS (2 * FR_NS_PER_S)

#define TAG_OP 1
#define TAG_CANCEL 2

enum op_kind {
	OP_WRITE,
	OP_WRITE_NOWAIT, /* RWF_NOWAIT: -EAGAIN rather than wait for room */
	OP_READ,
	OP_FDATASYNC,
};

struct fr_uring {
	struct io_uring ring;
	bool degraded; /* plain system calls from now on */
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

static void degrade(struct fr_uring *u, const char *why)
{
	if (u->degraded)
		return;
	u->degraded = true;
	fr_log_warn("io_uring %s; using plain system calls from now on", why);
}

/* Submits what is queued. Returns the number of requests the kernel took
 * or -errno. */
static int submit(struct fr_uring *u)
{
	int ret;

	do
		ret = io_uring_submit(&u->ring);
	while (ret == -EINTR || ret == -EAGAIN);
	return ret;
}

/* Waits for a completion, at most `timeout_ns` when >= 0. Returns 0 with
 * *tag and *res, -ETIME, or another -errno. */
static int reap(struct fr_uring *u, int64_t timeout_ns, uint64_t *tag, int *res)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {
		.tv_sec = timeout_ns / FR_NS_PER_S,
		.tv_nsec = timeout_ns % FR_NS_PER_S,
	};
	int ret;

	do {
		if (timeout_ns >= 0)
			ret = io_uring_wait_cqe_timeout(&u->ring, &cqe, &ts);
		else
			ret = io_uring_wait_cqe(&u->ring, &cqe);
	} while (ret == -EINTR || ret == -EAGAIN);
	if (ret < 0)
		return ret;
	*tag = cqe->user_data;
	*res = cqe->res;
	io_uring_cqe_seen(&u->ring, cqe);
	return 0;
}

/* Runs one prepared request (tagged TAG_OP). Returns its result, or
 * -ECANCELED with the ring degraded when it had to be cancelled, in which
 * case it did nothing. */
static int run_one(struct fr_uring *u)
{
	struct io_uring_sqe *sqe;
	bool op_done = false, cancel_done = false;
	uint64_t tag;
	int ret, res = 0, r;

	if (submit(u) < 1) {
		/* Not taken: nothing was done. */
		degrade(u, "submission failed");
		return -ECANCELED;
	}
	for (;;) {
		ret = reap(u, URING_STALL_NS, &tag, &r);
		if (ret == 0 && tag == TAG_OP)
			return r;
		if (ret == -ETIME)
			break;
		if (ret < 0)
			return ret;
	}

	/* Overdue: cancel it if it has not started, and collect both
	 * completions. One that is running is waited for. */
	sqe = io_uring_get_sqe(&u->ring);
	if (sqe) {
		io_uring_prep_cancel64(sqe, TAG_OP, 0);
		io_uring_sqe_set_data64(sqe, TAG_CANCEL);
	}
	if (!sqe || submit(u) < 1)
		cancel_done = true; /* all that is left is to wait */
	while (!op_done || !cancel_done) {
		ret = reap(u, -1, &tag, &r);
		if (ret < 0)
			return ret;
		if (tag == TAG_OP) {
			op_done = true;
			res = r;
		} else {
			cancel_done = true;
		}
	}
	if (res == -ECANCELED)
		degrade(u, "request stalled in the kernel");
	return res;
}

/* The plain system call for a request; -EAGAIN on a non-blocking fd waits
 * for readiness rather than spinning. */
static ssize_t sync_op(enum op_kind kind, int fd, void *buf, size_t n, int64_t off)
{
	for (;;) {
		ssize_t ret;
		struct pollfd pfd = {.fd = fd};

		switch (kind) {
		case OP_WRITE:
			ret = off < 0 ? write(fd, buf, n) : pwrite(fd, buf, n, (off_t)off);
			pfd.events = POLLOUT;
			break;
		case OP_WRITE_NOWAIT: {
			struct iovec iov = {.iov_base = buf, .iov_len = n};

			/* The caller waits for room itself, with a deadline. */
			ret = pwritev2(fd, &iov, 1, off < 0 ? -1 : (off_t)off, RWF_NOWAIT);
			break;
		}
		case OP_READ:
			ret = off < 0 ? read(fd, buf, n) : pread(fd, buf, n, (off_t)off);
			pfd.events = POLLIN;
			break;
		default: ret = fdatasync(fd); break;
		}
		if (ret >= 0)
			return ret;
		if (errno == EAGAIN && pfd.events) {
			poll(&pfd, 1, -1);
			continue;
		}
		return -errno;
	}
}

/* One request of at most URING_MAX_IO bytes, through the ring unless it
 * is degraded. Returns the result or -errno. */
static ssize_t do_op(struct fr_uring *u, enum op_kind kind, int fd, void *buf, size_t n,
		     int64_t off)
{
	uint64_t pos = off < 0 ? (uint64_t)-1 : (uint64_t)off;

	if (!u->degraded) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
		int res;

		if (!sqe)
			return -EBUSY;
		switch (kind) {
		case OP_WRITE: io_uring_prep_write(sqe, fd, buf, (unsigned)n, pos); break;
		case OP_WRITE_NOWAIT:
			io_uring_prep_write(sqe, fd, buf, (unsigned)n, pos);
			sqe->rw_flags = RWF_NOWAIT;
			break;
		case OP_READ: io_uring_prep_read(sqe, fd, buf, (unsigned)n, pos); break;
		default: io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC); break;
		}
		io_uring_sqe_set_data64(sqe, TAG_OP);
		res = run_one(u);
		if (res != -ECANCELED || !u->degraded)
			return res;
	}
	return sync_op(kind, fd, buf, n, off);
}

ssize_t fr_uring_write(struct fr_uring *u, int fd, const void *buf, size_t len, int64_t off)
{
	const unsigned char *p = buf;
	size_t done = 0;

	if (len > SSIZE_MAX)
		return -EINVAL;
	while (done < len) {
		size_t n = len - done < URING_MAX_IO ? len - done : URING_MAX_IO;
		ssize_t res = do_op(u, OP_WRITE, fd, (void *)(p + done), n,
				    off < 0 ? -1 : off + (int64_t)done);

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
		size_t n = len - done < URING_MAX_IO ? len - done : URING_MAX_IO;
		ssize_t res =
			do_op(u, OP_READ, fd, p + done, n, off < 0 ? -1 : off + (int64_t)done);

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
	ssize_t res;

	do
		res = do_op(u, OP_FDATASYNC, fd, NULL, 0, 0);
	while (res == -EINTR);
	return res < 0 ? (int)res : 0;
}

void fr_uring_writer_init(struct fr_uring_writer *w, struct fr_uring *u, int fd)
{
	w->uring = u;
	w->fd = fd;
	w->written = 0;
	w->used = 0;
	w->error = 0;
	w->paced = false;
	w->stall_ns = 0;
	w->deadline_ns = 0;
	w->hangup_fd = -1;
}

void fr_uring_writer_limit(struct fr_uring_writer *w, int64_t stall_ns, int64_t total_ns,
			   int hangup_fd)
{
	struct stat st;

	w->hangup_fd = hangup_fd;
	w->stall_ns = stall_ns;
	w->deadline_ns = fr_now_mono_ns() + total_ns;
	/* A regular file always takes bytes (slowly at worst); the reader
	 * at the other end of a pipe, socket or device decides when it
	 * does. */
	w->paced = fstat(w->fd, &st) == 0 && !S_ISREG(st.st_mode);
}

/* Waits until `fd` has room, up to the stall deadline counted from
 * `progress` or the total deadline, or until the hang-up descriptor hangs
 * up. Returns 0 (try again), -ETIMEDOUT, -ECONNRESET or -errno. */
static int wait_room(struct fr_uring_writer *w, int fd, int64_t progress)
{
	struct pollfd pfd[2] = {
		{.fd = fd, .events = POLLOUT},
		{.fd = w->hangup_fd, .events = POLLRDHUP},
	};
	int64_t now = fr_now_mono_ns(), until;

	until = progress + w->stall_ns < w->deadline_ns ? progress + w->stall_ns : w->deadline_ns;
	if (now >= until)
		return -ETIMEDOUT;
	if (poll(pfd, w->hangup_fd >= 0 ? 2 : 1,
		 (int)((until - now + 999999) / 1000000 < 60000 ? (until - now + 999999) / 1000000
								: 60000)) < 0 &&
	    errno != EINTR)
		return -errno;
	if (w->hangup_fd >= 0 && fr_fd_hung_up(w->hangup_fd))
		return -ECONNRESET;
	return 0;
}

/* For a FIFO or terminal opened by path, whose description takes no
 * RWF_NOWAIT: a second open file description of the same file, made
 * non-blocking (the client's own is left as it is). Only those two kinds:
 * reopening runs the file's open, and a device's driver may act on that.
 * Returns the descriptor or -errno. */
static int reopen_nonblocking(int fd)
{
	char proc[64];
	struct stat st;
	int nfd;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISFIFO(st.st_mode) && !isatty(fd))
		return -EOPNOTSUPP;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	nfd = open(proc, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

/* Writes `len` bytes to a pipe, socket or device without ever blocking in
 * the kernel: non-blocking writes (RWF_NOWAIT, or write() on a
 * non-blocking description of the same file where the kernel takes no
 * RWF_NOWAIT), and between them a poll for room that ends at the stall or
 * total deadline or when the hang-up descriptor hangs up. Returns len or
 * -errno (-ETIMEDOUT, -ECONNRESET). */
static ssize_t paced_write(struct fr_uring_writer *w, const unsigned char *p, size_t len)
{
	int64_t progress = fr_now_mono_ns();
	size_t done = 0;
	ssize_t ret = (ssize_t)len;
	int nbfd = -1;

	while (done < len) {
		size_t n = len - done < URING_MAX_IO ? len - done : URING_MAX_IO;
		ssize_t res;
		int r;

		if (nbfd >= 0) {
			res = write(nbfd, p + done, n);
			if (res < 0)
				res = -errno;
		} else {
			res = do_op(w->uring, OP_WRITE_NOWAIT, w->fd, (void *)(p + done), n, -1);
		}
		if (res > 0) {
			done += (size_t)res;
			progress = fr_now_mono_ns();
			continue;
		}
		if (res == -EOPNOTSUPP && nbfd < 0) {
			nbfd = reopen_nonblocking(w->fd);
			if (nbfd >= 0)
				continue;
			res = nbfd;
		}
		if (res == 0)
			res = -EIO;
		if (res != -EAGAIN && res != -EINTR) {
			ret = res;
			break;
		}
		r = wait_room(w, nbfd >= 0 ? nbfd : w->fd, progress);
		if (r < 0) {
			ret = r;
			break;
		}
	}
	if (nbfd >= 0)
		close(nbfd);
	return ret;
}

static int writer_out(struct fr_uring_writer *w, const void *buf, size_t len)
{
	ssize_t ret;

	if (fr_fd_hung_up(w->hangup_fd))
		ret = -ECONNRESET;
	else if (w->paced)
		ret = paced_write(w, buf, len);
	else
		ret = fr_uring_write(w->uring, w->fd, buf, len, -1);

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
