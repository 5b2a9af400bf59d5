/* The persistent ring (format in core/store/ring.h).
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
 *
 * This file opens, closes and reads the ring. The index is in
 * core/store/ring_index.c, appending, merging and expiring in
 * core/store/ring_append.c, the superblock in core/store/ring_sb.c and the scan that
 * opening runs in core/store/ring_recover.c; they share core/store/ring_int.h.
 */
#include "core/store/ring.h"

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

#include "core/store/chunk.h"
#include "core/store/crc32c.h"
#include "core/util/log.h"
#include "core/util/uring.h"
#include "core/store/ring_int.h"

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

int ring_write(struct fr_ring *r, const void *buf, size_t len, uint64_t off)
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

int ring_fdatasync(struct fr_ring *r)
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
	r->sync_interval = FR_NS_PER_S;
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
static int ring_open_file(struct fr_ring *r, uint64_t size, uint64_t segment_size, unsigned flags,
			  struct stat *st, bool *created, char *err, size_t errlen)
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
			   errno == EWOULDBLOCK ? "locked by a running flightrecd?"
						: strerror(errno));
		return ret;
	}
	return 0;
}

/* Reads the superblock of the non-empty file opened. When both copies
 * are damaged and the flags allow creating a ring, moves the file aside
 * and opens an empty one in its place: then st->st_size is 0 and *created
 * true. Returns 0, or -errno with a message in `err`. */
static int ring_load_sb(struct fr_ring *r, uint64_t size, uint64_t segment_size, unsigned flags,
			struct stat *st, bool *created, char *err, size_t errlen)
{
	int ret = ring_sb_load(r, (uint64_t)st->st_size, err, errlen);

	if (ret == -EUCLEAN && !r->rdonly && (flags & FR_RING_CREATE)) {
		/* Nothing of it can be read: keep it for whoever wants to
		 * look, and record rather than refuse. */
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		ret = ring_check_geometry(r->path, size, segment_size, err, errlen);
		if (ret == 0)
			ret = ring_move_aside(r, why, err, errlen);
		if (ret == 0) {
			*created = true;
			st->st_size = 0;
		}
	}
	return ret;
}

int fr_ring_open(struct fr_ring **out, const char *path, uint64_t size, uint64_t segment_size,
		 unsigned flags, char *err, size_t errlen)
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
		ret = ring_load_sb(r, size, segment_size, flags, &st, &created, err, errlen);
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
	/* Opening writes the superblock (creating the ring, repairing it,
	 * adding its copy); an open ring writes it again only when someone
	 * truncated the file under it (ring_restore_size()). */
	if (rdonly) {
		free(r->sb);
		r->sb = NULL;
	}

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
		int ret = ring_merge_group(r);

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
/* Readers                                                              */

int fr_ring_query(struct fr_ring *r, int64_t t0, int64_t t1, struct fr_ring_ref **refs, size_t *n)
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
		const struct fr_ring_ref *ref = ring_idx_at(r, i);

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
				      ref->len >
			      r->segment_size)
		return -EINVAL;
	p = malloc(ref->len);
	if (!p)
		return -ENOMEM;
	n = fr_pread_full(r->fd, p, ref->len, ref->offset);
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
	pos = ring_idx_find(r, ref->seq);
	if (pos < 0 || ring_idx_at(r, (size_t)pos)->offset != ref->offset) {
		ret = -ESTALE;
	} else {
		ring_idx_remove_at(r, (size_t)pos);
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

int fr_ring_chunk_lost(struct fr_ring *r, const struct fr_ring_ref *ref, uint64_t *lost)
{
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	int ret = fr_ring_read(r, ref, &buf);

	if (ret == 0)
		ret = fr_chunk_decode(buf, ref->len, &c);
	*lost = 0;
	for (uint32_t e = 0; ret == 0 && e < c->nevents; e++)
		*lost += c->events[e].lost;
	fr_chunk_free(c);
	free(buf);
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
		const struct fr_ring_ref *ref = i < r->idx_count ? ring_idx_at(r, i)
								 : &r->jidx[i - r->idx_count];

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
