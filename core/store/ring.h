/* The persistent ring: one pre-allocated file that holds the most recent
 * chunks and survives crashes of the daemon and of the host.
 *
 * FILE LAYOUT (all integers little-endian)
 *
 *   offset 0, 4096 bytes: superblock, written once when the file is created
 *   and never again (so no crash can tear it), except to repair it from
 *   its copy (below):
 *     0  u8[16] magic       "FLIGHTREC-RING\0\0"
 *    16  u32 version        FR_RING_VERSION (2); version 1 is read and
 *                           written too (it is version 2 without a journal)
 *    20  u32 sb_len         4096
 *    24  u64 file_size      bytes of the ring: superblock, journal and
 *                           segments (the copy below comes after them)
 *    32  u64 segment_size   bytes per segment (multiple of 4096)
 *    40  u32 nsegments      (file_size - 4096 - journal_size) / segment_size
 *    44  u32 chunk_version  FR_CHUNK_VERSION the writer used at creation;
 *                           rings of chunk version 2 (before sections) are
 *                           read and written on, their new chunks of
 *                           either version (core/store/chunk.h)
 *    48  i64 created_ns     Unix ns
 *    56  u8[16] ring id     random, identifies this ring
 *   version 2:
 *    72  u64 journal_size   bytes of journal (a multiple of 4096; 0: none)
 *    80  u32 sb_crc         crc32c of bytes 0..79
 *   version 1:
 *    72  u32 sb_crc         crc32c of bytes 0..71 (and no journal)
 *    the rest zero.
 *
 *   offset file_size, 4096 bytes: a copy of the superblock, byte for byte,
 *   the last bytes of the file. It is not part of the geometry, so a ring
 *   without it (made before copies existed) has the same layout and format
 *   version, and readers that do not know the copy ignore it. A new ring of
 *   `size` bytes takes the copy out of that size. When the superblock
 *   does not decode (no magic, a checksum or geometry that does not hold,
 *   an unknown version whose checksum does not hold either) the copy is
 *   read instead, if the file's last 4096 bytes decode and describe a
 *   ring that ends exactly where they start. A writable open then rewrites
 *   the superblock from the copy, and gives a ring without a copy one
 *   (past its end, so no byte of the ring changes; not over bytes there
 *   that are neither zeroes nor a superblock).
 *
 *   When neither decodes, the geometry is unknown and the ring cannot be
 *   read (-EUCLEAN). Such a file is told from one that never was a ring by
 *   the ring magic at the start of either superblock, or by an intact chunk
 *   header (magic and header crc) on an 8-byte boundary in its first
 *   32 MiB after offset 4096, where the journal and the first segments of
 *   every ring lie. A recorder moves a damaged ring aside (renamed to
 *   PATH.damaged-YYYYmmddTHHMMSSZ, never over another file) and starts a
 *   new one; any other file is never modified or moved (-EMEDIUMTYPE).

 *   offset 4096: the journal, journal_size bytes (below).
 *
 *   offset 4096 + journal_size + i * segment_size: segment i. A segment
 *   holds chunks (core/store/chunk.h) back to back, each starting at an 8-byte
 *   aligned offset; a chunk never spans segments. After the last chunk
 *   written to a segment comes either zeroes (never written) or older
 *   chunks left from the segment's previous use, whose sequence numbers are
 *   lower.
 *
 * WRITING. Chunks are appended at the write cursor. When the next chunk
 * does not fit in the current segment, the cursor moves to the start of the
 * next segment (wrapping to segment 0), whose chunks are first dropped from
 * the index: the oldest data is overwritten. Writes go through io_uring;
 * the file is fdatasync'ed at most every `sync_interval` (durability bound).
 * The file never grows past its size. Every chunk takes the next sequence
 * number; a merged chunk takes its last part's and "covers" the others'
 * (chunk header), so the numbers of the segments' chunks, covers included,
 * are consecutive.
 *
 * JOURNAL. The recorder seals a chunk every second, so a crash loses at
 * most a second; but a second's chunk repeats the strings, build ids,
 * processes, mappings and stacks of the one before, which at low rates
 * cost more than its samples. So a ring with a journal appends those chunks
 * to the journal, a circular region where each starts 8-byte aligned (at
 * the start again when the next does not fit before its end), and once they
 * form a group (spanning the group time, 10 s by default, or half a
 * segment of raw block, at most 2 MiB, or 64 chunks, or the journal's
 * room) stores the group in a segment as one merged chunk (core/store/merge.h),
 * and then
 * fdatasyncs (unless syncing is off) before the journal reuses the group's
 * space. Chunks that do not agree to merge (an exec, a remapped range) are
 * stored as more than one. Until then the journal's chunks are read like
 * any other: queries and reads see every sample exactly once, in the
 * journal or merged. A journal chunk is current when its sequence number is
 * above every number found in the segments; the others were merged (or
 * erased), and are overwritten as the journal goes round.
 *
 * RECOVERY. Opening scans every segment from its start, accepting chunks
 * whose header and payload crcs are good and whose sequence numbers
 * increase. A damaged chunk whose header is intact is skipped (its length
 * is known) and counted as corrupt; a damaged header is searched past, on
 * 8-byte boundaries, for the next valid one. An all-zero header ends a
 * segment's data (never-written space), unless the sequence numbers found
 * have a hole: then a zeroed page took a header, and those segments are
 * searched past their zeroes too. A hole that remains is a chunk whose
 * header was destroyed, and is counted as corrupt. Then the whole journal is
 * read, and its current chunks (above) become the group being formed: a
 * crash before a group was stored, or while it was, loses none of it (a
 * writer stores that group at its first append). The
 * write cursors, and the numbering, resume after the newest chunks, so a
 * torn write loses at most the chunk that was being written. A file shorter
 * than its superblock says (truncated) is read as far as it goes, and a
 * writable open restores its size. Opening never writes to a file that is
 * not a ring, and never grows a ring past its size and its superblock copy.
 */
