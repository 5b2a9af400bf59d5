/* The goroutines answer as a pprof (the contract in
 * recorder/requests/goroutines.h): one sample per goroutine, its stack
 * named from the program's own function table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pprof/pprof.h"
#include "core/symbols/gopclntab.h"
#include "core/util/grow.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "recorder/requests/goroutines.h"
#include "recorder/requests/goroutines_int.h"

#define INLINE_MAX 16
#define LABELS_MAX (12 + FR_GOROUTINE_LABELS)

int goroutines_fd_sink(void *arg, const void *buf, size_t len)
{
	int fd = *(int *)arg;
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Location ids by address: open addressing, grown at half full. */
struct locs {
	uint64_t *addr, *id;
	size_t cap, n;
};

static uint64_t *loc_slot(struct locs *t, uint64_t a)
{
	size_t i = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 20) & (t->cap - 1);

	while (t->addr[i] && t->addr[i] != a)
		i = (i + 1) & (t->cap - 1);
	return &t->addr[i];
}

static int loc_grow(struct locs *t)
{
	struct locs b = {calloc(t->cap ? 2 * t->cap : 1024, 8),
			 calloc(t->cap ? 2 * t->cap : 1024, 8), t->cap ? 2 * t->cap : 1024, t->n};

	if (!b.addr || !b.id) {
		free(b.addr);
		free(b.id);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->addr[i]) {
			uint64_t *s = loc_slot(&b, t->addr[i]);

			*s = t->addr[i];
			b.id[s - b.addr] = t->id[i];
		}
	free(t->addr);
	free(t->id);
	*t = b;
	return 0;
}

struct out {
	const struct glisting *l;
	struct fr_pprof *p;
	uint64_t mapping;
	struct locs locs;
};

/* The location of return address `pc` (link-time), its frames looked up
 * at pc - 1; 0 without memory. */
static uint64_t location(struct out *o, uint64_t pc)
{
	struct fr_dwarf_frame f[INLINE_MAX];
	struct fr_pprof_line lines[INLINE_MAX];
	uint64_t a = pc + o->l->bias, *slot;
	int n;

	if ((2 * (o->locs.n + 1) > o->locs.cap && loc_grow(&o->locs) < 0))
		return 0;
	slot = loc_slot(&o->locs, a);
	if (*slot)
		return o->locs.id[slot - o->locs.addr];
	n = fr_gopclntab_lookup(o->l->x.tab, pc - 1, f, INLINE_MAX);
	for (int i = 0; i < n; i++)
		lines[i] = (struct fr_pprof_line){fr_pprof_function(o->p, f[i].function,
								    f[i].function, f[i].file),
						  f[i].line};
	if (n <= 0) {
		/* Named by its offset in the executable (the mapping starts
		 * at its lowest address, offset 0), as profiles name an
		 * address no symbol covers: a location without a function
		 * is one a reader would try to name from the file. */
		const char *base = strrchr(o->l->exe, '/');
		char name[300];

		snprintf(name, sizeof(name), "%.256s+0x%" PRIx64, base ? base + 1 : o->l->exe,
			 pc - o->l->x.lo_vaddr);
		lines[0] = (struct fr_pprof_line){fr_pprof_function(o->p, name, NULL, NULL), 0};
		n = 1;
	}
	*slot = a;
	o->locs.n++;
	return o->locs.id[slot - o->locs.addr] =
		       fr_pprof_location_lines(o->p, o->mapping, a, lines, (size_t)n);
}

static const char *const ours[] = {"pid",	 "goid",       "creator_goid", "waiting_ns",
				   "thread",	 "state",      "wait",	       "start",
				   "created_by", "created_at", "waited",       "stack"};

static int is_ours(const char *k)
{
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (strcmp(ours[i], k) == 0)
			return 1;
	return 0;
}

static const char *const stack_notes[] = {NULL, "running", "changed", "cut"};

