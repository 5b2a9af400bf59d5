/* A memory budget shared by concurrent queries.
 *
 * Each query reserves what it may take (fr_profile_estimate) before it
 * decodes anything and gives it back when it is done, so N concurrent
 * attaches cannot take N times a heavy query's memory. A reservation
 * larger than the whole budget is cut to the budget: that query runs
 * alone, with its decoded-chunk cache capped to what it got.
 *
 * A budget may sit under a ceiling that caches share with it (the
 * daemon's limits.memory): what the caches hold (fr_budget_set_held) is
 * then not there for reservations, which get the smaller of the limit and
 * the ceiling less the caches, but never less than a floor, so caches at
 * their bounds still leave queries room to run. Caches are not reserved
 * through the budget because they grow on threads that must never wait
 * (the ingest thread); each keeps within a share of the ceiling of its
 * own, and the floor is what the shares leave.
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
	/* Under lock; ceiling 0: no ceiling, the limit alone. */
	uint64_t ceiling, held, floor;
};

/* Sets up a budget of `limit` bytes (> 0). Returns 0 or -errno. */
int fr_budget_init(struct fr_budget *b, uint64_t limit);

/* Frees what init set up; nothing may be reserved. */
void fr_budget_destroy(struct fr_budget *b);

/* Changes the limit (a reload); reservations already made stay. */
void fr_budget_set_limit(struct fr_budget *b, uint64_t limit);

/* Puts the budget under a ceiling of `ceiling` bytes (0: none) of which
 * reservations may always have `floor`. */
void fr_budget_set_ceiling(struct fr_budget *b, uint64_t ceiling, uint64_t floor);

/* What caches sharing the ceiling hold now, in bytes (replaces the last
 * figure). Less held lets waiters in. */
void fr_budget_set_held(struct fr_budget *b, uint64_t held);

/* Reserves `bytes`, or the whole room when that is less (the limit, or
 * under a ceiling what the caches leave of it), waiting up to
 * `wait_ns` for others to release enough. Returns the bytes reserved
 * (> 0; release exactly that), or -EBUSY when the wait ran out. */
int64_t fr_budget_acquire(struct fr_budget *b, uint64_t bytes, int64_t wait_ns);

/* Reserves exactly `bytes` when there is room for them now, without
 * waiting (a reservation that grows while its holder runs: waiting there
 * could wait on another holder that waits too). Returns 0 or -EBUSY. */
int fr_budget_try_acquire(struct fr_budget *b, uint64_t bytes);

/* Gives back what fr_budget_acquire() returned. */
void fr_budget_release(struct fr_budget *b, uint64_t bytes);

/* Bytes reserved now. */
uint64_t fr_budget_used(struct fr_budget *b);

/* The limit in force. */
uint64_t fr_budget_limit(struct fr_budget *b);

/* What reservations may take together now: the limit, or under a ceiling
 * the smaller of it and what the caches leave (at least the floor). */
uint64_t fr_budget_room(struct fr_budget *b);

#endif
