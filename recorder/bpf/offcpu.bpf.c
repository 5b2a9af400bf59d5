// SPDX-License-Identifier: GPL-2.0
/* The off-CPU eBPF program: measures every wait of every thread at the
 * scheduler, takes stacks only for the long ones.
 *
 * tp_btf/sched_switch  the thread leaving notes when (task storage); the
 *                      thread coming in adds its wait: a wait of at least
 *                      min_wait takes the kernel stack it blocked on and
 *                      is left pending, a shorter one is added to the
 *                      thread's running total (flushed as one SHORT record
 *                      at SHORT_FLUSH_NS of waits or SHORT_FLUSH_AGE_NS
 *                      after the last flush).
 * task work            (on_switch_tw, where the kernel has the BPF task-work
 *                      kfunc, Linux 6.18 or later) a long wait of a user
 *                      thread schedules a callback run by that thread when
 *                      it next returns to user space: it takes the user
 *                      stack there, where the thread blocked, whether in a
 *                      system call, a page fault or preempted, and emits
 *                      the wait. No program runs at system calls then.
 * tp_btf/sys_exit      (on_switch and on_sys_exit, the fallback where the
 *                      kfunc is missing) a pending wait takes the user
 *                      stack at the return of the system call it blocked
 *                      in, and is emitted.
 *                      A wait that was not in a system call has no user
 *                      stack: a preemption is emitted at once, a page fault
 *                      (or another way into the kernel) is told apart by
 *                      its user IP (the kernel entry's, kept at the
 *                      switch-in) differing from the system call's, here or
 *                      at the thread's next switch-out. No program at
 *                      sys_enter: every system call program costs every
 *                      system call of the machine (docs/performance.md).
 * tp_btf/sched_waking (on_waking, recorder/bpf/offcpu_wake.h; loaded when
 *                      wakeup or runqueue is asked) a blocked thread's first
 *                      wake stamps when it became runnable and, for a wait of
 *                      at least min_wait, sends the waker's stacks (struct
 *                      fr_bpf_wake). The wait's record then carries its
 *                      runnable time and the comm of the task it took the
 *                      CPU from; short run-queue delays are summed into the
 *                      SHORT record.
 * tp_btf/sched_process_exit  a thread's pending wait and short total go,
 *                      and its task-work slot.
 * iter/task            at each seal, the threads switched out for at least
 *                      min_wait now (the open waits), blocked or runnable.
 *
 * The user stack of a long wait is, with stack_copy set by the loader (the
 * default), the user registers and a copy of stack_copy bytes of the user
 * stack from sp, taken where the thread runs on its way back (task work,
 * or the return of its system call): the recorder unwinds it with the
 * binaries' CFI as it does CPU samples, so the caller of libc's system
 * call wrapper and every function of a program built without frame
 * pointers are on it. The copy is bpf_probe_read_user: it never sleeps,
 * and a page not in memory (or a user's userfaultfd region) only cuts it
 * short. Without stack_copy, the kernel's frame-pointer walk.
 *
 * Nothing is lost in silence: a wait the ring buffer has no room for (or
 * no storage) is counted in the per-CPU `counters` (drops, dropped_ns),
 * which the recorder reads at each drain and adds to the offcpu event's
 * lost; a labels record with no room (label_drops) leaves its wait without
 * labels.
 *
 * Kernel structures are read with CO-RE: only the fields used are
 * declared (preserve_access_index), so no generated vmlinux.h is needed.
 * Records: recorder/bpf/offcpu_bpf.h. Loaded by recorder/sampling/bpf_offcpu.c.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "recorder/bpf/offcpu_bpf.h"
#include "recorder/bpf/labels_bpf.h"

struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	unsigned int flags;
	int exit_state;
	unsigned int __state;
	struct thread_struct thread;
	char comm[16];
} __attribute__((preserve_access_index));

/* Before Linux 5.14 the state was `long state`. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long bp;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

/* The task-work kfunc as the kernel's BTF declares it: libbpf checks the
 * prototype against it, so the names and the callback's typedef are the
 * kernel's. Weak: where it is missing, only on_switch_tw fails to load and
 * the loader takes the sys_exit variant. */
