/* Merging consecutive chunks (core/store/merge.h).
 *
 * The parts are decoded chunks; the merge feeds their samples back through
 * a chunk builder and answers its questions about processes, threads and
 * mappings from the parts, the newest part that knows first. What a part
 * says of a process's cgroup and parent is in its label sets: the set of
 * the process's samples ({"cgroup", "ppid"}) or, for an ancestor without
 * samples, a set {"pid", "ppid"} (fr_chunk_labelset_proc reads both).
 */
#include "core/store/merge.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What one part says of a process's place: cgroup (NULL: unknown) and
 * parent (0: unknown). */
struct plabel {
	uint32_t pid;
	uint32_t ppid;
	const char *cgroup;
	bool sampled;	/* the part has samples of the process, else only its
			 * ancestor set */
	uint32_t order; /* while collecting: the first noted wins */
};

struct part {
	const struct fr_chunk *c;
	struct plabel *lab; /* sorted by pid, one per pid */
	uint32_t nlab;
};

static int cmp_plabel(const void *a, const void *b)
{
	const struct plabel *x = a, *y = b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->order > y->order) - (x->order < y->order);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Notes each process part `c` has samples of, and what it says of each
 * process's cgroup and parent: from its samples' set (one per
 * process, found through its stacks), then from
 * the ancestor sets (of processes without samples). */
static int part_init(struct part *p, const struct fr_chunk *c)
{
	uint32_t *pids = malloc((c->nstacks + 1) * sizeof(*pids));
	uint32_t *stack_pidx = malloc((c->nstacks + 1) * sizeof(*stack_pidx));
	uint32_t *ls_of = NULL, np = 0;
	size_t n = 0, keep = 0;
	int ret = -ENOMEM;

	p->c = c;
	p->lab = NULL;
	if (!pids || !stack_pidx)
		goto out;
	/* The processes sampled: those of the stacks. */
	for (uint32_t k = 0; k < c->nstacks; k++)
		pids[k] = c->stacks[k].pid;
	qsort(pids, c->nstacks, sizeof(*pids), cmp_u32);
	for (uint32_t k = 0; k < c->nstacks; k++)
		if (!np || pids[np - 1] != pids[k])
			pids[np++] = pids[k];
	for (uint32_t k = 0; k < c->nstacks; k++) {
		const uint32_t *at = bsearch(&c->stacks[k].pid, pids, np, sizeof(*pids), cmp_u32);

		stack_pidx[k] = (uint32_t)(at - pids);
	}
	/* Each one's label set: all its samples have the same. */
	ls_of = calloc(np + 1, sizeof(*ls_of));
	p->lab = malloc((np + c->nlabelsets + 1) * sizeof(*p->lab));
	if (!ls_of || !p->lab)
		goto out;
	for (uint32_t i = 0; i < c->nsamples; i++) {
		uint32_t k = stack_pidx[c->stack[i]];

		if (c->labelset[i] && !ls_of[k])
			ls_of[k] = c->labelset[i];
	}
	for (uint32_t k = 0; k < np; k++) {
		struct fr_chunk_proc_labels pl;

		fr_chunk_labelset_proc(c, ls_of[k], &pl);
		p->lab[n] = (struct plabel){.pid = pids[k],
					    .ppid = pl.ppid,
					    .cgroup = pl.cgroup,
					    .sampled = true,
					    .order = (uint32_t)n};
		n++;
	}
	/* Then the ancestors, named by sets of their own. */
	for (uint32_t ls = 1; ls < c->nlabelsets; ls++) {
		struct fr_chunk_proc_labels pl;

		fr_chunk_labelset_proc(c, ls, &pl);
		if (!pl.pid)
			continue;
		p->lab[n] = (struct plabel){.pid = pl.pid,
					    .ppid = pl.ppid,
					    .cgroup = pl.cgroup,
					    .order = (uint32_t)n};
		n++;
	}
	qsort(p->lab, n, sizeof(*p->lab), cmp_plabel);
	for (size_t i = 0; i < n; i++)
		if (!keep || p->lab[keep - 1].pid != p->lab[i].pid)
			p->lab[keep++] = p->lab[i];
	p->nlab = (uint32_t)keep;
	ret = 0;
out:
	free(pids);
	free(stack_pidx);
	free(ls_of);
	return ret;
}

