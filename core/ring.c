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

#define NS_PER_SEC 1000000000LL

/* Payloads of the newest chunks up to this many bytes are checked when the
 * ring is opened: more than a sync interval's worth of writes. */
#define VERIFY_TAIL_BYTES (16u << 20)

/* Journal chunks merged at most at once. */
#define GROUP_MAX_PARTS 64
#define JOURNAL_MAX (16ull << 20)

struct fr_ring {
	char *path;
	int fd;
	bool rdonly;
	struct fr_uring *uring; /* NULL: plain pwrite/fdatasync */
	pthread_mutex_t io_lock; /* serializes use of the uring */

	uint64_t file_size;
	uint64_t segment_size;
	uint32_t nsegments;
	uint32_t chunk_version;
	uint32_t version;      /* of the file: 1 or 2 */
	uint64_t journal_size; /* 0: none */
	unsigned char *sb;     /* the superblock in force, FR_RING_SB_LEN bytes */
	bool sb_copy;          /* the file holds an intact copy of it */
	enum fr_ring_sb sb_state;

	/* Appending thread only. */
	uint32_t cur_seg;
	uint64_t cur_off; /* within cur_seg */
	uint64_t next_seq;
	int64_t sync_interval;  /* atomic: set from any thread */
	int64_t last_sync_ns;   /* atomic: fr_ring_sync() may run elsewhere */
	int dirty;              /* atomic */
	uint64_t jcur;          /* journal write offset, from the journal start */
	int64_t group_ns;       /* atomic */
	int64_t group_start;    /* monotonic time of the group's first chunk */
	bool group_due;         /* a group found on opening: store it first */
	bool opened;            /* fr_ring_open() succeeded */

	/* Guarded by lock. */
	pthread_rwlock_t lock;
	struct fr_ring_ref *idx;
	size_t idx_cap, idx_head, idx_count;
	uint32_t *seg_chunks;
	uint64_t bytes_used, samples, raw_bytes;
	uint64_t corrupt;
	/* The journal's current chunks (the group), in sequence order. */
	struct fr_ring_ref *jidx;
	size_t jcount, jcap;
};


static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

static uint64_t seg_base(const struct fr_ring *r, uint32_t seg)
{
	return FR_RING_SB_LEN + r->journal_size + (uint64_t)seg * r->segment_size;
}

static uint32_t seg_of(const struct fr_ring *r, uint64_t offset)
{
	return (uint32_t)((offset - FR_RING_SB_LEN - r->journal_size) / r->segment_size);
}

static bool in_journal(const struct fr_ring *r, uint64_t offset)
{
	return offset >= FR_RING_SB_LEN && offset < FR_RING_SB_LEN + r->journal_size;
}

/* Reads exactly `len` bytes unless the file ends first. Returns the bytes
 * read or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
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

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
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
		return pwrite_full(r->fd, buf, len, off);
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

static int idx_reserve(struct fr_ring *r, size_t want)
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
static void idx_push(struct fr_ring *r, const struct fr_ring_ref *ref)
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
static struct fr_ring_ref ref_of(const struct fr_chunk_header *h, uint64_t offset)
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
static int jidx_push(struct fr_ring *r, const struct fr_ring_ref *ref)
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

/* ------------------------------------------------------------------ */
/* Superblock                                                           */

static void sb_encode(unsigned char *sb, const struct fr_ring *r, int64_t created_ns,
		      const unsigned char id[16])
{
	memset(sb, 0, FR_RING_SB_LEN);
	memcpy(sb, FR_RING_MAGIC, 16);
	put_le32(sb + 16, FR_RING_VERSION);
	put_le32(sb + 20, FR_RING_SB_LEN);
	put_le64(sb + 24, r->file_size);
	put_le64(sb + 32, r->segment_size);
	put_le32(sb + 40, r->nsegments);
	put_le32(sb + 44, FR_CHUNK_VERSION);
	put_le64(sb + 48, (uint64_t)created_ns);
	memcpy(sb + 56, id, 16);
	put_le64(sb + 72, r->journal_size);
	put_le32(sb + 80, fr_crc32c(0, sb, 80));
}

static int check_geometry(const char *path, uint64_t size, uint64_t segment_size,
			  char *err, size_t errlen)
{
	if (segment_size < FR_RING_MIN_SEGMENT || segment_size % 4096 != 0 ||
	    segment_size > (1ull << 31)) {
		fr_set_err(err, errlen,
			"invalid segment size %" PRIu64 " for %s: must be a multiple of 4096 "
			"between %d and %llu bytes",
			segment_size, path, FR_RING_MIN_SEGMENT, 1ull << 32);
		return -EINVAL;
	}
	/* The superblock and its copy come out of the size. */
	if (size < 2 * FR_RING_SB_LEN || (size - 2 * FR_RING_SB_LEN) / segment_size < 2 ||
	    (size - 2 * FR_RING_SB_LEN) / segment_size > UINT32_MAX) {
		fr_set_err(err, errlen,
			"invalid ring size %" PRIu64 " for %s: must hold two 4096-byte superblocks "
			"(one a copy) and at least 2 segments of %" PRIu64 " bytes",
			size, path, segment_size);
		return -EINVAL;
	}
	return 0;
}

