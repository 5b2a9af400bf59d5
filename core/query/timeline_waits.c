/* Off-CPU waits in a timeline (core/query/timeline.h, "VALUES"): a wait
 * is spread over the steps it lasted. A wait that ended before the
 * window's end is a sample stamped at its switch-in; one still going on
 * then is known from the open-wait records (core/store/chunk.h, "open
 * waits") of the last seal before the end: each says since when a thread
 * was off the CPU at that seal, and is counted up to the seal unless the
 * thread came back after it (a sample of that wait, before the end, then
 * counts it whole). Only what lies before the window's end is read, so the
 * answer does not depend on how the chunks were cut or merged.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/query/timeline_int.h"
#include "core/util/hash.h"

/* Where tid's slot is in the table of switch-ins (linear probing). */
static size_t slot_of(const struct tl_waits *w, uint32_t tid)
{
	size_t j = fr_hash_u32(tid) & (w->cap - 1);

	while (w->tids[j] && w->tids[j] != (uint64_t)tid + 1)
		j = (j + 1) & (w->cap - 1);
	return j;
}

static int grow(struct tl *tl)
{
	struct tl_waits *w = &tl->waits;
	struct tl_waits n = {.cap = w->cap ? 2 * w->cap : 1024};
	size_t slot = sizeof(*n.tids) + sizeof(*n.last_in);

	/* Both tables while one is copied into the other. */
	if (tl_charge(tl, (int64_t)(n.cap * slot)) < 0)
		return -E2BIG;
	tl->bytes -= w->cap * slot;
	n.tids = calloc(n.cap, sizeof(*n.tids));
	n.last_in = calloc(n.cap, sizeof(*n.last_in));
	if (!n.tids || !n.last_in) {
		free(n.tids);
		free(n.last_in);
		return -ENOMEM;
	}
	for (size_t i = 0; i < w->cap; i++) {
		size_t j;

		if (!w->tids[i])
			continue;
		j = slot_of(&n, (uint32_t)(w->tids[i] - 1));
		n.tids[j] = w->tids[i];
		n.last_in[j] = w->last_in[i];
	}
	free(w->tids);
	free(w->last_in);
	w->tids = n.tids;
	w->last_in = n.last_in;
	w->cap = n.cap;
	return 0;
}

int tl_wait_ended(struct tl *tl, uint32_t g, uint32_t tid, int64_t time, uint64_t weight)
{
	struct tl_waits *w = &tl->waits;
	size_t j;
	int ret;

	if (time >= tl->t->end_ns)
		return 0;
	if (2 * (w->ntids + 1) > w->cap && (ret = grow(tl)) < 0)
		return ret;
	j = slot_of(w, tid);
	if (!w->tids[j]) {
		w->tids[j] = (uint64_t)tid + 1;
		w->last_in[j] = time;
		w->ntids++;
	} else if (time > w->last_in[j]) {
		w->last_in[j] = time;
	}
	return tl_add(tl, g, time, weight, 1);
}

int tl_wait_open(struct tl *tl, uint32_t g, uint32_t tid, int64_t time, uint64_t weight)
{
	struct tl_waits *w = &tl->waits;

	if (time >= tl->t->end_ns || time < w->open_at)
		return 0;
	if (time > w->open_at) {
		/* A later seal: its records supersede the earlier ones. */
		w->open_at = time;
		w->nopen = 0;
	}
	if (w->nopen == w->open_cap) {
		size_t cap = w->open_cap ? 2 * w->open_cap : 256;
		struct tl_open *v;

		if (tl_charge(tl, (int64_t)((cap - w->open_cap) * sizeof(*v))) < 0)
			return -E2BIG;
		v = realloc(w->open, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->open = v;
		w->open_cap = cap;
	}
	w->open[w->nopen++] = (struct tl_open){.g = g, .tid = tid, .weight = weight};
	return 0;
}

int tl_waits_finish(struct tl *tl)
{
	struct tl_waits *w = &tl->waits;
	int ret = 0;

	for (size_t i = 0; i < w->nopen && ret == 0; i++) {
		const struct tl_open *o = &w->open[i];
		size_t j = w->cap ? slot_of(w, o->tid) : 0;

		/* Back after the seal: that wait's sample counted it. */
		if (w->cap && w->tids[j] && w->last_in[j] > w->open_at)
			continue;
		ret = tl_add(tl, o->g, w->open_at, o->weight, 1);
	}
	return ret;
}

void tl_waits_free(struct tl_waits *w)
{
	free(w->tids);
	free(w->last_in);
	free(w->open);
}
