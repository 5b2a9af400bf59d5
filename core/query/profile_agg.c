/* Aggregation of the kept samples of a window (see core/query/profile.c): rows
 * keyed by (stack, pid, tid, cpu, cgroup, application labels), each with a count and a value
 * per event, and the interned strings, mappings and locations they refer
 * to. Each table is an array with an open-addressing index of its own.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/query/events.h"
#include "core/query/profile_int.h"

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
	return fr_fnv1a(FR_FNV_OFFSET, b->strs[i], strlen(b->strs[i]));
}

/* Interns a label string; returns its index or -ENOMEM. */
int64_t profile_intern_str(struct builder *b, const char *s)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, s, strlen(s));
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
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, path, strlen(path));
	return fr_mix64(h ^ fr_mix64(start) ^ fr_mix64(end * 3) ^ fr_mix64(pgoff * 7));
}

/* The slot of the mapping of hash `h` that same(g, key) matches, or the
 * free slot a new one goes to. Returns 1 (found), 0 or -ENOMEM. */
static int map_slot(struct builder *b, uint64_t h, bool (*same)(struct gmap *g, const void *key),
		    const void *key, uint32_t *out)
{
	uint32_t slot;

	if ((b->map_idx.n + 1) * 2 > b->map_idx.cap && hidx_grow(&b->map_idx, map_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->map_idx.cap - 1); b->map_idx.slots[slot];
	     slot = (slot + 1) & (b->map_idx.cap - 1)) {
		struct gmap *g = &b->maps[b->map_idx.slots[slot] - 1];

		if (g->hash == h && same(g, key)) {
			*out = slot;
			return 1;
		}
	}
	*out = slot;
	return 0;
}

/* A new mapping of `path` and hash `h` at free slot `slot`, zeroed
 * otherwise. Returns it, or NULL (out of memory). */
static struct gmap *map_add(struct builder *b, uint32_t slot, const char *path, uint64_t h)
{
	struct gmap *g;

	if (b->nmaps == b->maps_cap && grow((void **)&b->maps, &b->maps_cap, sizeof(*b->maps)) < 0)
		return NULL;
	g = &b->maps[b->nmaps];
	memset(g, 0, sizeof(*g));
	if (!(g->path = strdup(path)))
		return NULL;
	g->hash = h;
	b->map_idx.slots[slot] = ++b->nmaps;
	b->map_idx.n++;
	return g;
}

struct map_key {
	const struct fr_chunk_map *m;
	const char *path;
};

static bool same_map(struct gmap *g, const void *key)
{
	const struct map_key *k = key;
	const struct fr_chunk_map *m = k->m;

	if (g->python || g->start != m->start || g->end != m->end || g->pgoff != m->pgoff ||
	    strcmp(g->path, k->path) != 0)
		return false;
	/* Chunks sealed before the recorder read a build id the kernel did
	 * not give carry the mapping without one: a later chunk's names the
	 * file (a copy of it in the symbol cache, once gone). */
	if (!g->bid_len && m->build_id_len) {
		g->bid_len = m->build_id_len;
		memcpy(g->bid, m->build_id, m->build_id_len);
	}
	return true;
}

/* Interns a mapping of chunk `c`; returns its index or -ENOMEM. */
static int64_t intern_map(struct builder *b, const struct fr_chunk *c, const struct fr_chunk_map *m)
{
	struct map_key k = {m, c->strings[m->path]};
	uint64_t h = map_key_hash(k.path, m->start, m->end, m->pgoff);
	const struct fr_chunk_proc *p;
	uint32_t slot;
	struct gmap *g;
	int ret = map_slot(b, h, same_map, &k, &slot);

	if (ret != 0)
		return ret < 0 ? (int64_t)ret : (int64_t)b->map_idx.slots[slot] - 1;
	if (!(g = map_add(b, slot, k.path, h)))
		return -ENOMEM;
	g->start = m->start;
	g->end = m->end;
	g->pgoff = m->pgoff;
	g->pid = m->pid;
	p = fr_chunk_find_proc(c, m->pid);
	g->pid_start_ns = p ? p->start_ns : 0;
	g->pid_uid = p ? p->uid : 0;
	g->is_exe = p && strcmp(c->strings[p->exe], k.path) == 0;
	g->bid_len = m->build_id_len;
	memcpy(g->bid, m->build_id, m->build_id_len);
	return b->nmaps - 1;
}

static bool same_python(struct gmap *g, const void *key)
{
	const struct gmap *k = key;

	return g->python && g->pid == k->pid && g->pid_start_ns == k->pid_start_ns;
}