/* The journal a ring of `size` bytes gets (core/ring.h) when `reserved`
 * of them go to superblocks: 2 * FR_RING_SB_LEN (the superblock and its
 * copy), or FR_RING_SB_LEN for a ring made before copies existed. */
static uint64_t journal_for(uint64_t size, uint64_t segment_size, uint64_t reserved)
{
	uint64_t j = (size / 64) & ~(uint64_t)4095;

	if (j > JOURNAL_MAX)
		j = JOURNAL_MAX;
	if (j < 2 * segment_size)
		j = 2 * segment_size;
	if (j > JOURNAL_MAX || size < reserved)
		return 0;
	if ((size - reserved) / segment_size < 4 || size - reserved < j ||
	    (size - reserved - j) / segment_size < 4)
		return 0;
	return j;
}

/* The file_size (the superblock's field: the bytes before any copy) of a
 * ring made for `size` bytes with `reserved` bytes of superblocks (above),
 * or 0 when `size` cannot hold one. */
static uint64_t layout_for(uint64_t size, uint64_t segment_size, bool journal,
			   uint64_t reserved)
{
	uint64_t j;

	if (size <= reserved || !segment_size)
		return 0;
	j = journal ? journal_for(size, segment_size, reserved) : 0;
	if (size - reserved < j)
		return 0;
	return FR_RING_SB_LEN + j + (size - reserved - j) / segment_size * segment_size;
}

static int ring_create(struct fr_ring *r, uint64_t size, uint64_t segment_size, bool journal,
		       char *err, size_t errlen)
{
	unsigned char id[16];
	int ret;

	r->version = FR_RING_VERSION;
	r->segment_size = segment_size;
	r->journal_size = journal ? journal_for(size, segment_size, 2 * FR_RING_SB_LEN) : 0;
	r->nsegments = (uint32_t)((size - 2 * FR_RING_SB_LEN - r->journal_size) / segment_size);
	r->file_size = FR_RING_SB_LEN + r->journal_size + (uint64_t)r->nsegments * segment_size;

	/* The copy of the superblock follows the segments. */
	ret = posix_fallocate(r->fd, 0, (off_t)(r->file_size + FR_RING_SB_LEN));
	if (ret != 0) {
		fr_set_err(err, errlen, "cannot allocate %" PRIu64 " bytes for %s: %s",
			r->file_size + FR_RING_SB_LEN, r->path, strerror(ret));
		return -ret;
	}
	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
		uint64_t a = (uint64_t)fr_now_real_ns(), b = (uint64_t)getpid();

		a *= 0x9e3779b97f4a7c15ull;
		memcpy(id, &a, 8);
		memcpy(id + 8, &b, 8);
	}
	r->sb = calloc(1, FR_RING_SB_LEN);
	if (!r->sb)
		return -ENOMEM;
	sb_encode(r->sb, r, fr_now_real_ns(), id);
	/* A crash between the two writes leaves one of them, from which the
	 * next writable open restores the other. */
	ret = pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, r->file_size);
	if (ret == 0)
		ret = pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, 0);
	if (ret == 0 && fsync(r->fd) < 0)
		ret = -errno;
	if (ret < 0) {
		fr_set_err(err, errlen, "cannot write the superblock of %s: %s", r->path,
			strerror(-ret));
		return ret;
	}
	r->sb_copy = true;
	r->chunk_version = FR_CHUNK_VERSION;
	return 0;
}

/* What a superblock says. */
struct sb_geom {
	uint32_t version, chunk_version, nsegments;
	uint64_t file_size, segment_size, journal_size;
};

/* sb_decode(): a version this build does not know, whose checksum is not
 * where versions 1 and 2 keep it: a newer format, or a flipped bit. */
#define SB_UNKNOWN_VERSION (-10000)

/* Decodes one superblock image of `n` bytes. Returns 0 with the geometry
 * in *g; -EMEDIUMTYPE without the ring magic; -EUCLEAN with the magic but
 * a checksum or geometry that does not hold (damage); -EPROTONOSUPPORT for
 * a ring or chunk format version this build does not read, the checksum
 * holding; SB_UNKNOWN_VERSION (above). */
static int sb_decode(const unsigned char *sb, size_t n, struct sb_geom *g)
{
	uint32_t crc_at;

	if (n < 16 || memcmp(sb, FR_RING_MAGIC, 16) != 0)
		return -EMEDIUMTYPE;
	if (n < FR_RING_SB_LEN)
		return -EUCLEAN;
	g->version = get_le32(sb + 16);
	if (g->version != 1 && g->version != FR_RING_VERSION) {
		if (get_le32(sb + 80) == fr_crc32c(0, sb, 80) ||
		    get_le32(sb + 72) == fr_crc32c(0, sb, 72))
			return -EPROTONOSUPPORT;
		return SB_UNKNOWN_VERSION;
	}
	crc_at = g->version == 1 ? 72 : 80;
	if (get_le32(sb + crc_at) != fr_crc32c(0, sb, crc_at))
		return -EUCLEAN;
	g->file_size = get_le64(sb + 24);
	g->segment_size = get_le64(sb + 32);
	g->nsegments = get_le32(sb + 40);
	g->chunk_version = get_le32(sb + 44);
	g->journal_size = g->version == 1 ? 0 : get_le64(sb + 72);
	if (get_le32(sb + 20) != FR_RING_SB_LEN || g->segment_size < FR_RING_MIN_SEGMENT ||
	    g->segment_size % 4096 != 0 || g->segment_size > (1ull << 31) ||
	    g->nsegments < 2 || g->journal_size % 4096 != 0 || g->journal_size > JOURNAL_MAX ||
	    (g->journal_size && g->journal_size < 2 * g->segment_size) ||
	    g->file_size != FR_RING_SB_LEN + g->journal_size +
				    (uint64_t)g->nsegments * g->segment_size)
		return -EUCLEAN;
	if (g->chunk_version != FR_CHUNK_VERSION)
		return -EPROTONOSUPPORT;
	return 0;
}

