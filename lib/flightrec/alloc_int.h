/* libflightrec's allocation sampling, inside the library: the parts
 * shared by alloc.c (the interposed malloc family and the byte
 * countdown), alloc_ring.c (the shared-memory ring and the records) and
 * alloc_addrs.c (the sampled blocks' addresses). Nothing here is exported
 * from the library (hidden visibility), and this header is not installed. */
#ifndef FLIGHTREC_ALLOC_INT_H
#define FLIGHTREC_ALLOC_INT_H

#include "flightrec/alloc_abi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FR_ALLOC_IE __attribute__((tls_model("initial-exec")))

/* A thread's state, all of it in static TLS (no destructor: a thread's
 * exit leaves nothing behind). Zero for a new thread. */
struct fr_alloc_thread {
	int64_t countdown;	      /* bytes to the next sample */
	uint64_t allocs;	      /* allocations since the last sample */
	uint64_t rng;		      /* xorshift state, 0: not seeded */
	uintptr_t stack_lo, stack_hi; /* the stack's bounds, when known */
	uint32_t tid;		      /* 0: not asked yet */
	uint8_t in_lib;		      /* the library's own calls: not sampled */
	uint8_t resolving;	      /* looking up the next allocator */
	uint8_t stack_asked;	      /* stack_lo and stack_hi were asked */
};

extern __thread struct fr_alloc_thread fr_alloc_self FR_ALLOC_IE;

/* The registry the recorder reads (the library's own copy). */
extern struct fr_alloc_registry_abi fr_alloc_reg;

/* ---- alloc_ring.c ---- */

/* Makes the process's ring (`data_size` bytes of records) and publishes
 * it in the registry, ring_id last. Returns 0 or -errno (nothing made,
 * nothing published). */
int fr_alloc_ring_open(uint64_t data_size);

/* Forgets the ring inherited from the parent in a fork's child (its
 * descriptor closed, its mapping removed). */
void fr_alloc_ring_drop_inherited(void);

/* The ring's header, NULL when there is none. */
struct fr_alloc_header_abi *fr_alloc_ring_header(void);

/* Writes the sample of block `addr` of `size` bytes taken at `mean`, with
 * the caller's stack and labels. Returns true when written (false: no
 * ring or the ring full, counted). Called with in_lib set. */
bool fr_alloc_ring_sample(uint64_t addr, uint64_t size, uint64_t mean);

/* Writes the FREE record of sampled block `addr` (counted when dropped). */
void fr_alloc_ring_free(uint64_t addr);

/* ---- alloc_addrs.c ---- */

/* The cheap filter every free() consults (inline: one bit read): false
 * means `addr` was surely not sampled. 2^19 bits, 64 KiB: small enough to
 * stay in the caches the program's own frees run from. */
#define FR_ALLOC_FILTER_BITS 19
extern uint64_t fr_alloc_filter[(1u << FR_ALLOC_FILTER_BITS) / 64];

static inline uint32_t fr_alloc_filter_slot(uintptr_t addr)
{
	/* Blocks are 16-byte aligned: the low bits carry nothing. */
	uint64_t h = ((uint64_t)addr >> 4) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> (64 - FR_ALLOC_FILTER_BITS));
}

static inline bool fr_alloc_addrs_maybe(uintptr_t addr)
{
	uint32_t i = fr_alloc_filter_slot(addr);

	return __atomic_load_n(&fr_alloc_filter[i / 64], __ATOMIC_RELAXED) >> (i % 64) & 1;
}

/* Remembers sampled block `addr`. Returns false when the table is full
 * (the block is then untracked: its free is not reported). */
bool fr_alloc_addrs_add(uintptr_t addr);

/* Makes the filter answer "maybe" for `addr` for good (a bootstrap
 * block, which free() must not hand to the allocator). */
void fr_alloc_addrs_pin(uintptr_t addr);

/* Forgets `addr`; returns whether it was remembered. */
bool fr_alloc_addrs_take(uintptr_t addr);

/* fork: lock before, unlock in the parent after, and in the child a new
 * lock and nothing remembered (the parent's blocks are not the child's
 * to report). */
void fr_alloc_addrs_fork_prepare(void);
void fr_alloc_addrs_fork_parent(void);
void fr_alloc_addrs_fork_child(void);

#endif
