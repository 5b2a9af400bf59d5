/* A chunk's sections about its threads (format in core/store/chunk.h):
 * names over time (section 1) and creators (section 2).
 *
 * A thread's name in the thread table is the one it had at seal time; a
 * thread renamed while the chunk was open (a pool thread that names itself
 * after its task, a program that exec'd) would give all its samples of the
 * chunk that one name. This file owns the section that keeps each rename
 * with its time: writing it at seal (asked of the same thread callback
 * that fills the thread table), reading it back, and the look-ups that
 * name a sample as it was at its time.
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/util/le.h"

/* The tids whose names over time the chunk may need, sorted and distinct:
 * its sampled threads and its processes' main threads (for comm). Calls
 * fn on each; stops at the first negative answer and returns it. */
static int each_named_tid(const struct seal *s, int (*fn)(struct seal *, uint32_t, void *),
			  struct seal *ws, void *arg)
{
	size_t i = 0, j = 0;

	while (i < s->ntids || j < s->npids) {
		uint32_t tid;
		int ret;

		if (j >= s->npids || (i < s->ntids && s->tids[i] < s->pids[j]))
			tid = s->tids[i++];
		else if (i >= s->ntids || s->pids[j] < s->tids[i])
			tid = s->pids[j++];
		else
			tid = s->tids[i++], j++;
		ret = fn(ws, tid, arg);
		if (ret < 0)
			return ret;
	}
	return 0;
}

struct names_ctx {
	const struct fr_chunk_meta_ops *ops;
	size_t strings; /* strings the section may intern */
	int64_t first_ns;
	int64_t prev_tid;
};

static int ask(const struct names_ctx *x, uint32_t tid, struct fr_thread_info *ti)
{
	memset(ti, 0, sizeof(*ti));
	if (!x->ops || !x->ops->thread || x->ops->thread(x->ops->arg, tid, ti) < 0)
		return 0;
	return ti->nchanges && ti->changes;
}

static int count_one(struct seal *s, uint32_t tid, void *arg)
{
	struct names_ctx *x = arg;
	struct fr_thread_info ti;

	(void)s;
	if (ask(x, tid, &ti))
		x->strings += 1 + (size_t)ti.nchanges;
	return 0;
}

size_t chunk_names_strings(const struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	struct names_ctx x = {.ops = ops};

	each_named_tid(s, count_one, NULL, &x);
	return x.strings;
}

static int write_one(struct seal *s, uint32_t tid, void *arg)
{
	struct names_ctx *x = arg;
	struct fr_thread_info ti;
	int64_t prev = x->first_ns, before;

	if (!ask(x, tid, &ti))
		return 0;
	before = chunk_strtab_intern(&s->strs, ti.before);
	if (before < 0)
		return -ENOMEM;
	wb_v(&s->names, (uint64_t)((int64_t)tid - x->prev_tid - 1));
	wb_v(&s->names, (uint64_t)before);
	wb_v(&s->names, ti.nchanges);
	for (uint32_t k = 0; k < ti.nchanges; k++) {
		/* The callback gives them in time order; a time before the
		 * previous one (a clock step between two records) is stored
		 * as the previous, so readers may rely on the order. */
		int64_t t = ti.changes[k].time_ns, name;

		if (k && t < prev)
			t = prev;
		name = chunk_strtab_intern(&s->strs, ti.changes[k].name);
		if (name < 0)
			return -ENOMEM;
		wb_z(&s->names, (int64_t)((uint64_t)t - (uint64_t)prev));
		wb_v(&s->names, (uint64_t)name);
		prev = t;
	}
	s->nnames++;
	x->prev_tid = tid;
	return s->names.err;
}

int chunk_seal_names(struct seal *s, const struct fr_chunk_meta_ops *ops, int64_t first_ns)
{
	struct names_ctx x = {.ops = ops, .first_ns = first_ns, .prev_tid = -1};

	return each_named_tid(s, write_one, s, &x);
}

void chunk_seal_creator(struct seal *s, uint32_t tid, uint32_t creator)
{
	/* Threads are sealed in increasing tid order. */
	if (!creator)
		return;
	wb_v(&s->creators, s->ncreators ? tid - s->creator_prev - 1 : tid);
	wb_v(&s->creators, creator);
	s->creator_prev = tid;
	s->ncreators++;
}

/* ------------------------------------------------------------------ */
/* Reading                                                              */

