/* Writing the ring (see core/store/ring.c for its invariants): appending a
 * chunk to the journal or the segments, merging the journal's group into
 * one chunk of the segments, syncing, and expiring old chunks. All of it
 * runs on the one appending thread, which takes the ring's lock for
 * writing only to change the index.
 */
#include "core/store/ring.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/util/log.h"
#include "core/store/merge.h"
#include "core/store/ring_int.h"

int fr_ring_sync(struct fr_ring *r)
{
	int ret;

	if (r->rdonly)
		return 0;
	/* Cleared before the sync: a write racing it sets it again. */
	__atomic_store_n(&r->dirty, 0, __ATOMIC_RELAXED);
	ret = ring_fdatasync(r);
	if (ret < 0)
		__atomic_store_n(&r->dirty, 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&r->last_sync_ns, fr_now_mono_ns(), __ATOMIC_RELAXED);
	return ret;
}

/* Syncs when the sync interval has passed (or at every write with 0). */
static int maybe_sync(struct fr_ring *r)
{
	int64_t interval = __atomic_load_n(&r->sync_interval, __ATOMIC_RELAXED);

	if (interval == 0 ||
	    (interval > 0 &&
	     fr_now_mono_ns() - __atomic_load_n(&r->last_sync_ns, __ATOMIC_RELAXED) >= interval))
		return fr_ring_sync(r);
	return 0;
}

/* Writes a verified chunk at the segments' cursor as number `seq` standing
 * for `covers` more, and in the same change of the index drops the first
 * `parts` chunks of the journal (those it stores). */
static int append_segment(struct fr_ring *r, void *chunk, size_t len, uint64_t seq, uint32_t covers,
			  size_t parts)
{
	struct fr_chunk_header h;
	struct fr_ring_ref ref;
	uint64_t aligned = align8(len), off;
	int ret;

	fr_chunk_set_seq(chunk, seq, covers);
	fr_chunk_header_parse(chunk, len, &h);
	pthread_rwlock_wrlock(&r->lock);
	ret = ring_idx_reserve(r, r->idx_count + 1);
	if (ret < 0) {
		pthread_rwlock_unlock(&r->lock);
		return ret;
	}
	if (r->cur_off + aligned > r->segment_size) {
		r->cur_seg = (r->cur_seg + 1) % r->nsegments;
		r->cur_off = 0;
		/* Before a byte of the segment is overwritten. */
		ring_idx_drop_segment(r, r->cur_seg);
	}
	pthread_rwlock_unlock(&r->lock);

	off = seg_base(r, r->cur_seg) + r->cur_off;
	ret = ring_write(r, chunk, len, off);
	if (ret < 0)
		return ret;
	__atomic_store_n(&r->dirty, 1, __ATOMIC_RELAXED);

	ref = ring_ref_of(&h, off);
	pthread_rwlock_wrlock(&r->lock);
	ring_idx_push(r, &ref);
	for (size_t i = 0; i < parts; i++)
		ring_jidx_remove_at(r, 0);
	if (seq >= r->next_seq)
		r->next_seq = seq + 1;
	pthread_rwlock_unlock(&r->lock);
	r->cur_off += aligned;
	return 0;
}

/* Raw bytes of journal chunks merged into one chunk at most: what a
 * second's chunk gets (half a segment), up to 2 MiB, which bounds the
 * memory a merge takes. The merged block may take twice that (its
 * estimate counts tables the parts shared). */
static uint64_t group_raw(const struct fr_ring *r)
{
	uint64_t raw = 0;

	for (size_t i = 0; i < r->jcount; i++)
		raw += r->jidx[i].raw_len;
	return raw;
}

static size_t group_raw_max(const struct fr_ring *r)
{
	size_t max = fr_ring_max_chunk(r) / 2;

	return max < (2u << 20) ? max : (2u << 20);
}

/* Reads the journal's *n chunks back into raw[] and decodes them into
 * dec[]; a damaged one is dropped from the journal's index (and *n) and
 * counted. Returns 0 or -errno; what was read stays for the caller to
 * free. */
