// SPDX-License-Identifier: GPL-2.0
/* Application labels at the moment of each sample: a perf_event program
 * attached to every sampling event (the recorder's cpu and the other
 * rate-sampled sources). For a thread of a process in label_procs it
 * copies the thread's current label records (recorder/bpf/labels_bpf.h)
 * and sends them with the time; the recorder joins each sample to the
 * record sent for it (fr_al_join, recorder/tracking/applabels_int.h).
 * For a thread of a CPython process in py_procs it sends the thread's
 * Python frames
 * (recorder/bpf/python_bpf.h) before the sample too. Returns 1: the
 * sample is always kept. Loaded by recorder/sampling/bpf_labels.c.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct thread_struct thread;
} __attribute__((preserve_access_index));

#include "recorder/bpf/labels_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} labels SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_labels_counters);
} label_counters SEC(".maps");

#include "recorder/bpf/labels_read.h"
#include "recorder/bpf/python_walk.h"

/* A CPython thread's frames at this sample, sent before it. */
static __always_inline void python_frames(struct task_struct *t, __u32 pid)
{
	struct fr_bpf_py_proc *pp = bpf_map_lookup_elem(&py_procs, &pid);
	struct fr_bpf_py_rec *r;
	__u32 size = 0;

	if (!pp)
		return;
	r = fr_py_read(pp, FR_BPF_PY_SAMPLE, pid, t->pid, BPF_CORE_READ(t, thread.fsbase), &size);
	if (!r)
		return;
	if (size > sizeof(*r))
		size = sizeof(*r);
	/* No wake-up per record either (see on_sample) */
	if (bpf_ringbuf_output(&labels, r, size,
			       bpf_ringbuf_query(&labels, BPF_RB_AVAIL_DATA) >
					       bpf_ringbuf_query(&labels, BPF_RB_RING_SIZE) / 2
				       ? BPF_RB_FORCE_WAKEUP
				       : BPF_RB_NO_WAKEUP))
		fr_py_drop();
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct fr_bpf_labels_counters *c;
	struct fr_bpf_label_proc *p;
	struct fr_bpf_labels_rec *r;
	__u32 zero = 0, pid;
	__u64 faults = 0, tp;

	pid = t->tgid;
	python_frames(t, pid);
	p = bpf_map_lookup_elem(&label_procs, &pid);
	if (!p)
		return 1;
	c = bpf_map_lookup_elem(&label_counters, &zero);
	r = bpf_ringbuf_reserve(&labels, sizeof(*r), 0);
	if (!r) {
		if (c)
			c->drops++;
		return 1;
	}
	r->kind = FR_BPF_LABELS_SAMPLE;
	r->pid = pid;
	r->tid = t->pid;
	r->time = bpf_ktime_get_ns();
	tp = BPF_CORE_READ(t, thread.fsbase);
	r->fr_len = (__u16)fr_labels_copy(r->fr, tp, p->fr_off, FR_BPF_LABELS_FR_HEAD, 6,
					  FR_BPF_LABELS_FR_MAX, &faults);
	r->otel_len = (__u16)fr_labels_copy(r->otel, tp, p->otel_off, FR_BPF_LABELS_OTEL_HEAD, 26,
					    FR_BPF_LABELS_OTEL_MAX, &faults);
	fr_go_copy(r, tp, p, &faults);
	/* No wake-up per record: the recorder drains at least every second,
	 * and early when the ring is half full. */
	bpf_ringbuf_submit(r, bpf_ringbuf_query(&labels, BPF_RB_AVAIL_DATA) >
					      bpf_ringbuf_query(&labels, BPF_RB_RING_SIZE) / 2
				      ? BPF_RB_FORCE_WAKEUP
				      : BPF_RB_NO_WAKEUP);
	if (c) {
		c->samples++;
		c->faults += faults;
	}
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
