/* Many threads blocked for good, for tests/bench/offcpu_blocked.sh: what
 * the off-CPU recorder's open waits cost with thousands of blocked
 * threads (a server's idle pool, a deadlock).
 *
 *   blocked THREADS [STACK_KIB [DEPTH]]
 *
 * Starts THREADS threads with STACK_KIB KiB stacks each (default 64, so
 * that 10,000 fit in modest memory), each DEPTH calls deep (default 8,
 * 128 bytes of locals a level) in blocked_leaf(), blocked in read() on a
 * pipe nobody writes, until the process is killed. Prints "pid=PID
 * threads=N" once all are started (N less than asked when pthread_create
 * failed: the reason on stderr).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fds[2];
static int depth = 8;
static volatile int quit; /* never set: the threads block until killed */

__attribute__((noinline)) void blocked_leaf(void);
__attribute__((noinline)) void blocked_leaf(void)
{
	char c;

	while (!quit)
		if (read(fds[0], &c, 1) <= 0)
			pause();
}

__attribute__((noinline)) static void blocked_descend(int level)
{
	volatile char locals[128];

	locals[0] = (char)level;
	if (level <= 0)
		blocked_leaf();
	else
		blocked_descend(level - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	(void)locals[0];
}

static void *thread_main(void *arg)
{
	(void)arg;
	blocked_descend(depth);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t t;
	long stack_kib = 64;
	int n, made = 0, err;

	if (argc < 2) {
		fprintf(stderr, "usage: blocked THREADS [STACK_KIB [DEPTH]]\n");
		return 2;
	}
	n = atoi(argv[1]);
	if (argc > 2)
		stack_kib = atol(argv[2]);
	if (argc > 3)
		depth = atoi(argv[3]);
	if (n < 1 || stack_kib < 16 || depth < 0 || depth > 100 || pipe(fds) < 0)
		return 2;
	pthread_attr_init(&attr);
	if ((err = pthread_attr_setstacksize(&attr, (size_t)stack_kib << 10))) {
		fprintf(stderr, "blocked: stack size %ld KiB: %s\n", stack_kib, strerror(err));
		return 2;
	}
	for (int i = 0; i < n; i++) {
		err = pthread_create(&t, &attr, thread_main, NULL);
		if (err) {
			fprintf(stderr, "blocked: thread %d: %s\n", i + 1, strerror(err));
			break;
		}
		pthread_detach(t);
		made++;
	}
	printf("pid=%d threads=%d\n", (int)getpid(), made);
	fflush(stdout);
	for (;;)
		pause();
}
