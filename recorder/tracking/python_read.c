/* A CPython process's threads and frames from its memory
 * (recorder/tracking/python_read.h). */
#include "recorder/tracking/python_read.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/le.h"

/* Steps of a frame chain: its frames and, between them, the C stack's
 * shim frames (3.12+), one per C-level call of the eval loop. */
#define STEPS_MAX (2 * FR_PY_DEPTH + 2)
/* An instruction further into its code than this is not one. */
#define OFFSET_MAX (1u << 28)
/* Slots of the set of thread states seen (twice FR_PY_THREADS). */
#define SEEN_SLOTS 8192u

struct rd {
	const struct fr_python_exe *x;
	const struct fr_py_layout *l;
	uint64_t bias;
	const struct fr_py_mem *mem;
	struct fr_py_stats *st;
	uint32_t ts_len, fr_len, co_len; /* bytes read of each */
};

static int rd_read(struct rd *r, uint64_t addr, void *buf, size_t n)
{
	r->st->reads++;
	return r->mem->read(r->mem->arg, addr, buf, n);
}

static uint64_t word(const uint8_t *b, int32_t off)
{
	return off < 0 ? 0 : fr_get_le64(b + off);
}

/* The bytes from a struct's start its fields lie in. */
static uint32_t extent(const int32_t *off, size_t n)
{
	uint32_t end = 0;

	for (size_t i = 0; i < n; i++)
		if (off[i] >= 0 && (uint32_t)off[i] + 8 > end)
			end = (uint32_t)off[i] + 8;
	return end;
}

static int rd_init(struct rd *r, const struct fr_python_exe *x, uint64_t bias,
		   const struct fr_py_mem *mem, struct fr_py_stats *st)
{
	const struct fr_py_layout *l = &x->layout;
	int32_t ts[] = {l->ts_next, l->ts_thread_id, l->ts_native_id, l->ts_frame, l->ts_cframe};
	int32_t fr[] = {l->fr_previous, l->fr_code, l->fr_instr, l->fr_is_entry, l->fr_owner};
	int32_t co[] = {l->co_name, l->co_qualname, l->co_filename, l->co_firstlineno,
			l->co_linetable};

	*r = (struct rd){.x = x, .l = l, .bias = bias, .mem = mem, .st = st};
	r->ts_len = extent(ts, sizeof(ts) / sizeof(ts[0]));
	r->fr_len = extent(fr, sizeof(fr) / sizeof(fr[0]));
	r->co_len = extent(co, sizeof(co) / sizeof(co[0]));
	/* The layout is read from another user's file: it must fit. */
	if (r->ts_len > FR_PY_STRUCT_MAX || r->fr_len > FR_PY_STRUCT_MAX ||
	    r->co_len > FR_PY_STRUCT_MAX || !r->ts_len || !r->fr_len || l->fr_code < 0 ||
	    l->fr_previous < 0 || l->fr_instr < 0 || l->co_firstlineno < 0 ||
	    l->str_ascii_size < 0 || l->str_compact_size > (int32_t)FR_PY_STRUCT_MAX ||
	    l->bytes_data < 0 || l->bytes_data > (int32_t)FR_PY_STRUCT_MAX ||
	    (l->ts_frame < 0 && (l->ts_cframe < 0 || l->cf_frame < 0 || l->cf_frame > 4096)))
		return -ENOTSUP;
	return 0;
}

/* ---- a thread's frames ---- */

/* The offset into its code of the instruction a frame is at. */
static uint32_t frame_offset(struct rd *r, const uint8_t *b, uint64_t code)
{
	const struct fr_py_layout *l = r->l;

	if (l->instr_is_lasti) {
		int32_t lasti = (int32_t)fr_get_le32(b + l->fr_instr);

		return lasti >= 0 && (uint32_t)lasti < OFFSET_MAX / 2 ? (uint32_t)lasti * 2
								      : FR_PY_NO_OFFSET;
	}
	uint64_t ip = word(b, l->fr_instr), start = code + (uint64_t)l->co_code_adaptive;

	if (l->co_code_adaptive < 0 || ip < start || ip - start >= OFFSET_MAX)
		return FR_PY_NO_OFFSET;
	return (uint32_t)(ip - start);
}

static bool seen_before(const uint64_t *seen, unsigned n, uint64_t a)
{
	for (unsigned i = 0; i < n; i++)
		if (seen[i] == a)
			return true;
	return false;
}

/* The innermost frame of the thread state read into `ts`; 0 none. */
static uint64_t first_frame(struct rd *r, const uint8_t *ts)
{
	uint64_t cframe, f;

	if (r->l->ts_frame >= 0)
		return word(ts, r->l->ts_frame);
	cframe = word(ts, r->l->ts_cframe);
	if (!cframe || rd_read(r, cframe + (uint64_t)r->l->cf_frame, &f, sizeof(f)) < 0)
		return 0;
	return f;
}

