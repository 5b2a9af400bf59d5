/* Scheduling priorities of the recorder's threads (core/util/priority.h).
 * On Linux, setpriority(PRIO_PROCESS, TID) sets one thread's nice value. */
#include "core/util/priority.h"

#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/util/time.h"

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

static int base_nice;

static id_t self(void)
{
	return (id_t)syscall(SYS_gettid);
}

void fr_priority_init(void)
{
	base_nice = fr_priority_nice();
}

int fr_priority_nice(void)
{
	int n;

	errno = 0;
	n = getpriority(PRIO_PROCESS, self());
	return n == -1 && errno ? 0 : n;
}

int fr_priority_raise(void)
{
	int want = base_nice - FR_PRIORITY_RAISE;

	if (want < -20)
		want = -20;
	if (fr_priority_nice() <= want)
		return 0;
	return setpriority(PRIO_PROCESS, self(), want) < 0 ? -errno : 0;
}

void fr_priority_normal(void)
{
	if (fr_priority_nice() < base_nice)
		(void)setpriority(PRIO_PROCESS, self(), base_nice);
}

int fr_priority_realtime(void)
{
	struct sched_param sp = {.sched_priority = 1};

	return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0 ? -errno : 0;
}

void fr_priority_not_realtime(void)
{
	struct sched_param sp = {.sched_priority = 0};

	(void)sched_setscheduler(0, SCHED_OTHER, &sp);
}

int fr_priority_is_realtime(void)
{
	int p = sched_getscheduler(0);

	return p >= 0 &&
	       ((p & ~SCHED_RESET_ON_FORK) == SCHED_FIFO || (p & ~SCHED_RESET_ON_FORK) == SCHED_RR);
}

int64_t fr_priority_cpu_ns(void)
{
	return fr_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

int fr_mutex_init_pi(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int ret;

	pthread_mutexattr_init(&a);
	ret = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	if (ret == 0)
		ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	if (ret != 0)
		ret = pthread_mutex_init(m, NULL);
	return -ret;
}