struct bpf_map {
	int _; /* defined, not declared: libbpf's check tells a forward
		* declaration from the kernel's struct */
} __attribute__((preserve_access_index));
struct bpf_task_work {
	__u64 __opaque;
};
typedef int (*bpf_task_work_callback_t)(struct bpf_map *, void *, void *);
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

#define PF_KTHREAD 0x00200000
/* io_uring and vhost workers: they never return to user space (Linux 6.4+,
 * where this bit was a hole before: only tested by the task-work variant). */
#define PF_USER_WORKER 0x00004000
#define SHORT_FLUSH_NS 10000000ull	 /* 10 ms of short waits */
#define SHORT_FLUSH_AGE_NS 1000000000ull /* or a second since the last flush */

/* Set by the loader before the program is loaded. */
const volatile __u64 min_wait_ns = 1000000;
/* Bytes of user stack copied with a long wait's registers (a multiple of
 * 8, at most FR_BPF_STACK_MAX); 0: the frame-pointer walk instead. Read
 * only: the verifier takes it as the constant it is, so the record's size
 * is fixed at load. */
const volatile __u32 stack_copy = 0;
/* 1: short run-queue delays are summed into the SHORT records (runqueue
 * asked); 0: the records are as without it. */
const volatile __u32 rq_records = 0;
/* 1: the wake program sends wake records (wakeup asked); 0: it stamps
 * runnable_at only (the run-queue delay of woken threads). */
const volatile __u32 wake_records = 0;

#define PAGE 4096u
#define STACK_PAGES (FR_BPF_STACK_MAX / PAGE)

/* Threads with a long wait pending now. The system call program runs at
 * every system call of the machine; while no wait is pending (most of the
 * time) it returns after reading this, without a task storage lookup.
 * A thread's own increment is made on its CPU before it runs again, so it
 * sees it. */
__u64 pending_n;

/* Every thread that ran since the program was loaded (small). */
struct task_state {
	__u64 out; /* switched out at (0: running, or never seen leaving) */
	__u64 short_ns, short_last, short_flushed;
	__u32 short_n, out_cpu;
	__u32 pending;
	__u32 out_preempt; /* left the CPU preempted (still runnable) */
	__u32 tw_armed;	   /* its task work is scheduled and has not run */
	/* Runnable since (left the CPU runnable, or the first wake of its
	 * wait: the first waker wins); 0: blocked, or running. */
	__u64 runnable_at;
	/* Delays from runnable to running under min_wait, added up for the
	 * next SHORT record. */
	__u64 rq_ns;
	__u32 rq_n, _pad;
};

/* A thread whose last long wait waits for its user stack (created at the
 * first long wait; one per such thread). */
struct pending_wait {
	__u64 start, end;
	__u64 uip; /* user IP of the kernel entry it blocked in */
	__u32 cpu, nr_kernel;
	__u32 in_cpu, _pad;
	__u64 runnable_at; /* as fr_bpf_wait_head's */
	char ran_instead[16];
	__u64 kips[FR_BPF_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending_wait);
} pendings SEC(".maps");

/* The task work of each thread with a long wait, by thread ID (a task
 * storage map may not hold one). Kept while the thread lives, deleted at its
 * exit; a thread beyond TW_THREADS gets its long waits without user stacks. */
#define TW_THREADS 32768
struct tw_slot {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TW_THREADS);
	__type(key, int);
	__type(value, struct tw_slot);
} tws SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* set again by the loader */
} waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_counters);
} counters SEC(".maps");

