/* Window queries.
 *
 * Two passes over the chunks of the window. The first finds the lowest
 * rate any sample of the window was collected at (a profile has exactly
 * one period, so the whole window is downsampled to that rate or to the
 * requested one, whichever is lower). The second keeps each sample with
 * probability target/collected, decided by a hash of the sample itself, so
 * the same request always gives the same profile, and aggregates the kept
 * ones by (stack, pid, tid). Decoded chunks are kept between the passes
 * while they fit in a memory budget, and decoded again otherwise.
 *
 * Frames are turned into locations keyed by (mapping, address), where a
 * return address is stored minus one so it falls inside the call
 * instruction (as pprof expects of caller frames). Symbolization happens
 * once per distinct location, after aggregation; the pprof emitter and the
 * folded-stacks emitter share everything up to there.
 */
#include "core/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/chunk.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/pprof.h"
#include "core/ring.h"
#include "core/sample.h"
#include "core/symbols.h"

#define CACHE_BUDGET (128u << 20)
#define KERNEL_MAP 1 /* index of the kernel pseudo-mapping in maps[] */

/* ---- a small open-addressing index: slots hold entry index + 1 -------- */

struct hidx {
	uint32_t *slots;
	uint32_t cap; /* power of two */
	uint32_t n;
};

static int hidx_grow(struct hidx *h, uint64_t (*hash_of)(void *ctx, uint32_t idx), void *ctx)
{
	uint32_t cap = h->cap ? h->cap * 2 : 1024;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->cap; i++) {
		uint32_t v = h->slots[i];
		if (!v)
			continue;
		uint32_t s = (uint32_t)hash_of(ctx, v - 1) & (cap - 1);
		while (slots[s])
			s = (s + 1) & (cap - 1);
		slots[s] = v;
	}
	free(h->slots);
	h->slots = slots;
	h->cap = cap;
	return 0;
}

/* ---- builder state ------------------------------------------------------ */

struct gmap {
	char *path;
	uint64_t start, end, pgoff;
	uint32_t pid; /* a process that mapped it, for /proc/PID/root */
	uint8_t bid_len;
	uint8_t bid[FR_BUILD_ID_MAX];
	int has_functions;
	uint64_t pprof_id;
	uint64_t hash;
};

struct gloc {
	uint32_t map; /* 0: no mapping */
	uint64_t addr;
	uint64_t function_id;
	uint32_t name; /* index into strs; folded output only */
	uint64_t hash;
};

struct gsample {
	uint32_t pid, tid, cpu;
	uint32_t comm, thread; /* indexes into strs */
	uint32_t nlocs;
	uint64_t locs; /* offset into locs arena */
	uint64_t count;
	uint64_t hash;
};

struct builder {
	const struct fr_profile_request *req;
	struct gmap *maps;
	uint32_t nmaps, maps_cap;
	struct hidx map_idx;
	struct gloc *locs;
	uint32_t nlocs, locs_cap;
	struct hidx loc_idx;
	struct gsample *samples;
	uint32_t nsamples, samples_cap;
	struct hidx sample_idx;
	uint32_t *arena;
	uint64_t arena_len, arena_cap;
	char **strs;
	uint32_t nstrs, strs_cap;
	struct hidx str_idx;
	/* Scratch for one stack being looked up. */
	uint32_t key[FR_MAX_FRAMES];
	/* Per-chunk memo: stack id -> (arena offset, count) of its locations. */
	uint64_t *stack_off;
	uint32_t *stack_n;
	uint32_t stack_cap;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int grow(void **arr, uint32_t *cap, size_t elem)
{
	uint32_t ncap = *cap ? *cap * 2 : 256;
	void *p = realloc(*arr, (size_t)ncap * elem);

	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static uint64_t str_hash_of(void *ctx, uint32_t i)
{
	struct builder *b = ctx;
	return hash_bytes(0xcbf29ce484222325ull, b->strs[i], strlen(b->strs[i]));
}

/* Interns a label string; returns its index or -ENOMEM. */
static int64_t intern_str(struct builder *b, const char *s)
{
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, s, strlen(s));
	uint32_t slot;

	if ((b->str_idx.n + 1) * 2 > b->str_idx.cap && hidx_grow(&b->str_idx, str_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->str_idx.cap - 1); b->str_idx.slots[slot];
	     slot = (slot + 1) & (b->str_idx.cap - 1))
		if (strcmp(b->strs[b->str_idx.slots[slot] - 1], s) == 0)
			return b->str_idx.slots[slot] - 1;
	if (b->nstrs == b->strs_cap && grow((void **)&b->strs, &b->strs_cap, sizeof(char *)) < 0)
		return -ENOMEM;
	b->strs[b->nstrs] = strdup(s);
	if (!b->strs[b->nstrs])
		return -ENOMEM;
	b->str_idx.slots[slot] = ++b->nstrs;
	b->str_idx.n++;
	return b->nstrs - 1;
}

static uint64_t map_hash_of(void *ctx, uint32_t i)
{
	return ((struct builder *)ctx)->maps[i].hash;
}

static uint64_t map_key_hash(const char *path, uint64_t start, uint64_t end, uint64_t pgoff)
{
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, path, strlen(path));
	return mix64(h ^ mix64(start) ^ mix64(end * 3) ^ mix64(pgoff * 7));
}

