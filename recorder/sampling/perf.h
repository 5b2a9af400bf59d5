/* perf_event sources: one event opened on every online CPU, its mmap'd
 * rings drained without blocking, records decoded and handed to callbacks.
 *
 * A recorder runs one source per event any consumer asks for, plus one
 * side-band source (fr_perf_open_sideband) that carries the MMAP2, COMM,
 * FORK and EXIT records every profile needs whatever its events.
 *
 * Event kinds (see core/store/sample.h for the ids):
 *   cpu            software cpu-clock, fixed period 1e9/hz ns; weight is
 *                  1e9/hz of the rate set with the last fr_perf_set_hz.
 *   hardware, raw  PERF_TYPE_HARDWARE / PERF_TYPE_RAW in frequency mode
 *                  (sample_freq = hz); weight is the sample's period (the
 *                  events it stands for). precise_ip is tried from 3 down
 *                  on the first CPU; the level it accepts is used on all,
 *                  and with a level above 0 the sample's IP (the precise
 *                  one) is the leaf frame (fr_perf_precise_leaf).
 *   page-faults, context-switches, cpu-migrations
 *                  software, frequency mode like hardware.
 *   oom            tracepoint oom:mark_victim, every kill (fr_perf_open_oom):
 *                  the victim's pid and RSS from the raw fields; always
 *                  recorded, whatever the consumers.
 *   period mode    any of these but offcpu with fr_perf_config.period set:
 *                  a sample every `period` events (ns for cpu); weight is
 *                  the period, exactly; rate_hz 0 (never downsampled).
 *                  fr_perf_hz() of cpu is 1e9/period.
 *   multiplexing   every sampling event is read with its enabled and
 *                  running times at each drain; when the PMU shared the
 *                  counter with others (running < enabled), the weights of
 *                  the samples drained are scaled by enabled/running
 *                  (fr_perf_mux_scale) and counted (fr_perf_pmu_stats).
 *   offcpu         by default by an eBPF program (offcpu_mechanism
 *                  FR_PERF_OFFCPU_BPF, recorder/sampling/bpf_offcpu.h: samples of
 *                  the same shape, stacks only for waits of min_wait or
 *                  more, shorter ones added up on a note frame; user
 *                  stacks unwound from stack copies with CFI when the
 *                  source has a stack_copy; no rings: two descriptors,
 *                  the BPF ring buffer's and the stack walker's). Otherwise
 *                  tracepoint sched:sched_switch, every switch, with the
 *                  callchain of the task switched out. A sample is handed
 *                  over when that thread is switched in again: its stack is
 *                  the one at switch-out, its time the switch-in time, its
 *                  weight the nanoseconds it was switched out, rate_hz 0,
 *                  its cpu the one it left. Threads still switched out are
 *                  not reported; nor are gaps over an hour, exiting threads
 *                  and the idle task. Switch-ins come from the event's
 *                  context-switch records (written by the thread coming
 *                  in; some kernels lose tracepoint records made in the
 *                  idle task). Up to 65536 threads are followed at once;
 *                  beyond that the oldest waiting are dropped and reported
 *                  through the `lost` callback. The rings are drained in
 *                  time order across CPUs so pairs match across CPUs.
 *
 * The only file that calls perf_event_open(2).
 */
#ifndef FR_RECORDER_PERF_H
#define FR_RECORDER_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/chunk.h"
#include "core/unwind/unwind.h"
#include "recorder/bpf/labels_bpf.h"
#include "recorder/bpf/python_bpf.h"

struct fr_bpf_event; /* recorder/sampling/bpf_events.h */

struct fr_perf;

