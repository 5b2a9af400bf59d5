/* The threads of some processes at a past moment T, from the ring alone
 * (core/query/threads_at.h): for `flightrec dump --ring FILE --threads`,
 * which answers for a ring whose recorder crashed, and any moment of the
 * ring's memory.
 *
 * The evidence, each sample of the targets at or before T in the last
 * FR_THREADS_AT_LOOK_NS:
 *  - the open-wait records (core/store/chunk.h "OPEN WAITS") of the latest
 *    seal at or before T: the threads switched out then and since when;
 *  - completed off-CPU samples, stamped when the thread came back: one
 *    after a record's switch-out means that wait ended before T;
 *  - cpu samples of the last FR_THREADS_AT_RUN_NS: the thread ran.
 * A thread switched out less than FR_THREADS_AT_PREEMPT_NS before T that
 * had a cpu sample less than that before it left was preempted, not
 * blocked (a spinner is listed by a seal that found it off the CPU for a
 * few microseconds): "running".
 * A record of a thread in the run queue (FR_EVENT_OFFCPU_RUNNABLE: the
 * recorder saw it preempted, or woken and not on a CPU yet) makes it
 * "runnable" since it left the CPU, unless it ran or came back since.
 * A thread that came back and blocked again after the seal is "running"
 * when it has cpu samples, else "unknown": nothing in the ring says where
 * it is. Everything is sorted by thread and merged, so the cost is one
 * read of a few seconds of the ring and a sort of its samples.
 */
#include "core/query/threads_at.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/store/sample.h"
#include "core/util/fs.h"

enum { EV_RECORD, EV_BACK, EV_CPU };

struct ev {
	uint32_t pid, tid;
	int kind;
	int64_t t, out;
	int runnable; /* a record of a thread in the run queue */
	char name[32], comm[32];
	uint32_t creator;
};

struct evs {
	struct ev *v;
	size_t n, cap;
	int64_t asof; /* time of the latest records seen */
};

/* Whether sample i of `c` is of the targets, as a profile selects them
 * (core/query/profile.h): its pid; its process's command name at the
 * sample's time (an exec within the chunk changes it); the cgroup of its
 * label set; and its process's uid by the chunk's table. A process the
 * table lacks has no name and is nobody's; a sample without a cgroup is
 * of no cgroup. */
static int wanted(const struct fr_targets *t, const struct fr_chunk *c, uint32_t i)
{
	const struct fr_chunk_proc *p = NULL;
	struct fr_chunk_proc_labels l;
	int ok = !t->npids;

	for (uint32_t k = 0; k < t->npids && !ok; k++)
		ok = t->pids[k] == c->pid[i];
	/* A lookup per sample only when the table is asked (a process it
	 * lacks has the name "", which no target has). */
	if (ok && (t->has_uid || t->ncomms))
		p = fr_chunk_find_proc(c, c->pid[i]);
	if (ok && t->has_uid)
		ok = p && p->uid == t->uid;
	if (ok && t->ncomms) {
		const char *comm = p ? c->strings[fr_chunk_comm_at(c, c->pid[i], c->time_ns[i])]
				     : "";

		ok = 0;
		for (uint32_t k = 0; k < t->ncomms && !ok; k++)
			ok = strncmp(comm, t->comms[k], FR_LIMIT_COMM_LEN) == 0;
	}
	if (ok && t->cgroup[0]) {
		fr_chunk_labelset_proc(c, c->labelset[i], &l);
		ok = fr_cgroup_within(l.cgroup, t->cgroup);
	}
	return ok;
}

static int push(struct evs *e, const struct fr_chunk *c, uint32_t i, int kind)
{
	const struct fr_chunk_thread *th = fr_chunk_find_thread(c, c->tid[i]);
	const struct fr_chunk_proc *p = fr_chunk_find_proc(c, c->pid[i]);
	struct ev *v;

	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;

		if (!(v = realloc(e->v, cap * sizeof(*v))))
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	v = &e->v[e->n++];
	memset(v, 0, sizeof(*v));
	v->pid = c->pid[i];
	v->tid = c->tid[i];
	v->kind = kind;
	v->t = c->time_ns[i];
	v->out = v->t - (int64_t)(c->weight[i] & INT64_MAX);
	v->runnable = c->event[i] == FR_EVENT_OFFCPU_RUNNABLE;
	/* A thread of the table belongs to its process only. Names as they
	 * were at the record's time (names over time, core/store/chunk.h). */
	if (th && th->pid == v->pid) {
		strncpy(v->name, c->strings[fr_chunk_thread_name_at(c, v->tid, v->t)],
			sizeof(v->name) - 1);
		v->creator = th->creator;
	}
	if (p)
		strncpy(v->comm, c->strings[fr_chunk_comm_at(c, v->pid, v->t)],
			sizeof(v->comm) - 1);
	return 0;
}

