/* The live sampled blocks of every process whose allocation ring the
 * recorder reads (recorder/sampling/allocs.h): by (pid, address), each
 * with its size, mean, thread, time and allocation stack (stacks interned
 * and shared by their blocks, counted by reference). Bounded: at most
 * `per_proc` blocks a process, `total` in all and `bytes` of memory; a
 * block that finds its process at its bound takes the place of the
 * process's oldest, one that finds the table full the place of the
 * oldest of the process holding the most blocks (evicted, counted), so
 * a process that fills the table gives up its own.
 * No process state, no I/O: built alone by its unit test. Not
 * thread-safe (the ingest thread's).
 */
#ifndef FR_RECORDER_ALLOC_LIVE_H
#define FR_RECORDER_ALLOC_LIVE_H

#include <stdint.h>

struct fr_alloc_live;

struct fr_alloc_live_limits {
	uint32_t per_proc; /* blocks of one process */
	uint32_t total;	   /* blocks in all */
	uint64_t bytes;	   /* the table's memory: blocks, stacks, buckets */
};

/* A block; `ips` (nframes, leaf first) is borrowed for the callback. */
struct fr_alloc_block {
	uint32_t pid, tid;
	uint64_t addr, size, mean;
	int64_t time_ns;
	uint16_t nframes;
	const uint64_t *ips;
};

typedef void (*fr_alloc_live_fn)(void *arg, const struct fr_alloc_block *b);

/* NULL when out of memory. */
struct fr_alloc_live *fr_alloc_live_new(const struct fr_alloc_live_limits *lim);
void fr_alloc_live_free(struct fr_alloc_live *l);

/* Adds *b (a block at the same address of the same process, whose free
 * was never seen, is replaced). Returns 0; 1 when an older block was
 * evicted for room; -ENOSPC when it was not kept (counted as evicted as
 * well: a block too large for the byte bound alone); -ENOMEM. */
int fr_alloc_live_add(struct fr_alloc_live *l, const struct fr_alloc_block *b);

/* Removes the block at `addr` of `pid`, calling fn with it first.
 * Returns 0, or -ENOENT (fn not called). */
int fr_alloc_live_take(struct fr_alloc_live *l, uint32_t pid, uint64_t addr, fr_alloc_live_fn fn,
		       void *arg);

/* Calls fn for every block, oldest of each process first. */
void fr_alloc_live_each(struct fr_alloc_live *l, fr_alloc_live_fn fn, void *arg);

/* Removes every block of `pid`, calling fn (when not NULL) with each
 * first, oldest first. */
void fr_alloc_live_drop_proc(struct fr_alloc_live *l, uint32_t pid, fr_alloc_live_fn fn, void *arg);

struct fr_alloc_live_counts {
	uint64_t blocks;  /* live now */
	uint64_t stacks;  /* distinct stacks now */
	uint64_t bytes;	  /* memory held */
	uint64_t evicted; /* blocks dropped (or not kept) for room, since the start */
};
void fr_alloc_live_counts(const struct fr_alloc_live *l, struct fr_alloc_live_counts *out);

#endif
