/* flightrec serve's workers: the requests whose heads serve.c has read are
 * answered here, by FR_SERVE_WORKERS threads, so that a slow answer of the
 * recorder (the flame graph of a long window) holds up one worker and not
 * every other request. Each request opens its own connection to the
 * recorder (serve_api.c), so nothing is shared between workers but the
 * read-only struct fr_serve and the queue. The queue is bounded by the
 * connection slots: a connection is in it, or answered, or read, never two
 * of these, so it holds at most FR_SERVE_MAX_CONNS jobs. */
#include "tools/serve/serve.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct job {
	int fd;
	struct fr_http_request *r;
	int *state; /* set to FR_SERVE_SLOT_FREE once answered */
};

struct fr_serve_pool {
	const struct fr_serve *s;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job jobs[FR_SERVE_MAX_CONNS];
	size_t head, n;
	int stop;
	size_t nthreads;
	pthread_t threads[FR_SERVE_WORKERS];
};

static void answer(const struct fr_serve *s, struct job *j)
{
	fr_serve_route(s, j->fd, j->r);
	close(j->fd);
	free(j->r);
	/* The slot is free for serve.c's next accept only once closed. */
	__atomic_store_n(j->state, FR_SERVE_SLOT_FREE, __ATOMIC_RELEASE);
}

static void *worker(void *arg)
{
	struct fr_serve_pool *p = arg;
	struct job j;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->n && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop)
			break;
		j = p->jobs[p->head];
		p->head = (p->head + 1) % FR_SERVE_MAX_CONNS;
		p->n--;
		pthread_mutex_unlock(&p->lock);
		answer(p->s, &j);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct fr_serve_pool *fr_serve_pool_start(const struct fr_serve *s)
{
	struct fr_serve_pool *p = calloc(1, sizeof(*p));
	sigset_t all, old;

	if (!p)
		return NULL;
	p->s = s;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	/* Signals (Ctrl-C, SIGTERM) stay with the thread that polls. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (; p->nthreads < FR_SERVE_WORKERS; p->nthreads++)
		if (pthread_create(&p->threads[p->nthreads], NULL, worker, p) != 0)
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->nthreads) {
		fr_serve_pool_stop(p);
		return NULL;
	}
	return p;
}

void fr_serve_pool_push(struct fr_serve_pool *p, int fd, struct fr_http_request *r, int *state)
{
	pthread_mutex_lock(&p->lock);
	p->jobs[(p->head + p->n) % FR_SERVE_MAX_CONNS] = (struct job){fd, r, state};
	p->n++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void fr_serve_pool_stop(struct fr_serve_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	/* Each worker ends the answer it is writing (bounded by the write
	 * timeout and the recorder call's); queued ones are closed unanswered. */
	for (size_t i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	for (; p->n; p->n--, p->head = (p->head + 1) % FR_SERVE_MAX_CONNS) {
		close(p->jobs[p->head].fd);
		free(p->jobs[p->head].r);
		__atomic_store_n(p->jobs[p->head].state, FR_SERVE_SLOT_FREE, __ATOMIC_RELEASE);
	}
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
