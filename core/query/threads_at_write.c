/* The threads at a past moment written as the live `flightrec threads`
 * answer (core/query/threads_at.h), so that one renderer
 * (tools/cmd_threads.c) shows both: the states from fr_threads_at(), the
 * stacks from a profile of the minute before T built by the query code,
 * symbolized as any profile of the ring is. */
#include "core/query/threads_at.h"
#include "core/store/chunk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pprof/pprof.h"
#include "core/pprof/pprof_copy.h"
#include "core/pprof/pprof_read.h"
#include "core/store/sample.h"
#include "core/util/compress.h"

/* Most locations kept of one stack: kernel and user frames. */
#define AT_MAX_LOCS (4 * FR_MAX_FRAMES)

/* The profile of the stacks before `t`, decoded into *pd. */
static int stacks(struct fr_ring *r, struct fr_profile_request *req, int64_t t,
		  struct fr_pprof_data **pd, char *err, size_t errlen)
{
	struct fr_profile_result *res = calloc(1, sizeof(*res));
	struct fr_membuf m = {0};
	void *raw = NULL;
	size_t rawlen;
	int ret = -ENOMEM;

	*pd = NULL;
	if (!res)
		return -ENOMEM;
	req->t1 = t + 1;
	req->t0 = t - FR_THREADS_AT_STACK_NS;
	req->nevents = 2;
	req->events[0] = FR_EVENT_OFFCPU;
	req->events[1] = FR_EVENT_CPU;
	req->format = 0;
	ret = fr_profile_write(r, req, fr_membuf_sink, &m, res, err, errlen);
	if (ret == 0 && (ret = fr_gunzip(m.p, m.len, &raw, &rawlen)) == 0)
		ret = fr_pprof_read(raw, rawlen, pd);
	free(raw);
	free(m.p);
	free(res);
	return ret;
}

/* The row of `pd` of thread `th` with the most of column `col`, or -1. */
static ssize_t best_row(const struct fr_pprof_data *pd, const struct fr_thread_at *th, ssize_t col)
{
	ssize_t best = -1;
	int64_t most = 0;

	for (size_t i = 0; col >= 0 && i < pd->nsamples; i++) {
		const struct fr_pprof_rsample *s = &pd->samples[i];
		int64_t pid = -1, tid = -1, v = pd->values[s->val + (size_t)col];

		for (size_t k = 0; k < s->nlabel; k++) {
			const struct fr_pprof_rlabel *lb = &pd->labels[s->label + k];

			if (strcmp(lb->key, "pid") == 0)
				pid = lb->num;
			else if (strcmp(lb->key, "tid") == 0)
				tid = lb->num;
		}
		if (pid == th->pid && tid == th->tid && v > most) {
			most = v;
			best = (ssize_t)i;
		}
	}
	return best;
}

static const char *const state_names[] = {
	[FR_THREAD_UNKNOWN] = "unknown",
	[FR_THREAD_BLOCKED] = "blocked",
	[FR_THREAD_RUNNING] = "running",
	[FR_THREAD_RUNNABLE] = "runnable",
};

static void emit_thread(struct fr_pprof_copy *e, const struct fr_thread_at *th, int64_t t)
{
	/* A runnable thread waits where it was preempted (or woke): its
	 * off-CPU row, as a blocked one's. */
	int runnable = th->state == FR_THREAD_RUNNABLE;
	int blocked = th->state == FR_THREAD_BLOCKED || runnable;
	ssize_t row = best_row(e->pd, th, fr_pprof_data_column(e->pd, blocked ? "offcpu" : "cpu"));
	struct fr_pprof_label labels[8 + FR_CHUNK_APP_PAIRS];
	uint64_t locs[AT_MAX_LOCS];
	int64_t values[2] = {1, blocked ? t - th->out_ns : 0};
	size_t nl = 0, nlocs = 0;

	labels[nl++] = (struct fr_pprof_label){.key = "pid", .num = th->pid};
	labels[nl++] = (struct fr_pprof_label){.key = "tid", .num = th->tid};
	labels[nl++] = (struct fr_pprof_label){.key = "thread", .str = th->name};
	labels[nl++] = (struct fr_pprof_label){.key = "state", .str = state_names[th->state]};
	if (blocked)
		labels[nl++] = (struct fr_pprof_label){.key = "waiting_ns", .num = values[1]};
	if (th->creator)
		labels[nl++] = (struct fr_pprof_label){.key = "creator", .num = th->creator};
	if (row >= 0) {
		const struct fr_pprof_rsample *s = &e->pd->samples[row];

		labels[nl++] = (struct fr_pprof_label){.key = "stack",
						       .str = runnable	? "runnable"
							      : blocked ? "blocked"
									: "on-cpu"};
		/* What it worked for there: the row's application labels. */
		nl += fr_pprof_copy_app_labels(e->pd, s, labels + nl, FR_CHUNK_APP_PAIRS);
		for (; nlocs < s->nloc && nlocs < AT_MAX_LOCS; nlocs++)
			locs[nlocs] = fr_pprof_copy_location(e, e->pd->sample_locs[s->loc + nlocs]);
	}
	fr_pprof_sample(e->p, locs, nlocs, values, 2, labels, nl);
}

int fr_threads_at_write(struct fr_ring *r, struct fr_profile_request *req, int64_t t, int fd,
			size_t *nthreads, size_t *nprocs, char *err, size_t errlen)
{
	struct fr_pprof_data *pd = NULL;
	struct fr_thread_at *th = NULL;
	struct fr_pprof_copy e = {0};
	size_t n = 0;
	int ret;

	*nthreads = 0;
	*nprocs = 0;
	ret = fr_threads_at(r, t, &req->targets, &th, &n);
	if (ret == 0 && n)
		ret = stacks(r, req, t, &pd, err, errlen);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	e.pd = pd;
	e.p = fr_pprof_new(6, fr_fd_sink, &fd);
	e.loc_ids = calloc(pd ? pd->nlocations + 1 : 1, sizeof(*e.loc_ids));
	e.map_ids = calloc(pd ? pd->nmappings + 1 : 1, sizeof(*e.map_ids));
	if (!e.p || !e.loc_ids || !e.map_ids)
		goto out;
	fr_pprof_sample_type(e.p, "threads", "count");
	fr_pprof_sample_type(e.p, "waiting", "nanoseconds");
	fr_pprof_default_sample_type(e.p, "threads");
	fr_pprof_time(e.p, t, FR_THREADS_AT_STACK_NS);
	fr_pprof_comment(e.p, "flightrec threads at a past moment, from the ring alone: state "
			      "from the samples (the kernel's exact state is not recorded); "
			      "waiting from the open-wait records");
	for (size_t i = 0; i < n; i++) {
		emit_thread(&e, &th[i], t);
		/* Sorted by pid: a new pid is a new process. */
		*nprocs += i == 0 || th[i].pid != th[i - 1].pid;
	}
	ret = fr_pprof_finish(e.p);
	*nthreads = n;
out:
	if (ret < 0 && err[0] == '\0')
		snprintf(err, errlen, "threads at: %s", strerror(-ret));
	fr_pprof_free(e.p);
	free(e.loc_ids);
	free(e.map_ids);
	fr_pprof_data_free(pd);
	free(th);
	return ret;
}