/* Whether the file holds an intact chunk header (its magic and header crc
 * right) on an 8-byte boundary within the first CHUNK_EVIDENCE_BYTES after
 * the superblock, where the journal and the first segments of any ring
 * lie. Such a header is evidence the file was a ring: nothing else writes
 * them, and their crc rules out chance. Returns 1, 0 or -errno. */
#define CHUNK_EVIDENCE_BYTES (32ull << 20)
static int chunk_evidence(int fd, uint64_t size)
{
	const size_t block = 1u << 20;
	unsigned char *buf = malloc(block + FR_CHUNK_HEADER_LEN);
	uint64_t end = size < FR_RING_SB_LEN + CHUNK_EVIDENCE_BYTES
			       ? size
			       : FR_RING_SB_LEN + CHUNK_EVIDENCE_BYTES;
	int found = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t off = FR_RING_SB_LEN; off < end && !found; off += block) {
		struct fr_chunk_header h;
		ssize_t n = pread_full(fd, buf, block + FR_CHUNK_HEADER_LEN, off);

		if (n < 0) {
			found = (int)n;
			break;
		}
		for (size_t i = 0; i + FR_CHUNK_HEADER_LEN <= (size_t)n && i < block; i += 8) {
			if (get_le32(buf + i) == FR_CHUNK_MAGIC &&
			    fr_chunk_header_parse(buf + i, FR_CHUNK_HEADER_LEN, &h) == 0) {
				found = 1;
				break;
			}
		}
	}
	free(buf);
	return found;
}

static const char *sb_problem(int ret)
{
	switch (ret) {
	case -EMEDIUMTYPE:
		return "bad magic";
	case -EUCLEAN:
		return "checksum or geometry mismatch";
	case SB_UNKNOWN_VERSION:
		return "unknown format version, checksum mismatch";
	default:
		return "unreadable";
	}
}

/* Reads the superblock: the primary at offset 0, or when it is damaged
 * its copy, the file's last FR_RING_SB_LEN bytes (taken only when the
 * geometry it describes ends exactly there). Returns 0; -EPROTONOSUPPORT
 * for a format this build does not read; -EUCLEAN for a ring whose
 * superblocks are both damaged (the magic survives in one of them, or
 * intact chunk headers say the file was a ring); -EMEDIUMTYPE for a file
 * that does not look like a ring; or -errno. */
