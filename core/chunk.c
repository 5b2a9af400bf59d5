/* Chunk codec: builder (ingest side), sealing (encode + compress) and a
 * fully validating decoder. The format is documented in core/chunk.h.
 *
 * The builder owns fixed-capacity arrays sized in fr_chunk_builder_new():
 * one column per sample field, a stack table with its frame arena and an
 * open-addressing hash table that interns stacks by (pid, nr_kernel,
 * frames). Adding a sample therefore never allocates; it fails with
 * -ENOSPC when a capacity or the raw size budget would be exceeded.
 *
 * Sealing runs off the hot path and may allocate: it looks up processes,
 * threads and mappings through the caller's ops, interns strings and build
 * ids, gives each distinct (cgroup, parent) of the chunk's processes a
 * label set and each of their ancestors without samples a set naming its
 * parent (so descendants can be found from chunks alone, through the
 * processes that only fork and wait), sorts the stacks root first (for
 * front coding) and the samples by (cpu, time) (for runs and the time
 * grid), encodes the block and
 * compresses it into one zstd frame. What each choice saves was measured
 * on real chunks: docs/performance.md, "Storage efficiency".
 *
 * The decoder trusts nothing: every count is checked against the bytes
 * left (each entry takes at least one byte), every id against its table,
 * every varint against overflow and the width of its field. Any violation
 * is -EBADMSG.
 */
#include "core/chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/compress.h"
#include "core/crc32c.h"
#include "core/le.h"
#include "core/log.h"

/* Sealing happens about once a second; level 5 gets nearly all of what
 * levels up to 9 save over 3 (3% of the bytes) for little more seal time,
 * while 9 and above halve the ingest rate (docs/performance.md). Chunks
 * that a ring's journal only keeps until it merges them are sealed at a
 * lower level (fr_chunk_builder_set_level). */
#define ZSTD_LEVEL 5
#define EVENT_SLOTS 64

/* ------------------------------------------------------------------ */
/* Builder                                                              */

struct bstack {
	uint64_t hash;
	uint32_t pid;
	uint32_t first; /* index of the leaf frame in frames[] */
	uint16_t nr_kernel;
	uint16_t nr_frames;
};

struct fr_chunk_builder {
	uint32_t max_samples;
	size_t max_raw;
	uint32_t max_stacks;
	uint32_t max_frames;
	uint32_t table_mask;

	uint32_t nsamples;
	uint32_t nstacks;
	uint32_t nframes;
	uint32_t nevents;
	size_t raw_est;
	int64_t first_ns, last_ns, prev_ns;

	int64_t *time;
	uint32_t *tid, *cpu, *event, *rate, *stack;
	uint64_t *weight;

	struct bstack *stacks;
	uint64_t *frames;
	uint32_t *table; /* stack index + 1; 0 is an empty slot */

	struct fr_chunk_event_stats events[EVENT_SLOTS];
	struct fr_zstd *zstd; /* created on the first seal */
	int level;            /* zstd level */
};

/* Ten table counts, the length of the "" string, the sample count and
 * four empty run lists: the smallest block. */
#define RAW_FIXED 16
/* Raw bytes allowed per distinct stack for the process, thread, mapping
 * and string entries that sealing adds; these are unknown until then. */
#define META_ALLOWANCE 24

static void builder_reset(struct fr_chunk_builder *b)
{
	b->nsamples = 0;
	b->nstacks = 0;
	b->nframes = 0;
	b->nevents = 0;
	b->raw_est = RAW_FIXED;
	b->first_ns = 0;
	b->last_ns = 0;
	b->prev_ns = 0;
	memset(b->table, 0, ((size_t)b->table_mask + 1) * sizeof(*b->table));
}

struct fr_chunk_builder *fr_chunk_builder_new(uint32_t max_samples, size_t max_raw)
{
	struct fr_chunk_builder *b;
	uint64_t frames, slots = 16;

	if (max_samples == 0 || max_samples > (1u << 26))
		return NULL;
	if (max_raw > FR_CHUNK_RAW_MAX / 2)
		max_raw = FR_CHUNK_RAW_MAX / 2;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->max_samples = max_samples;
	b->max_raw = max_raw;
	b->level = ZSTD_LEVEL;
	b->max_stacks = max_samples;
	/* Every frame takes at least one byte of block and most take two or
	 * more, so the arena is bounded by the raw budget, not by the worst
	 * case of max_samples distinct deepest stacks. The first sample of a
	 * chunk always fits. */
	frames = (uint64_t)max_samples * FR_MAX_FRAMES;
	if (frames > max_raw / 2 + FR_MAX_FRAMES)
		frames = max_raw / 2 + FR_MAX_FRAMES;
	b->max_frames = (uint32_t)frames;
	while (slots < 2 * (uint64_t)b->max_stacks)
		slots <<= 1;
	b->table_mask = (uint32_t)(slots - 1);

	b->time = malloc(max_samples * sizeof(*b->time));
	b->tid = malloc(max_samples * sizeof(*b->tid));
	b->cpu = malloc(max_samples * sizeof(*b->cpu));
	b->event = malloc(max_samples * sizeof(*b->event));
	b->rate = malloc(max_samples * sizeof(*b->rate));
	b->stack = malloc(max_samples * sizeof(*b->stack));
	b->weight = malloc(max_samples * sizeof(*b->weight));
	b->stacks = malloc(b->max_stacks * sizeof(*b->stacks));
	b->frames = malloc(b->max_frames * sizeof(*b->frames));
	b->table = malloc(slots * sizeof(*b->table));
	if (!b->time || !b->tid || !b->cpu || !b->event || !b->rate ||
	    !b->stack || !b->weight || !b->stacks || !b->frames || !b->table)
		goto err_free;
	builder_reset(b);
	return b;

err_free:
	fr_chunk_builder_free(b);
	return NULL;
}

void fr_chunk_builder_set_level(struct fr_chunk_builder *b, int level)
{
	if (level < 1 || level > 19 || level == b->level)
		return;
	b->level = level;
	fr_zstd_free(b->zstd);
	b->zstd = NULL;
}

