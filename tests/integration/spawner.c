/* A process whose main thread creates thread "maker", which creates
 * thread "made", for creators.sh: both then wait, blocked, until killed.
 * Prints "pid=PID main=TID maker=TID made=TID" once both exist.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static long maker_tid, made_tid;

static void *made(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "made", 0, 0, 0);
	pthread_mutex_lock(&lock);
	made_tid = syscall(SYS_gettid);
	pthread_cond_signal(&ready);
	pthread_mutex_unlock(&lock);
	for (;;)
		pause();
	return NULL;
}

static void *maker(void *arg)
{
	pthread_t t;

	(void)arg;
	prctl(PR_SET_NAME, "maker", 0, 0, 0);
	pthread_mutex_lock(&lock);
	maker_tid = syscall(SYS_gettid);
	pthread_mutex_unlock(&lock);
	if (pthread_create(&t, NULL, made, NULL) != 0)
		return NULL;
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, maker, NULL) != 0)
		return 1;
	pthread_mutex_lock(&lock);
	while (!made_tid)
		pthread_cond_wait(&ready, &lock);
	pthread_mutex_unlock(&lock);
	printf("pid=%d main=%ld maker=%ld made=%ld\n", getpid(), (long)syscall(SYS_gettid),
	       maker_tid, made_tid);
	fflush(stdout);
	pthread_join(t, NULL);
	return 0;
}
