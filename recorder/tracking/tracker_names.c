/* Process tracker: each thread's renames with their times, kept for the
 * chunks whose samples they name (core/store/chunk.h, "names over time").
 *
 * A COMM record says a thread took a new name (prctl PR_SET_NAME,
 * pthread_setname_np, or an exec) and, in its sample_id trailer, when.
 * The thread table of a chunk holds one name per thread, so a thread
 * renamed every 100 ms would have all its samples of a second under one
 * name; the renames kept here go into the chunk with their times.
 *
 * A rename is handed to the chunk sealed next and to the one after:
 * samples are drained CPU by CPU, so a sample taken just before a rename
 * may be drained, and sealed, after it. Then it is forgotten; a thread
 * keeps no history (and no memory for it) once it stops renaming itself.
 * At most NAME_HIST_MAX renames per thread are kept between two seals,
 * the oldest giving way (it becomes the name before the others).
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/tracking/tracker.h"
#include "recorder/tracking/tracker_int.h"

void tracker_name_change(struct fr_tracker *t, struct thread *th, const char *name, int64_t time_ns)
{
	struct name_hist *h = th->hist;
	uint32_t at;

	/* Unnamed (just learned): this is its first name, not a rename. */
	if (!th->name[0] || strncmp(th->name, name, FR_LIMIT_COMM_LEN - 1) == 0 || !time_ns)
		return;
	if (!h) {
		h = th->hist = calloc(1, sizeof(*h));
		if (!h)
			return;
		memcpy(h->before, th->name, sizeof(h->before));
	}
	if (h->n == NAME_HIST_MAX) {
		memcpy(h->before, h->ch[0].name, sizeof(h->before));
		memmove(&h->ch[0], &h->ch[1], (NAME_HIST_MAX - 1) * sizeof(h->ch[0]));
		h->n--;
	}
	/* Records come in time order, nearly always: keep the list sorted. */
	for (at = h->n; at > 0 && h->ch[at - 1].time_ns > time_ns; at--)
		;
	memmove(&h->ch[at + 1], &h->ch[at], (h->n - at) * sizeof(h->ch[0]));
	h->ch[at].time_ns = time_ns;
	h->ch[at].gen = t->gen;
	tracker_copy_name(h->ch[at].name, name);
	h->n++;
}

void tracker_names_sealed(struct fr_tracker *t, struct thread *th)
{
	struct name_hist *h = th->hist;
	uint32_t drop = 0;

	if (!h)
		return;
	while (drop < h->n && h->ch[drop].gen + 2 <= t->gen)
		drop++;
	if (drop == h->n) {
		free(h);
		th->hist = NULL;
		return;
	}
	if (drop) {
		memcpy(h->before, h->ch[drop - 1].name, sizeof(h->before));
		memmove(&h->ch[0], &h->ch[drop], (h->n - drop) * sizeof(h->ch[0]));
		h->n -= drop;
	}
}

void tracker_names_info(struct thread *th, struct fr_thread_info *out)
{
	struct name_hist *h = th->hist;

	if (!h || !h->n)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		h->out[i] =
			(struct fr_name_change){.time_ns = h->ch[i].time_ns, .name = h->ch[i].name};
	out->nchanges = h->n;
	out->changes = h->out;
	out->before = h->before;
}
