/* A program that dies, for blackbox_events.sh: built like users' programs
 * (-O2, no frame pointers), so its crash stack is unwound with CFI.
 *
 *   crash_prog segv        burns CPU in before_crash for about 2 s, then
 *                          main calls crash_site, which writes to address
 *                          0x10: SIGSEGV (SEGV_MAPERR, addr 0x10)
 *   crash_prog exit CODE   exits with CODE
 *   crash_prog kill        sends itself SIGKILL
 *   crash_prog abort       calls abort(): SIGABRT
 *   crash_prog leader_exit the leader leaves by pthread_exit, then the
 *                          last thread by the exit system call with code
 *                          7 (not exit_group): the exit the recorder
 *                          sees is not the leader's
 *
 * Its pid is printed first, on a line of its own. Core dumps are the
 * caller's to allow or not (RLIMIT_CORE).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile uintptr_t bad_addr = 0x10;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void before_crash(double seconds)
{
	double end = now() + seconds;
	unsigned long x = 1;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) static void crash_site(volatile int *p)
{
	*p = (int)sink;
	sink++; /* not a tail call: crash_site stays on the stack */
}

/* The last thread: leaves alone, by the exit system call. */
static void *last_thread(void *arg)
{
	(void)arg;
	usleep(100000);
	syscall(SYS_exit, 7);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: crash_prog segv | exit CODE | kill | abort\n");
		return 2;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (strcmp(argv[1], "segv") == 0) {
		before_crash(argc > 2 ? atof(argv[2]) : 2.0);
		/* 0x10, from memory: the compiler cannot know it */
		crash_site((volatile int *)(uintptr_t)(bad_addr + (sink & 0)));
		return 1;
	}
	if (strcmp(argv[1], "exit") == 0 && argc > 2)
		exit(atoi(argv[2]));
	if (strcmp(argv[1], "kill") == 0) {
		kill(getpid(), SIGKILL);
		pause();
	}
	if (strcmp(argv[1], "abort") == 0)
		abort();
	if (strcmp(argv[1], "leader_exit") == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, last_thread, NULL) != 0)
			return 2;
		pthread_exit(NULL);
	}
	fprintf(stderr, "crash_prog: unknown mode %s\n", argv[1]);
	return 2;
}