static int sb_load(struct fr_ring *r, uint64_t actual_size, char *err, size_t errlen)
{
	unsigned char *sb = malloc(2 * FR_RING_SB_LEN), *copy = sb + FR_RING_SB_LEN;
	struct sb_geom g, cg;
	ssize_t n, cn = 0;
	int p, c = -EMEDIUMTYPE, ret;

	if (!sb)
		return -ENOMEM;
	n = pread_full(r->fd, sb, FR_RING_SB_LEN, 0);
	if (n < 0) {
		fr_set_err(err, errlen, "cannot read %s: %s", r->path, strerror((int)-n));
		ret = (int)n;
		goto out;
	}
	p = sb_decode(sb, (size_t)n, &g);
	if (p == 0 && actual_size >= g.file_size + FR_RING_SB_LEN) {
		/* Is the copy there (and the same)? */
		cn = pread_full(r->fd, copy, FR_RING_SB_LEN, g.file_size);
		r->sb_copy = cn == FR_RING_SB_LEN && memcmp(sb, copy, FR_RING_SB_LEN) == 0;
	}
	/* A format this build does not read is not damage: no copy of ours
	 * can stand for it. */
	if (p != 0 && p != -EPROTONOSUPPORT && actual_size >= 2 * FR_RING_SB_LEN) {
		cn = pread_full(r->fd, copy, FR_RING_SB_LEN, actual_size - FR_RING_SB_LEN);
		if (cn < 0) {
			fr_set_err(err, errlen, "cannot read %s: %s", r->path,
				   strerror((int)-cn));
			ret = (int)cn;
			goto out;
		}
		c = sb_decode(copy, (size_t)cn, &cg);
		if (c == 0 && cg.file_size != actual_size - FR_RING_SB_LEN)
			c = -EUCLEAN; /* a superblock, not where its own copy would be */
		if (c == 0) {
			fr_log_warn("%s: the superblock is damaged (%s); reading the ring through "
				    "its copy at offset %" PRIu64,
				    r->path, sb_problem(p), cg.file_size);
			memcpy(sb, copy, FR_RING_SB_LEN);
			g = cg;
			p = 0;
			r->sb_copy = true;
			r->sb_state = FR_RING_SB_FROM_COPY;
		}
	}
	/* A version this build does not know, in either superblock, may be a
	 * newer format: refused, never repaired or moved aside. */
	if (p == SB_UNKNOWN_VERSION)
		p = -EPROTONOSUPPORT;
	if (c == SB_UNKNOWN_VERSION)
		c = -EPROTONOSUPPORT;
	if (p == -EPROTONOSUPPORT || (p != 0 && c == -EPROTONOSUPPORT)) {
		const unsigned char *v = p == -EPROTONOSUPPORT ? sb : copy;

		if (get_le32(v + 16) != 1 && get_le32(v + 16) != FR_RING_VERSION)
			fr_set_err(err, errlen,
				"%s is a flightrec ring of format version %" PRIu32
				"; this build reads versions 1 to %d",
				r->path, get_le32(v + 16), FR_RING_VERSION);
		else
			fr_set_err(err, errlen,
				"%s holds chunks of format version %" PRIu32
				"; this build reads version %d",
				r->path, get_le32(v + 44), FR_CHUNK_VERSION);
		ret = -EPROTONOSUPPORT;
		goto out;
	}
	if (p != 0) {
		/* Neither superblock holds. A ring (the magic in either, or its
		 * chunks) is damaged; anything else is not ours. */
		int ev = p == -EUCLEAN || c == -EUCLEAN ? 1 : chunk_evidence(r->fd, actual_size);

		if (ev < 0) {
			fr_set_err(err, errlen, "cannot read %s: %s", r->path, strerror(-ev));
			ret = ev;
		} else if (ev) {
			fr_set_err(err, errlen,
				"%s is a flightrec ring whose superblock is damaged (%s) and "
				"has no intact copy; its geometry is unknown, so its chunks "
				"cannot be read",
				r->path, sb_problem(p));
			ret = -EUCLEAN;
		} else {
			fr_set_err(err, errlen,
				"%s is not a flightrec ring (%s); refusing to overwrite it",
				r->path,
				p == -EMEDIUMTYPE ? "bad magic" : "damaged superblock, no chunks");
			ret = -EMEDIUMTYPE;
		}
		goto out;
	}
	r->version = g.version;
	r->file_size = g.file_size;
	r->segment_size = g.segment_size;
	r->nsegments = g.nsegments;
	r->chunk_version = g.chunk_version;
	r->journal_size = g.journal_size;
	r->sb = sb;
	sb = NULL;
	/* A file shorter than its superblock says was truncated: what is
	 * left is read (the missing tail reads as zeroes, never-written
	 * space); fr_ring_open() restores the size of a writable ring. */
	ret = 0;
out:
	free(sb);
	return ret;
}

/* A writable open of a ring read through its copy writes the primary
 * back from it. */
static void sb_repair(struct fr_ring *r)
{
	int ret = pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, 0);

	if (ret == 0 && fdatasync(r->fd) < 0)
		ret = -errno;
	if (ret < 0) {
		fr_log_err("%s: cannot rewrite the damaged superblock from its copy: %s; "
			   "the ring is still read through the copy",
			   r->path, strerror(-ret));
		return;
	}
	r->sb_state = FR_RING_SB_REPAIRED;
	fr_log_warn("%s: rewrote the damaged superblock from its copy", r->path);
}

/* A writable open of a ring without a copy of its superblock (made
 * before copies existed, or whose copy was damaged) adds one after the
 * segments, where nothing of the ring lies. Bytes there that are neither
 * zeroes nor a superblock are not the ring's: they are left alone, and the
 * ring goes without a copy. */
static void sb_add_copy(struct fr_ring *r, uint64_t actual_size)
{
	uint64_t at = r->file_size;
	unsigned char *buf;
	ssize_t n = 0;
	int ret;

	if (actual_size > at + FR_RING_SB_LEN) {
		fr_log_warn("%s holds %" PRIu64 " bytes past the ring's end; no copy of the "
			    "superblock is added there",
			    r->path, actual_size - at);
		return;
	}
	buf = calloc(1, FR_RING_SB_LEN);
	if (!buf)
		return;
	if (actual_size > at)
		n = pread_full(r->fd, buf, actual_size - at, at);
	if (n < 0 || (!all_zero(buf, (size_t)n) &&
		      ((size_t)n < 16 || memcmp(buf, FR_RING_MAGIC, 16) != 0))) {
		free(buf);
		fr_log_warn("%s holds data past the ring's end; no copy of the superblock is "
			    "added there", r->path);
		return;
	}
	free(buf);
	ret = posix_fallocate(r->fd, (off_t)at, FR_RING_SB_LEN);
	if (ret) {
		fr_log_warn("%s: cannot add a copy of the superblock: %s; the ring goes "
			    "without one", r->path, strerror(ret));
		return;
	}
	ret = pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, at);
	if (ret == 0 && fdatasync(r->fd) < 0)
		ret = -errno;
	if (ret < 0) {
		fr_log_warn("%s: cannot write a copy of the superblock: %s", r->path,
			    strerror(-ret));
		return;
	}
	r->sb_copy = true;
	fr_log_info("%s: added a copy of the superblock at offset %" PRIu64, r->path, at);
}

/* Renames a ring whose superblocks are both damaged to PATH.damaged-TIME
 * (never over an existing file) and opens a new empty file at PATH in its
 * place, locked. Returns 0 or -errno with `err` set. */
