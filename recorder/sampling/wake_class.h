/* What woke a thread from interrupt context, named from the kernel stack
 * of the wake: a timer, a block I/O completion, the network, or else the
 * context itself (another hardware interrupt, another softirq). The
 * kernel functions that tell them apart are looked up once, by name, in
 * /proc/kallsyms (as root: its addresses read as zeros to others, and
 * every wake is then named by its context only). The same ranges tell a
 * memory cgroup's OOM kill from the machine's, and find where a crash's
 * kernel stack leaves the tracing.
 */
#ifndef FR_RECORDER_WAKE_CLASS_H
#define FR_RECORDER_WAKE_CLASS_H

#include <stdint.h>
#include <stdio.h>

struct fr_wake_class;

/* Reads the text symbols of a kallsyms listing ("ADDR TYPE NAME
 * [MODULE]" lines) and keeps the address ranges of the functions that
 * name a class. Lines that do not parse are skipped; at most
 * FR_WAKE_CLASS_SYMS_MAX text symbols are read. Returns NULL only
 * without memory. */
#define FR_WAKE_CLASS_SYMS_MAX (4u << 20)
struct fr_wake_class *fr_wake_class_load(FILE *kallsyms);

/* fr_wake_class_load of /proc/kallsyms; an empty classifier when it
 * cannot be read. NULL only without memory. */
struct fr_wake_class *fr_wake_class_open(void);
void fr_wake_class_free(struct fr_wake_class *c);

/* The classifier of this machine's /proc/kallsyms, read at the first call
 * (a tenth of a second or more: the kernel writes 100,000 lines) and
 * shared by every caller after it; never freed. Its callers (an OOM
 * kill's, a crash's) ask at their first event, not at the recorder's
 * start, where the time would be the first samples' drain's. NULL only
 * without memory. */
const struct fr_wake_class *fr_wake_class_machine(void);

/* Function ranges kept (for tests and logs). */
uint32_t fr_wake_class_ranges(const struct fr_wake_class *c);

/* The note (enum fr_frame_note, FR_FRAME_NOTE_WAKE_*) of a wake from
 * interrupt context with kernel stack kips[0..n) (leaf first): the
 * innermost frame in a known function's range names it; else
 * FR_FRAME_NOTE_WAKE_IRQ when `hardirq`, FR_FRAME_NOTE_WAKE_SOFTIRQ if
 * not. */
unsigned fr_wake_class_note(const struct fr_wake_class *c, const uint64_t *kips, uint32_t n,
			    int hardirq);

/* The context a wake with kernel stack kips[0..n) (leaf first) ran in:
 * the innermost interrupt entry (hardware interrupt, NMI) or softirq loop
 * on it, else FR_WAKE_TASK (a thread's own). The program cannot read the
 * CPU's preempt count where the kernel hides its address from BPF. */
enum { FR_WAKE_TASK = 0, FR_WAKE_HARDIRQ, FR_WAKE_SOFTIRQ };
int fr_wake_class_context(const struct fr_wake_class *c, const uint64_t *kips, uint32_t n);

/* Whether an OOM kill with kernel stack kips[0..n) (the stack of the
 * task that ran the OOM killer, at oom:mark_victim) was a memory
 * cgroup's: one of its frames is in the memory cgroup's charge path
 * (try_charge_memcg, mem_cgroup_out_of_memory,
 * mem_cgroup_oom_synchronize). Else it was the machine's (a page
 * allocation, a fault, sysrq). */
int fr_wake_class_memcg_oom(const struct fr_wake_class *c, const uint64_t *kips, uint32_t n);

/* How many of the innermost frames of a kernel stack taken at
 * signal_deliver (a crash's, leaf first) are the tracing's own (the
 * program, bpf_trace_run*): those before the first in get_signal. 0 when
 * get_signal is not on it. */
uint32_t fr_wake_class_tracing_frames(const struct fr_wake_class *c, const uint64_t *kips,
				      uint32_t n);

#endif
