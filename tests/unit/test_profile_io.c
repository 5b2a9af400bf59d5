/* fr_profile_write_fd: the profile reaches the descriptor whole (the
 * writer is flushed), the output limits apply (a reader that takes nothing
 * and a client that hung up both end the write), and a failure of the
 * query is named in `err`. The window's contents are test_profile.c's;
 * here an empty ring gives a small, fixed profile. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/compress.h"
#include "core/util/fs.h"
#include "core/pprof/pprof_read.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/util/time.h"
#include "core/util/uring.h"
#include "tests/unit/check.h"

static char dir[64];

struct mem {
	unsigned char *buf;
	size_t len;
};

static int sink_mem(void *arg, const void *buf, size_t len)
{
	struct mem *m = arg;
	unsigned char *p = realloc(m->buf, m->len + len);

	if (!p)
		return -ENOMEM;
	memcpy(p + m->len, buf, len);
	m->buf = p;
	m->len += len;
	return 0;
}

static void init_request(struct fr_profile_request *req)
{
	memset(req, 0, sizeof(*req));
	req->t1 = 1795000000000000000LL;
	req->t0 = req->t1 - 10 * FR_NS_PER_S;
	req->version = "test";
}

/* Into a regular file: what fr_profile_write() gives a memory sink,
 * byte for byte, and *written says how much. */
static void test_file(struct fr_ring *ring)
{
	struct fr_profile_request req;
	struct fr_profile_result res;
	struct fr_pprof_data *d = NULL;
	struct mem want = {0};
	char path[128], err[512];
	unsigned char *got = NULL;
	void *raw = NULL;
	size_t raw_len = 0;
	uint64_t written = 0;
	struct stat st;
	int fd, ret;

	init_request(&req);
	ret = fr_profile_write(ring, &req, sink_mem, &want, &res, err, sizeof(err));
	CHECK(ret == 0 && want.len > 0, "fr_profile_write: %d %s", ret, err);
	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd < 0)
		goto out;
	ret = fr_profile_write_fd(ring, &req, fd, NULL, &res, &written, err, sizeof(err));
	CHECK(ret == 0, "fr_profile_write_fd: %d %s", ret, err);
	CHECK(written == want.len && res.bytes == want.len,
	      "wrote %llu bytes (result says %llu), want %zu", (unsigned long long)written,
	      (unsigned long long)res.bytes, want.len);
	CHECK(fstat(fd, &st) == 0 && (size_t)st.st_size == want.len,
	      "the file holds %lld bytes, want %zu", (long long)st.st_size, want.len);
	got = malloc(want.len);
	CHECK(got && pread(fd, got, want.len, 0) == (ssize_t)want.len &&
		      memcmp(got, want.buf, want.len) == 0,
	      "the file differs from the profile");
	CHECK(fr_gunzip(got, want.len, &raw, &raw_len) == 0 &&
		      fr_pprof_read(raw, raw_len, &d) == 0 && d->ntypes == 2,
	      "the file is not a profile of samples and cpu");
	close(fd);
out:
	fr_pprof_data_free(d);
	free(raw);
	free(got);
	free(want.buf);
}

/* A pipe whose reader takes nothing: the stall limit ends the write. */
static void test_stall(struct fr_ring *ring)
{
	struct fr_profile_limits limits = {
		.stall_ns = 200000000LL,
		.total_ns = 60000000000LL,
		.hangup_fd = -1,
	};
	struct fr_profile_request req;
	struct fr_profile_result res;
	char err[512], junk[4096];
	uint64_t written = 1;
	int p[2], ret;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		CHECK(0, "pipe2: %s", strerror(errno));
		return;
	}
	/* Full before the profile starts: not one of its bytes fits. */
	memset(junk, 'x', sizeof(junk));
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	init_request(&req);
	ret = fr_profile_write_fd(ring, &req, p[1], &limits, &res, &written, err, sizeof(err));
	CHECK(ret == -ETIMEDOUT, "a pipe nobody reads: %d, want -ETIMEDOUT (%s)", ret, err);
	CHECK(written == 0, "%llu bytes written into a full pipe", (unsigned long long)written);
	close(p[0]);
	close(p[1]);
}

/* The client hung up: the write ends, even into a file. */
static void test_hangup(struct fr_ring *ring)
{
	struct fr_profile_limits limits = {
		.stall_ns = 10 * FR_NS_PER_S,
		.total_ns = 60000000000LL,
	};
	struct fr_profile_request req;
	struct fr_profile_result res;
	char path[128], err[512];
	uint64_t written = 0;
	int sv[2], fd, ret;

	snprintf(path, sizeof(path), "%s/hangup.pb.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		CHECK(0, "setup: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(sv[1]);
	limits.hangup_fd = sv[0];
	init_request(&req);
	ret = fr_profile_write_fd(ring, &req, fd, &limits, &res, &written, err, sizeof(err));
	CHECK(ret == -ECONNRESET, "a hung-up client: %d, want -ECONNRESET (%s)", ret, err);
	close(sv[0]);
	close(fd);
}

/* A request the query refuses: its message, and nothing written. */
static void test_bad_request(struct fr_ring *ring)
{
	struct fr_profile_request req;
	struct fr_profile_result res;
	char path[128], err[512];
	uint64_t written = 1;
	struct stat st;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/bad.pb.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	init_request(&req);
	req.nevents = FR_LIMIT_EVENTS + 1;
	ret = fr_profile_write_fd(ring, &req, fd, NULL, &res, &written, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "at most") != NULL, "too many events: %d %s", ret, err);
	CHECK(written == 0 && fstat(fd, &st) == 0 && st.st_size == 0,
	      "a refused request wrote %llu bytes", (unsigned long long)written);
	close(fd);
}

int main(void)
{
	char ringpath[128], err[512], cmd[128];
	struct fr_ring *ring = NULL;
	struct fr_uring *u = NULL;
	int ret = fr_uring_open(&u, 8);

	fr_uring_close(u);
	if (ret == -ENOSYS || ret == -EPERM) {
		fprintf(stderr, "io_uring unavailable: %s\n", strerror(-ret));
		return 77;
	}
	snprintf(dir, sizeof(dir), "/tmp/fr-test-profile-io-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(ringpath, sizeof(ringpath), "%s/ring", dir);
	ret = fr_ring_open(&ring, ringpath, 8u << 20, 256u << 10, FR_RING_CREATE, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "fr_ring_open: %d %s\n", ret, err);
		return 1;
	}
	test_file(ring);
	test_stall(ring);
	test_hangup(ring);
	test_bad_request(ring);
	fr_ring_close(ring);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return failures ? 1 : 0;
}
