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
 * threads and mappings through the caller's ops, interns strings, encodes
 * the block and compresses it into one zstd frame.
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
#include "core/log.h"

#define ZSTD_LEVEL 3
#define EVENT_SLOTS 64

/* Bytes a varint of `v` takes. */
static unsigned vlen(uint64_t v)
{
	return 1 + (63 - (unsigned)__builtin_clzll(v | 1)) / 7;
}

static uint64_t zigzag(int64_t v)
{
	uint64_t u = (uint64_t)v;

	return (u << 1) ^ (0 - (u >> 63));
}

static int64_t unzigzag(uint64_t u)
{
	return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

static void put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint16_t get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

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
	uint32_t *tid, *pid, *cpu, *event, *rate, *stack;
	uint64_t *weight;

	struct bstack *stacks;
	uint64_t *frames;
	uint32_t *table; /* stack index + 1; 0 is an empty slot */

	struct fr_chunk_event_stats events[EVENT_SLOTS];
	struct fr_zstd *zstd; /* created on the first seal */
};

/* Eight table counts plus the length of the "" string: the smallest block. */
#define RAW_FIXED 9
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
	b->pid = malloc(max_samples * sizeof(*b->pid));
	b->cpu = malloc(max_samples * sizeof(*b->cpu));
	b->event = malloc(max_samples * sizeof(*b->event));
	b->rate = malloc(max_samples * sizeof(*b->rate));
	b->stack = malloc(max_samples * sizeof(*b->stack));
	b->weight = malloc(max_samples * sizeof(*b->weight));
	b->stacks = malloc(b->max_stacks * sizeof(*b->stacks));
	b->frames = malloc(b->max_frames * sizeof(*b->frames));
	b->table = malloc(slots * sizeof(*b->table));
	if (!b->time || !b->tid || !b->pid || !b->cpu || !b->event || !b->rate ||
	    !b->stack || !b->weight || !b->stacks || !b->frames || !b->table)
		goto err_free;
	builder_reset(b);
	return b;

err_free:
	fr_chunk_builder_free(b);
	return NULL;
}

void fr_chunk_builder_free(struct fr_chunk_builder *b)
{
	if (!b)
		return;
	free(b->time);
	free(b->tid);
	free(b->pid);
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
	size_t n = vlen(pid) + vlen(nr_kernel) + vlen(nr);

	for (unsigned i = 0; i < nr; i++)
		n += i == 0 ? vlen(ips[0]) : vlen(zigzag((int64_t)(ips[i] - ips[i - 1])));
	return n;
}