int64_t profile_intern_python_map(struct builder *b, const struct fr_chunk *c, uint32_t pid)
{
	const struct fr_chunk_proc *p = fr_chunk_find_proc(c, pid);
	struct gmap k = {.pid = pid, .pid_start_ns = p ? p->start_ns : 0};
	uint64_t h = fr_mix64(map_key_hash(PROFILE_PYTHON_MAPPING, pid, 0, 0) ^
			      (uint64_t)k.pid_start_ns);
	uint32_t slot;
	struct gmap *g;
	int ret = map_slot(b, h, same_python, &k, &slot);

	if (ret != 0)
		return ret < 0 ? (int64_t)ret : (int64_t)b->map_idx.slots[slot] - 1;
	if (!(g = map_add(b, slot, PROFILE_PYTHON_MAPPING, h)))
		return -ENOMEM;
	/* Where the pseudo addresses lie (FR_FRAME_PY_TAG and up): pprof
	 * readers expect a location's address within its mapping. */
	g->start = FR_FRAME_PY_TAG;
	g->end = FR_FRAME_PY_TAG | FR_FRAME_PY_TAG >> 1;
	g->python = true;
	g->pid = pid;
	g->pid_start_ns = k.pid_start_ns;
	g->pid_uid = p ? p->uid : 0;
	return b->nmaps - 1;
}

int profile_intern_exe(struct builder *b, const struct fr_chunk *c, const struct fr_chunk_proc *p)
{
	const char *exe = c->strings[p->exe];
	uint32_t lo = 0, hi = c->nmaps;

	if (profile_python_note(b, p->pid, p->uid, p->start_ns) < 0)
		return -ENOMEM;

	/* The first of the process's mappings (sorted by pid, start) */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->maps[mid].pid < p->pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->nmaps && c->maps[lo].pid == p->pid; lo++)
		if (strcmp(c->strings[c->maps[lo].path], exe) == 0)
			return intern_map(b, c, &c->maps[lo]) < 0 ? -ENOMEM : 0;
	/* A chunk has the mappings its frames are in: an executable no frame
	 * is in (samples all in JIT code) is named without its addresses */
	if (exe[0]) {
		struct fr_chunk_map m = {.pid = p->pid, .path = p->exe};

		m.build_id_len = p->build_id_len;
		memcpy(m.build_id, p->build_id, p->build_id_len);
		return intern_map(b, c, &m) < 0 ? -ENOMEM : 0;
	}
	return 0;
}

static uint64_t loc_hash_of(void *ctx, uint32_t i)
{
	return ((struct builder *)ctx)->locs[i].hash;
}

