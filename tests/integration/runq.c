/* Threads that keep one CPU busy and one that has to wait for it, for
 * runqueue.sh:
 *
 *   runq SECONDS [CPU]
 *
 * Two threads spin, pinned to CPU (default 0), and a third, "periodic",
 * pinned to the same CPU, sleeps 2 ms then spins ~1 ms of its own CPU
 * time, in a loop: each time it is woken it waits in the run queue for one
 * of the spinners to give the CPU up, and it is preempted while it spins.
 * As it starts it prints "pid=PID periodic=TID" and flushes; it stops
 * after SECONDS. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;
static volatile int stop;
static int cpu;
static pid_t tid_periodic;
static pthread_barrier_t started;

static long now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *spinner(void *arg)
{
	long x = 0;

	(void)arg;
	if (pin() < 0)
		abort();
	pthread_barrier_wait(&started);
	while (!stop)
		for (int i = 0; i < 100000; i++)
			x = x * 7 + i;
	sink = x;
	return NULL;
}

__attribute__((noinline, noclone)) void spin_a_while(void);
__attribute__((noinline, noclone)) void spin_a_while(void)
{
	long until = now_ns(CLOCK_THREAD_CPUTIME_ID) + 1000000, x = sink;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < until)
		for (int i = 0; i < 1000; i++)
			x = x * 7 + i;
	sink = x + 1;
}

static void *periodic(void *arg)
{
	struct timespec ts = {0, 2000000};

	(void)arg;
	tid_periodic = (pid_t)syscall(SYS_gettid);
	if (pin() < 0)
		abort();
	pthread_barrier_wait(&started);
	while (!stop) {
		nanosleep(&ts, NULL);
		spin_a_while();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*const fns[])(void *) = {spinner, spinner, periodic};
	static const char *const names[] = {"spinner", "spinner", "periodic"};
	pthread_t th[3];
	long secs = argc > 1 ? atol(argv[1]) : 10;
	struct timespec ts;

	cpu = argc > 2 ? atoi(argv[2]) : 0;
	if (pthread_barrier_init(&started, NULL, 4) != 0)
		return 1;
	for (int i = 0; i < 3; i++) {
		if (pthread_create(&th[i], NULL, fns[i], NULL) != 0)
			return 1;
		pthread_setname_np(th[i], names[i]);
	}
	pthread_barrier_wait(&started);
	printf("pid=%d periodic=%d\n", (int)getpid(), (int)tid_periodic);
	fflush(stdout);
	ts.tv_sec = secs;
	ts.tv_nsec = 0;
	nanosleep(&ts, NULL);
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	return 0;
}
