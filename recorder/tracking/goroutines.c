/* A Go process's goroutines from its memory (recorder/tracking/goroutines.h). */
#include "recorder/tracking/goroutines.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/symbols/gopclntab.h"
#include "core/util/le.h"

/* Goroutines read at once: their g's, then their stacks, then their g's
 * again, each in one system call where the memory allows. */
#define BATCH 256u
/* A list longer than this is not a real one. */
#define LIST_MAX (1u << 24)
/* Bytes of a stack read at once from where it stops. */
#define STACK_READ 8192u
/* A goroutine's stack is at most 1 GiB (runtime/debug.SetMaxStack). */
#define STACK_MAX (1ull << 30)
/* The largest g read (fields are within its first 4 KiB). */
#define G_MAX 4104u
/* Map buckets and overflow buckets read of a goroutine's labels. */
#define BUCKETS_MAX 64u
#define BUCKET_BYTES 272u
#define SCAN_BIT 0x1000u

struct rd {
	const struct fr_go_exe *x;
	uint64_t bias;
	const struct fr_go_mem *mem;
	struct fr_goroutines_stats *st;
	uint64_t goexit, goexit_end; /* runtime.goexit, link-time; 0: unknown */
	/* The stack depths of the return addresses last looked up (most
	 * goroutines of a program wait in a few places). */
	struct {
		uint64_t pc;
		int32_t sp;
	} * spc;
};

#define SP_CACHE 4096u

static int sp_at(struct rd *r, uint64_t pc, int32_t *sp)
{
	size_t i = (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 52) & (SP_CACHE - 1);
	int ret;

	if (r->spc && r->spc[i].pc == pc) {
		*sp = r->spc[i].sp;
		return 0;
	}
	ret = fr_gopclntab_sp_at(r->x->tab, pc, sp);
	if (ret == 0 && r->spc) {
		r->spc[i].pc = pc;
		r->spc[i].sp = *sp;
	}
	return ret;
}

static int rd_read(struct rd *r, uint64_t addr, void *buf, size_t n)
{
	r->st->reads++;
	return r->mem->read(r->mem->arg, addr, buf, n);
}

/* Reads n ranges, at once when the memory can: ok[i] says which were
 * read whole (a range of 0 bytes is). */
static void rd_readv(struct rd *r, size_t n, const uint64_t *addr, const size_t *len, void **buf,
		     uint8_t *ok)
{
	size_t at = 0;

	memset(ok, 0, n);
	while (r->mem->readv && at < n) {
		int got = r->mem->readv(r->mem->arg, n - at, addr + at, len + at, buf + at);

		r->st->reads++;
		if (got < 0 || (size_t)got > n - at)
			break;
		memset(ok + at, 1, (size_t)got);
		at += (size_t)got + 1; /* past the range that failed */
	}
	for (; !r->mem->readv && at < n; at++)
		ok[at] = !len[at] || rd_read(r, addr[at], buf[at], len[at]) == 0;
}

static uint64_t word(const uint8_t *g, int32_t off)
{
	return off < 0 ? 0 : fr_get_le64(g + off);
}

