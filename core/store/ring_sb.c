/* The ring's superblock and its copy (see core/store/ring.h, FILE LAYOUT):
 * encoding, creating a ring, reading a superblock through its copy when it
 * is damaged, repairing it, adding a copy to a ring made before copies,
 * and moving aside a file whose superblocks are both gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
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
#include "core/store/ring_int.h"
#include "core/util/time.h"

static void sb_encode(unsigned char *sb, const struct fr_ring *r, int64_t created_ns,
		      const unsigned char id[16])
{
	memset(sb, 0, FR_RING_SB_LEN);
	memcpy(sb, FR_RING_MAGIC, 16);
	fr_put_le32(sb + 16, FR_RING_VERSION);
	fr_put_le32(sb + 20, FR_RING_SB_LEN);
	fr_put_le64(sb + 24, r->file_size);
	fr_put_le64(sb + 32, r->segment_size);
	fr_put_le32(sb + 40, r->nsegments);
	fr_put_le32(sb + 44, FR_CHUNK_VERSION);
	fr_put_le64(sb + 48, (uint64_t)created_ns);
	memcpy(sb + 56, id, 16);
	fr_put_le64(sb + 72, r->journal_size);
	fr_put_le32(sb + 80, fr_crc32c(0, sb, 80));
}

int ring_check_geometry(const char *path, uint64_t size, uint64_t segment_size, char *err,
			size_t errlen)
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
			   "invalid ring size %" PRIu64
			   " for %s: must hold two 4096-byte superblocks "
			   "(one a copy) and at least 2 segments of %" PRIu64 " bytes",
			   size, path, segment_size);
		return -EINVAL;
	}
	return 0;
}

/* The journal a ring of `size` bytes gets (core/store/ring.h) when `reserved`
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
uint64_t ring_layout_for(uint64_t size, uint64_t segment_size, bool journal, uint64_t reserved)
{
	uint64_t j;

	if (size <= reserved || !segment_size)
		return 0;
	j = journal ? journal_for(size, segment_size, reserved) : 0;
	return FR_RING_SB_LEN + j + (size - reserved - j) / segment_size * segment_size;
}

int ring_create(struct fr_ring *r, uint64_t size, uint64_t segment_size, bool journal, char *err,
		size_t errlen)
{
	unsigned char id[16];
	int ret;

	r->version = FR_RING_VERSION;
	r->segment_size = segment_size;
	r->journal_size = journal ? journal_for(size, segment_size, 2 * FR_RING_SB_LEN) : 0;
	r->file_size = ring_layout_for(size, segment_size, journal, 2 * FR_RING_SB_LEN);
	r->nsegments = (uint32_t)((r->file_size - FR_RING_SB_LEN - r->journal_size) / segment_size);

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
	ret = ring_pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, r->file_size);
	if (ret == 0)
		ret = ring_pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, 0);
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
	g->version = fr_get_le32(sb + 16);
	if (g->version != 1 && g->version != FR_RING_VERSION) {
		if (fr_get_le32(sb + 80) == fr_crc32c(0, sb, 80) ||
		    fr_get_le32(sb + 72) == fr_crc32c(0, sb, 72))
			return -EPROTONOSUPPORT;
		return SB_UNKNOWN_VERSION;
	}
	crc_at = g->version == 1 ? 72 : 80;
	if (fr_get_le32(sb + crc_at) != fr_crc32c(0, sb, crc_at))
		return -EUCLEAN;
	g->file_size = fr_get_le64(sb + 24);
	g->segment_size = fr_get_le64(sb + 32);
	g->nsegments = fr_get_le32(sb + 40);
	g->chunk_version = fr_get_le32(sb + 44);
	g->journal_size = g->version == 1 ? 0 : fr_get_le64(sb + 72);
	if (fr_get_le32(sb + 20) != FR_RING_SB_LEN || g->segment_size < FR_RING_MIN_SEGMENT ||
	    g->segment_size % 4096 != 0 || g->segment_size > (1ull << 31) || g->nsegments < 2 ||
	    g->journal_size % 4096 != 0 || g->journal_size > JOURNAL_MAX ||
	    (g->journal_size && g->journal_size < 2 * g->segment_size) ||
	    g->file_size !=
		    FR_RING_SB_LEN + g->journal_size + (uint64_t)g->nsegments * g->segment_size)
		return -EUCLEAN;
	/* A ring made before sections holds version 2 chunks, and the
	 * recorder adds version 3 ones to it: both are read. */
	if (g->chunk_version < FR_CHUNK_VERSION_MIN || g->chunk_version > FR_CHUNK_VERSION)
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
		ssize_t n = fr_pread_full(fd, buf, block + FR_CHUNK_HEADER_LEN, off);

		if (n < 0) {
			found = (int)n;
			break;
		}
		for (size_t i = 0; i + FR_CHUNK_HEADER_LEN <= (size_t)n && i < block; i += 8) {
			if (fr_get_le32(buf + i) == FR_CHUNK_MAGIC &&
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
	case -EMEDIUMTYPE: return "bad magic";
	case -EUCLEAN: return "checksum or geometry mismatch";
	case SB_UNKNOWN_VERSION: return "unknown format version, checksum mismatch";
	default: return "unreadable";
	}
}

