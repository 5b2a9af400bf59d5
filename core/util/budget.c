/* A memory budget shared by concurrent queries (see core/util/budget.h).
 *
 * The condition variable runs on CLOCK_MONOTONIC so that a change of the
 * wall clock neither cuts a wait short nor stretches it.
 */
#include "core/util/budget.h"

#include <errno.h>
#include <time.h>

#include "core/util/log.h"

int fr_budget_init(struct fr_budget *b, uint64_t limit)
{
	int ret;

	if (limit == 0)
		return -EINVAL;
	b->limit = limit;
	b->used = 0;
	b->ceiling = b->held = b->floor = 0;
	ret = pthread_mutex_init(&b->lock, NULL);
	if (ret)
		return -ret;
	ret = fr_mono_cond_init(&b->cond);
	if (ret < 0)
		pthread_mutex_destroy(&b->lock);
	return ret;
}

void fr_budget_destroy(struct fr_budget *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

void fr_budget_set_limit(struct fr_budget *b, uint64_t limit)
{
	if (limit == 0)
		return;
	pthread_mutex_lock(&b->lock);
	b->limit = limit;
	/* A larger budget may let waiters in now. */
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/* What reservations may take together now. Under b->lock. */
static uint64_t room(const struct fr_budget *b)
{
	uint64_t left;

	if (!b->ceiling)
		return b->limit;
	left = b->ceiling > b->held ? b->ceiling - b->held : 0;
	if (left < b->floor)
		left = b->floor;
	return left < b->limit ? left : b->limit;
}

void fr_budget_set_ceiling(struct fr_budget *b, uint64_t ceiling, uint64_t floor)
{
	pthread_mutex_lock(&b->lock);
	b->ceiling = ceiling;
	b->floor = floor;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void fr_budget_set_held(struct fr_budget *b, uint64_t held)
{
	pthread_mutex_lock(&b->lock);
	if (held < b->held)
		pthread_cond_broadcast(&b->cond);
	b->held = held;
	pthread_mutex_unlock(&b->lock);
}

uint64_t fr_budget_room(struct fr_budget *b)
{
	uint64_t r;

	pthread_mutex_lock(&b->lock);
	r = room(b);
	pthread_mutex_unlock(&b->lock);
	return r;
}

int64_t fr_budget_acquire(struct fr_budget *b, uint64_t bytes, int64_t wait_ns)
{
	struct timespec deadline;
	int64_t got = -EBUSY;

	fr_mono_deadline(&deadline, wait_ns);
	if (bytes == 0)
		bytes = 1;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		/* Read under the lock each time: a reload, or the caches
		 * under the same ceiling, may change it. */
		uint64_t r = room(b), want = bytes < r ? bytes : r;

		if (want && b->used + want <= r) {
			b->used += want;
			got = (int64_t)want;
			break;
		}
		if (pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&b->lock);
	return got;
}

int fr_budget_try_acquire(struct fr_budget *b, uint64_t bytes)
{
	int ret = -EBUSY;

	pthread_mutex_lock(&b->lock);
	if (b->used + bytes <= room(b)) {
		b->used += bytes;
		ret = 0;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

void fr_budget_release(struct fr_budget *b, uint64_t bytes)
{
	pthread_mutex_lock(&b->lock);
	b->used = bytes < b->used ? b->used - bytes : 0;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

uint64_t fr_budget_limit(struct fr_budget *b)
{
	uint64_t limit;

	pthread_mutex_lock(&b->lock);
	limit = b->limit;
	pthread_mutex_unlock(&b->lock);
	return limit;
}

uint64_t fr_budget_used(struct fr_budget *b)
{
	uint64_t used;

	pthread_mutex_lock(&b->lock);
	used = b->used;
	pthread_mutex_unlock(&b->lock);
	return used;
}