static const struct plabel *find_label(const struct part *p, uint32_t pid)
{
	uint32_t lo = 0, hi = p->nlab;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->lab[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nlab && p->lab[lo].pid == pid ? &p->lab[lo] : NULL;
}

static void parts_fini(struct part *ps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ps[i].lab);
	free(ps);
}

static struct part *parts_init(struct fr_chunk *const *parts, size_t n)
{
	struct part *ps = calloc(n, sizeof(*ps));

	if (!ps)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (part_init(&ps[i], parts[i]) < 0) {
			parts_fini(ps, n);
			return NULL;
		}
	}
	return ps;
}

/* ------------------------------------------------------------------ */
/* Agreement                                                            */

static bool same_bid(uint8_t la, const uint8_t *a, uint8_t lb, const uint8_t *b)
{
	return la == lb && memcmp(a, b, la) == 0;
}

static bool same_proc(const struct fr_chunk *a, const struct fr_chunk_proc *x,
		      const struct fr_chunk *b, const struct fr_chunk_proc *y)
{
	return x->uid == y->uid && x->start_ns == y->start_ns &&
	       same_bid(x->build_id_len, x->build_id, y->build_id_len, y->build_id) &&
	       strcmp(a->strings[x->comm], b->strings[y->comm]) == 0 &&
	       strcmp(a->strings[x->exe], b->strings[y->exe]) == 0;
}

static bool same_map(const struct fr_chunk *a, const struct fr_chunk_map *x,
		     const struct fr_chunk *b, const struct fr_chunk_map *y)
{
	return x->start == y->start && x->end == y->end && x->pgoff == y->pgoff &&
	       same_bid(x->build_id_len, x->build_id, y->build_id_len, y->build_id) &&
	       strcmp(a->strings[x->path], b->strings[y->path]) == 0;
}

/* Whether every mapping of `a` agrees with what `b` maps at its ends. */
static bool maps_agree(const struct fr_chunk *a, const struct fr_chunk *b)
{
	for (uint32_t i = 0; i < a->nmaps; i++) {
		const struct fr_chunk_map *m = &a->maps[i], *x;

		x = fr_chunk_find_map(b, m->pid, m->start);
		if (x && !same_map(a, m, b, x))
			return false;
		x = fr_chunk_find_map(b, m->pid, m->end - 1);
		if (x && !same_map(a, m, b, x))
			return false;
	}
	return true;
}

/* Whether part j agrees with each of parts 0..j-1. */
static bool agrees(const struct part *ps, size_t j)
{
	const struct fr_chunk *c = ps[j].c;

	for (size_t i = 0; i < j; i++) {
		const struct fr_chunk *o = ps[i].c;

		for (uint32_t k = 0; k < c->nprocs; k++) {
			const struct fr_chunk_proc *q = fr_chunk_find_proc(o, c->procs[k].pid);

			if (q && !same_proc(c, &c->procs[k], o, q))
				return false;
		}
		for (uint32_t k = 0; k < ps[j].nlab; k++) {
			const struct plabel *l = &ps[j].lab[k], *m = find_label(&ps[i], l->pid);

			if (!m)
				continue;
			if (l->ppid && m->ppid && l->ppid != m->ppid)
				return false;
			if (l->cgroup && m->cgroup && strcmp(l->cgroup, m->cgroup) != 0)
				return false;
		}
		for (uint32_t k = 0; k < c->nthreads; k++) {
			const struct fr_chunk_thread *t =
				fr_chunk_find_thread(o, c->threads[k].tid);

			if (t && t->pid != c->threads[k].pid)
				return false;
		}
		if (!maps_agree(c, o) || !maps_agree(o, c))
			return false;
	}
	return true;
}

