/* The query memory (limits.query_memory): what attach queries and dumps
 * reserve before they read the ring, so that together they stay within
 * the limit, and what users who are not privileged may hold of it.
 *
 * Runs on connection threads and the trigger thread; the budgets are
 * thread-safe (core/util/budget.c).
 */
#include "recorder/daemon_int.h"

#include <malloc.h>
#include <stdint.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "ipc/proto.h"

/* Reserves what the query `preq` may take from the query budget, waiting
 * up to QUERY_WAIT_NS, and caps its decoded-chunk cache to the share the
 * cache has of it. Returns the bytes reserved or -EBUSY. */
int64_t daemon_query_reserve(struct daemon *d, struct fr_profile_request *preq)
{
	int64_t want = fr_profile_estimate(d->ring, preq), ask, got, users = 0;

	if (want < 0)
		want = 0;
	/* Profiles limited to one user's processes (users who are not
	 * privileged) hold together at most a quarter of the budget: each
	 * estimate counts every sample of the window, and such users must
	 * not hold root's queries off. What they keep of their own samples
	 * is smaller; their decoded-chunk caches shrink to fit. */
	ask = want;
	if (preq->targets.has_uid) {
		users = fr_budget_acquire(&d->users_budget, (uint64_t)want, QUERY_WAIT_NS);
		if (users < 0)
			return users;
		ask = users;
	}
	got = fr_budget_acquire(&d->query_budget, (uint64_t)ask, QUERY_WAIT_NS);
	if (got < 0) {
		if (preq->targets.has_uid)
			fr_budget_release(&d->users_budget, (uint64_t)users);
		return got;
	}
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
	if (!reserved)
		return;
	fr_budget_release(&d->query_budget, (uint64_t)reserved);
	if (has_uid)
		fr_budget_release(&d->users_budget, (uint64_t)reserved);
	malloc_trim(0);
}

/* The reply when the query memory stays taken. */
cJSON *daemon_query_busy(struct daemon *d, const char *cmd)
{
	char size[32];

	return fr_ipc_error("%s: busy: other queries hold the daemon's query memory "
			    "(limits.query_memory, %s) for over %lld s; retry later",
			    cmd,
			    fr_format_size(fr_budget_limit(&d->query_budget), size, sizeof(size)),
			    (long long)(QUERY_WAIT_NS / 1000000000LL));
}
