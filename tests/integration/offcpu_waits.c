/* A program whose threads wait in libc's epoll_wait, poll and
 * pthread_cond_timedwait (a futex) under functions of its own, built
 * without frame pointers (and once more with them), for offcpu_vs_perf.sh:
 *
 *   offcpu_waits SECONDS [DELAY | -]
 *
 * After sleeping DELAY seconds (default 0), or with "-" once a line came
 * on standard input (so a profiler attached to its pid sees all of its
 * waits), two threads wait until SECONDS have passed:
 *
 *   events: events_round -> wait_events  -> epoll_wait   (twice a round)
 *                        -> wait_socket  -> poll         (once a round)
 *   jobs:   jobs_round   -> wait_job     -> pthread_cond_timedwait
 *
 * Every wait is a 5 ms timeout (nothing ever arrives: the epoll set and
 * the polled pipe stay empty, the condition is never signalled, each
 * thread has its own), so every wait is one switch out of at least the
 * recorder's min_wait (1 ms) and shares by count are known by
 * construction: events_round and jobs_round half each, wait_events a
 * third, wait_socket a sixth, wait_job a half. At exit it prints
 * "pid=PID waits=N" (the workers' waits), then "under FUNCTION N" for
 * each function: how many of those waits were under it.
 *
 * The functions are real frames at -O2: noinline and noclone, each does
 * something with its callee's result (no tail calls), and no two have the
 * same body (no identical-code folding). */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 5

static volatile long sink;
static volatile int stop;
static long n_epoll, n_poll, n_cond;

struct events {
	int epfd, rfd;
};

struct jobs {
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

__attribute__((noinline, noclone)) int wait_events(struct events *e);
__attribute__((noinline, noclone)) int wait_events(struct events *e)
{
	struct epoll_event ev;
	int n = epoll_wait(e->epfd, &ev, 1, WAIT_MS);

	sink += n + 1;
	return n;
}

__attribute__((noinline, noclone)) int wait_socket(struct events *e);
__attribute__((noinline, noclone)) int wait_socket(struct events *e)
{
	struct pollfd p = {.fd = e->rfd, .events = POLLIN};
	int n = poll(&p, 1, WAIT_MS);

	sink += n + 2;
	return n;
}

__attribute__((noinline, noclone)) void events_round(struct events *e);
__attribute__((noinline, noclone)) void events_round(struct events *e)
{
	sink += wait_events(e);
	sink += wait_events(e);
	sink += wait_socket(e);
	n_epoll += 2;
	n_poll++;
}

__attribute__((noinline, noclone)) int wait_job(struct jobs *j);
__attribute__((noinline, noclone)) int wait_job(struct jobs *j)
{
	struct timespec until;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += WAIT_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&j->mu);
	ret = pthread_cond_timedwait(&j->cv, &j->mu, &until);
	pthread_mutex_unlock(&j->mu);
	sink += ret + 3;
	return ret;
}

__attribute__((noinline, noclone)) void jobs_round(struct jobs *j);
__attribute__((noinline, noclone)) void jobs_round(struct jobs *j)
{
	sink += wait_job(j);
	n_cond++;
}

static void *events_main(void *arg)
{
	while (!stop)
		events_round(arg);
	return NULL;
}

static void *jobs_main(void *arg)
{
	while (!stop)
		jobs_round(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	int go_line = argc > 2 && strcmp(argv[2], "-") == 0;
	double seconds = argc > 1 ? atof(argv[1]) : 5,
	       delay = argc > 2 && !go_line ? atof(argv[2]) : 0;
	struct timespec d = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
	char line[64];
	struct events e;
	struct jobs j;
	pthread_condattr_t ca;
	pthread_t te, tj;
	int fds[2];

	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	if (go_line && !fgets(line, sizeof(line), stdin))
		return 1;
	nanosleep(&d, NULL);
	e.epfd = epoll_create1(0);
	if (e.epfd < 0 || pipe(fds) < 0) {
		perror("epoll_create1 or pipe");
		return 1;
	}
	e.rfd = fds[0];
	pthread_mutex_init(&j.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j.cv, &ca);
	pthread_create(&te, NULL, events_main, &e);
	pthread_setname_np(te, "events");
	pthread_create(&tj, NULL, jobs_main, &j);
	pthread_setname_np(tj, "jobs");
	d.tv_sec = (time_t)seconds;
	d.tv_nsec = (long)((seconds - (time_t)seconds) * 1e9);
	nanosleep(&d, NULL);
	stop = 1;
	pthread_join(te, NULL);
	pthread_join(tj, NULL);
	printf("pid=%d waits=%ld\n", (int)getpid(), n_epoll + n_poll + n_cond);
	printf("under events_round %ld\nunder wait_events %ld\nunder wait_socket %ld\n"
	       "under jobs_round %ld\nunder wait_job %ld\n",
	       n_epoll + n_poll, n_epoll, n_poll, n_cond, n_cond);
	return 0;
}