/* Interns a mapping of chunk `c`; returns its index or -ENOMEM. */
static int64_t intern_map(struct builder *b, const struct fr_chunk *c, const struct fr_chunk_map *m)
{
	const char *path = c->strings[m->path];
	uint64_t h = map_key_hash(path, m->start, m->end, m->pgoff);
	uint32_t slot;
	struct gmap *g;

	if ((b->map_idx.n + 1) * 2 > b->map_idx.cap && hidx_grow(&b->map_idx, map_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->map_idx.cap - 1); b->map_idx.slots[slot];
	     slot = (slot + 1) & (b->map_idx.cap - 1)) {
		g = &b->maps[b->map_idx.slots[slot] - 1];
		if (g->hash == h && g->start == m->start && g->end == m->end &&
		    g->pgoff == m->pgoff && strcmp(g->path, path) == 0)
			return b->map_idx.slots[slot] - 1;
	}
	if (b->nmaps == b->maps_cap && grow((void **)&b->maps, &b->maps_cap, sizeof(*b->maps)) < 0)
		return -ENOMEM;
	g = &b->maps[b->nmaps];
	memset(g, 0, sizeof(*g));
	g->path = strdup(path);
	if (!g->path)
		return -ENOMEM;
	g->start = m->start;
	g->end = m->end;
	g->pgoff = m->pgoff;
	g->pid = m->pid;
	g->bid_len = m->build_id_len;
	memcpy(g->bid, m->build_id, m->build_id_len);
	g->hash = h;
	b->map_idx.slots[slot] = ++b->nmaps;
	b->map_idx.n++;
	return b->nmaps - 1;
}

static uint64_t loc_hash_of(void *ctx, uint32_t i)
{
	return ((struct builder *)ctx)->locs[i].hash;
}

static int64_t intern_loc(struct builder *b, uint32_t map, uint64_t addr)
{
	uint64_t h = mix64(addr ^ ((uint64_t)map << 48) ^ map);
	uint32_t slot;

	if ((b->loc_idx.n + 1) * 2 > b->loc_idx.cap && hidx_grow(&b->loc_idx, loc_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->loc_idx.cap - 1); b->loc_idx.slots[slot];
	     slot = (slot + 1) & (b->loc_idx.cap - 1)) {
		const struct gloc *l = &b->locs[b->loc_idx.slots[slot] - 1];
		if (l->addr == addr && l->map == map)
			return b->loc_idx.slots[slot] - 1;
	}
	if (b->nlocs == b->locs_cap && grow((void **)&b->locs, &b->locs_cap, sizeof(*b->locs)) < 0)
		return -ENOMEM;
	b->locs[b->nlocs] = (struct gloc){.map = map, .addr = addr, .hash = h};
	b->loc_idx.slots[slot] = ++b->nlocs;
	b->loc_idx.n++;
	return b->nlocs - 1;
}

static uint64_t sample_hash_of(void *ctx, uint32_t i)
{
	return ((struct builder *)ctx)->samples[i].hash;
}

/* Locations of stack `sid` of chunk `c`, memoized per chunk in the arena.
 * Returns 0 or -ENOMEM. */
