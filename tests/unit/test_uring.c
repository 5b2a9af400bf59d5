/* io_uring wrapper: positioned and file-position writes and reads,
 * fdatasync, pipes (offset -1, short writes), large transfers and the
 * buffered writer. Exits 77 when the kernel has io_uring disabled. */
#include "core/util/uring.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util/time.h"
#include "tests/unit/check.h"

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

static int tmpfile_fd(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");

	snprintf(path, len, "%s/fr-uring-XXXXXX", dir ? dir : "/tmp");
	return mkostemp(path, O_CLOEXEC);
}

struct drain {
	int fd;
	unsigned char *buf;
	size_t len;
	size_t got;
};

static void *drain_pipe(void *arg)
{
	struct drain *d = arg;

	while (d->got < d->len) {
		/* Small reads so the writer sees a full pipe and short writes. */
		size_t want = d->len - d->got < 3000 ? d->len - d->got : 3000;
		ssize_t n = read(d->fd, d->buf + d->got, want);

		if (n <= 0)
			break;
		d->got += (size_t)n;
	}
	return NULL;
}

static void test_file(struct fr_uring *u)
{
	char path[256];
	int fd = tmpfile_fd(path, sizeof(path));
	enum { BIG = 9 * 1024 * 1024 + 123 };
	unsigned char *a = malloc(BIG), *b = malloc(BIG);
	ssize_t n;

	CHECK(fd >= 0, "mkostemp: %s", strerror(errno));
	if (fd < 0 || !a || !b)
		goto out;
	unlink(path);

	fill(a, BIG, 1);
	n = fr_uring_write(u, fd, a, BIG, 0);
	CHECK(n == BIG, "large positioned write returned %zd", n);
	CHECK(fr_uring_fdatasync(u, fd) == 0, "fdatasync failed");
	memset(b, 0, BIG);
	n = fr_uring_read(u, fd, b, BIG, 0);
	CHECK(n == BIG, "large read returned %zd", n);
	CHECK(memcmp(a, b, BIG) == 0, "large read differs");

	/* Positioned write in the middle, read back through pread. */
	n = fr_uring_write(u, fd, "hello", 5, 4096);
	CHECK(n == 5, "small write returned %zd", n);
	memset(b, 0, 16);
	CHECK(pread(fd, b, 5, 4096) == 5 && memcmp(b, "hello", 5) == 0,
	      "positioned write not at its offset");

	/* Reads stop at end of file. */
	n = fr_uring_read(u, fd, b, 1000, BIG - 10);
	CHECK(n == 10, "read across EOF returned %zd, want 10", n);
	n = fr_uring_read(u, fd, b, 1000, BIG + 100);
	CHECK(n == 0, "read past EOF returned %zd, want 0", n);

	/* Offset -1 writes at and advances the file position. */
	CHECK(lseek(fd, 100, SEEK_SET) == 100, "lseek");
	CHECK(fr_uring_write(u, fd, "abc", 3, -1) == 3, "write at -1");
	CHECK(fr_uring_write(u, fd, "def", 3, -1) == 3, "write at -1");
	CHECK(lseek(fd, 0, SEEK_CUR) == 106, "position not advanced by -1 writes");
	CHECK(pread(fd, b, 6, 100) == 6 && memcmp(b, "abcdef", 6) == 0,
	      "-1 writes not at the file position");
	CHECK(lseek(fd, 100, SEEK_SET) == 100, "lseek");
	memset(b, 0, 8);
	CHECK(fr_uring_read(u, fd, b, 6, -1) == 6 && memcmp(b, "abcdef", 6) == 0, "read at -1");

	/* Errors come back as -errno. */
	CHECK(fr_uring_write(u, -1, "x", 1, 0) == -EBADF, "write to bad fd");
	CHECK(fr_uring_fdatasync(u, 12345) == -EBADF, "fdatasync of bad fd");
	/* The ring still works after a failed operation. */
	CHECK(fr_uring_write(u, fd, "z", 1, 0) == 1, "write after error");
	close(fd);
out:
	free(a);
	free(b);
}

