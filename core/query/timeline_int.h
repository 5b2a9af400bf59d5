/* What the timeline's files share (core/query/timeline.c the pass over
 * the chunks, timeline_summary.c the chunks read from their summary):
 * the groups found so far and the cells (group, step) they add into.
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
};

struct tl {
	const struct fr_timeline_request *req;
	struct fr_timeline *t;
	struct htable ht;
	struct tl_group **groups;
	size_t ngroups, groups_cap;
	struct tl_cells cells;
};

/* The group (pid, name), added when new: its index in *out. Returns 0 or
 * -ENOMEM. */
int tl_group(struct tl *tl, uint32_t pid, const char *name, uint32_t *out);

/* Adds `v` of group g at `time` (see core/query/timeline.c). */
int tl_add(struct tl *tl, uint32_t g, int64_t time, uint64_t v, int spread);

/* Notes that the window has samples of `event`. */
void tl_note_event(struct tl *tl, uint32_t event);

/* Adds the encoded chunk `buf` (`len` bytes, verified by the ring) from
 * its timeline summary. Returns 0, -ENOENT when it has none or the
 * request cannot be answered from one (the caller decodes the chunk),
 * -EBADMSG, or -ENOMEM. */
int tl_summary_add(struct tl *tl, const void *buf, size_t len);

#endif
