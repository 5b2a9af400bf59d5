/* The threads at a past moment written as the live `flightrec threads`
 * answer (core/query/threads_at.h), so that one renderer
 * (tools/cmd_threads.c) shows both: the states from fr_threads_at(), the
 * stacks from a profile of the minute before T built by the query code,
 * symbolized as any profile of the ring is, each thread written as the
 * live answer writes it (core/query/thread_sample.h). */
#include "core/query/threads_at.h"
#include "core/store/chunk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/profile_value.h"
#include "core/query/thread_sample.h"
#include "core/store/sample.h"

/* The profile of the stacks before `t`, as a value into *out. */
static int stacks(struct fr_ring *r, struct fr_profile_request *req, int64_t t,
		  struct fr_profile **out, char *err, size_t errlen)
{
	struct fr_profile_result *res = calloc(1, sizeof(*res));
	int ret;

	*out = NULL;
	if (!res)
		return -ENOMEM;
	req->t1 = t + 1;
	req->t0 = t - FR_THREADS_AT_STACK_NS;
	req->nevents = 2;
	req->events[0] = FR_EVENT_OFFCPU;
	req->events[1] = FR_EVENT_CPU;
	req->format = 0;
	ret = fr_profile_build(r, req, out, res, err, errlen);
	free(res);
	return ret;
}

static const char *const state_names[] = {
	[FR_THREAD_UNKNOWN] = "unknown",
	[FR_THREAD_BLOCKED] = "blocked",
	[FR_THREAD_RUNNING] = "running",
	[FR_THREAD_RUNNABLE] = "runnable",
};

static void emit_thread(struct fr_thread_answer *a, const struct fr_profile *p,
			const struct fr_thread_at *th, int64_t t, bool hidden)
{
	/* A runnable thread waits where it was preempted (or woke): its
	 * off-CPU row, as a blocked one's. */
	int runnable = th->state == FR_THREAD_RUNNABLE;
	int blocked = th->state == FR_THREAD_BLOCKED || runnable;
	struct fr_thread_sample s = {
		.pid = th->pid,
		.tid = th->tid,
		.thread = th->name,
		.state = state_names[th->state],
		.row = -1,
	};

	/* A hidden process shows what ps shows of it: no wait, creator or
	 * stack. */
	if (!hidden) {
		s.waiting = blocked;
		s.waiting_ns = t - th->out_ns;
		s.creator = th->creator;
		s.row = fr_thread_best_row(p, th->pid, th->tid,
					   blocked ? FR_EVENT_OFFCPU : FR_EVENT_CPU);
		s.stack = runnable ? "runnable" : blocked ? "blocked" : "on-cpu";
	}
	fr_thread_answer_add(a, &s);
}

/* The distinct pids of `th` (sorted by pid) into *pids, and whether
 * `hide` hides each into *hidden (all shown without it). */
static int judge(const struct fr_thread_at *th, size_t n, fr_threads_hide_fn hide, void *arg,
		 uint32_t **pids, int **hidden, size_t *npids)
{
	*npids = 0;
	*pids = calloc(n + 1, sizeof(**pids));
	*hidden = calloc(n + 1, sizeof(**hidden));
	if (!*pids || !*hidden)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || th[i].pid != th[i - 1].pid)
			(*pids)[(*npids)++] = th[i].pid;
	if (hide && *npids)
		hide(arg, *pids, *npids, *hidden);
	return 0;
}

int fr_threads_at_write_hiding(struct fr_ring *r, struct fr_profile_request *req, int64_t t, int fd,
			       fr_threads_hide_fn hide, void *hide_arg, size_t *nthreads,
			       size_t *nprocs, size_t *nhidden, char *err, size_t errlen)
{
	struct fr_profile *p = NULL;
	struct fr_thread_at *th = NULL;
	struct fr_thread_answer *a = NULL;
	uint32_t *pids = NULL;
	int *hidden = NULL;
	size_t n = 0, npids = 0;
	int ret;

	*nthreads = 0;
	*nprocs = 0;
	*nhidden = 0;
	ret = fr_threads_at(r, t, &req->targets, &th, &n);
	if (ret == 0 && n)
		ret = stacks(r, req, t, &p, err, errlen);
	if (ret == 0)
		ret = judge(th, n, hide, hide_arg, &pids, &hidden, &npids);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	a = fr_thread_answer_new(fd, p, t, FR_THREADS_AT_STACK_NS,
				 "flightrec threads at a past moment, from the ring alone: state "
				 "from the samples (the kernel's exact state is not recorded); "
				 "waiting from the open-wait records");
	if (!a)
		goto out;
	for (size_t i = 0, k = 0; i < n; i++) {
		/* Sorted by pid: a new pid is a new process. */
		if (i && th[i].pid != th[i - 1].pid)
			k++;
		emit_thread(a, p, &th[i], t, hidden[k]);
	}
	*nprocs = npids;
	for (size_t k = 0; k < npids; k++)
		*nhidden += hidden[k] != 0;
	ret = fr_thread_answer_finish(a);
	*nthreads = n;
out:
	if (ret < 0 && err[0] == '\0')
		snprintf(err, errlen, "threads at: %s", strerror(-ret));
	fr_thread_answer_free(a);
	fr_profile_free(p);
	free(pids);
	free(hidden);
	free(th);
	return ret;
}

int fr_threads_at_write(struct fr_ring *r, struct fr_profile_request *req, int64_t t, int fd,
			size_t *nthreads, size_t *nprocs, char *err, size_t errlen)
{
	size_t nhidden;

	return fr_threads_at_write_hiding(r, req, t, fd, NULL, NULL, nthreads, nprocs, &nhidden,
					  err, errlen);
}