static int64_t intern_loc(struct builder *b, uint32_t map, uint64_t addr)
{
	uint64_t h = fr_mix64(addr ^ ((uint64_t)map << 48) ^ map);
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
static int stack_locations(struct builder *b, const struct fr_chunk *c, uint32_t sid, uint64_t *off,
			   uint32_t *n)
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
		} else if (FR_FRAME_IS_PY(addr)) {
			/* Not a return address, and in no mapping: its code
			 * object and offset, on the process's own pseudo-mapping
			 * (named in profile_symbolize()). */
			lookup = addr;
			map = profile_intern_python_map(b, c, st->pid);
			if (map < 0)
				return -ENOMEM;
		} else if (FR_FRAME_IS_MARK(addr) || FR_FRAME_IS_NOTE(addr)) {
			/* A marker or note frame: no mapping, its own address
			 * (named in profile_symbolize()). */
			lookup = addr;
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

/* Adds `w` collected at `rate` to a cell of an event whose profile rate is
 * `target`: a sample kept with probability target/rate stands for
 * rate/target of its kind, so w * rate / target, kept exact across samples
 * by carrying the remainder. */
static void cell_add(struct gcell *cl, uint64_t w, uint32_t rate, uint32_t target)
{
	uint64_t r, rem;

	cl->n++;
	if (!target || !rate || rate <= target) {
		cl->v += w;
		return;
	}
	/* (w / target) * rate + (w % target) * rate / target, without
	 * overflow: both factors of the second product are below 2^32. */
	r = (w % target) * rate;
	cl->v += w / target * rate + r / target;
	rem = (uint64_t)cl->rem + r % target;
	if (rem >= target) {
		cl->v++;
		rem -= target;
	}
	cl->rem = (uint32_t)rem;
}

/* The index into b->strs of chunk string `id`, memoized for the chunk.
 * Returns it or -ENOMEM. */
static int64_t chunk_str(struct builder *b, const struct fr_chunk *c, uint32_t id)
{
	int64_t v;

	if (id < b->str_memo_cap && b->str_memo[id])
		return b->str_memo[id] - 1;
	v = profile_intern_str(b, c->strings[id]);
	if (v >= 0 && id < b->str_memo_cap)
		b->str_memo[id] = (uint32_t)v + 1;
	return v;
}

/* Adds sample `i` of chunk `c`, of requested event `e`, to its row.
 * Returns 0 or -ENOMEM. */
/* The process and thread names of sample `i` as they were at its time
 * (a thread renamed between two samples has a row under each name), as
 * string ids in *comm and *thread. Returns 0 or -ENOMEM. */
static int sample_names(struct builder *b, const struct fr_chunk *c, uint32_t i, int64_t *comm,
			int64_t *thread)
{
	if (b->last_ok && b->last_pid == c->pid[i] && b->last_tid == c->tid[i]) {
		*comm = b->last_comm;
		*thread = b->last_thread;
		return 0;
	}
	*comm = chunk_str(b, c, fr_chunk_comm_at(c, c->pid[i], c->time_ns[i]));
	*thread = chunk_str(b, c, fr_chunk_thread_name_at(c, c->tid[i], c->time_ns[i]));
	if (*comm < 0 || *thread < 0)
		return -ENOMEM;
	b->last_ok = !c->nnames;
	b->last_pid = c->pid[i];
	b->last_tid = c->tid[i];
	b->last_comm = *comm;
	b->last_thread = *thread;
	return 0;
}

/* Room for one more sample row and its cells. Returns 0 or -ENOMEM. */
static int samples_grow(struct builder *b)
{
	uint32_t cap = b->samples_cap;
	struct gcell *cells;

	if (grow((void **)&b->samples, &b->samples_cap, sizeof(*b->samples)) < 0)
		return -ENOMEM;
	cells = realloc(b->cells, (size_t)b->samples_cap * b->nev * sizeof(*cells));
	if (!cells) {
		/* Keep both arrays the same length for the next try. */
		b->samples_cap = cap;
		return -ENOMEM;
	}
	b->cells = cells;
	if (b->mem) {
		struct gmem *m = realloc(b->mem_rows, (size_t)b->samples_cap * sizeof(*m));

		if (!m) {
			b->samples_cap = cap;
			return -ENOMEM;
		}
		b->mem_rows = m;
	}
	return 0;
}

/* Counts what the stack of sample i says for event e: cut at
 * FR_MAX_FRAMES, or unwinding stopped at a marker frame. */
void profile_count_stack(struct builder *b, const struct fr_chunk *c, uint32_t i, uint32_t e)
{
	const struct fr_chunk_stack *st = &c->stacks[c->stack[i]];

	/* The recorder keeps FR_MAX_FRAMES frames of a deeper stack */
	if (st->nr_frames >= FR_MAX_FRAMES)
		b->ev[e].res->truncated++;
	if (st->nr_frames > st->nr_kernel) {
		uint64_t root = c->frames[st->first + st->nr_frames - 1];

		if (FR_FRAME_IS_MARK(root))
			b->ev[e].res->unwind_stopped[FR_FRAME_MARK_REASON(root)]++;
	}
}

int64_t profile_row(struct builder *b, const struct fr_chunk *c, uint32_t i, bool mem)
{
	uint32_t sid = c->stack[i], nlocs, slot;
	uint32_t cpu = b->req->cpu_label && !mem ? c->cpu[i] : 0;
	uint32_t cgroup = b->ls_cgroup[c->labelset[i]];
	uint32_t app = mem && !profile_mem_labels(b) ? 0 : profile_app_of(b, c, i);
	uint32_t tid = mem ? 0 : c->tid[i];
	uint64_t off, h;
	struct gsample *s;
	int64_t comm, thread;
	int ret;

	ret = stack_locations(b, c, sid, &off, &nlocs);
	if (ret < 0)
		return ret;
	ret = sample_names(b, c, i, &comm, &thread);
	if (ret < 0)
		return ret;
	if (mem)
		thread = 0;
	h = fr_mix64(((uint64_t)c->pid[i] << 32 | tid) ^ fr_mix64(cpu + 1) ^
		     fr_mix64((uint64_t)cgroup << 1) ^
		     fr_mix64((uint64_t)comm << 32 | (uint64_t)thread) ^
		     fr_mix64((uint64_t)app << 3 | 5) ^ mem);
	h = fr_fnv1a(h, &b->arena[off], nlocs * sizeof(uint32_t));

	if ((b->sample_idx.n + 1) * 2 > b->sample_idx.cap &&
	    hidx_grow(&b->sample_idx, sample_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->sample_idx.cap - 1); b->sample_idx.slots[slot];
	     slot = (slot + 1) & (b->sample_idx.cap - 1)) {
		uint32_t row = b->sample_idx.slots[slot] - 1;

		s = &b->samples[row];
		if (s->hash == h && s->pid == c->pid[i] && s->tid == tid && s->cpu == cpu &&
		    s->cgroup == cgroup && s->comm == (uint32_t)comm &&
		    s->thread == (uint32_t)thread && s->app == app && s->mem == mem &&
		    s->nlocs == nlocs &&
		    memcmp(&b->arena[s->locs], &b->arena[off], nlocs * sizeof(uint32_t)) == 0)
			return row;
	}
	if (b->nsamples == b->samples_cap && samples_grow(b) < 0)
		return -ENOMEM;
	b->samples[b->nsamples] = (struct gsample){
		.pid = c->pid[i],
		.tid = tid,
		.cpu = cpu,
		.comm = (uint32_t)comm,
		.thread = (uint32_t)thread,
		.cgroup = cgroup,
		.app = app,
		.nlocs = nlocs,
		.locs = off,
		.hash = h,
		.mem = mem,
	};
	memset(&b->cells[(size_t)b->nsamples * b->nev], 0, b->nev * sizeof(*b->cells));
	if (b->mem_rows)
		b->mem_rows[b->nsamples] = (struct gmem){{0}};
	b->sample_idx.slots[slot] = ++b->nsamples;
	b->sample_idx.n++;
	return b->nsamples - 1;
}

int profile_add_sample(struct builder *b, const struct fr_chunk *c, uint32_t i, uint32_t e,
		       uint64_t weight)
{
	int64_t row = profile_row(b, c, i, false);

	if (row < 0)
		return (int)row;
	profile_count_stack(b, c, i, e);
	b->samples[row].count++;
	cell_add(&b->cells[(size_t)row * b->nev + e], weight, c->rate_hz[i], b->ev[e].target);
	return 0;
}

void profile_free_builder(struct builder *b)
{
	fr_events_free(b->box);
	for (uint32_t i = 0; i < b->nmaps; i++)
		free(b->maps[i].path);
	free(b->py);
	free(b->maps);
	free(b->map_idx.slots);
	free(b->locs);
	free(b->lines);
	free(b->loc_idx.slots);
	free(b->samples);
	free(b->cells);
	free(b->sample_idx.slots);
	free(b->arena);
	for (uint32_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	free(b->str_idx.slots);
	free(b->stack_off);
	free(b->stack_n);
	free(b->str_memo);
	free(b->stack_ok);
	free(b->ls_ok);
	free(b->ls_cgroup);
	free(b->edges.slots);
	free(b->pids.slots);
	free(b->ls_ppid);
	free(b->done);
	fr_decimator_fini(&b->dec);
	profile_app_free(b);
	profile_mem_free(b);
}

void profile_trim_builder(struct builder *b)
{
	void **memos[] = {(void **)&b->stack_off,
			  (void **)&b->stack_n,
			  (void **)&b->str_memo,
			  (void **)&b->stack_ok,
			  (void **)&b->ls_ok,
			  (void **)&b->ls_cgroup,
			  (void **)&b->ls_ppid,
			  (void **)&b->done,
			  (void **)&b->sample_idx.slots,
			  (void **)&b->loc_idx.slots,
			  (void **)&b->map_idx.slots,
			  (void **)&b->edges.slots,
			  (void **)&b->pids.slots,
			  (void **)&b->chunk_app};

	for (size_t i = 0; i < sizeof(memos) / sizeof(memos[0]); i++) {
		free(*memos[i]);
		*memos[i] = NULL;
	}
	b->stack_cap = b->str_memo_cap = b->targets_cap = b->ls_ppid_cap = b->chunk_app_cap = 0;
	b->ndone = b->done_cap = 0;
	b->sample_idx = b->loc_idx = b->map_idx = (struct hidx){0};
	b->edges = b->pids = (struct kset){0};
	fr_decimator_fini(&b->dec);
}

int profile_reset_stack_memo(struct builder *b, uint32_t nstacks, uint32_t nstrings)
{
	b->last_ok = 0;
	if (nstrings > b->str_memo_cap) {
		uint32_t *m = realloc(b->str_memo, nstrings * sizeof(*m));
		if (!m)
			return -ENOMEM;
		b->str_memo = m;
		b->str_memo_cap = nstrings;
	}
	if (nstrings)
		memset(b->str_memo, 0, nstrings * sizeof(*b->str_memo));
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
