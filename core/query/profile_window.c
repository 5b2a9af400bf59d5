/* Which samples of a window a profile takes (see core/query/profile.c): the
 * request's targets (pids and, with children, their descendants; command
 * names; cgroup; uid), decided once per stack and label set of a chunk;
 * the rate of each event in the window; and downsampling to it
 * (core/query/decimate.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/fs.h"
#include "core/query/profile_int.h"
#include "core/store/sample.h"

/* ---- the set of non-zero 64-bit keys ---------------------------------- */

static int kset_has(const struct kset *k, uint64_t key)
{
	if (!k->cap)
		return 0;
	for (uint32_t i = (uint32_t)fr_mix64(key) & (k->cap - 1); k->slots[i];
	     i = (i + 1) & (k->cap - 1))
		if (k->slots[i] == key)
			return 1;
	return 0;
}

/* Adds `key` (non-zero). Returns 1 when added, 0 when it was there, or
 * -ENOMEM. */
static int kset_add(struct kset *k, uint64_t key)
{
	uint32_t i;

	if ((uint64_t)(k->n + 1) * 2 > k->cap) {
		uint32_t cap = k->cap ? k->cap * 2 : 256;
		uint64_t *slots;

		if (cap <= k->cap)
			return -ENOMEM;
		slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (uint32_t j = 0; j < k->cap; j++) {
			if (!k->slots[j])
				continue;
			for (i = (uint32_t)fr_mix64(k->slots[j]) & (cap - 1); slots[i];
			     i = (i + 1) & (cap - 1))
				;
			slots[i] = k->slots[j];
		}
		free(k->slots);
		k->slots = slots;
		k->cap = cap;
	}
	for (i = (uint32_t)fr_mix64(key) & (k->cap - 1); k->slots[i]; i = (i + 1) & (k->cap - 1))
		if (k->slots[i] == key)
			return 0;
	k->slots[i] = key;
	k->n++;
	return 1;
}

static int wanted_pid(const struct builder *b, uint32_t pid)
{
	const struct fr_profile_request *req = b->req;

	if (!req->targets.npids)
		return 1;
	/* Once extended, the set holds every asked pid but 0. */
	if (b->children && pid)
		return kset_has(&b->pids, pid);
	for (uint32_t i = 0; i < req->targets.npids; i++)
		if (req->targets.pids[i] == pid)
			return 1;
	return 0;
}

/* Whether the process `pid` of chunk `c` has one of the requested command
 * names (compared whole: the kernel keeps 15 characters, and so do the
 * chunks) and belonged to the requested uid when the chunk was sealed. A
 * process the chunk does not describe is not known to be anyone's, so a
 * uid restriction leaves it out: it keeps users from seeing each other's
 * processes. */
static int wanted_comm(const struct fr_profile_request *req, const char *comm)
{
	int comm_ok = !req->targets.ncomms;

	for (uint32_t i = 0; i < req->targets.ncomms && !comm_ok; i++)
		comm_ok = strncmp(comm, req->targets.comms[i], FR_LIMIT_COMM_LEN) == 0;
	return comm_ok;
}

/* As above; returns 0 (not wanted), 1 (wanted) or COMM_AT_SAMPLE: wanted
 * if its command name at each sample's time is, for a process whose name
 * changed within the chunk (an exec: the samples before it were of the
 * program it replaced; core/store/chunk.h, names over time). */
#define COMM_AT_SAMPLE 2
static int wanted_proc(const struct fr_profile_request *req, const struct fr_chunk *c, uint32_t pid)
{
	const struct fr_chunk_proc *p;

	if (!req->targets.ncomms && !req->targets.has_uid)
		return 1;
	p = fr_chunk_find_proc(c, pid);
	if (!p)
		return 0;
	if (req->targets.has_uid && p->uid != req->targets.uid)
		return 0;
	if (req->targets.ncomms && fr_chunk_find_names(c, pid))
		return COMM_AT_SAMPLE;
	return wanted_comm(req, c->strings[p->comm]);
}

