/* A labelled process for labels_threads.sh (flightrec threads with
 * application labels). Threads, each labelling itself before it works or
 * blocks:
 *
 *   spinner    role=spin tenant=t1, burns CPU in lt_spin
 *   early      role=early, blocked in read() of a pipe nobody writes (in
 *              lt_read_stuck) from the process's first milliseconds
 * and, once the process gets SIGUSR1:
 *   reader-1   role=read req=r1, blocked in read() like early, to the
 *              process's end
 *   reader-2   role=read req=r2, the same
 *   reader-3   role=read req=r1 (reader-1's labels), the same
 *   plain      no labels, the same
 * and main, unlabelled, in pause(). Prints "TID NAME" for main, spinner
 * and early, then "ready"; after SIGUSR1, "TID NAME" for the others, then
 * "go".
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flightrec/labels.h"

void lt_spin(void);
void lt_read_stuck(int fd);

struct role {
	const char *name, *k1, *v1, *k2, *v2;
	pthread_barrier_t *started; /* waited on once labelled */
};

static int pipefd[2];
static volatile uint64_t sink;
static pthread_barrier_t early_started, started;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void lt_spin(void)
{
	for (;;)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

__attribute__((noinline)) void lt_read_stuck(int fd)
{
	char c;

	while (read(fd, &c, 1) != 0)
		;
}

static void *run(void *arg)
{
	const struct role *r = arg;

	pthread_setname_np(pthread_self(), r->name);
	if (r->k1)
		fr_labels_set(r->k1, r->v1);
	if (r->k2)
		fr_labels_set(r->k2, r->v2);
	pthread_mutex_lock(&print_lock);
	printf("%d %s\n", gettid(), r->name);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
	pthread_barrier_wait(r->started);
	if (strcmp(r->name, "spinner") == 0)
		lt_spin();
	lt_read_stuck(pipefd[0]);
	return NULL;
}

int main(void)
{
	static const struct role roles[] = {
		{"reader-1", "role", "read", "req", "r1", &started},
		{"reader-2", "role", "read", "req", "r2", &started},
		{"reader-3", "role", "read", "req", "r1", &started},
		{"plain", NULL, NULL, NULL, NULL, &started},
	};
	static const struct role first[] = {
		{"spinner", "role", "spin", "tenant", "t1", &early_started},
		{"early", "role", "early", NULL, NULL, &early_started},
	};
	const size_t n = sizeof(roles) / sizeof(roles[0]);
	sigset_t mask;
	pthread_t th;
	int sig;

	if (pipe(pipefd) < 0)
		return 1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	printf("%d main\n", getpid());
	fflush(stdout);
	pthread_barrier_init(&early_started, NULL, 3);
	for (size_t i = 0; i < 2; i++)
		pthread_create(&th, NULL, run, (void *)&first[i]);
	pthread_barrier_wait(&early_started);
	printf("ready\n");
	fflush(stdout);
	sigwait(&mask, &sig);
	pthread_barrier_init(&started, NULL, (unsigned)n + 1);
	for (size_t i = 0; i < n; i++)
		pthread_create(&th, NULL, run, (void *)&roles[i]);
	pthread_barrier_wait(&started);
	printf("go\n");
	fflush(stdout);
	for (;;)
		pause();
}
