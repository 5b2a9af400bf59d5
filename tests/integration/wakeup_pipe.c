/* Threads that wait for others, and one woken by a timer, for
 * wakeup_pipe.sh, built without frame pointers (as distributions build):
 *
 *   wakeup_pipe SECONDS
 *
 * runs, until SECONDS have passed:
 *
 *   producer: produce_item computes ~2 ms, then writes a byte into a pipe
 *             (and sleeps 2 ms, so that it does not take a CPU whole);
 *   consumer: blocks in read() on that pipe (its waits, ~4 ms each, are
 *             ended by produce_item's write);
 *   signaler: every ~3 ms (a nanosleep), signal_ready sets a flag under a
 *             mutex and signals a condition variable;
 *   worker:   waits in pthread_cond_wait for that flag (its waits are
 *             ended by signal_ready's pthread_cond_signal);
 *   sleeper:  sleeps in nanosleep(5 ms), in a loop (its waits are ended by
 *             a timer, in interrupt context).
 *
 * As it starts it prints "pid=PID consumer=TID worker=TID sleeper=TID"
 * and flushes, so the test knows the threads before they are done. The
 * functions are real frames at -O2: noinline and noclone, and each does
 * something after its call (no tail calls). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;
static volatile int stop;
static int fds[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;
static pthread_barrier_t started;
static pid_t tid_consumer, tid_worker, tid_sleeper;

static long now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};

	nanosleep(&ts, NULL);
}

__attribute__((noinline, noclone)) void produce_item(void);
__attribute__((noinline, noclone)) void produce_item(void)
{
	long until = now_ns(CLOCK_THREAD_CPUTIME_ID) + 2000000;
	long x = sink;
	char b = 'x';

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < until)
		for (int i = 0; i < 1000; i++)
			x = x * 7 + i;
	if (write(fds[1], &b, 1) != 1)
		abort();
	sink = x + 1;
}

__attribute__((noinline, noclone)) void signal_ready(void);
__attribute__((noinline, noclone)) void signal_ready(void)
{
	pthread_mutex_lock(&mu);
	ready = 1;
	pthread_mutex_unlock(&mu);
	pthread_cond_signal(&cv);
	sink += 2;
}

static void *producer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	while (!stop) {
		produce_item();
		sleep_ns(2000000);
	}
	close(fds[1]);
	return NULL;
}

static void *consumer(void *arg)
{
	char b;

	(void)arg;
	tid_consumer = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	while (read(fds[0], &b, 1) == 1)
		sink += b;
	return NULL;
}

static void *signaler(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	while (!stop) {
		sleep_ns(3000000);
		signal_ready();
	}
	pthread_mutex_lock(&mu);
	ready = 2;
	pthread_mutex_unlock(&mu);
	pthread_cond_signal(&cv);
	return NULL;
}

static void *worker(void *arg)
{
	int done = 0;

	(void)arg;
	tid_worker = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	while (!done) {
		pthread_mutex_lock(&mu);
		while (!ready)
			pthread_cond_wait(&cv, &mu);
		done = ready == 2;
		ready = 0;
		pthread_mutex_unlock(&mu);
		sink += 3;
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	tid_sleeper = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	while (!stop) {
		sleep_ns(5000000);
		sink += 4;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*const fns[])(void *) = {producer, consumer, signaler, worker, sleeper};
	static const char *const names[] = {"producer", "consumer", "signaler", "worker",
					    "sleeper"};
	pthread_t th[5];
	long secs = argc > 1 ? atol(argv[1]) : 10;

	if (pipe(fds) < 0 || pthread_barrier_init(&started, NULL, 6) != 0)
		return 1;
	for (int i = 0; i < 5; i++) {
		if (pthread_create(&th[i], NULL, fns[i], NULL) != 0)
			return 1;
		pthread_setname_np(th[i], names[i]);
	}
	pthread_barrier_wait(&started);
	printf("pid=%d consumer=%d worker=%d sleeper=%d\n", (int)getpid(), (int)tid_consumer,
	       (int)tid_worker, (int)tid_sleeper);
	fflush(stdout);
	sleep_ns(secs * 1000000000L);
	stop = 1;
	for (int i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	return 0;
}