static int read_group(struct fr_ring *r, struct fr_chunk **dec, void **raw, size_t *n)
{
	/* The group as read back; no reader changes the journal's index
	 * but to drop a damaged chunk, which only this thread looks for. */
	for (size_t i = 0; i < *n;) {
		struct fr_ring_ref ref = r->jidx[i];
		ssize_t got;

		raw[i] = malloc(ref.len);
		if (!raw[i])
			return -ENOMEM;
		got = fr_pread_full(r->fd, raw[i], ref.len, ref.offset);
		if (got < 0)
			return (int)got;
		if ((size_t)got != ref.len || fr_chunk_decode(raw[i], ref.len, &dec[i]) < 0) {
			fr_log_warn("%s: journal chunk %" PRIu64 " at offset %" PRIu64
				    " is damaged; dropped",
				    r->path, ref.seq, ref.offset);
			free(raw[i]);
			raw[i] = NULL;
			pthread_rwlock_wrlock(&r->lock);
			ring_jidx_remove_at(r, i);
			r->corrupt++;
			pthread_rwlock_unlock(&r->lock);
			(*n)--;
			continue;
		}
		i++;
	}
	return 0;
}

/* Stores the journal's group in the segments: merged where its chunks
 * agree (core/store/merge.h), as they are where they cannot be merged, oldest
 * first, each dropping its parts from the journal's index as it lands.
 * A part that no longer reads intact is dropped and counted. Then syncs
 * (unless syncing is off), before the journal reuses the group's space.
 * Appending thread only. */
int ring_merge_group(struct fr_ring *r)
{
	size_t n = r->jcount, done = 0;
	struct fr_chunk **dec = calloc(n ? n : 1, sizeof(*dec));
	void **raw = calloc(n ? n : 1, sizeof(*raw));
	int ret = 0;

	if (!dec || !raw) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_group(r, dec, raw, &n);
	if (ret < 0)
		goto out;
	while (done < n) {
		const struct fr_ring_ref *first = &r->jidx[0];
		void *out = NULL;
		size_t len = 0, k;
		int span = fr_chunk_merge_span(&dec[done], n - done, group_raw_max(r));

		if (span < 0) {
			ret = span;
			goto out;
		}
		k = (size_t)span;
		/* A single part is encoded again too: the journal's chunks may
		 * be compressed lightly (fr_chunk_builder_set_level). */
		ret = fr_chunk_merge(&dec[done], k, 2 * group_raw_max(r), &out, &len);
		if (ret == -ENOMEM)
			goto out;
		if (ret < 0 || len > fr_ring_max_chunk(r)) {
			free(out);
			out = NULL;
			k = 1;
		}
		if (!out) {
			/* As it is, under its own number. */
			ret = append_segment(r, raw[done], first->len, first->seq, 0, 1);
		} else {
			uint64_t seq = r->jidx[k - 1].seq;

			ret = append_segment(r, out, len, seq, (uint32_t)(seq - first->seq), k);
			free(out);
		}
		if (ret < 0)
			goto out;
		done += k;
	}
	r->group_due = false;
	if (__atomic_load_n(&r->sync_interval, __ATOMIC_RELAXED) >= 0)
		ret = fr_ring_sync(r);
out:
	for (size_t i = 0; dec && i < n; i++)
		fr_chunk_free(dec[i]);
	for (size_t i = 0; raw && i < n; i++)
		free(raw[i]);
	free(dec);
	free(raw);
	return ret;
}

/* Where in the journal a chunk of `alen` aligned bytes goes: at the cursor,
 * or at the start when it does not fit before the end; UINT64_MAX when
 * that would overwrite a chunk of the group. */
static uint64_t journal_place(const struct fr_ring *r, uint64_t alen)
{
	uint64_t at = r->jcur + alen <= r->journal_size ? r->jcur : 0, first;

	if (alen > r->journal_size)
		return UINT64_MAX;
	if (r->jcount == 0)
		return at;
	first = r->jidx[0].offset - FR_RING_SB_LEN;
	if (r->jcur > first) /* the group runs from first to the cursor */
		return at == r->jcur || alen <= first ? at : UINT64_MAX;
	/* The group wrapped: free room is from the cursor to its first. */
	return at == r->jcur && r->jcur + alen <= first ? at : UINT64_MAX;
}

