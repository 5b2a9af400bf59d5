/* A server whose three threads wait for replies in libc's read(), built
 * like distribution binaries (-O2, no frame pointers; and once more with
 * them), for offcpu_cfi.sh. Each thread runs
 *
 *   serve_loop -> handle_request -> wait_for_reply -> read (libc)
 *
 * on a pipe of its own. The three functions are real frames at -O2:
 * noinline and noclone (no .constprop or .isra copy under another name),
 * and each does something with what its callee returned, so no call is a
 * tail call.
 *
 *   stuck_server block
 *   stuck_server cycle SECONDS
 *
 * With "block" nobody ever writes: the reads never return. It prints
 * "pid=PID", then "ready" once /proc says all three threads are in the
 * read system call, then waits until killed (the shape of a server stuck
 * on a peer that never answers).
 *
 * With "cycle" a writer thread writes one byte to each pipe every 50 ms,
 * so each read completes after ~50 ms: many completed waits. After
 * SECONDS it closes the pipes (the last reads return 0), joins the
 * threads and prints "pid=PID blocked_ns=N waits=W": the time the three
 * threads spent in read() in all, measured with clock_gettime around each
 * call, and how many reads there were. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 3

static volatile long sink;

struct server {
	int fd; /* read end of its pipe */
	pid_t tid;
	int64_t blocked; /* ns in read() */
	long waits;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline, noclone)) long wait_for_reply(struct server *s);
__attribute__((noinline, noclone)) long wait_for_reply(struct server *s)
{
	char c;
	int64_t t0 = now_ns();
	ssize_t n = read(s->fd, &c, 1);

	s->blocked += now_ns() - t0;
	s->waits++;
	return n == 1 ? c : -1;
}

__attribute__((noinline, noclone)) long handle_request(struct server *s);
__attribute__((noinline, noclone)) long handle_request(struct server *s)
{
	long r = wait_for_reply(s);

	sink += r;
	return r;
}

__attribute__((noinline, noclone)) void serve_loop(struct server *s);
__attribute__((noinline, noclone)) void serve_loop(struct server *s)
{
	while (handle_request(s) >= 0)
		sink++;
}

static void *server_main(void *arg)
{
	struct server *s = arg;

	s->tid = (pid_t)syscall(SYS_gettid);
	serve_loop(s);
	return NULL;
}

/* Whether thread `tid` of this process is in the read system call now. */
static int in_read(pid_t tid)
{
	char path[64], buf[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	ok = fgets(buf, sizeof(buf), f) && strtol(buf, NULL, 10) == SYS_read &&
	     strncmp(buf, "running", 7) != 0;
	fclose(f);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	struct server srv[NTHREADS];
	pthread_t t[NTHREADS];
	int wfd[NTHREADS], cycle;
	double seconds = 0;

	if (argc < 2 || (strcmp(argv[1], "block") != 0 && strcmp(argv[1], "cycle") != 0) ||
	    (strcmp(argv[1], "cycle") == 0 && argc < 3)) {
		fprintf(stderr, "usage: stuck_server block | stuck_server cycle SECONDS\n");
		return 2;
	}
	cycle = strcmp(argv[1], "cycle") == 0;
	if (cycle)
		seconds = atof(argv[2]);
	for (int i = 0; i < NTHREADS; i++) {
		int fds[2];

		if (pipe(fds) < 0) {
			perror("pipe");
			return 1;
		}
		memset(&srv[i], 0, sizeof(srv[i]));
		srv[i].fd = fds[0];
		wfd[i] = fds[1];
		pthread_create(&t[i], NULL, server_main, &srv[i]);
		pthread_setname_np(t[i], "server");
	}
	if (!cycle) {
		printf("pid=%d\n", (int)getpid());
		fflush(stdout);
		/* Ready when all three are in read (10 s at most). */
		for (int tries = 0; tries < 1000; tries++) {
			int n = 0;

			for (int i = 0; i < NTHREADS; i++)
				n += srv[i].tid && in_read(srv[i].tid);
			if (n == NTHREADS) {
				printf("ready\n");
				fflush(stdout);
				break;
			}
			sleep_ms(10);
		}
		for (;;)
			pause();
	}

	/* The writer: this thread. */
	int64_t end = now_ns() + (int64_t)(seconds * 1e9);
	int64_t blocked = 0;
	long waits = 0;

	while (now_ns() < end) {
		sleep_ms(50);
		for (int i = 0; i < NTHREADS; i++)
			if (write(wfd[i], "x", 1) != 1)
				perror("write");
	}
	for (int i = 0; i < NTHREADS; i++) {
		close(wfd[i]);
		pthread_join(t[i], NULL);
		blocked += srv[i].blocked;
		waits += srv[i].waits;
	}
	printf("pid=%d blocked_ns=%lld waits=%ld\n", (int)getpid(), (long long)blocked, waits);
	return 0;
}
