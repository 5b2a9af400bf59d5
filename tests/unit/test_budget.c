/* The query memory budget: reservations within the limit, a reservation
 * larger than the whole budget cut to it, a bounded wait that ends busy,
 * a release that lets a waiter in, and a reload that changes the limit. */
#include "core/util/budget.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "tests/unit/check.h"

struct waiter {
	struct fr_budget *b;
	uint64_t want;
	int64_t got;
	int done;
};

static void *wait_main(void *p)
{
	struct waiter *w = p;

	w->got = fr_budget_acquire(w->b, w->want, 60000000000LL);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int main(void)
{
	struct fr_budget b;
	struct waiter w;
	pthread_t t;
	int64_t a, c;

	CHECK(fr_budget_init(&b, 0) == -EINVAL, "a budget of 0 bytes accepted");
	CHECK(fr_budget_init(&b, 100) == 0, "init");
	CHECK(fr_budget_limit(&b) == 100, "limit %llu", (unsigned long long)fr_budget_limit(&b));

	a = fr_budget_acquire(&b, 60, 0);
	CHECK(a == 60, "first reservation: %lld", (long long)a);
	c = fr_budget_acquire(&b, 30, 0);
	CHECK(c == 30, "second reservation: %lld", (long long)c);
	CHECK(fr_budget_used(&b) == 90, "used %llu", (unsigned long long)fr_budget_used(&b));

	/* No room, and none comes: busy once the (short) wait is over. */
	CHECK(fr_budget_acquire(&b, 20, 50000000LL) == -EBUSY, "over-budget reservation granted");

	/* A reservation larger than the budget waits for all of it. */
	w = (struct waiter){.b = &b, .want = 1000};
	CHECK(pthread_create(&t, NULL, wait_main, &w) == 0, "thread");
	fr_budget_release(&b, (uint64_t)c);
	sleep_ms(50);
	CHECK(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), "granted with 60 of 100 bytes held");
	fr_budget_release(&b, (uint64_t)a);
	pthread_join(t, NULL);
	CHECK(w.got == 100, "large reservation: %lld, want the whole budget", (long long)w.got);
	CHECK(fr_budget_acquire(&b, 1, 0) == -EBUSY, "room beside a whole-budget reservation");
	fr_budget_release(&b, (uint64_t)w.got);
	CHECK(fr_budget_used(&b) == 0, "used %llu after all releases",
	      (unsigned long long)fr_budget_used(&b));

	/* A reload raises the limit: a waiter gets in without a release. */
	a = fr_budget_acquire(&b, 100, 0);
	w = (struct waiter){.b = &b, .want = 50};
	CHECK(pthread_create(&t, NULL, wait_main, &w) == 0, "thread");
	sleep_ms(20);
	fr_budget_set_limit(&b, 150);
	pthread_join(t, NULL);
	CHECK(w.got == 50, "after a raise: %lld", (long long)w.got);
	CHECK(fr_budget_limit(&b) == 150, "limit after a raise");
	fr_budget_release(&b, (uint64_t)a);
	fr_budget_release(&b, (uint64_t)w.got);
	fr_budget_destroy(&b);

	/* Under a ceiling of 100 the caches share: what they hold is not
	 * there for reservations, down to the floor (20); less held lets a
	 * waiter in. */
	CHECK(fr_budget_init(&b, 80) == 0, "init");
	fr_budget_set_ceiling(&b, 100, 20);
	CHECK(fr_budget_room(&b) == 80, "room %llu: the limit below the ceiling",
	      (unsigned long long)fr_budget_room(&b));
	fr_budget_set_held(&b, 70);
	CHECK(fr_budget_room(&b) == 30, "room %llu with 70 held",
	      (unsigned long long)fr_budget_room(&b));
	a = fr_budget_acquire(&b, 50, 0);
	CHECK(a == 30, "a reservation cut to what the caches leave: %lld", (long long)a);
	CHECK(fr_budget_try_acquire(&b, 1) == -EBUSY, "grown past the ceiling");
	fr_budget_set_held(&b, 95);
	CHECK(fr_budget_room(&b) == 20, "room %llu: the floor",
	      (unsigned long long)fr_budget_room(&b));
	w = (struct waiter){.b = &b, .want = 10};
	CHECK(pthread_create(&t, NULL, wait_main, &w) == 0, "thread");
	sleep_ms(20);
	CHECK(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), "granted over the floor");
	fr_budget_set_held(&b, 40);
	pthread_join(t, NULL);
	CHECK(w.got == 10, "after the caches shrank: %lld", (long long)w.got);
	CHECK(fr_budget_try_acquire(&b, 20) == 0, "an exact growth with room");
	CHECK(fr_budget_try_acquire(&b, 1) == -EBUSY, "a growth past the room (60)");
	fr_budget_release(&b, (uint64_t)a + (uint64_t)w.got + 20);
	fr_budget_destroy(&b);

	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("budget: all checks passed\n");
	return 0;
}
