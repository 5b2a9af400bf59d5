/* The records the off-CPU eBPF program (recorder/bpf/offcpu.bpf.c) hands
 * to the recorder (recorder/sampling/bpf_offcpu.c): shared by both sides, so only
 * fixed-size types and no libc.
 *
 * On the BPF ring buffer:
 *   struct fr_bpf_wait  one wait of at least min_wait (kind LONG), with the
 *                       kernel stack it blocked on and its user stack, taken
 *                       when it returned to user space (BPF task work) or,
 *                       on kernels without task work and when it was in a
 *                       system call, at the call's return; or the short
 *                       waits of a thread added up (kind SHORT, no stack).
 *                       The user stack is the kernel's frame-pointer walk
 *                       (uips), or, when the program was loaded with a
 *                       stack_copy (the default), a struct fr_bpf_wait_copy
 *                       instead: the user registers and a copy of the user
 *                       stack from sp, which the recorder unwinds with the
 *                       binaries' CFI.
 * From the task iterator (one read of its seq file at each seal):
 *   struct fr_bpf_open  a thread switched out at least min_wait ago and not
 *                       back: its kernel stack and the user registers the
 *                       recorder reads the user stack from; whether it is
 *                       runnable (waiting for a CPU) or blocked.
 */
#ifndef FR_RECORDER_BPF_OFFCPU_BPF_H
#define FR_RECORDER_BPF_OFFCPU_BPF_H

#include <linux/types.h>

/* Frames of each half of a stack, as FR_MAX_FRAMES (core/store/sample.h). */
#define FR_BPF_FRAMES 127

enum fr_bpf_wait_kind {
	FR_BPF_WAIT_LONG = 1,
	FR_BPF_WAIT_SHORT = 2,
	FR_BPF_WAKE = 4, /* a struct fr_bpf_wake (apart from the labels' 3
			  * and Python's 5) */
};

/* The largest stack copy (core/config's "stack_copy" bound). */
#define FR_BPF_STACK_MAX 65528

/* fr_bpf_wait.flags */
#define FR_BPF_WAIT_NO_USER 1u /* user stack not taken (not in a system call) */
#define FR_BPF_WAIT_COPY \
	2u /* a struct fr_bpf_wait_copy: registers and a
				* stack copy of nr_user bytes, not uips */

struct fr_bpf_wait_head {
	__u32 kind;
	__u32 pid, tid;
	__u32 cpu;   /* the CPU it left (LONG) or the last it left (SHORT) */
	__u64 start; /* LONG: switched out (CLOCK_MONOTONIC ns) */
	__u64 end;   /* LONG: switched in; SHORT: the last wait's end */
	__u64 total; /* SHORT: ns of the waits added up; LONG: end - start */
	__u32 count; /* SHORT: how many waits */
	__u32 flags;
	__u32 nr_kernel;
	__u32 nr_user; /* user frames in uips; with FR_BPF_WAIT_COPY, bytes of stack */
	/* LONG: when it became runnable (woken, or switched out preempted;
	 * 0: not known, the wakeup program not attached) and the comm of the
	 * task it took the CPU from at `end`. */
	__u64 runnable_at;
	char ran_instead[16];
	/* SHORT: the delays from runnable to running under min_wait added up
	 * since the last SHORT record (of long waits too), and how many. */
	__u64 rq_total;
	__u32 rq_count;
	__u32 in_cpu; /* LONG: the CPU it got at `end` */
};

struct fr_bpf_wait {
	struct fr_bpf_wait_head h;
	__u64 kips[FR_BPF_FRAMES];
	__u64 uips[FR_BPF_FRAMES];
};

/* A long wait with a copy of its user stack: the record is the
 * `stack_copy` the program was loaded with long (a constant); h.nr_user
 * bytes of `stack` were read from the thread's memory at `sp` (fewer where
 * the stack's mapping ends). */
