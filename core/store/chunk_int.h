/* Private to the chunk codec (core/chunk*.c): the builder's state, which
 * the sealing code reads, and the seal's working state, which the
 * metadata and block encoders share. Nothing outside core/chunk*.c
 * includes this; the public API is core/store/chunk.h. */
#ifndef FR_CORE_CHUNK_INT_H
#define FR_CORE_CHUNK_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/le.h"

/* Distinct events whose counters one chunk carries. */
#define EVENT_SLOTS 64

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
	uint32_t *app_ref; /* fr_sample.app_ref */
	uint64_t *weight;

	struct bstack *stacks;
	uint64_t *frames;
	uint32_t *table; /* stack index + 1; 0 is an empty slot */

	struct fr_chunk_event_stats events[EVENT_SLOTS];
	uint32_t ngaps;
	struct fr_chunk_gap gaps[FR_CHUNK_GAPS_MAX];
	struct fr_zstd *zstd; /* created on the first seal */
	int level;	      /* zstd level */
};

/* Ten table counts, the length of the "" string, the sample count and
 * four empty run lists: the smallest block. */
#define RAW_FIXED 16
/* Raw bytes allowed per distinct stack for the process, thread, mapping
 * and string entries that sealing adds; these are unknown until then. */
#define META_ALLOWANCE 24

/* One step of the hash of builder stacks and of the seal's tables. */
static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* Root-first frame p of a stack whose frames are stored leaf first. */
#define ROOT_FRAME(f, nr, p) ((f)[(nr)-1 - (p)])

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

static inline void pred_init(struct pred *pr)
{
	/* An empty slot predicts 0 after a caller at address 0: harmless,
	 * as both sides do the same. */
	memset(pr, 0, sizeof(*pr));
	pr->last[1] = KERNEL_PRED;
}

/* Part of the format (core/store/chunk.h): not to be changed with mix(). */
static inline unsigned pred_slot(uint64_t parent)
{
	uint64_t x = parent * 0x9e3779b97f4a7c15ull;

	return (unsigned)((x ^ (x >> 29)) & (PRED_SLOTS - 1));
}

/* `f` is this stack root first, `nu` its user frames; `g` the previous
 * stack (NULL for the first), `gn` and `gnu` its frames and user frames. */
static inline uint64_t frame_pred(const struct pred *pr, const uint64_t *f, unsigned nu,
				  const uint64_t *g, unsigned gn, unsigned gnu, unsigned p)
{
	bool kernel = p >= nu;

	if (p == 0)
		return g && gn > 0 && (gnu == 0) == kernel ? g[0] : pr->last[kernel];
	if (pr->slot[pred_slot(f[p - 1])].parent == f[p - 1])
		return pr->slot[pred_slot(f[p - 1])].child;
	return (p - 1 >= nu) == kernel ? f[p - 1] : pr->last[kernel];
}

static inline void pred_update(struct pred *pr, const uint64_t *f, unsigned nu, unsigned p)
{
	if (p > 0) {
		unsigned i = pred_slot(f[p - 1]);

		pr->slot[i].parent = f[p - 1];
		pr->slot[i].child = f[p];
	}
	pr->last[p >= nu] = f[p];
}

/* Empties the builder for the next chunk; capacities and the zstd context
 * stay. */
void chunk_builder_reset(struct fr_chunk_builder *b);

/* A growing output buffer; the first allocation failure sticks in err and
 * makes every later write a no-op, so encoders check once at the end. */
struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static inline void wb_reserve(struct wbuf *w, size_t n)
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

static inline void wb_v(struct wbuf *w, uint64_t v)
{
	wb_reserve(w, 10);
	if (w->err)
		return;
	w->len = (size_t)(fr_varint_put(w->p + w->len, v) - w->p);
}

static inline void wb_z(struct wbuf *w, int64_t v)
{
	wb_v(w, fr_zigzag(v));
}

static inline void wb_bytes(struct wbuf *w, const void *p, size_t n)
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
	} * ent;
	uint32_t n, cap;
	uint32_t *slots; /* index + 1 */
	uint32_t mask;
};

