/* Chunk codec: the application labels section (format in
 * core/store/chunk.h, "application labels").
 *
 * Sealing asks the caller's ops for each sample's labels (the recorder
 * joins them from the process's change logs, a merge hands on the parts'
 * sets), interns their strings and sets for the chunk and appends the
 * section after the samples. Decoding checks every count, id and run
 * against its table and the bytes left, and gives chunks without the
 * section (every chunk written before it existed) the same shape: one
 * empty set that every sample has.
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/util/le.h"

struct appset {
	uint64_t hash;
	uint32_t first, npairs; /* in ids[], key and value ids in turn */
};

struct appseal {
	struct strtab strs;
	struct appset *sets;
	uint32_t nsets, cap;
	uint32_t *ids, nids;
	uint32_t *slots, mask; /* set index + 1 */
	int64_t reason;	       /* id of the "too many sets" reason set, 0: none */
};

static void appseal_fini(struct appseal *a)
{
	chunk_strtab_fini(&a->strs);
	free(a->sets);
	free(a->ids);
	free(a->slots);
}

/* Room for `cap` sets (and their pairs) in a, the slots found again. */
static int appseal_size(struct appseal *a, uint32_t cap)
{
	size_t slots = 16;
	struct appset *sets = realloc(a->sets, cap * sizeof(*sets));
	uint32_t *ids;

	if (!sets)
		return -ENOMEM;
	a->sets = sets;
	ids = realloc(a->ids, (size_t)cap * 2 * FR_CHUNK_APP_PAIRS * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	a->ids = ids;
	while (slots < 2 * (size_t)cap)
		slots <<= 1;
	free(a->slots);
	a->slots = calloc(slots, sizeof(*a->slots));
	if (!a->slots)
		return -ENOMEM;
	a->cap = cap;
	a->mask = (uint32_t)(slots - 1);
	for (uint32_t i = 0; i < a->nsets; i++) {
		uint32_t slot = (uint32_t)a->sets[i].hash & a->mask;

		while (a->slots[slot])
			slot = (slot + 1) & a->mask;
		a->slots[slot] = i + 1;
	}
	return 0;
}

/* The tables start small: most chunks have few sets however many samples
 * they hold, and grow (to FR_CHUNK_APP_SETS_MAX and the reason set) for
 * those that have more. */
static int appseal_init(struct appseal *a, uint32_t nsamples)
{
	uint32_t cap = nsamples < 64 ? nsamples + 1 : 64;

	memset(a, 0, sizeof(*a));
	/* Every pair of every set, the reason pair and "". */
	if (chunk_strtab_init(&a->strs, 3 + 2 * (size_t)cap) < 0)
		return -ENOMEM;
	return appseal_size(a, cap);
}

/* The set (1-based) of pairs given as string ids, added when new; 0 when
 * the chunk has FR_CHUNK_APP_SETS_MAX sets already; -ENOMEM. */
static int64_t appseal_set(struct appseal *a, const uint32_t *ids, uint32_t npairs)
{
	uint64_t h = 0x243f6a8885a308d3ull;
	uint32_t slot;

	for (uint32_t i = 0; i < 2 * npairs; i++)
		h = mix(h, ids[i]);
	for (slot = (uint32_t)h & a->mask; a->slots[slot]; slot = (slot + 1) & a->mask) {
		const struct appset *s = &a->sets[a->slots[slot] - 1];

		if (s->hash == h && s->npairs == npairs &&
		    memcmp(&a->ids[s->first], ids, 2 * npairs * sizeof(*ids)) == 0)
			return a->slots[slot];
	}
	if (a->nsets >= FR_CHUNK_APP_SETS_MAX)
		return 0;
	/* Room is kept for the reason set. */
	if (a->nsets + 1 >= a->cap) {
		uint32_t cap = 2 * a->cap < FR_CHUNK_APP_SETS_MAX + 1 ? 2 * a->cap
								      : FR_CHUNK_APP_SETS_MAX + 1;

		if (appseal_size(a, cap) < 0)
			return -ENOMEM;
		return appseal_set(a, ids, npairs);
	}
	a->sets[a->nsets] = (struct appset){.hash = h, .first = a->nids, .npairs = npairs};
	memcpy(&a->ids[a->nids], ids, 2 * npairs * sizeof(*ids));
	a->nids += 2 * npairs;
	a->slots[slot] = ++a->nsets;
	return a->nsets;
}

/* The id of string `s` (NULL is ""), interned unless the chunk is full:
 * a full chunk takes no new string (-ENOENT), the set it would make being
 * dropped. -ENOMEM. */
static int64_t app_string(struct appseal *a, const char *s)
{
	size_t len = s ? strnlen(s, FR_CHUNK_STRING_MAX) : 0;

	if (a->nsets >= FR_CHUNK_APP_SETS_MAX)
		return chunk_strtab_find_n(&a->strs, s, len);
	return chunk_strtab_intern_n(&a->strs, s, len);
}

/* The chunk's set of the labels ops gives for builder sample i. */
static int64_t appseal_sample(struct appseal *a, const struct fr_chunk_builder *b,
			      const struct fr_chunk_meta_ops *ops, uint32_t i)
{
	struct fr_app_label lab[FR_CHUNK_APP_PAIRS];
	uint32_t ids[2 * FR_CHUNK_APP_PAIRS];
	bool absent = false;
	int64_t set;
	int n = ops->app_labels(ops->arg, b->stacks[b->stack[i]].pid, b->tid[i], b->time[i],
				b->app_ref[i], lab);

	if (n <= 0)
		return 0;
	if (n > FR_CHUNK_APP_PAIRS)
		n = FR_CHUNK_APP_PAIRS;
	for (int k = 0; k < n && !absent; k++) {
		int64_t ki = app_string(a, lab[k].key), vi = app_string(a, lab[k].value);

		if (ki == -ENOMEM || vi == -ENOMEM)
			return -ENOMEM;
		if (ki == 0)
			return 0; /* a key is never "" */
		absent = ki < 0 || vi < 0;
		ids[2 * k] = (uint32_t)ki;
		ids[2 * k + 1] = (uint32_t)vi;
	}
	set = absent ? 0 : appseal_set(a, ids, (uint32_t)n);
	if (set != 0)
		return set; /* or -ENOMEM */
	if (!a->reason) {
		/* Room is kept for it: cap is one more than the sets allowed. */
		int64_t ki = chunk_strtab_intern_n(&a->strs, FR_APP_REASON_KEY,
						   strlen(FR_APP_REASON_KEY));
		int64_t vi = chunk_strtab_intern_n(&a->strs, "dropped: too many sets in chunk",
						   strlen("dropped: too many sets in chunk"));

		if (ki <= 0 || vi <= 0)
			return -ENOMEM;
		a->sets[a->nsets] = (struct appset){.first = a->nids, .npairs = 1};
		a->ids[a->nids++] = (uint32_t)ki;
		a->ids[a->nids++] = (uint32_t)vi;
		a->reason = ++a->nsets;
	}
	return a->reason;
}

static void appseal_write(struct wbuf *w, const struct appseal *a, const uint64_t *col, uint32_t n)
{
	uint32_t runs = 0;

	chunk_strtab_write(w, &a->strs, 1);
	wb_v(w, a->nsets);
	for (uint32_t i = 0; i < a->nsets; i++) {
		wb_v(w, a->sets[i].npairs);
		for (uint32_t k = 0; k < 2 * a->sets[i].npairs; k++)
			wb_v(w, a->ids[a->sets[i].first + k]);
	}
	for (uint32_t i = 0; i < n; i++)
		runs += i == 0 || col[i] != col[i - 1];
	wb_v(w, runs);
	for (uint32_t i = 0, len; i < n; i += len) {
		for (len = 1; i + len < n && col[i + len] == col[i]; len++)
			;
		wb_v(w, col[i]);
		wb_v(w, len);
	}
}

int chunk_app_seal(struct seal *s, const struct fr_chunk_builder *b,
		   const struct fr_chunk_meta_ops *ops)
{
	struct appseal a;
	struct wbuf sec = {0};
	uint64_t *col = s->col; /* free again: the samples are written */
	bool any = false;
	int ret;

	if (!ops || !ops->app_labels || b->nsamples == 0)
		return 0;
	ret = appseal_init(&a, b->nsamples);
	for (uint32_t i = 0; ret == 0 && i < b->nsamples; i++) {
		int64_t set = appseal_sample(&a, b, ops, s->order[i]);

		if (set < 0)
			ret = (int)set;
		col[i] = set < 0 ? 0 : (uint64_t)set;
		any |= set > 0;
	}
	if (ret == 0 && any) {
		appseal_write(&sec, &a, col, b->nsamples);
		wb_v(&s->block, FR_CHUNK_SECTION_APP);
		wb_v(&s->block, sec.len);
		wb_bytes(&s->block, sec.p, sec.len);
		ret = sec.err ? sec.err : s->block.err;
		s->app_section = 1;
	}
	free(sec.p);
	appseal_fini(&a);
	return ret;
}

/* Decoding. */

struct ard {
	const unsigned char *p, *end;
};

static int ard_u32(struct ard *r, uint32_t limit, uint32_t *out)
{
	uint64_t v;

	if (fr_varint_get(&r->p, r->end, &v) < 0 || v >= limit)
		return -EBADMSG;
	*out = (uint32_t)v;
	return 0;
}

static int app_strings(struct ard *r, struct fr_chunk *c)
{
	const unsigned char *start;
	uint32_t n;
	size_t total = 0;
	char *blob;

	if (ard_u32(r, (uint32_t)(r->end - r->p) + 1, &n) < 0)
		return -EBADMSG;
	start = r->p;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len;

		if (ard_u32(r, FR_CHUNK_STRING_MAX + 1, &len) < 0 || len == 0 ||
		    len > (size_t)(r->end - r->p))
			return -EBADMSG;
		r->p += len;
		total += len + 1;
	}
	c->app_strings = calloc((size_t)n + 1, sizeof(*c->app_strings));
	blob = malloc(total + 1);
	if (!c->app_strings || !blob) {
		free(blob);
		return -ENOMEM;
	}
	blob[0] = 0;
	c->app_strings[0] = blob++;
	r->p = start;
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t len;

		ard_u32(r, FR_CHUNK_STRING_MAX + 1, &len);
		memcpy(blob, r->p, len);
		blob[len] = 0;
		c->app_strings[i] = blob;
		blob += len + 1;
		r->p += len;
	}
	c->napp_strings = n + 1;
	return 0;
}

