/* The off-CPU pairing table (see recorder/sampling/offcpu.h for the rules).
 *
 * Entries live in one anonymous mapping, touched only as they are used;
 * an index of twice as many slots maps a tid to its entry by open
 * addressing with linear probing, so probes stay short. Removal shifts
 * later members of a probe cluster back (no tombstones), and freed
 * entries are reused last-in first-out so the pages in use stay few.
 */
#include "recorder/sampling/offcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/util/hash.h"
#include "core/store/sample.h"

/* When the table is full, the oldest of this many consecutive entries is
 * dropped (an approximation of least recently switched out). */
#define OFFCPU_EVICT_SCAN 8
/* switched_in of an entry on the free list, so listing open waits can
 * walk the entries without the index. */
#define ENTRY_FREE 2

struct offcpu_entry {
	uint32_t tid;	     /* the key */
	uint8_t switched_in; /* 0: a switch-out with its stack; 1: a switch-in
			      * seen before its switch-out (time only);
			      * ENTRY_FREE: on the free list */
	uint16_t nr_kernel, nr_frames;
	uint32_t pid, cpu; /* of the switch-out, as samples name them */
	uint64_t time;	   /* CLOCK_MONOTONIC ns of the switch */
	uint64_t ips[FR_MAX_FRAMES];
};

struct fr_offcpu {
	uint32_t capacity;   /* entries; the index has twice as many slots */
	uint32_t index_mask; /* index slots - 1 */
	/* Open addressing with linear probing: entry number + 1, 0 empty. */
	uint32_t *index;
	struct offcpu_entry *entries;
	uint32_t *free_list;
	uint32_t nfree, used, hand;
	uint64_t evicted; /* entries dropped since the last take */
};

void fr_offcpu_free(struct fr_offcpu *o)
{
	if (!o)
		return;
	if (o->entries)
		munmap(o->entries, o->capacity * sizeof(*o->entries));
	free(o->index);
	free(o->free_list);
	free(o);
}

int fr_offcpu_new(struct fr_offcpu **out, uint32_t capacity)
{
	struct fr_offcpu *o;

	if (capacity < OFFCPU_EVICT_SCAN || capacity > (1u << 30) || (capacity & (capacity - 1)))
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->capacity = capacity;
	o->index_mask = 2 * capacity - 1;
	o->index = calloc(2 * (size_t)capacity, sizeof(*o->index));
	o->free_list = calloc(capacity, sizeof(*o->free_list));
	o->entries = mmap(NULL, capacity * sizeof(*o->entries), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (o->entries == MAP_FAILED)
		o->entries = NULL;
	if (!o->index || !o->free_list || !o->entries) {
		fr_offcpu_free(o);
		return -ENOMEM;
	}
	*out = o;
	return 0;
}

static uint32_t hash_tid(const struct fr_offcpu *o, uint32_t tid)
{
	return fr_hash_u32(tid) & o->index_mask;
}

/* The index slot holding `key`, or -1. */
static long index_find(const struct fr_offcpu *o, uint32_t key)
{
	for (uint32_t i = hash_tid(o, key);; i = (i + 1) & o->index_mask) {
		uint32_t e = o->index[i];

		if (!e)
			return -1;
		if (o->entries[e - 1].tid == key)
			return i;
	}
}

/* Frees the entry in index slot `slot`: later members of its probe
 * cluster that hash at or before the hole move back into it. */
static void index_remove(struct fr_offcpu *o, uint32_t slot)
{
	const uint32_t mask = o->index_mask;
	uint32_t hole = slot;

	o->free_list[o->nfree++] = o->index[slot] - 1;
	o->entries[o->index[slot] - 1].switched_in = ENTRY_FREE;
	for (uint32_t j = (slot + 1) & mask; o->index[j]; j = (j + 1) & mask) {
		uint32_t home = hash_tid(o, o->entries[o->index[j] - 1].tid);

		/* j may move to the hole unless its home lies cyclically in
		 * (hole, j]: then the hole is before where it may live. */
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			o->index[hole] = o->index[j];
			hole = j;
		}
	}
	o->index[hole] = 0;
}

/* Drops the oldest of a few entries, starting at the hand: the table is
 * full, with more threads switched out than it can follow. */
static void evict_one(struct fr_offcpu *o)
{
	uint32_t victim = o->hand;

	for (uint32_t k = 1; k < OFFCPU_EVICT_SCAN; k++) {
		uint32_t c = (o->hand + k) % o->capacity;
		if (o->entries[c].time < o->entries[victim].time)
			victim = c;
	}
	o->hand = (o->hand + OFFCPU_EVICT_SCAN) % o->capacity;
	index_remove(o, (uint32_t)index_find(o, o->entries[victim].tid));
	o->evicted++;
}