/* When the primary superblock (sb_decode() said *p) does not hold, reads
 * the copy, the file's last FR_RING_SB_LEN bytes, into `copy` and puts
 * what sb_decode() says of it in *c. A copy that holds, and ends exactly
 * where its own geometry puts it, becomes the superblock in force: it is
 * copied to `sb`, its geometry to *g, and *p becomes 0. Returns 0, or
 * -errno with a message in `err` when the copy cannot be read. */
static int sb_load_copy(struct fr_ring *r, uint64_t actual_size, unsigned char *sb,
			unsigned char *copy, struct sb_geom *g, int *p, int *c, char *err,
			size_t errlen)
{
	struct sb_geom cg;
	ssize_t cn;

	/* A format this build does not read is not damage: no copy of ours
	 * can stand for it. */
	if (*p == 0 || *p == -EPROTONOSUPPORT || actual_size < 2 * FR_RING_SB_LEN)
		return 0;
	cn = fr_pread_full(r->fd, copy, FR_RING_SB_LEN, actual_size - FR_RING_SB_LEN);
	if (cn < 0) {
		fr_set_err(err, errlen, "cannot read %s: %s", r->path, strerror((int)-cn));
		return (int)cn;
	}
	*c = sb_decode(copy, (size_t)cn, &cg);
	if (*c == 0 && cg.file_size != actual_size - FR_RING_SB_LEN)
		*c = -EUCLEAN; /* a superblock, not where its own copy would be */
	if (*c == 0) {
		fr_log_warn("%s: the superblock is damaged (%s); reading the ring through "
			    "its copy at offset %" PRIu64,
			    r->path, sb_problem(*p), cg.file_size);
		memcpy(sb, copy, FR_RING_SB_LEN);
		*g = cg;
		*p = 0;
		r->sb_copy = true;
		r->sb_state = FR_RING_SB_FROM_COPY;
	}
	return 0;
}

/* Neither the superblock nor its copy holds (sb_decode() said p of the
 * one in `sb` and c of the one in `copy`): says why in `err` and returns
 * -EPROTONOSUPPORT, -EUCLEAN, -EMEDIUMTYPE or -errno, as
 * ring_sb_load(). */
