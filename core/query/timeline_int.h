/* The state of one timeline computation (core/query/timeline.c): the
 * groups found so far and the cells (group, step) they add into.
 */
#ifndef FR_CORE_TIMELINE_INT_H
#define FR_CORE_TIMELINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/query/timeline.h"
#include "core/util/htable.h"

struct tl_group {
	struct hnode node;
	uint32_t pid; /* by process; else 0 */
	uint32_t idx; /* in tl.groups as found */
	uint64_t total;
	char name[]; /* comm, cgroup or label value */
};

/* (group + 1) << 32 | step -> value; key 0 is an empty slot. */
struct tl_cells {
	uint64_t *keys, *vals;
	size_t cap, n;
	size_t last; /* the slot added to last */
};

struct tl {
	const struct fr_timeline_request *req;
	struct fr_timeline *t;
	struct htable ht;
	struct tl_group **groups;
	size_t ngroups, groups_cap;
	struct tl_cells cells;
	/* The step of the last sample added and where it starts (Unix ns). */
	uint32_t step;
	int64_t step_at;
};

/* The group (pid, name), added when new: its index in *out. Returns 0 or
 * -ENOMEM. */
int tl_group(struct tl *tl, uint32_t pid, const char *name, uint32_t *out);

/* Adds `v` of group g at `time` (see core/query/timeline.c). */
int tl_add(struct tl *tl, uint32_t g, int64_t time, uint64_t v, int spread);

/* Notes that the window has samples of `event`. */
void tl_note_event(struct tl *tl, uint32_t event);

#endif
