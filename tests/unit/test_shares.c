/* Fair shares of a cache's budget (core/util/shares.h): a user over the
 * budget is evicted from, never root under its share; equal shares among
 * a few owners; root keeps a quarter against many uids; owners come and
 * go with their entries; the list puts root first. */
#include "core/util/shares.h"

#include <stdio.h>

#include "tests/unit/check.h"

#define MiB (1ull << 20)

/* Evicts like a cache would, a whole owner's `unit` at a time, until the
 * total fits: returns the bytes root lost. */
static uint64_t evict_until_fits(struct fr_shares *s, uint64_t budget, uint64_t unit)
{
	uint64_t root_lost = 0;
	int v;

	while ((v = fr_shares_victim(s, budget)) >= 0) {
		uint32_t uid = s->v[v].uid;
		uint64_t take = s->v[v].bytes < unit ? s->v[v].bytes : unit;

		if (uid == 0)
			root_lost += take;
		fr_shares_add(s, uid, -(int64_t)take, take == s->v[v].bytes ? -1 : 0);
	}
	return root_lost;
}

/* The attack: root holds a little, one user floods. */
static void test_flood(void)
{
	struct fr_shares s = {0};

	fr_shares_add(&s, 0, 3 * MiB, 3);
	CHECK(fr_shares_victim(&s, 100 * MiB) == -1, "within the budget: a victim");
	for (int i = 0; i < 10; i++) {
		fr_shares_add(&s, 1001, 40 * MiB, 1);
		CHECK(evict_until_fits(&s, 100 * MiB, 40 * MiB) == 0,
		      "root lost bytes to the flood (file %d)", i);
	}
	CHECK(fr_shares_total(&s) <= 100 * MiB, "over the budget: %llu",
	      (unsigned long long)fr_shares_total(&s));
	CHECK(s.n == 2, "%u owners", s.n);
	/* Root over its share: root is evicted from too. */
	fr_shares_add(&s, 0, 80 * MiB, 1);
	CHECK(s.v[fr_shares_victim(&s, 100 * MiB)].uid == 0, "root at 83 MiB is not the victim");
	fr_shares_fini(&s);
}

/* Two users, equal shares: the larger gives up first, whoever it is, and
 * no one under half is touched. */
static void test_equal(void)
{
	struct fr_shares s = {0};
	int v;

	fr_shares_add(&s, 1001, 70 * MiB, 7);
	fr_shares_add(&s, 1002, 40 * MiB, 4);
	v = fr_shares_victim(&s, 100 * MiB);
	CHECK(v >= 0 && s.v[v].uid == 1001, "the larger is not the victim");
	CHECK(fr_shares_of(&s, 1002, 100 * MiB) == 50 * MiB, "share %llu",
	      (unsigned long long)fr_shares_of(&s, 1002, 100 * MiB));
	/* A third owner, not holding anything yet, would get a third. */
	CHECK(fr_shares_of(&s, 0, 99 * MiB) == 33 * MiB, "root's share %llu",
	      (unsigned long long)fr_shares_of(&s, 0, 99 * MiB));
	fr_shares_fini(&s);
}

/* Many uids (a user's subordinate uids): each user's share shrinks,
 * root's stays a quarter. */
static void test_many(void)
{
	struct fr_shares s = {0};
	uint64_t root_lost;

	fr_shares_add(&s, 0, 20 * MiB, 20);
	for (uint32_t u = 0; u < 100; u++)
		fr_shares_add(&s, 100000 + u, 10 * MiB, 10);
	CHECK(s.n == 101, "%u owners", s.n);
	CHECK(fr_shares_of(&s, 0, 100 * MiB) == 25 * MiB, "root's share %llu, want a quarter",
	      (unsigned long long)fr_shares_of(&s, 0, 100 * MiB));
	root_lost = evict_until_fits(&s, 100 * MiB, MiB);
	CHECK(root_lost == 0, "root lost %llu bytes under its quarter",
	      (unsigned long long)root_lost);
	fr_shares_fini(&s);
}

/* Owners leave with their last entry; the list is root first, then by
 * bytes. */
static void test_list(void)
{
	struct fr_shares s = {0};
	struct fr_share out[4], rest;
	size_t n;

	fr_shares_add(&s, 1001, 1 * MiB, 1);
	fr_shares_add(&s, 1002, 5 * MiB, 1);
	fr_shares_add(&s, 0, 2 * MiB, 1);
	fr_shares_add(&s, 1003, 3 * MiB, 1);
	n = fr_shares_list(&s, out, 3, &rest);
	CHECK(n == 3 && out[0].uid == 0 && out[1].uid == 1002 && out[2].uid == 1003,
	      "list: %zu owners, %u %u %u", n, out[0].uid, out[1].uid, out[2].uid);
	CHECK(rest.uid == 1 && rest.bytes == 1 * MiB && rest.entries == 1,
	      "the rest: %u owners, %llu bytes", rest.uid, (unsigned long long)rest.bytes);
	fr_shares_add(&s, 1002, -5 * (int64_t)MiB, -1);
	CHECK(s.n == 3 && fr_shares_total(&s) == 6 * MiB, "after a removal: %u owners, %llu", s.n,
	      (unsigned long long)fr_shares_total(&s));
	/* A miscount never wraps. */
	fr_shares_add(&s, 1001, -100 * (int64_t)MiB, 0);
	CHECK(fr_shares_total(&s) == 5 * MiB, "wrapped: %llu",
	      (unsigned long long)fr_shares_total(&s));
	fr_shares_fini(&s);
	CHECK(s.n == 0 && fr_shares_victim(&s, 0) == -1, "not empty after fini");
}

int main(void)
{
	test_flood();
	test_equal();
	test_many();
	test_list();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("shares: all checks passed\n");
	return 0;
}
