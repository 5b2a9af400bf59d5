/* Reading a thread's labels in its own context (it is current: a perf
 * sample interrupted it, or it is on its way back to user space), shared
 * by the labels program and the off-CPU program. Include after the
 * task_struct declaration. Defines the label_procs map. Every read is bpf_probe_read_user: it never sleeps, and memory
 * that is not there fails the read, counted in *faults. */
#ifndef FR_RECORDER_LABELS_READ_H
#define FR_RECORDER_LABELS_READ_H

#include "recorder/bpf/labels_bpf.h"

/* The processes whose threads' labels are read (pid -> offsets), filled
 * by the recorder; the off-CPU program's loader makes its copy of this
 * map the labels program's. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct fr_bpf_label_proc);
} label_procs SEC(".maps");

/* Copies, from the thread pointer tp, the record whose pointer is at
 * tp + off into dst (at most max bytes: head bytes of header, whose
 * 16-bit field at size_at says how many follow, up to max - head).
 * Returns the bytes copied, 0 when there is no record. */
static __always_inline __u32 fr_labels_copy(__u8 *dst, __u64 tp, __s64 off, __u32 head,
					    __u32 size_at, __u32 max, __u64 *faults)
{
	__u64 rec = 0;
	__u16 size = 0;
	__u32 n;

	if (!off || !tp)
		return 0;
	if (bpf_probe_read_user(&rec, sizeof(rec), (const void *)(tp + off))) {
		(*faults)++;
		return 0;
	}
	if (!rec)
		return 0;
	if (bpf_probe_read_user(dst, head, (const void *)rec)) {
		(*faults)++;
		return 0;
	}
	__builtin_memcpy(&size, dst + size_at, sizeof(size));
	n = size;
	if (n > max - head)
		n = max - head;
	asm volatile("" : "+r"(n));
	if (n > max - head)
		return head;
	if (n && bpf_probe_read_user(dst + head, n, (const void *)(rec + head))) {
		(*faults)++;
		return head;
	}
	return head + n;
}

#endif
