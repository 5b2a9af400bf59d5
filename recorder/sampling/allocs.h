/* Allocation samples: the rings of the processes that loaded libflightrec
 * (lib/flightrec/alloc_abi.h), mapped from the process's own memfd and
 * drained by the ingest thread into samples of FR_EVENT_ALLOC, the frees
 * of sampled blocks (FR_EVENT_ALLOC_FREE) and, every FR_HEAP_SNAPSHOT_NS,
 * the live sampled blocks (FR_EVENT_HEAP_LIVE). Another user's process
 * writes the ring at will: every record is copied out before it is
 * checked (recorder/sampling/alloc_rec.h), a record that never completes
 * is skipped after a second, the work per drain is bounded, the sample's
 * process is the one whose descriptor was mapped, never what the ring
 * says, and the live blocks are bounded (recorder/sampling/alloc_live.h).
 *
 * fr_allocs_map() runs on the labels' look-up worker (any thread); the
 * rest is the ingest thread's, but fr_allocs_stats() and
 * fr_allocs_memory() (any thread).
 */
#ifndef FR_RECORDER_ALLOCS_H
#define FR_RECORDER_ALLOCS_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/chunk.h"
#include "recorder/sampling/perf.h"

/* Rings mapped at most, and their bytes. */
#define FR_ALLOCS_RINGS_MAX 256u
#define FR_ALLOCS_MAPPED_MAX (256ull << 20)
/* While a ring is mapped, it is drained at least this often; this often
 * while one filled an eighth between two drains (a busy allocator's 2 MiB
 * ring takes 8 KiB samples by the thousand a second). */
#define FR_ALLOCS_DRAIN_MS 100
#define FR_ALLOCS_BUSY_MS 10

struct fr_allocs;

/* A ring found in a process and mapped (fr_allocs_map), to hand to
 * fr_allocs_adopt (which owns it then) or fr_allocs_found_release. */
struct fr_alloc_found {
	uint32_t pid;
	int pidfd; /* the process, so an exit or a pid reused is known */
	void *map;
	size_t map_len;
	uint64_t ring_id;
	uint64_t lib_start, lib_end; /* the library's executable mapping */
};

/* Maps the ring the registry `reg_bytes` (`reg_len` bytes read from
 * process `pid`, not trusted) names: pidfd_open, pidfd_getfd of its
 * ring_fd (which opens nothing), a regular file sealed against shrinking
 * and growing, of the registry's size, its data a power of two within
 * the ABI's bounds, mapped shared, its header's magic, version, sizes and
 * ring_id the registry's, the process still alive. Returns 0 with *out;
 * -ENOENT (sampling off or failed in the process: nothing to do);
 * -EAGAIN (the ring is not made yet: look again); else -errno with *why,
 * a static sentence for the log and status. Any thread. */
int fr_allocs_map(uint32_t pid, const void *reg_bytes, size_t reg_len, struct fr_alloc_found *out,
		  const char **why);
void fr_allocs_found_release(struct fr_alloc_found *f);

/* `ops` (the tracker's) tells a thread's process; samples go to
 * h->sample, stacks are unwound with h's unwind_find and labels
 * interned with h->labels (both borrowed). NULL when out of memory. */
struct fr_allocs *fr_allocs_new(const struct fr_chunk_meta_ops *ops,
				const struct fr_perf_handler *h);
void fr_allocs_free(struct fr_allocs *a);

/* Takes the ring of *f (owned from now on, also on failure). Returns 0;
 * -EAGAIN when another process's mapped ring has its ring_id (a child
 * just forked: look again); -ENOSPC beyond FR_ALLOCS_RINGS_MAX or
 * FR_ALLOCS_MAPPED_MAX; -EBUSY when another live recorder reads it (its
 * pid in the header's reader_pid, which this one takes when it is 0 or
 * the pid of one gone, and gives back when it drops the ring). A ring already mapped for the
 * pid (an exec missed) is ended first. */
int fr_allocs_adopt(struct fr_allocs *a, struct fr_alloc_found *f);

/* A process whose ring is refused: counted, said once in the log, the
 * last one in status. */
void fr_allocs_refused(struct fr_allocs *a, uint32_t pid, const char *why);

/* The pids of the processes whose rings are mapped, at most `max` of them
 * into `out`; returns how many. Ingest thread. */
uint32_t fr_allocs_pids(const struct fr_allocs *a, uint32_t *out, uint32_t max);

/* Whether `pid` has a ring mapped. */
int fr_allocs_mapped(const struct fr_allocs *a, uint32_t pid);

/* The sampling mean every ring is asked for (bytes). 0: nobody records
 * alloc: the rings are still read (and their records dropped) so that
 * they never fill, asked for the coarsest mean (FR_ALLOC_MEAN_MAX), and
 * the live blocks are forgotten. Ingest thread. */
void fr_allocs_set_mean(struct fr_allocs *a, uint64_t mean);

/* Reads every ring (bounded work each) into samples; `clock_offset`
 * makes monotonic times Unix ones. */
void fr_allocs_drain(struct fr_allocs *a, int64_t clock_offset);

/* Process `pid` exited or exec'd at `time_ns` (Unix): its ring is read
 * one last time and dropped, its live blocks freed at that time. Returns 1
 * when it had a ring (its last samples and frees are in the chunk being
 * built), else 0. */
int fr_allocs_gone(struct fr_allocs *a, int64_t clock_offset, uint32_t pid, int64_t time_ns);

/* The main thread of `pid` exited at `time_ns` (Unix): the time its
 * blocks are freed at, once its pidfd says the process ended (a leader
 * may exit before its other threads). */
void fr_allocs_exited(struct fr_allocs *a, uint32_t pid, int64_t time_ns);

/* Before a periodic seal: rings of processes that ended (their pidfd) are
 * dropped, and when a snapshot is due (every FR_HEAP_SNAPSHOT_NS of Unix
 * time) every live block goes into h's samples as FR_EVENT_HEAP_LIVE. */
void fr_allocs_seal(struct fr_allocs *a, int64_t clock_offset);

/* How long the ingest thread may sleep (ms; -1: no ring is mapped). */
int fr_allocs_timeout_ms(const struct fr_allocs *a);

struct fr_allocs_stats {
	uint32_t procs;	  /* rings mapped now */
	uint64_t refused; /* processes whose ring was refused */
	char last_refusal[160];
	uint64_t samples, frees_matched, frees_unmatched;
	uint64_t live_blocks, evicted;
	/* The libraries' losses (samples, frees, untracked blocks), from
	 * the headers of the rings mapped now and of those dropped. */
	uint64_t lib_dropped;
	/* Of those, the frees of sampled blocks: frees with no room and
	 * blocks not tracked (live in the heap profile for good). */
	uint64_t lib_frees_lost;
	uint64_t skipped_bytes; /* records that never completed */
	uint64_t bad_records;
	uint64_t mean; /* what the rings are asked for */
};
void fr_allocs_stats(struct fr_allocs *a, struct fr_allocs_stats *out);

/* The bytes the live table holds; any thread. */
uint64_t fr_allocs_memory(const struct fr_allocs *a);

#endif