struct fr_perf_config {
	uint32_t event;	     /* event id (core/store/sample.h), raw ids included */
	uint32_t hz;	     /* samples per second per CPU; ignored for offcpu */
	uint32_t stack_copy; /* 0: user stacks from the kernel's frame-pointer
			      * callchain; else bytes of user stack (a multiple
			      * of 8, < 64 KiB) copied at each sample with the
			      * user registers, unwound with the handler's
			      * unwind_find (x86-64 only) */
	uint64_t period;     /* > 0: period mode, a sample every `period`
			      * events (ns for cpu), hz ignored; not offcpu */
	/* offcpu only: FR_PERF_OFFCPU_BPF records waits with an eBPF program
	 * (recorder/sampling/bpf_offcpu.h; with a stack_copy, its long waits' user
	 * stacks are copies unwound as stack copy samples are, else frame
	 * pointers; falls back to the perf mechanism when it cannot load), FR_PERF_OFFCPU_PERF with the
	 * sched_switch tracepoint; and the shortest wait given a stack (bpf). */
	uint32_t offcpu_mechanism;
	uint64_t min_wait_ns;
	/* bpf only: FR_PERF_OFFCPU_WAKEUP and FR_PERF_OFFCPU_RUNQUEUE, the
	 * wakeup and runqueue events recorded with the waits. */
	uint32_t offcpu_extra;
	/* Application labels (recorder/tracking/applabels.h), -1 (or 0) for none: the
	 * program attached to each CPU's event of a rate-sampled source
	 * (PERF_EVENT_IOC_SET_BPF), and the process map the off-CPU eBPF
	 * program reads its threads' labels with. */
	int labels_prog_fd, labels_map_fd;
	int py_procs_fd, py_threads_fd; /* its Python maps, shared the same way */
};

/* What the PMU did with a sampling source: the precise_ip level asked for
 * and accepted (0 for software events), and its multiplexing, summed over
 * CPUs and drains since it opened (read_format TOTAL_TIME_ENABLED and
 * TOTAL_TIME_RUNNING; 0 when the kernel would not say). */
struct fr_perf_pmu_stats {
	uint32_t precise_asked, precise_ip;
	uint64_t enabled_ns, running_ns;
	uint64_t scaled_samples; /* samples whose weight was scaled up */
	uint64_t reads_failed;	 /* drains that could not read the times */
};

/* fr_perf_config.offcpu_mechanism */
enum { FR_PERF_OFFCPU_BPF = 0, FR_PERF_OFFCPU_PERF = 1 };
/* fr_perf_config.offcpu_extra */
enum { FR_PERF_OFFCPU_WAKEUP = 1, FR_PERF_OFFCPU_RUNQUEUE = 2 };

/* How the user stacks of a source's samples were unwound (stack_copy
 * sources); counters only grow. */
struct fr_perf_unwind_stats {
	uint64_t stacks;		    /* samples unwound from a stack copy */
	uint64_t ends[FR_UNWIND_END_COUNT]; /* by how they ended */
	uint64_t no_regs;		    /* samples without user registers (a
					      * kernel thread): kernel frames only */
	uint64_t bad_records;		    /* records shorter than their fields */
};

/* What an offcpu source did with the context switches it saw; counters
 * only grow, but `waiting`, which is the pairing table's size now. */
struct fr_perf_offcpu_stats {
	uint64_t switch_outs; /* sched_switch samples: threads leaving a CPU */
	uint64_t switch_ins;  /* context switch records of threads coming in */
	uint64_t samples;     /* pairs completed: offcpu samples kept */
	uint64_t evicted;     /* switch-outs dropped from a full table */
	uint32_t waiting;     /* threads in the pairing table (either half) */
	uint32_t capacity;    /* the table's entries */
	/* The eBPF mechanism (mechanism FR_PERF_OFFCPU_BPF; switch_outs then
	 * counts every switch, samples every record drained): */
	uint32_t mechanism;
	uint32_t user_stacks_by_task_work; /* 1: by BPF task work, 0: at sys_exit */
	uint64_t min_wait_ns;
	uint64_t long_waits;	    /* waits of at least min_wait */
	uint64_t user_stacks;	    /* of them, emitted with the user stack */
	uint64_t no_user;	    /* emitted without (not in a system call) */
	uint64_t short_records;	    /* records of short waits added up */
	uint64_t drops;		    /* waits lost (no room in the ring buffer, or no
				     * storage): the offcpu event's lost */
	uint64_t dropped_ns;	    /* their off-CPU time */
	uint64_t label_drops;	    /* labels records with no room: waits kept
				     * without labels */
	uint64_t short_retries;	    /* short-wait records with no room, kept for
				     * the thread's next one (not lost) */
	uint64_t open_listed;	    /* open waits listed at seals */
	uint64_t open_runnable;	    /* of them, runnable (waiting for a CPU) */
	uint64_t walks;		    /* their user stacks walked (recorder/sampling/bpf_walk.h) */
	uint64_t walks_dropped;	    /* walks not asked: the walker was behind */
	uint32_t stack_copy;	    /* bytes of user stack copied per long wait (0:
				 * frame pointers) */
	uint64_t copies;	    /* long waits' user stacks copied */
	uint64_t copies_short;	    /* of them cut short (the stack's mapping
				 * ended, a page not in memory) */
	uint64_t walk_copies_short; /* open waits' copies cut short */
	/* wakeup and runqueue (recorder/sampling/bpf_wake.h), when asked: */
	uint32_t extra;		 /* FR_PERF_OFFCPU_WAKEUP | _RUNQUEUE */
	uint64_t wakes;		 /* wakes of long waits sent by the program */
	uint64_t wake_drops;	 /* of them, lost (no room): wakeup's lost */
	uint64_t wakes_irq;	 /* wakeup samples of wakes from interrupt context */
	uint64_t wakes_joined;	 /* sent with the woken thread's labels */
	uint64_t wakes_unjoined; /* sent without (its wait never came) */
	uint64_t rq_samples;	 /* runqueue samples of long delays */
	uint64_t rq_short;	 /* runqueue samples of short delays added up */
};