static int app_sets(struct ard *r, struct fr_chunk *c)
{
	uint32_t n, npairs = 0;
	size_t most;

	/* Each set takes three bytes at least; the reason set comes after
	 * the most the format keeps. */
	if (ard_u32(r, FR_CHUNK_APP_SETS_MAX + 2, &n) < 0 || n > (size_t)(r->end - r->p) / 3)
		return -EBADMSG;
	/* Each pair takes two bytes at least. */
	most = (size_t)n * FR_CHUNK_APP_PAIRS;
	if (most > (size_t)(r->end - r->p) / 2)
		most = (size_t)(r->end - r->p) / 2;
	c->apps = calloc((size_t)n + 1, sizeof(*c->apps));
	c->app_keys = malloc((most + 1) * sizeof(*c->app_keys));
	c->app_values = malloc((most + 1) * sizeof(*c->app_values));
	if (!c->apps || !c->app_keys || !c->app_values)
		return -ENOMEM;
	for (uint32_t i = 1; i <= n; i++) {
		struct fr_chunk_labelset *ls = &c->apps[i];

		if (ard_u32(r, FR_CHUNK_APP_PAIRS + 1, &ls->npairs) < 0 || ls->npairs == 0)
			return -EBADMSG;
		ls->first = npairs;
		for (uint32_t k = 0; k < ls->npairs; k++, npairs++) {
			if (npairs >= most ||
			    ard_u32(r, c->napp_strings, &c->app_keys[npairs]) < 0 ||
			    c->app_keys[npairs] == 0 ||
			    ard_u32(r, c->napp_strings, &c->app_values[npairs]) < 0)
				return -EBADMSG;
		}
	}
	c->napps = n + 1;
	return 0;
}

