/* The live sampled blocks (recorder/sampling/alloc_live.h). Three chained
 * hash tables: blocks by (pid, address), processes by pid (each with its
 * blocks in the order they came, for the oldest), stacks by their frames
 * (shared by reference: a process's blocks come from a few sites). */
#include "recorder/sampling/alloc_live.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PROC_BUCKETS 1024u
#define BUCKETS_MIN 1024u

struct stk {
	struct stk *hnext;
	uint64_t hash;
	uint32_t refs;
	uint16_t n;
	uint64_t ips[];
};

struct blk {
	struct blk *hnext;	 /* in the block table */
	struct blk *prev, *next; /* in its process's list, oldest first */
	uint32_t pid, tid;
	uint64_t addr, size, mean;
	int64_t time_ns;
	struct stk *stack;
};

struct lproc {
	struct lproc *hnext;
	uint32_t pid, n;
	struct blk *head, *tail;
};

struct fr_alloc_live {
	struct fr_alloc_live_limits lim;
	struct blk **blocks;
	uint32_t nbuckets; /* a power of two */
	struct stk **stacks;
	uint32_t nsbuckets;
	struct lproc *procs[PROC_BUCKETS];
	uint64_t nblocks, nstacks, bytes, evicted;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static uint32_t blk_slot(const struct fr_alloc_live *l, uint32_t pid, uint64_t addr)
{
	return (uint32_t)(mix(addr ^ ((uint64_t)pid << 40)) & (l->nbuckets - 1));
}

struct fr_alloc_live *fr_alloc_live_new(const struct fr_alloc_live_limits *lim)
{
	struct fr_alloc_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->lim = *lim;
	l->nbuckets = l->nsbuckets = BUCKETS_MIN;
	l->blocks = calloc(l->nbuckets, sizeof(*l->blocks));
	l->stacks = calloc(l->nsbuckets, sizeof(*l->stacks));
	if (!l->blocks || !l->stacks) {
		fr_alloc_live_free(l);
		return NULL;
	}
	l->bytes = sizeof(*l) + (uint64_t)(l->nbuckets + l->nsbuckets) * sizeof(void *);
	return l;
}

/* ---- stacks ---- */

static uint64_t stk_hash(const uint64_t *ips, uint16_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (uint16_t i = 0; i < n; i++)
		h = mix(h ^ ips[i]) + i;
	return h;
}

/* Doubles a table of chained entries when it holds more than its
 * buckets; keeps it as it is when memory is short. */
static void grow(void ***table, uint32_t *nb, uint64_t n, uint64_t *bytes,
		 uint32_t (*slot)(const void *e, uint32_t nb), void **(*next)(void *e))
{
	uint32_t nn = *nb * 2;
	void **t;

	if (n <= *nb || nn < *nb)
		return;
	t = calloc(nn, sizeof(*t));
	if (!t)
		return;
	for (uint32_t i = 0; i < *nb; i++) {
		for (void *e = (*table)[i], *en; e; e = en) {
			uint32_t k = slot(e, nn);

			en = *next(e);
			*next(e) = t[k];
			t[k] = e;
		}
	}
	free(*table);
	*bytes += (uint64_t)(nn - *nb) * sizeof(void *);
	*table = t;
	*nb = nn;
}

static uint32_t stk_slot_of(const void *e, uint32_t nb)
{
	return (uint32_t)(((const struct stk *)e)->hash & (nb - 1));
}

static void **stk_next(void *e)
{
	return (void **)&((struct stk *)e)->hnext;
}

static uint32_t blk_slot_of(const void *e, uint32_t nb)
{
	const struct blk *b = e;

	return (uint32_t)(mix(b->addr ^ ((uint64_t)b->pid << 40)) & (nb - 1));
}

static void **blk_next(void *e)
{
	return (void **)&((struct blk *)e)->hnext;
}

static struct stk *stk_get(struct fr_alloc_live *l, const uint64_t *ips, uint16_t n)
{
	uint64_t h = stk_hash(ips, n);
	struct stk **b = &l->stacks[h & (l->nsbuckets - 1)], *s;

