/* Reading a thread's Python frames in its own context (a perf sample
 * interrupted it, or it is switching out to wait), shared by the labels
 * program and the off-CPU program; the model is
 * recorder/tracking/python_read.c, which does the same from userspace.
 * Include after the task_struct declaration. Defines the py_* maps. Every
 * read is bpf_probe_read_user: it never sleeps, and memory that is not
 * there fails the read (counted); every loop is bounded, a chain that
 * goes on (a cycle a hostile process made) is cut. */
#ifndef FR_RECORDER_PYTHON_WALK_H
#define FR_RECORDER_PYTHON_WALK_H

#include "recorder/bpf/python_bpf.h"

/* The CPython processes read (pid -> layout), filled by the recorder; the
 * off-CPU program's loader makes its copies of these maps the labels
 * program's. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct fr_bpf_py_proc);
} py_procs SEC(".maps");

/* Each thread's thread state, once found. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct fr_bpf_py_thread);
} py_threads SEC(".maps");

/* The record being filled, and a frame's bytes: per CPU (a program runs
 * on one CPU at a time, and these do not fit its stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_py_rec);
} py_scratch SEC(".maps");

struct fr_bpf_py_buf {
	__u8 b[FR_BPF_PY_FRAME_READ];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_py_buf);
} py_frame SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_bpf_py_counters);
} py_counters SEC(".maps");

static __always_inline int fr_py_rd64(__u64 addr, __u64 *out)
{
	*out = 0;
	return bpf_probe_read_user(out, sizeof(*out), (const void *)addr);
}

/* The field at `off` of the frame read into b (0 past the bytes read). */
static __always_inline __u64 fr_py_field(const struct fr_bpf_py_buf *b, __u32 off)
{
	__u64 v = 0;

	if (off > FR_BPF_PY_FRAME_READ - sizeof(v))
		return 0;
	__builtin_memcpy(&v, &b->b[off], sizeof(v));
	return v;
}

/* The look-up of a thread's state, one step a bpf_loop() call: each
 * step is verified once (an unrolled loop of reads is too many
 * instructions for the verifier). */
struct fr_py_find_ctx {
	__u64 interp, ts, fsbase, found;
	__u32 interps;
	__u16 is_next, is_threads_head, ts_next, ts_thread_id;
};

static long fr_py_find_step(__u64 i, void *data)
{
	struct fr_py_find_ctx *x = data;
	__u64 id;

	if (!x->ts) {
		/* The next interpreter's threads (a few at most). */
		if (++x->interps == 8 || fr_py_rd64(x->interp + x->is_next, &x->interp) ||
		    !x->interp || fr_py_rd64(x->interp + x->is_threads_head, &x->ts))
			return 1;
		return 0;
	}
	if (fr_py_rd64(x->ts + x->ts_thread_id, &id))
		return 1;
	if (id == x->fsbase) {
		x->found = x->ts;
		return 1;
	}
	return fr_py_rd64(x->ts + x->ts_next, &x->ts) ? 1 : 0;
}

/* Looks through the runtime's interpreters' thread states for the one of
 * the thread whose fs base is `fsbase`. Returns its address or 0. */
static __always_inline __u64 fr_py_find(const struct fr_bpf_py_proc *pp, __u64 fsbase,
					struct fr_bpf_py_counters *c)
{
	struct fr_py_find_ctx x = {.fsbase = fsbase,
				   .is_next = pp->is_next,
				   .is_threads_head = pp->is_threads_head,
				   .ts_next = pp->ts_next,
				   .ts_thread_id = pp->ts_thread_id};

	if (c)
		c->lookups++;
	if (fr_py_rd64(pp->runtime + pp->rt_interp_head, &x.interp) || !x.interp ||
	    fr_py_rd64(x.interp + pp->is_threads_head, &x.ts))
		return 0;
	bpf_loop(FR_BPF_PY_THREAD_STEPS, fr_py_find_step, &x, 0);
	return x.found;
}

/* The thread state of thread `tid` (fs base `fsbase`): the cached one
 * while it still says it is this thread's, else looked for (a miss is
 * not looked for again for a second). Returns it or 0. */
static __always_inline __u64 fr_py_tstate(const struct fr_bpf_py_proc *pp, __u32 tid, __u64 fsbase,
					  __u64 now, struct fr_bpf_py_counters *c)
{
	struct fr_bpf_py_thread *e = bpf_map_lookup_elem(&py_threads, &tid), v = {};
	__u64 id;

	if (e && e->fsbase == fsbase) {
		if (e->tstate && !fr_py_rd64(e->tstate + pp->ts_thread_id, &id) && id == fsbase)
			return e->tstate;
		if (!e->tstate && now - e->miss < 1000000000ull)
			return 0;
	}
	v.tstate = fr_py_find(pp, fsbase, c);
	v.fsbase = fsbase;
	v.miss = v.tstate ? 0 : now;
	bpf_map_update_elem(&py_threads, &tid, &v, BPF_ANY);
	return v.tstate;
}