int fr_chunk_merge_span(struct fr_chunk *const *parts, size_t n, size_t max_raw)
{
	struct part *ps;
	uint64_t raw;
	size_t k;

	if (n <= 1)
		return (int)n;
	ps = parts_init(parts, n);
	if (!ps)
		return -ENOMEM;
	raw = parts[0]->hdr.raw_len;
	for (k = 1; k < n; k++) {
		raw += parts[k]->hdr.raw_len;
		if (raw > max_raw || !agrees(ps, k))
			break;
	}
	parts_fini(ps, n);
	return (int)k;
}

/* ------------------------------------------------------------------ */
/* Merge                                                                */

/* The parts' names over time, by tid: a thread's changes from every part
 * in time order, each once (the recorder repeats a change in the chunk
 * after its own, for samples drained late), and its name before them. */
struct mnames {
	uint32_t tid;
	uint32_t first, n; /* into ctx.chg */
	const char *before;
	int64_t before_time; /* the first change's time where `before` was read */
};

struct mchange {
	uint32_t tid;
	int64_t time_ns;
	const char *name;
	const char *before; /* the part's name before its first change */
	int64_t first_time; /* that part's first change of the thread */
};

struct ctx {
	struct part *ps;
	size_t n;
	struct fr_name_change *chg;
	struct mnames *names;
	uint32_t nnames;
	struct fr_chunk *const *parts;
	uint64_t *app_base; /* part i's set k is app_ref app_base[i] + k */
};

static int cmp_mchange(const void *a, const void *b)
{
	const struct mchange *x = a, *y = b;

	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	if (x->time_ns != y->time_ns)
		return (x->time_ns > y->time_ns) - (x->time_ns < y->time_ns);
	return strcmp(x->name, y->name);
}

/* Fills x->names and x->chg from the parts. Returns 0 or -ENOMEM. */
static int names_init(struct ctx *x)
{
	struct mchange *all;
	size_t total = 0, k = 0;

	for (size_t i = 0; i < x->n; i++)
		total += x->ps[i].c->nname_changes;
	if (!total)
		return 0;
	all = malloc(total * sizeof(*all));
	x->chg = malloc(total * sizeof(*x->chg));
	x->names = malloc(total * sizeof(*x->names));
	if (!all || !x->chg || !x->names) {
		free(all);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->n; i++) {
		const struct fr_chunk *c = x->ps[i].c;

		for (uint32_t e = 0; e < c->nnames; e++) {
			const struct fr_chunk_names *nm = &c->names[e];
			const struct fr_chunk_name_change *ch = &c->name_changes[nm->first];

			for (uint32_t j = 0; j < nm->n; j++)
				all[k++] = (struct mchange){.tid = nm->tid,
							    .time_ns = ch[j].time_ns,
							    .name = c->strings[ch[j].name],
							    .before = c->strings[nm->before],
							    .first_time = ch[0].time_ns};
		}
	}
	qsort(all, total, sizeof(*all), cmp_mchange);
	k = 0;
	for (size_t i = 0; i < total; i++) {
		struct mnames *m = x->nnames ? &x->names[x->nnames - 1] : NULL;
		const struct mchange *a = &all[i];

		if (!m || m->tid != a->tid) {
			m = &x->names[x->nnames++];
			*m = (struct mnames){.tid = a->tid,
					     .first = (uint32_t)k,
					     .before = a->before,
					     .before_time = a->first_time};
		}
		/* The name before the earliest change any part saw. */
		if (a->first_time < m->before_time) {
			m->before = a->before;
			m->before_time = a->first_time;
		}
		if (m->n && x->chg[k - 1].time_ns == a->time_ns &&
		    strcmp(x->chg[k - 1].name, a->name) == 0)
			continue;
		x->chg[k++] = (struct fr_name_change){.time_ns = a->time_ns, .name = a->name};
		m->n++;
	}
	free(all);
	return 0;
}

