/* Timelines (core/query/timeline.h): one pass over the chunks of the
 * window, each sample's value added to the cell (group, step) it falls in.
 *
 * Groups are found once per stack, label set, name or application label
 * set of each chunk, not per sample (a chunk's samples share a few of
 * each), and cells live in one open-addressing table keyed by (group,
 * step): a host with thousands of short-lived processes has many groups
 * but few cells each, so nothing is sized groups x steps until the top
 * groups are known. Off-CPU waits, ended and still going on, are
 * core/query/timeline_waits.c's.
 *
 * Every sample of the window is decoded: an hour at 999 Hz on 2 CPUs (7.2
 * million samples) takes about 0.16 s of CPU, most of it the chunk
 * decoder's (docs/performance.md, "Timeline"), so the chunk format has no
 * summary for it.
 */
#include "core/query/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/timeline_int.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/hash.h"

/* ---- cells ---------------------------------------------------------- */

static uint64_t cell_hash(uint64_t key)
{
	key *= 0x9e3779b97f4a7c15ull;
	return key ^ (key >> 29);
}

int tl_charge(struct tl *tl, int64_t delta)
{
	int64_t more;

	tl->bytes += (uint64_t)delta;
	if (!tl->limit || delta <= 0 || tl->bytes <= tl->limit)
		return 0;
	more = tl->req->grow ? tl->req->grow(tl->req->grow_arg, tl->bytes) : -E2BIG;
	if (more < (int64_t)tl->bytes)
		return -E2BIG;
	tl->limit = (uint64_t)more;
	return 0;
}

