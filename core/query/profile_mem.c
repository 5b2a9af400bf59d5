/* Memory profiles (see core/query/profile.c): the events alloc and heap,
 * built from the allocation records the recorder writes
 * (core/store/sample.h: FR_EVENT_ALLOC, FR_EVENT_ALLOC_FREE,
 * FR_EVENT_HEAP_LIVE).
 *
 * alloc: the allocations of the window [t0, t1), each weighed as
 * core/query/alloc_weight.h says (1/p blocks, size/p bytes): Go's columns
 * alloc_objects/count and alloc_space/bytes.
 *
 * heap: the same two over the window, then inuse_objects/count and
 * inuse_space/bytes at T = t1: per process, its last snapshot at or
 * before T (its FR_EVENT_HEAP_LIVE records, which share one time), plus
 * its allocations after the snapshot up to T, minus its frees after the
 * snapshot up to T. A process without a snapshot in what was read counts
 * its allocations minus its frees since the read began. The read reaches
 * back HEAP_LOOKBACK before T (two snapshot periods) whatever the window,
 * so a short window still finds the snapshot. A stack whose frees
 * outweigh what was seen of it (blocks allocated before the read, a
 * snapshot lost) would go below zero: it is counted 0 and the profile
 * says how many. With heap_diff, inuse_* is the growth between t0 and t1:
 * allocations minus frees in (t0, t1], negative where the heap shrank
 * (pprof allows negative values; -diff_base readers do the same).
 *
 * Rows are keyed without the thread: a block is often freed by another
 * thread than the one that allocated it, and the free record carries the
 * freeing thread. A heap profile's rows have no application labels
 * either: the recorder puts them on allocation records only, so a free
 * keyed by them would miss its allocation's row (profile_mem_labels()).
 * For the same reason a label filter narrows a heap profile's alloc_*
 * columns alone: its in-use ones are of every label (a comment says so),
 * rather than count a labelled block's allocation and never its free. Estimates are summed as doubles per row and rounded
 * when read, so the totals stay unbiased. Memory records are never
 * downsampled: they are sampled by bytes already, and their rate_hz is
 * the mean, not a rate.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/pprof/pprof.h"
#include "core/query/alloc_weight.h"
#include "core/query/profile_int.h"
#include "core/util/parse.h"

/* How far before T a heap profile reads: the last snapshot is at most
 * FR_HEAP_SNAPSHOT_NS old, with as much again for a late one. */
#define HEAP_LOOKBACK (2 * FR_HEAP_SNAPSHOT_NS)

/* Processes named in the comments, one line each; the rest are counted. */
#define MEM_COMMENT_PROCS 16

/* A process of a heap profile: its last snapshot at or before T (0:
 * none). */
struct mem_proc {
	uint32_t pid;
	bool used;
	int64_t snap;
};

struct mem_state {
	bool heap, diff;
	int64_t from; /* where the read starts */
	struct mem_proc *procs;
	uint32_t nprocs, cap; /* open addressing, cap a power of two */
	uint64_t clamped;     /* rows whose in-use went below zero */
	uint64_t allocs;      /* allocation records in [t0, t1) */
};

int profile_mem_setup(struct builder *b, char *err, size_t errlen)
{
	const struct fr_profile_request *req = b->req;

	/* The records go to heap when it is asked, else to alloc; alloc beside
	 * heap reads heap's alloc_* columns. */
	for (uint32_t e = 0; e < b->nev; e++)
		if (b->ev[e].id == FR_EVENT_HEAP)
			b->mem = e + 1;
	for (uint32_t e = 0; e < b->nev; e++) {
		if (b->ev[e].id != FR_EVENT_ALLOC)
			continue;
		if (b->mem)
			b->mem_alloc = e + 1;
		else
			b->mem = e + 1;
	}
	if (req->heap_diff && (!b->mem || b->ev[b->mem - 1].id != FR_EVENT_HEAP)) {
		snprintf(err, errlen,
			 "a diff is a profile of the heap's growth: ask for event heap");
		return -EINVAL;
	}
	if (!b->mem)
		return 0;
	b->ms = calloc(1, sizeof(*b->ms));
	if (!b->ms)
		return -ENOMEM;
	b->ms->heap = b->ev[b->mem - 1].id == FR_EVENT_HEAP;
	b->ms->diff = req->heap_diff != 0;
	b->ms->from = profile_mem_read_from(req);
	return 0;
}

int64_t profile_mem_read_from(const struct fr_profile_request *req)
{
	for (uint32_t e = 0; e < req->nevents && e < FR_LIMIT_EVENTS; e++)
		if (req->events[e] == FR_EVENT_HEAP && !req->heap_diff &&
		    req->t1 - HEAP_LOOKBACK < req->t0)
			return req->t1 - HEAP_LOOKBACK;
	return req->t0;
}