static void test_pipe(struct fr_uring *u)
{
	enum { LEN = 1024 * 1024 + 7 };
	unsigned char *a = malloc(LEN), *b = malloc(LEN);
	struct drain d;
	pthread_t th;
	int p[2];
	ssize_t n;

	if (!a || !b || pipe2(p, O_CLOEXEC) < 0) {
		CHECK(0, "setup failed");
		goto out;
	}
	fill(a, LEN, 2);
	d = (struct drain){.fd = p[0], .buf = b, .len = LEN};
	pthread_create(&th, NULL, drain_pipe, &d);
	n = fr_uring_write(u, p[1], a, LEN, -1);
	CHECK(n == LEN, "pipe write returned %zd", n);
	pthread_join(th, NULL);
	CHECK(d.got == LEN && memcmp(a, b, LEN) == 0, "pipe data differs (%zu bytes)", d.got);

	/* Reading from a pipe at -1, until EOF. */
	CHECK(write(p[1], "pipe!", 5) == 5, "write");
	close(p[1]);
	n = fr_uring_read(u, p[0], b, 100, -1);
	CHECK(n == 5 && memcmp(b, "pipe!", 5) == 0, "pipe read returned %zd", n);
	close(p[0]);
out:
	free(a);
	free(b);
}

static void test_writer(struct fr_uring *u)
{
	char path[256];
	int fd = tmpfile_fd(path, sizeof(path));
	enum { LEN = 3 * 256 * 1024 + 999 };
	struct fr_uring_writer *w = malloc(sizeof(*w));
	unsigned char *a = malloc(LEN), *b = malloc(LEN);
	size_t off = 0, step = 1;

	if (fd < 0 || !w || !a || !b) {
		CHECK(0, "setup failed");
		goto out;
	}
	unlink(path);
	fill(a, LEN, 3);
	fr_uring_writer_init(w, u, fd);
	/* Pieces of growing size, including one larger than the buffer. */
	while (off < LEN) {
		size_t n = LEN - off < step ? LEN - off : step;

		CHECK(fr_uring_writer_write(w, a + off, n) == 0, "writer write");
		off += n;
		step = step * 3 + 1;
	}
	CHECK(fr_uring_writer_flush(w) == 0, "writer flush");
	CHECK(w->written == LEN, "writer wrote %llu, want %d", (unsigned long long)w->written, LEN);
	CHECK(pread(fd, b, LEN, 0) == LEN && memcmp(a, b, LEN) == 0, "writer data differs");
	close(fd);

	/* Errors are sticky. */
	fr_uring_writer_init(w, u, fd); /* now closed */
	CHECK(fr_uring_writer_write(w, a, 300 * 1024) == -EBADF, "writer to closed fd");
	CHECK(fr_uring_writer_write(w, a, 1) == -EBADF, "writer error not sticky");
	CHECK(fr_uring_writer_flush(w) == -EBADF, "flush error not sticky");
out:
	free(w);
	free(a);
	free(b);
}

struct late_reader {
	int fd;
	unsigned char *buf;
	size_t len, got;
};

static void *late_drain(void *arg)
{
	struct late_reader *d = arg;

	sleep(3);
	while (d->got < d->len) {
		ssize_t n = read(d->fd, d->buf + d->got, d->len - d->got);

		if (n <= 0)
			break;
		d->got += (size_t)n;
	}
	return NULL;
}

/* A request that cannot complete for longer than the stall limit (a pipe
 * nobody reads for 3 s) is cancelled and finished with plain system calls,
 * which the ring keeps using afterwards: all still works. */
static void test_stall(struct fr_uring *u)
{
	enum { LEN = 512 * 1024 };
	unsigned char *a = malloc(LEN), *b = malloc(LEN);
	struct late_reader d;
	pthread_t th;
	char path[256];
	int p[2], fd;
	ssize_t n;

	if (!a || !b || pipe2(p, O_CLOEXEC) < 0) {
		CHECK(0, "setup failed");
		goto out;
	}
	fill(a, LEN, 4);
	d = (struct late_reader){.fd = p[0], .buf = b, .len = LEN};
	pthread_create(&th, NULL, late_drain, &d);
	n = fr_uring_write(u, p[1], a, LEN, -1);
	CHECK(n == LEN, "stalled pipe write returned %zd", n);
	pthread_join(th, NULL);
	CHECK(d.got == LEN && memcmp(a, b, LEN) == 0, "stalled pipe data differs (%zu bytes)",
	      d.got);
	close(p[0]);
	close(p[1]);

	fd = tmpfile_fd(path, sizeof(path));
	if (fd < 0) {
		CHECK(0, "mkostemp");
		goto out;
	}
	unlink(path);
	CHECK(fr_uring_write(u, fd, a, LEN, 0) == LEN, "write after a stall");
	CHECK(fr_uring_fdatasync(u, fd) == 0, "fdatasync after a stall");
	memset(b, 0, LEN);
	CHECK(fr_uring_read(u, fd, b, LEN, 0) == LEN && memcmp(a, b, LEN) == 0,
	      "read after a stall");
	CHECK(fr_uring_write(u, -1, "x", 1, 0) == -EBADF, "errors after a stall");
	close(fd);
out:
	free(a);
	free(b);
}

