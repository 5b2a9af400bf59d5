/* Window queries.
 *
 * Two passes over the chunks of the window. The first finds, for each
 * requested event, the lowest rate any of its samples in the window was
 * collected at (an event has one rate in a profile, so all of its samples
 * are downsampled to that rate or to the requested one, whichever is
 * lower; offcpu records every switch and is never downsampled). The
 * second keeps each sample with probability target/collected, decided by
 * a hash of the sample itself, so the same request always gives the same
 * profile, and aggregates the kept ones by (stack, pid, tid, cgroup): one
 * row per key, with a count and a value per event. Decoded chunks are
 * kept between the passes while they fit in a memory budget, and decoded
 * again otherwise.
 *
 * Which samples are of the request's targets (pids, command names,
 * cgroup, uid) is decided once per stack and once per label set of each chunk,
 * not per sample.
 *
 * With `children`, the first pass only gathers the (pid, parent) pairs
 * the chunks hold in their "ppid" labels (a sample's label set gives its
 * process's parent; a set with a "pid" gives an unsampled ancestor's).
 * The asked pids are then extended with every process below them, walking
 * down the pairs breadth first with each pid entering the set once (so a
 * cycle of parents ends the walk), and the rates are taken over the
 * extended targets before the second pass selects by them. Pairs and the
 * extended set live in hash sets, sized by what the window holds.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/chunk.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/pprof.h"
#include "core/ring.h"
#include "core/sample.h"
#include "core/symbols.h"

#define KERNEL_MAP 1 /* index of the kernel pseudo-mapping in maps[] */
#define NO_CGROUP UINT32_MAX
#define NS_PER_SEC 1000000000LL

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

/* A set of non-zero 64-bit keys (open addressing, grows). */
struct kset {
	uint64_t *slots; /* 0: empty */
	uint32_t cap;    /* power of two, or 0 */
	uint32_t n;
};


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
	uint32_t cgroup;       /* index into strs, or NO_CGROUP */
	uint32_t nlocs;
	uint64_t locs; /* offset into locs arena */
	uint64_t count; /* kept samples of every event */
	uint64_t hash;
};

/* What a row holds for one event: n kept samples, and v the sum of their
 * weights scaled for downsampling (weight * rate / target), rounded down
 * once for the sum rather than per sample: rem carries the remainder, in
 * 1/target units. cpu uses only n: its value is n times the period. */
struct gcell {
	uint64_t n, v;
	uint32_t rem;
};

/* A requested event. */
struct gevent {
	uint32_t id;
	uint32_t target; /* rate of the profile; 0: not rate-sampled */
	char name[FR_EVENT_NAME_MAX];
	struct fr_profile_event_result *res;
};