int fr_chunk_builder_add(struct fr_chunk_builder *b, const struct fr_sample *s)
{
	unsigned nr = s->nr_frames, nr_kernel = s->nr_kernel;
	uint64_t h;
	uint32_t slot, id = UINT32_MAX;
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

	h = stack_hash(s->pid, nr_kernel, nr, s->ips);
	for (slot = (uint32_t)h & b->table_mask; b->table[slot];
	     slot = (slot + 1) & b->table_mask) {
		const struct bstack *st = &b->stacks[b->table[slot] - 1];

		if (st->hash == h && st->pid == s->pid && st->nr_kernel == nr_kernel &&
		    st->nr_frames == nr &&
		    (nr == 0 || memcmp(&b->frames[st->first], s->ips, nr * sizeof(*s->ips)) == 0)) {
			id = b->table[slot] - 1;
			break;
		}
	}

	need = vlen(zigzag((int64_t)((uint64_t)s->time_ns - (uint64_t)b->prev_ns))) +
	       vlen(s->tid) + vlen(s->pid) + vlen(s->cpu) + vlen(s->event) +
	       vlen(s->weight) + vlen(s->rate_hz) + 1 /* labelset */;
	if (id == UINT32_MAX) {
		if (b->nstacks >= b->max_stacks || nr > b->max_frames - b->nframes)
			return -ENOSPC;
		need += stack_bytes(s->pid, nr_kernel, nr, s->ips) + META_ALLOWANCE;
		id = b->nstacks;
	}
	need += vlen(id);
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
	b->pid[b->nsamples] = s->pid;
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
	while (v >= 0x80) {
		w->p[w->len++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	w->p[w->len++] = (unsigned char)v;
}

static void wb_z(struct wbuf *w, int64_t v)
{
	wb_v(w, zigzag(v));
}

static void wb_bytes(struct wbuf *w, const void *p, size_t n)
{
	wb_reserve(w, n);
	if (w->err || n == 0)
		return;
	memcpy(w->p + w->len, p, n);
	w->len += n;
}

/* String interning for one seal. The hash table is sized up front for the
 * most strings the seal can add, so it never rehashes. */
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
	/* Id 0 is the empty string. */
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

/* Returns the id of `s` (NULL and "" are 0), or -ENOMEM. */
static int64_t strtab_intern(struct strtab *t, const char *s)
{
	size_t len;
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t slot;

	if (!s || !*s)
		return 0;
	len = strnlen(s, FR_CHUNK_STRING_MAX);
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	for (slot = (uint32_t)h & t->mask; t->slots[slot]; slot = (slot + 1) & t->mask) {
		uint32_t id = t->slots[slot] - 1;

		if (t->ent[id].len == len && memcmp(t->blob.p + t->ent[id].off, s, len) == 0)
			return id;
	}
	/* The caller sized the table for every string it can intern. */
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

struct pidaddr {
	uint32_t pid;
	uint64_t addr;
};

/* Sealing sorts every sample's pid and tid and every user frame of every
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

static void put_build_id(struct wbuf *w, uint8_t len, const uint8_t *id)
{
	if (len > FR_BUILD_ID_MAX)
		len = FR_BUILD_ID_MAX;
	wb_v(w, len);
	wb_bytes(w, id, len);
}

struct seal {
	uint32_t *pids, *tids;
	size_t npids, ntids;
	struct pidaddr *pairs;
	size_t npairs;
	struct strtab strs;
	struct wbuf procs, threads, maps;
	uint32_t nprocs, nthreads, nmaps;
	struct wbuf block;
};

static void seal_fini(struct seal *s)
{
	free(s->pids);
	free(s->tids);
	free(s->pairs);
	strtab_fini(&s->strs);
	free(s->procs.p);
	free(s->threads.p);
	free(s->maps.p);
	free(s->block.p);
}

/* Collects the distinct pids and tids, and the (pid, address) pairs of
 * every user frame of every stack, sorted. */
static int seal_collect(struct seal *s, const struct fr_chunk_builder *b)
{
	size_t user = 0, n_ids = (size_t)b->nsamples + b->nstacks + 1;
	void *tmp;

	s->pids = malloc(n_ids * sizeof(*s->pids));
	s->tids = malloc(((size_t)b->nsamples + 1) * sizeof(*s->tids));
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

	memcpy(s->pids, b->pid, b->nsamples * sizeof(*s->pids));
	for (uint32_t i = 0; i < b->nstacks; i++)
		s->pids[b->nsamples + i] = b->stacks[i].pid;
	s->npids = sort_unique(s->pids, tmp, (size_t)b->nsamples + b->nstacks);
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

static int seal_procs(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	for (size_t i = 0; ops && ops->proc && i < s->npids; i++) {
		struct fr_proc_info pi;
		int64_t comm, exe;

		memset(&pi, 0, sizeof(pi));
		if (ops->proc(ops->arg, s->pids[i], &pi) < 0)
			continue;
		comm = strtab_intern(&s->strs, pi.comm);
		exe = strtab_intern(&s->strs, pi.exe);
		if (comm < 0 || exe < 0)
			return -ENOMEM;
		wb_v(&s->procs, s->pids[i]);
		wb_v(&s->procs, pi.uid);
		wb_v(&s->procs, (uint64_t)comm);
		wb_v(&s->procs, (uint64_t)exe);
		wb_z(&s->procs, pi.start_ns);
		put_build_id(&s->procs, pi.build_id_len, pi.build_id);
		s->nprocs++;
	}
	return s->procs.err;
}

static int seal_threads(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	for (size_t i = 0; ops && ops->thread && i < s->ntids; i++) {
		struct fr_thread_info ti;
		int64_t name;

		memset(&ti, 0, sizeof(ti));
		if (ops->thread(ops->arg, s->tids[i], &ti) < 0)
			continue;
		name = strtab_intern(&s->strs, ti.name);
		if (name < 0)
			return -ENOMEM;
		wb_v(&s->threads, s->tids[i]);
		wb_v(&s->threads, ti.pid);
		wb_v(&s->threads, (uint64_t)name);
		s->nthreads++;
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
	uint32_t cur_pid = 0;
	uint64_t cur_start = 0, cur_end = 0;

	for (size_t i = 0; ops && ops->mapping && i < s->npairs; i++) {
		const struct pidaddr *pa = &s->pairs[i];
		struct fr_map_info mi;
		int64_t path;

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
		if (path < 0)
			return -ENOMEM;
		wb_v(&s->maps, pa->pid);
		wb_v(&s->maps, mi.start);
		wb_v(&s->maps, mi.end - mi.start);
		wb_v(&s->maps, mi.pgoff);
		wb_v(&s->maps, (uint64_t)path);
		put_build_id(&s->maps, mi.build_id_len, mi.build_id);
		s->nmaps++;
		have = true;
		cur_pid = pa->pid;
		cur_start = mi.start;
		cur_end = mi.end;
	}
	return s->maps.err;
}

static void seal_block(struct seal *s, const struct fr_chunk_builder *b, int64_t first_ns)
{
	struct wbuf *w = &s->block;
	int64_t prev;

	wb_reserve(w, b->raw_est + s->strs.blob.len + s->procs.len + s->threads.len +
			      s->maps.len + 64);

	wb_v(w, s->strs.n);
	for (uint32_t i = 0; i < s->strs.n; i++) {
		wb_v(w, s->strs.ent[i].len);
		wb_bytes(w, s->strs.blob.p + s->strs.ent[i].off, s->strs.ent[i].len);
	}
	wb_v(w, s->nprocs);
	wb_bytes(w, s->procs.p, s->procs.len);
	wb_v(w, s->nthreads);
	wb_bytes(w, s->threads.p, s->threads.len);
	wb_v(w, s->nmaps);
	wb_bytes(w, s->maps.p, s->maps.len);

	wb_v(w, b->nstacks);
	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[i];
		const uint64_t *f = &b->frames[st->first];

		wb_v(w, st->pid);
		wb_v(w, st->nr_kernel);
		wb_v(w, st->nr_frames);
		for (unsigned k = 0; k < st->nr_frames; k++) {
			if (k == 0)
				wb_v(w, f[0]);
			else
				wb_z(w, (int64_t)(f[k] - f[k - 1]));
		}
	}

	wb_v(w, 0); /* labelsets: the builder has none but the empty set */

	wb_v(w, b->nevents);
	for (uint32_t i = 0; i < b->nevents; i++) {
		wb_v(w, b->events[i].event);
		wb_v(w, b->events[i].lost);
		wb_v(w, b->events[i].throttled);
		wb_v(w, b->events[i].truncated);
	}

	wb_v(w, b->nsamples);
	prev = first_ns;
	for (uint32_t i = 0; i < b->nsamples; i++) {
		wb_z(w, (int64_t)((uint64_t)b->time[i] - (uint64_t)prev));
		prev = b->time[i];
	}
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->tid[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->pid[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->cpu[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->event[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->weight[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->rate[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, b->stack[i]);
	for (uint32_t i = 0; i < b->nsamples; i++)
		wb_v(w, 0);
}

static void header_write(unsigned char *p, const struct fr_chunk_header *h)
{
	memset(p, 0, FR_CHUNK_HEADER_LEN);
	put_le32(p + 0, h->magic);
	put_le16(p + 4, h->version);
	put_le16(p + 6, h->header_len);
	put_le64(p + 8, h->seq);
	put_le64(p + 16, (uint64_t)h->first_ns);
	put_le64(p + 24, (uint64_t)h->last_ns);
	put_le32(p + 32, h->nsamples);
	put_le32(p + 36, h->raw_len);
	put_le32(p + 40, h->comp_len);
	put_le32(p + 44, h->flags);
	put_le64(p + 48, (uint64_t)h->clock_offset);
	put_le32(p + 56, h->payload_crc);
	put_le32(p + 60, fr_crc32c(0, p, 60));
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
	max_strings = 1 + 2 * s.npids + s.ntids + s.npairs;
	ret = strtab_init(&s.strs, max_strings);
	if (ret < 0)
		goto out;
	ret = seal_procs(&s, ops);
	if (ret < 0)
		goto out;
	ret = seal_threads(&s, ops);
	if (ret < 0)
		goto out;
	ret = seal_maps(&s, ops);
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
		b->zstd = fr_zstd_new(ZSTD_LEVEL);
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
		.flags = 0,
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
	if (get_le32(p) != FR_CHUNK_MAGIC)
		return -EBADMSG;
	if (get_le32(p + 60) != fr_crc32c(0, p, 60))
		return -EBADMSG;
	h->magic = get_le32(p);
	h->version = get_le16(p + 4);
	h->header_len = get_le16(p + 6);
	h->seq = get_le64(p + 8);
	h->first_ns = (int64_t)get_le64(p + 16);
	h->last_ns = (int64_t)get_le64(p + 24);
	h->nsamples = get_le32(p + 32);
	h->raw_len = get_le32(p + 36);
	h->comp_len = get_le32(p + 40);
	h->flags = get_le32(p + 44);
	h->clock_offset = (int64_t)get_le64(p + 48);
	h->payload_crc = get_le32(p + 56);
	h->header_crc = get_le32(p + 60);
	if (h->version != FR_CHUNK_VERSION)
		return -EPROTONOSUPPORT;
	if (h->header_len != FR_CHUNK_HEADER_LEN)
		return -EBADMSG;
	if (h->raw_len < RAW_FIXED || h->raw_len > FR_CHUNK_RAW_MAX)
		return -EBADMSG;
	if (h->comp_len == 0 || h->comp_len > FR_CHUNK_COMP_MAX)
		return -EBADMSG;
	/* Each sample takes at least nine bytes of block. */
	if (h->nsamples > h->raw_len / 9)
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

void fr_chunk_set_seq(void *buf, uint64_t seq)
{
	unsigned char *p = buf;

	put_le64(p + 8, seq);
	put_le32(p + 60, fr_crc32c(0, p, 60));
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
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		unsigned char c;

		if (r->p >= r->end)
			return -EBADMSG;
		c = *r->p++;
		/* The tenth byte holds bit 63 only. */
		if (shift == 63 && c > 1)
			return -EBADMSG;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
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

static int rd_build_id(struct rd *r, uint8_t *len, uint8_t *id)
{
	uint64_t n;

	if (rd_v(r, &n) < 0 || n > FR_BUILD_ID_MAX || n > rd_left(r))
		return -EBADMSG;
	memcpy(id, r->p, n);
	r->p += n;
	*len = (uint8_t)n;
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
		uint64_t len;

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

static int decode_procs(struct rd *r, struct fr_chunk *c)
{
	uint32_t n;

	/* pid, uid, comm, exe, start_ns, build_id_len: six bytes at least. */
	TRY(rd_count(r, 6, &n));
	c->procs = alloc_array(n, sizeof(*c->procs));
	if (!c->procs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_proc *p = &c->procs[i];
		uint64_t start;

		TRY(rd_u32(r, &p->pid));
		TRY(rd_u32(r, &p->uid));
		TRY(rd_id(r, c->nstrings, &p->comm));
		TRY(rd_id(r, c->nstrings, &p->exe));
		TRY(rd_v(r, &start));
		p->start_ns = unzigzag(start);
		TRY(rd_build_id(r, &p->build_id_len, p->build_id));
		if (i > 0 && p->pid <= c->procs[i - 1].pid)
			goto err_bad;
		c->nprocs = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_threads(struct rd *r, struct fr_chunk *c)
{
	uint32_t n;

	TRY(rd_count(r, 3, &n));
	c->threads = alloc_array(n, sizeof(*c->threads));
	if (!c->threads)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_thread *t = &c->threads[i];

		TRY(rd_u32(r, &t->tid));
		TRY(rd_u32(r, &t->pid));
		TRY(rd_id(r, c->nstrings, &t->name));
		if (i > 0 && t->tid <= c->threads[i - 1].tid)
			goto err_bad;
		c->nthreads = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_maps(struct rd *r, struct fr_chunk *c)
{
	uint32_t n;

	TRY(rd_count(r, 6, &n));
	c->maps = alloc_array(n, sizeof(*c->maps));
	if (!c->maps)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_map *m = &c->maps[i];
		uint64_t len;

		TRY(rd_u32(r, &m->pid));
		TRY(rd_v(r, &m->start));
		TRY(rd_v(r, &len));
		TRY(rd_v(r, &m->pgoff));
		TRY(rd_id(r, c->nstrings, &m->path));
		TRY(rd_build_id(r, &m->build_id_len, m->build_id));
		if (len == 0 || len > UINT64_MAX - m->start)
			goto err_bad;
		m->end = m->start + len;
		if (i > 0) {
			const struct fr_chunk_map *prev = &c->maps[i - 1];

			if (m->pid < prev->pid || (m->pid == prev->pid && m->start < prev->end))
				goto err_bad;
		}
		c->nmaps = i + 1;
	}
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_stacks(struct rd *r, struct fr_chunk *c)
{
	const unsigned char *start;
	uint64_t total = 0;
	uint32_t n;

	TRY(rd_count(r, 3, &n));
	/* First pass: validate the shapes and count the frames. */
	start = r->p;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t pid, nr_kernel, nr;
		uint64_t v;

		TRY(rd_u32(r, &pid));
		TRY(rd_u32(r, &nr_kernel));
		TRY(rd_u32(r, &nr));
		if (nr > FR_MAX_FRAMES || nr_kernel > nr || nr > rd_left(r))
			goto err_bad;
		for (uint32_t k = 0; k < nr; k++)
			TRY(rd_v(r, &v));
		total += nr;
	}
	c->stacks = alloc_array(n, sizeof(*c->stacks));
	c->frames = alloc_array(total, sizeof(*c->frames));
	if (!c->stacks || !c->frames)
		return -ENOMEM;
	c->nstacks = n;
	r->p = start;
	total = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_stack *st = &c->stacks[i];
		uint64_t v, addr = 0;

		rd_u32(r, &st->pid);
		rd_u32(r, &st->nr_kernel);
		rd_u32(r, &st->nr_frames);
		st->first = (uint32_t)total;
		for (uint32_t k = 0; k < st->nr_frames; k++) {
			rd_v(r, &v);
			addr = k == 0 ? v : addr + (uint64_t)unzigzag(v);
			c->frames[total++] = addr;
		}
	}
	return 0;
err_bad:
	return -EBADMSG;
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

static int decode_u32_column(struct rd *r, uint32_t n, uint32_t limit, uint32_t *col)
{
	for (uint32_t i = 0; i < n; i++)
		TRY(rd_id(r, limit, &col[i]));
	return 0;
err_bad:
	return -EBADMSG;
}

static int decode_samples(struct rd *r, struct fr_chunk *c)
{
	uint64_t t;
	uint32_t n;

	/* Nine columns of at least one byte each. */
	TRY(rd_count(r, 9, &n));
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
	if (!c->time_ns || !c->tid || !c->pid || !c->cpu || !c->event || !c->weight ||
	    !c->rate_hz || !c->stack || !c->labelset)
		return -ENOMEM;

	t = (uint64_t)c->hdr.first_ns;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v;

		TRY(rd_v(r, &v));
		t += (uint64_t)unzigzag(v);
		c->time_ns[i] = (int64_t)t;
		/* The header's time span covers every sample; queries by
		 * time rely on it. */
		if (c->time_ns[i] < c->hdr.first_ns || c->time_ns[i] > c->hdr.last_ns)
			goto err_bad;
	}
	TRY(decode_u32_column(r, n, UINT32_MAX, c->tid));
	TRY(decode_u32_column(r, n, UINT32_MAX, c->pid));
	TRY(decode_u32_column(r, n, UINT32_MAX, c->cpu));
	TRY(decode_u32_column(r, n, UINT32_MAX, c->event));
	for (uint32_t i = 0; i < n; i++)
		TRY(rd_v(r, &c->weight[i]));
	TRY(decode_u32_column(r, n, UINT32_MAX, c->rate_hz));
	TRY(decode_u32_column(r, n, c->nstacks, c->stack));
	TRY(decode_u32_column(r, n, c->nlabelsets, c->labelset));
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
	struct rd r;
	ssize_t n;
	int ret;

	*out = NULL;
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
	r.p = raw;
	r.end = raw + c->hdr.raw_len;
	if ((ret = decode_strings(&r, c)) < 0 || (ret = decode_procs(&r, c)) < 0 ||
	    (ret = decode_threads(&r, c)) < 0 || (ret = decode_maps(&r, c)) < 0 ||
	    (ret = decode_stacks(&r, c)) < 0 || (ret = decode_labelsets(&r, c)) < 0 ||
	    (ret = decode_events(&r, c)) < 0 || (ret = decode_samples(&r, c)) < 0)
		goto err;
	/* Nothing may follow the samples. */
	if (r.p != r.end) {
		ret = -EBADMSG;
		goto err;
	}
	free(raw);
	*out = c;
	return 0;

err:
	free(raw);
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
