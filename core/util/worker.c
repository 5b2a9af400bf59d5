/* One-call-at-a-time worker threads with deadlines (see worker.h).
 *
 * The owner hands a call over under the worker's lock and waits on its
 * condition variable (CLOCK_MONOTONIC) until the call is done or the
 * deadline passes. An abandoned worker owns itself: when its call returns
 * it drops the call's results and frees its own structure.
 */
#include "core/util/worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "core/util/log.h"
#include "core/util/priority.h"

struct fr_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void (*fn)(void *arg); /* under lock: the call to run, NULL when idle */
	void (*drop)(void *arg);
	void *arg;
	bool done, stop, abandoned; /* under lock */
};

/* Workers abandoned and still running, in the whole process. */
static unsigned stuck;

unsigned fr_worker_stuck(void)
{
	return __atomic_load_n(&stuck, __ATOMIC_RELAXED);
}

static void worker_destroy(struct fr_worker *w)
{
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

static void *worker_main(void *p)
{
	struct fr_worker *w = p;

	/* Its calls read what users control: never above the process. */
	fr_priority_normal();
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while ((!w->fn || w->done) && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->lock);
		w->fn(w->arg);
		pthread_mutex_lock(&w->lock);
		w->done = true;
		pthread_cond_broadcast(&w->cond);
		if (w->abandoned) {
			pthread_mutex_unlock(&w->lock);
			w->drop(w->arg);
			worker_destroy(w);
			__atomic_sub_fetch(&stuck, 1, __ATOMIC_RELAXED);
			return NULL;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static struct fr_worker *worker_new(void)
{
	struct fr_worker *w = calloc(1, sizeof(*w));
	pthread_attr_t ta;
	int ret;

	if (!w)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	fr_mono_cond_init(&w->cond);
	pthread_attr_init(&ta);
	pthread_attr_setstacksize(&ta, 256 * 1024);
	ret = pthread_create(&w->thread, &ta, worker_main, w);
	pthread_attr_destroy(&ta);
	if (ret != 0) {
		worker_destroy(w);
		return NULL;
	}
	return w;
}

void fr_worker_free(struct fr_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	worker_destroy(w);
}

int fr_worker_call(struct fr_worker **wp, void (*fn)(void *arg), void (*drop)(void *arg), void *arg,
		   int64_t deadline_ns)
{
	struct fr_worker *w = *wp;
	struct timespec ts;
	int ret = 0;

	if (!w) {
		if (__atomic_load_n(&stuck, __ATOMIC_RELAXED) >= FR_WORKER_STUCK_MAX)
			return -EAGAIN;
		w = *wp = worker_new();
		if (!w)
			return -ENOMEM;
	}
	fr_mono_deadline(&ts, deadline_ns);
	pthread_mutex_lock(&w->lock);
	w->fn = fn;
	w->drop = drop;
	w->arg = arg;
	w->done = false;
	pthread_cond_broadcast(&w->cond);
	while (!w->done && ret == 0)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	if (!w->done) {
		w->abandoned = true;
		/* Under the lock: once it is released the worker may free w. */
		pthread_detach(w->thread);
		__atomic_add_fetch(&stuck, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&w->lock);
		*wp = NULL;
		return -ETIMEDOUT;
	}
	w->fn = NULL;
	pthread_mutex_unlock(&w->lock);
	return 0;
}