struct builder {
	const struct fr_profile_request *req;
	struct gevent ev[FR_PROFILE_MAX_EVENTS];
	uint32_t nev;
	struct gmap *maps;
	uint32_t nmaps, maps_cap;
	struct hidx map_idx;
	struct gloc *locs;
	uint32_t nlocs, locs_cap;
	struct hidx loc_idx;
	struct gsample *samples;
	uint32_t nsamples, samples_cap;
	struct hidx sample_idx;
	struct gcell *cells; /* nev per sample row */
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
	/* Per-chunk targets: stack id -> of a wanted pid and comm; label set
	 * -> of the wanted cgroup, and its cgroup (index into strs). */
	uint8_t *stack_ok;
	uint8_t *ls_ok;
	uint32_t *ls_cgroup;
	uint32_t targets_cap; /* entries of each of the three */
	/* --children: (pid << 32 | ppid) pairs of the window; then, once
	 * extended, `pids` holds the asked pids and their descendants. */
	int children;
	struct kset edges, pids;
	uint32_t ndescendants;
	uint32_t *ls_ppid; /* per-chunk: label set -> its "ppid" (0: none) */
	uint32_t ls_ppid_cap;
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

/* ---- the set of non-zero 64-bit keys ---------------------------------- */

static int kset_has(const struct kset *k, uint64_t key)
{
	if (!k->cap)
		return 0;
	for (uint32_t i = (uint32_t)mix64(key) & (k->cap - 1); k->slots[i];
	     i = (i + 1) & (k->cap - 1))
		if (k->slots[i] == key)
			return 1;
	return 0;
}

/* Adds `key` (non-zero). Returns 1 when added, 0 when it was there, or
 * -ENOMEM. */
static int kset_add(struct kset *k, uint64_t key)
{
	uint32_t i;

	if ((uint64_t)(k->n + 1) * 2 > k->cap) {
		uint32_t cap = k->cap ? k->cap * 2 : 256;
		uint64_t *slots;

		if (cap <= k->cap)
			return -ENOMEM;
		slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (uint32_t j = 0; j < k->cap; j++) {
			if (!k->slots[j])
				continue;
			for (i = (uint32_t)mix64(k->slots[j]) & (cap - 1); slots[i];
			     i = (i + 1) & (cap - 1))
				;
			slots[i] = k->slots[j];
		}
		free(k->slots);
		k->slots = slots;
		k->cap = cap;
	}
	for (i = (uint32_t)mix64(key) & (k->cap - 1); k->slots[i]; i = (i + 1) & (k->cap - 1))
		if (k->slots[i] == key)
			return 0;
	k->slots[i] = key;
	k->n++;
	return 1;
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

/* Adds sample `i` of chunk `c`, of requested event `e`, to its row.
 * Returns 0 or -ENOMEM. */
static int add_sample(struct builder *b, const struct fr_chunk *c, uint32_t i, uint32_t e)
{
	uint32_t sid = c->stack[i], nlocs, slot;
	uint32_t cpu = b->req->cpu_label ? c->cpu[i] : 0;
	uint32_t cgroup = b->ls_cgroup[c->labelset[i]];
	uint64_t off, h;
	const struct fr_chunk_proc *proc;
	const struct fr_chunk_thread *th;
	struct gsample *s;
	int64_t comm, thread;
	int ret;

	ret = stack_locations(b, c, sid, &off, &nlocs);
	if (ret < 0)
		return ret;
	h = mix64(((uint64_t)c->pid[i] << 32 | c->tid[i]) ^ mix64(cpu + 1) ^
		  mix64((uint64_t)cgroup << 1));
	h = hash_bytes(h, &b->arena[off], nlocs * sizeof(uint32_t));

	if ((b->sample_idx.n + 1) * 2 > b->sample_idx.cap &&
	    hidx_grow(&b->sample_idx, sample_hash_of, b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->sample_idx.cap - 1); b->sample_idx.slots[slot];
	     slot = (slot + 1) & (b->sample_idx.cap - 1)) {
		uint32_t row = b->sample_idx.slots[slot] - 1;

		s = &b->samples[row];
		if (s->hash == h && s->pid == c->pid[i] && s->tid == c->tid[i] && s->cpu == cpu &&
		    s->cgroup == cgroup && s->nlocs == nlocs &&
		    memcmp(&b->arena[s->locs], &b->arena[off], nlocs * sizeof(uint32_t)) == 0) {
			s->count++;
			cell_add(&b->cells[(size_t)row * b->nev + e], c->weight[i], c->rate_hz[i],
				 b->ev[e].target);
			return 0;
		}
	}
	proc = fr_chunk_find_proc(c, c->pid[i]);
	th = fr_chunk_find_thread(c, c->tid[i]);
	comm = intern_str(b, proc ? c->strings[proc->comm] : "");
	thread = intern_str(b, th ? c->strings[th->name] : "");
	if (comm < 0 || thread < 0)
		return -ENOMEM;
	if (b->nsamples == b->samples_cap) {
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
	}
	b->samples[b->nsamples] = (struct gsample){
		.pid = c->pid[i], .tid = c->tid[i], .cpu = cpu,
		.comm = (uint32_t)comm, .thread = (uint32_t)thread, .cgroup = cgroup,
		.nlocs = nlocs, .locs = off, .count = 1, .hash = h,
	};
	memset(&b->cells[(size_t)b->nsamples * b->nev], 0, b->nev * sizeof(*b->cells));
	cell_add(&b->cells[(size_t)b->nsamples * b->nev + e], c->weight[i], c->rate_hz[i],
		 b->ev[e].target);
	b->sample_idx.slots[slot] = ++b->nsamples;
	b->sample_idx.n++;
	return 0;
}

static int wanted_pid(const struct builder *b, uint32_t pid)
{
	const struct fr_profile_request *req = b->req;

	if (!req->npids)
		return 1;
	/* Once extended, the set holds every asked pid but 0. */
	if (b->children && pid)
		return kset_has(&b->pids, pid);
	for (uint32_t i = 0; i < req->npids; i++)
		if (req->pids[i] == pid)
			return 1;
	return 0;
}

/* Whether the process `pid` of chunk `c` has one of the requested command
 * names (compared whole: the kernel keeps 15 characters, and so do the
 * chunks) and belonged to the requested uid when the chunk was sealed. A
 * process the chunk does not describe is not known to be anyone's, so a
 * uid restriction leaves it out: it keeps users from seeing each other's
 * processes. */
static int wanted_proc(const struct fr_profile_request *req, const struct fr_chunk *c,
		       uint32_t pid)
{
	const struct fr_chunk_proc *p;
	int comm_ok = !req->ncomms;

	if (!req->ncomms && !req->has_uid)
		return 1;
	p = fr_chunk_find_proc(c, pid);
	if (!p)
		return 0;
	if (req->has_uid && p->uid != req->uid)
		return 0;
	for (uint32_t i = 0; i < req->ncomms && !comm_ok; i++)
		comm_ok = strncmp(c->strings[p->comm], req->comms[i], FR_PROFILE_COMM_MAX) == 0;
	return comm_ok;
}

static int add_edge(struct builder *b, uint32_t pid, uint32_t ppid)
{
	if (!pid || !ppid)
		return 0;
	return kset_add(&b->edges, (uint64_t)pid << 32 | ppid) < 0 ? -ENOMEM : 0;
}

/* Gathers the (pid, parent) pairs of chunk `c`: each sample's process and
 * the "ppid" of its label set, and each label set with both a "pid" and a
 * "ppid" (an ancestor without samples). Returns 0 or -ENOMEM. */
static int collect_parents(struct builder *b, const struct fr_chunk *c)
{
	uint32_t last_pid = 0, last_ls = 0;

	if (c->nlabelsets > b->ls_ppid_cap) {
		uint32_t *p = realloc(b->ls_ppid, c->nlabelsets * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->ls_ppid = p;
		b->ls_ppid_cap = c->nlabelsets;
	}
	for (uint32_t k = 0; k < c->nlabelsets; k++) {
		struct fr_chunk_proc_labels l;

		fr_chunk_labelset_proc(c, k, &l);
		b->ls_ppid[k] = l.ppid;
		if (l.ppid && add_edge(b, l.pid, l.ppid) < 0)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->nsamples; i++) {
		/* A process's samples mostly come in a row. */
		if (c->pid[i] == last_pid && c->labelset[i] == last_ls)
			continue;
		last_pid = c->pid[i];
		last_ls = c->labelset[i];
		if (add_edge(b, last_pid, b->ls_ppid[last_ls]) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Extends the asked pids with every descendant the pairs show: breadth
 * first down from the asked pids, a pid entering the set (and the queue)
 * only once, so cycles and processes that are their own parent end the
 * walk. Sets b->pids and b->ndescendants. Returns 0 or -ENOMEM. */
static int extend_pids(struct builder *b)
{
	const struct fr_profile_request *req = b->req;
	uint64_t *down; /* pairs as ppid << 32 | pid, sorted */
	uint32_t *queue, n = 0, head = 0, tail = 0;
	int ret = 0;

	down = malloc(((size_t)b->edges.n + 1) * sizeof(*down));
	queue = malloc(((size_t)req->npids + b->edges.n + 1) * sizeof(*queue));
	if (!down || !queue) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < b->edges.cap; i++) {
		uint64_t e = b->edges.slots[i];

		if (e)
			down[n++] = (e << 32) | (e >> 32);
	}
	qsort(down, n, sizeof(*down), cmp_u64);
	for (uint32_t i = 0; i < req->npids; i++) {
		if (!req->pids[i])
			continue;
		ret = kset_add(&b->pids, req->pids[i]);
		if (ret < 0)
			goto out;
		if (ret == 1)
			queue[tail++] = req->pids[i];
	}
	ret = 0;
	while (head < tail) {
		uint64_t parent = (uint64_t)queue[head++] << 32;
		uint32_t lo = 0, hi = n;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (down[mid] < parent)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < n && (down[lo] & 0xffffffff00000000ull) == parent; lo++) {
			int added = kset_add(&b->pids, (uint32_t)down[lo]);

			if (added < 0) {
				ret = added;
				goto out;
			}
			if (added) {
				queue[tail++] = (uint32_t)down[lo];
				b->ndescendants++;
			}
		}
	}
	b->children = 1;
out:
	free(down);
	free(queue);
	return ret;
}

/* Whether a process in cgroup `path` is of the request's cgroup. */
static int wanted_cgroup(const struct builder *b, const char *path)
{
	return !b->req->cgroup[0] || fr_cgroup_within(path, b->req->cgroup);
}

/* Decides which stacks and label sets of chunk `c` are of the request's
 * targets; with `names`, also interns each label set's cgroup for the
 * rows. Returns 0 or -ENOMEM. */
static int chunk_targets(struct builder *b, const struct fr_chunk *c, int names)
{
	const struct fr_profile_request *req = b->req;
	uint32_t n = c->nstacks > c->nlabelsets ? c->nstacks : c->nlabelsets;

	if (n > b->targets_cap) {
		uint8_t *so = realloc(b->stack_ok, n);
		if (!so)
			return -ENOMEM;
		b->stack_ok = so;
		uint8_t *lo = realloc(b->ls_ok, n);
		if (!lo)
			return -ENOMEM;
		b->ls_ok = lo;
		uint32_t *lc = realloc(b->ls_cgroup, n * sizeof(*lc));
		if (!lc)
			return -ENOMEM;
		b->ls_cgroup = lc;
		b->targets_cap = n;
	}
	for (uint32_t k = 0; k < c->nstacks; k++) {
		uint32_t pid = c->stacks[k].pid;

		b->stack_ok[k] = (uint8_t)(wanted_pid(b, pid) && wanted_proc(req, c, pid));
	}
	for (uint32_t k = 0; k < c->nlabelsets; k++) {
		struct fr_chunk_proc_labels l;
		const char *cg;

		fr_chunk_labelset_proc(c, k, &l);
		cg = l.cgroup;

		b->ls_ok[k] = (uint8_t)wanted_cgroup(b, cg);
		b->ls_cgroup[k] = NO_CGROUP;
		if (names && cg && b->ls_ok[k]) {
			int64_t idx = intern_str(b, cg);
			if (idx < 0)
				return -ENOMEM;
			b->ls_cgroup[k] = (uint32_t)idx;
		}
	}
	return 0;
}

/* The index of sample `i`'s event among the requested ones when the
 * sample is in the window and of the targets (chunk_targets() ran for
 * `c`), else -1. */
static int select_sample(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	if (c->time_ns[i] < b->req->t0 || c->time_ns[i] >= b->req->t1 ||
	    !b->stack_ok[c->stack[i]] || !b->ls_ok[c->labelset[i]])
		return -1;
	for (uint32_t e = 0; e < b->nev; e++)
		if (b->ev[e].id == c->event[i])
			return (int)e;
	return -1;
}

/* Keeps a sample collected at `rate` with probability target/rate, decided
 * by a hash of the sample so the decision is the same on every request.
 * Samples of events that are not rate-sampled (target 0) are all kept. The
 * event is in the hash (mix64(0) is 0: cpu samples hash as they always
 * did), so samples of two events taken together are not kept together. */
static int keep_sample(const struct fr_chunk *c, uint32_t i, uint32_t target)
{
	uint32_t rate = c->rate_hz[i];
	uint64_t h;

	if (!target || !rate || rate <= target)
		return 1;
	h = mix64((uint64_t)c->time_ns[i] ^ mix64(((uint64_t)c->tid[i] << 20) ^ c->cpu[i]) ^
		  mix64(c->event[i]));
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
	free(b->cells);
	free(b->sample_idx.slots);
	free(b->arena);
	for (uint32_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	free(b->str_idx.slots);
	free(b->stack_off);
	free(b->stack_n);
	free(b->stack_ok);
	free(b->ls_ok);
	free(b->ls_cgroup);
	free(b->edges.slots);
	free(b->pids.slots);
	free(b->ls_ppid);
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

/* Whether `pid` sees the file system as this process does: the same
 * mount namespace and "/" as its root. Its files are then looked up by
 * their paths alone, so the symbolizer opens each once however many
 * processes map it; a process that is gone counts as such too (its
 * /proc/PID/root would not resolve). Only procfs links are read. */
static bool same_root(uint32_t pid, const char *self_ns)
{
	char path[64], link[64];
	ssize_t n;

	if (!self_ns[0])
		return false;
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT;
	if (n != 1 || link[0] != '/')
		return false;
	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT;
	link[n] = '\0';
	return strcmp(link, self_ns) == 0;
}

/* Names every location. With `p`, functions are added to the profile as
 * found; without, the names are interned for the folded emitter.
 * Returns 0 or -ENOMEM. */
static int symbolize(struct builder *b, struct fr_pprof *p, const char *kallsyms)
{
	struct fr_symbols *syms = fr_symbols_new(kallsyms);
	char buf[4200], root[64];
	uint32_t root_pid = UINT32_MAX;
	bool root_same = false;
	char self_ns[64] = "";
	ssize_t n = readlink("/proc/self/ns/mnt", self_ns, sizeof(self_ns) - 1);
	int ret = 0;

	self_ns[n > 0 ? n : 0] = '\0';
	/* For a user limited to their own processes, only a file whose build
	 * id matches the mapping's names it: the path could lead, in the
	 * user's mount namespace or since, to a file only root may read. */
	if (syms && b->req->has_uid)
		fr_symbols_require_build_id(syms);

	for (uint32_t i = 0; i < b->nlocs; i++) {
		struct gloc *l = &b->locs[i];
		const char *name = NULL, *file = NULL;
		uint64_t elf_addr = 0;

		if (l->map == KERNEL_MAP) {
			file = "[kernel.kallsyms]";
			if (syms && fr_symbols_kernel(syms, l->addr, &name) == 0)
				snprintf(buf, sizeof(buf), "[k] %s", name);
			else if (b->req->has_uid)
				snprintf(buf, sizeof(buf), "[k] (unknown)");
			else
				snprintf(buf, sizeof(buf), "[k] 0x%" PRIx64, l->addr);
			b->maps[KERNEL_MAP].has_functions = 1;
		} else if (l->map) {
			struct gmap *m = &b->maps[l->map];
			file = m->path;
			if (m->pid != root_pid) {
				root_pid = m->pid;
				root_same = same_root(m->pid, self_ns);
				snprintf(root, sizeof(root), "/proc/%u/root", m->pid);
			}
			if (syms && fr_symbols_user(syms, root_same ? NULL : root, m->path, m->bid,
						    m->bid_len, m->start, m->pgoff, l->addr, &name,
						    &elf_addr) == 0) {
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

/* The value of row `row` for event `e`: for cpu, kept samples times the
 * period (every kept sample stands for exactly 1e9/hz ns, and the total
 * stays a whole multiple of it); for the others, the scaled weights. */
static int64_t cell_value(const struct builder *b, uint32_t row, uint32_t e)
{
	const struct gcell *cl = &b->cells[(size_t)row * b->nev + e];

	if (b->ev[e].id == FR_EVENT_CPU)
		return (int64_t)cl->n * (NS_PER_SEC / b->ev[e].target);
	return (int64_t)cl->v;
}

static void emit(struct builder *b, struct fr_pprof *p)
{
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
	/* A user limited to their own processes gets kernel names, not
	 * kernel addresses (which would undo the kernel's address layout
	 * randomization, as kptr_restrict hides them from /proc/kallsyms). */
	if (b->req->has_uid && kmin != UINT64_MAX)
		kmin = kmax = 0;
	/* Last: readers take the first mapping as the profile's main binary. */
	if (kmin != UINT64_MAX)
		b->maps[KERNEL_MAP].pprof_id =
			fr_pprof_mapping(p, kmin, kmax + 1, 0, "[kernel.kallsyms]", NULL, 1);
	ids = malloc(b->nlocs ? b->nlocs * sizeof(*ids) : 1);
	for (uint32_t i = 0; ids && i < b->nlocs; i++) {
		const struct gloc *l = &b->locs[i];
		uint64_t addr = l->map == KERNEL_MAP && b->req->has_uid ? 0 : l->addr;

		ids[i] = fr_pprof_location(p, l->map ? b->maps[l->map].pprof_id : 0, addr,
					   l->function_id);
	}
	for (uint32_t i = 0; ids && i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];
		uint64_t locs[FR_MAX_FRAMES];
		int64_t values[1 + FR_PROFILE_MAX_EVENTS];
		struct fr_pprof_label labels[6] = {
			{.key = "pid", .num = s->pid},
			{.key = "tid", .num = s->tid},
			{.key = "comm", .str = b->strs[s->comm]},
			{.key = "thread", .str = b->strs[s->thread]},
		};
		size_t nlabels = 4;

		if (b->req->cpu_label)
			labels[nlabels++] = (struct fr_pprof_label){.key = "cpu", .num = s->cpu};
		if (s->cgroup != NO_CGROUP)
			labels[nlabels++] =
				(struct fr_pprof_label){.key = "cgroup", .str = b->strs[s->cgroup]};
		values[0] = (int64_t)s->count;
		for (uint32_t e = 0; e < b->nev; e++)
			values[1 + e] = cell_value(b, i, e);
		for (uint32_t j = 0; j < s->nlocs && j < FR_MAX_FRAMES; j++)
			locs[j] = ids[b->arena[s->locs + j]];
		fr_pprof_sample(p, locs, s->nlocs, values, 1 + b->nev, labels, nlabels);
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

/* Writes the aggregate as folded stacks (see core/profile.h): the count of
 * a line is the kept samples of the first event, so rows with none of it
 * are left out. Samples that differ only in pid, tid, cpu or cgroup fold
 * into one line, so lines are sorted and equal neighbours merged.
 * Returns 0, -ENOMEM, or the sink's -errno. */
static int emit_folded(struct builder *b, fr_write_fn sink, void *arg, uint64_t *nlines)
{
	struct folded_line *v = calloc(b->nsamples ? b->nsamples : 1, sizeof(*v));
	uint32_t n = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];
		const char *comm = b->strs[s->comm][0] ? b->strs[s->comm] : "[unknown]";
		uint64_t count = b->cells[(size_t)i * b->nev].n;
		size_t len = strlen(comm) + 1;
		char *t;

		if (!count)
			continue;
		for (uint32_t j = 0; j < s->nlocs; j++)
			len += 1 + strlen(b->strs[b->locs[b->arena[s->locs + j]].name]);
		t = v[n].text = malloc(len);
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		v[n++].count = count;
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

/* Checks the request and sets up the events and the cgroup of `b`.
 * Returns 0, or -EINVAL with a message in `err`. */
static int setup_request(struct builder *b, struct fr_profile_result *res, char *err,
			 size_t errlen)
{
	const struct fr_profile_request *req = b->req;
	size_t n;

	if (req->nevents > FR_PROFILE_MAX_EVENTS) {
		snprintf(err, errlen, "a profile has at most %d events; %u were asked for",
			 FR_PROFILE_MAX_EVENTS, req->nevents);
		return -EINVAL;
	}
	b->nev = req->nevents ? req->nevents : 1;
	for (uint32_t e = 0; e < b->nev; e++) {
		struct gevent *g = &b->ev[e];

		g->id = req->nevents ? req->events[e] : FR_EVENT_CPU;
		if (FR_EVENT_IS_RAW(g->id) ? FR_EVENT_RAW_CODE(g->id) == 0
					   : g->id >= FR_EVENT_COUNT || g->id == FR_EVENT_RAW) {
			snprintf(err, errlen, "event id %#x is not an event flightrec knows (%s)",
				 g->id, FR_EVENT_NAMES);
			return -EINVAL;
		}
		fr_event_format(g->id, g->name, sizeof(g->name));
		for (uint32_t k = 0; k < e; k++) {
			if (b->ev[k].id == g->id) {
				snprintf(err, errlen, "event %s is asked for twice", g->name);
				return -EINVAL;
			}
		}
		g->res = &res->events[e];
		g->res->event = g->id;
	}
	res->nevents = b->nev;
	if (req->npids > FR_PROFILE_MAX_PIDS || req->ncomms > FR_PROFILE_MAX_COMMS) {
		snprintf(err, errlen, "a profile has at most %d pids and %d command names",
			 FR_PROFILE_MAX_PIDS, FR_PROFILE_MAX_COMMS);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < req->ncomms; i++) {
		if (strnlen(req->comms[i], FR_PROFILE_COMM_MAX) == FR_PROFILE_COMM_MAX) {
			snprintf(err, errlen,
				 "command name \"%.*s...\" is longer than the %d characters the "
				 "kernel keeps", FR_PROFILE_COMM_MAX, req->comms[i],
				 FR_PROFILE_COMM_MAX - 1);
			return -EINVAL;
		}
	}
	n = strnlen(req->cgroup, FR_PROFILE_CGROUP_MAX);
	if (n == FR_PROFILE_CGROUP_MAX || (n && req->cgroup[0] != '/')) {
		snprintf(err, errlen,
			 "the cgroup must be a cgroup v2 path such as /system.slice/nginx.service, "
			 "at most %d characters", FR_PROFILE_CGROUP_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

/* Each rate-sampled event gets the lowest rate it was collected at in the
 * window, or the requested rate if lower; cpu with no samples, the
 * requested rate or the recorder's default. */
static void set_targets(struct builder *b, struct fr_profile_result *res)
{
	for (uint32_t e = 0; e < b->nev; e++) {
		struct gevent *g = &b->ev[e];
		uint32_t t = 0;

		if (fr_event_has_rate(g->id)) {
			t = g->res->min_rate;
			if (b->req->hz && (!t || b->req->hz < t))
				t = b->req->hz;
			if (!t && g->id == FR_EVENT_CPU)
				t = 99;
		}
		g->target = t;
		g->res->hz = t;
	}
	res->hz = b->ev[0].target;
}

/* period and its type are those of the first event. What one kept sample
 * of it stands for:
 *   cpu:     1e9/hz nanoseconds, exactly (each kept sample counts that).
 *   offcpu:  1: its values are nanoseconds measured at each switch, not
 *            counts of a sampled event, so there is no sampling period.
 *   others:  frequency mode, where the kernel varies the period to hold
 *            the rate, so there is no fixed one: the mean value per kept
 *            sample (the column's total over its kept samples, rounded),
 *            which is what a sample stands for on average; 0 when none
 *            was kept. */
static int64_t profile_period(const struct builder *b)
{
	const struct gevent *g = &b->ev[0];
	uint64_t total = 0, n = g->res->samples_kept;

	if (g->id == FR_EVENT_CPU)
		return NS_PER_SEC / g->target;
	if (!fr_event_has_rate(g->id))
		return 1;
	if (!n)
		return 0;
	for (uint32_t i = 0; i < b->nsamples; i++)
		total += b->cells[(size_t)i * b->nev].v;
	return (int64_t)((total + n / 2) / n);
}

/* Comments on how each event was sampled, and the warning if the request
 * asked for more than the window holds. */
static void rate_comments(struct builder *b, struct fr_pprof *p, struct fr_profile_result *res)
{
	char line[512];

	for (uint32_t e = 0; e < b->nev; e++) {
		const struct gevent *g = &b->ev[e];

		if (g->id == FR_EVENT_CPU)
			snprintf(line, sizeof(line),
				 "cpu sampled at %u Hz per CPU (cpu-clock, kernel+user stacks)",
				 g->target);
		else if (!fr_event_has_rate(g->id))
			snprintf(line, sizeof(line),
				 "%s: every context switch, value = nanoseconds switched out", g->name);
		else if (g->target)
			snprintf(line, sizeof(line),
				 "%s sampled at %u Hz (frequency mode, per CPU; value = %s counted, "
				 "scaled up where downsampled)", g->name, g->target, g->name);
		else
			snprintf(line, sizeof(line), "%s: no samples in this window", g->name);
		comment(p, line);
	}
	for (uint32_t e = 0; e < b->nev; e++) {
		const struct gevent *g = &b->ev[e];
		const struct fr_profile_event_result *er = g->res;

		if (!g->target)
			continue;
		if (b->req->hz && er->min_rate && b->req->hz > er->min_rate) {
			if (er->max_rate > g->target)
				snprintf(line, sizeof(line),
					 "%s: downsampled: part of the window was collected at %u Hz, "
					 "below the requested %u Hz, so all of %s is at %u Hz "
					 "(downsampled from up to %u Hz)", g->name, er->min_rate,
					 b->req->hz, g->name, g->target, er->max_rate);
			else
				snprintf(line, sizeof(line),
					 "%s: the window was collected at %u Hz, below the requested "
					 "%u Hz, so %s is at %u Hz", g->name, er->min_rate, b->req->hz,
					 g->name, g->target);
			comment(p, line);
			if (!res->warning[0])
				snprintf(res->warning, sizeof(res->warning), "%s", line);
		} else if (er->max_rate > g->target) {
			snprintf(line, sizeof(line), "%s: downsampled from %u Hz to %u Hz", g->name,
				 er->max_rate, g->target);
			comment(p, line);
		}
	}
}

/* What the kernel reported losing, per event. */
static void loss_comments(const struct builder *b, struct fr_pprof *p)
{
	char line[512];

	for (uint32_t e = 0; e < b->nev; e++) {
		const struct gevent *g = &b->ev[e];
		const struct fr_profile_event_result *er = g->res;

		if (er->lost) {
			snprintf(line, sizeof(line),
				 "%s: %" PRIu64 " samples lost by the kernel in this window (the "
				 "recorder fell behind)", g->name, er->lost);
			comment(p, line);
		}
		if (er->throttled) {
			snprintf(line, sizeof(line),
				 "%s: the kernel throttled sampling %" PRIu64 " times in this window "
				 "(too many samples per second; some are missing)", g->name,
				 er->throttled);
			comment(p, line);
		}
		if (er->truncated) {
			snprintf(line, sizeof(line),
				 "%s: %" PRIu64 " stacks were truncated at %d frames (their outermost "
				 "callers are missing)", g->name, er->truncated, FR_MAX_FRAMES);
			comment(p, line);
		}
	}
}

/* Adds the chunk's kernel counters of the requested events. */
static void count_losses(struct builder *b, const struct fr_chunk *c)
{
	for (uint32_t k = 0; k < c->nevents; k++) {
		for (uint32_t e = 0; e < b->nev; e++) {
			struct fr_profile_event_result *er = b->ev[e].res;

			if (c->events[k].event != b->ev[e].id)
				continue;
			er->lost += c->events[k].lost;
			er->throttled += c->events[k].throttled;
			er->truncated += c->events[k].truncated;
		}
	}
}

/* Pass 1 over chunk `c`: counts its samples of the targets and notes the
 * rates they were collected at. Returns 0 or -ENOMEM. */
static int chunk_rates(struct builder *b, const struct fr_chunk *c)
{
	int ret = chunk_targets(b, c, 0);

	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < c->nsamples; i++) {
		int e = select_sample(b, c, i);
		struct fr_profile_event_result *er;
		uint32_t rate = c->rate_hz[i];

		if (e < 0)
			continue;
		er = b->ev[e].res;
		er->samples_seen++;
		if (rate && (!er->min_rate || rate < er->min_rate))
			er->min_rate = rate;
		if (rate > er->max_rate)
			er->max_rate = rate;
	}
	return 0;
}

/* "--children: N descendant processes of PID[,PID] included". */
static void children_comment(const struct builder *b, struct fr_pprof *p)
{
	/* FR_PROFILE_MAX_PIDS pids of up to 10 digits and a comma each. */
	char line[96 + FR_PROFILE_MAX_PIDS * 11];
	size_t n;

	/* A user limited to their own processes is not told how many others
	 * ran. */
	if (b->req->has_uid)
		n = (size_t)snprintf(line, sizeof(line), "--children: descendant processes of ");
	else
		n = (size_t)snprintf(line, sizeof(line),
				     "--children: %u descendant processes of ", b->ndescendants);
	for (uint32_t i = 0; i < b->req->npids && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%u", i ? "," : "",
				      b->req->pids[i]);
	if (n < sizeof(line))
		snprintf(line + n, sizeof(line) - n, " included");
	comment(p, line);
}

/* Whether the asker gave up (see fr_profile_request.stop); says so in
 * `err` when it did. */
static int stopped(const struct fr_profile_request *req, char *err, size_t errlen)
{
	if (!req->stop || !req->stop(req->stop_arg))
		return 0;
	snprintf(err, errlen, "stopped: the client went away");
	return 1;
}

/* Decoded, a chunk takes about twice its raw block (the pass-1 cache
 * counts it so). Aggregation's tables (rows, stacks, locations, the pprof
 * and folded output) grow with the distinct stacks, which the samples
 * bound: measured at 350-400 bytes a sample when most stacks differ
 * (tests/bench/query_memory.sh, docs/performance.md). Symbolizing adds the
 * symbol tables of the files the stacks name: a few MiB. */
#define ESTIMATE_PER_SAMPLE 400u
#define ESTIMATE_FIXED ((uint64_t)8 << 20)

int64_t fr_profile_estimate(struct fr_ring *ring, const struct fr_profile_request *req)
{
	size_t cache_cap = req->cache_bytes ? req->cache_bytes : FR_PROFILE_CACHE_DEFAULT;
	struct fr_ring_ref *refs = NULL;
	uint64_t raw = 0, samples = 0, cached;
	size_t nrefs = 0;
	int ret;

	ret = fr_ring_query(ring, req->t0, req->t1, &refs, &nrefs);
	if (ret < 0)
		return ret;
	for (size_t r = 0; r < nrefs; r++) {
		raw += refs[r].raw_len;
		samples += refs[r].nsamples;
	}
	free(refs);
	cached = 2 * raw < cache_cap ? 2 * raw : cache_cap;
	return (int64_t)(cached + samples * ESTIMATE_PER_SAMPLE + ESTIMATE_FIXED);
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
	size_t cache_cap = req->cache_bytes ? req->cache_bytes : FR_PROFILE_CACHE_DEFAULT;
	int64_t eff_t0, period;
	char line[512], a[64], bb[64], dur[32];
	int children = req->children && req->npids, ret;

	memset(&b, 0, sizeof(b));
	memset(res, 0, sizeof(*res));
	b.req = req;
	err[0] = '\0';

	ret = setup_request(&b, res, err, errlen);
	if (ret < 0)
		goto out;
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

	/* Pass 1: the lowest collection rate of each event in the window;
	 * with children, the parents of its processes first. */
	for (size_t r = 0; r < nrefs; r++) {
		struct fr_chunk *c = NULL;

		if (stopped(req, err, errlen)) {
			ret = -ECANCELED;
			goto out;
		}
		ret = load(ring, &refs[r], &c);
		if (ret < 0) {
			res->chunks_skipped++;
			continue;
		}
		res->chunks++;
		count_losses(&b, c);
		ret = children ? collect_parents(&b, c) : chunk_rates(&b, c);
		if (ret < 0) {
			fr_chunk_free(c);
			snprintf(err, errlen, "out of memory while reading the window");
			goto out;
		}
		if (cached_bytes + refs[r].raw_len * 2u <= cache_cap) {
			cache[r].chunk = c;
			cached_bytes += refs[r].raw_len * 2u;
		} else {
			fr_chunk_free(c);
		}
	}
	ret = 0;
	if (children) {
		/* The rates are those of the extended targets. */
		ret = extend_pids(&b);
		for (size_t r = 0; ret == 0 && r < nrefs; r++) {
			struct fr_chunk *c = cache[r].chunk;

			if (!c && load(ring, &refs[r], &c) < 0)
				continue;
			ret = chunk_rates(&b, c);
			if (c != cache[r].chunk)
				fr_chunk_free(c);
		}
		if (ret < 0) {
			snprintf(err, errlen, "out of memory while finding the child processes");
			goto out;
		}
	}
	set_targets(&b, res);

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

		if (stopped(req, err, errlen)) {
			ret = -ECANCELED;
			goto out;
		}
		if (!c && load(ring, &refs[r], &c) < 0)
			continue;
		ret = reset_stack_memo(&b, c->nstacks);
		if (ret == 0)
			ret = chunk_targets(&b, c, 1);
		for (uint32_t i = 0; ret == 0 && i < c->nsamples; i++) {
			int e = select_sample(&b, c, i);

			if (e < 0 || !keep_sample(c, i, b.ev[e].target))
				continue;
			ret = add_sample(&b, c, i, (uint32_t)e);
			b.ev[e].res->samples_kept++;
		}
		if (c != cache[r].chunk)
			fr_chunk_free(c);
		if (ret < 0) {
			snprintf(err, errlen, "out of memory while aggregating the window");
			goto out;
		}
	}
	for (uint32_t e = 0; e < b.nev; e++) {
		res->samples_seen += b.ev[e].res->samples_seen;
		res->samples_kept += b.ev[e].res->samples_kept;
		res->lost += b.ev[e].res->lost;
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

	period = profile_period(&b);
	if (req->format == FR_PROFILE_PPROF) {
		p = fr_pprof_new(6, counting_write, &counter);
		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		/* samples/count counts the kept samples of every event; then a
		 * column per event, in the order asked. */
		fr_pprof_sample_type(p, "samples", "count");
		for (uint32_t e = 0; e < b.nev; e++)
			fr_pprof_sample_type(p, b.ev[e].name, fr_event_unit(b.ev[e].id));
		fr_pprof_default_sample_type(p, b.ev[0].name);
		fr_pprof_period(p, b.ev[0].name, fr_event_unit(b.ev[0].id), period);
		fr_pprof_time(p, eff_t0, req->t1 - eff_t0);
	}
	snprintf(line, sizeof(line), "flightrec %s", req->version ? req->version : "");
	comment(p, line);
	snprintf(line, sizeof(line), "window %s .. %s (%s)", fr_format_time(req->t0, a, sizeof(a)),
		 fr_format_time(req->t1, bb, sizeof(bb)),
		 fr_format_duration(req->t1 - req->t0, dur, sizeof(dur)));
	comment(p, line);
	if (req->note && req->note[0])
		comment(p, req->note);
	if (children)
		children_comment(&b, p);
	if (req->has_uid) {
		snprintf(line, sizeof(line), "limited to the processes of uid %" PRIu32, req->uid);
		comment(p, line);
	}
	rate_comments(&b, p, res);
	if (res->warning[0])
		comment(p, res->warning);
	loss_comments(&b, p);
	if (res->chunks_skipped) {
		snprintf(line, sizeof(line),
			 "%" PRIu64 " chunks of the window could not be read (damaged or overwritten)",
			 res->chunks_skipped);
		comment(p, line);
	}
	if (b.ev[0].id != FR_EVENT_CPU) {
		if (fr_event_has_rate(b.ev[0].id))
			snprintf(line, sizeof(line),
				 "period %" PRId64 ": the mean %s per kept sample (frequency mode has "
				 "no fixed period)", period, b.ev[0].name);
		else
			snprintf(line, sizeof(line),
				 "period 1: %s values are measured nanoseconds, not sampled counts",
				 b.ev[0].name);
		comment(p, line);
	}

	ret = symbolize(&b, p, req->kallsyms);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory while naming the frames");
		goto out;
	}
	if (p) {
		emit(&b, p);
		res->stacks = b.nsamples;
		ret = fr_pprof_finish(p);
	} else {
		ret = emit_folded(&b, counting_write, &counter, &res->stacks);
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
