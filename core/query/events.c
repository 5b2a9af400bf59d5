/* The black box's events of a window (core/query/events.h): one pass over
 * the window's chunks, each black-box sample of a visible, targeted
 * process copied out with its labels and, for a crash, its stack named.
 */
#include "core/query/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/symbols/demangle.h"
#include "core/symbols/dwarf_lines.h"
#include "core/symbols/symbols.h"

const char *fr_events_type_name(uint32_t event)
{
	return event == FR_EVENT_OOM ? "oom_kill" : fr_event_name(event);
}

int fr_events_parse_types(const char *list, uint64_t *types, char *err, size_t errlen)
{
	const char *p = list;

	*types = 0;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[40];
		int64_t id;

		if (len == 0 || len >= sizeof(name))
			goto bad;
		memcpy(name, p, len);
		name[len] = '\0';
		if (strcmp(name, "pressure") == 0) {
			*types |= 1ull << FR_EVENT_MEM_PRESSURE | 1ull << FR_EVENT_CPU_PRESSURE |
				  1ull << FR_EVENT_IO_PRESSURE;
		} else {
			id = strcmp(name, "oom_kill") == 0 ? FR_EVENT_OOM : fr_event_lookup(name);
			if (id < 0 || id >= FR_EVENT_COUNT || !fr_event_is_blackbox((uint32_t)id)) {
				snprintf(err, errlen, "unknown event type \"%s\" (types: %s)", name,
					 FR_EVENTS_TYPES);
				return -EINVAL;
			}
			*types |= 1ull << id;
		}
		p += len + (end != NULL);
		if (end && !*p)
			goto bad;
	}
	if (*types)
		return 0;
bad:
	snprintf(err, errlen, "\"%s\" is not a comma-separated list of event types (%s)", list,
		 FR_EVENTS_TYPES);
	return -EINVAL;
}

/* ---- which samples ---------------------------------------------------- */

/* Whether an event is one of the series, once a second. */
static int is_series(uint32_t event)
{
	return event == FR_EVENT_MEM_PRESSURE || event == FR_EVENT_CPU_PRESSURE ||
	       event == FR_EVENT_IO_PRESSURE || event == FR_EVENT_THROTTLED;
}

static int wanted_type(const struct fr_events_request *req, uint32_t event)
{
	if (event >= FR_EVENT_COUNT || !fr_event_is_blackbox(event))
		return 0;
	return !req->types || (req->types >> event & 1);
}

/* Whether cgroup `cg` is `want` or below it (a trailing '/' of want
 * ignored; "/" takes every cgroup). */
static int cgroup_under(const char *cg, const char *want)
{
	size_t n = strlen(want);

	while (n > 1 && want[n - 1] == '/')
		n--;
	if (!cg)
		return 0;
	if (n == 1 && want[0] == '/')
		return 1;
	return strncmp(cg, want, n) == 0 && (cg[n] == '\0' || cg[n] == '/');
}

/* Whether sample i of `c` (process `pid`, command name `comm`, cgroup
 * `cg`) is one the request lists. */
static int wanted_proc(const struct fr_events_request *req, const struct fr_chunk *c, uint32_t pid,
		       const char *comm, const char *cg)
{
	const struct fr_targets *t = &req->targets;
	const struct fr_chunk_proc *p;
	int ok;

	if (pid == 0)
		/* The machine's series: everyone's, no process to target. */
		return !(t->npids || t->ncomms || t->cgroup[0]) || req->types_named;
	if (t->has_uid) {
		p = fr_chunk_find_proc(c, pid);
		if (!p || p->uid != t->uid)
			return 0;
	}
	if (t->npids) {
		ok = 0;
		for (uint32_t k = 0; k < t->npids && !ok; k++)
			ok = t->pids[k] == pid;
		if (!ok)
			return 0;
	}
	if (t->ncomms) {
		ok = 0;
		for (uint32_t k = 0; k < t->ncomms && !ok; k++)
			ok = strcmp(t->comms[k], comm) == 0;
		if (!ok)
			return 0;
	}
	return !t->cgroup[0] || cgroup_under(cg, t->cgroup);
}

