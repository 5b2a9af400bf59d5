/* Fair shares of a cache's budget among the users whose entries it holds.
 *
 * The recorder's caches (the on-disk symbol cache, the unwind tables)
 * hold entries that processes of every user cause; one budget bounds
 * each. A single least-recently-used order lets one user push out what
 * everyone else keeps: ten large binaries of theirs evict root's copy of
 * a deleted binary. So each cache counts its bytes per owner (a uid; what
 * owns an entry is each cache's to say) and evicts by this rule:
 *
 *   Over the budget, the entry that goes is the least recently used one
 *   of the owner most over its share. The shares are equal among the
 *   owners that hold entries, except root's, which is never under a
 *   quarter of the budget.
 *
 * So an owner at or under its share is never evicted from: every owner
 * keeps min(its use, its share), a user's new entries compete with that
 * user's own, and root keeps at least a quarter of the budget however
 * many uids (a user's subordinate uids in containers are uids too) hold
 * entries. An owner over its share loses entries only while the total is
 * over the budget: what others leave unused is anyone's.
 *
 * In weights: every user weighs 3, root max(3, number of other owners);
 * an owner's share is budget * weight / total weight, and "most over its
 * share" is the largest bytes / weight.
 *
 * Not thread-safe: each cache keeps its table under its own lock.
 */
#ifndef FR_CORE_UTIL_SHARES_H
#define FR_CORE_UTIL_SHARES_H

#include <stddef.h>
#include <stdint.h>

/* One owner's use. */
struct fr_share {
	uint32_t uid;
	uint32_t entries;
	uint64_t bytes;
};

/* The owners that hold entries (zeroed: empty). */
struct fr_shares {
	struct fr_share *v;
	uint32_t n, cap;
};

/* Adds `bytes` and `entries` (either may be negative) to the use of
 * `uid`, which is added when new and removed when it holds no entry any
 * more. Returns 0 or -ENOMEM (nothing changed). */
int fr_shares_add(struct fr_shares *s, uint32_t uid, int64_t bytes, int32_t entries);

/* The owner whose least recently used entry goes next, when the total is
 * over `budget`: its index in s->v; -1 when the total fits. */
int fr_shares_victim(const struct fr_shares *s, uint64_t budget);

/* What `uid` is guaranteed of `budget` now (its share, as if it held
 * entries when it holds none). */
uint64_t fr_shares_of(const struct fr_shares *s, uint32_t uid, uint64_t budget);

/* The bytes all owners hold. */
uint64_t fr_shares_total(const struct fr_shares *s);

/* Copies up to `max` owners into `out`, root first, then the others by
 * bytes, most first, and, when `rest` is given, the owners left out into
 * *rest: how many in rest->uid, their bytes and entries summed. Returns
 * how many were copied. */
size_t fr_shares_list(const struct fr_shares *s, struct fr_share *out, size_t max,
		      struct fr_share *rest);

/* Frees the table; it can be used again (empty). */
void fr_shares_fini(struct fr_shares *s);

#endif
