/* Fuzz target for ring recovery (core/store/ring.h): opening a ring file of any
 * content read-only, then querying and reading everything it indexed.
 *
 * The file lives in a memfd, opened through /proc/self/fd, so no disk is
 * touched. The first input byte selects how the rest becomes a file (see
 * tests/fuzz/fuzz.h):
 *
 *   FUZZ_RING_FILE    the bytes are the whole file, superblock included;
 *   FUZZ_RING_LINEAR  a valid superblock for 2 to 4 segments of 64 KiB,
 *                     then the bytes as the segments' contents in order;
 *   FUZZ_RING_SPLIT   the same superblock, and the bytes cut into one
 *                     equal part per segment, each written at the start of
 *                     its segment (so a small input reaches every segment).
 *
 * With FUZZ_RING_FIX_CRC, every chunk magic found on an 8-byte boundary
 * gets its header crc (and payload crc, when the payload fits) recomputed,
 * as does the superblock crc, so mutations reach recovery's logic rather
 * than stopping at a checksum.
 *
 * Besides not crashing or hanging, the ring must keep its promises: a ring
 * with a valid superblock opens whatever its segments hold (a whole-file
 * input may also be read through a superblock copy at its end, or found a
 * ring whose superblocks are both damaged: -EUCLEAN); failures come
 * with a message; the index is in sequence order, its chunks lie inside
 * their segments and never overlap; the statistics add up; every indexed
 * chunk reads back as the chunk the index describes, or is reported
 * damaged and dropped (a file nobody writes to cannot give -ESTALE).
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/crc32c.h"
#include "core/util/log.h"
#include "core/store/ring.h"

static int memfd = -1;
static char memfd_path[64];

static void write_sb(unsigned char *sb, uint32_t nseg, uint64_t journal)
{
	memset(sb, 0, FR_RING_SB_LEN);
	memcpy(sb, FR_RING_MAGIC, 16);
	fr_put_le32(sb + FUZZ_SB_OFF_VERSION, FR_RING_VERSION);
	fr_put_le32(sb + FUZZ_SB_OFF_SB_LEN, FR_RING_SB_LEN);
	fr_put_le64(sb + FUZZ_SB_OFF_FILE_SIZE,
		    FR_RING_SB_LEN + journal + (uint64_t)nseg * FUZZ_RING_SEGMENT);
	fr_put_le64(sb + FUZZ_SB_OFF_JOURNAL, journal);
	fr_put_le64(sb + FUZZ_SB_OFF_SEGMENT_SIZE, FUZZ_RING_SEGMENT);
	fr_put_le32(sb + FUZZ_SB_OFF_NSEGMENTS, nseg);
	fr_put_le32(sb + FUZZ_SB_OFF_CHUNK_VERSION, FR_CHUNK_VERSION);
	fr_put_le64(sb + FUZZ_SB_OFF_CREATED_NS, 1700000000000000000ull);
	memset(sb + FUZZ_SB_OFF_RING_ID, 0x5a, 16);
	fr_put_le32(sb + FUZZ_SB_OFF_CRC, fr_crc32c(0, sb, FUZZ_SB_OFF_CRC));
}

/* Recomputes the crcs of everything that looks like a chunk, last first,
 * so that a chunk whose payload holds another is summed after it. */
static void fix_chunk_crcs(unsigned char *img, size_t len)
{
	size_t off;

	if (len < FR_RING_SB_LEN + FR_CHUNK_HEADER_LEN)
		return;
	off = FR_RING_SB_LEN + (len - FR_RING_SB_LEN - FR_CHUNK_HEADER_LEN) / 8 * 8;
	for (;; off -= 8) {
		unsigned char *p = img + off;

		if (fr_get_le32(p) == FR_CHUNK_MAGIC) {
			uint32_t comp = fr_get_le32(p + FUZZ_CHUNK_OFF_COMP_LEN);

			if (comp <= len - off - FR_CHUNK_HEADER_LEN)
				fr_put_le32(p + FUZZ_CHUNK_OFF_PAYLOAD_CRC,
					    fr_crc32c(0, p + FR_CHUNK_HEADER_LEN, comp));
			fr_put_le32(p + FUZZ_CHUNK_OFF_HEADER_CRC, fr_crc32c(0, p, 60));
		}
		if (off == FR_RING_SB_LEN)
			break;
	}
}