/* The task iterator's record, too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_open);
} open_scratch SEC(".maps");

/* The task's scheduler state (0: TASK_RUNNING). */
static __always_inline unsigned int task_state_of(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static struct fr_bpf_counters *counts(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* No wake-up per record: the recorder drains at least every second; it
 * is woken early only when the ring is half full. */
static __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&waits, BPF_RB_AVAIL_DATA) >
			       bpf_ringbuf_query(&waits, BPF_RB_RING_SIZE) / 2
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/* A wait the recorder will never see: one lost offcpu sample, of `ns`. */
static void count_drop(struct fr_bpf_counters *c, __u64 ns)
{
	if (c) {
		c->drops++;
		c->dropped_ns += ns;
	}
}

/* Sends thread t's short waits as one record. With no room, a thread that
 * goes on keeps them in its total for its next record (not a loss); at
 * its exit (final) they are lost. */
static void emit_short(struct task_struct *t, struct task_state *s, __u64 now, int final)
{
	struct fr_bpf_counters *c = counts();
	struct fr_bpf_wait_head *r;

	s->short_flushed = now;
	if (!s->short_n && !s->rq_n)
		return;
	r = bpf_ringbuf_reserve(&waits, sizeof(*r), 0);
	if (!r) {
		if (final)
			count_drop(c, s->short_ns);
		else if (c)
			c->short_retries++;
		return;
	}
	r->kind = FR_BPF_WAIT_SHORT;
	r->pid = BPF_CORE_READ(t, tgid);
	r->tid = BPF_CORE_READ(t, pid);
	r->cpu = s->out_cpu;
	r->start = 0;
	/* With run-queue delays in it, when the last of them ended (a thread
	 * with only long waits has no short_last: 0 stamped it at boot). */
	r->end = s->rq_n ? now : s->short_last;
	r->total = s->short_ns;
	r->count = s->short_n;
	r->flags = 0;
	r->nr_kernel = 0;
	r->nr_user = 0;
	r->runnable_at = 0;
	r->ran_instead[0] = 0;
	r->rq_total = s->rq_ns;
	r->rq_count = s->rq_n;
	r->in_cpu = r->cpu;
	bpf_ringbuf_submit(r, submit_flags());
	s->short_ns = 0;
	s->short_n = 0;
	s->rq_ns = 0;
	s->rq_n = 0;
	if (c)
		c->short_recs++;
}

#include "recorder/bpf/stack_copy.h"

#include "recorder/bpf/labels_read.h"

/* The current thread t's application labels, when its process is read:
 * sent just before its wait (of the same thread) in the ring buffer. The
 * thread has not run user code since it left the CPU, so they are those
 * it waited with. */
static void emit_labels(struct task_struct *t, __u64 end, struct fr_bpf_counters *c)
{
	__u32 pid = BPF_CORE_READ(t, tgid);
	struct fr_bpf_label_proc *lp = bpf_map_lookup_elem(&label_procs, &pid);
	struct fr_bpf_labels_rec *r;
	__u64 faults = 0, tp;

	if (!lp)
		return;
	r = bpf_ringbuf_reserve(&waits, sizeof(*r), 0);
	if (!r) {
		/* The wait goes on without its labels: not a lost sample. */
		if (c)
			c->label_drops++;
		return;
	}
	r->kind = FR_BPF_LABELS_WAIT;
	r->pid = pid;
	r->tid = BPF_CORE_READ(t, pid);
	r->time = end;
	tp = BPF_CORE_READ(t, thread.fsbase);
	r->fr_len = (__u16)fr_labels_copy(r->fr, tp, lp->fr_off, FR_BPF_LABELS_FR_HEAD, 6,
					  FR_BPF_LABELS_FR_MAX, &faults);
	r->otel_len = (__u16)fr_labels_copy(r->otel, tp, lp->otel_off, FR_BPF_LABELS_OTEL_HEAD, 26,
					    FR_BPF_LABELS_OTEL_MAX, &faults);
	fr_go_copy(r, tp, lp, &faults);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

#include "recorder/bpf/python_walk.h"

/* The current thread t's Python frames, when its process is a CPython
 * one read: sent just before its wait, as its labels are (the frames
 * it waited in: it has not run Python since). */
static void emit_python(struct task_struct *t, __u64 end, struct fr_bpf_counters *c)
{
	__u32 pid = BPF_CORE_READ(t, tgid), size = 0;
	struct fr_bpf_py_proc *pp = bpf_map_lookup_elem(&py_procs, &pid);
	struct fr_bpf_py_rec *r;

	if (!pp)
		return;
	r = fr_py_read(pp, FR_BPF_PY_WAIT, pid, BPF_CORE_READ(t, pid),
		       BPF_CORE_READ(t, thread.fsbase), &size);
	if (!r)
		return;
	r->time = end;
	if (size > sizeof(*r))
		size = sizeof(*r);
	if (bpf_ringbuf_output(&waits, r, size, BPF_RB_NO_WAKEUP))
		fr_py_drop();
}

static void fill_head(struct fr_bpf_wait_head *h, struct task_struct *t,
		      const struct pending_wait *p)
{
	h->kind = FR_BPF_WAIT_LONG;
	h->pid = BPF_CORE_READ(t, tgid);
	h->tid = BPF_CORE_READ(t, pid);
	h->cpu = p->cpu;
	h->start = p->start;
	h->end = p->end;
	h->total = p->end - p->start;
	h->count = 1;
	h->nr_kernel = p->nr_kernel;
	h->flags = 0;
	h->nr_user = 0;
	h->runnable_at = p->runnable_at;
	__builtin_memcpy(h->ran_instead, p->ran_instead, sizeof(h->ran_instead));
	h->rq_total = 0;
	h->rq_count = 0;
	h->in_cpu = p->in_cpu;
}

/* The current thread's pending wait with its user registers and a copy of
 * its user stack (stack_copy set). */
static void emit_copy(struct task_struct *t, const struct pending_wait *p,
		      struct fr_bpf_counters *c)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	struct fr_bpf_wait_copy *r;
	__u32 n;

	emit_labels(t, p->end, c);
	emit_python(t, p->end, c);
	r = bpf_ringbuf_reserve(&waits, sizeof(*r) + stack_copy, 0);
	if (!r) {
		count_drop(c, p->end - p->start);
		return;
	}
	fill_head(&r->h, t, p);
	r->h.flags = FR_BPF_WAIT_COPY;
	bpf_probe_read_kernel(r->kips, sizeof(r->kips), p->kips);
	r->ip = regs ? BPF_CORE_READ(regs, ip) : 0;
	r->sp = regs ? BPF_CORE_READ(regs, sp) : 0;
	r->bp = regs ? BPF_CORE_READ(regs, bp) : 0;
	n = r->sp ? copy_user_stack(r->stack, r->sp) : 0;
	r->h.nr_user = n;
	bpf_ringbuf_submit(r, submit_flags());
	if (c) {
		c->user_stacks++;
		c->copies++;
		if (n < stack_copy)
			c->copy_short++;
	}
}

/* Emits thread t's pending wait; with_user 1: t is current, at the return
 * of its system call (ctx is that tracepoint's); 3: t is current, in its
 * task work on the way back to user space; 0: a user thread whose user
 * stack was not taken (marked so); 2: a kernel thread (none). */
static void emit_long(void *ctx, struct task_struct *t, struct task_state *s, int with_user)
{
	struct fr_bpf_counters *c = counts();
	struct pending_wait *p;
	struct fr_bpf_wait *r;
	long n;

	s->pending = 0;
	__sync_fetch_and_add(&pending_n, -1);
	p = bpf_task_storage_get(&pendings, t, 0, 0);
	if (!p) {
		count_drop(c, 0); /* its time went with its storage */
		return;
	}
	if (stack_copy && (with_user == 1 || with_user == 3)) {
		emit_copy(t, p, c);
		return;
	}
	if (with_user == 1 || with_user == 3) {
		emit_labels(t, p->end, c);
		emit_python(t, p->end, c);
	}
	r = bpf_ringbuf_reserve(&waits, sizeof(*r), 0);
	if (!r) {
		count_drop(c, p->end - p->start);
		return;
	}
	fill_head(&r->h, t, p);
	bpf_probe_read_kernel(r->kips, sizeof(r->kips), p->kips);
	if (with_user == 1) {
		n = bpf_get_stack(ctx, r->uips, sizeof(r->uips), BPF_F_USER_STACK);
		if (n > 0)
			r->h.nr_user = (__u64)n / 8;
	} else if (with_user == 3) {
		n = bpf_get_task_stack(bpf_get_current_task_btf(), r->uips, sizeof(r->uips),
				       BPF_F_USER_STACK);
		if (n > 0)
			r->h.nr_user = (__u64)n / 8;
	} else if (with_user == 0) {
		r->h.flags = FR_BPF_WAIT_NO_USER;
	}
	bpf_ringbuf_submit(r, submit_flags());
	if (c) {
		if (with_user == 1 || with_user == 3)
			c->user_stacks++;
		else if (with_user == 0)
			c->no_user++;
	}
}

/* The user IP saved at thread t's entry into the kernel (0: none). */
static __u64 user_ip(struct task_struct *t)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);

	return regs ? BPF_CORE_READ(regs, ip) : 0;
}

