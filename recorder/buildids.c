/* Build ids of mapped files, read off the ingest thread (see buildids.h).
 *
 * A queue of requests and a list of answers under one lock; one reader
 * thread. The reader owns nothing the asker frees: when fr_buildids_free()
 * gives up on a stuck reader, the reader frees the whole structure itself
 * once its read returns.
 */
#include "recorder/buildids.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/symbols.h"

#define STOP_WAIT_MS 1000

struct job {
	struct job *next;
	uint32_t pid;
	uint64_t start, end;
	struct fr_buildid_result res;
};

struct fr_buildids {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* work queued, answer posted, stop */
	struct job *queue, **queue_tail; /* under lock */
	struct job *done, **done_tail;   /* under lock */
	uint32_t pending;        /* queued or being read; under lock */
	int64_t busy_since;      /* under lock */
	bool stop, exited, orphaned; /* under lock */
};

static void free_list(struct job *j)
{
	while (j) {
		struct job *next = j->next;

		free(j->res.path);
		free(j);
		j = next;
	}
}

static void destroy(struct fr_buildids *b)
{
	free_list(b->queue);
	free_list(b->done);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

int fr_buildid_read_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path,
			   uint8_t *out, size_t cap)
{
	char buf[4200];
	int fd, pfd, ret;

	/* The mapped inode, whatever its path names today: a magic link,
	 * taken with O_PATH (no open of the file yet) and opened for reading
	 * only when it is a regular file of bounded size. */
	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	pfd = open(buf, O_PATH | O_CLOEXEC);
	if (pfd >= 0) {
		fd = fr_reopen_regular(pfd, FR_ELF_MAX_SIZE, NULL);
		close(pfd);
		if (fd < 0)
			return fd;
	} else {
		snprintf(buf, sizeof(buf), "/proc/%u/root", pid);
		fd = fr_open_untrusted(buf, path, FR_ELF_MAX_SIZE, NULL);
		if (fd < 0 && fd != -ELOOP && fd != -ENOEXEC && fd != -EFBIG)
			fd = fr_open_untrusted(NULL, path, FR_ELF_MAX_SIZE, NULL);
		if (fd < 0)
			return fd;
	}
	ret = fr_elf_build_id_fd(fd, out, cap);
	close(fd);
	return ret;
}

static void *reader_main(void *arg)
{
	struct fr_buildids *b = arg;
	bool orphaned;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct job *j;
		int n;

		while (!b->queue && !b->stop)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop)
			break;
		j = b->queue;
		b->queue = j->next;
		if (!b->queue)
			b->queue_tail = &b->queue;
		b->busy_since = fr_now_mono_ns();
		pthread_mutex_unlock(&b->lock);

		n = fr_buildid_read_mapped(j->pid, j->start, j->end, j->res.path, j->res.id,
					   sizeof(j->res.id));
		j->res.len = n > 0 ? (uint8_t)n : 0;
		j->res.err = n > 0 ? 0 : n == 0 ? -ENOENT : n;

		pthread_mutex_lock(&b->lock);
		b->busy_since = 0;
		j->next = NULL;
		*b->done_tail = j;
		b->done_tail = &j->next;
		b->pending--;
		pthread_cond_broadcast(&b->cond);
	}
	b->exited = true;
	orphaned = b->orphaned;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (orphaned)
		destroy(b);
	return NULL;
}

struct fr_buildids *fr_buildids_new(void)
{
	struct fr_buildids *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;
	int ret;

	if (!b)
		return NULL;
	b->queue_tail = &b->queue;
	b->done_tail = &b->done;
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&b->thread, NULL, reader_main, b);
	if (ret != 0) {
		destroy(b);
		errno = ret;
		return NULL;
	}
	return b;
}

void fr_buildids_free(struct fr_buildids *b)
{
	struct timespec deadline;
	int ret = 0;

	if (!b)
		return;
	fr_mono_deadline(&deadline, (int64_t)STOP_WAIT_MS * 1000000);
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	pthread_cond_broadcast(&b->cond);
	while (!b->exited && ret == 0)
		ret = pthread_cond_timedwait(&b->cond, &b->lock, &deadline);
	if (!b->exited) {
		/* Stuck in a read of a file that does not answer: leave it. */
		b->orphaned = true;
		/* Under the lock: once it is released the reader may free b. */
		pthread_detach(b->thread);
		pthread_mutex_unlock(&b->lock);
		fr_log_warn("a build id read has not returned for over %d ms; not waiting for it",
			    STOP_WAIT_MS);
		return;
	}
	pthread_mutex_unlock(&b->lock);
	pthread_join(b->thread, NULL);
	destroy(b);
}

int fr_buildids_request(struct fr_buildids *b, uint32_t pid, uint64_t start, uint64_t end,
			const char *path)
{
	struct job *j;

	pthread_mutex_lock(&b->lock);
	if (b->pending >= FR_BUILDIDS_MAX_PENDING) {
		pthread_mutex_unlock(&b->lock);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&b->lock);
	j = calloc(1, sizeof(*j));
	if (!j || !(j->res.path = strdup(path))) {
		free(j);
		return -ENOMEM;
	}
	j->pid = pid;
	j->start = start;
	j->end = end;
	pthread_mutex_lock(&b->lock);
	*b->queue_tail = j;
	b->queue_tail = &j->next;
	b->pending++;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return 0;
}

int fr_buildids_take(struct fr_buildids *b, struct fr_buildid_result *out)
{
	struct job *j;

	pthread_mutex_lock(&b->lock);
	j = b->done;
	if (j) {
		b->done = j->next;
		if (!b->done)
			b->done_tail = &b->done;
	}
	pthread_mutex_unlock(&b->lock);
	if (!j)
		return 0;
	*out = j->res;
	free(j);
	return 1;
}

int fr_buildids_wait(struct fr_buildids *b, int timeout_ms)
{
	struct timespec deadline;
	int ret = 0;

	fr_mono_deadline(&deadline, (int64_t)timeout_ms * 1000000);
	pthread_mutex_lock(&b->lock);
	while (b->pending && ret == 0)
		ret = pthread_cond_timedwait(&b->cond, &b->lock, &deadline);
	ret = b->pending ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&b->lock);
	return ret;
}

void fr_buildids_state(struct fr_buildids *b, uint32_t *pending, int64_t *busy_since_ns)
{
	pthread_mutex_lock(&b->lock);
	*pending = b->pending;
	*busy_since_ns = b->busy_since;
	pthread_mutex_unlock(&b->lock);
}
