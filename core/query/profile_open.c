/* Off-CPU time inside a window: completed waits clipped to it, and the
 * waits still open at its end taken from the recorder's open-wait records
 * (FR_EVENT_OFFCPU_OPEN, see "open waits" in core/store/chunk.h).
 *
 * A window [t0, t1) counts, for each wait [out, in) of a thread, the part
 * [max(out, t0), min(in, t1)), exactly once:
 *  - a completed wait is an offcpu sample stamped with its switch-in `in`;
 *    the window that holds `in` counts [max(out, t0), in);
 *  - a wait still open at t1 is counted from the latest open-wait records
 *    in the window (those of the last seal before t1, time `asof`): a
 *    record counts [max(out, t0), min(t1, asof + OPEN_REACH_NS)) unless
 *    the window also holds an offcpu sample of the same thread that came
 *    back after `out` (then the wait ended before t1 and the sample counts
 *    it, or the thread blocked again after the seal).
 * So windows that tile time add up to the waits, except the part before
 * t1 of a wait begun after the last seal before t1 and still open at t1
 * (less than a second, counted in no window), and a wait longer than the
 * recorder's memory of it (recorder/sampling/offcpu.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/store/chunk.h"
#include "core/query/profile_int.h"
#include "core/store/sample.h"

/* How far past its records an open wait is counted: the recorder seals
 * at least once a second while threads are blocked, so records older
 * than this mean it stopped (a crash): the wait is known up to there. */
#define OPEN_REACH_NS 2000000000LL
/* A switch-in read after the seal that still listed its wait as open:
 * the drain lags the switch by far less than this. */
#define OPEN_LAG_NS 2000000000LL

/* Drops the offcpu samples that came back too long before the latest
 * records to concern them. */
static void done_prune(struct builder *b)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < b->ndone; k++)
		if (b->done[k].in_ns >= b->open_asof - OPEN_LAG_NS)
			b->done[n++] = b->done[k];
	b->ndone = n;
}

/* Pass 1, for sample i of `c`: an open-wait record in the window moves the
 * window's latest records (returns 1); an offcpu sample of the targets in
 * the window (the caller selected it) is kept for the records to check
 * (returns 0); -ENOMEM. Any other sample: 0. */
int profile_open_note(struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	int64_t t = c->time_ns[i];

	if (FR_EVENT_IS_OPEN_WAIT(c->event[i])) {
		if (t >= b->req->t0 && t < b->req->t1 && t > b->open_asof)
			b->open_asof = t;
		return 1;
	}
	if (c->event[i] != FR_EVENT_OFFCPU || t < b->open_asof - OPEN_LAG_NS)
		return 0;
	if (b->ndone == b->done_cap) {
		uint32_t cap = b->done_cap ? b->done_cap * 2 : 256;
		struct open_done *d;

		done_prune(b);
		if (b->ndone < b->done_cap / 2)
			goto add;
		if (cap <= b->done_cap)
			return -ENOMEM;
		d = realloc(b->done, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		b->done = d;
		b->done_cap = cap;
	}
add:
	b->done[b->ndone++] = (struct open_done){.tid = c->tid[i], .in_ns = t};
	return 0;
}

static int cmp_done(const void *a, const void *b)
{
	const struct open_done *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->in_ns > y->in_ns) - (x->in_ns < y->in_ns);
}

/* After pass 1: the samples kept for the records, sorted by thread. */
void profile_open_prepare(struct builder *b)
{
	done_prune(b);
	if (b->ndone)
		qsort(b->done, b->ndone, sizeof(*b->done), cmp_done);
}

/* Whether thread `tid` came back after `out` in the window. */
static int came_back(const struct builder *b, uint32_t tid, int64_t out)
{
	uint32_t lo = 0, hi = b->ndone;

	/* The first entry past tid's: the one before it is tid's latest. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b->done[mid].tid <= tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && b->done[lo - 1].tid == tid && b->done[lo - 1].in_ns > out;
}

/* Pass 2: what sample i of `c` (selected: in the window, of the targets)
 * adds to its event, in the event's unit; 0 for an open-wait record that
 * does not count (see the top of this file). */
uint64_t profile_open_weight(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	int64_t t = c->time_ns[i], t0 = b->req->t0, t1 = b->req->t1, out, start, end;
	uint64_t w = c->weight[i];

	if (c->event[i] == FR_EVENT_OFFCPU)
		return (uint64_t)(t - t0) < w ? (uint64_t)(t - t0) : w;
	if (!FR_EVENT_IS_OPEN_WAIT(c->event[i]))
		return w;
	if (t != b->open_asof || w > (uint64_t)t + (1ull << 63)) /* t - w below INT64_MIN */
		return 0;
	out = (int64_t)((uint64_t)t - w);
	if (came_back(b, c->tid[i], out))
		return 0;
	start = out > t0 ? out : t0;
	end = t1 - t > OPEN_REACH_NS ? t + OPEN_REACH_NS : t1;
	return end > start ? (uint64_t)(end - start) : 0;
}