/* ---- stacks --------------------------------------------------------- */

/* Appends a frame to `it` (capacity *cap). Returns it, or NULL. */
static struct fr_events_frame *push_frame(struct fr_events_item *it, uint32_t *cap)
{
	if (it->nframes == *cap) {
		uint32_t n = *cap ? 2 * *cap : 16;
		struct fr_events_frame *v = realloc(it->frames, n * sizeof(*v));

		if (!v)
			return NULL;
		it->frames = v;
		*cap = n;
	}
	memset(&it->frames[it->nframes], 0, sizeof(it->frames[0]));
	return &it->frames[it->nframes++];
}

/* Appends frame k (address `addr`, leaf when k == 0) of process `pid` of
 * chunk `c` to `it`, named: a user address whose DWARF has inlined
 * functions there gives one frame for each, innermost first. Returns 0 or
 * -ENOMEM. */
static int add_frame(struct fr_symbols *syms, const struct fr_chunk *c, struct fr_events_item *it,
		     uint32_t *cap, uint32_t k, uint64_t addr, int kernel, int hide_kernel)
{
	struct fr_dwarf_frame df[FR_DWARF_MAX_FRAMES];
	struct fr_events_frame *f = push_frame(it, cap);
	const struct fr_chunk_map *m;
	const struct fr_chunk_proc *p;
	struct fr_dwarf_lines *dw;
	const char *name = NULL, *path;
	char buf[1024], root[64];
	uint64_t lookup = k == 0 ? addr : addr - 1, elf_addr = 0;
	int n;

	if (!f)
		return -ENOMEM;
	f->addr = kernel && hide_kernel ? 0 : addr;
	f->kernel = kernel;
	if (FR_FRAME_IS_MARK(addr)) {
		snprintf(buf, sizeof(buf), "[truncated: %s]",
			 fr_frame_mark_name(FR_FRAME_MARK_REASON(addr)));
		return (f->function = strdup(buf)) ? 0 : -ENOMEM;
	}
	if (FR_FRAME_IS_NOTE(addr))
		return (f->function = strdup(fr_frame_note_name(FR_FRAME_NOTE_OF(addr)))) ? 0
											  : -ENOMEM;
	if (!syms)
		return 0;
	if (kernel) {
		if (fr_symbols_kernel(syms, addr, &name) == 0 && !(f->function = strdup(name)))
			return -ENOMEM;
		return 0;
	}
	m = fr_chunk_find_map(c, it->pid, lookup);
	if (!m)
		return 0;
	p = fr_chunk_find_proc(c, it->pid);
	fr_symbols_set_owner(syms, p ? p->uid : 0);
	snprintf(root, sizeof(root), "/proc/%u/root", it->pid);
	path = c->strings[m->path];
	if (fr_symbols_user(syms, root, path, m->build_id, m->build_id_len, m->start, m->pgoff,
			    lookup, &name, &elf_addr) != 0) {
		const char *base = strrchr(path, '/');

		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base ? base + 1 : path,
			 lookup - m->start + m->pgoff);
		return (f->function = strdup(buf)) ? 0 : -ENOMEM;
	}
	if (!fr_demangle(name, buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "%s", name);
	dw = fr_symbols_user_dwarf(syms, root, path, m->build_id, m->build_id_len);
	n = dw ? fr_dwarf_lines_lookup(dw, elf_addr, df, FR_DWARF_MAX_FRAMES) : 0;
	if (n <= 0 || !df[0].file || !df[0].line)
		return (f->function = strdup(buf)) ? 0 : -ENOMEM;
	for (int j = 0; j < n; j++) {
		/* The outermost is the symbol's function, named as
		 * everywhere; an inlined one by its DWARF name. */
		const char *fn = j == n - 1 || !df[j].function ? buf : df[j].function;

		if (j && !(f = push_frame(it, cap)))
			return -ENOMEM;
		f->addr = addr;
		f->function = strdup(fn);
		f->file = df[j].file ? strdup(df[j].file) : NULL;
		f->line = df[j].line;
		if (!f->function || (df[j].file && !f->file))
			return -ENOMEM;
	}
	return 0;
}

