// SPDX-License-Identifier: GPL-2.0
/* The black box's eBPF program: one record per exec, process exit and
 * crash of the machine, whatever the sessions ask.
 *
 * tp_btf/sched_process_exec  the process, its real parent, the thread that
 *                      called execve, the new comm and the file executed
 *                      (bprm->filename, its first FR_BPF_EV_PATH_MAX - 1
 *                      bytes).
 * tp_btf/sched_process_exit  only for the thread whose exit ends its
 *                      process (signal->live reached 0 before the
 *                      tracepoint): the exit code as wait(2) gives it (the
 *                      group's, signal->group_exit_code, when the process
 *                      exits as a whole: exit_group or a fatal signal;
 *                      else the leader's exit_code, as wait(2) takes it),
 *                      the lifetime from the
 *                      leader's start_time (CLOCK_MONOTONIC, as
 *                      bpf_ktime_get_ns) and the CPU time: the scheduler's
 *                      runtime of the threads already reaped
 *                      (signal->sum_sched_runtime) plus this thread's
 *                      (se.sum_exec_runtime). Scheduler nanoseconds, not the
 *                      tick-sampled utime + stime. A thread of the process
 *                      still between its own exit and its reaping at that
 *                      moment is not counted.
 *                      A process killed by a signal that a process sent
 *                      (or the kernel: SI_KERNEL) says who: the sender
 *                      signal_generate kept for it.
 * tp_btf/signal_generate  a signal whose default action ends the process,
 *                      sent by a process (si_code <= 0: kill, tgkill,
 *                      sigqueue) or by the kernel (SI_KERNEL), and not
 *                      ignored: its sender (the current process, its real
 *                      uid and comm) kept in `senders` (LRU) under the
 *                      target's tgid and the signal, for its exit. Faults
 *                      are the crash records'.
 * tp_btf/signal_deliver  a core-dumping signal (SIGQUIT, SIGILL, SIGTRAP,
 *                      SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU, SIGXFSZ,
 *                      SIGSYS) delivered with its default action, in the
 *                      receiving thread's context: the signal, si_code,
 *                      the fault address for the signals that carry one,
 *                      the kernel stack, the user registers and a copy of
 *                      stack_copy bytes of the user stack from sp (as the
 *                      off-CPU program's waits: the recorder unwinds it
 *                      with the binaries' CFI), and the thread's
 *                      application labels when its process is read
 *                      (label_procs, shared with the labels program).
 *
 * Nothing is lost in silence: a record the ring buffer has no room for is
 * counted in the per-CPU `counters`, which the recorder reads at each
 * drain into the event's lost. Kernel structures are read with CO-RE
 * (only the fields used are declared). Records:
 * recorder/bpf/events_bpf.h. Loaded by recorder/sampling/bpf_events.c.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "recorder/bpf/events_bpf.h"

struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
	unsigned int flags;
	int group_exit_code;
	unsigned long long sum_sched_runtime;
} __attribute__((preserve_access_index));

struct sched_entity {
	unsigned long long sum_exec_runtime;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	unsigned int flags;
	int exit_code;
	unsigned long long start_time;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct signal_struct *signal;
	struct sched_entity se;
	struct thread_struct thread;
	char comm[16];
} __attribute__((preserve_access_index));

struct linux_binprm {
	const char *filename;
} __attribute__((preserve_access_index));

struct kernel_siginfo {
	int si_signo;
	int si_errno;
	int si_code;
	union {
		struct {
			void *_addr;
		} _sigfault;
	} _sifields;
} __attribute__((preserve_access_index));

struct sigaction {
	void *sa_handler;
} __attribute__((preserve_access_index));

struct k_sigaction {
	struct sigaction sa;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long bp;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

#define PF_KTHREAD 0x00200000
#define SIGNAL_GROUP_EXIT 0x00000004

#define SIGKILL 9
#define SIGCHLD 17
#define SIGCONT 18
#define SIGSTOP 19
#define SIGTSTP 20
#define SIGTTIN 21
#define SIGTTOU 22
#define SIGURG 23
#define SIGWINCH 28
#define SI_KERNEL 0x80
#define SIGQUIT 3
#define SIGILL 4
#define SIGTRAP 5
#define SIGABRT 6
#define SIGBUS 7
#define SIGFPE 8
#define SIGSEGV 11
#define SIGXCPU 24
#define SIGXFSZ 25
#define SIGSYS 31

/* Bytes of user stack copied with a crash (a multiple of 8, at most
 * FR_BPF_EV_STACK_MAX): read only, so the record's size is a constant. */
const volatile __u32 stack_copy = 16384;

#define PAGE 4096u
#define STACK_PAGES (FR_BPF_EV_STACK_MAX / PAGE)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_ev_counters);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct fr_bpf_ev_sender);
} senders SEC(".maps");

