/* Wakeup and runqueue samples of the off-CPU eBPF mechanism: see
 * recorder/sampling/bpf_wake.h. */
#include "recorder/sampling/bpf_wake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/sample.h"
#include "recorder/sampling/wake_class.h"
#include "recorder/sampling/wake_join.h"

struct fr_bpf_wakes {
	uint32_t extra;
	uint64_t min_wait_ns;
	uint32_t stack_copy;
	struct fr_wake_join *join;
	struct fr_wake_class *cls; /* NULL: wakeup not made */
	struct fr_wake_held held, out;
	struct fr_bpf_wake_counts n;
	uint64_t ips[FR_MAX_FRAMES];
};

struct fr_bpf_wakes *fr_bpf_wakes_new(uint32_t extra, uint64_t min_wait_ns, uint32_t stack_copy)
{
	struct fr_bpf_wakes *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->extra = extra;
	w->min_wait_ns = min_wait_ns;
	w->stack_copy = stack_copy;
	if (extra & FR_PERF_OFFCPU_WAKEUP) {
		w->join = fr_wake_join_new(FR_BPF_WAKE_HOLD_MAX);
		w->cls = fr_wake_class_open();
		if (!w->join || !w->cls) {
			fr_bpf_wakes_free(w);
			return NULL;
		}
	}
	return w;
}

void fr_bpf_wakes_free(struct fr_bpf_wakes *w)
{
	if (!w)
		return;
	fr_wake_join_free(w->join);
	fr_wake_class_free(w->cls);
	free(w);
}