static const struct mnames *find_names(const struct ctx *x, uint32_t tid)
{
	uint32_t lo = 0, hi = x->nnames;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (x->names[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->nnames && x->names[lo].tid == tid ? &x->names[lo] : NULL;
}

/* A process with a process entry in some part: that entry (the newest)
 * and the newest cgroup and parent known. A process that no part has
 * samples of (an ancestor): only its parent, for the ancestor sets. Else
 * unknown, as it was in its parts. */
static int m_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	const struct ctx *x = arg;
	const struct fr_chunk_proc *p = NULL;
	const struct fr_chunk *c = NULL;
	bool sampled = false;

	for (size_t i = x->n; i-- > 0 && !p;) {
		c = x->ps[i].c;
		p = fr_chunk_find_proc(c, pid);
	}
	out->pid = pid;
	out->comm = out->exe = "";
	if (p) {
		out->uid = p->uid;
		out->comm = c->strings[p->comm];
		out->exe = c->strings[p->exe];
		out->start_ns = p->start_ns;
		out->build_id_len = p->build_id_len;
		memcpy(out->build_id, p->build_id, p->build_id_len);
	}
	for (size_t i = x->n; i-- > 0;) {
		const struct plabel *l = find_label(&x->ps[i], pid);

		if (!l)
			continue;
		sampled |= l->sampled;
		if (!out->cgroup && l->cgroup)
			out->cgroup = l->cgroup;
		if (!out->ppid && l->ppid)
			out->ppid = l->ppid;
	}
	if (p)
		return 0;
	if (sampled || !out->ppid)
		return -ENOENT;
	out->cgroup = NULL;
	return 0;
}

static int m_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	const struct ctx *x = arg;
	const struct mnames *m = find_names(x, tid);

	if (m) {
		out->nchanges = m->n;
		out->changes = &x->chg[m->first];
		out->before = m->before;
		/* A main thread named only for its process's comm. */
		out->tid = out->pid = tid;
		out->name = x->chg[m->first + m->n - 1].name;
	}
	for (size_t i = x->n; i-- > 0;) {
		const struct fr_chunk_thread *t = fr_chunk_find_thread(x->ps[i].c, tid);

		if (!t)
			continue;
		/* Its creator from any part that knew it (section 2). */
		for (size_t k = i + 1; k-- > 0 && !out->creator;) {
			const struct fr_chunk_thread *o = fr_chunk_find_thread(x->ps[k].c, tid);

			out->creator = o ? o->creator : 0;
		}
		out->tid = tid;
		out->pid = t->pid;
		out->name = x->ps[i].c->strings[t->name];
		return 0;
	}
	return m ? 0 : -ENOENT;
}

static int m_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	const struct ctx *x = arg;

	for (size_t i = x->n; i-- > 0;) {
		const struct fr_chunk_map *m = fr_chunk_find_map(x->ps[i].c, pid, addr);

		if (m) {
			out->start = m->start;
			out->end = m->end;
			out->pgoff = m->pgoff;
			out->path = x->ps[i].c->strings[m->path];
			out->build_id_len = m->build_id_len;
			memcpy(out->build_id, m->build_id, m->build_id_len);
			return 0;
		}
	}
	return -ENOENT;
}

/* A merged sample's application labels: those of its set in its part,
 * named by the app_ref the merge gave it (0: none). */
static int m_app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			struct fr_app_label *out)
{
	const struct ctx *x = arg;
	const struct fr_chunk *c;
	const struct fr_chunk_labelset *ls;
	size_t i = x->n;

	if (ref == 0)
		return 0;
	while (i > 0 && x->app_base[i - 1] >= ref)
		i--;
	if (i == 0)
		return 0;
	c = x->parts[i - 1];
	if (ref - x->app_base[i - 1] >= c->napps)
		return 0;
	ls = &c->apps[ref - x->app_base[i - 1]];
	for (uint32_t k = 0; k < ls->npairs && k < FR_CHUNK_APP_PAIRS; k++) {
		out[k].key = c->app_strings[c->app_keys[ls->first + k]];
		out[k].value = c->app_strings[c->app_values[ls->first + k]];
	}
	return (int)(ls->npairs < FR_CHUNK_APP_PAIRS ? ls->npairs : FR_CHUNK_APP_PAIRS);
}

