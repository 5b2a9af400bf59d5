/* Build ids of mapped files, read off the ingest thread (see buildids.h).
 *
 * A queue of requests and a list of answers under one lock, and a reader
 * thread serving the queue. A read that takes longer than `stuck_ns` (a
 * file on a FUSE mount that never answers) is given up: its request is
 * answered -ETIMEDOUT, its reader left behind to finish alone, and a new
 * reader takes the rest of the queue, so one such file does not stop
 * every later build id. At most STUCK_MAX readers are left behind at
 * once; beyond that requests wait. The structure is freed by whichever
 * of the owner and the readers lets go of it last.
 */
#include "recorder/tracking/buildids.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/symbols/elf_image.h"
#include "core/util/time.h"
#include "recorder/tracking/proc.h"

#define STOP_WAIT_MS 1000
#define STUCK_NS_DEFAULT (5 * FR_NS_PER_S)
#define STUCK_MAX 8

struct job {
	struct job *next;
	uint32_t pid;
	uint64_t start, end;
	struct fr_buildid_result res;
};

struct reader {
	struct fr_buildids *b;
	struct job *job;    /* under b->lock: being read */
	int64_t busy_since; /* under b->lock; 0 when idle */
	bool abandoned;	    /* under b->lock */
};

struct fr_buildids {
	pthread_mutex_t lock;
	pthread_cond_t cond;		 /* work queued, answer posted, a reader left */
	struct job *queue, **queue_tail; /* under lock */
	struct job *done, **done_tail;	 /* under lock */
	uint32_t pending;		 /* queued or being read by `cur`; under lock */
	struct reader *cur;		 /* the reader serving the queue; under lock */
	unsigned refs;			 /* the owner's and each reader's; under lock */
	unsigned stuck;			 /* readers left behind, still reading */
	int64_t stuck_ns;
	bool stop; /* under lock */
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

/* Appends an answer. Under lock. */
static void post(struct fr_buildids *b, struct job *j)
{
	j->next = NULL;
	*b->done_tail = j;
	b->done_tail = &j->next;
	b->pending--;
	pthread_cond_broadcast(&b->cond);
}

int fr_buildid_read_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path,
			   uint8_t *out, size_t cap)
{
	int fd = fr_proc_open_mapped(pid, start, end, path, FR_ELF_MAX_SIZE, NULL);
	int ret;

	if (fd < 0)
		return fd;
	ret = fr_elf_build_id_fd(fd, out, cap);
	close(fd);
	return ret;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct fr_buildids *b = r->b;
	bool last;

	/* Started by the ingest thread (a reader stuck on a file is
	 * replaced), it reads users' files: not at the ingest thread's
	 * priority. */
	fr_priority_normal();
	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct job *j;
		int n;

		while (!b->queue && !b->stop && !r->abandoned)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop || r->abandoned)
			break;
		j = b->queue;
		b->queue = j->next;
		if (!b->queue)
			b->queue_tail = &b->queue;
		r->job = j;
		r->busy_since = fr_now_mono_ns();
		pthread_mutex_unlock(&b->lock);

		n = fr_buildid_read_mapped(j->pid, j->start, j->end, j->res.path, j->res.id,
					   sizeof(j->res.id));
		j->res.len = n > 0 ? (uint8_t)n : 0;
		j->res.err = n > 0 ? 0 : n == 0 ? -ENOENT : n;

		pthread_mutex_lock(&b->lock);
		r->job = NULL;
		r->busy_since = 0;
		if (r->abandoned) {
			/* Answered -ETIMEDOUT already. */
			free(j->res.path);
			free(j);
			break;
		}
		post(b, j);
	}
	if (r->abandoned)
		b->stuck--;
	if (b->cur == r)
		b->cur = NULL;
	last = --b->refs == 0;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	free(r);
	if (last)
		destroy(b);
	return NULL;
}

