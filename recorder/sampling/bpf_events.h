/* The black box's events by an eBPF program (recorder/bpf/events.bpf.c):
 * every exec, process exit and crash of the machine, recorded always
 * (not by a session), as FR_EVENT_EXEC, FR_EVENT_EXIT and FR_EVENT_CRASH
 * samples (core/store/sample.h says what each carries). Their fields go
 * as application labels, the recorder's own (fr_labelsets_plus):
 *   exec   path, ppid, old_pid (when the caller of execve was not the
 *          leader)
 *   exit   exit_code (0..255) or signal ("SIGKILL") and core ("1"),
 *          cpu_ns; weight = the lifetime in ns
 *   crash  signal ("SIGSEGV"), code ("SEGV_MAPERR", or the number), addr
 *          ("0x10", for the signals that carry one); on the crashing
 *          thread's own application labels; its stack: kernel frames,
 *          then the user stack copy unwound with CFI (the handler's
 *          unwind_find, as the off-CPU waits' copies)
 *
 * Owned by the ingest thread, but fr_bpf_events_stats (any thread).
 */
#ifndef FR_RECORDER_BPF_EVENTS_H
#define FR_RECORDER_BPF_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/chunk.h"
#include "recorder/bpf/events_bpf.h"
#include "recorder/sampling/perf.h"

struct fr_bpf_events;

/* A record decoded (fr_bpf_event_decode): pointers into the record. */
struct fr_bpf_event {
	uint32_t event; /* FR_EVENT_EXEC, FR_EVENT_EXIT or FR_EVENT_CRASH */
	uint32_t pid, tid, cpu;
	uint64_t time_mono; /* CLOCK_MONOTONIC ns */
	char comm[17];
	/* exec */
	uint32_t ppid, old_pid;
	char path[FR_BPF_EV_PATH_MAX];
	/* exit: exited (status 0..255), else killed by signal (core: it
	 * dumped core) */
	int exited, status, core;
	uint64_t lifetime_ns, cpu_ns;
	/* exit when killed: who sent the signal (has_sender: the process
	 * sender_pid of real uid sender_uid, named sender_comm), or the
	 * kernel (sender_kernel); neither when it is not known */
	int has_sender, sender_kernel;
	uint32_t sender_pid, sender_uid;
	char sender_comm[17];
	/* exit (when killed) and crash */
	int signal;
	/* crash */
	int code, has_addr, has_regs;
	uint64_t addr;
	uint64_t ip, sp, bp;
	uint32_t nr_kernel; /* kips[0..nr_kernel) */
	const uint64_t *kips;
	uint32_t nr_user; /* bytes of stack */
	const uint8_t *stack;
	const struct fr_bpf_labels_rec *labels; /* NULL: none read */
};

/* Decodes one ring buffer record of `size` bytes (the program loaded
 * with `stack_copy`): every length and count is checked against the
 * record, never trusted. Returns 0, or -EINVAL for a record that is not
 * one of the three or does not hold what it says. */
int fr_bpf_event_decode(const void *data, size_t size, uint32_t stack_copy,
			struct fr_bpf_event *out);

/* "SIGSEGV" for 11, NULL for a number that is not a signal of Linux. */
const char *fr_signal_name(int sig);

/* The name of si_code `code` of signal `sig`: "SEGV_MAPERR",
 * "BUS_ADRALN", "ILL_ILLOPC", "FPE_INTDIV", "SI_USER", "SI_TKILL", ...;
 * NULL when it has none here. */
const char *fr_si_code_name(int sig, int code);

/* The application labels of event `ev` (its fields, see above): at most
 * FR_BPF_EVENT_LABELS pairs into out[], whose values are in `buf`.
 * Returns how many. */
#define FR_BPF_EVENT_LABELS 6
struct fr_bpf_event_labels {
	struct fr_app_label pairs[FR_BPF_EVENT_LABELS];
	char values[FR_BPF_EVENT_LABELS][FR_BPF_EV_PATH_MAX];
};
uint32_t fr_bpf_event_labels(const struct fr_bpf_event *ev, struct fr_bpf_event_labels *out);

/* Loads and attaches the program; the crashes of the processes in
 * `labels_map_fd` (the application labels program's map; -1: none) carry
 * their thread's labels. Returns 0, or -errno with the reason in `err`. */
int fr_bpf_events_open(struct fr_bpf_events **out, int labels_map_fd, char *err, size_t errlen);

/* The descriptor that polls readable when a drain is wanted. */
int fr_bpf_events_fd(const struct fr_bpf_events *b);

/* Hands every record to h->blackbox (or h->sample without it) as a
 * sample with its labels, crash stacks unwound with h->unwind_find; the
 * records the program had no room for since the last drain, and those
 * refused by the decoding (counted in bad_records too), go to h->lost by
 * event. Returns the records. */
uint64_t fr_bpf_events_drain(struct fr_bpf_events *b, const struct fr_perf_handler *h,
			     int64_t clock_offset);

/* Counters since open, by event (index event - FR_EVENT_EXEC). */
struct fr_bpf_events_stats {
	uint64_t sent[FR_BPF_EV_KINDS], drops[FR_BPF_EV_KINDS];
	uint64_t bad_records, copy_short;
};
void fr_bpf_events_stats(const struct fr_bpf_events *b, struct fr_bpf_events_stats *out);

/* Detaches and frees; accepts NULL. */
void fr_bpf_events_close(struct fr_bpf_events *b);

#endif