static int move_aside(struct fr_ring *r, const char *why, char *err, size_t errlen)
{
	size_t len = strlen(r->path) + 64;
	char *aside = malloc(len), stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	int ret = -EEXIST;

	if (!aside) {
		fr_set_err(err, errlen, "cannot open %s: out of memory", r->path);
		return -ENOMEM;
	}
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i < 100 && ret == -EEXIST; i++) {
		if (i)
			snprintf(aside, len, "%s.damaged-%s.%d", r->path, stamp, i);
		else
			snprintf(aside, len, "%s.damaged-%s", r->path, stamp);
		ret = renameat2(AT_FDCWD, r->path, AT_FDCWD, aside, RENAME_NOREPLACE) < 0
			      ? -errno
			      : 0;
	}
	if (ret < 0) {
		fr_set_err(err, errlen, "%s; cannot move it aside: %s", why, strerror(-ret));
		goto out;
	}
	fr_log_warn("%s; moved it aside to %s and starting a new ring", why, aside);
	/* Unlocks the old file, which is no longer at the path. */
	close(r->fd);
	r->fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (r->fd < 0 || flock(r->fd, LOCK_EX | LOCK_NB) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot create %s after moving the damaged ring aside: %s",
			   r->path, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	free(aside);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Recovery                                                             */

struct cand {
	struct fr_ring_ref ref;
	bool verified;
	bool damaged; /* header intact, payload not: counted, dropped later */
};

struct scan {
	struct cand *c;
	size_t n, cap;
	unsigned char *segbuf; /* one segment, for resyncing */
	uint64_t max_seq;
	bool any_seq;
	/* Per segment: where its scan met an all-zero header (the end of its
	 * data, or a zeroed page), or NO_ZERO_STOP. */
	uint64_t *zero_stop;
};

#define NO_ZERO_STOP UINT64_MAX

static int scan_add(struct scan *s, const struct fr_ring_ref *ref)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct cand *c = realloc(s->c, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		s->c = c;
		s->cap = cap;
	}
	s->c[s->n].ref = *ref;
	s->c[s->n].verified = false;
	s->c[s->n].damaged = false;
	s->n++;
	return 0;
}

/* A header at `off` within the segment that parses and whose chunk fits
 * in the rest of the segment. */
static bool header_ok(const struct fr_ring *r, const unsigned char *p, uint64_t off,
		      struct fr_chunk_header *h)
{
	if (fr_chunk_header_parse(p, FR_CHUNK_HEADER_LEN, h) < 0)
		return false;
	return FR_CHUNK_HEADER_LEN + (uint64_t)h->comp_len <= r->segment_size - off;
}

/* Scans segment `seg` from offset `start`. An all-zero header normally
 * ends the segment's data; with `zeros_are_damage` it is searched past
 * like any other bad header. */
static int scan_segment(struct fr_ring *r, struct scan *s, uint32_t seg, uint64_t start,
			bool zeros_are_damage)
{
	uint64_t base = seg_base(r, seg), off = start, last_seq = 0;
	bool have_last = false, loaded = false;
	int ret;

	while (off + FR_CHUNK_HEADER_LEN <= r->segment_size) {
		unsigned char hbuf[FR_CHUNK_HEADER_LEN];
		const unsigned char *hp;
		struct fr_chunk_header h;
		struct fr_ring_ref ref;

		if (loaded) {
			hp = s->segbuf + off;
		} else {
			ssize_t n = pread_full(r->fd, hbuf, sizeof(hbuf), base + off);

			if (n < 0)
				return (int)n;
			if ((size_t)n < sizeof(hbuf))
				memset(hbuf + n, 0, sizeof(hbuf) - (size_t)n);
			hp = hbuf;
		}
		/* Never written: the end of this segment's data (or a zeroed
		 * page, which ring_recover() looks past when chunks are missing). */
		if (!zeros_are_damage && all_zero(hp, FR_CHUNK_HEADER_LEN)) {
			s->zero_stop[seg] = off;
			break;
		}
		if (!header_ok(r, hp, off, &h)) {
			bool found = false;

			/* Search forward for the next valid header. */
			if (!loaded) {
				ssize_t n = pread_full(r->fd, s->segbuf, r->segment_size, base);

				if (n < 0)
					return (int)n;
				if ((size_t)n < r->segment_size)
					memset(s->segbuf + n, 0, r->segment_size - (size_t)n);
				loaded = true;
			}
			for (off += 8; off + FR_CHUNK_HEADER_LEN <= r->segment_size; off += 8) {
				if (get_le32(s->segbuf + off) == FR_CHUNK_MAGIC &&
				    header_ok(r, s->segbuf + off, off, &h)) {
					found = true;
					break;
				}
			}
			if (!found)
				break;
		}
		/* Sequence numbers increase within a segment's current use;
		 * a lower one is a leftover of its previous use. */
		if (have_last && h.seq <= last_seq)
			break;
		have_last = true;
		last_seq = h.seq;
		if (!s->any_seq || h.seq > s->max_seq)
			s->max_seq = h.seq;
		s->any_seq = true;

		ref = ref_of(&h, base + off);
		ret = scan_add(s, &ref);
		if (ret < 0)
			return ret;
		if (loaded) {
			/* The payload is in memory already: check it now. A damaged
			 * chunk stays a candidate, marked, so its sequence number is
			 * not mistaken for a hole. */
			if (fr_chunk_verify(s->segbuf + off, ref.len) < 0) {
				s->c[s->n - 1].damaged = true;
				r->corrupt++;
			} else {
				s->c[s->n - 1].verified = true;
			}
		}
		off += align8(ref.len);
	}
	return 0;
}

