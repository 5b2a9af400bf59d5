/* Off-CPU by an eBPF program (recorder/bpf/offcpu.bpf.c): loads it,
 * drains its ring buffer into FR_EVENT_OFFCPU samples and lists the open
 * waits with its task iterator.
 *
 * Samples, as the perf mechanism's (recorder/sampling/perf.h) but:
 *  - a wait of at least min_wait is one sample (time = switch-in, weight =
 *    the exact wait) on the kernel stack it blocked on and the user stack
 *    at the return of the system call it blocked in; a wait outside a
 *    system call (a preemption, a page fault) has no user stack, a marker
 *    frame (FR_FRAME_NOTE_NO_USER) says so;
 *  - shorter waits are added up per thread by the program and come as one
 *    sample per thread every 10 ms of waits or second, weighted by their
 *    exact sum, on the single marker frame FR_FRAME_NOTE_SHORT_WAITS: a
 *    profile's off-CPU total stays the measured nanoseconds.
 * With a stack copy (the default), a long wait's user stack is the user
 * registers and a copy of the stack the program took where the thread
 * went back to user space, unwound here with the binaries' CFI (the
 * handler's unwind_find, as stack copy samples), so the caller of a
 * system call wrapper and the functions of programs built without frame
 * pointers are on it.
 * Open waits: the threads switched out at least min_wait ago, their user
 * stacks read from their saved registers on a thread of its own
 * (recorder/sampling/bpf_walk.h) and unwound at the next drain (or walked by frame
 * pointers there without a stack copy): a wait listed for the first time
 * has the user IP alone, its whole stack from the next seal on.
 *
 * Owned by the ingest thread, but fr_bpf_offcpu_stats (any thread).
 */
#ifndef FR_RECORDER_BPF_OFFCPU_H
#define FR_RECORDER_BPF_OFFCPU_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/sampling/perf.h"

struct fr_bpf_offcpu;

/* Routes libbpf's messages to the recorder's log (at debug level, its
 * own debug chatter nowhere), for every program the recorder loads: the
 * caller says why a load failed in one line of its own. */
void fr_bpf_log_to_ours(void);

/* Loads the program (not attached yet: fr_bpf_offcpu_enable), its long
 * waits' user stacks copies of `stack_copy` bytes (a multiple of 8 up to
 * 65528) unwound with CFI, or frame-pointer walks when 0; the waits of
 * the processes in `labels_map_fd` (the application labels program's map,
 * recorder/sampling/bpf_labels.h; -1: none) carry their threads' labels,
 * those of the CPython processes in `py_procs_fd` (its Python map, with
 * `py_threads_fd` its threads' cache) their Python frames. Returns 0, or
 * -errno with the reason in `err` (no BTF, no CAP_BPF, a kernel too old
 * for tp_btf or task storage). */
int fr_bpf_offcpu_open(struct fr_bpf_offcpu **out, uint64_t min_wait_ns, uint32_t stack_copy,
		       uint32_t extra, int labels_map_fd, int py_procs_fd, int py_threads_fd,
		       char *err, size_t errlen);

/* Attaches (or detaches) the programs. Returns 0 or -errno. */
int fr_bpf_offcpu_enable(struct fr_bpf_offcpu *b, int on);

/* The descriptors that poll readable when a drain is wanted: 0, the ring
 * buffer's; 1 (with a stack copy), the stack walker's, whose copies of
 * blocked threads' stacks wait to be unwound. */
unsigned fr_bpf_offcpu_nfds(const struct fr_bpf_offcpu *b);
int fr_bpf_offcpu_fd(const struct fr_bpf_offcpu *b, unsigned i);

/* Hands every record in the ring buffer to h->sample, unwinding stack
 * copies with h->unwind_find, and unwinds the walker's copies of blocked
 * threads' stacks for the next open waits. Returns the records. */
uint64_t fr_bpf_offcpu_drain(struct fr_bpf_offcpu *b, const struct fr_perf_handler *h,
			     int64_t clock_offset);

/* Calls `fn` with an FR_EVENT_OFFCPU_OPEN record (FR_EVENT_OFFCPU_RUNNABLE
 * for a thread in the run queue) stamped `now_mono` for each thread
 * switched out at least min_wait ago. Returns how many. */
uint32_t fr_bpf_offcpu_open_waits(struct fr_bpf_offcpu *b, int64_t clock_offset, uint64_t now_mono,
				  void (*fn)(void *arg, const struct fr_sample *s), void *arg);

/* Adds the counters to `out` (its mechanism fields). */
void fr_bpf_offcpu_stats(const struct fr_bpf_offcpu *b, struct fr_perf_offcpu_stats *out);

/* How the stack copies were unwound (counters since open). */
void fr_bpf_offcpu_unwind_stats(const struct fr_bpf_offcpu *b, struct fr_perf_unwind_stats *out);

/* Detaches and frees; accepts NULL. */
void fr_bpf_offcpu_close(struct fr_bpf_offcpu *b);

/* Losses counted outside perf's rings (the program's per-CPU drop
 * counters), taken at each drain so that the new ones go into the open chunk's `lost` of their event, as a
 * PERF_RECORD_LOST does: the sum over `ncpus` elements of `stride` bytes
 * at `percpu` of the uint64_t at byte `offset` of each, less `*seen` (the
 * sum the last call took), which becomes the new sum. The counters only
 * grow; a sum below *seen (counters that started again) takes 0 and
 * starts from it. Pure: no lock, the caller's thread. */
uint64_t fr_drops_take(uint64_t *seen, const void *percpu, size_t ncpus, size_t stride,
		       size_t offset);

#endif