int64_t profile_mem_from(const struct builder *b)
{
	return b->ms ? b->ms->from : b->req->t0;
}

/* The entry of `pid`, added when `add`; NULL when absent (or out of
 * memory: *nomem set). */
static struct mem_proc *mem_proc(struct mem_state *ms, uint32_t pid, bool add, bool *nomem)
{
	uint32_t i;

	if (add && (ms->nprocs + 1) * 2 > ms->cap) {
		uint32_t cap = ms->cap ? ms->cap * 2 : 64;
		struct mem_proc *p = calloc(cap, sizeof(*p));

		if (!p || cap <= ms->cap) {
			free(p);
			*nomem = true;
			return NULL;
		}
		for (uint32_t j = 0; j < ms->cap; j++) {
			if (!ms->procs[j].used)
				continue;
			for (i = (uint32_t)fr_mix64(ms->procs[j].pid) & (cap - 1); p[i].used;
			     i = (i + 1) & (cap - 1))
				;
			p[i] = ms->procs[j];
		}
		free(ms->procs);
		ms->procs = p;
		ms->cap = cap;
	}
	if (!ms->cap)
		return NULL;
	for (i = (uint32_t)fr_mix64(pid) & (ms->cap - 1); ms->procs[i].used;
	     i = (i + 1) & (ms->cap - 1))
		if (ms->procs[i].pid == pid)
			return &ms->procs[i];
	if (!add)
		return NULL;
	ms->procs[i] = (struct mem_proc){.pid = pid, .used = true};
	ms->nprocs++;
	return &ms->procs[i];
}

static bool is_mem_record(uint32_t ev)
{
	return ev == FR_EVENT_ALLOC || ev == FR_EVENT_ALLOC_FREE || ev == FR_EVENT_HEAP_LIVE;
}

bool profile_mem_label_free(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	return profile_mem_take(b, c, i) && b->ms->heap;
}

bool profile_mem_take(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	int64_t t = c->time_ns[i];

	if (!b->ms || !is_mem_record(c->event[i]))
		return false;
	if (!b->ms->heap)
		return c->event[i] == FR_EVENT_ALLOC && t >= b->req->t0 && t < b->req->t1;
	/* A heap profile: up to T included, as a snapshot at T is. */
	return t >= b->ms->from && t <= b->req->t1;
}

int profile_mem_note(struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	struct mem_state *ms = b->ms;
	struct mem_proc *p;
	bool nomem = false;

	if (c->event[i] == FR_EVENT_ALLOC && c->time_ns[i] >= b->req->t0 &&
	    c->time_ns[i] < b->req->t1) {
		ms->allocs++;
		/* alloc beside heap: its samples are these. */
		if (b->mem_alloc)
			b->ev[b->mem_alloc - 1].res->samples_seen++;
	}
	if (!ms->heap || ms->diff)
		return 0;
	p = mem_proc(ms, c->pid[i], true, &nomem);
	if (!p)
		return -ENOMEM;
	if (c->event[i] == FR_EVENT_HEAP_LIVE && c->time_ns[i] > p->snap)
		p->snap = c->time_ns[i];
	return 0;
}

/* The sign record i of `c` counts into the in-use columns with: +1 (an
 * allocation, a block of the snapshot), -1 (a free) or 0 (not counted). */
static int inuse_sign(struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	struct mem_state *ms = b->ms;
	uint32_t ev = c->event[i];
	int64_t t = c->time_ns[i], snap = 0;
	bool nomem = false;
	struct mem_proc *p;

	if (!ms->heap || t > b->req->t1)
		return 0;
	if (ms->diff) {
		if (ev == FR_EVENT_HEAP_LIVE || t <= b->req->t0)
			return 0;
		return ev == FR_EVENT_ALLOC ? 1 : -1;
	}
	p = mem_proc(ms, c->pid[i], false, &nomem);
	if (p)
		snap = p->snap;
	if (ev == FR_EVENT_HEAP_LIVE)
		return snap && t == snap ? 1 : 0;
	if (snap && t <= snap)
		return 0;
	return ev == FR_EVENT_ALLOC ? 1 : -1;
}