static int cmp_cand_seq(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return (x->ref.seq > y->ref.seq) - (x->ref.seq < y->ref.seq);
}

/* Checks payloads of the newest chunks, newest first, dropping damaged
 * ones (s->c sorted by seq). */
static int verify_tail(struct fr_ring *r, struct scan *s)
{
	uint64_t checked = 0;
	unsigned char *buf = malloc(r->segment_size);

	if (!buf)
		return -ENOMEM;
	for (size_t i = s->n; i-- > 0 && checked < VERIFY_TAIL_BYTES;) {
		struct cand *c = &s->c[i];
		ssize_t n;

		checked += c->ref.len;
		if (c->verified || c->damaged)
			continue;
		n = pread_full(r->fd, buf, c->ref.len, c->ref.offset);
		if (n < 0) {
			free(buf);
			return (int)n;
		}
		if ((size_t)n != c->ref.len || fr_chunk_verify(buf, c->ref.len) < 0) {
			if (!c->damaged)
				r->corrupt++;
			c->damaged = true;
			continue;
		}
		c->verified = true;
	}
	free(buf);
	return 0;
}

/* Reads the whole journal into a malloc'd buffer (bytes past the end of a
 * truncated file read as zeroes). Returns 0 or -errno. */
static int journal_load(struct fr_ring *r, unsigned char **out)
{
	unsigned char *buf = malloc(r->journal_size);
	ssize_t n;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	n = pread_full(r->fd, buf, r->journal_size, FR_RING_SB_LEN);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	if ((uint64_t)n < r->journal_size)
		memset(buf + n, 0, r->journal_size - (uint64_t)n);
	*out = buf;
	return 0;
}

/* The first valid chunk header at or after `off` (8-byte aligned) in the
 * journal image `buf` whose chunk lies inside the journal: its offset, with
 * the header in *h, or UINT64_MAX. The journal is circular and overwritten
 * in place, so leftovers lie between chunks: every aligned offset is
 * looked at. */
static uint64_t journal_next(const struct fr_ring *r, const unsigned char *buf, uint64_t off,
			     struct fr_chunk_header *h)
{
	for (; off + FR_CHUNK_HEADER_LEN <= r->journal_size; off += 8)
		if (fr_chunk_header_parse(buf + off, FR_CHUNK_HEADER_LEN, h) == 0 &&
		    FR_CHUNK_HEADER_LEN + (uint64_t)h->comp_len <= r->journal_size - off)
			return off;
	return UINT64_MAX;
}

/* The offset after the chunk of header `h` at `off`. */
static uint64_t journal_after(uint64_t off, const struct fr_chunk_header *h)
{
	return off + align8(FR_CHUNK_HEADER_LEN + (uint64_t)h->comp_len);
}

/* Reads the whole journal: its intact chunks numbered above `main_max`
 * (the newest intact chunk of the segments) become the group, in sequence
 * order. Damaged ones among them are counted, and so are numbers missing
 * between them. The journal cursor resumes after the chunk with the
 * highest number, and the numbering after every number seen. */
static int journal_recover(struct fr_ring *r, uint64_t main_max)
{
	struct scan js = {0};
	struct fr_chunk_header h;
	unsigned char *buf;
	uint64_t top_seq = 0, top_end = 0;
	size_t keep = 0;
	int ret = journal_load(r, &buf);

	if (ret < 0)
		return ret;
	for (uint64_t off = journal_next(r, buf, 0, &h); off != UINT64_MAX;
	     off = journal_next(r, buf, journal_after(off, &h), &h)) {
		struct fr_ring_ref ref = ref_of(&h, FR_RING_SB_LEN + off);

		if (h.seq > top_seq) {
			top_seq = h.seq;
			top_end = journal_after(off, &h);
		}
		if (h.seq <= main_max)
			continue; /* merged since */
		ref.covers = 0;
		ret = scan_add(&js, &ref);
		if (ret < 0)
			goto out;
		js.c[js.n - 1].damaged = fr_chunk_verify(buf + off, ref.len) < 0;
	}
	if (js.n > 1)
		qsort(js.c, js.n, sizeof(*js.c), cmp_cand_seq);
	/* One chunk per number (an intact one first), the numbers missing
	 * between them and the damaged ones counted. */
	for (size_t i = 0; i < js.n; i++) {
		struct cand *c = js.c;

		if (keep && c[keep - 1].ref.seq == c[i].ref.seq) {
			if (c[keep - 1].damaged && !c[i].damaged)
				c[keep - 1] = c[i];
			continue;
		}
		if (keep && c[i].ref.seq > c[keep - 1].ref.seq + 1)
			r->corrupt += c[i].ref.seq - c[keep - 1].ref.seq - 1;
		c[keep++] = c[i];
	}
	for (size_t i = 0; i < keep; i++) {
		if (js.c[i].damaged) {
			r->corrupt++;
			continue;
		}
		ret = jidx_push(r, &js.c[i].ref);
		if (ret < 0)
			goto out;
	}
	if (top_seq >= r->next_seq)
		r->next_seq = top_seq + 1;
	r->jcur = top_end >= r->journal_size ? 0 : top_end;
	r->group_start = fr_now_mono_ns();
	r->group_due = r->jcount > 0;
out:
	free(js.c);
	free(buf);
	return ret;
}