/* Keeps the evidence of chunk `c` about the targets at `t`. */
static int note_chunk(struct evs *e, const struct fr_chunk *c, int64_t t,
		      const struct fr_targets *targets)
{
	for (uint32_t i = 0; i < c->nsamples; i++) {
		int64_t ts = c->time_ns[i];
		int kind = -1;

		if (ts > t || !wanted(targets, c, i))
			continue;
		if (FR_EVENT_IS_OPEN_WAIT(c->event[i]) && ts >= e->asof) {
			kind = EV_RECORD;
			e->asof = ts;
		} else if (c->event[i] == FR_EVENT_OFFCPU) {
			kind = EV_BACK;
		} else if (c->event[i] == FR_EVENT_CPU && ts >= t - FR_THREADS_AT_RUN_NS) {
			kind = EV_CPU;
		}
		if (kind >= 0 && push(e, c, i, kind) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int by_thread(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->t > y->t) - (x->t < y->t);
}

/* Merges the evidence of one thread, v[0..n) sorted by time, into *th. */
static void judge(const struct ev *v, size_t n, int64_t asof, int64_t t, struct fr_thread_at *th)
{
	const struct ev *rec = NULL;
	int64_t back = 0, cpu = 0;

	memset(th, 0, sizeof(*th));
	th->pid = v[0].pid;
	th->tid = v[0].tid;
	for (size_t i = 0; i < n; i++) {
		/* Records of older seals no longer hold. */
		if (v[i].kind == EV_RECORD && v[i].t == asof)
			rec = &v[i];
		if (v[i].kind == EV_BACK)
			back = v[i].t;
		if (v[i].kind == EV_CPU)
			cpu = v[i].t;
		if (v[i].name[0])
			memcpy(th->name, v[i].name, sizeof(th->name));
		if (v[i].comm[0])
			memcpy(th->comm, v[i].comm, sizeof(th->comm));
		if (v[i].creator)
			th->creator = v[i].creator;
		th->seen_ns = v[i].t;
	}
	if (rec && rec->runnable && back <= rec->out && cpu <= rec->out) {
		/* The recorder said so: in the run queue, not blocked. */
		th->state = FR_THREAD_RUNNABLE;
		th->out_ns = rec->out;
	} else if (rec && back <= rec->out && cpu <= rec->out &&
		   !(t - rec->out < FR_THREADS_AT_PREEMPT_NS &&
		     cpu >= rec->out - FR_THREADS_AT_PREEMPT_NS)) {
		th->state = FR_THREAD_BLOCKED;
		th->out_ns = rec->out;
	} else if (cpu) {
		th->state = FR_THREAD_RUNNING;
	}
}

int fr_threads_at(struct fr_ring *r, int64_t t, const struct fr_targets *targets,
		  struct fr_thread_at **out, size_t *n)
{
	struct fr_ring_ref *refs = NULL;
	struct evs e = {0};
	struct fr_thread_at *res = NULL;
	size_t nrefs = 0, nres = 0;
	int ret;

	*out = NULL;
	*n = 0;
	ret = fr_ring_query(r, t - FR_THREADS_AT_LOOK_NS, t + 1, &refs, &nrefs);
	for (size_t i = 0; ret == 0 && i < nrefs; i++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		/* A chunk torn by the crash is skipped, as every reader does. */
		if (fr_ring_read(r, &refs[i], &buf) == 0 &&
		    fr_chunk_decode(buf, refs[i].len, &c) == 0)
			ret = note_chunk(&e, c, t, targets);
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
	if (ret < 0)
		goto out;
	if (e.n) {
		qsort(e.v, e.n, sizeof(*e.v), by_thread);
		if (!(res = calloc(e.n, sizeof(*res)))) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0, j; i < e.n; i = j) {
		for (j = i + 1; j < e.n && e.v[j].pid == e.v[i].pid && e.v[j].tid == e.v[i].tid;
		     j++)
			;
		judge(&e.v[i], j - i, e.asof, t, &res[nres++]);
	}
	*out = res;
	*n = nres;
	res = NULL;
out:
	free(res);
	free(e.v);
	return ret;
}

int64_t fr_threads_at_last(struct fr_ring *r)
{
	struct fr_ring_ref *refs = NULL;
	int64_t last = 0;
	size_t n = 0;

	if (fr_ring_query(r, INT64_MIN / 2, INT64_MAX / 2, &refs, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (refs[i].last_ns > last)
			last = refs[i].last_ns;
	free(refs);
	return last;
}