int profile_mem_add(struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	uint32_t e = b->mem - 1;
	bool alloc = c->event[i] == FR_EVENT_ALLOC && c->time_ns[i] >= b->req->t0 &&
		     c->time_ns[i] < b->req->t1 && (!b->ms->heap || profile_app_ok(b, c, i));
	int sign = inuse_sign(b, c, i);
	double objects, bytes;
	struct gmem *m;
	int64_t row;

	if (!alloc && !sign)
		return 0;
	row = profile_row(b, c, i, true);
	if (row < 0)
		return (int)row;
	fr_alloc_scale(c->weight[i], c->rate_hz[i], &objects, &bytes);
	profile_count_stack(b, c, i, e);
	b->samples[row].count++;
	b->cells[(size_t)row * b->nev + e].n++;
	b->ev[e].res->samples_kept++;
	m = &b->mem_rows[row];
	if (alloc && b->mem_alloc)
		b->ev[b->mem_alloc - 1].res->samples_kept++;
	if (alloc) {
		m->v[MEM_ALLOC_OBJECTS] += objects;
		m->v[MEM_ALLOC_SPACE] += bytes;
	}
	m->v[MEM_INUSE_OBJECTS] += sign * objects;
	m->v[MEM_INUSE_SPACE] += sign * bytes;
	return 0;
}

int64_t profile_mem_value(const struct builder *b, uint32_t row, int col)
{
	double v = b->mem_rows[row].v[col];

	if (!b->samples[row].mem)
		return 0;
	if (v < 0 && col >= MEM_INUSE_OBJECTS && !b->ms->diff)
		return 0;
	return fr_alloc_round(v);
}

/* Drops the memory rows every column of which reads 0, counting those
 * whose in-use went below zero (outside a diff). Runs once aggregation is
 * done (the rows' index is gone). */
void profile_mem_finish(struct builder *b)
{
	uint32_t n = 0;

	if (!b->ms)
		return;
	for (uint32_t i = 0; i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];
		bool zero = s->mem;

		if (s->mem && !b->ms->diff &&
		    (b->mem_rows[i].v[MEM_INUSE_OBJECTS] < -0.5 ||
		     b->mem_rows[i].v[MEM_INUSE_SPACE] < -0.5))
			b->ms->clamped++;
		for (int k = 0; zero && k < MEM_COLUMNS; k++)
			zero = profile_mem_value(b, i, k) == 0;
		if (zero)
			continue;
		if (n != i) {
			b->samples[n] = b->samples[i];
			b->mem_rows[n] = b->mem_rows[i];
			memcpy(&b->cells[(size_t)n * b->nev], &b->cells[(size_t)i * b->nev],
			       b->nev * sizeof(*b->cells));
		}
		n++;
	}
	b->nsamples = n;
}

int64_t profile_mem_period(const struct builder *b)
{
	return b->ev[b->mem - 1].res->min_rate;
}

bool profile_mem_labels(const struct builder *b)
{
	return !b->ms || !b->ms->heap;
}

int64_t profile_mem_to(const struct builder *b)
{
	return b->ms && b->ms->heap ? b->req->t1 + 1 : b->req->t1;
}

static void comment(struct fr_pprof *p, const char *line)
{
	if (p)
		fr_pprof_comment(p, line);
}

/* Which snapshot each process's in-use counts from. */
static void snapshot_comments(const struct builder *b, struct fr_pprof *p)
{
	const struct mem_state *ms = b->ms;
	char line[256], t[64];
	uint32_t said = 0;

	for (uint32_t j = 0; j < ms->cap; j++) {
		const struct mem_proc *m = &ms->procs[j];

		if (!m->used || said++ >= MEM_COMMENT_PROCS)
			continue;
		if (m->snap)
			snprintf(line, sizeof(line), "heap of pid %u: snapshot at %s", m->pid,
				 fr_format_time(m->snap, t, sizeof(t)));
		else
			snprintf(line, sizeof(line), "heap of pid %u: no snapshot: since %s",
				 m->pid, fr_format_time(ms->from, t, sizeof(t)));
		comment(p, line);
	}
	if (said > MEM_COMMENT_PROCS) {
		snprintf(line, sizeof(line), "heap of %u more processes not listed",
			 said - MEM_COMMENT_PROCS);
		comment(p, line);
	}
}