static int ring_recover(struct fr_ring *r)
{
	struct scan s;
	size_t keep;
	int ret;

	memset(&s, 0, sizeof(s));
	s.segbuf = malloc(r->segment_size);
	s.zero_stop = malloc(r->nsegments * sizeof(*s.zero_stop));
	if (!s.segbuf || !s.zero_stop) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t seg = 0; seg < r->nsegments; seg++) {
		s.zero_stop[seg] = NO_ZERO_STOP;
		ret = scan_segment(r, &s, seg, 0, false);
		if (ret < 0)
			goto out;
	}
	if (s.n > 1)
		qsort(s.c, s.n, sizeof(*s.c), cmp_cand_seq);

	/* Sequence numbers are consecutive in a ring that is only appended
	 * to, wrapped and expired. A gap means chunks are missing between
	 * ones that were found: when a zeroed page took a header, the chunks
	 * behind it in its segment were taken for never-written space. Look
	 * past the zeros of those segments then (and only then: reading the
	 * untouched tails of a healthy ring would slow every open). */
	for (size_t i = 1; i < s.n; i++) {
		if (s.c[i].ref.seq - s.c[i].ref.covers <= s.c[i - 1].ref.seq + 1)
			continue;
		for (uint32_t seg = 0; seg < r->nsegments; seg++) {
			if (s.zero_stop[seg] == NO_ZERO_STOP)
				continue;
			ret = scan_segment(r, &s, seg, s.zero_stop[seg], true);
			if (ret < 0)
				goto out;
		}
		qsort(s.c, s.n, sizeof(*s.c), cmp_cand_seq);
		break;
	}
	ret = verify_tail(r, &s);
	if (ret < 0)
		goto out;

	/* Duplicate sequence numbers cannot come from this writer; keep the
	 * first of each. */
	keep = 0;
	for (size_t i = 0; i < s.n; i++)
		if (keep == 0 || s.c[i].ref.seq != s.c[keep - 1].ref.seq)
			s.c[keep++] = s.c[i];
	s.n = keep;

	/* A hole that remains is a chunk whose header was destroyed: count it
	 * too. Then only the intact chunks go on. */
	for (size_t i = 1; i < s.n; i++) {
		uint64_t first = s.c[i].ref.seq - s.c[i].ref.covers;

		if (first > s.c[i - 1].ref.seq + 1)
			r->corrupt += first - s.c[i - 1].ref.seq - 1;
	}
	keep = 0;
	for (size_t i = 0; i < s.n; i++)
		if (!s.c[i].damaged)
			s.c[keep++] = s.c[i];
	s.n = keep;

	/* The cursor resumes after the newest valid chunk; anything after it
	 * in its segment is older data about to be overwritten. */
	if (s.n > 0) {
		const struct fr_ring_ref *top = &s.c[s.n - 1].ref;
		uint32_t cseg = seg_of(r, top->offset);
		uint64_t cend = top->offset + align8(top->len);

		r->cur_seg = cseg;
		r->cur_off = cend - seg_base(r, cseg);
		keep = 0;
		for (size_t i = 0; i < s.n; i++) {
			const struct fr_ring_ref *ref = &s.c[i].ref;

			if (seg_of(r, ref->offset) == cseg && ref->offset >= cend)
				continue;
			s.c[keep++] = s.c[i];
		}
		s.n = keep;
	} else {
		r->cur_seg = 0;
		r->cur_off = 0;
	}
	/* Numbering resumes after the newest intact chunk, so a torn last
	 * write leaves no hole once it is overwritten. */
	r->next_seq = s.n > 0 ? s.c[s.n - 1].ref.seq + 1 : s.any_seq ? s.max_seq + 1 : 1;

	/* What a damaged file claims a chunk stands for never reaches over
	 * the chunk before it. */
	for (size_t i = 1; i < s.n; i++) {
		struct fr_ring_ref *ref = &s.c[i].ref;

		if (ref->seq - ref->covers <= s.c[i - 1].ref.seq)
			ref->covers = (uint32_t)(ref->seq - s.c[i - 1].ref.seq - 1);
	}
	ret = idx_reserve(r, s.n + 1);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < s.n; i++)
		idx_push(r, &s.c[i].ref);
	if (r->journal_size) {
		ret = journal_recover(r, s.n > 0 ? s.c[s.n - 1].ref.seq : 0);
		if (ret < 0)
			goto out;
	}
	if (r->corrupt)
		fr_log_warn("%s: skipped %" PRIu64 " damaged chunk(s)", r->path, r->corrupt);
out:
	free(s.c);
	free(s.segbuf);
	free(s.zero_stop);
	return ret;
}

static int merge_group(struct fr_ring *r);

/* ------------------------------------------------------------------ */
/* Open / close                                                         */

