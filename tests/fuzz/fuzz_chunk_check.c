/* Consistency checks of the chunk fuzz target (fuzz_chunk.c): a decoded
 * chunk agrees with its parsed header and with itself, every id inside
 * its table, every table sorted as documented. */
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_chunk_app.h"
#include "tests/fuzz/fuzz_chunk_check.h"

#include <stdbool.h>
#include <string.h>

static void check_string(const struct fr_chunk *c, uint32_t id, const char *what)
{
	FUZZ_CHECK(id < c->nstrings, "%s: string id %u of %u", what, id, c->nstrings);
	FUZZ_CHECK(c->strings[id] != NULL, "%s: string %u is NULL", what, id);
	FUZZ_CHECK(strlen(c->strings[id]) <= FR_CHUNK_STRING_MAX, "%s: string %u too long", what,
		   id);
}

/* The process and thread tables: names in range, sorted by id, and each
 * entry found by its id. */
static void check_chunk_tasks(const struct fr_chunk *c)
{
	for (uint32_t i = 0; i < c->nprocs; i++) {
		const struct fr_chunk_proc *p = &c->procs[i];

		check_string(c, p->comm, "proc comm");
		check_string(c, p->exe, "proc exe");
		FUZZ_CHECK(p->build_id_len <= FR_BUILD_ID_MAX, "proc build id %u", p->build_id_len);
		FUZZ_CHECK(i == 0 || c->procs[i - 1].pid < p->pid, "procs not sorted at %u", i);
		FUZZ_CHECK(fr_chunk_find_proc(c, p->pid) == p, "find_proc(%u)", p->pid);
	}
	for (uint32_t i = 0; i < c->nthreads; i++) {
		const struct fr_chunk_thread *t = &c->threads[i];

		check_string(c, t->name, "thread name");
		FUZZ_CHECK(i == 0 || c->threads[i - 1].tid < t->tid, "threads not sorted at %u", i);
		FUZZ_CHECK(fr_chunk_find_thread(c, t->tid) == t, "find_thread(%u)", t->tid);
	}
}

/* Names over time: sorted by tid, each with its changes in time order. */
static void check_chunk_names(const struct fr_chunk *c)
{
	for (uint32_t i = 0; i < c->nnames; i++) {
		const struct fr_chunk_names *e = &c->names[i];

		check_string(c, e->before, "name before");
		FUZZ_CHECK(i == 0 || c->names[i - 1].tid < e->tid, "names not sorted at %u", i);
		FUZZ_CHECK(e->n >= 1 && e->first <= c->nname_changes &&
				   e->n <= c->nname_changes - e->first,
			   "names %u: changes [%u, +%u) of %u", i, e->first, e->n,
			   c->nname_changes);
		FUZZ_CHECK(fr_chunk_find_names(c, e->tid) == e, "find_names(%u)", e->tid);
		for (uint32_t k = 0; k < e->n && e->first + k < c->nname_changes; k++) {
			const struct fr_chunk_name_change *ch = &c->name_changes[e->first + k];

			check_string(c, ch->name, "name change");
			FUZZ_CHECK(k == 0 || ch[-1].time_ns <= ch->time_ns,
				   "names %u: change %u goes back in time", i, k);
			FUZZ_CHECK(fr_chunk_thread_name_at(c, e->tid, ch->time_ns) == ch->name ||
					   (k + 1 < e->n && ch[1].time_ns == ch->time_ns),
				   "names %u: not named %u at change %u", i, ch->name, k);
		}
	}
}

/* The maps: sorted by pid and address without overlap, each found by
 * its first and last address and not by the address before it. */
static void check_chunk_maps(const struct fr_chunk *c)
{
	for (uint32_t i = 0; i < c->nmaps; i++) {
		const struct fr_chunk_map *m = &c->maps[i];

		check_string(c, m->path, "map path");
		FUZZ_CHECK(m->build_id_len <= FR_BUILD_ID_MAX, "map build id %u", m->build_id_len);
		FUZZ_CHECK(m->start < m->end, "map %u is empty", i);
		if (i > 0) {
			const struct fr_chunk_map *prev = &c->maps[i - 1];

			FUZZ_CHECK(prev->pid < m->pid ||
					   (prev->pid == m->pid && prev->end <= m->start),
				   "maps %u and %u out of order or overlapping", i - 1, i);
		}
		FUZZ_CHECK(fr_chunk_find_map(c, m->pid, m->start) == m, "find_map(start of %u)", i);
		FUZZ_CHECK(fr_chunk_find_map(c, m->pid, m->end - 1) == m, "find_map(end of %u)", i);
		if (m->start > 0) {
			const struct fr_chunk_map *before =
				fr_chunk_find_map(c, m->pid, m->start - 1);

			FUZZ_CHECK(before != m, "find_map(start - 1 of %u)", i);
		}
	}
}

/* The stacks: frames back to back in frames[], and every user frame's
 * map lookup giving a map that holds it. */
