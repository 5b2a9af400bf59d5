/* The off-CPU program's wakeups (included by recorder/bpf/offcpu.bpf.c,
 * after its maps and helpers): tp_btf/sched_waking runs in the waker's
 * context (current) for every wake of the machine, so it does one task
 * storage look-up of the woken thread and returns unless that thread is
 * blocked (switched out, not runnable) and not woken yet.
 *
 * It stamps when the thread became runnable (the run-queue delay starts
 * there), and, when the loader set wake_records and the thread has waited
 * at least min_wait, sends a struct fr_bpf_wake: the waker's kernel stack
 * and, for a user thread outside interrupt context, its user registers
 * and a copy of its user stack (as emit_copy's), unwound by the recorder
 * with the binaries' CFI like a CPU sample's. Only the first wake of a
 * wait counts (runnable_at set by compare-and-swap; cleared at the
 * thread's switch-in).
 *
 * Interrupt context is told by the recorder from the kernel stack (its
 * interrupt entry and softirq functions, recorder/sampling/wake_class.h):
 * the CPU's preempt count is a per-CPU variable whose address kernels
 * built without KALLSYMS_ALL do not give BPF (the verifier refuses the
 * __preempt_count ksym). So a user thread's wake always carries its user
 * stack copy, which the recorder drops for a wake it finds in interrupt
 * context; the idle task (pid 0) is in interrupt context whenever it wakes
 * anyone, and is marked so here.
 */
#ifndef FR_RECORDER_BPF_OFFCPU_WAKE_H
#define FR_RECORDER_BPF_OFFCPU_WAKE_H

/* The record's tail: the stack copy, or (frame pointers) the user frames. */
#define WAKE_TAIL (stack_copy ? stack_copy : FR_BPF_FRAMES * 8u)

/* The waker's user half: registers and stack copy, or its frame-pointer
 * walk into the tail. */
static __always_inline void wake_user(void *ctx, struct task_struct *cur, struct fr_bpf_wake *r)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(cur);
	long n;

	if (!stack_copy) {
		n = bpf_get_stack(ctx, r->stack, FR_BPF_FRAMES * 8u, BPF_F_USER_STACK);
		r->nr_user = n > 0 ? (__u32)n : 0;
		return;
	}
	r->flags |= FR_BPF_WAKE_COPY;
	r->ip = regs ? BPF_CORE_READ(regs, ip) : 0;
	r->sp = regs ? BPF_CORE_READ(regs, sp) : 0;
	r->bp = regs ? BPF_CORE_READ(regs, bp) : 0;
	r->nr_user = r->sp ? copy_user_stack(r->stack, r->sp) : 0;
}

static __always_inline void emit_wake(void *ctx, struct task_struct *p, __u64 start, __u64 now)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct fr_bpf_counters *c = counts();
	struct fr_bpf_wake *r;
	long n;

	r = bpf_ringbuf_reserve(&waits, sizeof(*r) + WAKE_TAIL, 0);
	if (!r) {
		if (c)
			c->wake_drops++;
		return;
	}
	r->kind = FR_BPF_WAKE;
	r->pid = BPF_CORE_READ(p, tgid);
	r->tid = BPF_CORE_READ(p, pid);
	r->waker_pid = cur->tgid;
	r->waker_tid = cur->pid;
	r->cpu = bpf_get_smp_processor_id();
	r->start = start;
	r->time = now;
	r->flags = cur->pid ? 0 : FR_BPF_WAKE_HARDIRQ;
	r->nr_user = 0;
	r->ip = r->sp = r->bp = 0;
	bpf_get_current_comm(r->waker_comm, sizeof(r->waker_comm));
	/* Past the program's own two frames (bpf_prog_..., bpf_trace_run1):
	 * the leaf is try_to_wake_up. */
	n = bpf_get_stack(ctx, r->kips, sizeof(r->kips), 2 & BPF_F_SKIP_FIELD_MASK);
	r->nr_kernel = n > 0 ? (__u32)n / 8 : 0;
	/* A user waker's stack, when the recorder can name it: its process
	 * is the woken one's (a sample's user addresses are looked up in its
	 * own process), so another process's waker costs no copy. */
	if (cur->flags & PF_KTHREAD)
		r->flags |= FR_BPF_WAKE_KTHREAD;
	else if (cur->pid && cur->tgid == r->pid)
		wake_user(ctx, cur, r);
	if (c)
		c->wakes++;
	bpf_ringbuf_submit(r, submit_flags());
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct task_state *s = bpf_task_storage_get(&states, p, 0, 0);
	__u64 now, start;

	if (!s || !s->out || s->runnable_at)
		return 0;
	start = s->out;
	now = bpf_ktime_get_ns();
	/* First waker wins: another CPU may be waking it now too. */
	if (__sync_val_compare_and_swap(&s->runnable_at, 0, now) != 0)
		return 0;
	if (wake_records && now >= start && now - start >= min_wait_ns)
		emit_wake(ctx, p, start, now);
	return 0;
}

#endif
