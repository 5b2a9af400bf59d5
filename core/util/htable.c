/* See htable.h. */
#include "core/util/htable.h"

#include <errno.h>
#include <stdlib.h>

int fr_htable_insert(struct htable *t, struct hnode *n)
{
	if (t->count >= t->nbuckets) {
		size_t nb = t->nbuckets ? t->nbuckets * 2 : 64;
		struct hnode **b = calloc(nb, sizeof(*b));

		if (!b)
			return -ENOMEM;
		for (size_t i = 0; i < t->nbuckets; i++) {
			struct hnode *e = t->buckets[i];

			while (e) {
				struct hnode *next = e->next;

				e->next = b[e->hash & (nb - 1)];
				b[e->hash & (nb - 1)] = e;
				e = next;
			}
		}
		free(t->buckets);
		t->buckets = b;
		t->nbuckets = nb;
	}
	n->next = t->buckets[n->hash & (t->nbuckets - 1)];
	t->buckets[n->hash & (t->nbuckets - 1)] = n;
	t->count++;
	return 0;
}

struct hnode *fr_htable_first(const struct htable *t, uint64_t hash)
{
	if (!t->nbuckets)
		return NULL;
	return t->buckets[hash & (t->nbuckets - 1)];
}

void fr_htable_remove(struct htable *t, struct hnode *n)
{
	struct hnode **pp;

	if (!t->nbuckets)
		return;
	for (pp = &t->buckets[n->hash & (t->nbuckets - 1)]; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			t->count--;
			return;
		}
}

void fr_htable_fini(struct htable *t, void (*free_node)(struct hnode *))
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct hnode *e = t->buckets[i];

		while (e) {
			struct hnode *next = e->next;

			free_node(e);
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = 0;
	t->count = 0;
}