/* Callbacks for decoded records. Sample times are already converted to
 * Unix nanoseconds. Pointers are borrowed for the duration of the call. */
struct fr_perf_handler {
	void (*sample)(void *arg, const struct fr_sample *s);
	/* time_ns: from the record's sample_id trailer, 0 when it has none. */
	void (*comm)(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec,
		     int64_t time_ns);
	void (*mmap)(void *arg, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		     uint32_t prot, const char *path, const uint8_t *build_id,
		     uint8_t build_id_len);
	void (*fork)(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		     int64_t time_ns);
	void (*exit)(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns);
	void (*lost)(void *arg, uint32_t event, uint64_t lost);
	void (*throttle)(void *arg, uint32_t event);
	/* Optional, with an MMAP2 record that carries the file's inode
	 * instead of a build id: the mapping at `start` of `pid` is of that
	 * inode (dev is makedev(maj, min)). */
	void (*mmap_inode)(void *arg, uint32_t pid, uint64_t start, uint64_t dev, uint64_t ino,
			   uint64_t ino_generation);
	/* stack_copy sources: finds the CFI table of absolute address `addr`
	 * in process `pid`, as fr_unwind_find_fn (core/unwind/unwind.h) says.
	 * NULL: such samples keep their kernel frames and the user IP. */
	const struct fr_cfi_table *(*unwind_find)(void *arg, uint32_t pid, uint64_t addr,
						  uint64_t *vaddr, int *miss);
	/* Optional: the off-CPU eBPF mechanism's copy of a thread's
	 * application labels (recorder/bpf/labels_bpf.h), made with a wait or
	 * read from a blocked thread; returns the set to put in the wait's
	 * sample's app_ref (0: none). */
	uint32_t (*labels)(void *arg, const struct fr_bpf_labels_rec *r);
	/* Optional: the off-CPU eBPF mechanism's Python frames of a thread's
	 * wait (recorder/bpf/python_bpf.h; `size` bytes), sent before it. */
	void (*python)(void *arg, const struct fr_bpf_py_rec *r, size_t size);
	/* Optional: the set of application labels `base` (an app_ref; 0 or
	 * FR_APP_REF_NONE: none) with the pairs extra[0..n) added, the
	 * recorder's own (waker_pid, ran_instead, ...: not filtered as a
	 * program's are). Returns the set (0: none). */
	uint32_t (*labels_plus)(void *arg, uint32_t base, const struct fr_app_label *extra,
				uint32_t n);
	/* Optional: the same for a black-box event's fields, kept apart from
	 * the programs' label sets (fr_applabels_plus_event). NULL:
	 * labels_plus. */
	uint32_t (*labels_event)(void *arg, uint32_t base, const struct fr_app_label *extra,
				 uint32_t n);
	/* Optional: an OOM kill (fr_perf_open_oom's source): `s` is its
	 * FR_EVENT_OOM sample (pid the victim's, weight its RSS in bytes, no
	 * stack), `comm` the victim's name as the kernel gave it ("" when
	 * it gives none). NULL: the sample goes to `sample`. */
	void (*oom)(void *arg, const struct fr_sample *s, const char *comm);
	/* Optional: an event of the black box (recorder/sampling/bpf_events.h):
	 * `s` is its FR_EVENT_EXEC, _EXIT or _CRASH sample, with its labels,
	 * `ev` the record decoded (a crash's signal, address, comm). NULL:
	 * the sample goes to `sample`. */
	void (*blackbox)(void *arg, const struct fr_sample *s, const struct fr_bpf_event *ev);
	/* Optional: an unwind stopped at a table not built yet; returns 1
	 * when tables became ready since (after a short, bounded wait), and
	 * the sample is unwound once more. */
	int (*unwind_wait)(void *arg);
	void *arg;
};

