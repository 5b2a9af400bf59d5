/* The persistent ring (format in core/ring.h).
 *
 * In memory the ring is an index of the chunks the file holds, a deque of
 * struct fr_ring_ref in sequence order, guarded by a rwlock: the one
 * appending thread takes it for writing only to change the index, readers
 * (queries, reads, stats) take it for reading. The write cursor, the
 * sequence counter and the io_uring belong to the appending thread.
 *
 * Invariants:
 *   - the index holds no chunk at or after the write cursor in the cursor's
 *     segment, so an append never overwrites an indexed chunk;
 *   - a segment's chunks leave the index before anything is written to it,
 *     so a reader holding a stale ref gets -ESTALE (its sequence number no
 *     longer matches the bytes on disk, or it is no longer indexed), never
 *     someone else's data;
 *   - the file is never written beyond its size, and never written at all
 *     when it is not a ring or when opened read-only.
 *
 * Opening reads the superblock and then the 64-byte header of each chunk;
 * it reads more only to search for the next header after a damaged one
 * and to check the payloads of the most recently written chunks (those a
 * crash can have torn). Older payloads are checked when they are read; a
 * damaged one is then dropped from the index and counted.
 */
#include "core/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/chunk.h"
#include "core/crc32c.h"
#include "core/log.h"
#include "core/merge.h"
#include "core/uring.h"
#include "core/ring_int.h"

/* Reads exactly `len` bytes unless the file ends first. Returns the bytes
 * read or -errno. */
ssize_t ring_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int ring_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

static int ring_write(struct fr_ring *r, const void *buf, size_t len, uint64_t off)
{
	int ret;

	if (!r->uring)
		return ring_pwrite_full(r->fd, buf, len, off);
	pthread_mutex_lock(&r->io_lock);
	ssize_t n = fr_uring_write(r->uring, r->fd, buf, len, (int64_t)off);
	pthread_mutex_unlock(&r->io_lock);
	ret = n < 0 ? (int)n : 0;
	return ret;
}