/* The labels of g into lb (LABELS_MAX), strings in buf. */
static size_t labels(const struct glisting *l, const struct grec *g, struct fr_pprof_label *lb,
		     char (*buf)[FR_GOROUTINE_KEY_MAX + 3], char *created_at, size_t atlen)
{
	const char *wait = g->waitreason < l->x.nwait ? l->x.wait_reason[g->waitreason] : NULL;
	const char *kv = l->labs + g->lab_at;
	size_t n = 0;

	lb[n++] = (struct fr_pprof_label){"pid", NULL, l->pid};
	lb[n++] = (struct fr_pprof_label){"goid", NULL, (int64_t)g->goid};
	if (g->parent)
		lb[n++] = (struct fr_pprof_label){"creator_goid", NULL, (int64_t)g->parent};
	lb[n++] = (struct fr_pprof_label){"state", fr_gstatus_name(g->status), 0};
	if (g->status == FR_G_WAITING)
		lb[n++] = (struct fr_pprof_label){"wait", wait && *wait ? wait : "unknown", 0};
	if (g->waiting_ns) {
		lb[n++] = (struct fr_pprof_label){"waiting_ns", NULL, g->waiting_ns};
		lb[n++] = (struct fr_pprof_label){"waited", "at least", 0};
	}
	if (g->tid)
		lb[n++] = (struct fr_pprof_label){"thread", NULL, g->tid};
	if (g->start)
		lb[n++] = (struct fr_pprof_label){"start", g->start, 0};
	if (g->created_by) {
		lb[n++] = (struct fr_pprof_label){"created_by", g->created_by, 0};
		snprintf(created_at, atlen, "%s:%u", g->created_file ? g->created_file : "?",
			 g->created_line);
		lb[n++] = (struct fr_pprof_label){"created_at", created_at, 0};
	}
	if (stack_notes[g->stack])
		lb[n++] = (struct fr_pprof_label){"stack", stack_notes[g->stack], 0};
	for (uint32_t i = 0; i < g->nlabels && n < LABELS_MAX; i++) {
		const char *k = kv, *v = kv + strlen(kv) + 1;

		kv = v + strlen(v) + 1;
		if (is_ours(k)) {
			snprintf(buf[i], sizeof(buf[i]), "go:%s", k);
			k = buf[i];
		}
		lb[n++] = (struct fr_pprof_label){k, v, 0};
	}
	return n;
}

static void sample(struct out *o, const struct grec *g)
{
	uint64_t loc[FR_GOROUTINE_DEPTH];
	struct fr_pprof_label lb[LABELS_MAX];
	char keys[FR_GOROUTINE_LABELS][FR_GOROUTINE_KEY_MAX + 3], at[512];
	int64_t v[2] = {1, g->waiting_ns};
	size_t n = 0, nl = labels(o->l, g, lb, keys, at, sizeof(at));

	for (uint32_t i = 0; i < g->npc; i++)
		if ((loc[n] = location(o, o->l->pcs[g->pc_at + i])))
			n++;
	fr_pprof_sample(o->p, loc, n, v, 2, lb, nl);
}

/* A process's comments and mapping. */
static void head(struct out *o, uint64_t system)
{
	const struct glisting *l = o->l;
	char line[160];

	snprintf(line, sizeof(line), "pid=%" PRIu32, l->pid);
	fr_pprof_comment(o->p, line);
	snprintf(line, sizeof(line), "go=%s", l->x.version);
	fr_pprof_comment(o->p, line);
	snprintf(line, sizeof(line), "uid=%" PRIu32, l->uid);
	fr_pprof_comment(o->p, line);
	snprintf(line, sizeof(line), "system=%" PRIu64, system);
	fr_pprof_comment(o->p, line);
	o->mapping =
		fr_pprof_mapping(o->p, l->x.lo_vaddr + l->bias, UINT64_MAX, 0, l->exe, NULL,
				 FR_PPROF_HAS_FUNCTIONS | FR_PPROF_HAS_FILENAMES |
					 FR_PPROF_HAS_LINE_NUMBERS | FR_PPROF_HAS_INLINE_FRAMES);
}

int goroutines_write(struct glisting *const *ls, size_t nls, int fd, uint64_t *system,
		     uint64_t *bytes)
{
	struct out o = {0};
	struct stat st;
	int ret;

	*system = 0;
	if (!(o.p = fr_pprof_new(6, goroutines_fd_sink, &fd)))
		return -ENOMEM;
	fr_pprof_sample_type(o.p, "goroutines", "count");
	fr_pprof_sample_type(o.p, "waiting", "nanoseconds");
	fr_pprof_period(o.p, "goroutines", "count", 1);
	fr_pprof_default_sample_type(o.p, "goroutines");
	fr_pprof_time(o.p, fr_now_real_ns(), 0);
	for (size_t k = 0; k < nls; k++) {
		const struct glisting *l = ls[k];
		uint64_t sys = 0;

		for (size_t i = 0; i < l->n; i++)
			sys += (uint64_t)l->g[i].system;
		*system += sys;
		/* Addresses are the process's own: one table per process. */
		o.l = l;
		o.locs.n = 0;
		if (o.locs.cap)
			memset(o.locs.addr, 0, o.locs.cap * sizeof(*o.locs.addr));
		head(&o, sys);
		for (size_t i = 0; i < l->n; i++)
			if (!l->g[i].system)
				sample(&o, &l->g[i]);
	}
	ret = fr_pprof_finish(o.p);
	fr_pprof_free(o.p);
	free(o.locs.addr);
	free(o.locs.id);
	*bytes = ret == 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	return ret;
}
