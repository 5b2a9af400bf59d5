/* The ring's writer thread: a FIFO of sealed chunks and flush barriers
 * from the ingest thread, appended to the ring in order (see
 * recorder/ingest/writer.h).
 *
 * Invariants:
 * - Only this thread appends to the ring or erases expired data (after
 *   it started).
 * - barrier_done only grows, and only after every chunk queued before
 *   that barrier was appended (or failed to be: a failed append is
 *   counted and logged, and the barrier still completes).
 */
#include "recorder/ingest/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"

/* Time an append may spend counting lost samples of chunks not counted
 * yet (at start, those the recorder found in the ring). */
#define LOSSES_BUDGET_NS (100 * 1000000LL)

struct fr_writer_item {
	struct fr_writer_item *next;
	void *chunk; /* NULL for a pure barrier */
	size_t len;
	uint64_t barrier; /* non-zero: barrier generation completed after this item */
};

void fr_writer_init(struct fr_writer *w, int64_t max_age_ns)
{
	memset(w, 0, sizeof(*w));
	w->max_age_ns = max_age_ns;
	w->queue_max = FR_WRITER_QUEUE_MAX;
	{
		const char *e = getenv("FLIGHTREC_WRITER_QUEUE");
		char *end;
		unsigned long long v = e ? strtoull(e, &end, 10) : 0;

		if (e && *e && !*end && v >= 4096 && v < FR_WRITER_QUEUE_MAX)
			w->queue_max = (size_t)v;
	}
	fr_ring_losses_init(&w->losses);
	fr_mutex_init_pi(&w->lock);
	fr_mono_cond_init(&w->cond);
}

void fr_writer_enqueue(struct fr_writer *w, void *chunk, size_t len, uint64_t barrier)
{
	struct fr_writer_item *it = calloc(1, sizeof(*it));
	void *dropped = NULL;

	if (!it) {
		/* A lost barrier only makes its attach wait out its timeout. */
		free(chunk);
		__atomic_add_fetch(&w->chunks_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_lock(&w->lock);
	if (chunk && w->queued_bytes + len > w->queue_max) {
		/* The disk is not keeping up: keep the daemon's memory bounded. */
		dropped = chunk;
		chunk = NULL;
	}
	if (chunk || barrier) {
		it->chunk = chunk;
		it->len = len;
		it->barrier = barrier;
		if (chunk)
			w->queued_bytes += len;
		if (w->tail)
			w->tail->next = it;
		else
			w->head = it;
		w->tail = it;
		it = NULL;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	free(it);
	if (dropped)
		fr_writer_drop(w, dropped);
}

bool fr_writer_has_room(struct fr_writer *w, size_t len)
{
	bool room;

	pthread_mutex_lock(&w->lock);
	room = w->queued_bytes + len <= w->queue_max;
	pthread_mutex_unlock(&w->lock);
	return room;
}

void fr_writer_drop(struct fr_writer *w, void *chunk)
{
	__atomic_add_fetch(&w->chunks_dropped, 1, __ATOMIC_RELAXED);
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
			   "ring writes are falling behind; dropping a chunk (its samples are "
			   "counted lost)");
	free(chunk);
}

void fr_writer_expire(struct fr_writer *w)
{
	int64_t max_age = __atomic_load_n(&w->max_age_ns, __ATOMIC_RELAXED);
	int ret;

	if (max_age <= 0)
		return;
	ret = fr_ring_expire(w->ring, fr_now_real_ns() - max_age);

	if (ret < 0)
		fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S,
				   "cannot erase expired data in %s: %s", fr_ring_path(w->ring),
				   strerror(-ret));
}

/* Whether the writer is stuck: an append has taken over `stall_ns`, or
 * chunks wait while nothing was appended for that long. */
int fr_writer_stalled(struct fr_writer *w, int64_t stall_ns, size_t *queued)
{
	int64_t since = __atomic_load_n(&w->append_since_mono, __ATOMIC_RELAXED);
	int64_t last = __atomic_load_n(&w->last_append_real, __ATOMIC_RELAXED);

	pthread_mutex_lock(&w->lock);
	*queued = w->queued_bytes;
	pthread_mutex_unlock(&w->lock);
	return (since && fr_now_mono_ns() - since > stall_ns) ||
	       (*queued && last && fr_now_real_ns() - last > stall_ns);
}

int fr_writer_error(struct fr_writer *w, int64_t *since)
{
	int err = __atomic_load_n(&w->error, __ATOMIC_ACQUIRE);

	*since = err ? __atomic_load_n(&w->error_since_real, __ATOMIC_RELAXED) : 0;
	return err;
}

/* Keeps the error state status and attach report: a run of appends the
 * disk refuses (a file system gone read-only after an error, EIO) starts
 * with its first failure, logged, and ends, logged too, with the first
 * append that succeeds. A chunk the ring refuses for itself (too large,
 * not a chunk) or a want of memory says nothing of the disk. */
static void note_result(struct fr_writer *w, int ret)
{
	int64_t since = __atomic_load_n(&w->error_since_real, __ATOMIC_RELAXED);

	if (ret == -EFBIG || ret == -EBADMSG || ret == -ENOMEM)
		return;
	if (ret < 0 && !since) {
		__atomic_store_n(&w->error_since_real, fr_now_real_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&w->error, -ret, __ATOMIC_RELEASE);
		fr_log_err("cannot write the ring %s: %s; what is recorded from now on is lost "
			   "until it can",
			   fr_ring_path(w->ring), strerror(-ret));
	} else if (ret < 0) {
		/* The cause can change within one run: ext4 fails the write
		 * that finds its error with EIO, then remounts read-only; the
		 * log says both, as status does the latest */
		int prev = __atomic_exchange_n(&w->error, -ret, __ATOMIC_ACQ_REL);

		if (prev != -ret)
			fr_log_err("cannot write the ring %s: %s now (was: %s)",
				   fr_ring_path(w->ring), strerror(-ret), strerror(prev));
	} else if (since) {
		__atomic_store_n(&w->error, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&w->error_since_real, 0, __ATOMIC_RELAXED);
		fr_log_info("the ring %s is written again after %.1f s of failed writes",
			    fr_ring_path(w->ring), (double)(fr_now_real_ns() - since) / 1e9);
	}
}

/* Appends one chunk, outside the lock. */
static void store(struct fr_writer *w, struct fr_writer_item *it)
{
	int ret;

	__atomic_store_n(&w->append_since_mono, fr_now_mono_ns(), __ATOMIC_RELAXED);
	ret = fr_ring_append(w->ring, it->chunk, it->len);
	__atomic_store_n(&w->append_since_mono, 0, __ATOMIC_RELAXED);
	if (ret == 0)
		__atomic_store_n(&w->last_append_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	note_result(w, ret);
	if (ret < 0) {
		__atomic_add_fetch(&w->write_errors, 1, __ATOMIC_RELAXED);
		fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S, "cannot store a chunk in %s: %s",
				   fr_ring_path(w->ring), strerror(-ret));
	}
	free(it->chunk);
	fr_writer_expire(w);
	/* Chunks found at start are counted a slice per append (decoding
	 * each), so the first appends are not held up for long */
	if (fr_ring_losses_update(&w->losses, w->ring, LOSSES_BUDGET_NS) < 0)
		fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S,
				   "out of memory counting the ring's lost samples");
}

