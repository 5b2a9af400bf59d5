/* A program that spends a known time blocked in a known function, for
 * off-CPU checks.
 *
 *   block SECONDS [DELAY]
 *   block short SECONDS
 *   block pipe THREADS
 *   block mix THREADS
 *
 * After sleeping DELAY seconds in main (so a profiler can attach first), a
 * thread calls fr_block_here() until SECONDS have been spent in it; each
 * call sleeps 20 ms in nanosleep. At exit it prints
 * "pid=PID tid=TID blocked_ns=N wall_ns=W cpu_ns=C": the time measured
 * around the blocking calls, and the thread's wall and CPU time. With "short", each call sleeps 100 us instead (waits far under
 * the eBPF off-CPU mechanism's min_wait). Built without inlining and with frame pointers so stacks unwind
 * through the caller.
 *
 * With "pipe", THREADS threads block in read() on a pipe nobody writes,
 * in fr_read_stuck(), until the process is killed (the shape of a
 * deadlock): it prints "pid=PID" once they were started.
 *
 * With "mix", the same THREADS readers (named "reader", the last one
 * "rd\033[2J": an escape sequence in a name), plus a thread
 * "sleeper" that sleeps 20 ms at a time in fr_block_here() and a thread
 * "spinner" that spins in fr_spin(), for flightrec threads: blocked,
 * sleeping and running threads side by side.
 *
 * fr_block_here makes the nanosleep system call itself: libc's wrappers
 * have no frame pointer, so a frame-pointer unwind from inside them skips
 * their caller (it would show clock_nanosleep -> worker). Issuing the
 * syscall from a function with a frame keeps the function the test asks
 * about on the stack. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long sleep_ns = 20000000;

__attribute__((noinline)) void fr_block_here(void);
__attribute__((noinline)) void fr_block_here(void)
{
	struct timespec ts = {0, sleep_ns};
#if defined(__x86_64__)
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_nanosleep), "D"(&ts), "S"(NULL)
			 : "rcx", "r11", "memory");
	(void)ret;
#else
	syscall(SYS_nanosleep, &ts, NULL);
#endif
	__asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
}

/* One read() that never returns: the pipe's write end stays open and
 * nobody writes. The syscall is made here for the same reason as above. */
__attribute__((noinline)) void fr_read_stuck(int fd);
__attribute__((noinline)) void fr_read_stuck(int fd)
{
	char c;
#if defined(__x86_64__)
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(&c), "d"(1L)
			 : "rcx", "r11", "memory");
	(void)ret;
#else
	syscall(SYS_read, fd, &c, 1);
#endif
	__asm__ volatile("" ::: "memory");
}

static void *reader(void *arg)
{
	for (;;)
		fr_read_stuck((int)(intptr_t)arg);
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		fr_block_here();
	return NULL;
}

__attribute__((noinline)) void fr_spin(void);
__attribute__((noinline)) void fr_spin(void)
{
	for (volatile uint64_t i = 0;; i++)
		;
}

static void *spinner(void *arg)
{
	(void)arg;
	fr_spin();
	return NULL;
}

static int pipe_mode(int nthreads, int mix)
{
	int fds[2];
	pthread_t t;

	if (nthreads < 1 || pipe(fds) < 0)
		return 2;
	for (int i = 0; i < nthreads; i++) {
		pthread_create(&t, NULL, reader, (void *)(intptr_t)fds[0]);
		/* With mix, the last reader's name holds a terminal escape, as
		 * anyone may name a thread. */
		pthread_setname_np(t, mix && i == nthreads - 1 ? "rd\033[2J" : "reader");
	}
	if (mix) {
		pthread_create(&t, NULL, sleeper, NULL);
		pthread_setname_np(t, "sleeper");
		pthread_create(&t, NULL, spinner, NULL);
		pthread_setname_np(t, "spinner");
	}
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}

static double seconds;
static int64_t blocked, wall, cpu;
static long tid;

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker(void *arg)
{
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();

	(void)arg;
	tid = syscall(SYS_gettid);
	while (blocked < (int64_t)(seconds * 1e9)) {
		int64_t t0 = now_ns();
		fr_block_here();
		blocked += now_ns() - t0;
	}
	wall = now_ns() - w0;
	cpu = thread_cpu_ns() - c0;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2) {
		fprintf(stderr, "usage: block [short] SECONDS [DELAY] | block pipe|mix THREADS\n");
		return 2;
	}
	if (strcmp(argv[1], "pipe") == 0)
		return pipe_mode(argc > 2 ? atoi(argv[2]) : 1, 0);
	if (strcmp(argv[1], "mix") == 0)
		return pipe_mode(argc > 2 ? atoi(argv[2]) : 1, 1);
	if (strcmp(argv[1], "short") == 0 && argc > 2) {
		sleep_ns = 100000;
		argv++;
		argc--;
	}
	seconds = atof(argv[1]);
	if (argc > 2) {
		double delay = atof(argv[2]);
		struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
		nanosleep(&ts, NULL);
	}
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	printf("pid=%d tid=%ld blocked_ns=%lld wall_ns=%lld cpu_ns=%lld\n", (int)getpid(), tid,
	       (long long)blocked, (long long)wall, (long long)cpu);
	return 0;
}