struct pidaddr {
	uint32_t pid;
	uint64_t addr;
};

/* Index of `pid` in the sorted, distinct `pids` (it is there). */
static inline uint32_t pid_index(const uint32_t *pids, size_t n, uint32_t pid)
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
	struct wbuf names; /* section 1's entries (core/store/chunk_names.c) */
	uint32_t nnames;
	struct wbuf creators; /* section 2's entries */
	uint32_t ncreators, creator_prev;
	int app_section; /* chunk_app_seal wrote section 3 */
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
	uint64_t *col;	       /* one sample column in that order */
	struct wbuf block;
};

/* Fills s (zeroed by the caller) with the chunk's processes, label sets,
 * ancestors, threads and mappings, looked up through ops, and the strings
 * and build ids they name. Returns 0, or -ENOMEM; s is freed by
 * chunk_seal_fini() either way. */
int chunk_seal_meta(struct seal *s, const struct fr_chunk_builder *b,
		    const struct fr_chunk_meta_ops *ops, int64_t first_ns);

/* The id of string `s` in t (NULL and "" are 0), or -ENOMEM. */
int64_t chunk_strtab_intern(struct strtab *t, const char *s);

/* Names over time (core/store/chunk_names.c). How many strings the
 * section may intern, asked before the string table is sized; then its
 * entries, written into s->names after the thread table. */
size_t chunk_names_strings(const struct seal *s, const struct fr_chunk_meta_ops *ops);
int chunk_seal_names(struct seal *s, const struct fr_chunk_meta_ops *ops, int64_t first_ns);
/* Reads section 1 (`len` bytes at p) into c, whose strings are decoded.
 * Returns 0, -EBADMSG or -ENOMEM. */
int chunk_decode_names(struct fr_chunk *c, const unsigned char *p, size_t len);
/* Section 2 (creators): noted by seal_threads for each thread it writes;
 * read into c->threads. */
void chunk_seal_creator(struct seal *s, uint32_t tid, uint32_t creator);
int chunk_decode_creators(struct fr_chunk *c, const unsigned char *p, size_t len);
/* A string table for `max_strings` entries (with "" as id 0); the id of
 * `len` bytes, interned (-ENOMEM past the capacity); its release. */
int chunk_strtab_init(struct strtab *t, size_t max_strings);
int64_t chunk_strtab_intern_n(struct strtab *t, const void *s, size_t len);
/* The id of the `len` bytes at `s` (0 when len is 0), -ENOENT when the
 * table does not hold them. */
int64_t chunk_strtab_find_n(const struct strtab *t, const void *s, size_t len);
void chunk_strtab_fini(struct strtab *t);

/* Writes the strings of t from id `from` on, as the block stores them. */
void chunk_strtab_write(struct wbuf *w, const struct strtab *t, uint32_t from);

/* Frees everything s holds (not s itself). */
void chunk_seal_fini(struct seal *s);

/* Appends the optional sections that follow the samples (the application
 * labels, core/store/chunk_app.c) to s->block, asking ops->app_labels for
 * each sample's. Returns 0 or -ENOMEM. */
int chunk_app_seal(struct seal *s, const struct fr_chunk_builder *b,
		   const struct fr_chunk_meta_ops *ops);

/* Application labels (section 3) when decoding: chunk_app_init gives
 * c->app, set 0 ("no labels") for every sample, before the sections;
 * chunk_app_decode reads the section (`len` bytes at p; at most one);
 * chunk_app_finish gives a chunk without one its empty tables. Each
 * returns 0, -EBADMSG or -ENOMEM. */
int chunk_app_init(struct fr_chunk *c);
int chunk_app_decode(struct fr_chunk *c, const unsigned char *p, size_t len);
int chunk_app_finish(struct fr_chunk *c);

/* Writes the 64-byte header h, with its checksum, to p. */
void chunk_header_write(unsigned char *p, const struct fr_chunk_header *h);

#endif
