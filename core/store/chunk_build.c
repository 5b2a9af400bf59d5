/* Chunk builder: the ingest side of the chunk codec (format in
 * core/store/chunk.h).
 *
 * The builder owns fixed-capacity arrays sized in fr_chunk_builder_new():
 * one column per sample field, a stack table with its frame arena and an
 * open-addressing hash table that interns stacks by (pid, nr_kernel,
 * frames). Adding a sample therefore never allocates; it fails with
 * -ENOSPC when a capacity or the raw size budget would be exceeded.
 * Sealing (core/store/chunk_encode.c) turns what it holds into a chunk.
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/util/compress.h"
#include "core/util/le.h"

/* Sealing happens about once a second; level 5 gets nearly all of what
 * levels up to 9 save over 3 (3% of the bytes) for little more seal time,
 * while 9 and above halve the ingest rate (docs/performance.md). Chunks
 * that a ring's journal only keeps until it merges them are sealed at a
 * lower level (fr_chunk_builder_set_level). */
#define ZSTD_LEVEL 5

void chunk_builder_reset(struct fr_chunk_builder *b)
{
	b->nsamples = 0;
	b->nstacks = 0;
	b->nframes = 0;
	b->nevents = 0;
	b->ngaps = 0;
	b->raw_est = RAW_FIXED;
	b->first_ns = 0;
	b->last_ns = 0;
	b->prev_ns = 0;
	memset(b->table, 0, ((size_t)b->table_mask + 1) * sizeof(*b->table));
}

struct fr_chunk_builder *fr_chunk_builder_new(uint32_t max_samples, size_t max_raw)
{
	struct fr_chunk_builder *b;
	uint64_t frames, slots = 16;

	if (max_samples == 0 || max_samples > (1u << 26))
		return NULL;
	if (max_raw > FR_CHUNK_RAW_MAX / 2)
		max_raw = FR_CHUNK_RAW_MAX / 2;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->max_samples = max_samples;
	b->max_raw = max_raw;
	b->level = ZSTD_LEVEL;
	b->max_stacks = max_samples;
	/* Every frame takes at least one byte of block and most take two or
	 * more, so the arena is bounded by the raw budget, not by the worst
	 * case of max_samples distinct deepest stacks. The first sample of a
	 * chunk always fits. */
	frames = (uint64_t)max_samples * FR_MAX_FRAMES;
	if (frames > max_raw / 2 + FR_MAX_FRAMES)
		frames = max_raw / 2 + FR_MAX_FRAMES;
	b->max_frames = (uint32_t)frames;
	while (slots < 2 * (uint64_t)b->max_stacks)
		slots <<= 1;
	b->table_mask = (uint32_t)(slots - 1);

	b->time = malloc(max_samples * sizeof(*b->time));
	b->tid = malloc(max_samples * sizeof(*b->tid));
	b->cpu = malloc(max_samples * sizeof(*b->cpu));
	b->event = malloc(max_samples * sizeof(*b->event));
	b->rate = malloc(max_samples * sizeof(*b->rate));
	b->stack = malloc(max_samples * sizeof(*b->stack));
	b->app_ref = malloc(max_samples * sizeof(*b->app_ref));
	b->weight = malloc(max_samples * sizeof(*b->weight));
	b->stacks = malloc(b->max_stacks * sizeof(*b->stacks));
	b->frames = malloc(b->max_frames * sizeof(*b->frames));
	b->table = malloc(slots * sizeof(*b->table));
	if (!b->time || !b->tid || !b->cpu || !b->event || !b->rate || !b->stack || !b->app_ref ||
	    !b->weight || !b->stacks || !b->frames || !b->table)
		goto err_free;
	chunk_builder_reset(b);
	return b;

err_free:
	fr_chunk_builder_free(b);
	return NULL;
}

void fr_chunk_builder_set_level(struct fr_chunk_builder *b, int level)
{
	if (level < 1 || level > 19 || level == b->level)
		return;
	b->level = level;
	fr_zstd_free(b->zstd);
	b->zstd = NULL;
}

void fr_chunk_builder_free(struct fr_chunk_builder *b)
{
	if (!b)
		return;
	free(b->time);
	free(b->tid);
	free(b->cpu);
	free(b->event);
	free(b->rate);
	free(b->stack);
	free(b->app_ref);
	free(b->weight);
	free(b->stacks);
	free(b->frames);
	free(b->table);
	fr_zstd_free(b->zstd);
	free(b);
}

static uint64_t stack_hash(uint32_t pid, unsigned nr_kernel, unsigned nr, const uint64_t *ips)
{
	uint64_t h = mix(0x243f6a8885a308d3ull, (uint64_t)pid << 32 | nr_kernel << 16 | nr);

	for (unsigned i = 0; i < nr; i++)
		h = mix(h, ips[i]);
	return h;
}

/* Encoded size of a stack entry. */
static size_t stack_bytes(uint32_t pid, unsigned nr_kernel, unsigned nr, const uint64_t *ips)
{
	size_t n = fr_varint_len(pid) + fr_varint_len(nr_kernel) + fr_varint_len(nr);

	for (unsigned i = 0; i < nr; i++)
		n += i == 0 ? fr_varint_len(ips[0])
			    : fr_varint_len(fr_zigzag((int64_t)(ips[i] - ips[i - 1])));
	return n;
}

int fr_chunk_builder_add(struct fr_chunk_builder *b, const struct fr_sample *s)
{
	return fr_chunk_builder_add_known(b, s, NULL);
}