static int copy_stack(struct fr_events *e, const struct fr_events_request *req,
		      const struct fr_chunk *c, uint32_t i, struct fr_symbols *syms,
		      struct fr_events_item *it)
{
	const struct fr_chunk_stack *st = &c->stacks[c->stack[i]];
	uint32_t cap = 0;

	/* Past FR_EVENTS_STACKS_MAX stacks, addresses alone. */
	if (e->stacks_named++ >= FR_EVENTS_STACKS_MAX)
		syms = NULL;
	for (uint32_t k = 0; k < st->nr_frames; k++) {
		int ret = add_frame(syms, c, it, &cap, k, c->frames[st->first + k],
				    k < st->nr_kernel, req->targets.has_uid);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ---- one chunk ------------------------------------------------------ */

static int copy_labels(const struct fr_chunk *c, uint32_t i, struct fr_events_item *it)
{
	const struct fr_chunk_labelset *s;
	uint32_t set = c->app ? c->app[i] : 0;

	if (!c->apps || set == 0 || set >= c->napps)
		return 0;
	s = &c->apps[set];
	if (!s->npairs)
		return 0;
	it->labels = calloc(s->npairs, sizeof(*it->labels));
	if (!it->labels)
		return -ENOMEM;
	for (uint32_t k = 0; k < s->npairs; k++) {
		struct fr_events_label *l = &it->labels[it->nlabels++];

		l->key = strdup(c->app_strings[c->app_keys[s->first + k]]);
		l->value = strdup(c->app_strings[c->app_values[s->first + k]]);
		if (!l->key || !l->value)
			return -ENOMEM;
	}
	return 0;
}

static void item_fini(struct fr_events_item *it)
{
	for (uint32_t k = 0; k < it->nlabels; k++) {
		free(it->labels[k].key);
		free(it->labels[k].value);
	}
	for (uint32_t k = 0; k < it->nframes; k++) {
		free(it->frames[k].function);
		free(it->frames[k].file);
	}
	free(it->labels);
	free(it->frames);
	free(it->cgroup);
}

int fr_events_add_chunk(struct fr_events *e, const struct fr_events_request *req,
			const struct fr_chunk *c, struct fr_symbols *syms)
{
	for (uint32_t i = 0; i < c->nsamples; i++) {
		uint32_t ev = c->event[i], pid = c->pid[i], key;
		struct fr_chunk_proc_labels pl;
		struct fr_events_item *it;
		const char *comm;
		int ret;

		if (c->time_ns[i] < e->t0 || c->time_ns[i] >= e->t1 || !wanted_type(req, ev))
			continue;
		key = pid ? fr_chunk_comm_at(c, pid, c->time_ns[i]) : 0;
		comm = key ? c->strings[key] : "";
		fr_chunk_labelset_proc(c, c->labelset[i], &pl);
		if (!wanted_proc(req, c, pid, comm, pl.cgroup))
			continue;
		/* The series have a bound of their own: a day of pressure
		 * never pushes a crash out of the list. */
		if (is_series(ev) ? e->nseries == (e->max ? e->max : FR_EVENTS_SERIES_MAX)
				  : e->n - e->nseries == (e->max ? e->max : FR_EVENTS_MAX)) {
			e->more++;
			continue;
		}
		e->nseries += is_series(ev);
		if (e->n == e->cap) {
			size_t cap = e->cap ? 2 * e->cap : 16;
			struct fr_events_item *v = realloc(e->items, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			e->items = v;
			e->cap = cap;
		}
		it = &e->items[e->n];
		memset(it, 0, sizeof(*it));
		e->n++;
		it->time_ns = c->time_ns[i];
		it->event = ev;
		it->pid = pid;
		it->tid = c->tid[i];
		it->weight = c->weight[i];
		snprintf(it->comm, sizeof(it->comm), "%s", comm);
		if (pl.cgroup && !(it->cgroup = strdup(pl.cgroup)))
			return -ENOMEM;
		ret = copy_labels(c, i, it);
		if (ret == 0 && ev == FR_EVENT_CRASH)
			ret = copy_stack(e, req, c, i, syms, it);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct fr_events_item *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->event < y->event ? -1 : x->event > y->event;
}

void fr_events_sort(struct fr_events *e)
{
	if (e->n > 1)
		qsort(e->items, e->n, sizeof(*e->items), by_time);
}

const char *fr_events_label(const struct fr_events_item *it, const char *key)
{
	for (uint32_t k = 0; k < it->nlabels; k++) {
		if (strcmp(it->labels[k].key, key) == 0)
			return it->labels[k].value;
	}
	return NULL;
}

void fr_events_free(struct fr_events *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		item_fini(&e->items[i]);
	free(e->items);
	free(e);
}

/* ---- the window ----------------------------------------------------- */

static struct fr_symbols *make_symbols(const struct fr_events_request *req)
{
	struct fr_symbols *syms;

	if (!req->symbolize)
		return NULL;
	syms = fr_symbols_new(req->kallsyms);
	if (!syms)
		return NULL;
	/* As a profile limited to a user: only a file whose build id is the
	 * mapping's names it. */
	if (req->targets.has_uid)
		fr_symbols_require_build_id(syms);
	if (fr_symbols_set_paths(syms, req->symbol_cache, req->debug_dirs, req->ndebug_dirs) < 0) {
		fr_symbols_free(syms);
		return NULL;
	}
	return syms;
}

int fr_events_collect(struct fr_ring *ring, const struct fr_events_request *req,
		      struct fr_events **out, char *err, size_t errlen)
{
	struct fr_events *e = calloc(1, sizeof(*e));
	struct fr_symbols *syms = NULL;
	struct fr_ring_ref *refs = NULL;
	size_t nrefs = 0;
	int ret;

	*out = NULL;
	err[0] = '\0';
	if (!e)
		return -ENOMEM;
	e->t0 = req->t0;
	e->t1 = req->t1;
	e->uid_limited = req->targets.has_uid;
	if (req->t1 <= req->t0 || req->t0 < 0) {
		snprintf(err, errlen, "the window is empty");
		fr_events_free(e);
		return -EINVAL;
	}
	ret = fr_ring_query(ring, req->t0, req->t1, &refs, &nrefs);
	if (ret < 0) {
		snprintf(err, errlen, "cannot query the ring: %s", strerror(-ret));
		fr_events_free(e);
		return ret;
	}
	syms = make_symbols(req);
	for (size_t r = 0; r < nrefs && ret == 0; r++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		if (req->stop && req->stop(req->stop_arg)) {
			snprintf(err, errlen, "stopped: the client went away");
			ret = -ECANCELED;
			break;
		}
		if (fr_ring_read(ring, &refs[r], &buf) < 0) {
			e->chunks_skipped++;
			continue;
		}
		ret = fr_chunk_decode(buf, refs[r].len, &c);
		if (ret == 0) {
			e->chunks++;
			ret = fr_events_add_chunk(e, req, c, syms);
		} else if (ret != -ENOMEM) {
			e->chunks_skipped++;
			ret = 0;
		}
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
	fr_symbols_free(syms);
	if (ret < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s",
				 ret == -ENOMEM ? "out of memory" : strerror(-ret));
		fr_events_free(e);
		return ret;
	}
	fr_events_sort(e);
	*out = e;
	return 0;
}