static int ring_fdatasync(struct fr_ring *r)
{
	int ret;

	if (!r->uring)
		return fdatasync(r->fd) < 0 ? -errno : 0;
	pthread_mutex_lock(&r->io_lock);
	ret = fr_uring_fdatasync(r->uring, r->fd);
	pthread_mutex_unlock(&r->io_lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Index (deque in sequence order)                                      */

static struct fr_ring_ref *idx_at(const struct fr_ring *r, size_t i)
{
	return &r->idx[(r->idx_head + i) % r->idx_cap];
}

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
		n[i] = *idx_at(r, i);
	free(r->idx);
	r->idx = n;
	r->idx_cap = cap;
	r->idx_head = 0;
	return 0;
}

/* Callers hold the write lock and have reserved room. */
void ring_idx_push(struct fr_ring *r, const struct fr_ring_ref *ref)
{
	*idx_at(r, r->idx_count) = *ref;
	r->idx_count++;
	r->seg_chunks[seg_of(r, ref->offset)]++;
	r->bytes_used += ref->len;
	r->samples += ref->nsamples;
	r->raw_bytes += ref->raw_len;
}

static void idx_account_drop(struct fr_ring *r, const struct fr_ring_ref *ref)
{
	r->seg_chunks[seg_of(r, ref->offset)]--;
	r->bytes_used -= ref->len;
	r->samples -= ref->nsamples;
	r->raw_bytes -= ref->raw_len;
}

/* Drops every chunk of segment `seg`. Normally those are the oldest, at
 * the front; after recovery from damage they may be anywhere. Callers
 * hold the write lock. */
static void idx_drop_segment(struct fr_ring *r, uint32_t seg)
{
	size_t keep = 0;

	while (r->idx_count > 0 && r->seg_chunks[seg] > 0 &&
	       seg_of(r, idx_at(r, 0)->offset) == seg) {
		idx_account_drop(r, idx_at(r, 0));
		r->idx_head = (r->idx_head + 1) % r->idx_cap;
		r->idx_count--;
	}
	if (r->seg_chunks[seg] == 0)
		return;
	for (size_t i = 0; i < r->idx_count; i++) {
		struct fr_ring_ref ref = *idx_at(r, i);

		if (seg_of(r, ref.offset) == seg) {
			idx_account_drop(r, &ref);
			continue;
		}
		*idx_at(r, keep++) = ref;
	}
	r->idx_count = keep;
}

/* Position of `seq` in the index, or -1. Callers hold the lock. */
static ssize_t idx_find(const struct fr_ring *r, uint64_t seq)
{
	size_t lo = 0, hi = r->idx_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (idx_at(r, mid)->seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->idx_count && idx_at(r, lo)->seq == seq ? (ssize_t)lo : -1;
}

static void idx_remove_at(struct fr_ring *r, size_t pos)
{
	idx_account_drop(r, idx_at(r, pos));
	for (size_t i = pos; i + 1 < r->idx_count; i++)
		*idx_at(r, i) = *idx_at(r, i + 1);
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
	if (r->jcount == r->jcap) {
		size_t cap = r->jcap ? 2 * r->jcap : 16;
		struct fr_ring_ref *n = realloc(r->jidx, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->jidx = n;
		r->jcap = cap;
	}
	r->jidx[r->jcount++] = *ref;
	r->bytes_used += ref->len;
	r->samples += ref->nsamples;
	r->raw_bytes += ref->raw_len;
	return 0;
}

static void jidx_remove_at(struct fr_ring *r, size_t pos)
{
	const struct fr_ring_ref *ref = &r->jidx[pos];

	r->bytes_used -= ref->len;
	r->samples -= ref->nsamples;
	r->raw_bytes -= ref->raw_len;
	memmove(&r->jidx[pos], &r->jidx[pos + 1], (r->jcount - pos - 1) * sizeof(*r->jidx));
	r->jcount--;
}

static int merge_group(struct fr_ring *r);

/* ------------------------------------------------------------------ */
/* Open / close                                                         */

/* A closed ring of `path`, its locks made. NULL on allocation failure. */
static struct fr_ring *ring_new(const char *path, bool rdonly)
{
	struct fr_ring *r = calloc(1, sizeof(*r));
	pthread_rwlockattr_t attr;

	if (!r)
		return NULL;
	r->fd = -1;
	r->rdonly = rdonly;
	r->sync_interval = NS_PER_SEC;
	r->group_ns = FR_RING_GROUP_NS;
	/* Readers must not starve the appending thread: glibc's default
	 * rwlock lets a steady stream of readers hold it forever. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&r->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&r->io_lock, NULL);
	r->path = strdup(path);
	if (!r->path) {
		fr_ring_close(r);
		return NULL;
	}
	return r;
}

/* Opens the ring's file (creating it with O_EXCL when it is missing and
 * the flags ask), checks it is a regular file and, for writing, takes the
 * one-writer lock. Returns 0 with its fstat in *st and whether it was
 * created in *created, or -errno with a message in `err`. */
static int ring_open_file(struct fr_ring *r, uint64_t size, uint64_t segment_size,
			  unsigned flags, struct stat *st, bool *created, char *err, size_t errlen)
{
	bool rdonly = r->rdonly;
	int ret;

	r->fd = open(r->path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (r->fd < 0 && errno == ENOENT && !rdonly && (flags & FR_RING_CREATE)) {
		ret = ring_check_geometry(r->path, size, segment_size, err, errlen);
		if (ret < 0)
			return ret;
		r->fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		*created = r->fd >= 0;
	}
	if (r->fd < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot open %s: %s", r->path, strerror(errno));
		return ret;
	}
	if (fstat(r->fd, st) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot stat %s: %s", r->path, strerror(errno));
		return ret;
	}
	if (!S_ISREG(st->st_mode)) {
		ret = -EMEDIUMTYPE;
		fr_set_err(err, errlen, "%s is not a regular file; refusing to use it as a ring",
			r->path);
		return ret;
	}
	/* One writer per ring: a second daemon would interleave chunks. */
	if (!rdonly && flock(r->fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		fr_set_err(err, errlen, "%s is in use by another process (%s)", r->path,
			errno == EWOULDBLOCK ? "locked by a running flightrecd?" : strerror(errno));
		return ret;
	}
	return 0;
}

int fr_ring_open(struct fr_ring **out, const char *path, uint64_t size,
		 uint64_t segment_size, unsigned flags, char *err, size_t errlen)
{
	struct fr_ring *r;
	struct stat st;
	bool created = false, rdonly = flags & FR_RING_RDONLY;
	int ret;

	*out = NULL;
	fr_set_err(err, errlen, "%s", "");
	r = ring_new(path, rdonly);
	if (!r) {
		fr_set_err(err, errlen, "cannot open %s: out of memory", path);
		return -ENOMEM;
	}

	ret = ring_open_file(r, size, segment_size, flags, &st, &created, err, errlen);
	if (ret < 0)
		goto err;

	if (st.st_size > 0) {
		ret = ring_sb_load(r, (uint64_t)st.st_size, err, errlen);
		if (ret == -EUCLEAN && !rdonly && (flags & FR_RING_CREATE)) {
			/* Nothing of it can be read: keep it for whoever wants to
			 * look, and record rather than refuse. */
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			ret = ring_check_geometry(path, size, segment_size, err, errlen);
			if (ret == 0)
				ret = ring_move_aside(r, why, err, errlen);
			if (ret == 0) {
				created = true;
				st.st_size = 0;
			}
		}
		if (ret < 0)
			goto err;
	}
	if (st.st_size == 0) {
		if (rdonly || !(flags & FR_RING_CREATE)) {
			ret = -EMEDIUMTYPE;
			fr_set_err(err, errlen, "%s is empty, not a flightrec ring", path);
			goto err;
		}
		ret = ring_check_geometry(path, size, segment_size, err, errlen);
		if (ret < 0)
			goto err;
		ret = ring_create(r, size, segment_size, flags & FR_RING_JOURNAL, err, errlen);
		if (ret < 0) {
			/* Leave no half-made ring behind. */
			if (created)
				unlink(path);
			else if (ftruncate(r->fd, 0) < 0)
				fr_log_warn("cannot truncate %s back to empty: %m", path);
			created = false;
			goto err;
		}
	} else {
		ret = ring_sb_existing(r, (uint64_t)st.st_size, size, segment_size, err, errlen);
		if (ret < 0)
			goto err;
	}
	/* Only opening writes the superblock (creating the ring, repairing
	 * it, adding its copy); an open ring has no use for it. */
	free(r->sb);
	r->sb = NULL;

	r->seg_chunks = calloc(r->nsegments, sizeof(*r->seg_chunks));
	if (!r->seg_chunks) {
		ret = -ENOMEM;
		fr_set_err(err, errlen, "cannot open %s: out of memory", path);
		goto err;
	}
	ret = ring_recover(r);
	if (ret < 0) {
		fr_set_err(err, errlen, "cannot read %s: %s", path, strerror(-ret));
		goto err;
	}
	if (!rdonly) {
		ret = fr_uring_open(&r->uring, 8);
		if (ret < 0) {
			fr_log_warn("io_uring unavailable (%s); writing %s with pwrite",
				    strerror(-ret), path);
			r->uring = NULL;
		}
	}
	r->last_sync_ns = fr_now_mono_ns();
	r->opened = true;
	*out = r;
	return 0;

err:
	if (created)
		unlink(path);
	fr_ring_close(r);
	return ret;
}

void fr_ring_close(struct fr_ring *r)
{
	if (!r)
		return;
	if (r->opened && !r->rdonly && r->jcount) {
		int ret = merge_group(r);

		if (ret < 0)
			fr_log_err("cannot store the journal of %s (kept there): %s", r->path,
				   strerror(-ret));
	}
	if (r->fd >= 0 && !r->rdonly && __atomic_load_n(&r->dirty, __ATOMIC_RELAXED)) {
		int ret = ring_fdatasync(r);

		if (ret < 0)
			fr_log_err("cannot sync %s: %s", r->path, strerror(-ret));
	}
	fr_uring_close(r->uring);
	if (r->fd >= 0)
		close(r->fd);
	pthread_rwlock_destroy(&r->lock);
	pthread_mutex_destroy(&r->io_lock);
	free(r->idx);
	free(r->jidx);
	free(r->seg_chunks);
	free(r->sb);
	free(r->path);
	free(r);
}

void fr_ring_set_sync_interval(struct fr_ring *r, int64_t ns)
{
	__atomic_store_n(&r->sync_interval, ns, __ATOMIC_RELAXED);
}

void fr_ring_set_group(struct fr_ring *r, int64_t ns)
{
	__atomic_store_n(&r->group_ns, ns, __ATOMIC_RELAXED);
}

size_t fr_ring_max_chunk(const struct fr_ring *r)
{
	/* Chunks start 8-byte aligned at a segment start, so a chunk may use
	 * the whole segment (its size is a multiple of 4096). */
	if (r->segment_size > FR_CHUNK_HEADER_LEN + (uint64_t)FR_CHUNK_COMP_MAX)
		return FR_CHUNK_HEADER_LEN + (size_t)FR_CHUNK_COMP_MAX;
	return (size_t)r->segment_size;
}

/* ------------------------------------------------------------------ */
/* Append                                                               */

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
	    (interval > 0 && fr_now_mono_ns() - __atomic_load_n(&r->last_sync_ns, __ATOMIC_RELAXED) >=
				     interval))
		return fr_ring_sync(r);
	return 0;
}

/* Writes a verified chunk at the segments' cursor as number `seq` standing
 * for `covers` more, and in the same change of the index drops the first
 * `parts` chunks of the journal (those it stores). */
static int append_segment(struct fr_ring *r, void *chunk, size_t len, uint64_t seq,
			  uint32_t covers, size_t parts)
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
		idx_drop_segment(r, r->cur_seg);
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
		jidx_remove_at(r, 0);
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

/* Stores the journal's group in the segments: merged where its chunks
 * agree (core/merge.h), as they are where they cannot be merged, oldest
 * first, each dropping its parts from the journal's index as it lands.
 * A part that no longer reads intact is dropped and counted. Then syncs
 * (unless syncing is off), before the journal reuses the group's space.
 * Appending thread only. */
static int merge_group(struct fr_ring *r)
{
	size_t n = r->jcount, done = 0;
	struct fr_chunk **dec = calloc(n ? n : 1, sizeof(*dec));
	void **raw = calloc(n ? n : 1, sizeof(*raw));
	int ret = 0;

	if (!dec || !raw) {
		ret = -ENOMEM;
		goto out;
	}
	/* The group as read back; no reader changes the journal's index
	 * but to drop a damaged chunk, which only this thread looks for. */
	for (size_t i = 0; i < n;) {
		struct fr_ring_ref ref = r->jidx[i];
		ssize_t got;

		raw[i] = malloc(ref.len);
		if (!raw[i]) {
			ret = -ENOMEM;
			goto out;
		}
		got = ring_pread_full(r->fd, raw[i], ref.len, ref.offset);
		if (got < 0) {
			ret = (int)got;
			goto out;
		}
		if ((size_t)got != ref.len || fr_chunk_decode(raw[i], ref.len, &dec[i]) < 0) {
			fr_log_warn("%s: journal chunk %" PRIu64 " at offset %" PRIu64
				    " is damaged; dropped",
				    r->path, ref.seq, ref.offset);
			free(raw[i]);
			raw[i] = NULL;
			pthread_rwlock_wrlock(&r->lock);
			jidx_remove_at(r, i);
			r->corrupt++;
			pthread_rwlock_unlock(&r->lock);
			n--;
			continue;
		}
		i++;
	}
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

	if (!r->journal_size || alen > r->journal_size / 2) {
		/* Straight to a segment, after the group (numbers stay in
		 * order there). */
		if (r->jcount && (ret = merge_group(r)) < 0)
			return ret;
		ret = append_segment(r, chunk, len, r->next_seq, 0, 0);
		return ret < 0 ? ret : maybe_sync(r);
	}
	now = fr_now_mono_ns();
	if (r->jcount &&
	    (r->group_due ||
	     now - r->group_start >= __atomic_load_n(&r->group_ns, __ATOMIC_RELAXED) ||
	     group_raw(r) + h.raw_len > group_raw_max(r) || r->jcount >= GROUP_MAX_PARTS ||
	     journal_place(r, alen) == UINT64_MAX)) {
		ret = merge_group(r);
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
	while (r->idx_count > 0 && idx_at(r, 0)->last_ns < before_ns) {
		struct fr_ring_ref *ref = idx_at(r, 0);
		uint32_t seg = seg_of(r, ref->offset);

		idx_account_drop(r, ref);
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
		jidx_remove_at(r, 0);
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

/* ------------------------------------------------------------------ */
/* Readers                                                              */

int fr_ring_query(struct fr_ring *r, int64_t t0, int64_t t1,
		  struct fr_ring_ref **refs, size_t *n)
{
	struct fr_ring_ref *out;
	size_t k = 0;

	*refs = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&r->lock);
	out = malloc((r->idx_count + r->jcount + 1) * sizeof(*out));
	if (!out) {
		pthread_rwlock_unlock(&r->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->idx_count; i++) {
		const struct fr_ring_ref *ref = idx_at(r, i);

		if (ref->first_ns < t1 && ref->last_ns >= t0)
			out[k++] = *ref;
	}
	for (size_t i = 0; i < r->jcount; i++) {
		const struct fr_ring_ref *ref = &r->jidx[i];

		if (ref->first_ns < t1 && ref->last_ns >= t0)
			out[k++] = *ref;
	}
	pthread_rwlock_unlock(&r->lock);
	*refs = out;
	*n = k;
	return 0;
}

int fr_ring_read(struct fr_ring *r, const struct fr_ring_ref *ref, void **buf)
{
	struct fr_chunk_header h;
	unsigned char *p;
	ssize_t n, pos;
	int ret;

	*buf = NULL;
	if (ref->len < FR_CHUNK_HEADER_LEN || ref->len > fr_ring_max_chunk(r) ||
	    ref->offset < FR_RING_SB_LEN || ref->offset >= r->file_size ||
	    (ref->offset - FR_RING_SB_LEN) % 8 != 0)
		return -EINVAL;
	if (in_journal(r, ref->offset)
		    ? ref->offset - FR_RING_SB_LEN + ref->len > r->journal_size
		    : (ref->offset - FR_RING_SB_LEN - r->journal_size) % r->segment_size +
				      ref->len > r->segment_size)
		return -EINVAL;
	p = malloc(ref->len);
	if (!p)
		return -ENOMEM;
	n = ring_pread_full(r->fd, p, ref->len, ref->offset);
	if (n < 0) {
		ret = (int)n;
		goto err;
	}
	/* Overwritten since the query: another chunk (or part of one) is
	 * there now. */
	if ((size_t)n == ref->len && fr_chunk_header_parse(p, ref->len, &h) == 0 &&
	    h.seq != ref->seq) {
		ret = -ESTALE;
		goto err;
	}
	if ((size_t)n == ref->len && fr_chunk_verify(p, ref->len) == 0) {
		*buf = p;
		return 0;
	}
	/* A journal chunk is dropped by the appending thread, which reads
	 * the journal's chunks again when it merges them. */
	if (in_journal(r, ref->offset)) {
		bool current = false;

		pthread_rwlock_rdlock(&r->lock);
		for (size_t i = 0; i < r->jcount && !current; i++)
			current = r->jidx[i].seq == ref->seq && r->jidx[i].offset == ref->offset;
		pthread_rwlock_unlock(&r->lock);
		/* Merged since, and being overwritten by the journal's next
		 * round: stale, not damaged. */
		ret = current ? -EBADMSG : -ESTALE;
		goto err;
	}
	/* Damaged, or torn by an overwrite in progress: the index tells. */
	pthread_rwlock_wrlock(&r->lock);
	pos = idx_find(r, ref->seq);
	if (pos < 0 || idx_at(r, (size_t)pos)->offset != ref->offset) {
		ret = -ESTALE;
	} else {
		idx_remove_at(r, (size_t)pos);
		r->corrupt++;
		ret = -EBADMSG;
	}
	pthread_rwlock_unlock(&r->lock);
	if (ret == -EBADMSG)
		fr_log_warn("%s: chunk %" PRIu64 " at offset %" PRIu64 " is damaged; dropped",
			    r->path, ref->seq, ref->offset);
err:
	free(p);
	return ret;
}

void fr_ring_get_stats(struct fr_ring *r, struct fr_ring_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_rwlock_rdlock(&r->lock);
	st->file_size = r->file_size;
	st->segment_size = r->segment_size;
	st->nsegments = r->nsegments;
	for (uint32_t i = 0; i < r->nsegments; i++)
		if (r->seg_chunks[i])
			st->segments_used++;
	st->bytes_used = r->bytes_used;
	st->chunks = r->idx_count + r->jcount;
	st->samples = r->samples;
	st->raw_bytes = r->raw_bytes;
	for (size_t i = 0; i < r->idx_count + r->jcount; i++) {
		const struct fr_ring_ref *ref =
			i < r->idx_count ? idx_at(r, i) : &r->jidx[i - r->idx_count];

		if (i == 0 || ref->first_ns < st->oldest_ns)
			st->oldest_ns = ref->first_ns;
		if (i == 0 || ref->last_ns > st->newest_ns)
			st->newest_ns = ref->last_ns;
		if (i >= r->idx_count) {
			st->journal_bytes += ref->len;
			st->journal_samples += ref->nsamples;
		}
	}
	st->corrupt_chunks = r->corrupt;
	st->next_seq = r->next_seq;
	st->format_version = r->version;
	st->journal_size = r->journal_size;
	st->journal_chunks = r->jcount;
	st->superblock = r->sb_state;
	st->superblock_copy = r->sb_copy;
	pthread_rwlock_unlock(&r->lock);
}

const char *fr_ring_path(const struct fr_ring *r)
{
	return r->path;
}
