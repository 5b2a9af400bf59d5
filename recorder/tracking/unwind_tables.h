/* The machine's CFI tables (core/unwind/cfi.h): one per binary, shared by
 * every process that maps it, built on a thread of their own the first
 * time a sample needs one, and looked up by the ingest thread for every
 * frame it unwinds.
 *
 * A table is keyed by the build id of its file, or, for a file without
 * one, by the mapped inode (device, inode number and generation as an
 * MMAP2 record gives them; a mapping learned from /proc/PID/maps, which
 * has no generation, also by its process and path): a deploy that puts
 * a new binary at the same path never finds the old binary's table. A
 * mapping known by its inode first has the build id read from the mapped
 * file; when it has one, the mapping is linked to that build id's table,
 * so libc mapped by a hundred processes found in /proc is built once.
 *
 * Tables are asked for at a mapping's first sample, or, for a mapping an
 * MMAP2 record announces (a new program, a dlopen), at once
 * (fr_unwind_tables_prefetch()): its table is usually ready before its
 * first samples are drained. The processes found by the initial /proc
 * scan stay lazy: most never run while the daemon lives. A build asked
 * for that way is skipped when its process has exited by its turn.
 *
 * The file is read through the mapped inode (/proc/PID/map_files/START-END),
 * else the path under /proc/PID/root, opened with fr_open_untrusted() and
 * then checked against the key (the build id in the file, or its device
 * and inode); whole, into private memory, at most FR_ELF_MAX_SIZE bytes,
 * on a deadline worker (core/util/worker.h), so a file on a FUSE mount
 * that never answers costs only its own table. The vDSO, which has no
 * file, is built once from the daemon's own: every 64-bit process maps
 * the same kernel image.
 *
 * A table not built yet is a miss that says so (FR_UNWIND_MISS_PENDING);
 * a file that could not be read or has no CFI is remembered as such
 * (FR_UNWIND_MISS_NOCFI), its error logged once. Only the ingest thread
 * looks up, takes finished tables and drops them, so a look-up takes no
 * lock.
 *
 * Fair shares. A table is counted to the user of the process that asked
 * for it first (its exec's MMAP2, or its first sample), and is root's
 * from the moment a process of root's uses it: a table many users share
 * (libc) is root's as soon as root runs anything with it, and a user
 * cannot have a table root needs counted, and evicted, as theirs. Tables
 * are kept within a memory budget: past it, the least recently used
 * table of the owner most over its share is dropped (and built again
 * when needed; core/util/shares.h: root keeps at least a quarter of the
 * budget, users equal shares of the rest), so one user's new binaries
 * push out only that user's tables. Builds wait in one queue per user,
 * served in turn (a table a sample waits for first within its user's
 * queue), so a flood of one user's binaries delays another user's build
 * by at most the one build running; each user may have at most a quarter
 * of FR_UNWIND_TABLES_MAX_PENDING builds waiting, users other than root
 * together three quarters.
 */
#ifndef FR_RECORDER_UNWIND_TABLES_H
#define FR_RECORDER_UNWIND_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "core/unwind/cfi.h"
#include "core/unwind/unwind.h"
#include "core/util/time.h"
#include "recorder/tracking/tracker.h"

/* Bytes all tables together may take by default (a table is ~12 bytes
 * per row: libc ~0.4 MiB, a 50 MB C++ binary some tens of MiB); the
 * daemon gives them a share of limits.memory instead (recorder/ingest/memory.c). */
#define FR_UNWIND_TABLES_BUDGET (256ull << 20)
/* How long reading one file may take before it is given up. */
#define FR_UNWIND_TABLES_READ_DEADLINE_NS (10 * FR_NS_PER_S)
/* Builds waiting beyond this are not asked for (the miss stays PENDING
 * and is asked again by a later sample); prefetches beyond half of it. */
#define FR_UNWIND_TABLES_MAX_PENDING 1024
/* Files known at once (about 150 bytes each, and the table of those that
 * have one). Beyond it, those without a table are forgotten first. */
#ifndef FR_UNWIND_TABLES_MAX_ENTRIES
#define FR_UNWIND_TABLES_MAX_ENTRIES 65536 /* a test builds with fewer */
#endif

