/* One-call-at-a-time worker threads with deadlines (see worker.h).
 *
 * The owner hands a call over under the worker's lock and waits on its
 * condition variable (CLOCK_MONOTONIC) until the call is done or the
 * deadline passes. An abandoned worker owns itself: when its call returns
 * it drops the call's results and frees its own structure.
 *
 * A deadline in wall time is missed as well by a call the machine gave no
 * CPU to (another user's hundreds of runnable threads in the recorder's
 * scheduling group) as by one a file holds back. At the deadline the
 * owner looks: a worker that is runnable (state R) and has used less CPU
 * in the call than the deadline is waiting for a CPU, not for a file, and
 * gets the deadline again, up to BUSY_EXTRA_NS in all; a worker asleep in
 * a system call, or one that burnt its deadline's worth of CPU, is
 * abandoned as before.
 */
#include "core/util/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"

/* How much longer than its deadline a call the machine kept from a CPU
 * may take in all, and at most how many deadlines more. */
#define BUSY_EXTRA_NS (30 * FR_NS_PER_S)
#define BUSY_EXTRA_MAX 40

struct fr_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void (*fn)(void *arg); /* under lock: the call to run, NULL when idle */
	void (*drop)(void *arg);
	void *arg;
	bool done, stop, abandoned; /* under lock */
	pid_t tid;		    /* under lock: the worker's thread id, 0 until it runs */
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
	w->tid = (pid_t)syscall(SYS_gettid);
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

/* The CPU time worker w has used (ns), or -1. */
static int64_t cpu_ns(struct fr_worker *w)
{
	struct timespec ts;
	clockid_t c;

	if (pthread_getcpuclockid(w->thread, &c) != 0 || clock_gettime(c, &ts) != 0)
		return -1;
	return fr_ns_from_timespec(&ts);
}

/* Whether worker w (under its lock, in a call begun when it had used
 * `cpu0` ns of CPU) waits for a CPU rather than for a file: runnable, as
 * its own /proc/self/task/TID/stat says, having used less CPU in the call
 * than `deadline_ns`. */
static bool starved(struct fr_worker *w, int64_t cpu0, int64_t deadline_ns)
{
	char path[64], buf[512], *p;
	int64_t cpu = cpu_ns(w);
	ssize_t n;
	int fd;

	if (!w->tid || cpu0 < 0 || cpu < 0 || cpu - cpu0 >= deadline_ns)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)w->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "TID (COMM) STATE ...": the name may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'R';
}

int fr_worker_call(struct fr_worker **wp, void (*fn)(void *arg), void (*drop)(void *arg), void *arg,
		   int64_t deadline_ns)
{
	struct fr_worker *w = *wp;
	struct timespec ts;
	int64_t cpu0;
	int ret = 0, extra = 0;

	if (!w) {
		if (__atomic_load_n(&stuck, __ATOMIC_RELAXED) >= FR_WORKER_STUCK_MAX)
			return -EAGAIN;
		w = *wp = worker_new();
		if (!w)
			return -ENOMEM;
	}
	cpu0 = cpu_ns(w);
	fr_mono_deadline(&ts, deadline_ns);
	pthread_mutex_lock(&w->lock);
	w->fn = fn;
	w->drop = drop;
	w->arg = arg;
	w->done = false;
	pthread_cond_broadcast(&w->cond);
	for (;;) {
		while (!w->done && ret == 0)
			ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		if (w->done || ++extra > BUSY_EXTRA_MAX ||
		    (int64_t)extra * deadline_ns > BUSY_EXTRA_NS || !starved(w, cpu0, deadline_ns))
			break;
		fr_mono_deadline(&ts, deadline_ns);
		ret = 0;
	}
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
