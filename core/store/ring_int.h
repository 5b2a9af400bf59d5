/* What the parts of the ring store share (core/store/ring.c: opening, closing
 * and reading; core/store/ring_index.c: the index; core/store/ring_append.c: writing;
 * core/store/ring_sb.c: the superblock and its copy, creating a
 * ring, moving a damaged one aside; core/store/ring_recover.c: finding the
 * chunks of a ring when it is opened). Private to them; the ring's users
 * include core/store/ring.h.
 */
#ifndef FR_CORE_RING_INT_H
#define FR_CORE_RING_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "core/store/chunk.h"
#include "core/util/fs.h"
#include "core/util/le.h"
#include "core/store/ring.h"

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
	struct fr_uring *uring;	 /* NULL: plain pwrite/fdatasync */
	pthread_mutex_t io_lock; /* serializes use of the uring */

	uint64_t file_size;
	uint64_t segment_size;
	uint32_t nsegments;
	uint32_t chunk_version;
	uint32_t version;      /* of the file: 1 or 2 */
	uint64_t journal_size; /* 0: none */
	unsigned char *sb;     /* the superblock in force, FR_RING_SB_LEN bytes;
	                        * kept by a writable ring to write it again
	                        * after a truncation (ring_restore_size()) */
	bool sb_copy;	       /* the file holds an intact copy of it */
	enum fr_ring_sb sb_state;

	/* Appending thread only. */
	uint32_t cur_seg;
	uint64_t cur_off; /* within cur_seg */
	uint64_t next_seq;
	int64_t sync_interval; /* atomic: set from any thread */
	int64_t last_sync_ns;  /* atomic: fr_ring_sync() may run elsewhere */
	int dirty;	       /* atomic */
	uint64_t jcur;	       /* journal write offset, from the journal start */
	int64_t group_ns;      /* atomic */
	int64_t group_start;   /* monotonic time of the group's first chunk */
	bool group_due;	       /* a group found on opening: store it first */
	bool opened;	       /* fr_ring_open() succeeded */

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

static inline bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static inline uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

static inline uint64_t seg_base(const struct fr_ring *r, uint32_t seg)
{
	return FR_RING_SB_LEN + r->journal_size + (uint64_t)seg * r->segment_size;
}

static inline uint32_t seg_of(const struct fr_ring *r, uint64_t offset)
{
	return (uint32_t)((offset - FR_RING_SB_LEN - r->journal_size) / r->segment_size);
}

static inline bool in_journal(const struct fr_ring *r, uint64_t offset)
{
	return offset >= FR_RING_SB_LEN && offset < FR_RING_SB_LEN + r->journal_size;
}

/* Entry i of the index, from its oldest. */
static inline struct fr_ring_ref *ring_idx_at(const struct fr_ring *r, size_t i)
{
	return &r->idx[(r->idx_head + i) % r->idx_cap];
}

/* core/store/ring.c: whole writes and syncs, through the uring when the
 * ring has one (whole reads: fr_pread_full()). */
int ring_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
int ring_write(struct fr_ring *r, const void *buf, size_t len, uint64_t off);
int ring_fdatasync(struct fr_ring *r);

/* core/store/ring_index.c: the index and the journal's group. */
int ring_idx_reserve(struct fr_ring *r, size_t want);
void ring_idx_push(struct fr_ring *r, const struct fr_ring_ref *ref);
void ring_idx_account_drop(struct fr_ring *r, const struct fr_ring_ref *ref);
void ring_idx_drop_segment(struct fr_ring *r, uint32_t seg);
ssize_t ring_idx_find(const struct fr_ring *r, uint64_t seq);
void ring_idx_remove_at(struct fr_ring *r, size_t pos);
struct fr_ring_ref ring_ref_of(const struct fr_chunk_header *h, uint64_t offset);
int ring_jidx_push(struct fr_ring *r, const struct fr_ring_ref *ref);
void ring_jidx_remove_at(struct fr_ring *r, size_t pos);
size_t ring_idx_drop_beyond(struct fr_ring *r, uint64_t cut);

/* core/store/ring_append.c: stores the journal's group as one chunk of the
 * segments and empties the journal. */
int ring_merge_group(struct fr_ring *r);

/* core/store/ring_sb.c */
int ring_check_geometry(const char *path, uint64_t size, uint64_t segment_size, char *err,
			size_t errlen);
uint64_t ring_layout_for(uint64_t size, uint64_t segment_size, bool journal, uint64_t reserved);
int ring_create(struct fr_ring *r, uint64_t size, uint64_t segment_size, bool journal, char *err,
		size_t errlen);
int ring_sb_load(struct fr_ring *r, uint64_t actual_size, char *err, size_t errlen);
void ring_sb_repair(struct fr_ring *r);
void ring_sb_add_copy(struct fr_ring *r, uint64_t actual_size);
int ring_move_aside(struct fr_ring *r, const char *why, char *err, size_t errlen);

/* A writable ring cut short while open (truncated by someone with the
 * rights to) gets its size back, allocated, before the next append, as an
 * open gives it back: appends past the cut would otherwise leave the file
 * sparse (the disk may be full when they land) and a cut superblock would
 * make the next open move the ring aside. The chunks past the cut leave
 * the index (counted as corrupt), the superblock and its copy are written
 * again from memory, and a segment cursor past the cut moves on to the
 * next segment. Appending thread only. Returns 0, or -errno when the
 * allocation or a write fails. */
int ring_restore_size(struct fr_ring *r);

int ring_sb_existing(struct fr_ring *r, uint64_t actual_size, uint64_t size, uint64_t segment_size,
		     char *err, size_t errlen);

/* core/store/ring_recover.c */
int ring_journal_load(struct fr_ring *r, unsigned char **out);
uint64_t ring_journal_next(const struct fr_ring *r, const unsigned char *buf, uint64_t off,
			   struct fr_chunk_header *h);
uint64_t ring_journal_after(uint64_t off, const struct fr_chunk_header *h);
int ring_recover(struct fr_ring *r);

#endif