static void count(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* Sends a wake (joined: to its wait's record) with the woken thread's
 * labels `base` (0: none) and the
 * waker's (none for a wake from interrupt context: the thread the
 * interrupt landed on did not wake it). */
static void send_wake(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
		      struct fr_wake_held *k, uint32_t base, int joined)
{
	char pid[16], tid[16], comm[17];
	struct fr_app_label extra[3] = {{"waker_pid", pid},
					{"waker_tid", tid},
					{"waker_comm", comm}};

	snprintf(pid, sizeof(pid), "%u", k->waker_pid);
	snprintf(tid, sizeof(tid), "%u", k->waker_tid);
	memcpy(comm, k->waker_comm, 16);
	comm[16] = '\0';
	if (base == FR_APP_REF_NONE)
		base = 0;
	k->s.app_ref = h->labels_plus ? h->labels_plus(h->arg, base, extra, k->waker_tid ? 3 : 0)
				      : base;
	if (!k->s.app_ref)
		k->s.app_ref = FR_APP_REF_NONE;
	count(joined ? &w->n.joined : &w->n.unjoined);
	count(&w->n.wakes);
	h->sample(h->arg, &k->s);
}

/* The waker's user frames after its nk kernel ones in k->ips. */
static uint32_t user_frames(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
			    struct fr_perf_unwind_stats *unwind, const struct fr_bpf_wake *r,
			    size_t size, struct fr_wake_held *k, uint32_t nk)
{
	size_t tail = size - sizeof(*r);
	uint32_t n = nk;

	if (r->nr_user > tail) {
		count(&w->n.bad_records);
		return nk;
	}
	if (r->flags & FR_BPF_WAKE_COPY) {
		struct fr_unwind_regs regs = {.ip = r->ip, .sp = r->sp, .bp = r->bp};
		struct fr_unwind_stack stack = {.sp = r->sp, .data = r->stack, .size = r->nr_user};

		if (!regs.ip || r->nr_user > w->stack_copy)
			return nk;
		return nk + fr_perf_unwind_user(unwind, h, r->waker_pid, &regs, &stack, k->ips + nk,
						FR_MAX_FRAMES - nk);
	}
	for (uint32_t i = 0; i < r->nr_user / 8 && n < FR_MAX_FRAMES; i++) {
		uint64_t ip;

		memcpy(&ip, r->stack + i * 8, 8);
		k->ips[n++] = ip;
	}
	return n;
}

void fr_bpf_wakes_record(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
			 struct fr_perf_unwind_stats *unwind, int64_t clock_offset,
			 const void *data, size_t size)
{
	const struct fr_bpf_wake *r = data;
	struct fr_wake_held *k = &w->held;
	uint32_t nk, n;
	int ctx;

	if (!w->join)
		return;
	if (size < sizeof(*r)) {
		count(&w->n.bad_records);
		return;
	}
	nk = r->nr_kernel < FR_MAX_FRAMES ? r->nr_kernel : FR_MAX_FRAMES;
	memcpy(k->ips, r->kips, nk * sizeof(uint64_t));
	n = nk;
	ctx = r->flags & FR_BPF_WAKE_HARDIRQ ? FR_WAKE_HARDIRQ
					     : fr_wake_class_context(w->cls, k->ips, nk);
	if (ctx != FR_WAKE_TASK) {
		/* What woke it, not the thread the interrupt landed on: its
		 * user stack (copied all the same) is not the wake's. */
		if (n < FR_MAX_FRAMES)
			k->ips[n++] = FR_FRAME_NOTE_ADDR(
				fr_wake_class_note(w->cls, k->ips, nk, ctx == FR_WAKE_HARDIRQ));
		count(&w->n.irq);
	} else if (!(r->flags & FR_BPF_WAKE_KTHREAD) && r->waker_pid != r->pid) {
		/* Its user addresses mean nothing in the woken process, where
		 * the sample's are symbolized. */
		if (n < FR_MAX_FRAMES)
			k->ips[n++] = FR_FRAME_NOTE_ADDR(FR_FRAME_NOTE_WAKER_ELSEWHERE);
		count(&w->n.elsewhere);
	} else if (!(r->flags & FR_BPF_WAKE_KTHREAD)) {
		n = user_frames(w, h, unwind, r, size, k, nk);
	}
	k->tid = r->tid;
	k->start = r->start;
	k->held_at = r->time;
	k->waker_pid = ctx == FR_WAKE_TASK ? r->waker_pid : 0;
	k->waker_tid = ctx == FR_WAKE_TASK ? r->waker_tid : 0;
	memcpy(k->waker_comm, r->waker_comm, sizeof(k->waker_comm));
	k->s = (struct fr_sample){
		.time_ns = (int64_t)r->time + clock_offset,
		.pid = r->pid,
		.tid = r->tid,
		.cpu = r->cpu,
		.event = FR_EVENT_WAKEUP,
		.weight = r->time > r->start ? r->time - r->start : 0,
		.rate_hz = 0,
		.nr_kernel = (uint16_t)nk,
		.nr_frames = (uint16_t)n,
		.ips = k->ips,
	};
	if (fr_wake_join_put(w->join, k) < 0)
		send_wake(w, h, k, 0, 0); /* no room: now, without its labels */
}

/* A runqueue sample of `weight` ns on s's stack (or the short delays'
 * note), with the label ran_instead when known. */
static void send_runqueue(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
			  const struct fr_sample *s, uint64_t weight, uint32_t cpu,
			  const char *ran_instead)
{
	struct fr_sample rq = *s;
	struct fr_app_label extra[1] = {{"ran_instead", NULL}};
	char comm[17];

	rq.event = FR_EVENT_RUNQUEUE;
	rq.weight = weight;
	rq.cpu = cpu;
	if (ran_instead) {
		memcpy(comm, ran_instead, 16);
		comm[16] = '\0';
		extra[0].value = comm[0] ? comm : "swapper";
		rq.app_ref =
			h->labels_plus
				? h->labels_plus(h->arg,
						 s->app_ref == FR_APP_REF_NONE ? 0 : s->app_ref,
						 extra, 1)
				: s->app_ref;
		if (!rq.app_ref)
			rq.app_ref = FR_APP_REF_NONE;
	}
	h->sample(h->arg, &rq);
}

void fr_bpf_wakes_wait(struct fr_bpf_wakes *w, const struct fr_perf_handler *h,
		       const struct fr_bpf_wait_head *head, const struct fr_sample *s)
{
	if (w->join && head->kind == FR_BPF_WAIT_LONG &&
	    fr_wake_join_take(w->join, head->tid, head->start, &w->out))
		send_wake(w, h, &w->out, s->app_ref, 1);
	if (!(w->extra & FR_PERF_OFFCPU_RUNQUEUE))
		return;
	if (head->kind == FR_BPF_WAIT_LONG && head->runnable_at && head->end >= head->runnable_at &&
	    head->end - head->runnable_at >= w->min_wait_ns) {
		send_runqueue(w, h, s, head->end - head->runnable_at, head->in_cpu,
			      head->ran_instead);
		count(&w->n.runqueue);
	} else if (head->kind == FR_BPF_WAIT_SHORT && head->rq_count) {
		struct fr_sample q = *s;

		q.ips = w->ips;
		w->ips[0] = FR_FRAME_NOTE_ADDR(FR_FRAME_NOTE_SHORT_WAITS);
		q.nr_frames = 1;
		q.nr_kernel = 0;
		send_runqueue(w, h, &q, head->rq_total, head->cpu, NULL);
		count(&w->n.rq_short);
	}
}

void fr_bpf_wakes_expire(struct fr_bpf_wakes *w, const struct fr_perf_handler *h, uint64_t now_mono)
{
	if (!w->join || now_mono < FR_BPF_WAKE_HOLD_NS)
		return;
	while (fr_wake_join_expire(w->join, now_mono - FR_BPF_WAKE_HOLD_NS, &w->out))
		send_wake(w, h, &w->out, 0, 0);
}

void fr_bpf_wakes_counts(const struct fr_bpf_wakes *w, struct fr_bpf_wake_counts *out)
{
	const uint64_t *in = (const uint64_t *)&w->n;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}