	for (s = *b; s; s = s->hnext) {
		if (s->hash == h && s->n == n && !memcmp(s->ips, ips, n * sizeof(*ips))) {
			s->refs++;
			return s;
		}
	}
	s = malloc(sizeof(*s) + n * sizeof(*ips));
	if (!s)
		return NULL;
	s->hash = h;
	s->refs = 1;
	s->n = n;
	memcpy(s->ips, ips, n * sizeof(*ips));
	s->hnext = *b;
	*b = s;
	l->nstacks++;
	l->bytes += sizeof(*s) + n * sizeof(*ips);
	grow((void ***)&l->stacks, &l->nsbuckets, l->nstacks, &l->bytes, stk_slot_of, stk_next);
	return s;
}

static void stk_put(struct fr_alloc_live *l, struct stk *s)
{
	struct stk **b;

	if (--s->refs)
		return;
	for (b = &l->stacks[s->hash & (l->nsbuckets - 1)]; *b != s; b = &(*b)->hnext)
		;
	*b = s->hnext;
	l->nstacks--;
	l->bytes -= sizeof(*s) + s->n * sizeof(uint64_t);
	free(s);
}

/* ---- processes and blocks ---- */

static struct lproc *proc_get(struct fr_alloc_live *l, uint32_t pid, bool add)
{
	struct lproc **b = &l->procs[pid % PROC_BUCKETS], *p;

	for (p = *b; p && p->pid != pid; p = p->hnext)
		;
	if (p || !add || !(p = calloc(1, sizeof(*p))))
		return p;
	p->pid = pid;
	p->hnext = *b;
	*b = p;
	l->bytes += sizeof(*p);
	return p;
}

static void proc_put(struct fr_alloc_live *l, struct lproc *p)
{
	struct lproc **b;

	if (p->n)
		return;
	for (b = &l->procs[p->pid % PROC_BUCKETS]; *b != p; b = &(*b)->hnext)
		;
	*b = p->hnext;
	l->bytes -= sizeof(*p);
	free(p);
}

static struct blk **blk_find(struct fr_alloc_live *l, uint32_t pid, uint64_t addr)
{
	struct blk **b = &l->blocks[blk_slot(l, pid, addr)];

	while (*b && ((*b)->pid != pid || (*b)->addr != addr))
		b = &(*b)->hnext;
	return b;
}

static void to_public(const struct blk *b, struct fr_alloc_block *out)
{
	*out = (struct fr_alloc_block){.pid = b->pid,
				       .tid = b->tid,
				       .addr = b->addr,
				       .size = b->size,
				       .mean = b->mean,
				       .time_ns = b->time_ns,
				       .nframes = b->stack->n,
				       .ips = b->stack->ips};
}

/* Unlinks *slot's block from both lists and frees it (p its process). */
static void blk_remove(struct fr_alloc_live *l, struct lproc *p, struct blk **slot)
{
	struct blk *b = *slot;

	*slot = b->hnext;
	if (b->prev)
		b->prev->next = b->next;
	else
		p->head = b->next;
	if (b->next)
		b->next->prev = b->prev;
	else
		p->tail = b->prev;
	p->n--;
	l->nblocks--;
	l->bytes -= sizeof(*b);
	stk_put(l, b->stack);
	free(b);
}

/* Makes room for a block of p: evicts its oldest. Returns 1, or 0 when
 * it had none. */
static int evict_oldest(struct fr_alloc_live *l, struct lproc *p)
{
	if (!p->head)
		return 0;
	blk_remove(l, p, blk_find(l, p->pid, p->head->addr));
	l->evicted++;
	return 1;
}

static bool full(const struct fr_alloc_live *l, const struct lproc *p, uint16_t nframes)
{
	return p->n >= l->lim.per_proc || l->nblocks >= l->lim.total ||
	       l->bytes + sizeof(struct blk) + sizeof(struct stk) + nframes * sizeof(uint64_t) >
		       l->lim.bytes;
}

/* Whose oldest block makes room for one of p: p's at its own bound,
 * else the process holding the most (one that fills the table gives up
 * its own blocks, not another's). */
static struct lproc *victim(struct fr_alloc_live *l, struct lproc *p)
{
	struct lproc *big = p;