static int sb_load_failed(struct fr_ring *r, uint64_t actual_size, const unsigned char *sb,
			  const unsigned char *copy, int p, int c, char *err, size_t errlen)
{
	int ev;

	/* A version this build does not know, in either superblock, may be a
	 * newer format: refused, never repaired or moved aside. */
	if (p == SB_UNKNOWN_VERSION)
		p = -EPROTONOSUPPORT;
	if (c == SB_UNKNOWN_VERSION)
		c = -EPROTONOSUPPORT;
	if (p == -EPROTONOSUPPORT || c == -EPROTONOSUPPORT) {
		const unsigned char *v = p == -EPROTONOSUPPORT ? sb : copy;

		if (fr_get_le32(v + 16) != 1 && fr_get_le32(v + 16) != FR_RING_VERSION)
			fr_set_err(err, errlen,
				   "%s is a flightrec ring of format version %" PRIu32
				   "; this build reads versions 1 to %d",
				   r->path, fr_get_le32(v + 16), FR_RING_VERSION);
		else
			fr_set_err(err, errlen,
				   "%s holds chunks of format version %" PRIu32
				   "; this build reads versions %d to %d",
				   r->path, fr_get_le32(v + 44), FR_CHUNK_VERSION_MIN,
				   FR_CHUNK_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* A ring (the magic in either superblock, or its chunks) is damaged;
	 * anything else is not ours. */
	ev = p == -EUCLEAN || c == -EUCLEAN ? 1 : chunk_evidence(r->fd, actual_size);
	if (ev < 0) {
		fr_set_err(err, errlen, "cannot read %s: %s", r->path, strerror(-ev));
		return ev;
	}
	if (ev) {
		fr_set_err(err, errlen,
			   "%s is a flightrec ring whose superblock is damaged (%s) and "
			   "has no intact copy; its geometry is unknown, so its chunks "
			   "cannot be read",
			   r->path, sb_problem(p));
		return -EUCLEAN;
	}
	fr_set_err(err, errlen, "%s is not a flightrec ring (%s); refusing to overwrite it",
		   r->path, p == -EMEDIUMTYPE ? "bad magic" : "damaged superblock, no chunks");
	return -EMEDIUMTYPE;
}

/* Reads the superblock: the primary at offset 0, or when it is damaged
 * its copy, the file's last FR_RING_SB_LEN bytes (taken only when the
 * geometry it describes ends exactly there). Returns 0; -EPROTONOSUPPORT
 * for a format this build does not read; -EUCLEAN for a ring whose
 * superblocks are both damaged (the magic survives in one of them, or
 * intact chunk headers say the file was a ring); -EMEDIUMTYPE for a file
 * that does not look like a ring; or -errno. */
int ring_sb_load(struct fr_ring *r, uint64_t actual_size, char *err, size_t errlen)
{
	unsigned char *sb = malloc(2 * FR_RING_SB_LEN), *copy = sb + FR_RING_SB_LEN;
	struct sb_geom g;
	ssize_t n, cn;
	int p, c = -EMEDIUMTYPE, ret;

	if (!sb)
		return -ENOMEM;
	n = fr_pread_full(r->fd, sb, FR_RING_SB_LEN, 0);
	if (n < 0) {
		fr_set_err(err, errlen, "cannot read %s: %s", r->path, strerror((int)-n));
		ret = (int)n;
		goto out;
	}
	p = sb_decode(sb, (size_t)n, &g);
	if (p == 0 && actual_size >= g.file_size + FR_RING_SB_LEN) {
		/* Is the copy there (and the same)? */
		cn = fr_pread_full(r->fd, copy, FR_RING_SB_LEN, g.file_size);
		r->sb_copy = cn == FR_RING_SB_LEN && memcmp(sb, copy, FR_RING_SB_LEN) == 0;
	}
	ret = sb_load_copy(r, actual_size, sb, copy, &g, &p, &c, err, errlen);
	if (ret < 0)
		goto out;
	if (p != 0) {
		ret = sb_load_failed(r, actual_size, sb, copy, p, c, err, errlen);
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
void ring_sb_repair(struct fr_ring *r)
{
	int ret = ring_pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, 0);

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
void ring_sb_add_copy(struct fr_ring *r, uint64_t actual_size)
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
		n = fr_pread_full(r->fd, buf, actual_size - at, at);
	if (n < 0 || (!all_zero(buf, (size_t)n) &&
		      ((size_t)n < 16 || memcmp(buf, FR_RING_MAGIC, 16) != 0))) {
		free(buf);
		fr_log_warn("%s holds data past the ring's end; no copy of the superblock is "
			    "added there",
			    r->path);
		return;
	}
	free(buf);
	ret = posix_fallocate(r->fd, (off_t)at, FR_RING_SB_LEN);
	if (ret) {
		fr_log_warn("%s: cannot add a copy of the superblock: %s; the ring goes "
			    "without one",
			    r->path, strerror(ret));
		return;
	}
	ret = ring_pwrite_full(r->fd, r->sb, FR_RING_SB_LEN, at);
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
int ring_move_aside(struct fr_ring *r, const char *why, char *err, size_t errlen)
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
		ret = renameat2(AT_FDCWD, r->path, AT_FDCWD, aside, RENAME_NOREPLACE) < 0 ? -errno
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

/* What opening an existing ring writable does to it: a truncated file gets
 * its size back (allocated), a superblock read through its copy is
 * rewritten from it, a ring from before copies gets one. Also says, as a
 * note in `err`, when the requested size or segment size differs from the
 * ring's own (which stays). Returns 0, or -errno with a message in `err`. */
int ring_sb_existing(struct fr_ring *r, uint64_t actual_size, uint64_t size, uint64_t segment_size,
		     char *err, size_t errlen)
{
	uint64_t actual = actual_size, seg = segment_size ? segment_size : r->segment_size;
	bool j = r->journal_size != 0, same;
	int ret;

	if (actual < r->file_size && !r->rdonly) {
		/* Give a truncated ring its size back, allocated, so
		 * appends never find the disk full. */
		ret = posix_fallocate(r->fd, actual_size, (off_t)(r->file_size - actual_size));
		if (ret) {
			fr_set_err(err, errlen,
				   "%s was truncated to %" PRIu64 " bytes and its %" PRIu64
				   " bytes cannot be allocated again: %s",
				   r->path, actual_size, r->file_size, strerror(ret));
			return -ret;
		}
		fr_log_warn("%s was truncated to %" PRIu64 " bytes; its size of %" PRIu64
			    " bytes is restored (chunks past the cut are lost)",
			    r->path, actual_size, r->file_size);
		actual = r->file_size;
	}
	if (!r->rdonly && r->sb_state == FR_RING_SB_FROM_COPY)
		ring_sb_repair(r);
	else if (!r->rdonly && !r->sb_copy)
		ring_sb_add_copy(r, actual);
	/* A size maps to the superblocks plus whole segments; compare
	 * what the request would have created (with a copy, or before
	 * copies existed), not the raw number. */
	same = !size || r->file_size == ring_layout_for(size, seg, j, 2 * FR_RING_SB_LEN) ||
	       r->file_size == ring_layout_for(size, seg, j, FR_RING_SB_LEN);
	if (!same || (segment_size && segment_size != r->segment_size))
		fr_set_err(err, errlen,
			   "%s keeps its geometry (%" PRIu64 " bytes in %" PRIu32
			   " segments of %" PRIu64 " bytes); the requested size applies "
			   "only to a new ring",
			   r->path, r->file_size, r->nsegments, r->segment_size);
	return 0;
}

/* Writes the superblock kept in memory at `off` (0, or the copy's place). */
static int sb_write_again(struct fr_ring *r, uint64_t off)
{
	return ring_write(r, r->sb, FR_RING_SB_LEN, off);
}

/* A ring file removed or replaced at its path under a running recorder
 * (the one writer's lock stops neither) is not recreated: another file at
 * the path is not the ring's to write, and chunks keep landing in the file
 * open. But it is said, once a minute, since a restart will not find them. */
static void check_path(const struct fr_ring *r, const struct stat *open_st)
{
	struct stat st;

	if (stat(r->path, &st) == 0 && st.st_dev == open_st->st_dev && st.st_ino == open_st->st_ino)
		return;
	fr_log_ratelimited(FR_LOG_WARN, 60000000000LL,
			   "the ring file %s was removed or replaced while recording; chunks go on "
			   "into the file the recorder has open, which a restart will not find",
			   r->path);
}

int ring_restore_size(struct fr_ring *r)
{
	uint64_t want = r->file_size + (r->sb_copy ? FR_RING_SB_LEN : 0), cut;
	struct stat st;
	size_t lost;
	int ret;

	if (r->rdonly || !r->sb)
		return 0;
	if (fstat(r->fd, &st) < 0)
		return -errno;
	check_path(r, &st);
	if ((uint64_t)st.st_size >= want)
		return 0;
	cut = (uint64_t)st.st_size;
	pthread_rwlock_wrlock(&r->lock);
	lost = ring_idx_drop_beyond(r, cut);
	r->corrupt += lost;
	pthread_rwlock_unlock(&r->lock);
	/* The chunks of the cursor's segment before it are gone: what is
	 * appended next goes to the next segment, whose scan at the next
	 * open starts at a chunk rather than at zeroes. */
	if (cut < seg_base(r, r->cur_seg) + r->cur_off)
		r->cur_off = r->segment_size;
	ret = posix_fallocate(r->fd, 0, (off_t)want);
	if (ret) {
		fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S,
				   "%s was truncated to %" PRIu64
				   " bytes while recording and its %" PRIu64
				   " bytes cannot be allocated again: %s",
				   r->path, cut, want, strerror(ret));
		return -ret;
	}
	ret = cut < FR_RING_SB_LEN ? sb_write_again(r, 0) : 0;
	if (ret == 0 && r->sb_copy)
		ret = sb_write_again(r, r->file_size);
	if (ret == 0)
		ret = ring_fdatasync(r);
	if (ret < 0)
		return ret;
	fr_log_warn("%s was truncated to %" PRIu64 " bytes while recording; its size of %" PRIu64
		    " bytes is restored, allocated (%zu chunks past the cut are lost)",
		    r->path, cut, want, lost);
	return 0;
}
