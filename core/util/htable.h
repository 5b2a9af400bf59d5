/* An intrusive hash table of nodes the caller embeds (first member, so a
 * struct hnode * is the caller's struct), chained, doubling at load 1; and
 * the FNV-1a hash (core/util/hash.h) to key it. Not locked: the caller's lock guards it. */
#ifndef FR_CORE_UTIL_HTABLE_H
#define FR_CORE_UTIL_HTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/hash.h"

struct hnode {
	struct hnode *next;
	uint64_t hash; /* set by the caller before insert */
};

struct htable {
	struct hnode **buckets;
	size_t nbuckets; /* power of two, or 0 before first insert */
	size_t count;
};

/* Inserts `n` by n->hash. Returns 0 or -ENOMEM. */
int fr_htable_insert(struct htable *t, struct hnode *n);

/* The first node of `hash`'s chain (follow ->next, compare ->hash and the
 * key), or NULL. */
struct hnode *fr_htable_first(const struct htable *t, uint64_t hash);

/* Unlinks `n` if it is in `t`. */
void fr_htable_remove(struct htable *t, struct hnode *n);

/* Calls free_node on every node and empties `t`. */
void fr_htable_fini(struct htable *t, void (*free_node)(struct hnode *));

#endif