	if (p->n >= l->lim.per_proc)
		return p;
	for (uint32_t i = 0; i < PROC_BUCKETS; i++)
		for (struct lproc *q = l->procs[i]; q; q = q->hnext)
			if (q->n > big->n)
				big = q;
	return big;
}

int fr_alloc_live_add(struct fr_alloc_live *l, const struct fr_alloc_block *in)
{
	struct lproc *p = proc_get(l, in->pid, true);
	struct blk **slot, *b;
	int evicted = 0;

	if (!p)
		return -ENOMEM;
	slot = blk_find(l, in->pid, in->addr);
	if (*slot)
		blk_remove(l, p, slot);
	while (full(l, p, in->nframes)) {
		struct lproc *v = victim(l, p);

		if (!evict_oldest(l, v)) {
			l->evicted++;
			proc_put(l, p);
			return -ENOSPC;
		}
		if (v != p)
			proc_put(l, v);
		evicted = 1;
	}
	b = calloc(1, sizeof(*b));
	if (b && !(b->stack = stk_get(l, in->ips, in->nframes))) {
		free(b);
		b = NULL;
	}
	if (!b) {
		proc_put(l, p);
		return -ENOMEM;
	}
	b->pid = in->pid;
	b->tid = in->tid;
	b->addr = in->addr;
	b->size = in->size;
	b->mean = in->mean;
	b->time_ns = in->time_ns;
	slot = &l->blocks[blk_slot(l, in->pid, in->addr)];
	b->hnext = *slot;
	*slot = b;
	b->prev = p->tail;
	if (p->tail)
		p->tail->next = b;
	else
		p->head = b;
	p->tail = b;
	p->n++;
	l->nblocks++;
	l->bytes += sizeof(*b);
	grow((void ***)&l->blocks, &l->nbuckets, l->nblocks, &l->bytes, blk_slot_of, blk_next);
	return evicted;
}

int fr_alloc_live_take(struct fr_alloc_live *l, uint32_t pid, uint64_t addr, fr_alloc_live_fn fn,
		       void *arg)
{
	struct blk **slot = blk_find(l, pid, addr);
	struct fr_alloc_block pub;
	struct lproc *p;

	if (!*slot)
		return -ENOENT;
	p = proc_get(l, pid, false);
	if (fn) {
		to_public(*slot, &pub);
		fn(arg, &pub);
	}
	blk_remove(l, p, slot);
	proc_put(l, p);
	return 0;
}

void fr_alloc_live_each(struct fr_alloc_live *l, fr_alloc_live_fn fn, void *arg)
{
	struct fr_alloc_block pub;

	for (uint32_t i = 0; i < PROC_BUCKETS; i++) {
		for (struct lproc *p = l->procs[i]; p; p = p->hnext) {
			for (struct blk *b = p->head; b; b = b->next) {
				to_public(b, &pub);
				fn(arg, &pub);
			}
		}
	}
}

void fr_alloc_live_drop_proc(struct fr_alloc_live *l, uint32_t pid, fr_alloc_live_fn fn, void *arg)
{
	struct lproc *p = proc_get(l, pid, false);
	struct fr_alloc_block pub;

	if (!p)
		return;
	while (p->head) {
		if (fn) {
			to_public(p->head, &pub);
			fn(arg, &pub);
		}
		blk_remove(l, p, blk_find(l, pid, p->head->addr));
	}
	proc_put(l, p);
}

void fr_alloc_live_counts(const struct fr_alloc_live *l, struct fr_alloc_live_counts *out)
{
	out->blocks = l->nblocks;
	out->stacks = l->nstacks;
	out->bytes = l->bytes;
	out->evicted = l->evicted;
}

void fr_alloc_live_free(struct fr_alloc_live *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < PROC_BUCKETS; i++)
		while (l->procs[i])
			fr_alloc_live_drop_proc(l, l->procs[i]->pid, NULL, NULL);
	free(l->blocks);
	free(l->stacks);
	free(l);
}