/* Run by a thread on its way back to user space after a long wait: its
 * user stack is where it blocked. */
static int tw_user_stack(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_state *s = bpf_task_storage_get(&states, t, 0, 0);

	if (s) {
		s->tw_armed = 0;
		if (s->pending)
			emit_long(0, t, s, 3);
	}
	return 0;
}

/* Schedules thread t's task work (at most one at a time); 0 when it will
 * not run, and the wait must go without a user stack. */
static __always_inline int tw_arm(struct task_struct *t, struct task_state *s)
{
	struct tw_slot zero = {}, *slot;
	int tid = t->pid;

	if (s->tw_armed)
		return 1;
	bpf_map_update_elem(&tws, &tid, &zero, BPF_NOEXIST);
	slot = bpf_map_lookup_elem(&tws, &tid);
	if (!slot || bpf_task_work_schedule_resume_impl(t, &slot->tw, &tws, tw_user_stack, 0) < 0)
		return 0;
	s->tw_armed = 1;
	return 1;
}

/* Thread `next` comes back after waiting since s->out; tw: its user stack
 * comes from its task work, else from on_sys_exit. */
static __always_inline void switch_in(void *ctx, struct task_struct *prev, struct task_struct *next,
				      struct task_state *s, __u64 now, int tw)
{
	__u64 wait = now - s->out, rq_at = s->runnable_at;
	struct pending_wait *p;
	struct fr_bpf_counters *c;
	long n;