#include "recorder/bpf/labels_read.h"

static __always_inline struct fr_bpf_ev_counters *counts(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* Exec and exit records wake the recorder only when the ring is half
 * full (it drains at least every second); a crash at once. */
static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >
			       bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

static __always_inline void count(__u32 kind, int sent)
{
	struct fr_bpf_ev_counters *c = counts();
	__u32 i = kind - FR_BPF_EV_EXEC;

	if (!c || i >= FR_BPF_EV_KINDS)
		return;
	if (sent)
		c->sent[i]++;
	else
		c->drops[i]++;
}

static __always_inline void fill_head(struct fr_bpf_ev_head *h, __u32 kind, struct task_struct *t)
{
	h->kind = kind;
	h->pid = BPF_CORE_READ(t, tgid);
	h->tid = BPF_CORE_READ(t, pid);
	h->cpu = bpf_get_smp_processor_id();
	h->time = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&h->comm, t, comm);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	struct fr_bpf_ev_exec *r;
	const char *fn;
	long n;

	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(FR_BPF_EV_EXEC, 0);
		return 0;
	}
	fill_head(&r->h, FR_BPF_EV_EXEC, p);
	r->ppid = BPF_CORE_READ(p, real_parent, tgid);
	r->old_pid = (__u32)old_pid;
	r->_pad = 0;
	fn = BPF_CORE_READ(bprm, filename);
	n = fn ? bpf_probe_read_kernel_str(r->path, sizeof(r->path), fn) : 0;
	if (n <= 0) {
		r->path[0] = 0;
		n = 1;
	}
	r->path_len = (__u32)n - 1;
	bpf_ringbuf_submit(r, submit_flags());
	count(FR_BPF_EV_EXEC, 1);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct signal_struct *sig = BPF_CORE_READ(p, signal);
	struct fr_bpf_ev_exit *r;
	__u64 now, start;
	__u32 flags;

	if (BPF_CORE_READ(p, flags) & PF_KTHREAD)
		return 0;
	/* Only the exit that ends the process: the last thread's. */
	if (!sig || BPF_CORE_READ(sig, live.counter) != 0)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(FR_BPF_EV_EXIT, 0);
		return 0;
	}
	fill_head(&r->h, FR_BPF_EV_EXIT, p);
	flags = BPF_CORE_READ(sig, flags);
	if (flags & SIGNAL_GROUP_EXIT) {
		r->code = (__u32)BPF_CORE_READ(sig, group_exit_code);
		r->flags = FR_BPF_EV_GROUP_EXIT;
	} else {
		/* As wait(2) reports it: the leader's (a leader that called
		 * pthread_exit left its code; the last thread may be another). */
		r->code = (__u32)BPF_CORE_READ(p, group_leader, exit_code);
		r->flags = 0;
	}
	now = r->h.time;
	start = BPF_CORE_READ(p, group_leader, start_time);
	r->lifetime_ns = start && start <= now ? now - start : 0;
	r->sender_pid = r->sender_uid = 0;
	__builtin_memset(r->sender_comm, 0, sizeof(r->sender_comm));
	if (r->code & 0x7f) {
		/* Killed: who sent it, when it was sent in this process's
		 * life (a pid reused never meets an older process's). */
		__u64 key = (__u64)r->h.pid << 8 | (r->code & 0x7f);
		struct fr_bpf_ev_sender *s = bpf_map_lookup_elem(&senders, &key);

		if (s && s->time >= start && s->time <= now) {
			if (s->code == SI_KERNEL) {
				r->flags |= FR_BPF_EV_SENDER_KERNEL;
			} else {
				r->flags |= FR_BPF_EV_SENDER;
				r->sender_pid = s->pid;
				r->sender_uid = s->uid;
				__builtin_memcpy(r->sender_comm, s->comm, sizeof(r->sender_comm));
			}
		}
		if (s)
			bpf_map_delete_elem(&senders, &key);
	}
	r->cpu_ns = BPF_CORE_READ(sig, sum_sched_runtime) + BPF_CORE_READ(p, se.sum_exec_runtime);
	bpf_ringbuf_submit(r, submit_flags());
	count(FR_BPF_EV_EXIT, 1);
	return 0;
}

/* Whether signal sig's default action ends the process. */
static __always_inline int fatal_default(int sig)
{
	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
	case SIGURG:
	case SIGWINCH: return 0;
	}
	return sig > 0 && sig <= 64;
}

