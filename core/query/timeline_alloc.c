/* What a sample adds to a timeline's cell (core/query/timeline.c): its
 * weight, but for an allocation sample, whose weight is the block's size:
 * the bytes it stands for, estimated as the profiles do
 * (core/query/alloc_weight.h), so a step's value is the bytes allocated
 * in it.
 */
#include <math.h>

#include "core/store/chunk.h"
#include "core/query/alloc_weight.h"
#include "core/query/timeline_int.h"

uint64_t tl_weight(const struct fr_chunk *c, uint32_t i)
{
	double objects, bytes;

	if (c->event[i] != FR_EVENT_ALLOC)
		return c->weight[i];
	fr_alloc_scale(c->weight[i], c->rate_hz[i], &objects, &bytes);
	return (uint64_t)fr_alloc_round(bytes);
}