/* Lays the file out as the mode byte asks. Returns a malloc'd image of
 * *len bytes, or NULL. */
static unsigned char *make_file(const uint8_t *data, size_t size, size_t *len, bool *valid_sb)
{
	unsigned mode, layout, nseg;
	unsigned char *img;

	if (size < 1)
		return NULL;
	mode = data[0];
	layout = FUZZ_RING_LAYOUT(mode);
	nseg = FUZZ_RING_NSEG(mode);
	data++;
	size--;

	if (layout == FUZZ_RING_FILE) {
		img = malloc(size ? size : 1);
		if (!img)
			return NULL;
		if (size)
			memcpy(img, data, size);
		*len = size;
		*valid_sb = false;
		if ((mode & FUZZ_RING_FIX_CRC) && size >= FUZZ_SB_OFF_CRC + 4) {
			unsigned at = img[FUZZ_SB_OFF_VERSION] == 1 ? FUZZ_SB_OFF_CRC_V1
								    : FUZZ_SB_OFF_CRC;

			fr_put_le32(img + at, fr_crc32c(0, img, at));
		}
	} else {
		size_t journal = mode & FUZZ_RING_JOURNAL ? 2 * FUZZ_RING_SEGMENT : 0;
		size_t body = journal + (size_t)nseg * FUZZ_RING_SEGMENT;
		unsigned nreg = nseg + (journal ? 1 : 0);

		*len = FR_RING_SB_LEN + body;
		img = calloc(1, *len);
		if (!img)
			return NULL;
		write_sb(img, nseg, journal);
		*valid_sb = true;
		if (layout == FUZZ_RING_LINEAR) {
			memcpy(img + FR_RING_SB_LEN, data, size < body ? size : body);
		} else {
			size_t part = size / nreg;

			if (part > FUZZ_RING_SEGMENT)
				part = FUZZ_RING_SEGMENT;
			for (unsigned i = 0; i < nreg; i++) {
				size_t at = journal && i == 0
						    ? 0
						    : journal + (size_t)(i - (journal ? 1 : 0)) *
									FUZZ_RING_SEGMENT;

				memcpy(img + FR_RING_SB_LEN + at, data + i * part, part);
			}
		}
	}
	if (mode & FUZZ_RING_FIX_CRC)
		fix_chunk_crcs(img, *len);
	return img;
}

static int store(const unsigned char *img, size_t len)
{
	size_t done = 0;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-ring", MFD_CLOEXEC);
		FUZZ_CHECK(memfd >= 0, "memfd_create failed");
		snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	}
	FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate");
	while (done < len) {
		ssize_t n = pwrite(memfd, img + done, len - done, (off_t)done);

		FUZZ_CHECK(n > 0, "pwrite to the memfd");
		done += (size_t)n;
	}
	return 0;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct fr_ring_ref *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The ring's geometry and counts agree with each other. */
static void check_stats(const struct fr_ring_stats *st)
{
	FUZZ_CHECK(st->nsegments >= 2 && st->segment_size >= FR_RING_MIN_SEGMENT &&
			   st->file_size == FR_RING_SB_LEN + st->journal_size +
						    (uint64_t)st->nsegments * st->segment_size,
		   "geometry %u x %llu in %llu bytes", st->nsegments,
		   (unsigned long long)st->segment_size, (unsigned long long)st->file_size);
	FUZZ_CHECK(st->segments_used <= st->nsegments && st->bytes_used <= st->file_size,
		   "%u segments used, %llu bytes used", st->segments_used,
		   (unsigned long long)st->bytes_used);
	FUZZ_CHECK((st->chunks - st->journal_chunks == 0) == (st->segments_used == 0),
		   "%llu chunks (%llu in the journal) in %u segments",
		   (unsigned long long)st->chunks, (unsigned long long)st->journal_chunks,
		   st->segments_used);
	FUZZ_CHECK(st->journal_chunks <= st->chunks && st->journal_bytes <= st->bytes_used &&
			   st->journal_samples <= st->samples &&
			   (st->journal_size || !st->journal_chunks),
		   "journal stats do not add up");
}

