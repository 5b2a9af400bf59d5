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

/* The first bytes of the Go string at `ptr` (len bytes) into dst (max
 * bytes, a power of two); a string longer than max is left out (its
 * length says so). */
static __always_inline void fr_go_str(__u8 *dst, __u32 max, __u64 ptr, __u64 len, __u64 *faults)
{
	__u32 n;

	if (!len || len > max || !ptr)
		return;
	n = (__u32)len;
	asm volatile("" : "+r"(n));
	if (n > max || n == 0)
		return;
	if (bpf_probe_read_user(dst, n, (const void *)ptr))
		(*faults)++;
}

/* One pair from the Go string headers at kv: key {ptr, len}, value {ptr,
 * len}, into r->go[r->go_n]. */
static __always_inline void fr_go_pair(struct fr_bpf_labels_rec *r, const __u64 kv[4],
				       __u64 *faults)
{
	__u32 i = r->go_n;
	struct fr_bpf_go_pair *p;

	if (i >= FR_BPF_LABELS_GO_PAIRS) {
		r->go_more = 1;
		return;
	}
	p = &r->go[i & (FR_BPF_LABELS_GO_PAIRS - 1)];
	p->klen = kv[1];
	p->vlen = kv[3];
	fr_go_str(p->k, FR_BPF_LABELS_GO_KEY, kv[0], kv[1], faults);
	fr_go_str(p->v, FR_BPF_LABELS_GO_VALUE, kv[2], kv[3], faults);
	r->go_n = (__u16)(i + 1);
}

/* Go <= 1.23: the labels are a map[string]string. At lm its header (count, B
 * at 9, buckets at 16); each bucket 8 tophash bytes, 8 keys and 8 values
 * (16-byte string headers), the overflow pointer. A slot whose tophash is
 * under 5 is empty or moved. The label map is built whole before the
 * goroutine gets it and never written again: the first 4 buckets, without
 * overflow buckets or a growth's old ones (a map that large says so in
 * go_more). */
#define FR_GO_BUCKET 272
#define FR_GO_BUCKETS_READ 4
static __always_inline void fr_go_map(struct fr_bpf_labels_rec *r, __u64 lm, __u64 *faults)
{
	__u64 h[3], kv[4], nb, buckets;
	__u8 top[8];

	if (bpf_probe_read_user(h, sizeof(h), (const void *)lm)) {
		(*faults)++;
		return;
	}
	buckets = h[2];
	if (!h[0] || !buckets)
		return;
	nb = 1ull << (((h[1] >> 8) & 0xff) > 6 ? 6 : ((h[1] >> 8) & 0xff));
	if (nb > FR_GO_BUCKETS_READ)
		r->go_more = 1;
	for (__u32 b = 0; b < FR_GO_BUCKETS_READ; b++) {
		__u64 at = buckets + (__u64)b * FR_GO_BUCKET;

		if (b >= nb || r->go_n >= FR_BPF_LABELS_GO_PAIRS)
			break;
		if (bpf_probe_read_user(top, sizeof(top), (const void *)at)) {
			(*faults)++;
			return;
		}
		for (__u32 i = 0; i < 8; i++) {
			if (top[i & 7] < 5)
				continue;
			if (bpf_probe_read_user(kv, 16, (const void *)(at + 8 + 16 * i)) ||
			    bpf_probe_read_user(kv + 2, 16, (const void *)(at + 136 + 16 * i))) {
				(*faults)++;
				return;
			}
			fr_go_pair(r, kv, faults);
		}
	}
	if (r->go_n < h[0] && !r->go_more)
		r->go_more = 1;
}

/* Go >= 1.24: the labels are a slice of {key, value string}, sorted. */
static __always_inline void fr_go_slice(struct fr_bpf_labels_rec *r, __u64 lm, __u64 *faults)
{
	__u64 sl[2], kv[4];

	if (bpf_probe_read_user(sl, sizeof(sl), (const void *)lm)) {
		(*faults)++;
		return;
	}
	if (sl[1] > FR_BPF_LABELS_GO_PAIRS)
		r->go_more = 1;
	for (__u32 i = 0; i < FR_BPF_LABELS_GO_PAIRS; i++) {
		if (i >= sl[1])
			break;
		if (bpf_probe_read_user(kv, sizeof(kv), (const void *)(sl[0] + 32 * (__u64)i))) {
			(*faults)++;
			return;
		}
		fr_go_pair(r, kv, faults);
	}
}

/* *out = the pointer at addr; nonzero when there is none (a read that
 * failed counted). */
static __always_inline int fr_go_ptr(__u64 *out, __u64 addr, __u64 *faults)
{
	if (bpf_probe_read_user(out, 8, (const void *)addr)) {
		(*faults)++;
		return 1;
	}
	return *out == 0;
}

/* The pprof labels of the goroutine the current thread runs: g at the
 * thread pointer + go_tls (g0 or gsignal in the runtime's own code), its
 * m's curg (the user goroutine; none while the m schedules), its labels.
 * Sets r->go_n (0: none) and r->go_more. */
static __always_inline void fr_go_copy(struct fr_bpf_labels_rec *r, __u64 tp,
				       const struct fr_bpf_label_proc *p, __u64 *faults)
{
	__u64 g = 0, m = 0, curg = 0, lm = 0;

	r->go_n = 0;
	r->go_more = 0;
	if (p->go_kind == FR_BPF_GO_NONE || !tp)
		return;
	/* A thread not running Go code yet has no g, an m between goroutines
	 * no curg: no labels, not a fault. */
	if (fr_go_ptr(&g, tp + p->go_tls, faults) || fr_go_ptr(&m, g + p->go_m, faults) ||
	    fr_go_ptr(&curg, m + p->go_curg, faults) || fr_go_ptr(&lm, curg + p->go_labels, faults))
		return;
	if (!lm)
		return;
	/* Up to 1.23 labels point to a map variable, itself a pointer to the
	 * map's header. */
	if (p->go_kind == FR_BPF_GO_MAP && !fr_go_ptr(&lm, lm, faults))
		fr_go_map(r, lm, faults);
	else if (p->go_kind == FR_BPF_GO_SLICE)
		fr_go_slice(r, lm, faults);
}

#endif