/* Walks the chain from `f` into t->frames. */
static void walk(struct rd *r, uint64_t f, struct fr_py_thread *t)
{
	const struct fr_py_layout *l = r->l;
	uint64_t seen[STEPS_MAX];
	uint8_t b[FR_PY_STRUCT_MAX];
	unsigned steps = 0;

	for (; f; f = word(b, l->fr_previous)) {
		if ((f & 7) || steps == STEPS_MAX || seen_before(seen, steps, f)) {
			t->cut = 1;
			return;
		}
		seen[steps++] = f;
		if (rd_read(r, f, b, r->fr_len) < 0)
			return;
		if (l->fr_cstack_owner >= 0 && l->fr_owner >= 0 &&
		    b[l->fr_owner] == (uint8_t)l->fr_cstack_owner) {
			/* A shim: the frame above it began a C-level call. */
			if (t->nframes)
				t->frames[t->nframes - 1].entry = 1;
			continue;
		}
		if (t->nframes == FR_PY_DEPTH) {
			t->cut = 1;
			return;
		}
		struct fr_py_frame *fr = &t->frames[t->nframes++];

		fr->code = word(b, l->fr_code);
		fr->offset = frame_offset(r, b, fr->code);
		/* 3.10 calls the eval loop for every frame; 3.11 marks it. */
		fr->entry = l->fr_is_entry >= 0 ? b[l->fr_is_entry] != 0 : l->fr_cstack_owner < 0;
	}
}

static int thread_read(struct rd *r, uint64_t tstate, struct fr_py_thread *t, uint64_t *next)
{
	uint8_t ts[FR_PY_STRUCT_MAX];

	memset(t, 0, offsetof(struct fr_py_thread, frames));
	t->tstate = tstate;
	if ((tstate & 7) || rd_read(r, tstate, ts, r->ts_len) < 0)
		return -EFAULT;
	t->thread_id = word(ts, r->l->ts_thread_id);
	t->native_id = (uint32_t)word(ts, r->l->ts_native_id);
	*next = word(ts, r->l->ts_next);
	walk(r, first_frame(r, ts), t);
	r->st->frames += t->nframes;
	return 0;
}

int fr_py_thread_read(const struct fr_python_exe *x, uint64_t bias, const struct fr_py_mem *mem,
		      uint64_t tstate, struct fr_py_thread *t, struct fr_py_stats *st)
{
	struct rd r;
	uint64_t next;
	int ret = rd_init(&r, x, bias, mem, st);

	return ret < 0 ? ret : thread_read(&r, tstate, t, &next);
}

/* ---- the threads ---- */

/* Adds `a` to the set; false when it was there (or the set is full). */
static bool seen_add(uint64_t *set, uint64_t a)
{
	size_t i = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 51) & (SEEN_SLOTS - 1);

	for (unsigned n = 0; n < SEEN_SLOTS; n++, i = (i + 1) & (SEEN_SLOTS - 1)) {
		if (set[i] == a)
			return false;
		if (!set[i]) {
			set[i] = a;
			return true;
		}
	}
	return false;
}

/* The threads of the interpreter at `interp`, given to cb; *left: how
 * many more may be. */
static int interp_threads(struct rd *r, uint64_t interp, uint64_t *set, struct fr_py_thread *t,
			  unsigned *left, int (*cb)(void *, const struct fr_py_thread *),
			  void *cbarg)
{
	uint64_t ts;

	if (rd_read(r, interp + (uint64_t)r->l->is_threads_head, &ts, sizeof(ts)) < 0)
		return 0;
	while (ts && *left && seen_add(set, ts)) {
		uint64_t next = 0;
		int ret;

		if (thread_read(r, ts, t, &next) < 0)
			return 0;
		(*left)--;
		r->st->threads++;
		if ((ret = cb(cbarg, t)) < 0)
			return ret;
		ts = next;
	}
	return 0;
}

int fr_py_threads_read(const struct fr_python_exe *x, uint64_t bias, const struct fr_py_mem *mem,
		       int (*cb)(void *cbarg, const struct fr_py_thread *t), void *cbarg,
		       struct fr_py_stats *st)
{
	struct rd r;
	uint64_t interp, *set;
	struct fr_py_thread *t;
	unsigned left = FR_PY_THREADS;
	int ret = rd_init(&r, x, bias, mem, st);

	if (ret < 0)
		return ret;
	if (rd_read(&r, x->runtime + bias + (uint64_t)r.l->rt_interp_head, &interp,
		    sizeof(interp)) < 0 ||
	    !interp)
		return -EADDRNOTAVAIL;
	set = calloc(SEEN_SLOTS, sizeof(*set));
	t = malloc(sizeof(*t));
	if (!set || !t) {
		free(set);
		free(t);
		return -ENOMEM;
	}
	for (unsigned n = 0; interp && n < FR_PY_INTERPRETERS && ret == 0; n++) {
		ret = interp_threads(&r, interp, set, t, &left, cb, cbarg);
		if (rd_read(&r, interp + (uint64_t)r.l->is_next, &interp, sizeof(interp)) < 0)
			break;
	}
	free(set);
	free(t);
	return ret;
}