static int stack_locations(struct builder *b, const struct fr_chunk *c, uint32_t sid,
			   uint64_t *off, uint32_t *n)
{
	const struct fr_chunk_stack *st = &c->stacks[sid];

	if (b->stack_n[sid] != UINT32_MAX) {
		*off = b->stack_off[sid];
		*n = b->stack_n[sid];
		return 0;
	}
	if (b->arena_len + st->nr_frames > b->arena_cap) {
		uint64_t cap = b->arena_cap ? b->arena_cap * 2 : 65536;
		while (cap < b->arena_len + st->nr_frames)
			cap *= 2;
		uint32_t *a = realloc(b->arena, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		b->arena = a;
		b->arena_cap = cap;
	}
	for (uint32_t j = 0; j < st->nr_frames; j++) {
		uint64_t addr = c->frames[st->first + j];
		/* Every frame but the very first is a return address. */
		uint64_t lookup = j == 0 ? addr : addr - 1;
		int64_t map = 0, loc;

		if (j < st->nr_kernel) {
			map = KERNEL_MAP;
		} else {
			const struct fr_chunk_map *m = fr_chunk_find_map(c, st->pid, addr);
			if (m) {
				map = intern_map(b, c, m);
				if (map < 0)
					return -ENOMEM;
			}
		}
		loc = intern_loc(b, (uint32_t)map, lookup);
		if (loc < 0)
			return -ENOMEM;
		b->arena[b->arena_len + j] = (uint32_t)loc;
	}
	b->stack_off[sid] = b->arena_len;
	b->stack_n[sid] = st->nr_frames;
	b->arena_len += st->nr_frames;
	*off = b->stack_off[sid];
	*n = st->nr_frames;
	return 0;
}

static int add_sample(struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	uint32_t sid = c->stack[i], nlocs, slot;
	uint32_t cpu = b->req->cpu_label ? c->cpu[i] : 0;
	uint64_t off, h;
	const struct fr_chunk_proc *proc;
	const struct fr_chunk_thread *th;
	struct gsample *s;
	int64_t comm, thread;
	int ret;

	ret = stack_locations(b, c, sid, &off, &nlocs);
	if (ret < 0)
		return ret;
	h = mix64(((uint64_t)c->pid[i] << 32 | c->tid[i]) ^ mix64(cpu + 1));
	h = hash_bytes(h, &b->arena[off], nlocs * sizeof(uint32_t));

	if ((b->sample_idx.n + 1) * 2 > b->sample_idx.cap &&
	    hidx_grow(&b->sample_idx, sample_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->sample_idx.cap - 1); b->sample_idx.slots[slot];
	     slot = (slot + 1) & (b->sample_idx.cap - 1)) {
		s = &b->samples[b->sample_idx.slots[slot] - 1];
		if (s->hash == h && s->pid == c->pid[i] && s->tid == c->tid[i] && s->cpu == cpu &&
		    s->nlocs == nlocs &&
		    memcmp(&b->arena[s->locs], &b->arena[off], nlocs * sizeof(uint32_t)) == 0) {
			s->count++;
			return 0;
		}
	}
	proc = fr_chunk_find_proc(c, c->pid[i]);
	th = fr_chunk_find_thread(c, c->tid[i]);
	comm = intern_str(b, proc ? c->strings[proc->comm] : "");
	thread = intern_str(b, th ? c->strings[th->name] : "");
	if (comm < 0 || thread < 0)
		return -ENOMEM;
	if (b->nsamples == b->samples_cap &&
	    grow((void **)&b->samples, &b->samples_cap, sizeof(*b->samples)) < 0)
		return -ENOMEM;
	b->samples[b->nsamples] = (struct gsample){
		.pid = c->pid[i], .tid = c->tid[i], .cpu = cpu,
		.comm = (uint32_t)comm, .thread = (uint32_t)thread,
		.nlocs = nlocs, .locs = off, .count = 1, .hash = h,
	};
	b->sample_idx.slots[slot] = ++b->nsamples;
	b->sample_idx.n++;
	return 0;
}

static int wanted_pid(const struct fr_profile_request *req, uint32_t pid)
{
	if (!req->npids)
		return 1;
	for (uint32_t i = 0; i < req->npids; i++)
		if (req->pids[i] == pid)
			return 1;
	return 0;
}

static int in_target(const struct fr_profile_request *req, const struct fr_chunk *c, uint32_t i)
{
	return c->time_ns[i] >= req->t0 && c->time_ns[i] < req->t1 &&
	       c->event[i] == FR_EVENT_CPU && wanted_pid(req, c->pid[i]);
}

/* Keeps a sample collected at `rate` with probability target/rate, decided
 * by a hash of the sample so the decision is the same on every request. */
static int keep_sample(const struct fr_chunk *c, uint32_t i, uint32_t target)
{
	uint32_t rate = c->rate_hz[i];
	uint64_t h;

	if (!rate || rate <= target)
		return 1;
	h = mix64((uint64_t)c->time_ns[i] ^ mix64(((uint64_t)c->tid[i] << 20) ^ c->cpu[i]));
	/* h / 2^64 < target / rate, without overflow: compare top 32 bits. */
	return (h >> 32) * (uint64_t)rate < (uint64_t)target << 32;
}

static void free_builder(struct builder *b)
{
	for (uint32_t i = 0; i < b->nmaps; i++)
		free(b->maps[i].path);
	free(b->maps);
	free(b->map_idx.slots);
	free(b->locs);
	free(b->loc_idx.slots);
	free(b->samples);
	free(b->sample_idx.slots);
	free(b->arena);
	for (uint32_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	free(b->str_idx.slots);
	free(b->stack_off);
	free(b->stack_n);
}

static int reset_stack_memo(struct builder *b, uint32_t nstacks)
{
	if (nstacks == 0)
		return 0;
	if (nstacks > b->stack_cap) {
		uint64_t *off = realloc(b->stack_off, nstacks * sizeof(*off));
		if (!off)
			return -ENOMEM;
		b->stack_off = off;
		uint32_t *n = realloc(b->stack_n, nstacks * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->stack_n = n;
		b->stack_cap = nstacks;
	}
	memset(b->stack_n, 0xff, nstacks * sizeof(*b->stack_n));
	return 0;
}

/* Names every location. With `p`, functions are added to the profile as
 * found; without, the names are interned for the folded emitter.
 * Returns 0 or -ENOMEM. */
static int symbolize(struct builder *b, struct fr_pprof *p, const char *kallsyms)
{
	struct fr_symbols *syms = fr_symbols_new(kallsyms);
	char buf[4200], root[64];
	int ret = 0;

	for (uint32_t i = 0; i < b->nlocs; i++) {
		struct gloc *l = &b->locs[i];
		const char *name = NULL, *file = NULL;
		uint64_t elf_addr = 0;

		if (l->map == KERNEL_MAP) {
			file = "[kernel.kallsyms]";
			if (syms && fr_symbols_kernel(syms, l->addr, &name) == 0) {
				snprintf(buf, sizeof(buf), "[k] %s", name);
			} else {
				snprintf(buf, sizeof(buf), "[k] 0x%" PRIx64, l->addr);
			}
			b->maps[KERNEL_MAP].has_functions = 1;
		} else if (l->map) {
			struct gmap *m = &b->maps[l->map];
			file = m->path;
			snprintf(root, sizeof(root), "/proc/%u/root", m->pid);
			if (syms && fr_symbols_user(syms, root, m->path, m->bid, m->bid_len, m->start,
						    m->pgoff, l->addr, &name, &elf_addr) == 0) {
				snprintf(buf, sizeof(buf), "%s", name);
				m->has_functions = 1;
			} else {
				const char *base = strrchr(m->path, '/');
				snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base ? base + 1 : m->path,
					 l->addr - m->start + m->pgoff);
			}
		} else {
			snprintf(buf, sizeof(buf), "[unknown] 0x%" PRIx64, l->addr);
		}
		if (p) {
			l->function_id = fr_pprof_function(p, buf, buf, file);
		} else {
			int64_t idx = intern_str(b, buf);
			if (idx < 0) {
				ret = -ENOMEM;
				break;
			}
			l->name = (uint32_t)idx;
		}
	}
	fr_symbols_free(syms);
	return ret;
}

static void emit(struct builder *b, struct fr_pprof *p, uint32_t hz, uint64_t *kept)
{
	int64_t period = 1000000000LL / hz;
	char bid[2 * FR_BUILD_ID_MAX + 1];
	uint64_t kmin = UINT64_MAX, kmax = 0;
	uint64_t *ids = NULL;

	for (uint32_t i = 0; i < b->nlocs; i++) {
		if (b->locs[i].map == KERNEL_MAP) {
			if (b->locs[i].addr < kmin)
				kmin = b->locs[i].addr;
			if (b->locs[i].addr > kmax)
				kmax = b->locs[i].addr;
		}
	}
	for (uint32_t i = 2; i < b->nmaps; i++) {
		struct gmap *m = &b->maps[i];
		m->pprof_id = fr_pprof_mapping(p, m->start, m->end, m->pgoff, m->path,
					       m->bid_len ? fr_build_id_hex(m->bid, m->bid_len, bid)
							  : NULL,
					       m->has_functions);
	}
	/* Last: readers take the first mapping as the profile's main binary. */
	if (kmin != UINT64_MAX)
		b->maps[KERNEL_MAP].pprof_id =
			fr_pprof_mapping(p, kmin, kmax + 1, 0, "[kernel.kallsyms]", NULL, 1);
	ids = malloc(b->nlocs ? b->nlocs * sizeof(*ids) : 1);
	for (uint32_t i = 0; ids && i < b->nlocs; i++) {
		const struct gloc *l = &b->locs[i];
		ids[i] = fr_pprof_location(p, l->map ? b->maps[l->map].pprof_id : 0, l->addr,
					   l->function_id);
	}
	for (uint32_t i = 0; ids && i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];
		uint64_t locs[FR_MAX_FRAMES];
		int64_t values[2] = {(int64_t)s->count, (int64_t)s->count * period};
		struct fr_pprof_label labels[5] = {
			{.key = "pid", .num = s->pid},
			{.key = "tid", .num = s->tid},
			{.key = "comm", .str = b->strs[s->comm]},
			{.key = "thread", .str = b->strs[s->thread]},
			{.key = "cpu", .num = s->cpu},
		};

		for (uint32_t j = 0; j < s->nlocs && j < FR_MAX_FRAMES; j++)
			locs[j] = ids[b->arena[s->locs + j]];
		fr_pprof_sample(p, locs, s->nlocs, values, 2, labels, b->req->cpu_label ? 5 : 4);
		*kept += s->count;
	}
	free(ids);
}

struct folded_line {
	char *text;
	uint64_t count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* Appends frame name `s` at `out`, keeping ';' and newlines out of it;
 * returns the end. */
static char *put_frame(char *out, const char *s)
{
	for (; *s; s++)
		*out++ = *s == ';' || *s == '\n' ? '_' : *s;
	return out;
}

/* Writes the aggregate as folded stacks (see core/profile.h): samples that
 * differ only in pid or tid fold into one line, so lines are sorted and
 * equal neighbours merged. Returns 0, -ENOMEM, or the sink's -errno. */
static int emit_folded(struct builder *b, fr_write_fn sink, void *arg, uint64_t *kept,
		       uint64_t *nlines)
{
	struct folded_line *v = calloc(b->nsamples ? b->nsamples : 1, sizeof(*v));
	uint32_t n = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];
		const char *comm = b->strs[s->comm][0] ? b->strs[s->comm] : "[unknown]";
		size_t len = strlen(comm) + 1;
		char *t;

		for (uint32_t j = 0; j < s->nlocs; j++)
			len += 1 + strlen(b->strs[b->locs[b->arena[s->locs + j]].name]);
		t = v[n].text = malloc(len);
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		v[n++].count = s->count;
		t = put_frame(t, comm);
		/* The arena holds the leaf first, kernel frames before user ones:
		 * reversed, it is root first with the kernel frames as leaves. */
		for (uint32_t j = s->nlocs; j-- > 0;) {
			*t++ = ';';
			t = put_frame(t, b->strs[b->locs[b->arena[s->locs + j]].name]);
		}
		*t = '\0';
	}
	qsort(v, n, sizeof(*v), cmp_folded);
	for (uint32_t i = 0; i < n && ret == 0;) {
		uint64_t count = 0;
		uint32_t j = i;
		char num[32];
		int len;

		for (; j < n && strcmp(v[j].text, v[i].text) == 0; j++)
			count += v[j].count;
		len = snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		ret = sink(arg, v[i].text, strlen(v[i].text));
		if (ret == 0)
			ret = sink(arg, num, (size_t)len);
		*kept += count;
		(*nlines)++;
		i = j;
	}
out:
	for (uint32_t i = 0; i < n; i++)
		free(v[i].text);
	free(v);
	return ret;
}