/* Unwinds a copy of a user stack of process `pid` (registers and bytes
 * from their sp) into ips[0..room), leaf first, with cb->unwind_find (and
 * cb->unwind_wait, once, when a table is still being built), and, when it
 * stopped before the outermost frame, a marker frame
 * (FR_FRAME_MARK_ADDR, core/store/sample.h) as the root saying why. The
 * unwind and how it ended are counted in *st (relaxed atomics). Without an
 * unwind_find, or room for fewer than 2 frames, the IP alone. Returns the
 * frames written. For the off-CPU eBPF mechanism's copies as for stack
 * copy samples. */
unsigned fr_perf_unwind_user(struct fr_perf_unwind_stats *st, const struct fr_perf_handler *cb,
			     uint32_t pid, const struct fr_unwind_regs *regs,
			     const struct fr_unwind_stack *stack, uint64_t *ips, unsigned room);

/* Opens `cfg->event` on every online CPU (disabled), with kernel+user
 * callchains and CLOCK_MONOTONIC timestamps (MMAP2, COMM, FORK and EXIT
 * records come from fr_perf_open_sideband).
 * Returns 0, or -errno with a message naming the event (fr_event_format)
 * and the reason in `err`, e.g.
 *   "cycles: hardware counters are not available on this machine
 *    (perf_event_open: ENOENT)" (-ENOENT, -EOPNOTSUPP or -ENODEV),
 *   "offcpu: the sched:sched_switch tracepoint is not available (cannot
 *    read /sys/kernel/tracing/events/sched/sched_switch/id: ENOENT)"
 *    (tracefs not mounted at /sys/kernel/tracing nor under
 *    /sys/kernel/debug/tracing; -EPROTO when its format lacks a field),
 *   "cpu: rate must be 1..1000000 Hz, got 0" (-EINVAL; not for offcpu),
 *   "raw: this event cannot be sampled by this version" (-EOPNOTSUPP). */
int fr_perf_open(struct fr_perf **out, const struct fr_perf_config *cfg, char *err, size_t errlen);

/* Whether `event` could be opened, tried without recording: one
 * disabled counter on CPU 0, no ring, closed at once. Returns 0 (also for
 * offcpu and events that are no perf event: not tried), or -errno with
 * the message fr_perf_open() would give in `err`. */
int fr_perf_can_open(uint32_t event, char *err, size_t errlen);

/* Opens a side-band-only source: a software dummy event on every online
 * CPU that delivers MMAP2 (with build ids where the kernel gives them),
 * COMM, FORK and EXIT records, and LOST when its rings overflow, and no
 * samples. Its event is FR_EVENT_CPU and its rate 0; its LOST records
 * count records of the side band, not samples. Returns 0, or -errno
 * with a message in `err`. */
int fr_perf_open_sideband(struct fr_perf **out, char *err, size_t errlen);

/* Opens the OOM killer's tracepoint oom:mark_victim on every online CPU
 * (disabled), every record sampled: each kill is handed to the handler's
 * `oom` callback as an FR_EVENT_OOM sample (pid the victim's in the
 * initial pid namespace, tid = pid, weight its anon + file + shmem RSS in
 * bytes, 0 on kernels whose tracepoint has no RSS fields, rate 0, no
 * stack). Returns 0, or -errno with a message in `err` ("oom: the
 * oom:mark_victim tracepoint is not available (...)"). */
int fr_perf_open_oom(struct fr_perf **out, char *err, size_t errlen);

/* Starts (or stops) counting on every CPU. Returns 0 or -errno. */
int fr_perf_enable(struct fr_perf *p, int enable);

/* Changes the sampling rate in place (PERF_EVENT_IOC_PERIOD: the period of
 * cpu, the frequency of frequency-mode events). Drain first: samples drained
 * after this call report the new rate. For offcpu and side-band sources it
 * only records the number. Returns 0, -EINVAL for a rate outside
 * 1..1000000 (or above the kernel's perf_event_max_sample_rate in frequency
 * mode), or -errno; the rate is unchanged on failure. */
int fr_perf_set_hz(struct fr_perf *p, uint32_t hz);