struct fr_bpf_wait_copy {
	struct fr_bpf_wait_head h;
	__u64 ip, sp, bp; /* the user registers it entered the kernel with */
	__u64 kips[FR_BPF_FRAMES];
	__u8 stack[];
};

/* fr_bpf_wake.flags: what the program knows of the wake's context (the
 * recorder tells interrupt context from the kernel stack). */
#define FR_BPF_WAKE_HARDIRQ 1u
#define FR_BPF_WAKE_SOFTIRQ 2u /* serving a softirq (ksoftirqd too) */
#define FR_BPF_WAKE_NMI 4u
#define FR_BPF_WAKE_COPY 8u	/* regs and nr_user bytes of the waker's stack */
#define FR_BPF_WAKE_KTHREAD 16u /* the waker is a kernel thread */

/* A long wait's first wake (tp_btf/sched_waking), in the waker's context:
 * the woken thread and its wait (start: when it switched out, the key the
 * wait's LONG record is joined by), the waker and its stacks. Kernel
 * frames always; the user registers and stack copy (stack_copy bytes, as
 * a struct fr_bpf_wait_copy's) only for a user thread's wake outside
 * interrupt context. The record is sizeof + stack_copy bytes long. */
struct fr_bpf_wake {
	__u32 kind;	/* FR_BPF_WAKE */
	__u32 pid, tid; /* the woken thread */
	__u32 waker_pid, waker_tid;
	__u32 cpu;   /* the waker's */
	__u64 start; /* the woken thread's wait began (switched out) */
	__u64 time;  /* the wake (CLOCK_MONOTONIC ns) */
	__u32 flags;
	__u32 nr_kernel;
	__u32 nr_user; /* bytes of stack (FR_BPF_WAKE_COPY) */
	char waker_comm[16];
	__u64 ip, sp, bp;
	__u64 kips[FR_BPF_FRAMES];
	__u8 stack[];
};

struct fr_bpf_open {
	__u32 pid, tid;
	__u64 start; /* switched out (CLOCK_MONOTONIC ns) */
	__u32 cpu;
	__u32 nr_kernel;
	__u32 has_regs; /* a user thread: ip, sp, bp are its user registers */
	__u32 runnable; /* in the run queue (preempted, or woken and not on a
			 * CPU yet): waiting for a CPU, not blocked */
	__u64 ip, sp, bp;
	__u64 fsbase; /* its thread pointer: where its application labels are */
	__u64 kips[FR_BPF_FRAMES];
};

/* Per-CPU counters (an array map of one struct per CPU). */
struct fr_bpf_counters {
	__u64 switches;	   /* sched_switch seen (the idle task's excluded) */
	__u64 long_waits;  /* waits of at least min_wait */
	__u64 user_stacks; /* long waits emitted with a user stack */
	__u64 no_user;	   /* long waits emitted without one (not in a syscall) */
	__u64 short_recs;  /* short-wait records emitted */
	/* Waits lost: a LONG record, or a thread's last SHORT one (at its
	 * exit), the ring buffer had no room for, or a long wait with no
	 * storage for its pending half. Each is one lost offcpu sample: the
	 * recorder adds the new ones to the open chunk's lost at each drain. */
	__u64 drops;
	__u64 copies;	  /* user stacks copied (stack_copy) */
	__u64 copy_short; /* of them, cut short: the stack's mapping ended, or a
			   * page was not in memory */
	__u64 dropped_ns; /* the off-CPU time of the waits in `drops` */
	/* Labels records the ring buffer had no room for: their waits were
	 * kept, without labels. */
	__u64 label_drops;
	/* SHORT records with no room that were not lost: the waits stay in
	 * the thread's total and go with its next record. */
	__u64 short_retries;
	/* Wakeups (the sched_waking program): first wakes of long waits sent,
	 * and those the ring buffer had no room for (lost wakeup samples). */
	__u64 wakes;
	__u64 wake_drops;
};

#endif
