/* Decimation of a stream of samples to a lower rate (core/query/decimate.h):
 * the per-(cpu, event) strata of the grid method and the per-sample hash
 * of the older one.
 */
#include "core/query/decimate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/hash.h"

/* One stream: its key (cpu << 32 | event, plus one so that 0 is empty),
 * the running sum of target/rate over its samples, in 2^-32 units, and
 * the seed of its points, from its first sample: another window draws
 * other points, so no fixed choice of positions is shared by every
 * profile of a (cpu, event). */
struct fr_decimate_stream {
	uint64_t key;
	uint64_t acc;
	uint64_t seed;
};

void fr_decimator_init(struct fr_decimator *d, enum fr_decimate_method method)
{
	memset(d, 0, sizeof(*d));
	d->method = method;
}

void fr_decimator_fini(struct fr_decimator *d)
{
	free(d->slots);
	memset(d, 0, sizeof(*d));
}

static int grow(struct fr_decimator *d)
{
	uint32_t cap = d->cap ? d->cap * 2 : 64;
	struct fr_decimate_stream *s;

	if (cap <= d->cap)
		return -ENOMEM;
	s = calloc(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint32_t j = 0; j < d->cap; j++) {
		uint32_t i;

		if (!d->slots[j].key)
			continue;
		for (i = (uint32_t)fr_mix64(d->slots[j].key) & (cap - 1); s[i].key;
		     i = (i + 1) & (cap - 1))
			;
		s[i] = d->slots[j];
	}
	free(d->slots);
	d->slots = s;
	d->cap = cap;
	return 0;
}

/* The stream of `key`, added when new (seeded with `seed`); NULL when out
 * of memory. */
static struct fr_decimate_stream *stream(struct fr_decimator *d, uint64_t key, uint64_t seed)
{
	uint32_t i;

	if ((uint64_t)(d->n + 1) * 2 > d->cap && grow(d) < 0)
		return NULL;
	for (i = (uint32_t)fr_mix64(key) & (d->cap - 1); d->slots[i].key;
	     i = (i + 1) & (d->cap - 1))
		if (d->slots[i].key == key)
			return &d->slots[i];
	d->slots[i].key = key;
	d->slots[i].seed = fr_mix64(seed ^ key);
	d->n++;
	return &d->slots[i];
}

/* The grid: the sample covers [acc, acc + step) of its stream, step =
 * target/rate in 2^-32 units (< 2^32, so at most two strata); stratum j's
 * point is j + u_j with u_j drawn from a hash of the stream and j. */
static int grid(struct fr_decimator *d, uint32_t cpu, uint32_t event, int64_t time_ns, uint32_t tid,
		uint32_t rate, uint32_t target)
{
	uint64_t key = ((uint64_t)cpu << 32 | event) + 1;
	struct fr_decimate_stream *s = stream(d, key, (uint64_t)time_ns ^ fr_mix64(tid));
	uint64_t step = ((uint64_t)target << 32) / rate, lo, hi;
	int n = 0;

	if (!s)
		return -ENOMEM;
	lo = s->acc;
	hi = lo + step;
	for (uint64_t j = lo >> 32; j <= (hi - 1) >> 32; j++) {
		uint64_t point = j << 32 |
				 (fr_mix64(s->seed ^ fr_mix64(j + 0x9e3779b97f4a7c15ull)) >> 32);

		n += point >= lo && point < hi;
	}
	s->acc = hi;
	return n;
}

/* The hash: kept with probability target/rate. The event is in the hash
 * (fr_mix64(0) is 0: cpu samples hash as they always did), so samples of two
 * events taken together are not kept together. */
static int hash_keep(uint32_t cpu, uint32_t event, int64_t time_ns, uint32_t tid, uint32_t rate,
		     uint32_t target)
{
	uint64_t h = fr_mix64((uint64_t)time_ns ^ fr_mix64(((uint64_t)tid << 20) ^ cpu) ^
			      fr_mix64(event));

	/* h / 2^64 < target / rate, without overflow: compare top 32 bits. */
	return (h >> 32) * (uint64_t)rate < (uint64_t)target << 32;
}

int fr_decimate(struct fr_decimator *d, uint32_t cpu, uint32_t event, int64_t time_ns, uint32_t tid,
		uint32_t rate, uint32_t target)
{
	if (!target || !rate || rate <= target)
		return 1;
	if (d->method == FR_DECIMATE_HASH)
		return hash_keep(cpu, event, time_ns, tid, rate, target);
	return grid(d, cpu, event, time_ns, tid, rate, target);
}