/* The innermost frame of the thread state at ts; 0 none. */
static __always_inline __u64 fr_py_first(const struct fr_bpf_py_proc *pp, __u64 ts)
{
	__u64 f = 0, cf = 0;

	if (pp->ts_frame != FR_BPF_PY_NONE) {
		fr_py_rd64(ts + pp->ts_frame, &f);
		return f;
	}
	if (fr_py_rd64(ts + pp->ts_cframe, &cf) || !cf)
		return 0;
	fr_py_rd64(cf + pp->cf_frame, &f);
	return f;
}

/* The walk of a chain, one frame (or shim) a bpf_loop() step. */
struct fr_py_walk_ctx {
	__u64 f;
	__u32 n;
	__u16 status, len;
	__u16 fr_previous, fr_code, fr_instr, fr_is_entry, fr_owner;
	__u8 cstack_owner;
};

static long fr_py_walk_step(__u64 i, void *data)
{
	struct fr_py_walk_ctx *w = data;
	__u32 zero = 0, len = w->len, k;
	struct fr_bpf_py_rec *r = bpf_map_lookup_elem(&py_scratch, &zero);
	struct fr_bpf_py_buf *b = bpf_map_lookup_elem(&py_frame, &zero);

	if (!r || !b || !w->f)
		return 1;
	if ((w->f & 7) || w->n >= FR_BPF_PY_DEPTH) {
		w->status = FR_BPF_PY_CUT;
		return 1;
	}
	if (len == 0 || len > FR_BPF_PY_FRAME_READ)
		return 1;
	if (bpf_probe_read_user(b->b, len, (const void *)w->f)) {
		w->status = FR_BPF_PY_FAULT;
		return 1;
	}
	if (w->fr_owner < FR_BPF_PY_FRAME_READ && b->b[w->fr_owner] == w->cstack_owner) {
		/* A shim: the frame above it began a C-level call. */
		k = w->n - 1;
		if (w->n && k < FR_BPF_PY_DEPTH)
			r->f[k].code |= FR_BPF_PY_ENTRY;
	} else {
		k = w->n;
		if (k >= FR_BPF_PY_DEPTH)
			return 1;
		r->f[k].code = fr_py_field(b, w->fr_code) & ~7ull;
		r->f[k].instr = fr_py_field(b, w->fr_instr);
		if (w->fr_is_entry < FR_BPF_PY_FRAME_READ && b->b[w->fr_is_entry])
			r->f[k].code |= FR_BPF_PY_ENTRY;
		w->n++;
	}
	w->f = fr_py_field(b, w->fr_previous);
	return 0;
}

/* Walks the chain from frame f into r (r->n, r->status). */
static __always_inline void fr_py_walk(const struct fr_bpf_py_proc *pp, __u64 f,
				       struct fr_bpf_py_rec *r, struct fr_bpf_py_counters *c)
{
	struct fr_py_walk_ctx w = {.f = f,
				   .len = pp->fr_len,
				   .fr_previous = pp->fr_previous,
				   .fr_code = pp->fr_code,
				   .fr_instr = pp->fr_instr,
				   .fr_is_entry = pp->fr_is_entry,
				   .fr_owner = pp->fr_owner,
				   .cstack_owner = pp->cstack_owner};

	bpf_loop(FR_BPF_PY_STEPS, fr_py_walk_step, &w, 0);
	if (w.f && w.status == FR_BPF_PY_OK)
		w.status = FR_BPF_PY_CUT;
	r->n = (__u16)(w.n < FR_BPF_PY_DEPTH ? w.n : FR_BPF_PY_DEPTH);
	r->status = w.status;
	if (c) {
		c->frames += r->n;
		if (w.status == FR_BPF_PY_FAULT)
			c->faults++;
	}
}

/* Fills the scratch record with the Python frames of the current thread
 * (task t, of process pid in py_procs as *pp) and returns it, its size
 * in *size; NULL when the scratch is not there. */
static __always_inline struct fr_bpf_py_rec *fr_py_read(const struct fr_bpf_py_proc *pp, __u32 kind,
							__u32 pid, __u32 tid, __u64 fsbase,
							__u32 *size)
{
	__u32 zero = 0;
	struct fr_bpf_py_rec *r = bpf_map_lookup_elem(&py_scratch, &zero);
	struct fr_bpf_py_counters *c = bpf_map_lookup_elem(&py_counters, &zero);
	__u64 ts;
	__u32 n;

	if (!r)
		return NULL;
	r->kind = kind;
	r->pid = pid;
	r->tid = tid;
	r->n = 0;
	r->status = FR_BPF_PY_OK;
	r->time = bpf_ktime_get_ns();
	if (c)
		c->samples++;
	ts = fsbase ? fr_py_tstate(pp, tid, fsbase, r->time, c) : 0;
	if (!ts)
		r->status = FR_BPF_PY_NO_THREAD;
	else
		fr_py_walk(pp, fr_py_first(pp, ts), r, c);
	n = r->n;
	if (n > FR_BPF_PY_DEPTH)
		n = FR_BPF_PY_DEPTH;
	*size = FR_BPF_PY_REC_HEAD + n * sizeof(struct fr_bpf_py_frame);
	return r;
}

/* Counts a record the ring buffer had no room for. */
static __always_inline void fr_py_drop(void)
{
	__u32 zero = 0;
	struct fr_bpf_py_counters *c = bpf_map_lookup_elem(&py_counters, &zero);

	if (c)
		c->drops++;
}

#endif
