/* A memory budget shared by concurrent queries.
 *
 * Each query reserves what it may take (fr_profile_estimate) before it
 * decodes anything and gives it back when it is done, so N concurrent
 * attaches cannot take N times a heavy query's memory. A reservation
 * larger than the whole budget is cut to the budget: that query runs
 * alone, with its decoded-chunk cache capped to what it got.
 */
#ifndef FR_CORE_BUDGET_H
#define FR_CORE_BUDGET_H

#include <pthread.h>
#include <stdint.h>

struct fr_budget {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled on release */
	uint64_t limit;	     /* under lock */
	uint64_t used;	     /* under lock */
};

/* Sets up a budget of `limit` bytes (> 0). Returns 0 or -errno. */
int fr_budget_init(struct fr_budget *b, uint64_t limit);

/* Frees what init set up; nothing may be reserved. */
void fr_budget_destroy(struct fr_budget *b);

/* Changes the limit (a reload); reservations already made stay. */
void fr_budget_set_limit(struct fr_budget *b, uint64_t limit);

/* Reserves `bytes`, or the whole limit when that is less, waiting up to
 * `wait_ns` for others to release enough. Returns the bytes reserved
 * (> 0; release exactly that), or -EBUSY when the wait ran out. */
int64_t fr_budget_acquire(struct fr_budget *b, uint64_t bytes, int64_t wait_ns);

/* Gives back what fr_budget_acquire() returned. */
void fr_budget_release(struct fr_budget *b, uint64_t bytes);

/* Bytes reserved now. */
uint64_t fr_budget_used(struct fr_budget *b);

/* The limit in force. */
uint64_t fr_budget_limit(struct fr_budget *b);

#endif
