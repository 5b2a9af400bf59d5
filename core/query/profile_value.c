/* Reading a profile as a value (core/query/profile_value.h): its samples,
 * locations, functions and mappings, as the pprof writer gets them. It is
 * built and emitted in core/query/profile.c.
 */
#include "core/query/profile_value.h"

#include <stdio.h>
#include <string.h>

#include "core/query/profile_int.h"

const uint32_t *fr_profile_events(const struct fr_profile *p, uint32_t *n)
{
	*n = p->b.nev;
	return p->events;
}

int fr_profile_event_column(const struct fr_profile *p, uint32_t event)
{
	for (uint32_t e = 0; e < p->b.nev; e++)
		if (p->events[e] == event)
			return (int)e;
	return -1;
}

size_t fr_profile_nsamples(const struct fr_profile *p)
{
	return p->b.nsamples;
}

uint32_t fr_profile_nlocations(const struct fr_profile *p)
{
	return p->b.nlocs;
}

uint32_t fr_profile_nmappings(const struct fr_profile *p)
{
	return p->b.nmaps;
}

/* The value of row `row` for event `e`: for cpu, kept samples times the
 * period (every kept sample stands for exactly 1e9/hz ns, and the total
 * stays a whole multiple of it); for the others, the scaled weights. */
static int64_t cell_value(const struct builder *b, uint32_t row, uint32_t e)
{
	const struct gcell *cl = &b->cells[(size_t)row * b->nev + e];

	if (b->ev[e].id == FR_EVENT_CPU && b->ev[e].target)
		return (int64_t)cl->n * (FR_NS_PER_S / b->ev[e].target);
	/* A memory event's value is its default column's bytes. */
	if (profile_mem_col(b, e) >= 0)
		return profile_mem_value(b, row, profile_mem_col(b, e));
	return (int64_t)cl->v;
}

void fr_profile_sample(const struct fr_profile *p, size_t i, struct fr_profile_sample *out)
{
	const struct builder *b = &p->b;
	const struct gsample *s = &b->samples[i];
	size_t n = 4;

	out->pid = s->pid;
	out->tid = s->tid;
	out->cpu = s->cpu;
	out->comm = b->strs[s->comm];
	out->thread = s->mem ? "" : b->strs[s->thread];
	out->cgroup = s->cgroup != NO_CGROUP ? b->strs[s->cgroup] : NULL;
	out->count = s->count;
	for (uint32_t e = 0; e < b->nev; e++)
		out->values[e] = cell_value(b, (uint32_t)i, e);
	out->nlocs = s->nlocs;
	out->locs = b->arena + s->locs;
	out->labels[0] = (struct fr_profile_label){.key = "pid", .num = s->pid};
	out->labels[1] = (struct fr_profile_label){.key = "tid", .num = s->tid};
	out->labels[2] = (struct fr_profile_label){.key = "comm", .str = out->comm};
	out->labels[3] = (struct fr_profile_label){.key = "thread", .str = out->thread};
	out->is_mem = s->mem;
	for (int k = 0; k < MEM_COLUMNS; k++)
		out->mem[k] = s->mem ? profile_mem_value(b, (uint32_t)i, k) : 0;
	/* A memory row has no thread: pid and comm only. */
	if (s->mem) {
		out->labels[1] = out->labels[2];
		n = 2;
	}
	/* A string: pprof readers drop a numeric label of 0 (no unit), and
	 * CPU 0 is a CPU like any other. */
	if (p->req.cpu_label && !s->mem) {
		snprintf(out->cpu_text, sizeof(out->cpu_text), "%u", s->cpu);
		out->labels[n++] = (struct fr_profile_label){.key = "cpu", .str = out->cpu_text};
	}
	if (out->cgroup)
		out->labels[n++] = (struct fr_profile_label){.key = "cgroup", .str = out->cgroup};
	n += profile_app_labels(b, s->app, out->labels + n, FR_CHUNK_APP_PAIRS);
	out->nlabels = n;
}

void fr_profile_location(const struct fr_profile *p, uint32_t loc, struct fr_profile_location *out)
{
	const struct gloc *l = &p->b.locs[loc];

	out->kernel = l->map == KERNEL_MAP;
	out->address = out->kernel && p->req.targets.has_uid ? 0 : l->addr;
	out->mapping = l->map;
	out->nlines = l->nlines;
}

void fr_profile_line(const struct fr_profile *p, uint32_t loc, uint32_t j,
		     struct fr_profile_line *out)
{
	const struct builder *b = &p->b;
	const struct gline *g = &b->lines[b->locs[loc].line0 + j];

	out->function = b->strs[g->name];
	out->system_name = b->strs[g->sys];
	out->file = b->strs[g->file];
	out->line = g->line;
}

void fr_profile_mapping(const struct fr_profile *p, uint32_t m, struct fr_profile_mapping *out)
{
	const struct gmap *g = &p->b.maps[m];

	if (m == KERNEL_MAP) {
		*out = (struct fr_profile_mapping){p->kmin, p->kmax + 1, 0,
						   FR_PROFILE_KERNEL_MAPPING, ""};
		return;
	}
	out->start = g->start;
	out->limit = g->end;
	out->offset = g->pgoff;
	out->file = p->b.strs[g->file_name];
	out->build_id = p->b.strs[g->bid_hex];
}