const char *fr_gstatus_name(uint32_t s)
{
	static const char *const names[] = {"idle",	 "runnable", "running", "syscall",
					    "waiting",	 "moribund", "dead",	"enqueue",
					    "copystack", "preempted"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

/* ---- the list ---- */

/* Whether the slice header at `at` (the process's address) is the list:
 * its first goroutine is the program's first, goid 1. */
static bool is_list(struct rd *r, uint64_t at, uint64_t *arr, uint64_t *len)
{
	uint64_t h[3], g0;
	uint8_t g[G_MAX];
	const struct fr_go_glayout *l = &r->x->layout;

	if (rd_read(r, at, h, sizeof(h)) < 0 || !h[1] || h[1] > h[2] || h[2] > LIST_MAX ||
	    rd_read(r, h[0], &g0, sizeof(g0)) < 0 || rd_read(r, g0, g, l->size) < 0 ||
	    word(g, l->goid) != 1)
		return false;
	*arr = h[0];
	*len = h[1];
	return true;
}

static int find_list(struct rd *r, uint64_t *arr, uint64_t *len)
{
	if (r->x->allgs)
		return is_list(r, r->x->allgs + r->bias, arr, len) ? 0 : -EADDRNOTAVAIL;
	for (unsigned i = 0; i < r->x->ncand; i++)
		if (is_list(r, r->x->cand[i] + r->bias, arr, len))
			return 0;
	return -EADDRNOTAVAIL;
}

/* ---- a stack ---- */

/* The part of a stack read at once from where it stops: `have` bytes at
 * `buf` from address `base`. */
struct stack {
	uint64_t base;
	size_t have;
	uint8_t *buf;
};

static int stack_word(struct rd *r, const struct stack *s, uint64_t at, uint64_t *v)
{
	if (at >= s->base && at - s->base <= s->have - 8 && s->have >= 8) {
		*v = fr_get_le64(s->buf + (at - s->base));
		return 0;
	}
	return rd_read(r, at, v, 8);
}

/* Unwinds from (pc, sp) within [lo, hi) by the pcsp tables, as Go's own
 * traceback does: the return address of a frame stopped at pc is at sp
 * plus the function's stack depth there. Every pc is a return address
 * (a call's, or mcall's for a parked goroutine): looked up at pc - 1.
 * Words outside what `s` holds are read one by one. */
static void walk(struct rd *r, struct fr_goroutine *g, const struct stack *s, uint64_t pc,
		 uint64_t sp, uint64_t lo, uint64_t hi)
{
	g->npc = 0;
	while (pc > r->bias && sp >= lo && sp < hi) {
		uint64_t link = pc - r->bias, at, ret;
		int32_t d;

		if (g->npc == FR_GOROUTINE_DEPTH) {
			g->stack = FR_GSTACK_CUT;
			return;
		}
		g->pc[g->npc++] = link;
		if (r->goexit && link - 1 >= r->goexit && link - 1 < r->goexit_end)
			return;
		if (sp_at(r, link - 1, &d) < 0)
			return;
		at = sp + (uint64_t)d;
		if (at < sp || at >= hi - 8 || stack_word(r, s, at, &ret) < 0 || !ret)
			return;
		sp = at + 8;
		pc = ret;
	}
}

/* ---- labels ---- */

/* A Go string {ptr, len} into out (cap bytes with the NUL). */
static bool go_string(struct rd *r, const uint64_t *h, char *out, size_t cap)
{
	if (!h[1] || h[1] >= cap || rd_read(r, h[0], out, (size_t)h[1]) < 0 ||
	    memchr(out, '\0', (size_t)h[1]))
		return false;
	out[h[1]] = '\0';
	return true;
}

static void pair(struct rd *r, struct fr_goroutine *g, const uint64_t *kv)
{
	if (g->nlabels == FR_GOROUTINE_LABELS) {
		g->labels_more = 1;
		return;
	}
	if (go_string(r, kv, g->labels[g->nlabels].k, FR_GOROUTINE_KEY_MAX) &&
	    (!kv[3] || go_string(r, kv + 2, g->labels[g->nlabels].v, FR_GOROUTINE_VALUE_MAX))) {
		if (!kv[3])
			g->labels[g->nlabels].v[0] = '\0';
		g->nlabels++;
	} else {
		g->labels_more = 1;
	}
}

/* Up to 1.23: a pointer to a map variable, itself the map's header
 * {count, flags, B, ..., buckets, oldbuckets}; buckets of 8 pairs
 * (tophash[8], keys[8], values[8], overflow) of BUCKET_BYTES. */
static void labels_map(struct rd *r, struct fr_goroutine *g, uint64_t lm)
{
	uint64_t h[4];
	uint8_t b[BUCKET_BYTES];
	unsigned nb, read = 0;

	if (rd_read(r, lm, &lm, 8) < 0 || !lm || rd_read(r, lm, h, sizeof(h)) < 0 || !h[0])
		return;
	nb = ((h[1] >> 8) & 0xff) > 6 ? 128 : 1u << ((h[1] >> 8) & 0xff);
	if (h[3]) /* growing: some pairs still in the old buckets */
		g->labels_more = 1;
	for (unsigned i = 0; i < nb && read < BUCKETS_MAX; i++) {
		uint64_t at = h[2] + (uint64_t)i * BUCKET_BYTES;

		while (at && read++ < BUCKETS_MAX && rd_read(r, at, b, sizeof(b)) == 0) {
			for (unsigned k = 0; k < 8; k++) {
				uint64_t kv[4];

				if (b[k] < 5)
					continue;
				memcpy(kv, b + 8 + 16 * k, 16);
				memcpy(kv + 2, b + 136 + 16 * k, 16);
				pair(r, g, kv);
			}
			at = fr_get_le64(b + 264);
		}
	}
	if (read >= BUCKETS_MAX || g->nlabels < h[0])
		g->labels_more = 1;
}

/* 1.24 on: a slice of {key, value string}. */
static void labels_slice(struct rd *r, struct fr_goroutine *g, uint64_t lm)
{
	uint64_t sl[2], kv[4];

	if (rd_read(r, lm, sl, sizeof(sl)) < 0)
		return;
	for (uint64_t i = 0; i < sl[1] && i <= FR_GOROUTINE_LABELS; i++)
		if (rd_read(r, sl[0] + 32 * i, kv, sizeof(kv)) == 0)
			pair(r, g, kv);
}

/* ---- a goroutine ---- */

/* The fields of g's bytes that say where it stands: if any differs
 * between two reads, it moved while read. */
static bool same(const struct fr_go_glayout *l, const uint8_t *a, const uint8_t *b)
{
	const int32_t off[] = {l->status,    l->goid,	   l->sched_sp,	 l->sched_pc,
			       l->syscallsp, l->syscallpc, l->waitreason};

	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		if (off[i] >= 0 && memcmp(a + off[i], b + off[i], i == 6 ? 1 : 8) != 0)
			return false;
	return true;
}

/* The fields of a g read in `b`. Returns false for what is no goroutine
 * to list (idle, dead, or garbage). */
static bool fields(struct rd *r, const uint8_t *b, uint64_t gaddr, struct fr_goroutine *g)
{
	const struct fr_go_glayout *l = &r->x->layout;
	uint64_t lo = word(b, l->stack_lo), hi = word(b, l->stack_hi);

	memset(g, 0, offsetof(struct fr_goroutine, pc));
	g->gaddr = gaddr;
	g->status = fr_get_le32(b + l->status) & ~SCAN_BIT;
	g->goid = word(b, l->goid);
	if (g->status == FR_G_IDLE || g->status == FR_G_DEAD || g->status > FR_G_PREEMPTED ||
	    g->status == 5 || g->status == 7 || !g->goid || lo >= hi || hi - lo > STACK_MAX)
		return false;
	g->parent = word(b, l->parent);
	g->waitreason = b[l->waitreason];
	g->waitsince = (int64_t)word(b, l->waitsince);
	g->gopc = word(b, l->gopc) > r->bias ? word(b, l->gopc) - r->bias : 0;
	g->startpc = word(b, l->startpc) > r->bias ? word(b, l->startpc) - r->bias : 0;
	g->sched_pc = word(b, l->sched_pc);
	g->sched_sp = word(b, l->sched_sp);
	g->tracking_seq = l->tracking_seq >= 0 ? b[l->tracking_seq] : -1;
	g->nlabels = 0;
	g->npc = 0;
	return true;
}

/* The thread of a goroutine that has one (running, in a system call). */
static void thread_of(struct rd *r, const uint8_t *b, struct fr_goroutine *g)
{
	const struct fr_go_glayout *l = &r->x->layout;
	uint64_t m = word(b, l->m), tid = 0;

	if (m && rd_read(r, m + (uint64_t)l->m_procid, &tid, 8) == 0 && tid < (1u << 30))
		g->tid = (uint32_t)tid;
}

/* Where the stack of the goroutine whose g is `b` is walked from: false
 * when it is not (on a CPU, or being moved). */
static bool stack_start(struct rd *r, const uint8_t *b, uint32_t status, uint64_t *pc, uint64_t *sp)
{
	const struct fr_go_glayout *l = &r->x->layout;

	if (status == FR_G_RUNNING || status == FR_G_COPYSTACK)
		return false;
	if (status == FR_G_SYSCALL && word(b, l->syscallsp)) {
		*pc = word(b, l->syscallpc);
		*sp = word(b, l->syscallsp);
	} else {
		*pc = word(b, l->sched_pc);
		*sp = word(b, l->sched_sp);
	}
	return true;
}

/* The bytes of a stack read at once: from sp, at most STACK_READ. */
static size_t stack_window(const struct fr_go_glayout *l, const uint8_t *b, uint64_t sp)
{
	uint64_t lo = word(b, l->stack_lo), hi = word(b, l->stack_hi);

	if (sp < lo || sp >= hi || hi - lo > STACK_MAX)
		return 0;
	return hi - sp < STACK_READ ? (size_t)(hi - sp) : STACK_READ;
}

/* Everything of the goroutine whose g is `a` but the check that it did
 * not move: its thread, its stack (its window from `s`; when s->have is
 * 0, read now into s->buf, of STACK_READ bytes) and its labels. */
static void details(struct rd *r, const uint8_t *a, struct fr_goroutine *g, struct stack *s)
{
	const struct fr_go_glayout *l = &r->x->layout;
	uint64_t pc, sp, lm = word(a, l->labels);

	g->stack = FR_GSTACK_OK;
	if (g->status == FR_G_RUNNING || g->status == FR_G_SYSCALL)
		thread_of(r, a, g);
	if (g->status == FR_G_RUNNING)
		g->stack = FR_GSTACK_RUNNING;
	if (stack_start(r, a, g->status, &pc, &sp)) {
		size_t n = s->have ? 0 : stack_window(l, a, sp);

		if (n && rd_read(r, sp, s->buf, n) == 0) {
			s->base = sp;
			s->have = n;
		}
		walk(r, g, s, pc, sp, word(a, l->stack_lo), word(a, l->stack_hi));
	}
	if (lm && l->labels_kind == 2)
		labels_slice(r, g, lm);
	else if (lm)
		labels_map(r, g, lm);
}

/* Reads the goroutine at gaddr into *g alone: 1 to list it, 0 not. */
static int read_one(struct rd *r, uint64_t gaddr, struct fr_goroutine *g, uint8_t *own)
{
	const struct fr_go_glayout *l = &r->x->layout;
	uint8_t a[G_MAX], b[G_MAX];

	for (int attempt = 0; attempt < 2; attempt++) {
		struct stack s = {0, 0, own};

		if (rd_read(r, gaddr, a, l->size) < 0 || !fields(r, a, gaddr, g))
			return 0;
		details(r, a, g, &s);
		if (rd_read(r, gaddr, b, l->size) < 0)
			return 0;
		if (same(l, a, b))
			return 1;
	}
	g->stack = FR_GSTACK_CHANGED;
	g->npc = 0;
	r->st->changed++;
	return 1;
}

/* ---- the list, a batch at a time ---- */

/* What a batch of the list is read into: its g's twice, their stacks'
 * windows, the goroutines as they will be given. */
struct batch {
	uint64_t ptr[BATCH];
	uint64_t addr[BATCH];
	size_t len[BATCH];
	void *buf[BATCH];
	uint8_t ok[BATCH], ok2[BATCH], listed[BATCH];
	uint8_t *g1, *g2, *stacks, own[STACK_READ];
	struct fr_goroutine g[BATCH];
};

static void read_gs(struct rd *r, struct batch *w, size_t n, uint8_t *into, uint8_t *ok)
{
	size_t size = r->x->layout.size;

	for (size_t i = 0; i < n; i++) {
		w->addr[i] = w->ptr[i];
		w->len[i] = w->ptr[i] ? size : 0;
		w->buf[i] = into + i * size;
	}
	rd_readv(r, n, w->addr, w->len, w->buf, ok);
}

/* The first look at n goroutines: their g's, then their stacks' windows,
 * then each one's details. */
static void first_look(struct rd *r, struct batch *w, size_t n)
{
	const struct fr_go_glayout *l = &r->x->layout;
	uint8_t sok[BATCH];

	read_gs(r, w, n, w->g1, w->ok);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *a = w->g1 + i * l->size;
		uint64_t pc, sp;

		w->listed[i] = w->ptr[i] && w->ok[i] && fields(r, a, w->ptr[i], &w->g[i]);
		w->len[i] = 0;
		if (w->listed[i] && stack_start(r, a, w->g[i].status, &pc, &sp)) {
			w->addr[i] = sp;
			w->len[i] = stack_window(l, a, sp);
		}
		w->buf[i] = w->stacks + i * STACK_READ;
	}
	rd_readv(r, n, w->addr, w->len, w->buf, sok);
	for (size_t i = 0; i < n; i++) {
		struct stack s = {w->addr[i], sok[i] ? w->len[i] : 0, w->buf[i]};

		if (!w->listed[i])
			continue;
		if (!s.have)
			s.buf = w->own;
		details(r, w->g1 + i * l->size, &w->g[i], &s);
	}
}

/* Gives the batch's goroutines: those whose g did not move since the
 * first look as read, the others read again alone. */
static int give(struct rd *r, struct batch *w, size_t n, uint64_t max,
		int (*cb)(void *cbarg, const struct fr_goroutine *g), void *cbarg)
{
	const struct fr_go_glayout *l = &r->x->layout;
	int ret = 0;

	read_gs(r, w, n, w->g2, w->ok2);
	for (size_t i = 0; i < n && ret == 0; i++) {
		const uint8_t *a = w->g1 + i * l->size, *b = w->g2 + i * l->size;

		if (w->listed[i] && !(w->ok2[i] && same(l, a, b)))
			w->listed[i] = (uint8_t)read_one(r, w->ptr[i], &w->g[i], w->own);
		if (!w->listed[i])
			r->st->skipped++;
		else if (r->st->listed == max)
			ret = -E2BIG;
		else if (r->st->listed++, (ret = cb(cbarg, &w->g[i])) > 0)
			ret = 0;
	}
	return ret;
}

int fr_goroutines_read(const struct fr_go_exe *x, uint64_t bias, const struct fr_go_mem *mem,
		       uint64_t max, int (*cb)(void *cbarg, const struct fr_goroutine *g),
		       void *cbarg, struct fr_goroutines_stats *st)
{
	struct rd r = {x, bias, mem, st, 0, 0, NULL};
	struct batch *w;
	uint64_t arr, len;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!x->tab || x->layout.size < 8 || x->layout.size > G_MAX)
		return -EADDRNOTAVAIL;
	if ((ret = find_list(&r, &arr, &len)) < 0)
		return ret;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->g1 = malloc(BATCH * x->layout.size)) ||
	    !(w->g2 = malloc(BATCH * x->layout.size)) || !(w->stacks = malloc(BATCH * STACK_READ)))
		ret = -ENOMEM;
	if (ret == 0) {
		fr_gopclntab_find(x->tab, "runtime.goexit", &r.goexit, &r.goexit_end);
		r.spc = calloc(SP_CACHE, sizeof(*r.spc)); /* none: looked up each time */
	}
	for (uint64_t at = 0; at < len && ret == 0; at += BATCH) {
		size_t n = len - at < BATCH ? (size_t)(len - at) : BATCH;

		if (rd_read(&r, arr + 8 * at, w->ptr, n * 8) < 0)
			break;
		first_look(&r, w, n);
		ret = give(&r, w, n, max, cb, cbarg);
	}
	free(r.spc);
	if (w) {
		free(w->g1);
		free(w->g2);
		free(w->stacks);
	}
	free(w);
	return ret;
}