/* result: TRACE_SIGNAL_DELIVERED (0) when the signal was queued. */
SEC("tp_btf/signal_generate")
int BPF_PROG(on_signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	struct fr_bpf_ev_sender s = {};
	unsigned long iv = (unsigned long)info;
	__u64 key;
	int code;

	if (result != 0 || !task || !fatal_default(sig))
		return 0;
	/* SEND_SIG_NOINFO (0): kill by a process; SEND_SIG_PRIV (1): the
	 * kernel. */
	code = iv == 0 ? 0 : iv == 1 ? SI_KERNEL : BPF_CORE_READ(info, si_code);
	if (code > 0 && code != SI_KERNEL)
		return 0;
	s.time = bpf_ktime_get_ns();
	s.code = code;
	if (code != SI_KERNEL) {
		s.pid = (__u32)(bpf_get_current_pid_tgid() >> 32);
		s.uid = (__u32)bpf_get_current_uid_gid();
		bpf_get_current_comm(s.comm, sizeof(s.comm));
	}
	key = (__u64)(__u32)BPF_CORE_READ(task, tgid) << 8 | (__u32)sig;
	bpf_map_update_elem(&senders, &key, &s, BPF_ANY);
	return 0;
}

static __always_inline int core_signal(int sig)
{
	switch (sig) {
	case SIGQUIT:
	case SIGILL:
	case SIGTRAP:
	case SIGABRT:
	case SIGBUS:
	case SIGFPE:
	case SIGSEGV:
	case SIGXCPU:
	case SIGXFSZ:
	case SIGSYS: return 1;
	}
	return 0;
}

/* The signals whose siginfo carries a fault address (si_addr). */
static __always_inline int has_addr(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
}

#include "recorder/bpf/stack_copy.h"

/* The current thread's labels into r (its process read), else none. */
static __always_inline int read_labels(struct task_struct *t, struct fr_bpf_labels_rec *r,
				       __u64 time)
{
	__u32 pid = BPF_CORE_READ(t, tgid);
	struct fr_bpf_label_proc *lp = bpf_map_lookup_elem(&label_procs, &pid);
	__u64 faults = 0, tp;

	r->kind = FR_BPF_LABELS_WAIT;
	r->pid = pid;
	r->tid = BPF_CORE_READ(t, pid);
	r->time = time;
	r->fr_len = 0;
	r->otel_len = 0;
	r->go_n = 0;
	r->go_more = 0;
	if (!lp)
		return 0;
	tp = BPF_CORE_READ(t, thread.fsbase);
	r->fr_len = (__u16)fr_labels_copy(r->fr, tp, lp->fr_off, FR_BPF_LABELS_FR_HEAD, 6,
					  FR_BPF_LABELS_FR_MAX, &faults);
	r->otel_len = (__u16)fr_labels_copy(r->otel, tp, lp->otel_off, FR_BPF_LABELS_OTEL_HEAD, 26,
					    FR_BPF_LABELS_OTEL_MAX, &faults);
	fr_go_copy(r, tp, lp, &faults);
	return 1;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(on_signal, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct fr_bpf_ev_crash *r;
	struct pt_regs *regs;
	struct fr_bpf_ev_counters *c;
	long n;

	if (!core_signal(sig) || !ka || BPF_CORE_READ(ka, sa.sa_handler) != 0)
		return 0;
	if (t->flags & PF_KTHREAD)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r) + stack_copy, 0);
	if (!r) {
		count(FR_BPF_EV_CRASH, 0);
		return 0;
	}
	fill_head(&r->h, FR_BPF_EV_CRASH, t);
	r->sig = sig;
	r->code = info ? BPF_CORE_READ(info, si_code) : 0;
	r->flags = 0;
	r->addr = 0;
	r->_pad = 0;
	/* Only a fault the kernel raised carries an address: a signal sent by
	 * kill, tkill or sigqueue (si_code <= 0) has its sender there, and
	 * SI_KERNEL none. */
	if (info && has_addr(sig) && r->code > 0 && r->code < 0x80) {
		r->addr = (__u64)BPF_CORE_READ(info, _sifields._sigfault._addr);
		r->flags |= FR_BPF_EV_HAS_ADDR;
	}
	n = bpf_get_stack(ctx, r->kips, sizeof(r->kips), 0);
	r->nr_kernel = n > 0 ? (__u32)((__u64)n / 8) : 0;
	if (read_labels(t, &r->labels, r->h.time))
		r->flags |= FR_BPF_EV_HAS_LABELS;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	r->ip = regs ? BPF_CORE_READ(regs, ip) : 0;
	r->sp = regs ? BPF_CORE_READ(regs, sp) : 0;
	r->bp = regs ? BPF_CORE_READ(regs, bp) : 0;
	r->nr_user = 0;
	if (regs && r->ip) {
		r->flags |= FR_BPF_EV_HAS_REGS;
		r->nr_user = r->sp ? copy_user_stack(r->stack, r->sp) : 0;
		c = counts();
		if (c && r->nr_user < stack_copy)
			c->copy_short++;
	}
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	count(FR_BPF_EV_CRASH, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