void fr_chunk_builder_free(struct fr_chunk_builder *b)
{
	if (!b)
		return;
	free(b->time);
	free(b->tid);
	free(b->cpu);
	free(b->event);
	free(b->rate);
	free(b->stack);
	free(b->weight);
	free(b->stacks);
	free(b->frames);
	free(b->table);
	fr_zstd_free(b->zstd);
	free(b);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint64_t stack_hash(uint32_t pid, unsigned nr_kernel, unsigned nr,
			   const uint64_t *ips)
{
	uint64_t h = mix(0x243f6a8885a308d3ull, (uint64_t)pid << 32 | nr_kernel << 16 | nr);

	for (unsigned i = 0; i < nr; i++)
		h = mix(h, ips[i]);
	return h;
}

/* Encoded size of a stack entry. */
static size_t stack_bytes(uint32_t pid, unsigned nr_kernel, unsigned nr,
			  const uint64_t *ips)
{
	size_t n = fr_varint_len(pid) + fr_varint_len(nr_kernel) + fr_varint_len(nr);

	for (unsigned i = 0; i < nr; i++)
		n += i == 0 ? fr_varint_len(ips[0]) : fr_varint_len(fr_zigzag((int64_t)(ips[i] - ips[i - 1])));
	return n;
}

int fr_chunk_builder_add(struct fr_chunk_builder *b, const struct fr_sample *s)
{
	return fr_chunk_builder_add_known(b, s, NULL);
}

int fr_chunk_builder_add_known(struct fr_chunk_builder *b, const struct fr_sample *s,
			       uint32_t *stack)
{
	unsigned nr = s->nr_frames, nr_kernel = s->nr_kernel;
	uint64_t h = 0;
	uint32_t slot = 0, id = UINT32_MAX;
	size_t need;

	if (b->nsamples >= b->max_samples)
		return -ENOSPC;
	/* Deeper stacks are the recorder's bug; keep the leaf end. */
	if (nr > FR_MAX_FRAMES)
		nr = FR_MAX_FRAMES;
	if (nr_kernel > nr)
		nr_kernel = nr;
	if (!s->ips)
		nr = nr_kernel = 0;

	if (stack && *stack < b->nstacks && b->stacks[*stack].pid == s->pid)
		id = *stack;
	else
		h = stack_hash(s->pid, nr_kernel, nr, s->ips);
	for (slot = (uint32_t)h & b->table_mask; id == UINT32_MAX && b->table[slot];
	     slot = (slot + 1) & b->table_mask) {
		const struct bstack *st = &b->stacks[b->table[slot] - 1];

		if (st->hash == h && st->pid == s->pid && st->nr_kernel == nr_kernel &&
		    st->nr_frames == nr &&
		    (nr == 0 || memcmp(&b->frames[st->first], s->ips, nr * sizeof(*s->ips)) == 0)) {
			id = b->table[slot] - 1;
			break;
		}
	}

	need = fr_varint_len(fr_zigzag((int64_t)((uint64_t)s->time_ns - (uint64_t)b->prev_ns))) +
	       fr_varint_len(s->tid) + fr_varint_len(s->pid) + fr_varint_len(s->cpu) + fr_varint_len(s->event) +
	       fr_varint_len(s->weight) + fr_varint_len(s->rate_hz) + 1 /* labelset */;
	if (id == UINT32_MAX) {
		if (b->nstacks >= b->max_stacks || nr > b->max_frames - b->nframes)
			return -ENOSPC;
		need += stack_bytes(s->pid, nr_kernel, nr, s->ips) + META_ALLOWANCE;
		id = b->nstacks;
	}
	need += fr_varint_len(id);
	if (b->nsamples > 0 && b->raw_est + need > b->max_raw)
		return -ENOSPC;

	if (id == b->nstacks) {
		struct bstack *st = &b->stacks[id];

		st->hash = h;
		st->pid = s->pid;
		st->first = b->nframes;
		st->nr_kernel = (uint16_t)nr_kernel;
		st->nr_frames = (uint16_t)nr;
		if (nr)
			memcpy(&b->frames[b->nframes], s->ips, nr * sizeof(*s->ips));
		b->nframes += nr;
		b->nstacks++;
		b->table[slot] = id + 1;
	}

	b->time[b->nsamples] = s->time_ns;
	b->tid[b->nsamples] = s->tid;
	b->cpu[b->nsamples] = s->cpu;
	b->event[b->nsamples] = s->event;
	b->rate[b->nsamples] = s->rate_hz;
	b->weight[b->nsamples] = s->weight;
	b->stack[b->nsamples] = id;
	if (b->nsamples == 0 || s->time_ns < b->first_ns)
		b->first_ns = s->time_ns;
	if (b->nsamples == 0 || s->time_ns > b->last_ns)
		b->last_ns = s->time_ns;
	b->prev_ns = s->time_ns;
	b->nsamples++;
	b->raw_est += need;
	if (stack)
		*stack = id;
	return 0;
}

void fr_chunk_builder_count(struct fr_chunk_builder *b, uint32_t event,
			    uint64_t lost, uint64_t throttled, uint64_t truncated)
{
	struct fr_chunk_event_stats *e = NULL;

	for (uint32_t i = 0; i < b->nevents; i++) {
		if (b->events[i].event == event) {
			e = &b->events[i];
			break;
		}
	}
	if (!e) {
		/* More distinct event ids than slots cannot happen with the
		 * events flightrec defines; the counts would be dropped. */
		if (b->nevents >= EVENT_SLOTS)
			return;
		e = &b->events[b->nevents++];
		*e = (struct fr_chunk_event_stats){.event = event};
		b->raw_est += 4 * 10;
	}
	e->lost += lost;
	e->throttled += throttled;
	e->truncated += truncated;
}

uint32_t fr_chunk_builder_samples(const struct fr_chunk_builder *b)
{
	return b->nsamples;
}

int64_t fr_chunk_builder_first_ns(const struct fr_chunk_builder *b)
{
	return b->nsamples ? b->first_ns : 0;
}

/* ------------------------------------------------------------------ */
/* Sealing                                                              */

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void wb_reserve(struct wbuf *w, size_t n)
{
	size_t cap;
	unsigned char *p;

	if (w->err || w->cap - w->len >= n)
		return;
	cap = w->cap ? w->cap : 4096;
	while (cap - w->len < n)
		cap *= 2;
	p = realloc(w->p, cap);
	if (!p) {
		w->err = -ENOMEM;
		return;
	}
	w->p = p;
	w->cap = cap;
}

static void wb_v(struct wbuf *w, uint64_t v)
{
	wb_reserve(w, 10);
	if (w->err)
		return;
	w->len = (size_t)(fr_varint_put(w->p + w->len, v) - w->p);
}

static void wb_z(struct wbuf *w, int64_t v)
{
	wb_v(w, fr_zigzag(v));
}

static void wb_bytes(struct wbuf *w, const void *p, size_t n)
{
	wb_reserve(w, n);
	if (w->err || n == 0)
		return;
	memcpy(w->p + w->len, p, n);
	w->len += n;
}

/* Interning of byte strings (strings and build ids) for one seal. The hash
 * table is sized up front for the most entries the seal can add, so it
 * never rehashes. Id 0 is the empty string. */
struct strtab {
	struct wbuf blob;
	struct {
		uint32_t off, len;
	} *ent;
	uint32_t n, cap;
	uint32_t *slots; /* index + 1 */
	uint32_t mask;
};

static int strtab_init(struct strtab *t, size_t max_strings)
{
	size_t slots = 16;

	while (slots < 2 * max_strings)
		slots <<= 1;
	memset(t, 0, sizeof(*t));
	t->ent = malloc(max_strings * sizeof(*t->ent));
	t->slots = calloc(slots, sizeof(*t->slots));
	if (!t->ent || !t->slots)
		return -ENOMEM;
	t->cap = (uint32_t)max_strings;
	t->mask = (uint32_t)(slots - 1);
	t->ent[0].off = 0;
	t->ent[0].len = 0;
	t->n = 1;
	return 0;
}

static void strtab_fini(struct strtab *t)
{
	free(t->blob.p);
	free(t->ent);
	free(t->slots);
}

/* Returns the id of the `len` bytes at `s` (0 when len is 0), or -ENOMEM. */
static int64_t strtab_intern_n(struct strtab *t, const void *s, size_t len)
{
	const unsigned char *c = s;
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t slot;

	if (len == 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	for (slot = (uint32_t)h & t->mask; t->slots[slot]; slot = (slot + 1) & t->mask) {
		uint32_t id = t->slots[slot] - 1;

		if (t->ent[id].len == len && memcmp(t->blob.p + t->ent[id].off, s, len) == 0)
			return id;
	}
	/* The caller sized the table for every entry it can intern. */
	if (t->n >= t->cap)
		return -ENOMEM;
	wb_bytes(&t->blob, s, len);
	if (t->blob.err)
		return t->blob.err;
	t->ent[t->n].off = (uint32_t)(t->blob.len - len);
	t->ent[t->n].len = (uint32_t)len;
	t->slots[slot] = t->n + 1;
	return t->n++;
}

/* Returns the id of `s` (NULL and "" are 0), or -ENOMEM. */
static int64_t strtab_intern(struct strtab *t, const char *s)
{
	return s ? strtab_intern_n(t, s, strnlen(s, FR_CHUNK_STRING_MAX)) : 0;
}

static void strtab_write(struct wbuf *w, const struct strtab *t, uint32_t from)
{
	wb_v(w, t->n - from);
	for (uint32_t i = from; i < t->n; i++) {
		wb_v(w, t->ent[i].len);
		/* No pointer arithmetic on a blob that was never allocated. */
		if (t->ent[i].len)
			wb_bytes(w, t->blob.p + t->ent[i].off, t->ent[i].len);
	}
}

struct pidaddr {
	uint32_t pid;
	uint64_t addr;
};

/* Sealing sorts every distinct pid and tid and every user frame of every
 * stack; with qsort's callback per comparison that was 40% of the ingest
 * cost. LSD radix sorts, 8 bits a pass, skipping passes whose digit is the
 * same for every element (the high bytes of pids and of addresses), are
 * several times faster. `tmp` has room for n elements. */
static void radix_u32(uint32_t *v, uint32_t *tmp, size_t n)
{
	uint32_t *src = v, *dst = tmp, *t;

	for (unsigned shift = 0; shift < 32; shift += 8) {
		size_t count[256] = {0}, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 255]++;
		if (count[(src[0] >> shift) & 255] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 255]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static unsigned pidaddr_digit(const struct pidaddr *e, unsigned pass)
{
	/* Passes 0..7: the address, low byte first; 8..11: the pid. */
	return pass < 8 ? (unsigned)(e->addr >> (pass * 8)) & 255
			: (e->pid >> ((pass - 8) * 8)) & 255;
}

static void radix_pidaddr(struct pidaddr *v, struct pidaddr *tmp, size_t n)
{
	struct pidaddr *src = v, *dst = tmp, *t;

	for (unsigned pass = 0; pass < 12; pass++) {
		size_t count[256] = {0}, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[pidaddr_digit(&src[i], pass)]++;
		if (count[pidaddr_digit(&src[0], pass)] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[pidaddr_digit(&src[i], pass)]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static size_t sort_unique(uint32_t *v, uint32_t *tmp, size_t n)
{
	size_t k = 0;

	if (n == 0)
		return 0;
	radix_u32(v, tmp, n);
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[k])
			v[++k] = v[i];
	return k + 1;
}

/* Index of `pid` in the sorted, distinct `pids` (it is there). */
static uint32_t pid_index(const uint32_t *pids, size_t n, uint32_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pids[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/* The pairs of a label set, as string ids (0: the pair is absent): a
 * process's {"cgroup": path, "ppid": N}, or an ancestor's {"pid": N,
 * "ppid": M}. */
struct lset {
	uint32_t pid, ppid, cgroup;
};

struct seal {
	uint32_t *pids, *tids;
	size_t npids, ntids;
	struct pidaddr *pairs;
	size_t npairs;
	struct strtab strs, bids;
	struct wbuf procs, threads, maps;
	uint32_t nprocs, nthreads, nmaps;
	/* Label sets: set k + 1 is ls[k]. Those of the chunk's processes come
	 * first (pid_ls[pid index] is the set of the pid's samples, 0: none;
	 * ls_slots finds a (cgroup, ppid) already given a set), then those of
	 * ancestors (anc_slots holds every pid the walk up asked about). */
	uint32_t nlabelsets;
	int64_t cgroup_key, ppid_key, pid_key; /* string ids, once interned */
	struct lset *ls;
	uint32_t *pid_ls, *ppids;
	uint32_t *ls_slots, ls_mask;
	uint32_t *anc_slots, anc_mask, nanc, max_anc;
	uint32_t *stack_ls;    /* builder stack id -> label set */
	uint32_t *stack_order; /* encoding position -> builder stack id */
	uint32_t *stack_rank;  /* builder stack id -> encoding position */
	uint32_t *order;       /* samples by (cpu, time) */
	uint64_t *col;         /* one sample column in that order */
	struct wbuf block;
};

static void seal_fini(struct seal *s)
{
	free(s->pids);
	free(s->tids);
	free(s->pairs);
	strtab_fini(&s->strs);
	strtab_fini(&s->bids);
	free(s->procs.p);
	free(s->threads.p);
	free(s->maps.p);
	free(s->ls);
	free(s->pid_ls);
	free(s->ppids);
	free(s->ls_slots);
	free(s->anc_slots);
	free(s->stack_ls);
	free(s->stack_order);
	free(s->stack_rank);
	free(s->order);
	free(s->col);
	free(s->block.p);
}

/* Collects the distinct pids (of stacks: a sample's pid is its stack's)
 * and tids, and the (pid, address) pairs of every user frame of every
 * stack, sorted. */
static int seal_collect(struct seal *s, const struct fr_chunk_builder *b)
{
	size_t user = 0, n_ids = (size_t)b->nsamples + b->nstacks + 1;
	void *tmp;

	s->pids = malloc(n_ids * sizeof(*s->pids));
	s->tids = malloc(n_ids * sizeof(*s->tids));
	for (uint32_t i = 0; i < b->nstacks; i++)
		user += b->stacks[i].nr_frames - b->stacks[i].nr_kernel;
	s->pairs = malloc((user + 1) * sizeof(*s->pairs));
	tmp = malloc((user + 1) * sizeof(*s->pairs) > n_ids * sizeof(uint32_t)
			     ? (user + 1) * sizeof(*s->pairs)
			     : n_ids * sizeof(uint32_t));
	if (!s->pids || !s->tids || !s->pairs || !tmp) {
		free(tmp);
		return -ENOMEM;
	}

	for (uint32_t i = 0; i < b->nstacks; i++)
		s->pids[i] = b->stacks[i].pid;
	s->npids = sort_unique(s->pids, tmp, b->nstacks);
	memcpy(s->tids, b->tid, b->nsamples * sizeof(*s->tids));
	s->ntids = sort_unique(s->tids, tmp, b->nsamples);

	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[i];

		for (unsigned k = st->nr_kernel; k < st->nr_frames; k++)
			s->pairs[s->npairs++] = (struct pidaddr){
				.pid = st->pid, .addr = b->frames[st->first + k]};
	}
	if (s->npairs)
		radix_pidaddr(s->pairs, tmp, s->npairs);
	free(tmp);
	return 0;
}

static int64_t intern_build_id(struct seal *s, uint8_t len, const uint8_t *id)
{
	return strtab_intern_n(&s->bids, id, len > FR_BUILD_ID_MAX ? FR_BUILD_ID_MAX : len);
}

/* The string id of label key `name`, interned on first use into *key.
 * Returns it or -ENOMEM. */
static int64_t label_key(struct seal *s, int64_t *key, const char *name)
{
	if (*key <= 0)
		*key = strtab_intern(&s->strs, name);
	return *key;
}

/* The string id of `v` in decimal, or -ENOMEM. */
static int64_t intern_u32(struct seal *s, uint32_t v)
{
	char num[10];
	size_t n = sizeof(num);

	do {
		num[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return strtab_intern_n(&s->strs, num + n, sizeof(num) - n);
}

/* The label set of a process in cgroup `path` (NULL or "": unknown) whose
 * parent is `ppid` (0: unknown): set 0 when both are unknown, else one set
 * per distinct (cgroup, ppid), numbered in the order first seen (pids
 * increasing). Returns the set or -ENOMEM. */
static int64_t proc_labelset(struct seal *s, const char *path, uint32_t ppid)
{
	int64_t cg = 0, pp = 0;
	uint32_t slot;

	if (path && *path) {
		if (label_key(s, &s->cgroup_key, "cgroup") < 0)
			return -ENOMEM;
		cg = strtab_intern(&s->strs, path);
	}
	if (ppid) {
		if (label_key(s, &s->ppid_key, "ppid") < 0)
			return -ENOMEM;
		pp = intern_u32(s, ppid);
	}
	if (cg < 0 || pp < 0)
		return -ENOMEM;
	if (!cg && !pp)
		return 0;
	for (slot = (uint32_t)mix((uint64_t)cg << 32, (uint64_t)pp) & s->ls_mask;
	     s->ls_slots[slot]; slot = (slot + 1) & s->ls_mask) {
		const struct lset *l = &s->ls[s->ls_slots[slot] - 1];

		if (l->cgroup == cg && l->ppid == pp)
			return s->ls_slots[slot];
	}
	s->ls[s->nlabelsets++] = (struct lset){.cgroup = (uint32_t)cg, .ppid = (uint32_t)pp};
	s->ls_slots[slot] = s->nlabelsets;
	return s->nlabelsets;
}

static int seal_procs(struct seal *s, const struct fr_chunk_meta_ops *ops, int64_t first_ns)
{
	size_t slots = 16;
	int64_t prev = -1;

	/* A set per process at most, then the ancestors'. */
	while (slots < 2 * (s->npids + 1))
		slots <<= 1;
	s->ls = malloc((s->npids + s->max_anc + 1) * sizeof(*s->ls));
	s->pid_ls = calloc(s->npids + 1, sizeof(*s->pid_ls));
	s->ppids = calloc(s->npids + 1, sizeof(*s->ppids));
	s->ls_slots = calloc(slots, sizeof(*s->ls_slots));
	if (!s->ls || !s->pid_ls || !s->ppids || !s->ls_slots)
		return -ENOMEM;
	s->ls_mask = (uint32_t)(slots - 1);
	for (size_t i = 0; ops && ops->proc && i < s->npids; i++) {
		struct fr_proc_info pi;
		int64_t comm, exe, bid, ls;

		memset(&pi, 0, sizeof(pi));
		if (ops->proc(ops->arg, s->pids[i], &pi) < 0)
			continue;
		comm = strtab_intern(&s->strs, pi.comm);
		exe = strtab_intern(&s->strs, pi.exe);
		bid = intern_build_id(s, pi.build_id_len, pi.build_id);
		ls = proc_labelset(s, pi.cgroup, pi.ppid);
		if (comm < 0 || exe < 0 || bid < 0 || ls < 0)
			return -ENOMEM;
		s->pid_ls[i] = (uint32_t)ls;
		s->ppids[i] = pi.ppid;
		wb_v(&s->procs, (uint64_t)((int64_t)i - prev - 1));
		wb_v(&s->procs, pi.uid);
		wb_v(&s->procs, (uint64_t)comm);
		wb_v(&s->procs, (uint64_t)exe);
		wb_z(&s->procs, (int64_t)((uint64_t)pi.start_ns - (uint64_t)first_ns));
		wb_v(&s->procs, (uint64_t)bid);
		s->nprocs++;
		prev = (int64_t)i;
	}
	return s->procs.err;
}

/* Whether the walk up has asked about `pid` already; else notes it.
 * Returns 1 (seen), 0 (noted now) or -ENOSPC (max_anc pids noted). */
static int anc_seen(struct seal *s, uint32_t pid)
{
	uint32_t slot;

	for (slot = (uint32_t)mix(0, pid) & s->anc_mask; s->anc_slots[slot];
	     slot = (slot + 1) & s->anc_mask)
		if (s->anc_slots[slot] == pid)
			return 1;
	if (s->nanc >= s->max_anc)
		return -ENOSPC;
	s->anc_slots[slot] = pid;
	s->nanc++;
	return 0;
}

/* A process that only forks and waits (a shell, make, the `sh -c` between
 * make and a compiler) is rarely sampled, yet the descendants of a process
 * are found through it. So from each process of the chunk, the chain of
 * parents is walked up through the processes that have no samples here,
 * and each is given a set {"pid": N, "ppid": M} that no sample refers to.
 * A walk stops at a process of the chunk (its own walk goes on from
 * there), at a pid asked about before, at an unknown process or one
 * without a parent; at most max_anc pids are asked about in all, which
 * also ends cycles. Returns 0 or -ENOMEM. */
static int seal_ancestors(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	size_t slots = 16;

	while (slots < 2 * ((size_t)s->max_anc + 1))
		slots <<= 1;
	s->anc_slots = calloc(slots, sizeof(*s->anc_slots));
	if (!s->anc_slots)
		return -ENOMEM;
	s->anc_mask = (uint32_t)(slots - 1);
	for (size_t i = 0; ops && ops->proc && i < s->npids; i++) {
		uint32_t pid = s->ppids[i];

		while (pid) {
			struct fr_proc_info pi;
			size_t k = pid_index(s->pids, s->npids, pid);
			int64_t id, parent;

			if ((k < s->npids && s->pids[k] == pid) || anc_seen(s, pid) != 0)
				break;
			memset(&pi, 0, sizeof(pi));
			if (ops->proc(ops->arg, pid, &pi) < 0 || !pi.ppid)
				break;
			if (label_key(s, &s->pid_key, "pid") < 0 ||
			    label_key(s, &s->ppid_key, "ppid") < 0)
				return -ENOMEM;
			id = intern_u32(s, pid);
			parent = intern_u32(s, pi.ppid);
			if (id < 0 || parent < 0)
				return -ENOMEM;
			s->ls[s->nlabelsets++] =
				(struct lset){.pid = (uint32_t)id, .ppid = (uint32_t)parent};
			pid = pi.ppid;
		}
	}
	return 0;
}

static int seal_threads(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	int64_t prev = -1;

	for (size_t i = 0; ops && ops->thread && i < s->ntids; i++) {
		struct fr_thread_info ti;
		int64_t name;

		memset(&ti, 0, sizeof(ti));
		if (ops->thread(ops->arg, s->tids[i], &ti) < 0)
			continue;
		name = strtab_intern(&s->strs, ti.name);
		if (name < 0)
			return -ENOMEM;
		wb_v(&s->threads, (uint64_t)((int64_t)s->tids[i] - prev - 1));
		wb_z(&s->threads, (int64_t)ti.pid - (int64_t)s->tids[i]);
		wb_v(&s->threads, (uint64_t)name);
		s->nthreads++;
		prev = s->tids[i];
	}
	return s->threads.err;
}

/* Walks the sorted (pid, address) pairs; a mapping found for one address
 * covers the following ones up to its end, so the ops are asked once per
 * mapping (and once per unmapped address), and the table comes out sorted
 * by (pid, start). Mappings that do not contain the address asked for or
 * overlap the previous one are inconsistent answers and left out. */
static int seal_maps(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	bool have = false;
	uint32_t cur_pid = 0, prev_pidx = 0;
	uint64_t cur_start = 0, cur_end = 0;

	for (size_t i = 0; ops && ops->mapping && i < s->npairs; i++) {
		const struct pidaddr *pa = &s->pairs[i];
		struct fr_map_info mi;
		int64_t path, bid;
		uint32_t pidx;

		if (have && pa->pid == cur_pid && pa->addr >= cur_start && pa->addr < cur_end)
			continue;
		if (i > 0 && pa->pid == s->pairs[i - 1].pid && pa->addr == s->pairs[i - 1].addr)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (ops->mapping(ops->arg, pa->pid, pa->addr, &mi) < 0)
			continue;
		if (mi.start > pa->addr || mi.end <= pa->addr)
			continue;
		if (have && pa->pid == cur_pid && mi.start < cur_end)
			continue;
		path = strtab_intern(&s->strs, mi.path);
		bid = intern_build_id(s, mi.build_id_len, mi.build_id);
		if (path < 0 || bid < 0)
			return -ENOMEM;
		pidx = pid_index(s->pids, s->npids, pa->pid);
		wb_v(&s->maps, pidx - prev_pidx);
		/* Within a process, the gap after the previous mapping. */
		wb_v(&s->maps, have && pa->pid == cur_pid ? mi.start - cur_end : mi.start);
		wb_v(&s->maps, mi.end - mi.start);
		wb_v(&s->maps, mi.pgoff);
		wb_v(&s->maps, (uint64_t)path);
		wb_v(&s->maps, (uint64_t)bid);
		s->nmaps++;
		have = true;
		prev_pidx = pidx;
		cur_pid = pa->pid;
		cur_start = mi.start;
		cur_end = mi.end;
	}
	return s->maps.err;
}

/* Root-first frame p of a stack whose frames are stored leaf first. */
#define ROOT_FRAME(f, nr, p) ((f)[(nr) - 1 - (p)])

static int cmp_stacks(const void *a, const void *b, void *arg)
{
	const struct fr_chunk_builder *bl = arg;
	const struct bstack *x = &bl->stacks[*(const uint32_t *)a];
	const struct bstack *y = &bl->stacks[*(const uint32_t *)b];
	const uint64_t *fx = &bl->frames[x->first], *fy = &bl->frames[y->first];
	unsigned n = x->nr_frames < y->nr_frames ? x->nr_frames : y->nr_frames;

	for (unsigned p = 0; p < n; p++) {
		uint64_t u = ROOT_FRAME(fx, x->nr_frames, p), v = ROOT_FRAME(fy, y->nr_frames, p);

		if (u != v)
			return u < v ? -1 : 1;
	}
	if (x->nr_frames != y->nr_frames)
		return x->nr_frames < y->nr_frames ? -1 : 1;
	if (x->nr_kernel != y->nr_kernel)
		return x->nr_kernel < y->nr_kernel ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Stacks are stored sorted root first, so each shares the longest run of
 * root frames it has in common with any other stack with the one before
 * it (front coding). */
static int seal_order_stacks(struct seal *s, const struct fr_chunk_builder *b)
{
	s->stack_order = malloc(((size_t)b->nstacks + 1) * sizeof(*s->stack_order));
	s->stack_rank = malloc(((size_t)b->nstacks + 1) * sizeof(*s->stack_rank));
	if (!s->stack_order || !s->stack_rank)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nstacks; i++)
		s->stack_order[i] = i;
	qsort_r(s->stack_order, b->nstacks, sizeof(*s->stack_order), cmp_stacks, (void *)b);
	for (uint32_t i = 0; i < b->nstacks; i++)
		s->stack_rank[s->stack_order[i]] = i;
	return 0;
}

static int cmp_samples(const void *a, const void *b, void *arg)
{
	const struct fr_chunk_builder *bl = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (bl->time[i] != bl->time[j])
		return bl->time[i] < bl->time[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Orders the samples by (cpu, time): a stable pass by cpu (the recorder
 * hands them over CPU by CPU, each in time order), then a sort of any CPU
 * whose samples are not already in time order. */
static int seal_order_samples(struct seal *s, const struct fr_chunk_builder *b)
{
	uint32_t n = b->nsamples, *tmp;
	size_t start = 0;

	s->order = malloc(((size_t)n + 1) * sizeof(*s->order));
	s->col = malloc(((size_t)n + 1) * sizeof(*s->col));
	tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	if (!s->order || !s->col || !tmp) {
		free(tmp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		s->order[i] = i;
	/* LSD radix on the cpu, index order kept within a cpu. */
	for (unsigned shift = 0; shift < 32; shift += 8) {
		size_t count[256] = {0}, pos = 0;
		uint32_t *t;

		if (n == 0)
			break;
		for (uint32_t i = 0; i < n; i++)
			count[(b->cpu[s->order[i]] >> shift) & 255]++;
		if (count[(b->cpu[s->order[0]] >> shift) & 255] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (uint32_t i = 0; i < n; i++)
			tmp[count[(b->cpu[s->order[i]] >> shift) & 255]++] = s->order[i];
		t = s->order;
		s->order = tmp;
		tmp = t;
	}
	free(tmp);
	for (size_t i = 1; i <= n; i++) {
		bool sorted = true;

		if (i < n && b->cpu[s->order[i]] == b->cpu[s->order[start]])
			continue;
		for (size_t k = start + 1; k < i && sorted; k++)
			sorted = b->time[s->order[k - 1]] <= b->time[s->order[k]];
		if (!sorted)
			qsort_r(s->order + start, i - start, sizeof(*s->order), cmp_samples,
				(void *)b);
		start = i;
	}
	return 0;
}

/* A column as runs: count, then (value, length) pairs. */
static void put_runs(struct wbuf *w, const uint64_t *v, uint32_t n)
{
	uint32_t runs = 0;

	for (uint32_t i = 0; i < n; i++)
		runs += i == 0 || v[i] != v[i - 1];
	wb_v(w, runs);
	for (uint32_t i = 0, len; i < n; i += len) {
		for (len = 1; i + len < n && v[i + len] == v[i]; len++)
			;
		wb_v(w, v[i]);
		wb_v(w, len);
	}
}

/* Frame prediction, the same on both sides. A frame is stored as its
 * difference from a predicted address: the frame that last followed the
 * same caller frame (a direct-mapped cache: in a call tree the children of
 * one call site are return addresses in one function, a few bytes apart),
 * else the caller frame itself, else the last frame of its kind (user or
 * kernel). The root frame is predicted by the previous stack's root. */
#define PRED_SLOTS 4096
#define KERNEL_PRED 0xffffffff80000000ull

struct pred {
	uint64_t last[2];
	struct {
		uint64_t parent, child;
	} slot[PRED_SLOTS];
};

static void pred_init(struct pred *pr)
{
	/* An empty slot predicts 0 after a caller at address 0: harmless,
	 * as both sides do the same. */
	memset(pr, 0, sizeof(*pr));
	pr->last[1] = KERNEL_PRED;
}

/* Part of the format (core/chunk.h): not to be changed with mix(). */
static unsigned pred_slot(uint64_t parent)
{
	uint64_t x = parent * 0x9e3779b97f4a7c15ull;

	return (unsigned)((x ^ (x >> 29)) & (PRED_SLOTS - 1));
}

/* `f` is this stack root first, `nu` its user frames; `g` the previous
 * stack (NULL for the first), `gn` and `gnu` its frames and user frames. */
static uint64_t frame_pred(const struct pred *pr, const uint64_t *f, unsigned nu,
			   const uint64_t *g, unsigned gn, unsigned gnu, unsigned p)
{
	bool kernel = p >= nu;

	if (p == 0)
		return g && gn > 0 && (gnu == 0) == kernel ? g[0] : pr->last[kernel];
	if (pr->slot[pred_slot(f[p - 1])].parent == f[p - 1])
		return pr->slot[pred_slot(f[p - 1])].child;
	return (p - 1 >= nu) == kernel ? f[p - 1] : pr->last[kernel];
}

static void pred_update(struct pred *pr, const uint64_t *f, unsigned nu, unsigned p)
{
	if (p > 0) {
		unsigned i = pred_slot(f[p - 1]);

		pr->slot[i].parent = f[p - 1];
		pr->slot[i].child = f[p];
	}
	pr->last[p >= nu] = f[p];
}


static void seal_stacks(struct seal *s, const struct fr_chunk_builder *b)
{
	struct wbuf *w = &s->block;
	uint64_t cur[FR_MAX_FRAMES], prev[FR_MAX_FRAMES];
	unsigned prev_nr = 0, prev_nu = 0;
	unsigned char *shared;
	struct pred *pr;

	/* Columns: pid index, nr_kernel, nr_frames, shared; then the frames
	 * that are not shared. */
	wb_v(w, b->nstacks);
	shared = malloc((size_t)b->nstacks + 1);
	pr = malloc(sizeof(*pr));
	if (!shared || !pr) {
		free(shared);
		free(pr);
		w->err = -ENOMEM;
		return;
	}
	pred_init(pr);
	for (uint32_t i = 0; i < b->nstacks; i++)
		wb_v(w, pid_index(s->pids, s->npids, b->stacks[s->stack_order[i]].pid));
	for (uint32_t i = 0; i < b->nstacks; i++)
		wb_v(w, b->stacks[s->stack_order[i]].nr_kernel);
	for (uint32_t i = 0; i < b->nstacks; i++)
		wb_v(w, b->stacks[s->stack_order[i]].nr_frames);
	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[s->stack_order[i]];
		const uint64_t *f = &b->frames[st->first];
		unsigned k = 0;

		if (i > 0) {
			const struct bstack *pv = &b->stacks[s->stack_order[i - 1]];
			const uint64_t *g = &b->frames[pv->first];

			while (k < st->nr_frames && k < pv->nr_frames &&
			       ROOT_FRAME(f, st->nr_frames, k) == ROOT_FRAME(g, pv->nr_frames, k))
				k++;
		}
		shared[i] = (unsigned char)k;
		wb_v(w, k);
	}
	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[s->stack_order[i]];
		unsigned nr = st->nr_frames, nu = nr - st->nr_kernel;

		for (unsigned p = 0; p < nr; p++)
			cur[p] = ROOT_FRAME(&b->frames[st->first], nr, p);
		for (unsigned p = shared[i]; p < nr; p++) {
			uint64_t pred = frame_pred(pr, cur, nu, i ? prev : NULL, prev_nr, prev_nu, p);

			wb_z(w, (int64_t)(cur[p] - pred));
			pred_update(pr, cur, nu, p);
		}
		memcpy(prev, cur, nr * sizeof(*cur));
		prev_nr = nr;
		prev_nu = nu;
	}
	free(shared);
	free(pr);
}

static void seal_samples(struct seal *s, const struct fr_chunk_builder *b, int64_t first_ns)
{
	struct wbuf *w = &s->block;
	const uint32_t *o = s->order;
	uint32_t n = b->nsamples, runs = 0;

	wb_v(w, n);
	/* CPU runs: cpu (gap after the previous), length, grid period, time
	 * of the first sample. */
	for (uint32_t i = 0; i < n; i++)
		runs += i == 0 || b->cpu[o[i]] != b->cpu[o[i - 1]];
	wb_v(w, runs);
	for (uint32_t i = 0, len; i < n; i += len) {
		uint32_t cpu = b->cpu[o[i]];

		for (len = 1; i + len < n && b->cpu[o[i + len]] == cpu; len++)
			;
		wb_v(w, i == 0 ? cpu : cpu - b->cpu[o[i - 1]] - 1);
		wb_v(w, len);
		wb_v(w, b->rate[o[i]] ? 1000000000u / b->rate[o[i]] : 0);
		wb_v(w, (uint64_t)b->time[o[i]] - (uint64_t)first_ns);
	}
	/* Time: each sample after the first of its CPU as a whole number of
	 * periods (one column) and the jitter around it (another). */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t period = 0;

		for (uint32_t i = 0; i < n; i++) {
			uint64_t d, k;

			if (i == 0 || b->cpu[o[i]] != b->cpu[o[i - 1]]) {
				period = b->rate[o[i]] ? 1000000000u / b->rate[o[i]] : 0;
				continue;
			}
			d = (uint64_t)b->time[o[i]] - (uint64_t)b->time[o[i - 1]];
			k = period ? (d + period / 2) / period : 0;
			if (pass == 0 && period)
				wb_v(w, k);
			else if (pass == 1)
				wb_z(w, (int64_t)(d - k * period));
		}
	}
	/* Stack ids as the difference from the previous sample's: samples
	 * of one thread in a row tend to have similar stacks, which the
	 * sorted stack table numbers close together. */
	for (uint32_t i = 0, prev = 0; i < n; i++) {
		uint32_t id = s->stack_rank[b->stack[o[i]]];

		wb_z(w, (int64_t)id - (int64_t)prev);
		prev = id;
	}
	for (uint32_t i = 0; i < n; i++)
		wb_z(w, (int64_t)b->tid[o[i]] - (int64_t)b->stacks[b->stack[o[i]]].pid);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = b->event[o[i]];
	put_runs(w, s->col, n);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = b->weight[o[i]];
	put_runs(w, s->col, n);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = b->rate[o[i]];
	put_runs(w, s->col, n);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = s->stack_ls[b->stack[o[i]]];
	put_runs(w, s->col, n);
}

/* The label set of each stack's samples: its process's (a sample's pid is
 * its stack's). */
static int seal_stack_labelsets(struct seal *s, const struct fr_chunk_builder *b)
{
	s->stack_ls = calloc((size_t)b->nstacks + 1, sizeof(*s->stack_ls));
	if (!s->stack_ls)
		return -ENOMEM;
	for (uint32_t i = 0; s->nlabelsets && i < b->nstacks; i++)
		s->stack_ls[i] = s->pid_ls[pid_index(s->pids, s->npids, b->stacks[i].pid)];
	return 0;
}

static void seal_block(struct seal *s, const struct fr_chunk_builder *b, int64_t first_ns)
{
	struct wbuf *w = &s->block;
	uint32_t prev = 0;

	wb_reserve(w, b->raw_est + s->strs.blob.len + s->bids.blob.len + s->procs.len +
			      s->threads.len + s->maps.len + 31 * (size_t)s->nlabelsets + 64);

	strtab_write(w, &s->strs, 0);
	strtab_write(w, &s->bids, 1);
	wb_v(w, s->npids);
	for (size_t i = 0; i < s->npids; i++) {
		wb_v(w, i == 0 ? s->pids[0] : s->pids[i] - prev - 1);
		prev = s->pids[i];
	}
	wb_v(w, s->nprocs);
	wb_bytes(w, s->procs.p, s->procs.len);
	wb_v(w, s->nthreads);
	wb_bytes(w, s->threads.p, s->threads.len);
	wb_v(w, s->nmaps);
	wb_bytes(w, s->maps.p, s->maps.len);
	seal_stacks(s, b);

	/* Label sets after the empty set 0, each pair that is there. */
	wb_v(w, s->nlabelsets);
	for (uint32_t i = 0; i < s->nlabelsets; i++) {
		const struct lset *l = &s->ls[i];

		wb_v(w, (l->pid != 0) + (l->ppid != 0) + (l->cgroup != 0));
		if (l->pid) {
			wb_v(w, (uint64_t)s->pid_key);
			wb_v(w, l->pid);
		}
		if (l->cgroup) {
			wb_v(w, (uint64_t)s->cgroup_key);
			wb_v(w, l->cgroup);
		}
		if (l->ppid) {
			wb_v(w, (uint64_t)s->ppid_key);
			wb_v(w, l->ppid);
		}
	}

	wb_v(w, b->nevents);
	for (uint32_t i = 0; i < b->nevents; i++) {
		wb_v(w, b->events[i].event);
		wb_v(w, b->events[i].lost);
		wb_v(w, b->events[i].throttled);
		wb_v(w, b->events[i].truncated);
	}
	seal_samples(s, b, first_ns);
}

static void header_write(unsigned char *p, const struct fr_chunk_header *h)
{
	memset(p, 0, FR_CHUNK_HEADER_LEN);
	fr_put_le32(p + 0, h->magic);
	fr_put_le16(p + 4, h->version);
	fr_put_le16(p + 6, h->header_len);
	fr_put_le64(p + 8, h->seq);
	fr_put_le64(p + 16, (uint64_t)h->first_ns);
	fr_put_le64(p + 24, (uint64_t)h->last_ns);
	fr_put_le32(p + 32, h->nsamples);
	fr_put_le32(p + 36, h->raw_len);
	fr_put_le32(p + 40, h->comp_len);
	fr_put_le32(p + 44, h->covers);
	fr_put_le64(p + 48, (uint64_t)h->clock_offset);
	fr_put_le32(p + 56, h->payload_crc);
	fr_put_le32(p + 60, fr_crc32c(0, p, 60));
}

int fr_chunk_builder_seal(struct fr_chunk_builder *b, const struct fr_chunk_meta_ops *ops,
			  int64_t clock_offset, void **out, size_t *out_len)
{
	struct seal s;
	struct fr_chunk_header h;
	unsigned char *buf = NULL, *shrunk;
	size_t max_strings;
	int64_t first_ns, last_ns;
	ssize_t comp;
	int ret;

	*out = NULL;
	*out_len = 0;
	if (b->nsamples == 0 && b->nevents == 0)
		return -ENODATA;
	memset(&s, 0, sizeof(s));

	if (b->nsamples) {
		first_ns = b->first_ns;
		last_ns = b->last_ns;
	} else {
		/* Counters alone still need a place in time to be found. */
		first_ns = last_ns = fr_now_real_ns();
	}

	ret = seal_collect(&s, b);
	if (ret < 0)
		goto out;
	/* "", comm, exe, cgroup and ppid of each pid, the "cgroup", "ppid"
	 * and "pid" keys, pid and ppid of each ancestor, thread names and
	 * mapping paths. The walk up asks about as many pids as the chunk
	 * has, and 64 more: a few shells and managers above a chunk's
	 * processes, never all of a deep or cyclic chain. */
	s.max_anc = (uint32_t)s.npids + 64;
	max_strings = 4 + 4 * s.npids + 2 * (size_t)s.max_anc + s.ntids + s.npairs;
	ret = strtab_init(&s.strs, max_strings);
	if (ret < 0)
		goto out;
	ret = strtab_init(&s.bids, 1 + s.npids + s.npairs);
	if (ret < 0)
		goto out;
	ret = seal_procs(&s, ops, first_ns);
	if (ret < 0)
		goto out;
	ret = seal_ancestors(&s, ops);
	if (ret < 0)
		goto out;
	ret = seal_threads(&s, ops);
	if (ret < 0)
		goto out;
	ret = seal_maps(&s, ops);
	if (ret < 0)
		goto out;
	ret = seal_stack_labelsets(&s, b);
	if (ret < 0)
		goto out;
	ret = seal_order_stacks(&s, b);
	if (ret < 0)
		goto out;
	ret = seal_order_samples(&s, b);
	if (ret < 0)
		goto out;
	seal_block(&s, b, first_ns);
	ret = s.block.err;
	if (ret < 0)
		goto out;
	if (s.block.len > FR_CHUNK_RAW_MAX) {
		ret = -EFBIG;
		goto out;
	}

	if (!b->zstd) {
		b->zstd = fr_zstd_new(b->level);
		if (!b->zstd) {
			ret = -ENOMEM;
			goto out;
		}
	}
	buf = malloc(FR_CHUNK_HEADER_LEN + fr_zstd_bound(s.block.len));
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	comp = fr_zstd_compress(b->zstd, buf + FR_CHUNK_HEADER_LEN,
				fr_zstd_bound(s.block.len), s.block.p, s.block.len);
	if (comp < 0) {
		ret = (int)comp;
		goto out;
	}
	if ((size_t)comp > FR_CHUNK_COMP_MAX) {
		ret = -EFBIG;
		goto out;
	}

	h = (struct fr_chunk_header){
		.magic = FR_CHUNK_MAGIC,
		.version = FR_CHUNK_VERSION,
		.header_len = FR_CHUNK_HEADER_LEN,
		.seq = 0,
		.first_ns = first_ns,
		.last_ns = last_ns,
		.nsamples = b->nsamples,
		.raw_len = (uint32_t)s.block.len,
		.comp_len = (uint32_t)comp,
		.covers = 0,
		.clock_offset = clock_offset,
		.payload_crc = fr_crc32c(0, buf + FR_CHUNK_HEADER_LEN, (size_t)comp),
	};
	header_write(buf, &h);

	shrunk = realloc(buf, FR_CHUNK_HEADER_LEN + (size_t)comp);
	if (shrunk)
		buf = shrunk;
	*out = buf;
	*out_len = FR_CHUNK_HEADER_LEN + (size_t)comp;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	seal_fini(&s);
	builder_reset(b);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Header                                                               */

int fr_chunk_header_parse(const void *buf, size_t len, struct fr_chunk_header *h)
{
	const unsigned char *p = buf;

	if (len < FR_CHUNK_HEADER_LEN)
		return -EBADMSG;
	if (fr_get_le32(p) != FR_CHUNK_MAGIC)
		return -EBADMSG;
	if (fr_get_le32(p + 60) != fr_crc32c(0, p, 60))
		return -EBADMSG;
	h->magic = fr_get_le32(p);
	h->version = fr_get_le16(p + 4);
	h->header_len = fr_get_le16(p + 6);
	h->seq = fr_get_le64(p + 8);
	h->first_ns = (int64_t)fr_get_le64(p + 16);
	h->last_ns = (int64_t)fr_get_le64(p + 24);
	h->nsamples = fr_get_le32(p + 32);
	h->raw_len = fr_get_le32(p + 36);
	h->comp_len = fr_get_le32(p + 40);
	h->covers = fr_get_le32(p + 44);
	h->clock_offset = (int64_t)fr_get_le64(p + 48);
	h->payload_crc = fr_get_le32(p + 56);
	h->header_crc = fr_get_le32(p + 60);
	if (h->version != FR_CHUNK_VERSION)
		return -EPROTONOSUPPORT;
	if (h->header_len != FR_CHUNK_HEADER_LEN)
		return -EBADMSG;
	/* A ring numbers chunks from 1; no writer gets near 2^62, and a
	 * number near 2^64 would wrap the numbering of the chunks after it. */
	if (h->seq >= FR_CHUNK_SEQ_MAX)
		return -EBADMSG;
	/* A merged chunk stands for chunks numbered from 1 up. */
	if (h->covers && h->covers >= h->seq)
		return -EBADMSG;
	if (h->raw_len < RAW_FIXED || h->raw_len > FR_CHUNK_RAW_MAX)
		return -EBADMSG;
	if (h->comp_len == 0 || h->comp_len > FR_CHUNK_COMP_MAX)
		return -EBADMSG;
	/* Each sample takes at least two bytes of block (stack and tid). */
	if (h->nsamples > h->raw_len / 2)
		return -EBADMSG;
	if (h->first_ns > h->last_ns)
		return -EBADMSG;
	return 0;
}

int fr_chunk_verify(const void *buf, size_t len)
{
	struct fr_chunk_header h;
	const unsigned char *p = buf;

	if (fr_chunk_header_parse(buf, len, &h) < 0)
		return -EBADMSG;
	if (len != FR_CHUNK_HEADER_LEN + (size_t)h.comp_len)
		return -EBADMSG;
	if (fr_crc32c(0, p + FR_CHUNK_HEADER_LEN, h.comp_len) != h.payload_crc)
		return -EBADMSG;
	return 0;
}

void fr_chunk_set_seq(void *buf, uint64_t seq, uint32_t covers)
{
	unsigned char *p = buf;

	fr_put_le64(p + 8, seq);
	fr_put_le32(p + 44, covers);
	fr_put_le32(p + 60, fr_crc32c(0, p, 60));
}

/* ------------------------------------------------------------------ */
/* Decoder                                                              */

struct rd {
	const unsigned char *p, *end;
};

static size_t rd_left(const struct rd *r)
{
	return (size_t)(r->end - r->p);
}

static int rd_v(struct rd *r, uint64_t *out)
{
	return fr_varint_get(&r->p, r->end, out);
}

static int rd_z(struct rd *r, int64_t *out)
{
	uint64_t v;

	if (rd_v(r, &v) < 0)
		return -EBADMSG;
	*out = fr_unzigzag(v);
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *out)
{
	uint64_t v;

	if (rd_v(r, &v) < 0 || v > UINT32_MAX)
		return -EBADMSG;
	*out = (uint32_t)v;
	return 0;
}

/* A table count: each entry takes at least `min_bytes`. */
static int rd_count(struct rd *r, size_t min_bytes, uint32_t *out)
{
	if (rd_u32(r, out) < 0 || *out > rd_left(r) / min_bytes)
		return -EBADMSG;
	return 0;
}

static int rd_id(struct rd *r, uint32_t limit, uint32_t *out)
{
	if (rd_u32(r, out) < 0 || *out >= limit)
		return -EBADMSG;
	return 0;
}

/* `base` + the next varint, which must stay below `limit`. */
static int rd_next(struct rd *r, uint64_t base, uint64_t limit, uint64_t *out)
{
	uint64_t v;

	if (rd_v(r, &v) < 0 || base >= limit || v >= limit - base)
		return -EBADMSG;
	*out = base + v;
	return 0;
}

/* `base` + a zigzag varint, which must be a 32-bit id. */
static int rd_rel_u32(struct rd *r, uint32_t base, uint32_t *out)
{
	int64_t v;

	if (rd_z(r, &v) < 0 || v < -(int64_t)base || v > (int64_t)UINT32_MAX - base)
		return -EBADMSG;
	*out = (uint32_t)((int64_t)base + v);
	return 0;
}

/* calloc that never returns NULL for zero elements, so every array of a
 * decoded chunk is a valid pointer. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

#define TRY(expr)                        \
	do {                             \
		if ((expr) < 0)          \
			goto err_bad;    \
	} while (0)

/* Decoding state beyond the chunk itself. */
struct dec {
	struct rd r;
	struct fr_chunk *c;
	uint32_t nbids;
	uint8_t (*bids)[FR_BUILD_ID_MAX];
	uint8_t *bid_len;
	uint32_t npids;
	uint32_t *pids;
	uint64_t *scratch; /* one sample column */
};

static int decode_strings(struct rd *r, struct fr_chunk *c)
{
	const unsigned char *start;
	size_t total = 0;
	char *blob;
	uint32_t n;

	TRY(rd_count(r, 1, &n));
	if (n == 0)
		goto err_bad;
	/* First pass: validate and size the blob. */
	start = r->p;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t len;

		TRY(rd_v(r, &len));
		if (len > FR_CHUNK_STRING_MAX || len > rd_left(r))
			goto err_bad;
		if (i == 0 && len != 0)
			goto err_bad;
		if (memchr(r->p, 0, len))
			goto err_bad;
		r->p += len;
		total += len + 1;
	}
	c->strings = alloc_array(n, sizeof(*c->strings));
	blob = malloc(total);
	if (!c->strings || !blob) {
		free(blob);
		return -ENOMEM;
	}
	/* strings[0] points at the start of the blob; fr_chunk_free() frees it. */
	c->nstrings = n;
	r->p = start;
	for (uint32_t i = 0; i < n; i++) {
		/* The first loop checked every length; the zero only keeps
		 * gcc -O3 from seeing a path where rd_v fails. */
		uint64_t len = 0;

		rd_v(r, &len);
		memcpy(blob, r->p, len);
		blob[len] = '\0';
		c->strings[i] = blob;
		blob += len + 1;
		r->p += len;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_build_ids(struct dec *d)
{
	struct rd *r = &d->r;
	uint32_t n;

	TRY(rd_count(r, 2, &n));
	d->bids = alloc_array(n, sizeof(*d->bids));
	d->bid_len = alloc_array(n, sizeof(*d->bid_len));
	if (!d->bids || !d->bid_len)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t len;

		TRY(rd_v(r, &len));
		if (len == 0 || len > FR_BUILD_ID_MAX || len > rd_left(r))
			goto err_bad;
		memcpy(d->bids[i], r->p, len);
		d->bid_len[i] = (uint8_t)len;
		r->p += len;
	}
	d->nbids = n;
	return 0;
err_bad:
	return -EBADMSG;
}

/* A build id reference: 0 for none, else index + 1. */
static int rd_build_id(struct dec *d, uint8_t *len, uint8_t *id)
{
	uint32_t ref;

	if (rd_id(&d->r, d->nbids + 1, &ref) < 0)
		return -EBADMSG;
	*len = ref ? d->bid_len[ref - 1] : 0;
	if (ref)
		memcpy(id, d->bids[ref - 1], *len);
	return 0;
}

static int decode_pids(struct dec *d)
{
	uint64_t pid = 0;
	uint32_t n;

	TRY(rd_count(&d->r, 1, &n));
	d->pids = alloc_array(n, sizeof(*d->pids));
	if (!d->pids)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		TRY(rd_next(&d->r, i ? pid + 1 : 0, (uint64_t)UINT32_MAX + 1, &pid));
		d->pids[i] = (uint32_t)pid;
	}
	d->npids = n;
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_procs(struct dec *d)
{
	struct fr_chunk *c = d->c;
	uint64_t idx = 0;
	uint32_t n;

	/* index, uid, comm, exe, start_ns, build id: six bytes at least. */
	TRY(rd_count(&d->r, 6, &n));
	c->procs = alloc_array(n, sizeof(*c->procs));
	if (!c->procs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_proc *p = &c->procs[i];
		int64_t start;

		TRY(rd_next(&d->r, i ? idx + 1 : 0, d->npids, &idx));
		p->pid = d->pids[idx];
		TRY(rd_u32(&d->r, &p->uid));
		TRY(rd_id(&d->r, c->nstrings, &p->comm));
		TRY(rd_id(&d->r, c->nstrings, &p->exe));
		TRY(rd_z(&d->r, &start));
		p->start_ns = (int64_t)((uint64_t)c->hdr.first_ns + (uint64_t)start);
		TRY(rd_build_id(d, &p->build_id_len, p->build_id));
		c->nprocs = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_threads(struct dec *d)
{
	struct fr_chunk *c = d->c;
	uint64_t tid = 0;
	uint32_t n;

	TRY(rd_count(&d->r, 3, &n));
	c->threads = alloc_array(n, sizeof(*c->threads));
	if (!c->threads)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_thread *t = &c->threads[i];

		TRY(rd_next(&d->r, i ? tid + 1 : 0, (uint64_t)UINT32_MAX + 1, &tid));
		t->tid = (uint32_t)tid;
		TRY(rd_rel_u32(&d->r, t->tid, &t->pid));
		TRY(rd_id(&d->r, c->nstrings, &t->name));
		c->nthreads = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_maps(struct dec *d)
{
	struct fr_chunk *c = d->c;
	uint64_t idx = 0;
	uint32_t n;

	TRY(rd_count(&d->r, 6, &n));
	c->maps = alloc_array(n, sizeof(*c->maps));
	if (!c->maps)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_map *m = &c->maps[i];
		const struct fr_chunk_map *prev = i ? &c->maps[i - 1] : NULL;
		uint64_t prev_idx = idx, start, len;

		TRY(rd_next(&d->r, idx, d->npids, &idx));
		m->pid = d->pids[idx];
		TRY(rd_v(&d->r, &start));
		TRY(rd_v(&d->r, &len));
		TRY(rd_v(&d->r, &m->pgoff));
		TRY(rd_id(&d->r, c->nstrings, &m->path));
		TRY(rd_build_id(d, &m->build_id_len, m->build_id));
		/* Within a process, start is the gap after the previous end. */
		if (prev && idx == prev_idx) {
			if (start > UINT64_MAX - prev->end)
				goto err_bad;
			start += prev->end;
		}
		if (len == 0 || len > UINT64_MAX - start)
			goto err_bad;
		m->start = start;
		m->end = start + len;
		c->nmaps = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_stacks(struct dec *d)
{
	struct fr_chunk *c = d->c;
	struct rd *r = &d->r;
	uint64_t total = 0;
	uint32_t n, *shared = NULL;
	struct pred *pr = NULL;
	int ret = -EBADMSG;

	/* Four columns of at least a byte per stack, then the frames. */
	TRY(rd_count(r, 4, &n));
	c->stacks = alloc_array(n, sizeof(*c->stacks));
	shared = alloc_array(n, sizeof(*shared));
	if (!c->stacks || !shared) {
		ret = -ENOMEM;
		goto err;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t idx;

		TRY(rd_id(r, d->npids, &idx));
		c->stacks[i].pid = d->pids[idx];
	}
	for (uint32_t i = 0; i < n; i++)
		TRY(rd_id(r, FR_MAX_FRAMES + 1, &c->stacks[i].nr_kernel));
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_stack *st = &c->stacks[i];

		TRY(rd_id(r, FR_MAX_FRAMES + 1, &st->nr_frames));
		if (st->nr_kernel > st->nr_frames)
			goto err_bad;
		st->first = (uint32_t)total;
		total += st->nr_frames;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t most = i ? c->stacks[i - 1].nr_frames : 0;

		if (c->stacks[i].nr_frames < most)
			most = c->stacks[i].nr_frames;
		TRY(rd_id(r, most + 1, &shared[i]));
	}
	/* Front coding lets a few bytes stand for many frames; a builder
	 * never stores more than this in a chunk. */
	if (total > FR_CHUNK_RAW_MAX)
		goto err_bad;
	c->frames = alloc_array(total, sizeof(*c->frames));
	pr = malloc(sizeof(*pr));
	if (!c->frames || !pr) {
		ret = -ENOMEM;
		goto err;
	}
	pred_init(pr);
	c->nstacks = n;
	for (uint32_t i = 0; i < n; i++) {
		const struct fr_chunk_stack *st = &c->stacks[i];
		const struct fr_chunk_stack *pv = i ? &c->stacks[i - 1] : NULL;
		uint64_t cur[FR_MAX_FRAMES], prev[FR_MAX_FRAMES];
		unsigned nr = st->nr_frames, nu = nr - st->nr_kernel;
		unsigned gn = pv ? pv->nr_frames : 0, gnu = pv ? gn - pv->nr_kernel : 0;

		for (unsigned p = 0; p < gn; p++)
			prev[p] = ROOT_FRAME(&c->frames[pv->first], gn, p);
		for (unsigned p = 0; p < shared[i]; p++)
			cur[p] = prev[p];
		for (unsigned p = shared[i]; p < nr; p++) {
			uint64_t pred = frame_pred(pr, cur, nu, pv ? prev : NULL, gn, gnu, p);
			int64_t delta;

			TRY(rd_z(r, &delta));
			cur[p] = pred + (uint64_t)delta;
			pred_update(pr, cur, nu, p);
		}
		for (unsigned p = 0; p < nr; p++)
			ROOT_FRAME(&c->frames[st->first], nr, p) = cur[p];
	}
	free(shared);
	free(pr);
	return 0;
err_bad:
	ret = -EBADMSG;
err:
	free(shared);
	free(pr);
	return ret;
}

static int decode_labelsets(struct rd *r, struct fr_chunk *c)
{
	const unsigned char *start;
	uint64_t total = 0;
	uint32_t n, id;

	TRY(rd_count(r, 1, &n));
	start = r->p;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t npairs;

		TRY(rd_count(r, 2, &npairs));
		for (uint32_t k = 0; k < 2 * npairs; k++)
			TRY(rd_id(r, c->nstrings, &id));
		total += npairs;
	}
	c->labelsets = alloc_array((size_t)n + 1, sizeof(*c->labelsets));
	c->label_keys = alloc_array(total, sizeof(*c->label_keys));
	c->label_values = alloc_array(total, sizeof(*c->label_values));
	if (!c->labelsets || !c->label_keys || !c->label_values)
		return -ENOMEM;
	c->nlabelsets = n + 1;
	r->p = start;
	total = 0;
	for (uint32_t i = 1; i <= n; i++) {
		struct fr_chunk_labelset *ls = &c->labelsets[i];

		rd_u32(r, &ls->npairs);
		ls->first = (uint32_t)total;
		for (uint32_t k = 0; k < ls->npairs; k++) {
			rd_u32(r, &c->label_keys[total]);
			rd_u32(r, &c->label_values[total]);
			total++;
		}
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_events(struct rd *r, struct fr_chunk *c)
{
	uint32_t n;

	TRY(rd_count(r, 4, &n));
	c->events = alloc_array(n, sizeof(*c->events));
	if (!c->events)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_event_stats *e = &c->events[i];

		TRY(rd_u32(r, &e->event));
		TRY(rd_v(r, &e->lost));
		TRY(rd_v(r, &e->throttled));
		TRY(rd_v(r, &e->truncated));
		c->nevents = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

/* A column stored as runs into d->scratch; values must be below `limit`
 * (0: any 64-bit value). */
static int decode_runs(struct dec *d, uint32_t n, uint64_t limit)
{
	uint32_t runs, at = 0;

	TRY(rd_count(&d->r, 2, &runs));
	for (uint32_t i = 0; i < runs; i++) {
		uint64_t v;
		uint32_t len;

		TRY(rd_v(&d->r, &v));
		TRY(rd_u32(&d->r, &len));
		if ((limit && v >= limit) || len == 0 || len > n - at)
			goto err_bad;
		for (uint32_t k = 0; k < len; k++)
			d->scratch[at++] = v;
	}
	if (at != n)
		goto err_bad;
	return 0;
err_bad:
	return -EBADMSG;
}

static void scratch_u32(const struct dec *d, uint32_t n, uint32_t *col)
{
	for (uint32_t i = 0; i < n; i++)
		col[i] = (uint32_t)d->scratch[i];
}

static int decode_times(struct dec *d, uint32_t n)
{
	struct fr_chunk *c = d->c;
	struct rd *r = &d->r, kr;
	uint64_t first = (uint64_t)c->hdr.first_ns;
	uint64_t span = (uint64_t)c->hdr.last_ns - first;
	uint64_t *period = d->scratch, per = 0;
	uint32_t runs, at = 0, cpu = 0;

	/* cpu, length, period and first time: four bytes at least. */
	TRY(rd_count(r, 4, &runs));
	for (uint32_t i = 0; i < runs; i++) {
		uint64_t v, len, off;

		TRY(rd_next(r, i ? (uint64_t)cpu + 1 : 0, (uint64_t)UINT32_MAX + 1, &v));
		cpu = (uint32_t)v;
		TRY(rd_v(r, &len));
		if (len == 0 || len > n - at)
			goto err_bad;
		TRY(rd_v(r, &period[at]));
		TRY(rd_v(r, &off));
		if (off > span)
			goto err_bad;
		c->time_ns[at] = (int64_t)(first + off);
		for (uint32_t k = 0; k < len; k++)
			c->cpu[at + k] = cpu;
		at += (uint32_t)len;
	}
	if (at != n)
		goto err_bad;
	/* A run starts where the cpu changes (cpus increase from run to run).
	 * The period column comes first: skip it to find the jitter column,
	 * then read both side by side. */
	kr = *r;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t k;

		if (i == 0 || c->cpu[i] != c->cpu[i - 1])
			per = period[i];
		else if (per)
			TRY(rd_v(r, &k));
	}
	kr.end = r->p;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t k = 0, t;
		int64_t jitter;

		if (i == 0 || c->cpu[i] != c->cpu[i - 1]) {
			per = period[i];
			continue;
		}
		if (per)
			rd_v(&kr, &k);
		TRY(rd_z(r, &jitter));
		/* Unsigned arithmetic: a wrap-around lands outside the span. */
		t = (uint64_t)c->time_ns[i - 1] + k * per + (uint64_t)jitter;
		if (t - first > span)
			goto err_bad;
		c->time_ns[i] = (int64_t)t;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_samples(struct dec *d)
{
	struct fr_chunk *c = d->c;
	struct rd *r = &d->r;
	uint32_t n;

	/* A stack id and a tid of at least one byte each. */
	TRY(rd_count(r, 2, &n));
	if (n != c->hdr.nsamples)
		goto err_bad;
	c->time_ns = alloc_array(n, sizeof(*c->time_ns));
	c->tid = alloc_array(n, sizeof(*c->tid));
	c->pid = alloc_array(n, sizeof(*c->pid));
	c->cpu = alloc_array(n, sizeof(*c->cpu));
	c->event = alloc_array(n, sizeof(*c->event));
	c->weight = alloc_array(n, sizeof(*c->weight));
	c->rate_hz = alloc_array(n, sizeof(*c->rate_hz));
	c->stack = alloc_array(n, sizeof(*c->stack));
	c->labelset = alloc_array(n, sizeof(*c->labelset));
	d->scratch = alloc_array(n, sizeof(*d->scratch));
	if (!c->time_ns || !c->tid || !c->pid || !c->cpu || !c->event || !c->weight ||
	    !c->rate_hz || !c->stack || !c->labelset || !d->scratch)
		return -ENOMEM;

	TRY(decode_times(d, n));
	for (uint32_t i = 0; i < n; i++) {
		TRY(rd_rel_u32(r, i ? c->stack[i - 1] : 0, &c->stack[i]));
		if (c->stack[i] >= c->nstacks)
			goto err_bad;
		c->pid[i] = c->stacks[c->stack[i]].pid;
	}
	for (uint32_t i = 0; i < n; i++)
		TRY(rd_rel_u32(r, c->pid[i], &c->tid[i]));
	TRY(decode_runs(d, n, (uint64_t)UINT32_MAX + 1));
	scratch_u32(d, n, c->event);
	TRY(decode_runs(d, n, 0));
	memcpy(c->weight, d->scratch, n * sizeof(*c->weight));
	TRY(decode_runs(d, n, (uint64_t)UINT32_MAX + 1));
	scratch_u32(d, n, c->rate_hz);
	TRY(decode_runs(d, n, c->nlabelsets));
	scratch_u32(d, n, c->labelset);
	c->nsamples = n;
	return 0;
err_bad:
	return -EBADMSG;
}

int fr_chunk_decode(const void *buf, size_t len, struct fr_chunk **out)
{
	const unsigned char *p = buf;
	struct fr_chunk_header h;
	struct fr_chunk *c = NULL;
	unsigned char *raw = NULL;
	struct dec d;
	ssize_t n;
	int ret;

	*out = NULL;
	memset(&d, 0, sizeof(d));
	ret = fr_chunk_header_parse(buf, len, &h);
	if (ret < 0)
		return ret;
	ret = fr_chunk_verify(buf, len);
	if (ret < 0)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->hdr = h;
	raw = malloc(c->hdr.raw_len);
	if (!raw) {
		ret = -ENOMEM;
		goto err;
	}
	n = fr_zstd_decompress(raw, c->hdr.raw_len, p + FR_CHUNK_HEADER_LEN, c->hdr.comp_len);
	if (n < 0 || (size_t)n != c->hdr.raw_len) {
		ret = n == -ENOMEM ? -ENOMEM : -EBADMSG;
		goto err;
	}
	d.r.p = raw;
	d.r.end = raw + c->hdr.raw_len;
	d.c = c;
	if ((ret = decode_strings(&d.r, c)) < 0 || (ret = decode_build_ids(&d)) < 0 ||
	    (ret = decode_pids(&d)) < 0 || (ret = decode_procs(&d)) < 0 ||
	    (ret = decode_threads(&d)) < 0 || (ret = decode_maps(&d)) < 0 ||
	    (ret = decode_stacks(&d)) < 0 || (ret = decode_labelsets(&d.r, c)) < 0 ||
	    (ret = decode_events(&d.r, c)) < 0 || (ret = decode_samples(&d)) < 0)
		goto err;
	/* Nothing may follow the samples. */
	if (d.r.p != d.r.end) {
		ret = -EBADMSG;
		goto err;
	}
	free(raw);
	free(d.bids);
	free(d.bid_len);
	free(d.pids);
	free(d.scratch);
	*out = c;
	return 0;

err:
	free(raw);
	free(d.bids);
	free(d.bid_len);
	free(d.pids);
	free(d.scratch);
	fr_chunk_free(c);
	return ret;
}

void fr_chunk_free(struct fr_chunk *c)
{
	if (!c)
		return;
	if (c->strings)
		free((void *)c->strings[0]);
	free(c->strings);
	free(c->procs);
	free(c->threads);
	free(c->maps);
	free(c->stacks);
	free(c->frames);
	free(c->labelsets);
	free(c->label_keys);
	free(c->label_values);
	free(c->events);
	free(c->time_ns);
	free(c->tid);
	free(c->pid);
	free(c->cpu);
	free(c->event);
	free(c->rate_hz);
	free(c->stack);
	free(c->labelset);
	free(c->weight);
	free(c);
}

static uint32_t label_pid(const char *v)
{
	uint64_t n = 0;

	if (v[0] < '1' || v[0] > '9')
		return 0;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return 0;
		n = n * 10 + (uint64_t)(*v - '0');
		if (n > UINT32_MAX)
			return 0;
	}
	return (uint32_t)n;
}

void fr_chunk_labelset_proc(const struct fr_chunk *c, uint32_t ls,
			    struct fr_chunk_proc_labels *out)
{
	const struct fr_chunk_labelset *l = &c->labelsets[ls];

	*out = (struct fr_chunk_proc_labels){0};
	for (uint32_t k = 0; k < l->npairs; k++) {
		const char *key = c->strings[c->label_keys[l->first + k]];
		const char *val = c->strings[c->label_values[l->first + k]];

		if (strcmp(key, "cgroup") == 0)
			out->cgroup = val[0] ? val : NULL;
		else if (strcmp(key, "ppid") == 0)
			out->ppid = label_pid(val);
		else if (strcmp(key, "pid") == 0)
			out->pid = label_pid(val);
	}
}

const struct fr_chunk_proc *fr_chunk_find_proc(const struct fr_chunk *c, uint32_t pid)
{
	uint32_t lo = 0, hi = c->nprocs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nprocs && c->procs[lo].pid == pid ? &c->procs[lo] : NULL;
}

const struct fr_chunk_thread *fr_chunk_find_thread(const struct fr_chunk *c, uint32_t tid)
{
	uint32_t lo = 0, hi = c->nthreads;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nthreads && c->threads[lo].tid == tid ? &c->threads[lo] : NULL;
}

const struct fr_chunk_map *fr_chunk_find_map(const struct fr_chunk *c, uint32_t pid, uint64_t addr)
{
	uint32_t lo = 0, hi = c->nmaps;
	const struct fr_chunk_map *m;

	/* First map after (pid, addr); the candidate is the one before. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct fr_chunk_map *x = &c->maps[mid];

		if (x->pid < pid || (x->pid == pid && x->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	m = &c->maps[lo - 1];
	return m->pid == pid && addr >= m->start && addr < m->end ? m : NULL;
}