static int cells_grow(struct tl *tl)
{
	struct tl_cells *m = &tl->cells;
	size_t cap = m->cap ? m->cap * 2 : 4096;
	uint64_t *keys, *vals;

	/* The old table and the new while it is copied; the old goes after. */
	if (tl_charge(tl, (int64_t)(cap * 2 * sizeof(*keys))) < 0)
		return -E2BIG;
	tl->bytes -= m->cap * 2 * sizeof(*keys);
	keys = calloc(cap, sizeof(*keys));
	vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = cell_hash(m->keys[i]) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

/* Adds v to cell (g, step) as `mode` says (tl_combine); the key is never
 * 0 (group g is stored g + 1). Samples come in (cpu, time) order, so the
 * cell of the previous one is usually the next one's: it is tried first. */
static int cells_add(struct tl *tl, uint32_t g, uint32_t step, uint64_t v, int mode)
{
	struct tl_cells *m = &tl->cells;
	uint64_t key = ((uint64_t)(g + 1) << 32) | step;
	size_t j;
	int ret;

	if (m->cap && m->keys[m->last] == key) {
		m->vals[m->last] = tl_combine(mode, m->vals[m->last], v);
		return 0;
	}
	if (2 * (m->n + 1) > m->cap && (ret = cells_grow(tl)) < 0)
		return ret;
	for (j = cell_hash(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		if (m->keys[j] == key) {
			m->vals[j] = tl_combine(mode, m->vals[j], v);
			m->last = j;
			return 0;
		}
	}
	m->keys[j] = key;
	m->vals[j] = v;
	m->n++;
	m->last = j;
	return 0;
}

/* ---- groups --------------------------------------------------------- */

int tl_group(struct tl *tl, uint32_t pid, const char *name, uint32_t *out)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET ^ fr_hash_u32(pid), name, strlen(name));
	struct tl_group *g;

	for (struct hnode *n = fr_htable_first(&tl->ht, h); n; n = n->next) {
		g = (struct tl_group *)n;
		if (n->hash == h && g->pid == pid && strcmp(g->name, name) == 0) {
			*out = g->idx;
			return 0;
		}
	}
	/* A group, its name and its slot in the hash table. */
	if (tl_charge(tl, (int64_t)(sizeof(*g) + strlen(name) + 1 + 2 * sizeof(void *))) < 0)
		return -E2BIG;
	if (tl->ngroups == tl->groups_cap) {
		size_t cap = tl->groups_cap ? 2 * tl->groups_cap : 256;
		struct tl_group **v;

		if (tl_charge(tl, (int64_t)((cap - tl->groups_cap) * sizeof(*v))) < 0)
			return -E2BIG;
		v = realloc(tl->groups, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tl->groups = v;
		tl->groups_cap = cap;
	}
	g = calloc(1, sizeof(*g) + strlen(name) + 1);
	if (!g)
		return -ENOMEM;
	g->node.hash = h;
	g->pid = pid;
	g->idx = tl->ngroups;
	strcpy(g->name, name);
	if (fr_htable_insert(&tl->ht, &g->node) < 0) {
		free(g);
		return -ENOMEM;
	}
	tl->groups[tl->ngroups++] = g;
	*out = g->idx;
	return 0;
}

void tl_note_event(struct tl *tl, uint32_t event)
{
	struct fr_timeline *t = tl->t;
	uint32_t i;

	if (FR_EVENT_IS_OPEN_WAIT(event))
		event = FR_EVENT_OFFCPU;
	/* The heap's records: its profile can be asked of the window, as it
	 * can wherever allocations were sampled. */
	if (event == FR_EVENT_ALLOC)
		tl_note_event(tl, FR_EVENT_HEAP);
	if (event == FR_EVENT_ALLOC_FREE || event == FR_EVENT_HEAP_LIVE)
		event = FR_EVENT_HEAP;
	for (i = 0; i < t->nevents && t->events[i] < event; i++)
		;
	if ((i < t->nevents && t->events[i] == event) || t->nevents == FR_TIMELINE_EVENTS_MAX)
		return;
	memmove(&t->events[i + 1], &t->events[i], (t->nevents - i) * sizeof(t->events[0]));
	t->events[i] = event;
	t->nevents++;
}

/* Adds `v` of group g at `time`; an off-CPU wait (TL_SPREAD) is shared
 * out over [time - v, time), clipped to the window; a gauge (TL_GAUGE)
 * keeps the largest value of a step, and of the group as its total. */
int tl_add(struct tl *tl, uint32_t g, int64_t time, uint64_t v, int mode)
{
	const struct fr_timeline *t = tl->t;
	int spread = mode == TL_SPREAD;
	int64_t from = spread ? time - (int64_t)(v > INT64_MAX / 2 ? INT64_MAX / 2 : v) : time;
	int64_t a, b, k;
	int ret;

	if (!spread) {
		if (time < t->start_ns || time >= t->end_ns)
			return 0;
		tl->groups[g]->total = tl_combine(mode, tl->groups[g]->total, v);
		/* The previous sample's step, most often, without a division. */
		if (time < tl->step_at || time >= tl->step_at + t->step_ns) {
			tl->step = (uint32_t)((time - t->start_ns) / t->step_ns);
			tl->step_at = t->start_ns + (int64_t)tl->step * t->step_ns;
		}
		return cells_add(tl, g, tl->step, v, mode);
	}
	a = from > t->start_ns ? from : t->start_ns;
	b = time < t->end_ns ? time : t->end_ns;
	for (k = (a - t->start_ns) / t->step_ns; a < b; k++) {
		int64_t e = t->start_ns + (k + 1) * t->step_ns;

		e = e < b ? e : b;
		tl->groups[g]->total += (uint64_t)(e - a);
		ret = cells_add(tl, g, (uint32_t)k, (uint64_t)(e - a), TL_SUM);
		if (ret < 0)
			return ret;
		a = e;
	}
	return 0;
}

/* ---- the samples of a decoded chunk ----------------------------------- */

/* What a chunk's samples resolve to, found once each (-1: not yet). */
struct chunk_groups {
	int32_t *by_stack; /* process, comm without renames: the group */
	int8_t *vis;	   /* by stack: 1 visible, 0 not, 2 by comm, -1 not yet */
	int32_t *by_key;   /* comm: by string id; cgroup: by label set;
			    * label: by application set or cpu */
	uint32_t nkeys;
};

static const char *UNKNOWN = "[unknown]";

/* Whether the process `pid` of chunk c may be shown: 1 yes, 0 no, 2 when
 * its command name decides, per sample (named_in()). */
static int visible(const struct tl *tl, const struct fr_chunk *c, uint32_t pid)
{
	const struct fr_targets *t = tl->req->targets;
	const struct fr_chunk_proc *p;

	if (tl->req->has_uid && (!(p = fr_chunk_find_proc(c, pid)) || p->uid != tl->req->uid))
		return 0;
	if (!t || pid == 0)
		return 1;
	if (t->npids) {
		uint32_t k = 0;

		while (k < t->npids && t->pids[k] != pid)
			k++;
		if (k == t->npids)
			return 0;
	}
	return t->ncomms ? 2 : 1;
}

/* Whether sample i's process had one of the targets' command names at the
 * sample's time. */
static int named_in(const struct tl *tl, const struct fr_chunk *c, uint32_t i)
{
	const struct fr_targets *t = tl->req->targets;
	uint32_t key = fr_chunk_comm_at(c, c->pid[i], c->time_ns[i]);

	if (!key)
		return 0;
	for (uint32_t k = 0; k < t->ncomms; k++)
		if (strcmp(c->strings[key], t->comms[k]) == 0)
			return 1;
	return 0;
}

/* The value of application label key on set `set`, NULL when none. */
static const char *app_value(const struct fr_chunk *c, uint32_t set, const char *key)
{
	const struct fr_chunk_labelset *s;

	if (!c->apps || set == 0 || set >= c->napps)
		return NULL;
	s = &c->apps[set];
	for (uint32_t k = 0; k < s->npairs; k++) {
		if (strcmp(c->app_strings[c->app_keys[s->first + k]], key) == 0)
			return c->app_strings[c->app_values[s->first + k]];
	}
	return NULL;
}

/* The group of visible sample i, or tl_group()'s -errno. */
static int64_t sample_group(struct tl *tl, struct chunk_groups *cg, const struct fr_chunk *c,
			    uint32_t i)
{
	uint32_t st = c->stack[i], pid = c->pid[i], key, g;
	const char *name = UNKNOWN;
	char buf[FR_TIMELINE_NAME_MAX];
	int32_t *slot;
	int ret;

	/* The machine's own samples (memory-, cpu-, io-pressure): no
	 * process. */
	if (pid == 0) {
		ret = tl_group(tl, 0, "[machine]", &g);
		return ret < 0 ? (int64_t)ret : (int64_t)g;
	}
	switch (tl->req->by) {
	case FR_TIMELINE_BY_PROCESS:
		/* A group is a (pid, comm): a process renamed within the chunk
		 * (-2: it has names over time) is named per sample, others
		 * once per stack. */
		slot = &cg->by_stack[st];
		if (*slot >= 0)
			return *slot;
		if (*slot == -1 && fr_chunk_find_names(c, pid))
			*slot = -2;
		key = fr_chunk_comm_at(c, pid, c->time_ns[i]);
		ret = tl_group(tl, pid, key ? c->strings[key] : UNKNOWN, &g);
		if (ret < 0)
			return ret;
		if (*slot == -1)
			*slot = (int32_t)g;
		return g;
	case FR_TIMELINE_BY_COMM:
		key = fr_chunk_comm_at(c, pid, c->time_ns[i]);
		slot = key < cg->nkeys ? &cg->by_key[key] : NULL;
		name = key ? c->strings[key] : UNKNOWN;
		break;
	case FR_TIMELINE_BY_CGROUP: {
		struct fr_chunk_proc_labels l;

		key = c->labelset[i];
		slot = key < cg->nkeys ? &cg->by_key[key] : NULL;
		if (slot && *slot >= 0)
			return *slot;
		fr_chunk_labelset_proc(c, key, &l);
		name = l.cgroup ? l.cgroup : UNKNOWN;
		break;
	}
	default:
		if (strcmp(tl->req->label_key, "cpu") == 0) {
			key = c->cpu[i];
			snprintf(buf, sizeof(buf), "%u", key);
			name = buf;
		} else {
			key = c->app ? c->app[i] : 0;
			name = app_value(c, key, tl->req->label_key);
			name = name ? name : "[none]";
		}
		slot = key < cg->nkeys ? &cg->by_key[key] : NULL;
		break;
	}
	if (slot && *slot >= 0)
		return *slot;
	ret = tl_group(tl, 0, name, &g);
	if (ret < 0)
		return ret;
	if (slot)
		*slot = (int32_t)g;
	return g;
}

static int add_chunk(struct tl *tl, const struct fr_chunk *c)
{
	struct chunk_groups cg = {0};
	uint32_t event = tl->req->event, last_event = UINT32_MAX;
	int mode = tl_mode(event), offcpu = event == FR_EVENT_OFFCPU, ret = 0;
	size_t scratch = 0;

	switch (tl->req->by) {
	case FR_TIMELINE_BY_COMM: cg.nkeys = c->nstrings; break;
	case FR_TIMELINE_BY_CGROUP: cg.nkeys = c->nlabelsets; break;
	case FR_TIMELINE_BY_LABEL:
		cg.nkeys = strcmp(tl->req->label_key, "cpu") == 0 ? 1024 : c->napps;
		break;
	default: break;
	}
	scratch =
		(c->nstacks + 1) * (sizeof(*cg.by_stack) + 1) + (cg.nkeys + 1) * sizeof(*cg.by_key);
	if (tl_charge(tl, (int64_t)scratch) < 0) {
		ret = -E2BIG;
		goto out;
	}
	cg.by_stack = malloc((c->nstacks + 1) * sizeof(*cg.by_stack));
	cg.vis = malloc(c->nstacks + 1);
	cg.by_key = malloc((cg.nkeys + 1) * sizeof(*cg.by_key));
	if (!cg.by_stack || !cg.vis || !cg.by_key) {
		ret = -ENOMEM;
		goto out;
	}
	memset(cg.by_stack, 0xff, (c->nstacks + 1) * sizeof(*cg.by_stack));
	memset(cg.vis, 0xff, c->nstacks + 1);
	memset(cg.by_key, 0xff, (cg.nkeys + 1) * sizeof(*cg.by_key));
	for (uint32_t i = 0; i < c->nsamples && ret == 0; i++) {
		uint32_t st = c->stack[i];
		int in = c->time_ns[i] >= tl->t->start_ns && c->time_ns[i] < tl->t->end_ns;
		int64_t g;

		if (cg.vis[st] < 0)
			cg.vis[st] = (int8_t)visible(tl, c, c->pid[i]);
		if (!cg.vis[st] || (cg.vis[st] == 2 && !named_in(tl, c, i)))
			continue;
		if (in && c->event[i] != last_event) {
			last_event = c->event[i];
			tl_note_event(tl, last_event);
		}
		/* Crashes, kills and deaths by a signal, whatever the event. */
		if (in && (ret = tl_mark(tl, c, i)) < 0)
			break;
		if (c->event[i] != event && !(offcpu && FR_EVENT_IS_OPEN_WAIT(c->event[i])))
			continue;
		g = sample_group(tl, &cg, c, i);
		if (g < 0)
			ret = (int)g;
		else if (!offcpu)
			ret = tl_add(tl, (uint32_t)g, c->time_ns[i],
				     tl_value(event, tl_weight(c, i)), mode);
		else if (FR_EVENT_IS_OPEN_WAIT(c->event[i]))
			ret = tl_wait_open(tl, (uint32_t)g, c->tid[i], c->time_ns[i], c->weight[i]);
		else
			ret = tl_wait_ended(tl, (uint32_t)g, c->tid[i], c->time_ns[i],
					    c->weight[i]);
		if (ret == 0 && in && event == FR_EVENT_OOM)
			ret = tl_victim(tl, c, i);
		/* Samples of the event; an open-wait record is not one. */
		tl->t->samples += in && c->event[i] == event;
	}
out:
	tl->bytes -= scratch;
	free(cg.by_stack);
	free(cg.vis);
	free(cg.by_key);
	return ret;
}

/* ---- the result ------------------------------------------------------- */

static int by_total(const void *a, const void *b)
{
	const struct tl_group *x = *(struct tl_group *const *)a, *y = *(struct tl_group *const *)b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The top groups and "other" into tl->t, from the cells. */
static int finish(struct tl *tl)
{
	struct fr_timeline *t = tl->t;
	uint32_t top = tl->req->top ? tl->req->top : FR_TIMELINE_TOP_DEFAULT, n = 0, listed;
	int mode = tl_mode(tl->req->event);
	int32_t *rank;

	top = top > FR_TIMELINE_TOP_MAX ? FR_TIMELINE_TOP_MAX : top;
	for (uint32_t g = 0; g < tl->ngroups; g++) {
		/* The machine's pressure is listed even when it was 0 all
		 * along: that is the answer, not a lack of samples. */
		if (tl->groups[g]->total || tl->req->event == FR_EVENT_MEM_PRESSURE ||
		    tl->req->event == FR_EVENT_CPU_PRESSURE ||
		    tl->req->event == FR_EVENT_IO_PRESSURE)
			tl->groups[n++] = tl->groups[g];
	}
	/* Groups without a value are freed with the table, not listed. */
	qsort(tl->groups, n, sizeof(*tl->groups), by_total);
	listed = n > top ? top : n;
	t->ngroups = listed + (n > top);
	if (tl_charge(tl, (int64_t)((t->ngroups + 1) *
					    (sizeof(*t->groups) + t->nsteps * sizeof(uint64_t)) +
				    (tl->ngroups + 1) * sizeof(*rank))) < 0)
		return -E2BIG;
	t->groups = calloc(t->ngroups + 1, sizeof(*t->groups));
	rank = malloc((tl->ngroups + 1) * sizeof(*rank));
	if (!t->groups || !rank) {
		free(rank);
		return -ENOMEM;
	}
	memset(rank, 0xff, (tl->ngroups + 1) * sizeof(*rank));
	for (uint32_t r = 0; r < t->ngroups; r++) {
		struct fr_timeline_group *o = &t->groups[r];

		o->values = calloc(t->nsteps, sizeof(*o->values));
		if (!o->values) {
			free(rank);
			return -ENOMEM;
		}
		if (r == listed) {
			o->other = 1;
			snprintf(o->name, sizeof(o->name), "other");
			continue;
		}
		rank[tl->groups[r]->idx] = (int32_t)r;
		o->pid = tl->groups[r]->pid;
		if (t->by == FR_TIMELINE_BY_PROCESS && o->pid)
			snprintf(o->name, sizeof(o->name), "%s (%u)", tl->groups[r]->name, o->pid);
		else
			snprintf(o->name, sizeof(o->name), "%s", tl->groups[r]->name);
	}
	for (size_t j = 0; j < tl->cells.cap; j++) {
		uint64_t key = tl->cells.keys[j];
		uint32_t g = (uint32_t)(key >> 32) - 1, step = (uint32_t)key;
		int32_t r;

		if (!key || step >= t->nsteps)
			continue;
		r = rank[g] >= 0 ? rank[g] : (int32_t)listed;
		if ((uint32_t)r >= t->ngroups)
			continue;
		t->groups[r].values[step] =
			tl_combine(mode, t->groups[r].values[step], tl->cells.vals[j]);
		t->groups[r].total = tl_combine(mode, t->groups[r].total, tl->cells.vals[j]);
	}
	free(rank);
	return 0;
}

static void free_group(struct hnode *n)
{
	free(n);
}

/* Checks `req` and lays out the steps of t. Returns 0 or -EINVAL. */
static int setup(const struct fr_timeline_request *req, struct fr_timeline *t, char *err,
		 size_t errlen)
{
	int64_t step = req->step_ns ? req->step_ns : fr_timeline_default_step(req->t1 - req->t0);
	uint64_t nsteps;

	if (req->t1 <= req->t0 || req->t0 < 0) {
		snprintf(err, errlen, "the window is empty");
		return -EINVAL;
	}
	if (step < 1000000) {
		snprintf(err, errlen, "the step must be at least 1ms");
		return -EINVAL;
	}
	if (FR_EVENT_IS_RAW(req->event) ? FR_EVENT_RAW_CODE(req->event) == 0
	    : FR_EVENT_IS_RAWX(req->event)
		    ? 0
		    : req->event >= FR_EVENT_COUNT || req->event == FR_EVENT_RAW) {
		snprintf(err, errlen, "event id %#x is not an event flightrec knows (%s)",
			 req->event, FR_EVENT_NAMES);
		return -EINVAL;
	}
	if (req->event == FR_EVENT_HEAP) {
		snprintf(err, errlen,
			 "heap is what is in use at a moment (flightrec attach --event heap); "
			 "a timeline of memory is alloc (bytes allocated per step)");
		return -EINVAL;
	}
	if (req->by > FR_TIMELINE_BY_LABEL ||
	    (req->by == FR_TIMELINE_BY_LABEL &&
	     (!req->label_key[0] ||
	      strnlen(req->label_key, FR_LIMIT_LABEL_LEN) == FR_LIMIT_LABEL_LEN))) {
		snprintf(err, errlen,
			 "--by is process, comm, cgroup or label:KEY (a key of 1 to %d "
			 "characters)",
			 FR_LIMIT_LABEL_LEN - 1);
		return -EINVAL;
	}
	/* Steps are aligned to multiples of the step since the epoch, so two
	 * timelines of one ring line up and whole seconds can come from
	 * summaries. Too many steps: the step is widened. */
	for (;;) {
		t->start_ns = req->t0 / step * step;
		t->end_ns = req->t1 > INT64_MAX - step ? INT64_MAX / step * step
						       : (req->t1 + step - 1) / step * step;
		nsteps = (uint64_t)((t->end_ns - t->start_ns) / step);
		if (nsteps <= FR_TIMELINE_STEPS_MAX)
			break;
		step = fr_timeline_default_step((t->end_ns - t->start_ns) / FR_TIMELINE_STEPS_MAX *
						60);
	}
	t->step_ns = step;
	t->nsteps = (uint32_t)nsteps;
	t->event = req->event;
	t->by = req->by;
	snprintf(t->label_key, sizeof(t->label_key), "%s", req->label_key);
	return 0;
}

/* Adds `n` samples lost in [from, to] to the steps, each its share of
 * the span; the share outside the window is not counted. */
static void spread_lost(struct fr_timeline *t, uint64_t n, int64_t from, int64_t to)
{
	int64_t a = from > t->start_ns ? from : t->start_ns;
	int64_t b = to < t->end_ns ? to : t->end_ns;
	uint64_t span = (uint64_t)(to - from), given = 0, done = 0;

	if (to == from) {
		if (from >= t->start_ns && from < t->end_ns) {
			t->lost_steps[(from - t->start_ns) / t->step_ns] += n;
			t->lost += n;
		}
		return;
	}
	/* The part before the window counts as given, so rounding is the
	 * same whatever the window. */
	done = a > from ? (uint64_t)(a - from) : 0;
	given = (uint64_t)((unsigned __int128)n * done / span);
	for (int64_t k = a < b ? (a - t->start_ns) / t->step_ns : 0; a < b; k++) {
		int64_t e = t->start_ns + (k + 1) * t->step_ns;
		uint64_t upto;

		e = e < b ? e : b;
		done += (uint64_t)(e - a);
		upto = (uint64_t)((unsigned __int128)n * done / span);
		t->lost_steps[k] += upto - given;
		t->lost += upto - given;
		given = upto;
		a = e;
	}
}

/* Marks the steps that [from, to] overlaps as stalled. */
static void mark_stalled(struct fr_timeline *t, int64_t from, int64_t to)
{
	int64_t a = from > t->start_ns ? from : t->start_ns;
	int64_t b = to < t->end_ns ? to : t->end_ns;

	if (a >= b)
		return;
	for (int64_t k = (a - t->start_ns) / t->step_ns; k < t->nsteps; k++) {
		if (t->start_ns + k * t->step_ns >= b)
			break;
		t->stalled_steps[k] = 1;
	}
}

/* The chunk's lost samples of the event and its stalls (see "lost" and
 * "stalled" in core/query/timeline.h): a loss the chunk says the time of
 * (its gaps, core/store/chunk.h section 4) spread over that time, the
 * rest in the step of the chunk's end. */
static void add_losses(struct fr_timeline *t, const struct fr_chunk *c)
{
	int64_t at = c->hdr.last_ns;
	uint32_t k;

	for (uint32_t i = 0; i < c->ngaps; i++)
		if (c->gaps[i].kind == FR_GAP_STALL)
			mark_stalled(t, c->gaps[i].from_ns, c->gaps[i].to_ns);
	for (uint32_t e = 0; e < c->nevents; e++) {
		uint64_t left;

		if (c->events[e].event != t->event || !c->events[e].lost)
			continue;
		left = c->events[e].lost;
		for (uint32_t i = 0; i < c->ngaps && left; i++) {
			const struct fr_chunk_gap *g = &c->gaps[i];
			uint64_t n = g->count < left ? g->count : left;

			if (g->kind != FR_GAP_LOST || g->event != t->event)
				continue;
			spread_lost(t, n, g->from_ns, g->to_ns);
			left -= n;
		}
		if (!left)
			continue;
		at = at < t->start_ns ? t->start_ns : at >= t->end_ns ? t->end_ns - 1 : at;
		k = (uint32_t)((at - t->start_ns) / t->step_ns);
		if (k >= t->nsteps)
			k = t->nsteps - 1;
		t->lost_steps[k] += left;
		t->lost += left;
	}
}

static int read_chunks(struct tl *tl, struct fr_ring *ring, char *err, size_t errlen)
{
	struct fr_timeline *t = tl->t;
	struct fr_ring_ref *refs = NULL;
	size_t nrefs = 0;
	int ret = fr_ring_query(ring, t->start_ns, t->end_ns, &refs, &nrefs);

	if (ret < 0) {
		snprintf(err, errlen, "cannot query the ring: %s", strerror(-ret));
		return ret;
	}
	for (size_t r = 0; r < nrefs && ret == 0; r++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;
		uint64_t held;

		if (tl->req->stop && tl->req->stop(tl->req->stop_arg)) {
			snprintf(err, errlen, "stopped: the client went away");
			ret = -ECANCELED;
			break;
		}
		/* The chunk as read and decoded (about twice its block). */
		held = refs[r].len + 2 * (uint64_t)refs[r].raw_len;
		ret = tl_charge(tl, (int64_t)held);
		if (ret < 0) {
			tl->bytes -= held;
			break;
		}
		if (fr_ring_read(ring, &refs[r], &buf) < 0) {
			tl->bytes -= held;
			t->chunks_skipped++;
			continue;
		}
		ret = fr_chunk_decode(buf, refs[r].len, &c);
		if (ret == 0) {
			t->chunks++;
			ret = add_chunk(tl, c);
			if (ret == 0)
				add_losses(t, c);
		} else if (ret != -ENOMEM) {
			t->chunks_skipped++;
			ret = 0;
		}
		fr_chunk_free(c);
		free(buf);
		tl->bytes -= held;
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory while reading the window");
	free(refs);
	return ret;
}

/* Distinct groups a step is assumed to have at most, for the estimate. */
#define ESTIMATE_GROUPS 512
/* A cell in a table at most half full, and its copy while it grows. */
#define ESTIMATE_CELL 64u
#define ESTIMATE_FIXED ((uint64_t)2 << 20)

int64_t fr_timeline_estimate(struct fr_ring *ring, const struct fr_timeline_request *req)
{
	struct fr_timeline t = {0};
	struct fr_ring_ref *refs = NULL;
	uint64_t chunk = 0, samples = 0, cells, top;
	size_t nrefs = 0;
	char err[8];
	int ret;

	if (setup(req, &t, err, sizeof(err)) < 0)
		return 0;
	ret = fr_ring_query(ring, t.start_ns, t.end_ns, &refs, &nrefs);
	if (ret < 0)
		return ret;
	for (size_t r = 0; r < nrefs; r++) {
		uint64_t held = refs[r].len + 2 * (uint64_t)refs[r].raw_len;

		chunk = held > chunk ? held : chunk;
		samples += refs[r].nsamples;
	}
	free(refs);
	cells = (uint64_t)t.nsteps * ESTIMATE_GROUPS;
	cells = samples < cells ? samples : cells;
	top = (req->top ? req->top : FR_TIMELINE_TOP_DEFAULT) + 2;
	return (int64_t)(ESTIMATE_FIXED + chunk + cells * ESTIMATE_CELL +
			 top * t.nsteps * sizeof(uint64_t));
}

int fr_timeline_compute(struct fr_ring *ring, const struct fr_timeline_request *req,
			struct fr_timeline **out, char *err, size_t errlen)
{
	struct fr_timeline *t = calloc(1, sizeof(*t));
	struct fr_ring_stats st;
	struct tl tl = {.req = req, .t = t, .limit = req->max_bytes};
	int ret;

	err[0] = '\0';
	*out = NULL;
	if (!t)
		return -ENOMEM;
	ret = setup(req, t, err, errlen);
	if (ret < 0)
		goto out;
	t->lost_steps = calloc(t->nsteps, sizeof(*t->lost_steps));
	t->stalled_steps = calloc(t->nsteps, 1);
	if (!t->lost_steps || !t->stalled_steps) {
		ret = -ENOMEM;
		goto out;
	}
	fr_ring_get_stats(ring, &st);
	t->ring_first_ns = st.chunks ? st.oldest_ns : 0;
	t->ring_last_ns = st.chunks ? st.newest_ns : 0;
	ret = read_chunks(&tl, ring, err, errlen);
	if (ret == 0 && req->event == FR_EVENT_OFFCPU)
		ret = tl_waits_finish(&tl);
	if (ret == 0)
		ret = finish(&tl);
out:
	if (ret == -E2BIG)
		snprintf(err, errlen,
			 "the window needs more than the %llu MiB of memory this timeline may "
			 "take; ask for a shorter window, a wider step or fewer groups",
			 (unsigned long long)((tl.limit + (1 << 20) - 1) >> 20));
	else if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	fr_htable_fini(&tl.ht, free_group);
	free(tl.groups);
	free(tl.cells.keys);
	free(tl.cells.vals);
	tl_waits_free(&tl.waits);
	if (ret < 0) {
		fr_timeline_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

void fr_timeline_free(struct fr_timeline *t)
{
	if (!t)
		return;
	for (uint32_t g = 0; t->groups && g < t->ngroups; g++)
		free(t->groups[g].values);
	free(t->groups);
	free(t->lost_steps);
	free(t->stalled_steps);
	free(t->victims);
	free(t->marks);
	free(t);
}