static int add_edge(struct builder *b, uint32_t pid, uint32_t ppid)
{
	if (!pid || !ppid)
		return 0;
	return kset_add(&b->edges, (uint64_t)pid << 32 | ppid) < 0 ? -ENOMEM : 0;
}

/* Gathers the (pid, parent) pairs of chunk `c`: each sample's process and
 * the "ppid" of its label set, and each label set with both a "pid" and a
 * "ppid" (an ancestor without samples). Returns 0 or -ENOMEM. */
int profile_collect_parents(struct builder *b, const struct fr_chunk *c)
{
	uint32_t last_pid = 0, last_ls = 0;

	if (c->nlabelsets > b->ls_ppid_cap) {
		uint32_t *p = realloc(b->ls_ppid, c->nlabelsets * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->ls_ppid = p;
		b->ls_ppid_cap = c->nlabelsets;
	}
	for (uint32_t k = 0; k < c->nlabelsets; k++) {
		struct fr_chunk_proc_labels l;

		fr_chunk_labelset_proc(c, k, &l);
		b->ls_ppid[k] = l.ppid;
		if (l.ppid && add_edge(b, l.pid, l.ppid) < 0)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->nsamples; i++) {
		/* A process's samples mostly come in a row. */
		if (c->pid[i] == last_pid && c->labelset[i] == last_ls)
			continue;
		last_pid = c->pid[i];
		last_ls = c->labelset[i];
		if (add_edge(b, last_pid, b->ls_ppid[last_ls]) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Extends the asked pids with every descendant the pairs show: breadth
 * first down from the asked pids, a pid entering the set (and the queue)
 * only once, so cycles and processes that are their own parent end the
 * walk. Sets b->pids and b->ndescendants. Returns 0 or -ENOMEM. */
int profile_extend_pids(struct builder *b)
{
	const struct fr_profile_request *req = b->req;
	uint64_t *down; /* pairs as ppid << 32 | pid, sorted */
	uint32_t *queue, n = 0, head = 0, tail = 0;
	int ret = 0;

	down = malloc(((size_t)b->edges.n + 1) * sizeof(*down));
	queue = malloc(((size_t)req->targets.npids + b->edges.n + 1) * sizeof(*queue));
	if (!down || !queue) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < b->edges.cap; i++) {
		uint64_t e = b->edges.slots[i];

		if (e)
			down[n++] = (e << 32) | (e >> 32);
	}
	qsort(down, n, sizeof(*down), cmp_u64);
	for (uint32_t i = 0; i < req->targets.npids; i++) {
		if (!req->targets.pids[i])
			continue;
		ret = kset_add(&b->pids, req->targets.pids[i]);
		if (ret < 0)
			goto out;
		if (ret == 1)
			queue[tail++] = req->targets.pids[i];
	}
	ret = 0;
	while (head < tail) {
		uint64_t parent = (uint64_t)queue[head++] << 32;
		uint32_t lo = 0, hi = n;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (down[mid] < parent)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < n && (down[lo] & 0xffffffff00000000ull) == parent; lo++) {
			int added = kset_add(&b->pids, (uint32_t)down[lo]);

			if (added < 0) {
				ret = added;
				goto out;
			}
			if (added) {
				queue[tail++] = (uint32_t)down[lo];
				b->ndescendants++;
			}
		}
	}
	b->children = 1;
out:
	free(down);
	free(queue);
	return ret;
}

/* Whether a process in cgroup `path` is of the request's cgroup. */
static int wanted_cgroup(const struct builder *b, const char *path)
{
	return !b->req->targets.cgroup[0] || fr_cgroup_within(path, b->req->targets.cgroup);
}

/* Decides which stacks and label sets of chunk `c` are of the request's
 * targets; with `names`, also interns each label set's cgroup for the
 * rows. Returns 0 or -ENOMEM. */
static int chunk_targets(struct builder *b, const struct fr_chunk *c, int names)
{
	const struct fr_profile_request *req = b->req;
	uint32_t n = c->nstacks > c->nlabelsets ? c->nstacks : c->nlabelsets;

	if (n > b->targets_cap) {
		uint8_t *so = realloc(b->stack_ok, n);
		if (!so)
			return -ENOMEM;
		b->stack_ok = so;
		uint8_t *lo = realloc(b->ls_ok, n);
		if (!lo)
			return -ENOMEM;
		b->ls_ok = lo;
		uint32_t *lc = realloc(b->ls_cgroup, n * sizeof(*lc));
		if (!lc)
			return -ENOMEM;
		b->ls_cgroup = lc;
		b->targets_cap = n;
	}
	for (uint32_t k = 0; k < c->nstacks; k++) {
		uint32_t pid = c->stacks[k].pid;

		b->stack_ok[k] = (uint8_t)(wanted_pid(b, pid) ? wanted_proc(req, c, pid) : 0);
	}
	for (uint32_t k = 0; k < c->nlabelsets; k++) {
		struct fr_chunk_proc_labels l;
		const char *cg;

		fr_chunk_labelset_proc(c, k, &l);
		cg = l.cgroup;

		b->ls_ok[k] = (uint8_t)wanted_cgroup(b, cg);
		b->ls_cgroup[k] = NO_CGROUP;
		if (names && cg && b->ls_ok[k]) {
			int64_t idx = profile_intern_str(b, cg);
			if (idx < 0)
				return -ENOMEM;
			b->ls_cgroup[k] = (uint32_t)idx;
		}
	}
	/* The application label sets, for the rows and the label filter. */
	return profile_app_chunk(b, c);
}

/* The index of sample `i`'s event among the requested ones when the
 * sample is in the window and of the targets (chunk_targets() ran for
 * `c`), else -1. */
static int select_sample(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	/* Open-wait records count as offcpu (core/query/profile_open.c). */
	uint32_t id = FR_EVENT_IS_OPEN_WAIT(c->event[i]) ? FR_EVENT_OFFCPU : c->event[i];
	/* Allocation records are the memory event's, read over its own span
	 * (core/query/profile_mem.c). */
	bool mem = profile_mem_take(b, c, i);

	if (!mem && (c->time_ns[i] < b->req->t0 || c->time_ns[i] >= b->req->t1))
		return -1;
	if (!b->stack_ok[c->stack[i]] || !b->ls_ok[c->labelset[i]] ||
	    (!profile_app_ok(b, c, i) && !profile_mem_label_free(b, c, i)))
		return -1;
	if (b->stack_ok[c->stack[i]] == COMM_AT_SAMPLE &&
	    !wanted_comm(b->req, c->strings[fr_chunk_comm_at(c, c->pid[i], c->time_ns[i])]))
		return -1;
	if (mem)
		return (int)b->mem - 1;
	for (uint32_t e = 0; e < b->nev; e++)
		if (b->ev[e].id == id && id != FR_EVENT_ALLOC)
			return (int)e;
	return -1;
}

/* Each rate-sampled event gets the lowest rate it was collected at in the
 * window, or the rate asked for it if lower; cpu with no samples, the
 * asked rate or the recorder's default. */
void profile_set_targets(struct builder *b, struct fr_profile_result *res)
{
	for (uint32_t e = 0; e < b->nev; e++) {
		struct gevent *g = &b->ev[e];
		uint32_t t = 0;

		/* An event whose samples all came in period mode (rate 0:
		 * exact weights, never downsampled) has no rate. */
		if (fr_event_has_rate(g->id) && !(g->res->samples_seen && !g->res->max_rate)) {
			t = g->res->min_rate;
			if (g->wanted && (!t || g->wanted < t))
				t = g->wanted;
			if (!t && g->id == FR_EVENT_CPU)
				t = 99;
		}
		g->target = t;
		g->res->hz = t;
	}
	res->hz = b->ev[0].target;
}

/* Of `lost` samples of event `id` the chunk counts, those of the window
 * [t0, t1): a loss the chunk's gaps place in time (core/store/chunk.h,
 * section 4) counts for its share of its span inside the window; the
 * rest (no known time) counts whole, as every chunk the window reads. */
static uint64_t lost_in_window(const struct fr_chunk *c, uint32_t id, uint64_t lost, int64_t t0,
			       int64_t t1)
{
	uint64_t in = 0;

	for (uint32_t k = 0; k < c->ngaps && lost; k++) {
		const struct fr_chunk_gap *g = &c->gaps[k];
		uint64_t n = g->count < lost ? g->count : lost;
		int64_t a = g->from_ns > t0 ? g->from_ns : t0, z = g->to_ns < t1 ? g->to_ns : t1;

		if (g->kind != FR_GAP_LOST || g->event != id)
			continue;
		lost -= n;
		if (g->to_ns == g->from_ns)
			in += g->from_ns >= t0 && g->from_ns < t1 ? n : 0;
		else if (z > a)
			in += (uint64_t)((unsigned __int128)n * (uint64_t)(z - a) /
					 (uint64_t)(g->to_ns - g->from_ns));
	}
	return in + lost;
}

/* Adds the chunk's kernel counters of the requested events: what the
 * kernel lost (in the window, lost_in_window()) and throttled,
 * machine-wide (chunks do not say whose).
 * Truncated stacks are counted on the profile's own samples instead
 * (profile_add_sample()). */
void profile_count_losses(struct builder *b, const struct fr_chunk *c)
{
	for (uint32_t k = 0; k < c->nevents; k++) {
		for (uint32_t e = 0; e < b->nev; e++) {
			struct fr_profile_event_result *er = b->ev[e].res;

			/* The heap is read from the allocation records: a
			 * sample lost leaves it short of a block, a free lost
			 * (FR_EVENT_ALLOC_FREE) leaves a block in it that is
			 * gone. */
			if (c->events[k].event != b->ev[e].id &&
			    !(b->ev[e].id == FR_EVENT_HEAP &&
			      (c->events[k].event == FR_EVENT_ALLOC ||
			       c->events[k].event == FR_EVENT_ALLOC_FREE)))
				continue;
			er->lost += lost_in_window(c, c->events[k].event, c->events[k].lost,
						   b->req->t0, b->req->t1);
			er->throttled += c->events[k].throttled;
		}
	}
	for (uint32_t k = 0; k < c->ngaps; k++) {
		int64_t a = c->gaps[k].from_ns > b->req->t0 ? c->gaps[k].from_ns : b->req->t0;
		int64_t z = c->gaps[k].to_ns < b->req->t1 ? c->gaps[k].to_ns : b->req->t1;

		if (c->gaps[k].kind == FR_GAP_STALL && z > a && z - a > b->stall_t1 - b->stall_t0) {
			b->stall_t0 = a;
			b->stall_t1 = z;
		}
	}
	for (uint32_t e = 0; e < b->nev; e++) {
		uint32_t id = b->ev[e].id == FR_EVENT_HEAP ? FR_EVENT_ALLOC : b->ev[e].id;

		for (uint32_t i = 0; i < c->nsamples; i++)
			b->ev[e].res->recorded += c->event[i] == id &&
						  c->time_ns[i] >= b->req->t0 &&
						  c->time_ns[i] < b->req->t1;
	}
}

/* Pass 1 over chunk `c`: counts its samples of the targets and notes the
 * rates they were collected at. Returns 0 or -ENOMEM. */
int profile_chunk_rates(struct builder *b, const struct fr_chunk *c)
{
	int ret = chunk_targets(b, c, 0);

	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < c->nsamples; i++) {
		int e = FR_EVENT_IS_OPEN_WAIT(c->event[i]) ? -1 : select_sample(b, c, i);
		struct fr_profile_event_result *er;
		uint32_t rate = c->rate_hz[i];

		/* Every open-wait record moves the window's latest (not only
		 * the targets'); which count is known after this pass. */
		if (FR_EVENT_IS_OPEN_WAIT(c->event[i]))
			profile_open_note(b, c, i);
		if (e < 0)
			continue;
		if (profile_open_note(b, c, i) < 0)
			return -ENOMEM;
		if ((uint32_t)e + 1 == b->mem && profile_mem_note(b, c, i) < 0)
			return -ENOMEM;
		er = b->ev[e].res;
		er->samples_seen++;
		if (rate && (!er->min_rate || rate < er->min_rate))
			er->min_rate = rate;
		if (rate > er->max_rate)
			er->max_rate = rate;
	}
	return 0;
}

/* Pass 2 over chunk `c`: decimates each sample of the targets to its
 * event's rate in the profile (core/query/decimate.h: per cpu and event,
 * exact in count) and adds it to its row as many times as it counts.
 * Returns 0 or -ENOMEM. */
int profile_chunk_aggregate(struct builder *b, const struct fr_chunk *c)
{
	int ret = profile_reset_stack_memo(b, c->nstacks, c->nstrings);
	/* The processes with samples kept, whose executables the profile
	 * names even when no frame is in them (JIT code) */
	uint8_t *kept = calloc(c->nprocs + 1, 1);
	uint32_t last_pid = 0;

	if (!kept)
		return -ENOMEM;
	if (ret == 0)
		ret = chunk_targets(b, c, 1);
	for (uint32_t i = 0; ret == 0 && i < c->nsamples; i++) {
		int e = select_sample(b, c, i), m;
		uint64_t w;

		if (e < 0)
			continue;
		m = fr_decimate(&b->dec, c->cpu[i], c->event[i], c->time_ns[i], c->tid[i],
				c->rate_hz[i], b->ev[e].target);
		if (m <= 0) {
			ret = m;
			continue;
		}
		w = profile_open_weight(b, c, i);
		if (FR_EVENT_IS_OPEN_WAIT(c->event[i])) {
			if (!w)
				continue;
			/* Seen in pass 1 only once it is known to count. */
			b->ev[e].res->samples_seen++;
		}
		if ((uint32_t)e + 1 == b->mem)
			ret = profile_mem_add(b, c, i);
		for (; (uint32_t)e + 1 != b->mem && m > 0 && ret == 0; m--) {
			ret = profile_add_sample(b, c, i, (uint32_t)e, w);
			b->ev[e].res->samples_kept++;
		}
		if (c->pid[i] != last_pid) {
			const struct fr_chunk_proc *p = fr_chunk_find_proc(c, c->pid[i]);

			last_pid = c->pid[i];
			if (p)
				kept[p - c->procs] = 1;
		}
		/* The profile's span, for "wrote ...: 19.8s of samples" (not
		 * the records a heap profile reads before its window). */
		if (c->time_ns[i] < b->req->t0)
			continue;
		if (!b->ev[e].res->first_ns || c->time_ns[i] < b->ev[e].res->first_ns)
			b->ev[e].res->first_ns = c->time_ns[i];
		if (c->time_ns[i] > b->ev[e].res->last_ns)
			b->ev[e].res->last_ns = c->time_ns[i];
	}
	for (uint32_t k = 0; ret == 0 && k < c->nprocs; k++)
		if (kept[k])
			ret = profile_intern_exe(b, c, &c->procs[k]);
	free(kept);
	return ret;
}

int profile_window_pids(const struct builder *b, const struct fr_chunk *c, struct kset *seen)
{
	const struct fr_profile_request *req = b->req;
	uint32_t last_pid = 0;
	int last_ok = 0;

	for (uint32_t i = 0; i < c->nsamples; i++) {
		uint32_t id = FR_EVENT_IS_OPEN_WAIT(c->event[i]) ? FR_EVENT_OFFCPU : c->event[i];
		uint32_t pid = c->pid[i], e;
		bool mem = profile_mem_take(b, c, i);

		if ((!mem && (c->time_ns[i] < req->t0 || c->time_ns[i] >= req->t1)) || !pid)
			continue;
		for (e = 0; !mem && e < b->nev && (b->ev[e].id != id || id == FR_EVENT_ALLOC); e++)
			;
		if (e == b->nev)
			continue;
		/* A CPU's samples come in runs of one process. */
		if (pid != last_pid) {
			const struct fr_chunk_proc *p = fr_chunk_find_proc(c, pid);

			last_pid = pid;
			last_ok = !req->targets.has_uid || (p && p->uid == req->targets.uid);
		}
		if (last_ok && kset_add(seen, pid) < 0)
			return -ENOMEM;
	}
	return 0;
}