#ifndef FR_CORE_RING_H
#define FR_CORE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util/time.h"

#define FR_RING_MAGIC "FLIGHTREC-RING\0\0"
#define FR_RING_VERSION 2
#define FR_RING_SB_LEN 4096
#define FR_RING_MIN_SEGMENT (64 * 1024)

enum fr_ring_flags {
	FR_RING_RDONLY = 1 << 0,  /* open an existing ring read-only (dump) */
	FR_RING_CREATE = 1 << 1,  /* create the file when it does not exist or is empty */
	FR_RING_JOURNAL = 1 << 2, /* with CREATE: give a new ring a journal */
};

/* Group time of a journal unless fr_ring_set_group() says otherwise. */
#define FR_RING_GROUP_NS (10 * FR_NS_PER_S)

struct fr_ring;

/* Opens the ring at `path`.
 *
 * With FR_RING_CREATE, a missing or empty file is created and fully
 * allocated (fallocate) at `size` bytes at most: the superblock, its copy
 * and whole `segment_size` segments; -ENOSPC when the disk cannot hold it. An existing ring keeps its own
 * geometry (size and segment_size are then only checked and a difference
 * is reported in `err` as a note, not an error).
 *
 * With FR_RING_JOURNAL a new ring gets a journal of size / 64, at least two
 * segments and at most 16 MiB, taken from its segments; a ring too small to
 * keep four segments besides gets none.
 *
 * A file that is not a flightrec ring is never modified: -EMEDIUMTYPE.
 * A ring whose superblock is damaged opens through its copy (stats say
 * so); a writable open rewrites the superblock from it. A ring whose
 * superblock and copy are both damaged (FILE LAYOUT) cannot be read:
 * -EUCLEAN, unless FR_RING_CREATE is given and the open is writable: then
 * the file is moved aside (logged with its new name) and a new ring is
 * created in its place.
 * A ring of another format version: -EPROTONOSUPPORT, naming both versions.
 * Bad geometry arguments: -EINVAL (segment_size must be a multiple of 4096
 * from 64 KiB to 2 GiB; `size` is rounded down to whole segments and must
 * hold at least two besides the superblock and its copy). A ring another process has open for writing: -EBUSY.
 * A ring file shorter than its superblock says (truncated) opens: what is
 * left is read, and a writable open allocates the missing tail again
 * (-ENOSPC when it cannot).
 *
 * On success returns 0 and the ring in *out; `err` may hold a note (empty
 * string otherwise). On failure `err` holds a one-line message naming the
 * file and the reason. Close with fr_ring_close(). */
int fr_ring_open(struct fr_ring **out, const char *path, uint64_t size, uint64_t segment_size,
		 unsigned flags, char *err, size_t errlen);

/* Stores the journal's group (merged) and syncs the file if writable, then
 * frees everything; accepts NULL. */
void fr_ring_close(struct fr_ring *r);

/* Sets how often appends fdatasync the file: 0 after every chunk, a
 * negative value never (the page cache decides). Default 1 s. */
void fr_ring_set_sync_interval(struct fr_ring *r, int64_t ns);

/* How long a group of journal chunks may span before it is merged (only
 * the appending thread's appends merge; 0 merges at every append). */
void fr_ring_set_group(struct fr_ring *r, int64_t ns);

/* Largest encoded chunk the ring accepts: a whole segment (chunks start
 * 8-byte aligned and segments are multiples of 4096), at most
 * FR_CHUNK_HEADER_LEN + FR_CHUNK_COMP_MAX. */