/* Each ref in sequence order, inside one segment or the journal, and
 * (when the query gave every chunk) adding up to the stats. */
static void check_refs(const struct fr_ring_ref *refs, size_t n, const struct fr_ring_stats *st)
{
	uint64_t bytes = 0, samples = 0, raw = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fr_ring_ref *ref = &refs[i];
		uint64_t rel = ref->offset - FR_RING_SB_LEN;
		bool journal = rel < st->journal_size;

		FUZZ_CHECK(i == 0 || refs[i - 1].seq < ref->seq - ref->covers,
			   "refs out of sequence order, or covering each other, at %zu", i);
		FUZZ_CHECK(ref->seq < st->next_seq, "seq %llu, next_seq %llu",
			   (unsigned long long)ref->seq, (unsigned long long)st->next_seq);
		FUZZ_CHECK(ref->offset >= FR_RING_SB_LEN && rel % 8 == 0 &&
				   ref->len >= FR_CHUNK_HEADER_LEN &&
				   (journal ? rel + ref->len <= st->journal_size
					    : (rel - st->journal_size) % st->segment_size +
							      ref->len <=
						      st->segment_size) &&
				   ref->offset + ref->len <= st->file_size,
			   "chunk %llu at %llu + %u does not lie inside one segment or the journal",
			   (unsigned long long)ref->seq, (unsigned long long)ref->offset, ref->len);
		FUZZ_CHECK(ref->first_ns <= ref->last_ns, "chunk %llu: time span reversed",
			   (unsigned long long)ref->seq);
		bytes += ref->len;
		samples += ref->nsamples;
		raw += ref->raw_len;
	}
	if (n == st->chunks) {
		FUZZ_CHECK(bytes == st->bytes_used && samples == st->samples &&
				   raw == st->raw_bytes,
			   "stats do not add up: %llu/%llu bytes, %llu/%llu samples",
			   (unsigned long long)bytes, (unsigned long long)st->bytes_used,
			   (unsigned long long)samples, (unsigned long long)st->samples);
	}
}

/* No two chunks share a byte of the file. */
static void check_no_overlap(const struct fr_ring_ref *refs, size_t n)
{
	struct fr_ring_ref *sorted;

	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (sorted) {
		if (n)
			memcpy(sorted, refs, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_offset);
		for (size_t i = 1; i < n; i++)
			FUZZ_CHECK(sorted[i - 1].offset + sorted[i - 1].len <= sorted[i].offset,
				   "chunks %llu and %llu overlap",
				   (unsigned long long)sorted[i - 1].seq,
				   (unsigned long long)sorted[i].seq);
		free(sorted);
	}
}

/* Reads and decodes every chunk, which must match its ref or be found
 * damaged. Returns how many were damaged. */