/* Counts what the profile hands to the caller's sink. */
struct counting_sink {
	fr_write_fn sink;
	void *arg;
	uint64_t bytes;
};

static int counting_write(void *arg, const void *buf, size_t len)
{
	struct counting_sink *c = arg;
	int ret = c->sink(c->arg, buf, len);

	if (ret == 0)
		c->bytes += len;
	return ret;
}

struct cached {
	struct fr_chunk *chunk; /* NULL: decode again in pass 2 */
};

/* Adds a comment line to the pprof profile; folded output has none. */
static void comment(struct fr_pprof *p, const char *line)
{
	if (p)
		fr_pprof_comment(p, line);
}

int fr_profile_format_parse(const char *name)
{
	if (strcmp(name, "pprof") == 0)
		return FR_PROFILE_PPROF;
	if (strcmp(name, "folded") == 0)
		return FR_PROFILE_FOLDED;
	return -EINVAL;
}

static int load(struct fr_ring *ring, const struct fr_ring_ref *ref, struct fr_chunk **out)
{
	void *buf = NULL;
	int ret = fr_ring_read(ring, ref, &buf);

	if (ret == 0)
		ret = fr_chunk_decode(buf, ref->len, out);
	free(buf);
	return ret;
}

int fr_profile_write(struct fr_ring *ring, const struct fr_profile_request *req,
		     fr_write_fn sink, void *sink_arg, struct fr_profile_result *res,
		     char *err, size_t errlen)
{
	struct builder b;
	struct fr_ring_ref *refs = NULL;
	struct cached *cache = NULL;
	struct fr_ring_stats st;
	struct fr_pprof *p = NULL;
	struct counting_sink counter = {.sink = sink, .arg = sink_arg};
	size_t nrefs = 0, cached_bytes = 0;
	uint32_t min_rate = 0, max_rate = 0, target;
	int64_t eff_t0;
	char line[512], a[64], bb[64], dur[32];
	int ret;

	memset(&b, 0, sizeof(b));
	memset(res, 0, sizeof(*res));
	b.req = req;
	err[0] = '\0';

	ret = fr_ring_query(ring, req->t0, req->t1, &refs, &nrefs);
	if (ret < 0) {
		snprintf(err, errlen, "cannot query the ring: %s", strerror(-ret));
		goto out;
	}
	cache = calloc(nrefs ? nrefs : 1, sizeof(*cache));
	if (!cache) {
		ret = -ENOMEM;
		goto out;
	}

	/* Pass 1: the lowest collection rate in the window. */
	for (size_t r = 0; r < nrefs; r++) {
		struct fr_chunk *c = NULL;

		ret = load(ring, &refs[r], &c);
		if (ret < 0) {
			res->chunks_skipped++;
			continue;
		}
		res->chunks++;
		for (uint32_t e = 0; e < c->nevents; e++)
			if (c->events[e].event == FR_EVENT_CPU)
				res->lost += c->events[e].lost;
		for (uint32_t i = 0; i < c->nsamples; i++) {
			if (!in_target(req, c, i))
				continue;
			res->samples_seen++;
			if (c->rate_hz[i] && (!min_rate || c->rate_hz[i] < min_rate))
				min_rate = c->rate_hz[i];
			if (c->rate_hz[i] > max_rate)
				max_rate = c->rate_hz[i];
		}
		if (cached_bytes + refs[r].raw_len * 2u <= CACHE_BUDGET) {
			cache[r].chunk = c;
			cached_bytes += refs[r].raw_len * 2u;
		} else {
			fr_chunk_free(c);
		}
	}
	ret = 0;
	target = min_rate;
	if (req->hz && (!target || req->hz < target))
		target = req->hz;
	if (!target)
		target = req->hz ? req->hz : 99;
	res->hz = target;

	/* Pass 2: downsample and aggregate. Index 0 of maps is "no mapping",
	 * index 1 the kernel. */
	b.nmaps = 2;
	b.maps_cap = 256;
	b.maps = calloc(b.maps_cap, sizeof(*b.maps));
	if (!b.maps) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t r = 0; r < nrefs; r++) {
		struct fr_chunk *c = cache[r].chunk;

		if (!c && load(ring, &refs[r], &c) < 0)
			continue;
		ret = reset_stack_memo(&b, c->nstacks);
		for (uint32_t i = 0; ret == 0 && i < c->nsamples; i++) {
			if (!in_target(req, c, i) || !keep_sample(c, i, target))
				continue;
			ret = add_sample(&b, c, i);
		}
		if (c != cache[r].chunk)
			fr_chunk_free(c);
		if (ret < 0) {
			snprintf(err, errlen, "out of memory while aggregating the window");
			goto out;
		}
	}

	/* What the ring covers, and what to tell the user about it. */
	fr_ring_get_stats(ring, &st);
	eff_t0 = req->t0;
	res->covered_t0 = st.oldest_ns;
	if (!st.chunks) {
		snprintf(res->warning, sizeof(res->warning),
			 "the ring holds no samples yet; the profile is empty");
	} else if (st.oldest_ns > req->t0) {
		eff_t0 = st.oldest_ns < req->t1 ? st.oldest_ns : req->t1;
		snprintf(res->warning, sizeof(res->warning),
			 "the window asks for %s but the ring holds samples only since %s; "
			 "the profile covers the last %s",
			 fr_format_duration(req->t1 - req->t0, a, sizeof(a)),
			 fr_format_time(st.oldest_ns, bb, sizeof(bb)),
			 fr_format_duration((req->t1 - eff_t0) / 1000000 * 1000000, dur, sizeof(dur)));
	}

	if (req->format == FR_PROFILE_PPROF) {
		p = fr_pprof_new(6, counting_write, &counter);
		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		fr_pprof_sample_type(p, "samples", "count");
		fr_pprof_sample_type(p, "cpu", "nanoseconds");
		fr_pprof_default_sample_type(p, "cpu");
		fr_pprof_period(p, "cpu", "nanoseconds", 1000000000LL / target);
		fr_pprof_time(p, eff_t0, req->t1 - eff_t0);
	}
	snprintf(line, sizeof(line), "flightrec %s", req->version ? req->version : "");
	comment(p, line);
	snprintf(line, sizeof(line), "window %s .. %s (%s)", fr_format_time(req->t0, a, sizeof(a)),
		 fr_format_time(req->t1, bb, sizeof(bb)),
		 fr_format_duration(req->t1 - req->t0, dur, sizeof(dur)));
	comment(p, line);
	snprintf(line, sizeof(line), "cpu sampled at %u Hz per CPU (cpu-clock, kernel+user stacks)",
		 target);
	comment(p, line);
	if (req->hz && min_rate && req->hz > min_rate) {
		snprintf(line, sizeof(line),
			 "downsampled: part of the window was collected at %u Hz, below the "
			 "requested %u Hz, so the whole profile is at %u Hz", min_rate, req->hz,
			 target);
		comment(p, line);
		if (!res->warning[0])
			snprintf(res->warning, sizeof(res->warning), "%s", line);
	} else if (max_rate > target) {
		snprintf(line, sizeof(line), "downsampled from %u Hz to %u Hz", max_rate, target);
		comment(p, line);
	}
	if (res->warning[0])
		comment(p, res->warning);
	if (res->lost) {
		snprintf(line, sizeof(line),
			 "%" PRIu64 " samples were lost by the kernel in this window (the recorder "
			 "fell behind)", res->lost);
		comment(p, line);
	}
	if (res->chunks_skipped) {
		snprintf(line, sizeof(line),
			 "%" PRIu64 " chunks of the window could not be read (damaged or overwritten)",
			 res->chunks_skipped);
		comment(p, line);
	}

	ret = symbolize(&b, p, req->kallsyms);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory while naming the frames");
		goto out;
	}
	if (p) {
		emit(&b, p, target, &res->samples_kept);
		res->stacks = b.nsamples;
		ret = fr_pprof_finish(p);
	} else {
		ret = emit_folded(&b, counting_write, &counter, &res->samples_kept, &res->stacks);
	}
	res->bytes = counter.bytes;
	if (ret < 0)
		snprintf(err, errlen, "cannot write the profile: %s", strerror(-ret));

out:
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	fr_pprof_free(p);
	for (size_t r = 0; cache && r < nrefs; r++)
		fr_chunk_free(cache[r].chunk);
	free(cache);
	free(refs);
	free_builder(&b);
	return ret < 0 ? ret : 0;
}