size_t fr_ring_max_chunk(const struct fr_ring *r);

/* Appends an encoded chunk (core/store/chunk.h), assigning it the next sequence
 * number (written into `chunk`): to the journal when the ring has one
 * (storing the group merged first when it is due), else to a segment.
 * A file found shorter than the ring (truncated since it opened) first
 * gets its size back, allocated, and its superblocks written again; the
 * chunks past the cut are forgotten and counted as corrupt.
 * Only one thread may append. Returns 0,
 * -EFBIG when the chunk is larger than fr_ring_max_chunk(), -EBADMSG when
 * it is not a valid chunk, -EROFS for a read-only ring, or -errno from the
 * write. */
int fr_ring_append(struct fr_ring *r, void *chunk, size_t len);

/* Retention by age: forgets every chunk whose newest sample is older than
 * `before_ns` (Unix ns), so queries never return it, and erases (zeroes)
 * each segment that holds nothing newer, so the data is gone from the
 * file too; a segment still holding newer chunks is erased once they
 * expire as well. Only the appending thread may call this. Returns the
 * number of chunks forgotten, -EROFS for a read-only ring, or -errno from
 * the erasing write. */
int fr_ring_expire(struct fr_ring *r, int64_t before_ns);

/* fdatasync now. Returns 0 or -errno. */
int fr_ring_sync(struct fr_ring *r);

/* A chunk in the index. */
struct fr_ring_ref {
	uint64_t seq;
	uint64_t offset; /* file offset of the chunk header */
	uint32_t len;	 /* header + payload */
	uint32_t nsamples;
	int64_t first_ns, last_ns;
	uint32_t raw_len;
	uint32_t covers; /* sequence numbers it stands for besides its own */
};

/* The chunks whose [first_ns, last_ns] overlaps [t0, t1), in sequence
 * order (the journal's last), as a malloc'd array the caller frees: a
 * consistent set, every sample once. Thread-safe against the appending
 * thread. Returns 0 (possibly with *n == 0) or -ENOMEM. */
int fr_ring_query(struct fr_ring *r, int64_t t0, int64_t t1, struct fr_ring_ref **refs, size_t *n);

/* Reads and verifies one chunk from the index into a malloc'd buffer the
 * caller frees. Thread-safe. A journal chunk merged since the query still
 * reads while the journal has not gone round over it. Returns 0, -ESTALE
 * when the chunk has been overwritten since the query (the ring wrapped),
 * -EBADMSG when it is
 * damaged (it is then dropped from the index and counted in
 * corrupt_chunks), -EINVAL for a ref that cannot be in this ring, or
 * -errno. */
int fr_ring_read(struct fr_ring *r, const struct fr_ring_ref *ref, void **buf);

/* The samples chunk `ref` says the kernel lost (the sum of its events'
 * lost counters), read and decoded: what `flightrec status` and `dump
 * --info` add up. Returns 0, or -errno as fr_ring_read() or the decoder
 * (*lost is then 0). */
int fr_ring_chunk_lost(struct fr_ring *r, const struct fr_ring_ref *ref, uint64_t *lost);

/* Which superblock a ring was opened with. */
enum fr_ring_sb {
	FR_RING_SB_PRIMARY = 0, /* the one at offset 0 */
	FR_RING_SB_FROM_COPY,	/* the primary is damaged; read through the copy */
	FR_RING_SB_REPAIRED,	/* the primary was damaged; rewritten from the copy */
};

struct fr_ring_stats {
	uint64_t file_size;
	uint64_t segment_size;
	uint32_t nsegments;
	uint32_t segments_used; /* segments holding at least one chunk */
	uint64_t bytes_used;	/* bytes of chunks in the index */
	uint64_t chunks;
	uint64_t samples;
	uint64_t raw_bytes; /* sum of raw_len: for the compression ratio */
	int64_t oldest_ns;  /* 0 when empty */
	int64_t newest_ns;
	uint64_t corrupt_chunks; /* skipped as damaged when opened */
	uint64_t next_seq;
	uint32_t format_version;
	uint64_t journal_size;	  /* 0: no journal */
	uint64_t journal_chunks;  /* current journal chunks (in chunks above) */
	uint64_t journal_bytes;	  /* their bytes (in bytes_used above) */
	uint64_t journal_samples; /* their samples (in samples above) */
	enum fr_ring_sb superblock;
	bool superblock_copy; /* the file holds an intact superblock copy */
};

/* Fills `st`. Thread-safe. */
void fr_ring_get_stats(struct fr_ring *r, struct fr_ring_stats *st);

/* Path the ring was opened with (borrowed). */
const char *fr_ring_path(const struct fr_ring *r);

#endif
