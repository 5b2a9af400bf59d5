/* libflightrec: the addresses of the sampled blocks that are still live,
 * so that their frees write FREE records.
 *
 * Every free() of the process asks, so the question must cost next to
 * nothing when the answer is no, which it nearly always is (one block in
 * mean / size is sampled): a filter of 2^19 bits indexed by a hash of the
 * address, read without a lock, answers "surely not" for all but the
 * blocks whose hash a live sampled block shares. Only then is the exact
 * table looked at, under a mutex: open addressing with linear probing,
 * 2^16 slots filled to three quarters at most (a bounded memory whatever
 * the program leaks; a sampled block that finds no room is counted in
 * the header's `untracked` by the caller).
 *
 * A bit is set while a saturating byte counter of the live sampled blocks
 * hashing to it is not zero. The counters (512 KiB) are touched only under
 * the mutex, at samples and at the frees of sampled blocks; the bits (64
 * KiB) are what every free() reads: first a filter of a megabyte of byte
 * counters read directly, it cost a cache miss per free() once samples
 * had touched its pages (a fifth of the operations of a malloc/free loop).
 * A counter that reached 255 stays there (its free()s always look in the
 * table), so it is never decremented below its true count. All of it is
 * .bss: the pages no address hashed to are never touched.
 */
#include "flightrec/alloc_int.h"

#include <pthread.h>
#include <string.h>

#define TABLE_BITS 16
#define TABLE_SIZE (1u << TABLE_BITS)
#define TABLE_LIMIT (TABLE_SIZE / 4 * 3)

uint64_t fr_alloc_filter[(1u << FR_ALLOC_FILTER_BITS) / 64];
static uint8_t counts[1u << FR_ALLOC_FILTER_BITS];
static uintptr_t table[TABLE_SIZE]; /* 0: an empty slot */
static uint32_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The table's slot: other bits of the hash than the filter's. */
static uint32_t table_slot(uintptr_t addr)
{
	uint64_t h = ((uint64_t)addr >> 4) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h ^ (h >> 29)) & (TABLE_SIZE - 1);
}

/* The slot holding `addr`, or the empty slot that ends its probe. */
static uint32_t find(uintptr_t addr)
{
	uint32_t i = table_slot(addr);

	while (table[i] && table[i] != addr)
		i = (i + 1) & (TABLE_SIZE - 1);
	return i;
}

/* Counter `i` goes up or down by one (lock held), its bit following it. */
static void count(uint32_t i, int by)
{
	uint64_t *w = &fr_alloc_filter[i / 64], bit = 1ull << (i % 64);

	if (counts[i] == UINT8_MAX || (by < 0 && !counts[i]))
		return;
	counts[i] = (uint8_t)(counts[i] + by);
	__atomic_store_n(w, counts[i] ? *w | bit : *w & ~bit, __ATOMIC_RELAXED);
}

bool fr_alloc_addrs_add(uintptr_t addr)
{
	uint32_t i;
	bool ok = true;

	if (!addr)
		return false;
	pthread_mutex_lock(&lock);
	i = find(addr);
	if (table[i]) {
		/* Already there: its free went by unseen (a C library
		 * function that frees inside itself). One entry stands for
		 * both. */
	} else if (used >= TABLE_LIMIT) {
		ok = false;
	} else {
		table[i] = addr;
		used++;
		count(fr_alloc_filter_slot(addr), 1);
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

/* Removes slot `i`, moving back the entries after it whose probe passed
 * through it (so that no lookup needs tombstones). */
static void remove_slot(uint32_t i)
{
	uint32_t j = i;

	for (;;) {
		uint32_t home;

		j = (j + 1) & (TABLE_SIZE - 1);
		if (!table[j])
			break;
		home = table_slot(table[j]);
		/* Entry j may fill hole i when i lies on its probe, that
		 * is, cyclically in [home, j). */
		if (((j - home) & (TABLE_SIZE - 1)) >= ((j - i) & (TABLE_SIZE - 1))) {
			table[i] = table[j];
			i = j;
		}
	}
	table[i] = 0;
}

void fr_alloc_addrs_pin(uintptr_t addr)
{
	uint32_t i = fr_alloc_filter_slot(addr);

	pthread_mutex_lock(&lock);
	counts[i] = UINT8_MAX;
	__atomic_store_n(&fr_alloc_filter[i / 64], fr_alloc_filter[i / 64] | 1ull << (i % 64),
			 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock);
}

bool fr_alloc_addrs_take(uintptr_t addr)
{
	bool found;
	uint32_t i;

	pthread_mutex_lock(&lock);
	i = find(addr);
	found = table[i] != 0;
	if (found) {
		remove_slot(i);
		used--;
		count(fr_alloc_filter_slot(addr), -1);
	}
	pthread_mutex_unlock(&lock);
	return found;
}

void fr_alloc_addrs_fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

void fr_alloc_addrs_fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

/* Only the counters and words the table's entries raised are cleared:
 * the rest are zero already, and untouched pages stay so. */
void fr_alloc_addrs_fork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	if (!used)
		return;
	for (uint32_t i = 0; i < TABLE_SIZE; i++) {
		if (table[i]) {
			uint32_t f = fr_alloc_filter_slot(table[i]);

			counts[f] = 0;
			fr_alloc_filter[f / 64] = 0;
			table[i] = 0;
		}
	}
	used = 0;
}