int fr_chunk_builder_add_known(struct fr_chunk_builder *b, const struct fr_sample *s,
			       uint32_t *stack)
{
	unsigned nr = s->nr_frames, nr_kernel = s->nr_kernel;
	uint64_t h = 0;
	uint32_t slot = 0, id = UINT32_MAX;
	size_t need;

	if (b->nsamples >= b->max_samples)
		return -ENOSPC;
	/* Deeper stacks are the recorder's bug; keep the leaf end. */
	if (nr > FR_MAX_FRAMES)
		nr = FR_MAX_FRAMES;
	if (nr_kernel > nr)
		nr_kernel = nr;
	if (!s->ips)
		nr = nr_kernel = 0;

	if (stack && *stack < b->nstacks && b->stacks[*stack].pid == s->pid)
		id = *stack;
	else
		h = stack_hash(s->pid, nr_kernel, nr, s->ips);
	for (slot = (uint32_t)h & b->table_mask; id == UINT32_MAX && b->table[slot];
	     slot = (slot + 1) & b->table_mask) {
		const struct bstack *st = &b->stacks[b->table[slot] - 1];

		if (st->hash == h && st->pid == s->pid && st->nr_kernel == nr_kernel &&
		    st->nr_frames == nr &&
		    (nr == 0 || memcmp(&b->frames[st->first], s->ips, nr * sizeof(*s->ips)) == 0)) {
			id = b->table[slot] - 1;
			break;
		}
	}

	need = fr_varint_len(fr_zigzag((int64_t)((uint64_t)s->time_ns - (uint64_t)b->prev_ns))) +
	       fr_varint_len(s->tid) + fr_varint_len(s->pid) + fr_varint_len(s->cpu) +
	       fr_varint_len(s->event) + fr_varint_len(s->weight) + fr_varint_len(s->rate_hz) +
	       1 /* labelset */;
	if (id == UINT32_MAX) {
		if (b->nstacks >= b->max_stacks || nr > b->max_frames - b->nframes)
			return -ENOSPC;
		need += stack_bytes(s->pid, nr_kernel, nr, s->ips) + META_ALLOWANCE;
		id = b->nstacks;
	}
	need += fr_varint_len(id);
	if (b->nsamples > 0 && b->raw_est + need > b->max_raw)
		return -ENOSPC;

	if (id == b->nstacks) {
		struct bstack *st = &b->stacks[id];

		st->hash = h;
		st->pid = s->pid;
		st->first = b->nframes;
		st->nr_kernel = (uint16_t)nr_kernel;
		st->nr_frames = (uint16_t)nr;
		if (nr)
			memcpy(&b->frames[b->nframes], s->ips, nr * sizeof(*s->ips));
		b->nframes += nr;
		b->nstacks++;
		b->table[slot] = id + 1;
	}

	b->time[b->nsamples] = s->time_ns;
	b->tid[b->nsamples] = s->tid;
	b->cpu[b->nsamples] = s->cpu;
	b->event[b->nsamples] = s->event;
	b->rate[b->nsamples] = s->rate_hz;
	b->weight[b->nsamples] = s->weight;
	b->stack[b->nsamples] = id;
	b->app_ref[b->nsamples] = s->app_ref;
	if (b->nsamples == 0 || s->time_ns < b->first_ns)
		b->first_ns = s->time_ns;
	if (b->nsamples == 0 || s->time_ns > b->last_ns)
		b->last_ns = s->time_ns;
	b->prev_ns = s->time_ns;
	b->nsamples++;
	b->raw_est += need;
	if (stack)
		*stack = id;
	return 0;
}

void fr_chunk_builder_count(struct fr_chunk_builder *b, uint32_t event, uint64_t lost,
			    uint64_t throttled, uint64_t truncated)
{
	struct fr_chunk_event_stats *e = NULL;

	for (uint32_t i = 0; i < b->nevents; i++) {
		if (b->events[i].event == event) {
			e = &b->events[i];
			break;
		}
	}
	if (!e) {
		/* More distinct event ids than slots cannot happen with the
		 * events flightrec defines; the counts would be dropped. */
		if (b->nevents >= EVENT_SLOTS)
			return;
		e = &b->events[b->nevents++];
		*e = (struct fr_chunk_event_stats){.event = event};
		b->raw_est += 4 * 10;
	}
	e->lost += lost;
	e->throttled += throttled;
	e->truncated += truncated;
}

void fr_chunk_builder_gap(struct fr_chunk_builder *b, enum fr_chunk_gap_kind kind, uint32_t event,
			  uint64_t count, int64_t from_ns, int64_t to_ns)
{
	struct fr_chunk_gap *g = NULL;

	if (to_ns < from_ns) {
		int64_t t = to_ns;

		to_ns = from_ns;
		from_ns = t;
	}
	if (b->ngaps == FR_CHUNK_GAPS_MAX) {
		for (uint32_t i = b->ngaps; i-- > 0 && !g;)
			if (b->gaps[i].kind == (uint32_t)kind && b->gaps[i].event == event)
				g = &b->gaps[i];
		/* Every slot of other kinds: the last one takes it. */
		if (!g)
			g = &b->gaps[b->ngaps - 1];
		g->count += count;
		g->from_ns = from_ns < g->from_ns ? from_ns : g->from_ns;
		g->to_ns = to_ns > g->to_ns ? to_ns : g->to_ns;
		return;
	}
	b->gaps[b->ngaps++] = (struct fr_chunk_gap){
		.kind = (uint32_t)kind,
		.event = event,
		.count = count,
		.from_ns = from_ns,
		.to_ns = to_ns,
	};
	b->raw_est += 5 * 10;
}

uint32_t fr_chunk_builder_samples(const struct fr_chunk_builder *b)
{
	return b->nsamples;
}

int64_t fr_chunk_builder_first_ns(const struct fr_chunk_builder *b)
{
	return b->nsamples ? b->first_ns : 0;
}