/* Starts a reader to serve the queue. Under lock. Returns 0 or -errno. */
static int start_reader(struct fr_buildids *b)
{
	struct reader *r = calloc(1, sizeof(*r));
	pthread_attr_t ta;
	pthread_t th;
	int ret;

	if (!r)
		return -ENOMEM;
	r->b = b;
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &ta, reader_main, r);
	pthread_attr_destroy(&ta);
	if (ret != 0) {
		free(r);
		return -ret;
	}
	b->refs++;
	b->cur = r;
	return 0;
}

/* Gives up a read that has taken longer than stuck_ns: its request is
 * answered -ETIMEDOUT and a new reader takes the queue. Under lock. */
static void check_stuck(struct fr_buildids *b)
{
	struct reader *r = b->cur;
	struct job *t;

	if (!r || !r->busy_since || fr_now_mono_ns() - r->busy_since <= b->stuck_ns ||
	    b->stuck >= STUCK_MAX || b->stop)
		return;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->res.path = strdup(r->job->res.path))) {
		free(t);
		return;
	}
	t->res.err = -ETIMEDOUT;
	fr_log_warn("reading the build id of %s has taken over %lld ms; going on without it",
		    t->res.path, (long long)(b->stuck_ns / 1000000));
	post(b, t);
	r->abandoned = true;
	b->stuck++;
	b->cur = NULL;
	if (start_reader(b) < 0)
		fr_log_warn("cannot start another build id reader");
}

struct fr_buildids *fr_buildids_new(void)
{
	struct fr_buildids *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return NULL;
	b->queue_tail = &b->queue;
	b->done_tail = &b->done;
	b->stuck_ns = STUCK_NS_DEFAULT;
	b->refs = 1;
	fr_mutex_init_pi(&b->lock);
	fr_mono_cond_init(&b->cond);
	pthread_mutex_lock(&b->lock);
	ret = start_reader(b);
	pthread_mutex_unlock(&b->lock);
	if (ret < 0) {
		destroy(b);
		errno = -ret;
		return NULL;
	}
	return b;
}

void fr_buildids_set_stuck(struct fr_buildids *b, int64_t ns)
{
	pthread_mutex_lock(&b->lock);
	b->stuck_ns = ns;
	pthread_mutex_unlock(&b->lock);
}

void fr_buildids_free(struct fr_buildids *b)
{
	struct timespec deadline;
	bool last;
	int ret = 0;

	if (!b)
		return;
	fr_mono_deadline(&deadline, (int64_t)STOP_WAIT_MS * 1000000);
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	pthread_cond_broadcast(&b->cond);
	while (b->cur && ret == 0)
		ret = pthread_cond_timedwait(&b->cond, &b->lock, &deadline);
	if (b->cur)
		fr_log_warn("a build id read has not returned for over %d ms; not waiting for it",
			    STOP_WAIT_MS);
	/* Readers still reading hold their own references: the last one
	 * to let go frees the structure. */
	last = --b->refs == 0;
	pthread_mutex_unlock(&b->lock);
	if (last)
		destroy(b);
}

int fr_buildids_request(struct fr_buildids *b, uint32_t pid, uint64_t start, uint64_t end,
			const char *path)
{
	struct job *j;

	pthread_mutex_lock(&b->lock);
	check_stuck(b);
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
	check_stuck(b);
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
	int64_t end = fr_now_mono_ns() + (int64_t)timeout_ms * 1000000;
	int ret;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct timespec ts;
		int64_t left;

		check_stuck(b);
		left = end - fr_now_mono_ns();
		if (!b->pending || left <= 0)
			break;
		/* Woken at least every 50 ms to give up a stuck read. */
		fr_mono_deadline(&ts, left < 50000000 ? left : 50000000);
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
	}
	ret = b->pending ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&b->lock);
	return ret;
}

void fr_buildids_state(struct fr_buildids *b, uint32_t *pending, int64_t *busy_since_ns)
{
	pthread_mutex_lock(&b->lock);
	*pending = b->pending;
	*busy_since_ns = b->cur ? b->cur->busy_since : 0;
	pthread_mutex_unlock(&b->lock);
}