struct fr_unwind_tables;

struct fr_unwind_tables_stats {
	uint64_t built;	     /* tables built */
	uint64_t failed;     /* files without usable CFI, or unreadable */
	uint64_t pending;    /* builds waiting or running */
	uint64_t evicted;    /* tables dropped over the budget */
	uint64_t tables;     /* tables held */
	uint64_t bytes;	     /* their memory */
	uint64_t linked;     /* mappings known by inode linked to a build id */
	uint64_t prefetched; /* builds asked for when a mapping appeared */
	uint64_t skipped;    /* of those, not built: the process had exited */
};

/* Starts the builder thread; tables take at most `budget` bytes. Returns
 * NULL on failure. */
struct fr_unwind_tables *fr_unwind_tables_new(uint64_t budget);

/* Changes the budget (a reload, or a memory ceiling the tables share);
 * tables over it are dropped at the next collect. Any thread. */
void fr_unwind_tables_set_budget(struct fr_unwind_tables *u, uint64_t budget);

/* What each owner's tables take: up to `max` owners into `out`, root
 * first, then by bytes, the rest summed in *rest (fr_shares_list(),
 * core/util/shares.h), and the budget in *budget. Returns the number of
 * owners copied. Any thread. */
struct fr_share;
size_t fr_unwind_tables_owners(struct fr_unwind_tables *u, struct fr_share *out, size_t max,
			       struct fr_share *rest, uint64_t *budget);

/* Stops the builder (a file read stuck past its deadline is left to its
 * worker) and frees every table. Accepts NULL. */
void fr_unwind_tables_free(struct fr_unwind_tables *u);

/* Takes the tables built since the last call, and drops the least
 * recently used over the budget. Ingest thread, once per drain. */
void fr_unwind_tables_collect(struct fr_unwind_tables *u);

/* The table of mapping `m` of process `pid` for absolute address `addr`,
 * and the address as a link-time address of the file in *vaddr; or NULL
 * and the reason (enum fr_unwind_miss) in *miss, asking for the table to
 * be built when it is the first time. Ingest thread; never blocks. */
const struct fr_cfi_table *fr_unwind_tables_find(struct fr_unwind_tables *u, uint32_t pid,
						 const struct fr_tracker_map *m, uint64_t addr,
						 uint64_t *vaddr, int *miss);

/* Mapping `m` of process `pid` has just appeared (an MMAP2 record: an
 * exec or a dlopen): asks for its table now, unless it is known, so that
 * it is ready for the mapping's first samples. Ingest thread; never
 * blocks. */
void fr_unwind_tables_prefetch(struct fr_unwind_tables *u, uint32_t pid,
			       const struct fr_tracker_map *m);

/* Waits up to `max_ns` for builds asked for to finish, and takes those
 * that did. Returns 1 when a table (or a failure) was taken, else 0.
 * Ingest thread: a sample whose table is pending is unwound again after
 * it, so that a program's first samples, taken before any table of its
 * binaries existed, are not all truncated (builds take milliseconds). */
int fr_unwind_tables_wait(struct fr_unwind_tables *u, int64_t max_ns);

/* Waits until no build is waiting or running, at most `timeout_ms`, and
 * takes what was built. Ingest thread (or a test). Returns 0 or
 * -ETIMEDOUT. */
int fr_unwind_tables_settle(struct fr_unwind_tables *u, int timeout_ms);

/* The look-ups made so far: a mark of now for fr_unwind_tables_trim_idle.
 * Ingest thread. */
uint64_t fr_unwind_tables_clock(const struct fr_unwind_tables *u);

/* Drops the tables no frame has been looked up in since the mark `since`
 * (taken a minute ago: those of programs gone, or asleep, which build
 * theirs again when they run). Ingest thread. Returns the bytes freed. */
uint64_t fr_unwind_tables_trim_idle(struct fr_unwind_tables *u, uint64_t since);

/* The counters, from any thread. */
void fr_unwind_tables_stats(struct fr_unwind_tables *u, struct fr_unwind_tables_stats *out);

#endif