static void check_chunk_stacks(const struct fr_chunk *c)
{
	uint64_t frames_end = 0;

	for (uint32_t i = 0; i < c->nstacks; i++) {
		const struct fr_chunk_stack *st = &c->stacks[i];

		FUZZ_CHECK(st->nr_frames <= FR_MAX_FRAMES && st->nr_kernel <= st->nr_frames,
			   "stack %u has %u frames, %u kernel", i, st->nr_frames, st->nr_kernel);
		/* The frames of the stacks lie back to back in frames[]; each
		 * is read, so a bad index is caught by the sanitizers. */
		FUZZ_CHECK(st->first == frames_end, "stack %u starts at %u, expected %llu", i,
			   st->first, (unsigned long long)frames_end);
		frames_end += st->nr_frames;
		for (uint32_t k = 0; k < st->nr_frames; k++) {
			uint64_t addr = c->frames[st->first + k];
			const struct fr_chunk_map *m;

			if (k < st->nr_kernel)
				continue;
			m = fr_chunk_find_map(c, st->pid, addr);
			FUZZ_CHECK(!m || (m->pid == st->pid && m->start <= addr && addr < m->end),
				   "find_map(%u, %#llx) gave a map that does not hold it", st->pid,
				   (unsigned long long)addr);
		}
	}
}

/* Label sets, event columns and the samples: every index in range, every
 * column read. */
static void check_chunk_samples(const struct fr_chunk *c, const struct fr_chunk_header *h)
{
	FUZZ_CHECK(c->nlabelsets >= 1 && c->labelsets[0].npairs == 0,
		   "labelset 0 must be the empty set");
	for (uint32_t i = 0; i < c->nlabelsets; i++) {
		const struct fr_chunk_labelset *ls = &c->labelsets[i];

		for (uint32_t k = 0; k < ls->npairs; k++) {
			check_string(c, c->label_keys[ls->first + k], "label key");
			check_string(c, c->label_values[ls->first + k], "label value");
		}
	}
	fuzz_check_app_sets(c);
	for (uint32_t i = 0; i < c->nevents; i++)
		(void)*(volatile uint64_t *)&c->events[i].truncated;

	for (uint32_t i = 0; i < c->nsamples; i++) {
		FUZZ_CHECK(c->time_ns[i] >= h->first_ns && c->time_ns[i] <= h->last_ns,
			   "sample %u at %lld outside [%lld, %lld]", i, (long long)c->time_ns[i],
			   (long long)h->first_ns, (long long)h->last_ns);
		FUZZ_CHECK(c->stack[i] < c->nstacks, "sample %u: stack %u of %u", i, c->stack[i],
			   c->nstacks);
		FUZZ_CHECK(c->labelset[i] < c->nlabelsets, "sample %u: labelset %u of %u", i,
			   c->labelset[i], c->nlabelsets);
		FUZZ_CHECK(c->app[i] < c->napps, "sample %u: application set %u of %u", i,
			   c->app[i], c->napps);
		(void)fr_chunk_find_proc(c, c->pid[i]);
		(void)fr_chunk_find_thread(c, c->tid[i]);
		check_string(c, fr_chunk_thread_name_at(c, c->tid[i], c->time_ns[i]), "thread at");
		check_string(c, fr_chunk_comm_at(c, c->pid[i], c->time_ns[i]), "comm at");
		(void)*(volatile uint64_t *)&c->weight[i];
		(void)*(volatile uint32_t *)&c->cpu[i];
		(void)*(volatile uint32_t *)&c->event[i];
		(void)*(volatile uint32_t *)&c->rate_hz[i];
	}
}

void fuzz_check_chunk(const struct fr_chunk *c, const struct fr_chunk_header *h)
{
	FUZZ_CHECK(c->hdr.magic == h->magic && c->hdr.version == h->version &&
			   c->hdr.header_len == h->header_len && c->hdr.seq == h->seq &&
			   c->hdr.first_ns == h->first_ns && c->hdr.last_ns == h->last_ns &&
			   c->hdr.nsamples == h->nsamples && c->hdr.raw_len == h->raw_len &&
			   c->hdr.comp_len == h->comp_len && c->hdr.covers == h->covers &&
			   c->hdr.clock_offset == h->clock_offset &&
			   c->hdr.payload_crc == h->payload_crc &&
			   c->hdr.header_crc == h->header_crc,
		   "decoded header differs from parsed");
	FUZZ_CHECK(c->nsamples == h->nsamples, "%u samples, header says %u", c->nsamples,
		   h->nsamples);

	FUZZ_CHECK(c->nstrings >= 1 && c->strings[0] && c->strings[0][0] == '\0',
		   "string 0 must be \"\"");
	for (uint32_t i = 0; i < c->nstrings; i++)
		check_string(c, i, "strings");

	check_chunk_tasks(c);
	check_chunk_names(c);
	check_chunk_maps(c);
	check_chunk_stacks(c);
	check_chunk_samples(c, h);
}