int fr_ring_open(struct fr_ring **out, const char *path, uint64_t size,
		 uint64_t segment_size, unsigned flags, char *err, size_t errlen)
{
	struct fr_ring *r;
	struct stat st;
	bool created = false, rdonly = flags & FR_RING_RDONLY;
	int ret;

	*out = NULL;
	fr_set_err(err, errlen, "%s", "");
	r = calloc(1, sizeof(*r));
	if (!r) {
		fr_set_err(err, errlen, "cannot open %s: out of memory", path);
		return -ENOMEM;
	}
	r->fd = -1;
	r->rdonly = rdonly;
	r->sync_interval = NS_PER_SEC;
	r->group_ns = FR_RING_GROUP_NS;
	/* Readers must not starve the appending thread: glibc's default
	 * rwlock lets a steady stream of readers hold it forever. */
	{
		pthread_rwlockattr_t attr;

		pthread_rwlockattr_init(&attr);
		pthread_rwlockattr_setkind_np(&attr,
					      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&r->lock, &attr);
		pthread_rwlockattr_destroy(&attr);
	}
	pthread_mutex_init(&r->io_lock, NULL);
	r->path = strdup(path);
	if (!r->path) {
		ret = -ENOMEM;
		fr_set_err(err, errlen, "cannot open %s: out of memory", path);
		goto err;
	}

	r->fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (r->fd < 0 && errno == ENOENT && !rdonly && (flags & FR_RING_CREATE)) {
		ret = check_geometry(path, size, segment_size, err, errlen);
		if (ret < 0)
			goto err;
		r->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		created = r->fd >= 0;
	}
	if (r->fd < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto err;
	}
	if (fstat(r->fd, &st) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		goto err;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EMEDIUMTYPE;
		fr_set_err(err, errlen, "%s is not a regular file; refusing to use it as a ring",
			path);
		goto err;
	}
	/* One writer per ring: a second daemon would interleave chunks. */
	if (!rdonly && flock(r->fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		fr_set_err(err, errlen, "%s is in use by another process (%s)", path,
			errno == EWOULDBLOCK ? "locked by a running flightrecd?" : strerror(errno));
		goto err;
	}

	if (st.st_size > 0) {
		ret = sb_load(r, (uint64_t)st.st_size, err, errlen);
		if (ret == -EUCLEAN && !rdonly && (flags & FR_RING_CREATE)) {
			/* Nothing of it can be read: keep it for whoever wants to
			 * look, and record rather than refuse. */
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			ret = check_geometry(path, size, segment_size, err, errlen);
			if (ret == 0)
				ret = move_aside(r, why, err, errlen);
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
		ret = check_geometry(path, size, segment_size, err, errlen);
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
		uint64_t actual = (uint64_t)st.st_size;

		if (actual < r->file_size && !rdonly) {
			/* Give a truncated ring its size back, allocated, so
			 * appends never find the disk full. */
			ret = posix_fallocate(r->fd, st.st_size, (off_t)(r->file_size - (uint64_t)st.st_size));
			if (ret) {
				fr_set_err(err, errlen,
					"%s was truncated to %" PRIu64 " bytes and its %" PRIu64
					" bytes cannot be allocated again: %s",
					path, (uint64_t)st.st_size, r->file_size, strerror(ret));
				ret = -ret;
				goto err;
			}
			fr_log_warn("%s was truncated to %" PRIu64 " bytes; its size of %" PRIu64
				    " bytes is restored (chunks past the cut are lost)",
				    path, (uint64_t)st.st_size, r->file_size);
			actual = r->file_size;
		}
		if (!rdonly && r->sb_state == FR_RING_SB_FROM_COPY)
			sb_repair(r);
		else if (!rdonly && !r->sb_copy)
			sb_add_copy(r, actual);
		/* A size maps to the superblocks plus whole segments; compare
		 * what the request would have created (with a copy, or before
		 * copies existed), not the raw number. */
		uint64_t seg = segment_size ? segment_size : r->segment_size;
		bool j = r->journal_size != 0;
		bool same = !size || r->file_size == layout_for(size, seg, j, 2 * FR_RING_SB_LEN) ||
			    r->file_size == layout_for(size, seg, j, FR_RING_SB_LEN);
		if (!same || (segment_size && segment_size != r->segment_size))
			fr_set_err(err, errlen,
				"%s keeps its geometry (%" PRIu64 " bytes in %" PRIu32
				" segments of %" PRIu64 " bytes); the requested size applies "
				"only to a new ring",
				path, r->file_size, r->nsegments, r->segment_size);
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
	ret = idx_reserve(r, r->idx_count + 1);
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

	ref = ref_of(&h, off);
	pthread_rwlock_wrlock(&r->lock);
	idx_push(r, &ref);
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
		got = pread_full(r->fd, raw[i], ref.len, ref.offset);
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
	ref = ref_of(&h, FR_RING_SB_LEN + at);
	pthread_rwlock_wrlock(&r->lock);
	ret = jidx_push(r, &ref);
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
	int ret = journal_load(r, &buf);

	if (ret < 0)
		return ret;
	for (uint64_t off = journal_next(r, buf, 0, &h); off != UINT64_MAX;
	     off = journal_next(r, buf, journal_after(off, &h), &h)) {
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
	n = pread_full(r->fd, p, ref->len, ref->offset);
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