/* Numbers the parts' application label sets one after the other, so a
 * sample's app_ref names its set in its part. */
static uint64_t *app_bases(struct fr_chunk *const *parts, size_t n)
{
	uint64_t *base = malloc(n * sizeof(*base)), next = 0;

	for (size_t i = 0; base && i < n; i++) {
		base[i] = next;
		next += parts[i]->napps ? parts[i]->napps - 1 : 0;
	}
	if (base && next >= UINT32_MAX) {
		free(base);
		return NULL;
	}
	return base;
}

int fr_chunk_merge(struct fr_chunk *const *parts, size_t n, size_t max_raw, void **out,
		   size_t *out_len)
{
	struct fr_chunk_builder *b = NULL;
	struct ctx x = {.n = n, .parts = parts};
	struct fr_chunk_meta_ops ops = {
		.proc = m_proc,
		.thread = m_thread,
		.mapping = m_mapping,
		.app_labels = m_app_labels,
		.arg = &x,
	};
	uint64_t total = 0;
	int ret;

	*out = NULL;
	*out_len = 0;
	for (size_t i = 0; i < n; i++)
		total += parts[i]->nsamples;
	if (n == 0 || total >= (1u << 26))
		return -EFBIG;
	x.ps = parts_init(parts, n);
	x.app_base = app_bases(parts, n);
	b = fr_chunk_builder_new(total ? (uint32_t)total : 1, max_raw);
	if (!x.ps || !x.app_base || !b || names_init(&x) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct fr_chunk *c = parts[i];
		/* The merged stack id of each of the part's stacks, once known. */
		uint32_t *ids = malloc((c->nstacks ? c->nstacks : 1) * sizeof(*ids));

		if (!ids) {
			ret = -ENOMEM;
			goto out;
		}
		memset(ids, 0xff, (c->nstacks ? c->nstacks : 1) * sizeof(*ids));
		for (uint32_t k = 0; k < c->nsamples; k++) {
			const struct fr_chunk_stack *st = &c->stacks[c->stack[k]];
			struct fr_sample s = {
				.time_ns = c->time_ns[k],
				.pid = c->pid[k],
				.tid = c->tid[k],
				.cpu = c->cpu[k],
				.event = c->event[k],
				.weight = c->weight[k],
				.rate_hz = c->rate_hz[k],
				.nr_kernel = (uint16_t)st->nr_kernel,
				.nr_frames = (uint16_t)st->nr_frames,
				.ips = st->nr_frames ? &c->frames[st->first] : NULL,
				.app_ref = c->app && c->app[k]
						   ? (uint32_t)(x.app_base[i] + c->app[k])
						   : 0,
			};

			ret = fr_chunk_builder_add_known(b, &s, &ids[c->stack[k]]);
			if (ret < 0) {
				free(ids);
				ret = -EFBIG;
				goto out;
			}
		}
		free(ids);
		for (uint32_t e = 0; e < c->nevents; e++)
			fr_chunk_builder_count(b, c->events[e].event, c->events[e].lost,
					       c->events[e].throttled, c->events[e].truncated);
		for (uint32_t k = 0; k < c->ngaps; k++)
			fr_chunk_builder_gap(b, (enum fr_chunk_gap_kind)c->gaps[k].kind,
					     c->gaps[k].event, c->gaps[k].count, c->gaps[k].from_ns,
					     c->gaps[k].to_ns);
	}
	ret = fr_chunk_builder_seal(b, &ops, parts[n - 1]->hdr.clock_offset, out, out_len);
	if (ret == -ENODATA)
		ret = -EFBIG;
out:
	fr_chunk_builder_free(b);
	free(x.app_base);
	if (x.ps)
		parts_fini(x.ps, n);
	free(x.chg);
	free(x.names);
	return ret;
}