/* A free entry, filed under `key` (which must not be in the index). When
 * every entry is in use, the oldest of a few is dropped and counted. */
static struct offcpu_entry *entry_add(struct fr_offcpu *o, uint32_t key)
{
	uint32_t n, i;

	if (o->nfree == 0 && o->used < o->capacity) {
		n = o->used++;
	} else {
		if (o->nfree == 0)
			evict_one(o);
		n = o->free_list[--o->nfree];
	}
	for (i = hash_tid(o, key); o->index[i]; i = (i + 1) & o->index_mask)
		;
	o->index[i] = n + 1;
	o->entries[n].tid = key;
	return &o->entries[n];
}

static int pair_believable(uint64_t out_time, uint64_t in_time)
{
	return in_time > out_time && in_time - out_time <= (uint64_t)FR_OFFCPU_MAX_GAP_NS;
}

int fr_offcpu_switch_out(struct fr_offcpu *o, const struct fr_offcpu_switch *sw, int exiting,
			 struct fr_offcpu_pair *pair)
{
	long slot = index_find(o, sw->tid);
	struct offcpu_entry *e = slot >= 0 ? &o->entries[o->index[slot] - 1] : NULL;

	if (exiting) {
		/* Its last switch: nothing will pair with it. */
		if (e)
			index_remove(o, (uint32_t)slot);
		return 0;
	}
	if (e && e->switched_in) {
		/* The switch-in was read first (it happened on a CPU whose
		 * ring was read earlier). It pairs with this switch-out only
		 * if it came after it; one before belongs to an earlier
		 * switch-out that was lost. */
		if (pair_believable(sw->time, e->time)) {
			pair->out = *sw;
			pair->in_time = e->time;
			index_remove(o, (uint32_t)slot);
			return 1;
		}
	} else if (e && e->time > sw->time) {
		return 0; /* a newer switch-out is already waiting */
	}
	/* An older switch-out still waiting lost its switch-in: replace it. */
	if (!e)
		e = entry_add(o, sw->tid);
	e->switched_in = 0;
	e->time = sw->time;
	e->pid = sw->pid;
	e->cpu = sw->cpu;
	e->nr_kernel = sw->nr_kernel;
	e->nr_frames = sw->nr_frames;
	memcpy(e->ips, sw->ips, sw->nr_frames * sizeof(e->ips[0]));
	return 0;
}

/* The switch-out an entry holds; its stack points into the entry. */
static struct fr_offcpu_switch entry_switch(const struct offcpu_entry *e)
{
	return (struct fr_offcpu_switch){
		.time = e->time,
		.pid = e->pid,
		.tid = e->tid,
		.cpu = e->cpu,
		.nr_kernel = e->nr_kernel,
		.nr_frames = e->nr_frames,
		.ips = e->ips,
	};
}

int fr_offcpu_switch_in(struct fr_offcpu *o, uint32_t tid, uint64_t time,
			struct fr_offcpu_pair *pair)
{
	long slot = index_find(o, tid);
	struct offcpu_entry *e = slot >= 0 ? &o->entries[o->index[slot] - 1] : NULL;

	if (e && !e->switched_in) {
		int paired = pair_believable(e->time, time);

		if (paired) {
			/* The entry's memory stays as it is until the next
			 * entry_add, so the pair may point into it. */
			pair->out = entry_switch(e);
			pair->in_time = time;
			index_remove(o, (uint32_t)slot);
		} else if (time > e->time) {
			index_remove(o, (uint32_t)slot); /* too long ago to believe */
		}
		/* A switch-in before the waiting switch-out belongs to an
		 * earlier switch-out that was lost: the waiting one stays. */
		return paired;
	}
	/* Read before its switch-out: remember when, the newest one wins. */
	if (!e)
		e = entry_add(o, tid);
	else if (e->time > time)
		return 0;
	e->switched_in = 1;
	e->time = time;
	e->nr_kernel = e->nr_frames = 0;
	return 0;
}

int fr_offcpu_open_next(const struct fr_offcpu *o, uint32_t *cursor, struct fr_offcpu_switch *out)
{
	/* Entries at or above `used` were never touched: the walk stays in
	 * the pages in use. */
	for (uint32_t n = *cursor; n < o->used; n++) {
		const struct offcpu_entry *e = &o->entries[n];

		if (e->switched_in || e->tid == 0) /* tid 0: idle, not waiting */
			continue;
		*out = entry_switch(e);
		*cursor = n + 1;
		return 1;
	}
	*cursor = o->used;
	return 0;
}

uint32_t fr_offcpu_waiting(const struct fr_offcpu *o)
{
	return o->used - o->nfree;
}

uint64_t fr_offcpu_take_evicted(struct fr_offcpu *o)
{
	uint64_t n = o->evicted;

	o->evicted = 0;
	return n;
}