static int get_u32(const unsigned char **p, const unsigned char *end, uint32_t limit, uint32_t *out)
{
	uint64_t v;

	if (fr_varint_get(p, end, &v) < 0 || v >= limit)
		return -EBADMSG;
	*out = (uint32_t)v;
	return 0;
}

int chunk_decode_names(struct fr_chunk *c, const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;
	uint32_t count, total = 0;
	int64_t tid = -1;
	uint64_t v;

	/* An entry takes at least 5 bytes (gap, before, n, one change of
	 * two), a change at least 2. */
	if (get_u32(&p, end, (uint32_t)(len / 5) + 1, &count) < 0)
		return -EBADMSG;
	c->names = calloc(count ? count : 1, sizeof(*c->names));
	c->name_changes = calloc(len / 2 + 1, sizeof(*c->name_changes));
	if (!c->names || !c->name_changes)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct fr_chunk_names *e = &c->names[i];
		int64_t t = c->hdr.first_ns;

		if (fr_varint_get(&p, end, &v) < 0 ||
		    v > (uint64_t)UINT32_MAX - (uint64_t)(tid + 1))
			return -EBADMSG;
		tid += 1 + (int64_t)v;
		e->tid = (uint32_t)tid;
		if (get_u32(&p, end, c->nstrings, &e->before) < 0 ||
		    get_u32(&p, end, (uint32_t)((size_t)(end - p) / 2) + 1, &e->n) < 0 || !e->n)
			return -EBADMSG;
		e->first = total;
		for (uint32_t k = 0; k < e->n; k++) {
			struct fr_chunk_name_change *ch = &c->name_changes[total];
			int64_t d;

			if (fr_varint_get(&p, end, &v) < 0)
				return -EBADMSG;
			d = fr_unzigzag(v);
			/* Times never go back within a thread. */
			if ((k && d < 0) || get_u32(&p, end, c->nstrings, &ch->name) < 0)
				return -EBADMSG;
			t = (int64_t)((uint64_t)t + (uint64_t)d);
			ch->time_ns = t;
			total++;
		}
		c->nnames = i + 1;
	}
	c->nname_changes = total;
	return p == end ? 0 : -EBADMSG;
}

int chunk_decode_creators(struct fr_chunk *c, const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;
	int64_t tid = -1;
	uint32_t count;
	uint64_t v;

	if (get_u32(&p, end, (uint32_t)(len / 2) + 1, &count) < 0)
		return -EBADMSG;
	for (uint32_t i = 0; i < count; i++) {
		struct fr_chunk_thread *th;
		uint32_t creator;

		if (fr_varint_get(&p, end, &v) < 0 ||
		    v > (uint64_t)UINT32_MAX - (uint64_t)(tid + 1))
			return -EBADMSG;
		tid += 1 + (int64_t)v;
		th = (struct fr_chunk_thread *)fr_chunk_find_thread(c, (uint32_t)tid);
		if (!th || get_u32(&p, end, UINT32_MAX, &creator) < 0 || !creator)
			return -EBADMSG;
		th->creator = creator;
	}
	return p == end ? 0 : -EBADMSG;
}

/* ------------------------------------------------------------------ */
/* Look-ups                                                             */

const struct fr_chunk_names *fr_chunk_find_names(const struct fr_chunk *c, uint32_t tid)
{
	uint32_t lo = 0, hi = c->nnames;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->names[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nnames && c->names[lo].tid == tid ? &c->names[lo] : NULL;
}

/* The name of entry `e` at `t`: the last change at or before t. */
static uint32_t names_at(const struct fr_chunk *c, const struct fr_chunk_names *e, int64_t t)
{
	const struct fr_chunk_name_change *ch = &c->name_changes[e->first];
	uint32_t lo = 0, hi = e->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ch[mid].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? ch[lo - 1].name : e->before;
}

uint32_t fr_chunk_thread_name_at(const struct fr_chunk *c, uint32_t tid, int64_t time_ns)
{
	const struct fr_chunk_names *e = fr_chunk_find_names(c, tid);
	const struct fr_chunk_thread *th;

	if (e)
		return names_at(c, e, time_ns);
	th = fr_chunk_find_thread(c, tid);
	return th ? th->name : 0;
}

uint32_t fr_chunk_comm_at(const struct fr_chunk *c, uint32_t pid, int64_t time_ns)
{
	const struct fr_chunk_names *e = fr_chunk_find_names(c, pid);
	const struct fr_chunk_proc *p;

	if (e)
		return names_at(c, e, time_ns);
	p = fr_chunk_find_proc(c, pid);
	return p ? p->comm : 0;
}