/* Current rate. */
uint32_t fr_perf_hz(const struct fr_perf *p);

/* Changes the period of a period-mode source in place
 * (PERF_EVENT_IOC_PERIOD), after a drain as fr_perf_set_hz. Returns 0,
 * -EINVAL for 0 or a source in frequency mode (reopen it), or -errno. */
int fr_perf_set_period(struct fr_perf *p, uint64_t period);

/* The period of a period-mode source; 0 in frequency mode. */
uint64_t fr_perf_period(const struct fr_perf *p);

/* The precise_ip level and multiplexing of `p` (any thread; relaxed
 * atomics). */
void fr_perf_pmu_stats(const struct fr_perf *p, struct fr_perf_pmu_stats *out);

/* `weight` scaled for an event counted `running` of `enabled` ns:
 * weight x enabled / running, rounded down, saturating at UINT64_MAX;
 * `weight` itself when running >= enabled or running is 0 (no time
 * measured: nothing to scale by). */
uint64_t fr_perf_mux_scale(uint64_t weight, uint64_t enabled, uint64_t running);

/* Makes a sample's precise IP its leaf frame. `ips` holds `*nframes`
 * frames (at most `cap`), the first `*nr_kernel` kernel frames, each part
 * leaf first, as the callchain gave them: its leaves are where the
 * interrupt landed, which skids past the instruction that counted.
 * `kernel_ip`: the IP is a kernel address (the record's cpumode). A kernel
 * IP replaces the first kernel frame (or goes first when there is none);
 * a user IP replaces the first user frame (or goes before the user
 * frames) and the kernel frames go, being the skid's (the event happened
 * in user mode). A marker frame (core/store/sample.h) is never replaced.
 * An IP of 0 changes nothing. */
void fr_perf_precise_leaf(uint64_t *ips, uint16_t *nframes, uint16_t *nr_kernel, uint16_t cap,
			  uint64_t ip, int kernel_ip);

/* Number of per-CPU descriptors and the i-th one, for poll(2). */
unsigned fr_perf_nfds(const struct fr_perf *p);
int fr_perf_fd(const struct fr_perf *p, unsigned i);

/* Drains every CPU's ring, calling `h` for each record (callbacks left
 * NULL are skipped). Never blocks, never allocates. `clock_offset`
 * (CLOCK_REALTIME - CLOCK_MONOTONIC) converts sample times. Returns the
 * number of records handled (for offcpu, switch records, not samples). */
uint64_t fr_perf_drain(struct fr_perf *p, const struct fr_perf_handler *h, int64_t clock_offset);

/* For an offcpu source: calls `fn` with an open-wait record
 * (FR_EVENT_OFFCPU_OPEN, see core/store/sample.h) for each thread switched
 * out and not back as of `now_mono` (CLOCK_MONOTONIC ns, at or after the
 * last drain), on the stack it left with. Returns how many; 0 for other
 * sources. Never allocates. */
uint32_t fr_perf_offcpu_open(const struct fr_perf *p, int64_t clock_offset, uint64_t now_mono,
			     void (*fn)(void *arg, const struct fr_sample *s), void *arg);

/* How `p`'s samples were unwound so far (any thread; the counters are
 * read with relaxed atomics). */
void fr_perf_unwind_stats(const struct fr_perf *p, struct fr_perf_unwind_stats *out);

/* What offcpu source `p` did with the switches it saw so far (any thread;
 * read with relaxed atomics); all zero for other sources. */
void fr_perf_offcpu_stats(const struct fr_perf *p, struct fr_perf_offcpu_stats *out);

/* Why an offcpu source asked for the eBPF mechanism records with the perf
 * one instead, or NULL. Valid as long as `p`. */
const char *fr_perf_offcpu_fallback(const struct fr_perf *p);

/* The stack copy `p` was opened with (0: frame pointers). */
uint32_t fr_perf_stack_copy(const struct fr_perf *p);

/* Whether `p`'s rings, sized for the rate it was opened at, are too small
 * for its stack copies at `hz` (a rate raised tenfold by a follower): such
 * a source is reopened rather than retuned. */
int fr_perf_rings_too_small(const struct fr_perf *p, uint32_t hz);

/* Closes every descriptor and unmaps the rings; accepts NULL. */
void fr_perf_close(struct fr_perf *p);

/* CLOCK_REALTIME - CLOCK_MONOTONIC now, in nanoseconds. */
int64_t fr_perf_clock_offset(void);

#endif
