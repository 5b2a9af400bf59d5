/* Wakeup samples held for the woken thread's wait record: the waker's
 * context cannot read the woken thread's application labels, the wait's
 * record (sent when that thread returns to user space) carries them, so a
 * wake is kept, by the woken thread and its wait's start, until that
 * record comes or it is too old. Bounded: at most `cap` held; the caller
 * sends a wake the table has no room for at once.
 */
#ifndef FR_RECORDER_WAKE_JOIN_H
#define FR_RECORDER_WAKE_JOIN_H

#include <stdint.h>

#include "core/store/sample.h"

/* One wake held: its sample (s.ips points at ips once taken or expired)
 * and the waker's identity, for its labels. */
struct fr_wake_held {
	uint32_t tid;	  /* the woken thread */
	uint64_t start;	  /* its wait's start (CLOCK_MONOTONIC ns), the key */
	uint64_t held_at; /* CLOCK_MONOTONIC ns it was put in */
	struct fr_sample s;
	uint32_t waker_pid, waker_tid;
	char waker_comm[16];
	uint64_t ips[FR_MAX_FRAMES];
};

struct fr_wake_join;

/* A table of at most `cap` (>= 1) wakes; NULL without memory. */
struct fr_wake_join *fr_wake_join_new(uint32_t cap);
void fr_wake_join_free(struct fr_wake_join *j);

/* Holds a copy of *w (its s.nr_frames frames from w->s.ips). Returns 0,
 * or -ENOSPC when full; a wake of the same key replaces the one held
 * (first wake of a wait: the program sends one). */
int fr_wake_join_put(struct fr_wake_join *j, const struct fr_wake_held *w);

/* Takes out the wake of thread `tid`'s wait that began at `start` into
 * *out (out->s.ips = out->ips). Returns 1, or 0 when none is held. */
int fr_wake_join_take(struct fr_wake_join *j, uint32_t tid, uint64_t start,
		      struct fr_wake_held *out);

/* Takes out, one by one into *out, the wakes held since before `before`:
 * call until it returns 0. */
int fr_wake_join_expire(struct fr_wake_join *j, uint64_t before, struct fr_wake_held *out);

/* Wakes held now. */
uint32_t fr_wake_join_count(const struct fr_wake_join *j);

#endif
