/* The ring's lost samples, kept per chunk (see recorder/ingest/ring_losses.h).
 */
#include "recorder/ingest/ring_losses.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/store/chunk.h"
#include "core/util/priority.h"
#include "core/util/time.h"

void fr_ring_losses_init(struct fr_ring_losses *l)
{
	memset(l, 0, sizeof(*l));
	fr_mutex_init_pi(&l->lock);
}

void fr_ring_losses_fini(struct fr_ring_losses *l)
{
	free(l->v);
	pthread_mutex_destroy(&l->lock);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return fr_ns_from_timespec(&ts);
}

static int cmp_chunk(uint64_t seq_a, uint32_t covers_a, uint64_t seq_b, uint32_t covers_b)
{
	if (seq_a != seq_b)
		return seq_a < seq_b ? -1 : 1;
	return (covers_a > covers_b) - (covers_a < covers_b);
}

/* The count of chunk `ref` in the table sorted by (seq, covers), or NULL. */
static const struct fr_ring_loss *find(const struct fr_ring_losses *l,
				       const struct fr_ring_ref *ref)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_chunk(l->v[mid].seq, l->v[mid].covers, ref->seq, ref->covers);

		if (c == 0)
			return &l->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int by_chunk(const void *a, const void *b)
{
	const struct fr_ring_loss *x = a, *y = b;

	return cmp_chunk(x->seq, x->covers, y->seq, y->covers);
}

int fr_ring_losses_update(struct fr_ring_losses *l, struct fr_ring *ring, int64_t budget_ns)
{
	struct fr_ring_ref *refs = NULL;
	struct fr_ring_loss *v;
	size_t nrefs = 0, n = 0;
	int64_t until = mono_ns() + budget_ns;
	uint64_t total = 0;
	bool complete = true;

	if (fr_ring_query(ring, INT64_MIN, INT64_MAX, &refs, &nrefs) < 0)
		return -ENOMEM;
	v = malloc((nrefs + 1) * sizeof(*v));
	if (!v) {
		free(refs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrefs; i++) {
		const struct fr_ring_loss *known = find(l, &refs[i]);
		uint64_t lost;

		if (known) {
			lost = known->lost;
		} else if (mono_ns() >= until) {
			complete = false;
			continue;
		} else if (fr_ring_chunk_lost(ring, &refs[i], &lost) < 0) {
			/* Not in the ring any more, or damaged: not what the
			 * ring holds, as dump --info would not count it */
			continue;
		}
		v[n++] = (struct fr_ring_loss){.seq = refs[i].seq,
					       .lost = lost,
					       .covers = refs[i].covers};
		total += lost;
	}
	free(refs);
	qsort(v, n, sizeof(*v), by_chunk);
	free(l->v);
	l->v = v;
	l->n = n;
	pthread_mutex_lock(&l->lock);
	l->total = total;
	l->complete = complete;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

uint64_t fr_ring_losses_total(struct fr_ring_losses *l, bool *complete)
{
	uint64_t total;

	pthread_mutex_lock(&l->lock);
	total = l->total;
	*complete = l->complete;
	pthread_mutex_unlock(&l->lock);
	return total;
}

uint64_t fr_drops_take(uint64_t *seen, const void *percpu, size_t ncpus, size_t stride,
		       size_t offset)
{
	const unsigned char *base = percpu;
	uint64_t sum = 0, delta;

	for (size_t i = 0; i < ncpus; i++) {
		uint64_t v;

		memcpy(&v, base + i * stride + offset, sizeof(v));
		sum += v;
	}
	delta = sum >= *seen ? sum - *seen : 0;
	*seen = sum;
	return delta;
}
