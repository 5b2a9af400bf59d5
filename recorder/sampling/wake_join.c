/* The wakes held for their wait's record: see recorder/sampling/wake_join.h.
 * A fixed array of entries, chained from hash buckets by (tid, start). */
#include "recorder/sampling/wake_join.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fr_wake_join {
	struct fr_wake_held *e;
	int32_t *next; /* [cap]: the bucket chain, or the free list */
	int32_t *head; /* [nbuckets]: first entry, -1 none */
	uint8_t *used; /* [cap] */
	uint32_t cap, nbuckets, count;
	int32_t free_head; /* -1: full */
};

static uint32_t bucket(const struct fr_wake_join *j, uint32_t tid, uint64_t start)
{
	uint64_t h = (tid * 0x9e3779b97f4a7c15ull) ^ (start * 0xff51afd7ed558ccdull);

	return (uint32_t)(h >> 32) & (j->nbuckets - 1);
}

struct fr_wake_join *fr_wake_join_new(uint32_t cap)
{
	struct fr_wake_join *j = calloc(1, sizeof(*j));

	if (!j || !cap)
		goto fail;
	j->cap = cap;
	for (j->nbuckets = 1; j->nbuckets < cap * 2; j->nbuckets *= 2)
		;
	j->e = calloc(cap, sizeof(*j->e));
	j->next = calloc(cap, sizeof(*j->next));
	j->used = calloc(cap, 1);
	j->head = malloc(j->nbuckets * sizeof(*j->head));
	if (!j->e || !j->next || !j->used || !j->head)
		goto fail;
	for (uint32_t b = 0; b < j->nbuckets; b++)
		j->head[b] = -1;
	for (uint32_t i = 0; i < cap; i++)
		j->next[i] = i + 1 < cap ? (int32_t)(i + 1) : -1;
	j->free_head = 0;
	return j;
fail:
	fr_wake_join_free(j);
	return NULL;
}

void fr_wake_join_free(struct fr_wake_join *j)
{
	if (!j)
		return;
	free(j->e);
	free(j->next);
	free(j->used);
	free(j->head);
	free(j);
}

/* The entry of the key and the link that points at it; -1 none. */
static int32_t find(struct fr_wake_join *j, uint32_t tid, uint64_t start, int32_t **link)
{
	*link = &j->head[bucket(j, tid, start)];
	for (int32_t i = **link; i >= 0; i = **link) {
		if (j->e[i].tid == tid && j->e[i].start == start)
			return i;
		*link = &j->next[i];
	}
	return -1;
}

static void copy_out(const struct fr_wake_held *in, struct fr_wake_held *out)
{
	*out = *in;
	out->s.ips = out->ips;
}

/* Unlinks entry i (*link points at it) into *out and frees it. */
static void remove_at(struct fr_wake_join *j, int32_t *link, int32_t i, struct fr_wake_held *out)
{
	*link = j->next[i];
	copy_out(&j->e[i], out);
	j->used[i] = 0;
	j->next[i] = j->free_head;
	j->free_head = i;
	j->count--;
}

int fr_wake_join_put(struct fr_wake_join *j, const struct fr_wake_held *w)
{
	int32_t *link, i = find(j, w->tid, w->start, &link);
	uint16_t n = w->s.nr_frames < FR_MAX_FRAMES ? w->s.nr_frames : FR_MAX_FRAMES;

	if (i < 0) {
		if (j->free_head < 0)
			return -ENOSPC;
		i = j->free_head;
		j->free_head = j->next[i];
		j->next[i] = -1;
		*link = i;
		j->used[i] = 1;
		j->count++;
	}
	{
		int32_t next = j->next[i];

		j->e[i] = *w;
		j->next[i] = next;
	}
	if (n && w->s.ips != w->ips)
		memcpy(j->e[i].ips, w->s.ips, n * sizeof(uint64_t));
	j->e[i].s.nr_frames = n;
	j->e[i].s.ips = NULL;
	return 0;
}

int fr_wake_join_take(struct fr_wake_join *j, uint32_t tid, uint64_t start,
		      struct fr_wake_held *out)
{
	int32_t *link, i = find(j, tid, start, &link);

	if (i < 0)
		return 0;
	remove_at(j, link, i, out);
	return 1;
}

int fr_wake_join_expire(struct fr_wake_join *j, uint64_t before, struct fr_wake_held *out)
{
	if (!j->count)
		return 0;
	for (uint32_t i = 0; i < j->cap; i++) {
		int32_t *link;

		if (!j->used[i] || j->e[i].held_at >= before)
			continue;
		find(j, j->e[i].tid, j->e[i].start, &link);
		remove_at(j, link, (int32_t)i, out);
		return 1;
	}
	return 0;
}

uint32_t fr_wake_join_count(const struct fr_wake_join *j)
{
	return j->count;
}
