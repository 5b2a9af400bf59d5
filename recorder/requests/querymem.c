/* The query memory: what attach queries, dumps and timelines reserve
 * before they read the ring, so that together they stay within what the
 * ceiling (limits.memory, recorder/ingest/memory.c) leaves them, and within
 * limits.query_memory when that is set, and what users who are not
 * privileged may hold of it.
 *
 * Runs on connection threads and the trigger thread; the budgets are
 * thread-safe (core/util/budget.c).
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <stdint.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/proto.h"

int64_t daemon_memory_reserve(struct daemon *d, int has_uid, uint64_t want)
{
	int64_t ask = (int64_t)want, got, users = 0;

	/* The budget learns what the caches hold now, so that what it
	 * grants fits under the ceiling with them. */
	daemon_memory_refresh(d);
	if (has_uid) {
		users = fr_budget_acquire(&d->users_budget, want, QUERY_WAIT_NS);
		if (users < 0)
			return users;
		ask = users;
	}
	got = fr_budget_acquire(&d->query_budget, (uint64_t)ask, QUERY_WAIT_NS);
	if (got < 0) {
		if (has_uid)
			fr_budget_release(&d->users_budget, (uint64_t)users);
		return got;
	}
	/* A uid-limited reservation is released from both with the same
	 * figure: the users' budget holds what the query budget gave. */
	if (has_uid && users > got)
		fr_budget_release(&d->users_budget, (uint64_t)(users - got));
	daemon_memory_begin(d);
	return got;
}

int daemon_memory_grow(struct daemon *d, int has_uid, uint64_t more)
{
	if (has_uid && fr_budget_try_acquire(&d->users_budget, more) < 0)
		return -EBUSY;
	if (fr_budget_try_acquire(&d->query_budget, more) < 0) {
		if (has_uid)
			fr_budget_release(&d->users_budget, more);
		return -EBUSY;
	}
	return 0;
}

void daemon_memory_release(struct daemon *d, int has_uid, int64_t reserved)
{
	if (!reserved)
		return;
	fr_budget_release(&d->query_budget, (uint64_t)reserved);
	if (has_uid)
		fr_budget_release(&d->users_budget, (uint64_t)reserved);
	daemon_memory_end(d);
}

/* Reserves what the query `preq` may take from the query budget, waiting
 * up to QUERY_WAIT_NS, and caps its decoded-chunk cache to the share the
 * cache has of it. Returns the bytes reserved or -EBUSY. */
int64_t daemon_query_reserve(struct daemon *d, struct fr_profile_request *preq)
{
	int64_t want = fr_profile_estimate(d->ring, preq), got;

	/* Profiles limited to one user's processes (users who are not
	 * privileged) hold together at most a quarter of the budget: each
	 * estimate counts every sample of the window, and such users must
	 * not hold root's queries off. What they keep of their own samples
	 * is smaller; their decoded-chunk caches shrink to fit. */
	got = daemon_memory_reserve(d, preq->targets.has_uid, (uint64_t)(want > 0 ? want : 0));
	if (got < 0)
		return got;
	fr_log_debug("attach: reserved %lld bytes of query memory (estimated %lld)", (long long)got,
		     (long long)want);
	/* A reservation cut to the budget holds the decoded-chunk cache to
	 * a third of what it got; the rest is for aggregation. */
	if (got < want)
		preq->cache_bytes = (size_t)(got / 3) + 1;
	return got;
}

/* Gives back what daemon_query_reserve() took, and the memory behind it: a heavy
 * query leaves its arena's free memory mapped, so the daemon's RSS would
 * not return to its idle size. */
void daemon_query_release(struct daemon *d, int has_uid, int64_t reserved)
{
	daemon_memory_release(d, has_uid, reserved);
}

/* The reply when the query memory stays taken. */
cJSON *daemon_query_busy(struct daemon *d, const char *cmd)
{
	uint64_t limit = fr_budget_limit(&d->query_budget);
	uint64_t ceiling = __atomic_load_n(&d->mem.limit, __ATOMIC_RELAXED);
	char size[32], room[32];

	if (__atomic_load_n(&d->mem.query_set, __ATOMIC_RELAXED))
		return fr_ipc_error("%s: busy: other queries hold the daemon's query memory "
				    "(limits.query_memory, %s) for over %lld s; retry later",
				    cmd, fr_format_size(limit, size, sizeof(size)),
				    (long long)(QUERY_WAIT_NS / FR_NS_PER_S));
	return fr_ipc_error("%s: busy: other queries hold the memory the daemon's caches leave "
			    "them (%s of limits.memory, %s) for over %lld s; retry later",
			    cmd,
			    fr_format_size(fr_budget_room(&d->query_budget), room, sizeof(room)),
			    fr_format_size(ceiling, size, sizeof(size)),
			    (long long)(QUERY_WAIT_NS / FR_NS_PER_S));
}