int fr_ring_append(struct fr_ring *r, void *chunk, size_t len)
{
	struct fr_chunk_header h;
	struct fr_ring_ref ref;
	uint64_t alen = align8(len), at;
	int64_t now;
	int ret;

	if (r->rdonly)
		return -EROFS;
	if (len > fr_ring_max_chunk(r))
		return -EFBIG;
	if (fr_chunk_verify(chunk, len) < 0)
		return -EBADMSG;
	fr_chunk_header_parse(chunk, len, &h);
	ret = ring_restore_size(r);
	if (ret < 0)
		return ret;

	if (!r->journal_size || alen > r->journal_size / 2) {
		/* Straight to a segment, after the group (numbers stay in
		 * order there). */
		if (r->jcount && (ret = ring_merge_group(r)) < 0)
			return ret;
		ret = append_segment(r, chunk, len, r->next_seq, 0, 0);
		return ret < 0 ? ret : maybe_sync(r);
	}
	now = fr_now_mono_ns();
	if (r->jcount && (r->group_due ||
			  now - r->group_start >= __atomic_load_n(&r->group_ns, __ATOMIC_RELAXED) ||
			  group_raw(r) + h.raw_len > group_raw_max(r) ||
			  r->jcount >= GROUP_MAX_PARTS || journal_place(r, alen) == UINT64_MAX)) {
		ret = ring_merge_group(r);
		if (ret < 0)
			return ret;
	}
	/* Room: the group was stored above when there was none. */
	at = journal_place(r, alen);

	fr_chunk_set_seq(chunk, r->next_seq, 0);
	fr_chunk_header_parse(chunk, len, &h);
	ret = ring_write(r, chunk, len, FR_RING_SB_LEN + at);
	if (ret < 0)
		return ret;
	__atomic_store_n(&r->dirty, 1, __ATOMIC_RELAXED);
	ref = ring_ref_of(&h, FR_RING_SB_LEN + at);
	pthread_rwlock_wrlock(&r->lock);
	ret = ring_jidx_push(r, &ref);
	if (ret == 0)
		r->next_seq++;
	pthread_rwlock_unlock(&r->lock);
	if (ret < 0)
		return ret;
	if (r->jcount == 1)
		r->group_start = now;
	r->jcur = at + alen;
	return maybe_sync(r);
}

/* Zeroes the journal's merged chunks whose newest sample is older than
 * `before_ns`: their segment copies are being erased. */
static int journal_erase(struct fr_ring *r, int64_t before_ns)
{
	uint64_t floor = r->jcount ? r->jidx[0].seq : r->next_seq;
	struct fr_chunk_header h;
	unsigned char *buf;
	int ret = ring_journal_load(r, &buf);

	if (ret < 0)
		return ret;
	for (uint64_t off = ring_journal_next(r, buf, 0, &h); off != UINT64_MAX;
	     off = ring_journal_next(r, buf, ring_journal_after(off, &h), &h)) {
		uint64_t len = FR_CHUNK_HEADER_LEN + (uint64_t)h.comp_len;

		if (h.seq >= floor || h.last_ns >= before_ns)
			continue;
		memset(buf + off, 0, len);
		ret = ring_write(r, buf + off, len, FR_RING_SB_LEN + off);
		if (ret < 0)
			break;
	}
	free(buf);
	return ret;
}

int fr_ring_expire(struct fr_ring *r, int64_t before_ns)
{
	uint32_t *erase = NULL, nerase = 0;
	void *zeros = NULL;
	int dropped = 0, ret = 0;

	if (r->rdonly)
		return -EROFS;
	pthread_rwlock_wrlock(&r->lock);
	/* The index is in sequence order, which is time order but for clock
	 * steps: stop at the first chunk still young enough. */
	while (r->idx_count > 0 && ring_idx_at(r, 0)->last_ns < before_ns) {
		struct fr_ring_ref *ref = ring_idx_at(r, 0);
		uint32_t seg = seg_of(r, ref->offset);

		ring_idx_account_drop(r, ref);
		r->idx_head = (r->idx_head + 1) % r->idx_cap;
		r->idx_count--;
		dropped++;
		if (r->seg_chunks[seg] == 0 && seg != r->cur_seg) {
			uint32_t *e = realloc(erase, (nerase + 1) * sizeof(*e));
			if (!e)
				continue; /* forgotten now, erased when overwritten */
			erase = e;
			erase[nerase++] = seg;
		}
	}
	while (r->jcount > 0 && r->jidx[0].last_ns < before_ns) {
		ring_jidx_remove_at(r, 0);
		dropped++;
	}
	pthread_rwlock_unlock(&r->lock);
	if (nerase && r->journal_size)
		ret = journal_erase(r, before_ns);

	if (nerase)
		zeros = calloc(1, r->segment_size);
	for (uint32_t i = 0; zeros && i < nerase && ret == 0; i++)
		ret = ring_write(r, zeros, r->segment_size, seg_base(r, erase[i]));
	if (nerase && ret == 0 && zeros)
		__atomic_store_n(&r->dirty, 1, __ATOMIC_RELAXED);
	free(zeros);
	free(erase);
	return ret < 0 ? ret : dropped;
}