void profile_mem_comments(const struct builder *b, struct fr_pprof *p)
{
	const struct fr_profile_event_result *er = b->ev[b->mem - 1].res;
	const struct mem_state *ms = b->ms;
	char line[512], a[32], c[32], t[64];

	if (!er->samples_seen) {
		comment(p, "no allocation samples: no process loaded libflightrec "
			   "(LD_PRELOAD=libflightrec.so) in this window, or none of the targets");
	} else {
		snprintf(line, sizeof(line),
			 "%" PRIu64
			 " allocation samples in the window; sampled by bytes, mean %s%s%s "
			 "(a block of size bytes weighs 1/p blocks and size/p bytes, "
			 "p = 1 - exp(-size/mean))",
			 ms->allocs, fr_format_size(er->min_rate, a, sizeof(a)),
			 er->max_rate != er->min_rate ? " to " : "",
			 er->max_rate != er->min_rate ? fr_format_size(er->max_rate, c, sizeof(c))
						      : "");
		comment(p, line);
		if (er->max_rate != er->min_rate)
			comment(p, "the means differ: the period is the smallest");
	}
	if (!ms->heap)
		return;
	if (ms->diff) {
		snprintf(line, sizeof(line),
			 "heap growth: inuse_objects and inuse_space are allocations minus frees "
			 "after %s up to the window's end; negative where the heap shrank",
			 fr_format_time(b->req->t0, t, sizeof(t)));
		comment(p, line);
		return;
	}
	snprintf(line, sizeof(line),
		 "in use at the window's end: per process its last heap snapshot, plus the "
		 "allocations after it, minus the frees after it");
	comment(p, line);
	snapshot_comments(b, p);
	if (fr_targets_labels_given(&b->req->targets))
		comment(p, "the labels asked for narrow alloc_objects and alloc_space only: frees "
			   "and live blocks are recorded without labels, so inuse_objects and "
			   "inuse_space are of every label");
	if (ms->clamped) {
		snprintf(line, sizeof(line),
			 "%" PRIu64 " stacks had more frees than allocations since their snapshot "
			 "(blocks allocated before what was read): their in-use counts 0",
			 ms->clamped);
		comment(p, line);
	}
}

void profile_mem_lost(const struct builder *b, uint32_t e, struct fr_pprof *p, const char *whose)
{
	char line[512];

	/* Lost on their way from the processes (their shared memory full,
	 * or a sampled block's address not tracked): the estimates are short
	 * of the samples, and the heap holds a block for each free lost. */
	if (b->ev[e].id == FR_EVENT_HEAP)
		snprintf(line, sizeof(line),
			 "%s: %" PRIu64 " allocation records lost in this window%s (samples, "
			 "frees of sampled blocks the libraries lost, blocks the recorder had "
			 "no room to follow: a block whose free was lost stays in use here); "
			 "see flightrec status: alloc",
			 b->ev[e].name, b->ev[e].res->lost, whose);
	else
		snprintf(line, sizeof(line),
			 "%s: %" PRIu64 " allocation samples lost in this window%s: the recorder "
			 "fell behind their processes",
			 b->ev[e].name, b->ev[e].res->lost, whose);
	comment(p, line);
}

void profile_mem_free(struct builder *b)
{
	if (b->ms)
		free(b->ms->procs);
	free(b->ms);
	free(b->mem_rows);
	b->ms = NULL;
	b->mem_rows = NULL;
}

bool profile_mem_inuse(const struct builder *b)
{
	return b->ms && b->ms->heap;
}

int profile_mem_col(const struct builder *b, uint32_t e)
{
	if (e + 1 == b->mem_alloc || (e + 1 == b->mem && !profile_mem_inuse(b)))
		return MEM_ALLOC_SPACE;
	return e + 1 == b->mem ? MEM_INUSE_SPACE : -1;
}

/* Go's names of the memory columns. */
static const char *const mem_types[MEM_COLUMNS] = {"alloc_objects", "alloc_space", "inuse_objects",
						   "inuse_space"};

/* The memory columns [*k, *end) event e gives: alloc its two; heap its
 * four, or its in-use two after an alloc asked before it (which gave
 * the others); an alloc after heap none. */
static void mem_span(const struct builder *b, uint32_t e, int *k, int *end)
{
	*k = *end = 0;
	if (e + 1 == b->mem_alloc) {
		if (b->mem_alloc < b->mem)
			*end = MEM_INUSE_OBJECTS;
	} else if (e + 1 == b->mem && !profile_mem_inuse(b)) {
		*end = MEM_INUSE_OBJECTS;
	} else if (e + 1 == b->mem) {
		*k = b->mem_alloc && b->mem_alloc < b->mem ? MEM_INUSE_OBJECTS : 0;
		*end = MEM_COLUMNS;
	}
}

uint32_t profile_columns(const struct builder *b, struct pcolumn *out)
{
	uint32_t n = 0, nmem = !!b->mem + !!b->mem_alloc;
	int k, end;

	/* A profile of memory alone has Go's columns and no other. */
	if (!(nmem && b->nev == nmem))
		out[n++] = (struct pcolumn){"samples", "count", -1, -1};
	for (uint32_t e = 0; e < b->nev; e++) {
		if (profile_mem_col(b, e) < 0) {
			out[n++] = (struct pcolumn){b->ev[e].name, fr_event_unit(b->ev[e].id),
						    (int)e, -1};
			continue;
		}
		for (mem_span(b, e, &k, &end); k < end; k++)
			out[n++] = (struct pcolumn){mem_types[k], k % 2 ? "bytes" : "count", (int)e,
						    k};
	}
	return n;
}

const char *profile_default_type(const struct builder *b)
{
	int col = profile_mem_col(b, 0);

	return col >= 0 ? mem_types[col] : b->ev[0].name;
}