	s->out = 0;
	s->runnable_at = 0;
	/* Its delay from runnable to running: a long one goes with the
	 * long wait's record (the recorder's runqueue sample), a short one
	 * into the thread's total. */
	if (rq_records && rq_at && rq_at <= now && now - rq_at < min_wait_ns) {
		s->rq_ns += now - rq_at;
		s->rq_n++;
	}
	if (wait < min_wait_ns) {
		s->short_ns += wait;
		s->short_n++;
		s->short_last = now;
		if (s->short_ns >= SHORT_FLUSH_NS || s->rq_ns >= SHORT_FLUSH_NS ||
		    now - s->short_flushed >= SHORT_FLUSH_AGE_NS)
			emit_short(next, s, now, 0);
		return;
	}
	/* A thread with long waits only still sends its short delays. */
	if (s->rq_n && (s->rq_ns >= SHORT_FLUSH_NS || now - s->short_flushed >= SHORT_FLUSH_AGE_NS))
		emit_short(next, s, now, 0);
	/* A wait that never got its user stack (two long waits in one
	 * kernel entry) goes now, without one. */
	if (s->pending)
		emit_long(ctx, next, s, 0);
	p = bpf_task_storage_get(&pendings, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p) {
		/* No memory for its pending half: the wait is lost. */
		count_drop(counts(), wait);
		return;
	}
	p->start = now - wait;
	p->end = now;
	p->cpu = s->out_cpu;
	p->runnable_at = rq_at;
	p->in_cpu = bpf_get_smp_processor_id();
	bpf_probe_read_kernel_str(p->ran_instead, sizeof(p->ran_instead), prev->comm);
	n = bpf_get_task_stack(next, p->kips, sizeof(p->kips), 0);
	p->nr_kernel = n > 0 ? (__u64)n / 8 : 0;
	c = counts();
	if (c)
		c->long_waits++;
	s->pending = 1;
	__sync_fetch_and_add(&pending_n, 1);
	/* A kernel thread (and, where task work is, an io_uring or vhost
	 * worker) has no user stack to wait for; without task work, a
	 * preempted thread was not waiting in a system call. */
	if (next->flags & PF_KTHREAD)
		emit_long(ctx, next, s, 2);
	else if (tw && (next->flags & PF_USER_WORKER))
		emit_long(ctx, next, s, 2);
	else if (tw) {
		if (!tw_arm(next, s))
			emit_long(ctx, next, s, 0);
	} else if (s->out_preempt)
		emit_long(ctx, next, s, 0);
	else
		p->uip = user_ip(next);
}

static __always_inline int on_switch_common(void *ctx, _Bool preempt, struct task_struct *prev,
					    struct task_struct *next, int tw)
{
	__u64 now = bpf_ktime_get_ns();
	struct fr_bpf_counters *c;
	struct task_state *s;

