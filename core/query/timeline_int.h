/* The state of one timeline computation (core/query/timeline.c): the
 * groups found so far and the cells (group, step) they add into.
 */
#ifndef FR_CORE_TIMELINE_INT_H
#define FR_CORE_TIMELINE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/query/timeline.h"
#include "core/util/htable.h"

struct fr_chunk;

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

/* An open-wait record of the last seal read (core/query/timeline_waits.c). */
struct tl_open {
	uint32_t g, tid;
	uint64_t weight;
};

struct tl_waits {
	/* tid + 1 -> the latest switch-in of a wait that ended (0: empty). */
	uint64_t *tids;
	int64_t *last_in;
	size_t cap, ntids;
	/* The records of the last seal before the end, at open_at. */
	struct tl_open *open;
	size_t nopen, open_cap;
	int64_t open_at;
};

struct tl {
	const struct fr_timeline_request *req;
	struct fr_timeline *t;
	struct htable ht;
	struct tl_group **groups;
	size_t ngroups, groups_cap;
	struct tl_cells cells;
	struct tl_waits waits; /* offcpu only */
	/* The step of the last sample added and where it starts (Unix ns). */
	uint32_t step;
	int64_t step_at;
	uint64_t bytes; /* held now, as tl_charge() counts it */
	uint64_t limit; /* req->max_bytes, or what `grow` granted since */
};

/* Counts `delta` bytes more (or, negative, fewer) held by the computation.
 * Returns 0, or -E2BIG when that passes the limit and req->grow does not
 * raise it (counted all the same: the caller takes it back). */
int tl_charge(struct tl *tl, int64_t delta);

/* The group (pid, name), added when new: its index in *out. Returns 0 or
 * -ENOMEM. */
int tl_group(struct tl *tl, uint32_t pid, const char *name, uint32_t *out);

/* How tl_add() takes a value: added to its step, spread over the steps it
 * lasted (offcpu waits), or kept when larger (gauges: rss). */
enum { TL_SUM = 0, TL_SPREAD = 1, TL_GAUGE = 2 };

/* Adds `v` of group g at `time` (see core/query/timeline.c), as `mode`
 * says. */
int tl_add(struct tl *tl, uint32_t g, int64_t time, uint64_t v, int mode);

/* core/query/timeline_memory.c: how `event`'s samples add up (TL_*), the
 * value a sample of weight `weight` stands for, the unit of the values,
 * and how two values of one cell or group combine. */
int tl_mode(uint32_t event);
uint64_t tl_value(uint32_t event, uint64_t weight);
const char *tl_unit(uint32_t event);
uint64_t tl_combine(int mode, uint64_t a, uint64_t b);

/* core/query/timeline_memory.c: an oom sample (i of c) into the victims
 * list. Returns 0 or -E2BIG (tl_charge). */
int tl_victim(struct tl *tl, const struct fr_chunk *c, uint32_t i);

/* core/query/timeline_memory.c: sample i of `c` as a mark when it is a
 * crash, an OOM kill or an exit by a signal. Returns 0 or -E2BIG. */
int tl_mark(struct tl *tl, const struct fr_chunk *c, uint32_t i);

/* core/query/timeline_memory.c: the marks' part of the JSON form
 * (",\"marks\":[...]"), when there are some. */
void tl_marks_json(FILE *f, const struct fr_timeline *t);

/* core/query/timeline_memory.c: the victims' part of the JSON form
 * (",\"victims\":[...]"), when the timeline is of oom. */
void tl_victims_json(FILE *f, const struct fr_timeline *t);

/* What sample i of `c` adds to its cell: its weight, an allocation's
 * estimated bytes (core/query/timeline_alloc.c). */
struct fr_chunk;
uint64_t tl_weight(const struct fr_chunk *c, uint32_t i);

/* Notes that the window has samples of `event`. */
void tl_note_event(struct tl *tl, uint32_t event);

/* offcpu: a wait that ended at `time` (its sample), an open-wait record
 * of a seal at `time`, and, once every chunk is read, the records of the
 * last seal added. Each returns 0 or -ENOMEM. */
int tl_wait_ended(struct tl *tl, uint32_t g, uint32_t tid, int64_t time, uint64_t weight);
int tl_wait_open(struct tl *tl, uint32_t g, uint32_t tid, int64_t time, uint64_t weight);
int tl_waits_finish(struct tl *tl);
void tl_waits_free(struct tl_waits *w);

#endif
