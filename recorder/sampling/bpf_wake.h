/* The wakeup and runqueue events of the off-CPU eBPF mechanism
 * (recorder/sampling/bpf_offcpu.c): the program's wake records into
 * FR_EVENT_WAKEUP samples, held until the woken thread's wait record
 * brings its labels (recorder/sampling/wake_join.h), their interrupt-context
 * notes (recorder/sampling/wake_class.h), and the FR_EVENT_RUNQUEUE samples
 * of the wait records. Owned by the ingest thread (counters: relaxed
 * atomics, read from any thread).
 */
#ifndef FR_RECORDER_BPF_WAKE_H
#define FR_RECORDER_BPF_WAKE_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/bpf/offcpu_bpf.h"
#include "recorder/sampling/perf.h"

/* Wakes held for their wait at most this long, and at most this many. */
#define FR_BPF_WAKE_HOLD_NS 2000000000ull
#define FR_BPF_WAKE_HOLD_MAX 1024u

struct fr_bpf_wakes;

struct fr_bpf_wake_counts {
	uint64_t wakes;	      /* wakeup samples made */
	uint64_t irq;	      /* of them, wakes from interrupt context */
	uint64_t joined;      /* joined to the woken thread's wait (its labels) */
	uint64_t unjoined;    /* sent without (its wait never came, or no room) */
	uint64_t runqueue;    /* runqueue samples of long delays */
	uint64_t rq_short;    /* runqueue samples of short delays added up */
	uint64_t bad_records; /* records too short for what they say */
	uint64_t elsewhere;   /* wakes by a thread of another process */
};

/* extra: FR_PERF_OFFCPU_WAKEUP | FR_PERF_OFFCPU_RUNQUEUE, the events
 * made; min_wait_ns: the shortest delay a runqueue sample of its own
 * has. NULL without memory. */
struct fr_bpf_wakes *fr_bpf_wakes_new(uint32_t extra, uint64_t min_wait_ns, uint32_t stack_copy);
void fr_bpf_wakes_free(struct fr_bpf_wakes *w);

/* One wake record (size bytes from the ring buffer), its user stack
 * unwound with h and `unwind`: held for its wait, or sent at once. */
void fr_bpf_wakes_record(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
			 struct fr_perf_unwind_stats *unwind, int64_t clock_offset,
			 const void *data, size_t size);

/* A wait record of thread s->tid was made into sample *s (its stack, its
 * labels in s->app_ref): sends the wake held for it with its labels, and
 * the runqueue sample(s) the record holds. */
void fr_bpf_wakes_wait(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
		       const struct fr_bpf_wait_head *head, const struct fr_sample *s);

/* After a drain: sends the wakes held longer than FR_BPF_WAKE_HOLD_NS as
 * of now_mono, without the woken thread's labels. */
void fr_bpf_wakes_expire(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
			 uint64_t now_mono);

void fr_bpf_wakes_counts(const struct fr_bpf_wakes *w, struct fr_bpf_wake_counts *out);

#endif