	if (prev->pid) {
		s = bpf_task_storage_get(&states, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (s) {
			/* Still pending and in another kernel entry: the
			 * wait was not in a system call (a page fault). */
			if (!tw && s->pending) {
				struct pending_wait *p =
					bpf_task_storage_get(&pendings, prev, 0, 0);

				if (!p || user_ip(prev) != p->uip)
					emit_long(ctx, prev, s, 0);
			}
			s->out = now;
			s->out_cpu = bpf_get_smp_processor_id();
			s->out_preempt = preempt;
			/* Left runnable (preempted, yielded, or woken before it
			 * slept): waiting for a CPU from now; else from its wake. */
			if (rq_records || wake_records)
				s->runnable_at = preempt || !task_state_of(prev) ? now : 0;
		}
		c = counts();
		if (c)
			c->switches++;
	}
	if (next->pid) {
		s = bpf_task_storage_get(&states, next, 0, 0);
		if (s && s->out)
			switch_in(ctx, prev, next, s, now, tw);
	}
	return 0;
}

/* With on_sys_exit, where the kernel has no task-work kfunc. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch_common(ctx, preempt, prev, next, 0);
}

/* Alone: user stacks by task work. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_tw, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch_common(ctx, preempt, prev, next, 1);
}

/* Does nothing: loaded alone (FLIGHTREC_BPF_EMPTY=1, a test knob) to measure
 * what attaching any program to sched_switch costs (tests/bench/offcpu_cost.sh,
 * "cpu+offcpu-bpf-empty"), the floor under on_switch_tw's own cost. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_empty, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *t;
	struct task_state *s;

	if (!pending_n)
		return 0;
	t = bpf_get_current_task_btf();
	s = bpf_task_storage_get(&states, t, 0, 0);
	if (s && s->pending) {
		struct pending_wait *p = bpf_task_storage_get(&pendings, t, 0, 0);

		/* The same kernel entry: the system call it blocked in. */
		emit_long(ctx, t, s, p && p->uip == BPF_CORE_READ(regs, ip) ? 1 : 0);
	}
	return 0;
}

#include "recorder/bpf/offcpu_wake.h"

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *t)
{
	struct task_state *s = bpf_task_storage_get(&states, t, 0, 0);
	int tid = t->pid;

	if (!s)
		return 0;
	/* Its task-work slot, if any (cancelled if it had not run). */
	bpf_map_delete_elem(&tws, &tid);
	if (s->pending)
		emit_long(ctx, t, s, 0);
	emit_short(t, s, bpf_ktime_get_ns(), 1);
	return 0;
}

SEC("iter/task")
int list_open(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct fr_bpf_open *r;
	struct task_state *s;
	__u32 zero = 0;
	struct pt_regs *regs;
	__u64 now;
	long n;

	if (!t || !t->pid || t->exit_state)
		return 0;
	s = bpf_task_storage_get(&states, t, 0, 0);
	if (!s || !s->out)
		return 0;
	now = bpf_ktime_get_ns();
	if (now < s->out || now - s->out < min_wait_ns)
		return 0;
	r = bpf_map_lookup_elem(&open_scratch, &zero);
	if (!r)
		return 0;
	r->pid = t->tgid;
	r->tid = t->pid;
	r->start = s->out;
	r->cpu = s->out_cpu;
	n = bpf_get_task_stack(t, r->kips, sizeof(r->kips), 0);
	r->nr_kernel = n > 0 ? (__u64)n / 8 : 0;
	r->has_regs = 0;
	r->runnable = task_state_of(t) == 0; /* TASK_RUNNING: in the run queue */
	r->ip = r->sp = r->bp = 0;
	r->fsbase = BPF_CORE_READ(t, thread.fsbase);
	if (!(t->flags & PF_KTHREAD)) {
		regs = (struct pt_regs *)bpf_task_pt_regs(t);
		if (regs) {
			r->has_regs = 1;
			r->ip = BPF_CORE_READ(regs, ip);
			r->sp = BPF_CORE_READ(regs, sp);
			r->bp = BPF_CORE_READ(regs, bp);
		}
	}
	bpf_seq_write(ctx->meta->seq, r, sizeof(*r));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