static void *writer_main(void *arg)
{
	struct fr_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct fr_writer_item *it;

		while (!w->head && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->head)
			break;
		it = w->head;
		w->head = it->next;
		if (!w->head)
			w->tail = NULL;
		if (it->chunk)
			w->queued_bytes -= it->len;
		pthread_mutex_unlock(&w->lock);

		if (it->chunk)
			store(w, it);

		pthread_mutex_lock(&w->lock);
		if (it->barrier > w->barrier_done) {
			w->barrier_done = it->barrier;
			pthread_cond_broadcast(&w->cond);
		}
		free(it);
	}
	pthread_mutex_unlock(&w->lock);
	fr_ring_sync(w->ring);
	return NULL;
}

int fr_writer_start(struct fr_writer *w, struct fr_ring *ring)
{
	int ret;

	w->ring = ring;
	fr_writer_expire(w); /* before the thread exists, so no race */
	ret = pthread_create(&w->thread, NULL, writer_main, w);
	if (ret)
		return -ret;
	/* Named, so that a stalled append is found in `top -H` and stack dumps. */
	pthread_setname_np(w->thread, "fr-writer");
	w->started = 1;
	return 0;
}

uint64_t fr_writer_barrier_ask(struct fr_writer *w)
{
	uint64_t target;

	pthread_mutex_lock(&w->lock);
	target = ++w->barrier_req;
	pthread_mutex_unlock(&w->lock);
	return target;
}

uint64_t fr_writer_barrier_asked(struct fr_writer *w)
{
	uint64_t req;

	pthread_mutex_lock(&w->lock);
	req = w->barrier_req;
	pthread_mutex_unlock(&w->lock);
	return req;
}

int fr_writer_barrier_wait(struct fr_writer *w, uint64_t target, int timeout_ms)
{
	struct timespec deadline;
	int ret = 0;

	fr_mono_deadline(&deadline, timeout_ms * FR_NS_PER_MS);
	pthread_mutex_lock(&w->lock);
	while (w->barrier_done < target && ret == 0)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &deadline);
	pthread_mutex_unlock(&w->lock);
	return ret == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void fr_writer_describe_pending(struct fr_writer *w, char *buf, size_t len)
{
	int64_t since = __atomic_load_n(&w->append_since_mono, __ATOMIC_RELAXED);
	struct timespec ts;
	size_t chunks = 0, bytes = 0;
	int locked;

	/* Not forever: whoever asks is leaving whatever holds it. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	locked = pthread_mutex_timedlock(&w->lock, &ts) == 0;
	if (locked) {
		for (struct fr_writer_item *it = w->head; it; it = it->next)
			chunks += it->chunk != NULL;
		bytes = w->queued_bytes;
		pthread_mutex_unlock(&w->lock);
	}
	if (locked)
		snprintf(buf, len, "%zu chunks (%zu bytes) queued for the ring", chunks, bytes);
	else
		snprintf(buf, len, "the chunks queued for the ring (their count unknown)");
	if (since)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 ", and the one an append has been writing for %.1f s",
			 (double)(fr_now_mono_ns() - since) / 1e9);
}

void fr_writer_stop(struct fr_writer *w)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->started = 0;
}

void fr_writer_fini(struct fr_writer *w)
{
	while (w->head) {
		struct fr_writer_item *it = w->head;

		w->head = it->next;
		free(it->chunk);
		free(it);
	}
	w->tail = NULL;
	fr_ring_losses_fini(&w->losses);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}
