/* The cases of allocation sampling the recorder must handle, for its
 * tests (run with LD_PRELOAD=libflightrec.so). `alloc_cases [SECONDS]`
 * (default 5) prints "ready", then for SECONDS:
 *
 *   case_realloc_chain  a block grown by realloc from 64 KiB to 1 MiB in
 *                       64 KiB steps, then freed, every tenth round (a
 *                       chain is 8.5 MiB: more would starve the other
 *                       cases); the last chain's 1 MiB block is kept;
 *   case_memalign       memalign(4096, 64 KiB), posix_memalign(256, 32
 *                       KiB) and aligned_alloc(64, 16 KiB) blocks, every
 *                       other one kept until 16 MiB are, the rest freed;
 *   case_cross_alloc    32 KiB blocks allocated on one thread and freed by
 *                       another (case_cross_free's thread);
 *
 * then forks: the child allocates 8 MiB at case_fork_leak (4 KiB blocks,
 * kept), sleeps a second and executes this program again
 * ("alloc_cases --exec SECONDS"),
 * whose new image keeps 16 MiB at case_exec_leak and prints "exec ready
 * PID". The parent prints "child PID" and "done", then both sleep until
 * killed (the child dies with its parent: PR_SET_PDEATHSIG). Built like
 * alloc_sites (-O2, no frame pointers). With ALLOC_CASES_GO=FILE in the
 * environment the work waits, after "ready", until FILE exists. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <malloc.h>

#define CROSS_BLOCK (32 << 10)
#define QUEUE 256

static void *kept;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void case_realloc_chain(void)
{
	char *p = NULL;

	for (size_t n = 64 << 10; n <= (1u << 20); n += 64 << 10) {
		char *q = realloc(p, n);

		if (!q)
			break;
		p = q;
		p[n - 1] = 1;
	}
	free(kept);
	kept = p;
}

static size_t aligned_n, aligned_kept;

/* Every other block kept until 16 MiB are, then all freed. */
__attribute__((noinline)) static void case_memalign(void)
{
	static const size_t size[3] = {64 << 10, 32 << 10, 16 << 10};
	void *p[3] = {memalign(4096, size[0]), NULL, aligned_alloc(64, size[2])};

	if (posix_memalign(&p[1], 256, size[1]))
		p[1] = NULL;
	for (int i = 0; i < 3; i++) {
		if (p[i] && aligned_n++ % 2 == 0 && aligned_kept + size[i] <= (16u << 20))
			aligned_kept += size[i];
		else
			free(p[i]);
	}
}

/* A queue of blocks from the allocating thread to the freeing one. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *slot[QUEUE];
	unsigned head, tail;
	int stop;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

__attribute__((noinline)) static void case_cross_alloc(void)
{
	void *p = malloc(CROSS_BLOCK);

	if (!p)
		return;
	memset(p, 1, 64);
	pthread_mutex_lock(&q.lock);
	if (q.head - q.tail < QUEUE) {
		q.slot[q.head++ % QUEUE] = p;
		p = NULL;
		pthread_cond_signal(&q.cond);
	}
	pthread_mutex_unlock(&q.lock);
	free(p);
}

__attribute__((noinline)) static void case_cross_free(void *p)
{
	free(p);
}

static void *freer(void *arg)
{
	pthread_mutex_lock(&q.lock);
	for (;;) {
		while (q.head == q.tail && !q.stop)
			pthread_cond_wait(&q.cond, &q.lock);
		if (q.head == q.tail)
			break;
		void *p = q.slot[q.tail++ % QUEUE];

		pthread_mutex_unlock(&q.lock);
		case_cross_free(p);
		pthread_mutex_lock(&q.lock);
	}
	pthread_mutex_unlock(&q.lock);
	return arg;
}

static void *allocer(void *arg)
{
	double end = *(double *)arg;

	while (now_s() < end) {
		for (int i = 0; i < 8; i++)
			case_cross_alloc();
		usleep(1000);
	}
	return NULL;
}

/* The last block of a leak, so that the compiler keeps each site's
 * malloc (a result nobody reads would let it drop the call). */
static void *volatile leaked_last;

static void leak(void *(*site)(void), size_t bytes)
{
	for (size_t n = 0; n < bytes; n += 4096)
		leaked_last = site();
}

__attribute__((noinline)) static void *case_fork_leak(void)
{
	void *p = malloc(4096);

	if (p)
		memset(p, 1, 4096);
	return p;
}

__attribute__((noinline)) static void *case_exec_leak(void)
{
	void *p = malloc(4096);

	if (p)
		memset(p, 2, 4096);
	return p;
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	double seconds, end;
	pthread_t a, f;
	char self[4096], secs[32];
	ssize_t l;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--exec")) {
		leak(case_exec_leak, 16u << 20);
		printf("exec ready %d\n", (int)getpid());
		fflush(stdout);
		sleep_forever();
	}
	seconds = argc > 1 ? atof(argv[1]) : 5;
	if (seconds <= 0)
		seconds = 5;
	l = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (l <= 0)
		return 1;
	self[l] = 0;
	printf("ready\n");
	fflush(stdout);
	/* ALLOC_CASES_GO=FILE: the work waits for FILE to exist (a test
	 * starts it once the recorder reads this process's ring). */
	while (getenv("ALLOC_CASES_GO") && access(getenv("ALLOC_CASES_GO"), F_OK))
		usleep(10000);
	end = now_s() + seconds;
	pthread_create(&f, NULL, freer, NULL);
	pthread_create(&a, NULL, allocer, &end);
	for (unsigned round = 0; now_s() < end; round++) {
		if (round % 10 == 0)
			case_realloc_chain();
		for (int i = 0; i < 16; i++)
			case_memalign();
		usleep(10000);
	}
	pthread_join(a, NULL);
	pthread_mutex_lock(&q.lock);
	q.stop = 1;
	pthread_cond_signal(&q.cond);
	pthread_mutex_unlock(&q.lock);
	pthread_join(f, NULL);

	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(0);
		leak(case_fork_leak, 8u << 20);
		/* A second before the exec, so that the recorder has the
		 * child's own ring (it looks a new process up within
		 * milliseconds to a second: the exec closes the ring). */
		sleep(1);
		snprintf(secs, sizeof(secs), "%g", seconds);
		execl(self, self, "--exec", secs, (char *)NULL);
		_exit(127);
	}
	printf("child %d\ndone\n", (int)pid);
	fflush(stdout);
	sleep_forever();
}