static size_t read_refs(struct fr_ring *r, const struct fr_ring_ref *refs, size_t n)
{
	size_t nbad = 0;
	int ret;

	for (size_t i = 0; i < n; i++) {
		const struct fr_ring_ref *ref = &refs[i];
		struct fr_chunk_header h;
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		ret = fr_ring_read(r, ref, &buf);
		FUZZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM,
			   "read of chunk %llu returned %d", (unsigned long long)ref->seq, ret);
		FUZZ_CHECK((ret == 0) == (buf != NULL), "read returned %d and %p", ret, buf);
		if (ret == -EBADMSG)
			nbad++;
		if (ret < 0)
			continue;
		FUZZ_CHECK(fr_chunk_verify(buf, ref->len) == 0, "read gave an unverified chunk");
		FUZZ_CHECK(fr_chunk_header_parse(buf, ref->len, &h) == 0, "read: header");
		FUZZ_CHECK(h.seq == ref->seq && h.first_ns == ref->first_ns &&
				   h.last_ns == ref->last_ns && h.nsamples == ref->nsamples &&
				   h.raw_len == ref->raw_len &&
				   FR_CHUNK_HEADER_LEN + (uint64_t)h.comp_len == ref->len,
			   "chunk %llu read back does not match its ref",
			   (unsigned long long)ref->seq);
		ret = fr_chunk_decode(buf, ref->len, &c);
		FUZZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM,
			   "decode of chunk %llu returned %d", (unsigned long long)ref->seq, ret);
		if (ret == 0)
			FUZZ_CHECK(c->nsamples == ref->nsamples && c->hdr.seq == ref->seq,
				   "decoded chunk %llu does not match its ref",
				   (unsigned long long)ref->seq);
		fr_chunk_free(c);
		free(buf);
	}
	return nbad;
}

/* What recovery and the index promise of any ring it opened. */
static void check_ring(struct fr_ring *r)
{
	struct fr_ring_stats st, st2;
	struct fr_ring_ref *refs = NULL;
	size_t n = 0, nbad;
	int ret;

	fr_ring_get_stats(r, &st);
	check_stats(&st);

	ret = fr_ring_query(r, INT64_MIN, INT64_MAX, &refs, &n);
	if (ret == -ENOMEM)
		return;
	FUZZ_CHECK(ret == 0, "query returned %d", ret);
	/* [INT64_MIN, INT64_MAX) leaves out only a chunk starting at INT64_MAX. */
	FUZZ_CHECK(n <= st.chunks, "query gave %zu of %llu chunks", n,
		   (unsigned long long)st.chunks);

	check_refs(refs, n, &st);
	check_no_overlap(refs, n);
	nbad = read_refs(r, refs, n);

	/* Damaged chunks found by reading leave the index and are counted. */
	fr_ring_get_stats(r, &st2);
	FUZZ_CHECK(st2.chunks == st.chunks - nbad && st2.corrupt_chunks == st.corrupt_chunks + nbad,
		   "%zu damaged chunks read: chunks %llu -> %llu, corrupt %llu -> %llu", nbad,
		   (unsigned long long)st.chunks, (unsigned long long)st2.chunks,
		   (unsigned long long)st.corrupt_chunks, (unsigned long long)st2.corrupt_chunks);
	FUZZ_CHECK(st2.next_seq == st.next_seq, "next_seq changed by reading");
	free(refs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_ring *r = NULL;
	unsigned char *img;
	char err[512];
	size_t len = 0;
	bool valid_sb = false;
	int ret;

	/* Damaged rings are expected here; keep the output for real failures. */
	fr_log_level = FR_LOG_ERR;

	img = make_file(data, size, &len, &valid_sb);
	if (!img)
		return 0;
	store(img, len);
	free(img);

	err[0] = 'x';
	ret = fr_ring_open(&r, memfd_path, 0, 0, FR_RING_RDONLY, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || ret == -EMEDIUMTYPE || ret == -EPROTONOSUPPORT || ret == -EUCLEAN ||
			   ret == -EBADMSG || ret == -ENOMEM,
		   "open returned %d (%s)", ret, err);
	FUZZ_CHECK((ret == 0) == (r != NULL), "open returned %d and %p", ret, (void *)r);
	if (ret < 0) {
		FUZZ_CHECK(err[0] != '\0' && !strchr(err, '\n'),
			   "open failed (%d) without a one-line message", ret);
		/* Whatever the segments hold, a valid superblock opens. */
		FUZZ_CHECK(!valid_sb || ret == -ENOMEM,
			   "a ring with a valid superblock failed "
			   "to open: %d (%s)",
			   ret, err);
		return 0;
	}
	check_ring(r);
	fr_ring_close(r);
	return 0;
}
