/* Fair shares of a cache's budget (see core/util/shares.h).
 *
 * The table is a small array searched linearly: it holds the uids with
 * entries in one cache, a handful on most machines, at most as many as
 * the cache has entries.
 */
#include "core/util/shares.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/grow.h"

#define USER_WEIGHT 3

/* Root's weight: a user's while at most three others share the budget
 * (equal shares, a quarter or more each), then as many as there are
 * others, which is a quarter of all weights: others / (others + 3 *
 * others). */
static uint64_t weight(const struct fr_shares *s, uint32_t uid)
{
	uint32_t others = s->n;

	if (uid != 0)
		return USER_WEIGHT;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->v[i].uid == 0)
			others--;
	return others > USER_WEIGHT ? others : USER_WEIGHT;
}

static int find(const struct fr_shares *s, uint32_t uid)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->v[i].uid == uid)
			return (int)i;
	return -1;
}

int fr_shares_add(struct fr_shares *s, uint32_t uid, int64_t bytes, int32_t entries)
{
	int i = find(s, uid);
	struct fr_share *o;

	if (i < 0) {
		if (FR_GROW(s->v, &s->cap, s->n + 1, 8) < 0)
			return -ENOMEM;
		i = (int)s->n++;
		s->v[i] = (struct fr_share){.uid = uid};
	}
	o = &s->v[i];
	/* Never below zero: a caller's miscount must not wrap into a huge
	 * owner that is evicted from forever. */
	o->bytes = bytes < 0 && (uint64_t)-bytes > o->bytes ? 0 : o->bytes + (uint64_t)bytes;
	o->entries =
		entries < 0 && (uint32_t)-entries > o->entries ? 0 : o->entries + (uint32_t)entries;
	if (o->entries == 0)
		s->v[i] = s->v[--s->n];
	return 0;
}

uint64_t fr_shares_total(const struct fr_shares *s)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < s->n; i++)
		t += s->v[i].bytes;
	return t;
}

int fr_shares_victim(const struct fr_shares *s, uint64_t budget)
{
	int best = -1;
	uint64_t best_w = 1;

	if (fr_shares_total(s) <= budget)
		return -1;
	/* The largest bytes / weight, compared as bytes_a * w_b > bytes_b *
	 * w_a (bytes < 2^46, weights < 2^17: no overflow). */
	for (uint32_t i = 0; i < s->n; i++) {
		uint64_t w = weight(s, s->v[i].uid);

		if (s->v[i].bytes == 0)
			continue;
		if (best < 0 || s->v[i].bytes * best_w > s->v[best].bytes * w) {
			best = (int)i;
			best_w = w;
		}
	}
	return best;
}

uint64_t fr_shares_of(const struct fr_shares *s, uint32_t uid, uint64_t budget)
{
	uint64_t total = 0, w;

	for (uint32_t i = 0; i < s->n; i++)
		total += weight(s, s->v[i].uid);
	w = weight(s, uid);
	if (find(s, uid) < 0)
		total += w;
	return (uint64_t)((unsigned __int128)budget * w / total);
}

static int by_bytes(const void *a, const void *b)
{
	const struct fr_share *x = a, *y = b;

	if ((x->uid == 0) != (y->uid == 0))
		return x->uid == 0 ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

size_t fr_shares_list(const struct fr_shares *s, struct fr_share *out, size_t max,
		      struct fr_share *rest)
{
	struct fr_share *v = s->n ? malloc(s->n * sizeof(*v)) : NULL;
	const struct fr_share *from = v ? v : s->v; /* unsorted rather than nothing */
	size_t n = s->n < max ? s->n : max;

	if (v) {
		memcpy(v, s->v, s->n * sizeof(*v));
		qsort(v, s->n, sizeof(*v), by_bytes);
	}
	if (n)
		memcpy(out, from, n * sizeof(*out));
	if (rest) {
		*rest = (struct fr_share){.uid = (uint32_t)(s->n - n)};
		for (size_t i = n; i < s->n; i++) {
			rest->bytes += from[i].bytes;
			rest->entries += from[i].entries;
		}
	}
	free(v);
	return n;
}

void fr_shares_fini(struct fr_shares *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
