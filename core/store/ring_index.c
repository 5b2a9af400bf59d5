/* The ring's index in memory (see core/store/ring.c for its invariants): the
 * chunks of the segments, a deque in sequence order, and the journal's
 * current group, with the totals the ring's statistics report. Callers
 * hold the ring's lock: for reading to look, for writing to change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/store/ring_int.h"
#include "core/util/grow.h"

int ring_idx_reserve(struct fr_ring *r, size_t want)
{
	struct fr_ring_ref *n;
	size_t cap = r->idx_cap ? r->idx_cap : 64;

	if (want <= r->idx_cap)
		return 0;
	while (cap < want)
		cap *= 2;
	n = malloc(cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < r->idx_count; i++)
		n[i] = *ring_idx_at(r, i);
	free(r->idx);
	r->idx = n;
	r->idx_cap = cap;
	r->idx_head = 0;
	return 0;
}

/* Callers hold the write lock and have reserved room. */
void ring_idx_push(struct fr_ring *r, const struct fr_ring_ref *ref)
{
	*ring_idx_at(r, r->idx_count) = *ref;
	r->idx_count++;
	r->seg_chunks[seg_of(r, ref->offset)]++;
	r->bytes_used += ref->len;
	r->samples += ref->nsamples;
	r->raw_bytes += ref->raw_len;
}

void ring_idx_account_drop(struct fr_ring *r, const struct fr_ring_ref *ref)
{
	r->seg_chunks[seg_of(r, ref->offset)]--;
	r->bytes_used -= ref->len;
	r->samples -= ref->nsamples;
	r->raw_bytes -= ref->raw_len;
}

/* Drops every chunk of segment `seg`. Normally those are the oldest, at
 * the front; after recovery from damage they may be anywhere. Callers
 * hold the write lock. */
void ring_idx_drop_segment(struct fr_ring *r, uint32_t seg)
{
	size_t keep = 0;

	while (r->idx_count > 0 && r->seg_chunks[seg] > 0 &&
	       seg_of(r, ring_idx_at(r, 0)->offset) == seg) {
		ring_idx_account_drop(r, ring_idx_at(r, 0));
		r->idx_head = (r->idx_head + 1) % r->idx_cap;
		r->idx_count--;
	}
	if (r->seg_chunks[seg] == 0)
		return;
	for (size_t i = 0; i < r->idx_count; i++) {
		struct fr_ring_ref ref = *ring_idx_at(r, i);

		if (seg_of(r, ref.offset) == seg) {
			ring_idx_account_drop(r, &ref);
			continue;
		}
		*ring_idx_at(r, keep++) = ref;
	}
	r->idx_count = keep;
}

/* Position of `seq` in the index, or -1. Callers hold the lock. */
ssize_t ring_idx_find(const struct fr_ring *r, uint64_t seq)
{
	size_t lo = 0, hi = r->idx_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ring_idx_at(r, mid)->seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->idx_count && ring_idx_at(r, lo)->seq == seq ? (ssize_t)lo : -1;
}

void ring_idx_remove_at(struct fr_ring *r, size_t pos)
{
	ring_idx_account_drop(r, ring_idx_at(r, pos));
	for (size_t i = pos; i + 1 < r->idx_count; i++)
		*ring_idx_at(r, i) = *ring_idx_at(r, i + 1);
	r->idx_count--;
}

/* The index entry of a chunk with header `h` at file offset `offset`. */
struct fr_ring_ref ring_ref_of(const struct fr_chunk_header *h, uint64_t offset)
{
	return (struct fr_ring_ref){
		.seq = h->seq,
		.offset = offset,
		.len = FR_CHUNK_HEADER_LEN + h->comp_len,
		.nsamples = h->nsamples,
		.first_ns = h->first_ns,
		.last_ns = h->last_ns,
		.raw_len = h->raw_len,
		.covers = h->covers,
	};
}

/* The journal's current chunks. Callers hold the write lock. */
int ring_jidx_push(struct fr_ring *r, const struct fr_ring_ref *ref)
{
	if (FR_GROW(r->jidx, &r->jcap, r->jcount + 1, 16) < 0)
		return -ENOMEM;
	r->jidx[r->jcount++] = *ref;
	r->bytes_used += ref->len;
	r->samples += ref->nsamples;
	r->raw_bytes += ref->raw_len;
	return 0;
}

void ring_jidx_remove_at(struct fr_ring *r, size_t pos)
{
	const struct fr_ring_ref *ref = &r->jidx[pos];

	r->bytes_used -= ref->len;
	r->samples -= ref->nsamples;
	r->raw_bytes -= ref->raw_len;
	memmove(&r->jidx[pos], &r->jidx[pos + 1], (r->jcount - pos - 1) * sizeof(*r->jidx));
	r->jcount--;
}

/* Drops every chunk, of the segments and of the journal, that does not lie
 * wholly before byte `cut` of the file: what a truncation took. Returns how
 * many. Callers hold the write lock. */
size_t ring_idx_drop_beyond(struct fr_ring *r, uint64_t cut)
{
	size_t keep = 0, dropped = 0;

	for (size_t i = 0; i < r->idx_count; i++) {
		struct fr_ring_ref ref = *ring_idx_at(r, i);

		if (ref.offset + ref.len > cut) {
			ring_idx_account_drop(r, &ref);
			dropped++;
			continue;
		}
		*ring_idx_at(r, keep++) = ref;
	}
	r->idx_count = keep;
	for (size_t i = r->jcount; i-- > 0;)
		if (r->jidx[i].offset + r->jidx[i].len > cut) {
			ring_jidx_remove_at(r, i);
			dropped++;
		}
	return dropped;
}