static int app_column(struct ard *r, struct fr_chunk *c)
{
	uint32_t runs, at = 0, n = c->nsamples;

	if (ard_u32(r, (uint32_t)(r->end - r->p) / 2 + 1, &runs) < 0)
		return -EBADMSG;
	for (uint32_t i = 0; i < runs; i++) {
		uint32_t set, len;

		if (ard_u32(r, c->napps, &set) < 0 || ard_u32(r, UINT32_MAX, &len) < 0 ||
		    len == 0 || len > n - at)
			return -EBADMSG;
		for (uint32_t k = 0; k < len; k++)
			c->app[at++] = set;
	}
	return at == n ? 0 : -EBADMSG;
}

static int app_section(struct fr_chunk *c, const unsigned char *p, const unsigned char *end)
{
	struct ard r = {p, end};
	int ret;

	if (c->app_strings)
		return -EBADMSG; /* a second one */
	if ((ret = app_strings(&r, c)) < 0 || (ret = app_sets(&r, c)) < 0 ||
	    (ret = app_column(&r, c)) < 0)
		return ret;
	return r.p == r.end ? 0 : -EBADMSG;
}

int chunk_app_init(struct fr_chunk *c)
{
	c->napps = 1;
	c->app = calloc(c->nsamples ? c->nsamples : 1, sizeof(*c->app));
	return c->app ? 0 : -ENOMEM;
}

int chunk_app_decode(struct fr_chunk *c, const unsigned char *p, size_t len)
{
	return app_section(c, p, p + len);
}

int chunk_app_finish(struct fr_chunk *c)
{
	if (!c->app_strings) {
		/* Readers index app_strings and apps like the other tables. */
		c->app_strings = calloc(1, sizeof(*c->app_strings));
		c->apps = calloc(1, sizeof(*c->apps));
		if (!c->app_strings || !c->apps)
			return -ENOMEM;
		c->app_strings[0] = strdup("");
		if (!c->app_strings[0])
			return -ENOMEM;
		c->napp_strings = 1;
	}
	return 0;
}
