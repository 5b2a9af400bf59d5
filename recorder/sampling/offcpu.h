/* The off-CPU pairing table: threads switched out and waiting to be
 * switched in again.
 *
 * An offcpu sample needs two records, a thread's switch-out (with its
 * stack) and its next switch-in, often read from different CPUs' rings
 * and not always in the order they happened. The table keeps whichever
 * half came first, keyed by tid, until the other half completes the pair.
 * It knows nothing of perf_event: recorder/sampling/perf_drain.c decodes the
 * records and hands each half over; a unit test can do the same.
 *
 * Rules (what the drain relies on):
 *  - a pair is believed only when the switch-in is after the switch-out
 *    and at most FR_OFFCPU_MAX_GAP_NS (30 days) later: waits of hours are
 *    real (a reader on a pipe nobody writes) and are kept;
 *  - a switch-in read before its switch-out is remembered (its time only)
 *    and pairs with the first switch-out before it;
 *  - of two halves of the same kind for one thread, the newer one stays
 *    (the other lost its partner);
 *  - an exiting thread's switch-out is never kept;
 *  - when every entry is in use, the oldest of a few consecutive entries
 *    is dropped and counted (fr_offcpu_take_evicted): the table is
 *    bounded, and on overflow the longest waits are the ones forgotten
 *    (their switch-in then pairs with nothing and is not counted);
 *  - the switch-outs still waiting are the threads blocked now, and
 *    fr_offcpu_open_next() lists them (the recorder stores them with
 *    every sealed chunk, see "open waits" in core/store/chunk.h).
 *
 * The table is allocated whole at fr_offcpu_new; nothing else allocates.
 * Not thread-safe: the ingest thread owns it.
 */
#ifndef FR_RECORDER_OFFCPU_H
#define FR_RECORDER_OFFCPU_H

#include <stdint.h>

#include "core/util/time.h"

/* A pair further apart than this is not believed (a clock gone wrong,
 * or a record lost in between a month ago). */
#define FR_OFFCPU_MAX_GAP_NS (30 * 86400 * FR_NS_PER_S)

/* Threads the recorder follows at once: a machine rarely has that many
 * that ran since the recorder started. */
#define FR_OFFCPU_ENTRIES 65536u

struct fr_offcpu;

/* One switch-out: thread `tid` of process `pid` left cpu `cpu` at `time`
 * (CLOCK_MONOTONIC ns) with the stack `ips` (nr_frames frames, the first
 * nr_kernel of them kernel frames). */
struct fr_offcpu_switch {
	uint64_t time;
	uint32_t pid, tid, cpu;
	uint16_t nr_kernel, nr_frames;
	const uint64_t *ips;
};

/* A completed pair: `out` is the switch-out (its stack included), `in_time`
 * when the thread came back. */
struct fr_offcpu_pair {
	struct fr_offcpu_switch out;
	uint64_t in_time;
};

/* Allocates a table for `capacity` threads (a power of two, at least 8;
 * the recorder uses FR_OFFCPU_ENTRIES). Entries are mapped untouched, so
 * memory is used only as they are (about 1 KiB each). Returns 0 with
 * *out set, -EINVAL for a bad capacity or -ENOMEM. */
int fr_offcpu_new(struct fr_offcpu **out, uint32_t capacity);

/* Frees the table; accepts NULL. */
void fr_offcpu_free(struct fr_offcpu *o);

/* Thread sw->tid was switched out; `exiting` when it will never run
 * again. Returns 1 when a switch-in read earlier completes the pair, then
 * filled in `pair` (its pointers stay valid until the next call on the
 * table), else 0 (the switch-out waits, or was not kept). */
int fr_offcpu_switch_out(struct fr_offcpu *o, const struct fr_offcpu_switch *sw, int exiting,
			 struct fr_offcpu_pair *pair);

/* Thread `tid` was switched in at `time`. Returns 1 when it completes the
 * pair of a waiting switch-out, then filled in `pair` (valid until the
 * next call on the table), else 0. */
int fr_offcpu_switch_in(struct fr_offcpu *o, uint32_t tid, uint64_t time,
			struct fr_offcpu_pair *pair);

/* The open waits: threads switched out and not yet back, as switch-outs
 * (pointers valid until the next call on the table). Start with *cursor
 * 0; returns 1 with *out filled in and *cursor advanced, 0 when there are
 * no more. Switch-ins waiting for their switch-out are not listed. */
int fr_offcpu_open_next(const struct fr_offcpu *o, uint32_t *cursor, struct fr_offcpu_switch *out);

/* Threads waiting (either half) now. */
uint32_t fr_offcpu_waiting(const struct fr_offcpu *o);

/* Entries dropped from a full table since the last call (each one a
 * sample lost), and resets the count. */
uint64_t fr_offcpu_take_evicted(struct fr_offcpu *o);

#endif