struct pacer {
	int fd;
	size_t piece;  /* bytes per read */
	long pause_ns; /* between reads */
	unsigned char *buf;
	size_t len, got;
};

static void *pace_drain(void *arg)
{
	struct pacer *d = arg;

	for (;;) {
		struct timespec ts = {.tv_nsec = d->pause_ns};
		size_t want = d->piece;
		ssize_t n;

		if (d->buf && want > d->len - d->got)
			want = d->len - d->got;
		if (want == 0)
			break;
		n = read(d->fd, d->buf ? d->buf + d->got : d->buf, want);
		if (n <= 0)
			break;
		d->got += (size_t)n;
		if (d->pause_ns)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Writes LEN bytes through a limited writer; returns the first error. */
static int limited_write(struct fr_uring_writer *w, const unsigned char *a, size_t len)
{
	int ret = 0;

	for (size_t off = 0; ret == 0 && off < len; off += 100000)
		ret = fr_uring_writer_write(w, a + off, len - off < 100000 ? len - off : 100000);
	return ret ? ret : fr_uring_writer_flush(w);
}

enum { LIMITS_LEN = 1024 * 1024 };

/* Pipes: one nobody reads, one whose reader keeps up. Returns -1 when
 * the setup failed. */
static int check_pipe_limits(struct fr_uring *u, struct fr_uring_writer *w, const unsigned char *a,
			     unsigned char *b)
{
	struct pacer d;
	pthread_t th;
	int p[2], ret;

	/* A pipe nobody reads: the writer gives up once no byte was taken
	 * for the stall time, instead of waiting for a reader forever. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		CHECK(0, "pipe");
		return -1;
	}
	fr_uring_writer_init(w, u, p[1]);
	fr_uring_writer_limit(w, 200000000LL, 60000000000LL, -1);
	ret = limited_write(w, a, LIMITS_LEN);
	CHECK(ret == -ETIMEDOUT, "unread pipe: %d, want -ETIMEDOUT", ret);
	close(p[0]);
	close(p[1]);

	/* A reader that keeps up gets every byte. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		CHECK(0, "pipe");
		return -1;
	}
	d = (struct pacer){.fd = p[0], .piece = 65536, .buf = b, .len = LIMITS_LEN};
	pthread_create(&th, NULL, pace_drain, &d);
	fr_uring_writer_init(w, u, p[1]);
	fr_uring_writer_limit(w, 10 * FR_NS_PER_S, 60000000000LL, -1);
	ret = limited_write(w, a, LIMITS_LEN);
	CHECK(ret == 0 && w->written == LIMITS_LEN, "read pipe: %d, %llu bytes", ret,
	      (unsigned long long)w->written);
	close(p[1]);
	pthread_join(th, NULL);
	CHECK(d.got == LIMITS_LEN && memcmp(a, b, LIMITS_LEN) == 0,
	      "paced pipe data differs (%zu bytes)", d.got);
	close(p[0]);
	return 0;
}

/* A FIFO opened by path, unread and read. Returns -1 when
 * the setup failed. */
static int check_fifo_limits(struct fr_uring *u, struct fr_uring_writer *w, const unsigned char *a,
			     unsigned char *b)
{
	struct pacer d;
	pthread_t th;
	char path[256];
	int p[2], fd, ret;

	/* A FIFO opened by path takes no RWF_NOWAIT: the writer reopens it
	 * non-blocking, so an unread one still times out (a plain write
	 * would block forever), and a read one gets every byte. */
	snprintf(path, sizeof(path), "/tmp/fr-test-fifo-%d", (int)getpid());
	if (mkfifo(path, 0600) < 0) {
		CHECK(0, "mkfifo");
		return -1;
	}
	p[0] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	CHECK(p[0] >= 0 && fd >= 0, "open the FIFO");
	fr_uring_writer_init(w, u, fd);
	fr_uring_writer_limit(w, 200000000LL, 60000000000LL, -1);
	ret = limited_write(w, a, LIMITS_LEN);
	CHECK(ret == -ETIMEDOUT, "unread FIFO: %d, want -ETIMEDOUT", ret);
	close(fd);
	close(p[0]);
	p[0] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	fcntl(p[0], F_SETFL, 0);
	d = (struct pacer){.fd = p[0], .piece = 65536, .buf = b, .len = LIMITS_LEN};
	pthread_create(&th, NULL, pace_drain, &d);
	fr_uring_writer_init(w, u, fd);
	fr_uring_writer_limit(w, 10 * FR_NS_PER_S, 60000000000LL, -1);
	ret = limited_write(w, a, LIMITS_LEN);
	CHECK(ret == 0 && w->written == LIMITS_LEN, "read FIFO: %d, %llu bytes", ret,
	      (unsigned long long)w->written);
	close(fd);
	pthread_join(th, NULL);
	CHECK(d.got == LIMITS_LEN && memcmp(a, b, LIMITS_LEN) == 0, "FIFO data differs (%zu bytes)",
	      d.got);
	close(p[0]);
	unlink(path);
	return 0;
}

/* A reader that trickles, and a client that hung up. Returns -1 when
 * the setup failed. */
static int check_slow_or_gone_reader(struct fr_uring *u, struct fr_uring_writer *w,
				     const unsigned char *a, unsigned char *b)
{
	struct pacer d;
	pthread_t th;
	char path[256];
	int p[2], sv[2], fd, ret;

	/* A reader that takes a little now and then never stalls the writer
	 * for long, but the total time is bounded too. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		CHECK(0, "pipe");
		return -1;
	}
	d = (struct pacer){.fd = p[0], .piece = 4096, .pause_ns = 50000000L, .buf = NULL, .len = 0};
	pthread_create(&th, NULL, pace_drain, &d);
	fr_uring_writer_init(w, u, p[1]);
	fr_uring_writer_limit(w, 10 * FR_NS_PER_S, 500000000LL, -1);
	ret = limited_write(w, a, LIMITS_LEN);
	CHECK(ret == -ETIMEDOUT, "trickling reader: %d, want -ETIMEDOUT", ret);
	close(p[1]);
	pthread_join(th, NULL);
	close(p[0]);

	/* The client hung up: the next write fails, even to a file. */
	fd = tmpfile_fd(path, sizeof(path));
	if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		CHECK(0, "setup failed");
		return -1;
	}
	unlink(path);
	close(sv[1]);
	fr_uring_writer_init(w, u, fd);
	fr_uring_writer_limit(w, 10 * FR_NS_PER_S, 60000000000LL, sv[0]);
	ret = limited_write(w, a, LIMITS_LEN);
	CHECK(ret == -ECONNRESET, "hung-up client: %d, want -ECONNRESET", ret);
	close(sv[0]);
	close(fd);
	return 0;
}

/* fr_uring_writer_limit: the reader of a pipe decides when the writer
 * moves on, so it must not be able to hold it forever. */
static void test_writer_limits(struct fr_uring *u)
{
	struct fr_uring_writer *w = malloc(sizeof(*w));
	unsigned char *a = malloc(LIMITS_LEN), *b = malloc(LIMITS_LEN);

	if (!w || !a || !b) {
		CHECK(0, "setup failed");
		goto out;
	}
	fill(a, LIMITS_LEN, 5);
	if (check_pipe_limits(u, w, a, b) < 0 || check_fifo_limits(u, w, a, b) < 0 ||
	    check_slow_or_gone_reader(u, w, a, b) < 0)
		goto out;
out:
	free(w);
	free(a);
	free(b);
}

int main(void)
{
	struct fr_uring *u;
	int ret = fr_uring_open(&u, 8);

	if (ret == -ENOSYS || ret == -EPERM) {
		fprintf(stderr, "io_uring unavailable: %s\n", strerror(-ret));
		return 77;
	}
	if (ret < 0) {
		fprintf(stderr, "fr_uring_open: %s\n", strerror(-ret));
		return 1;
	}
	test_file(u);
	test_pipe(u);
	test_writer(u);
	test_writer_limits(u);
	test_stall(u);
	test_writer_limits(u); /* the ring is degraded now: plain system calls */
	fr_uring_close(u);
	fr_uring_close(NULL);

	if (failures) {
		fprintf(stderr, "test_uring: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
