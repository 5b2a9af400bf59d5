/* Chunk decoder (format in core/store/chunk.h).
 *
 * The decoder trusts nothing: every count is checked against the bytes
 * left (each entry takes at least one byte), every id against its table,
 * every varint against overflow and the width of its field. Any violation
 * is -EBADMSG.
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/util/compress.h"
#include "core/util/le.h"
#include "core/util/log.h"

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

#define TRY(expr)                     \
	do {                          \
		if ((expr) < 0)       \
			goto err_bad; \
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

/* The frames of stack i: the first `shared` as the previous stack's (from
 * the root), the rest as deltas from their prediction. Returns 0 or
 * -EBADMSG. */
static int decode_frames(struct dec *d, struct pred *pr, uint32_t i, uint32_t shared)
{
	struct fr_chunk *c = d->c;
	const struct fr_chunk_stack *st = &c->stacks[i];
	const struct fr_chunk_stack *pv = i ? &c->stacks[i - 1] : NULL;
	uint64_t cur[FR_MAX_FRAMES], prev[FR_MAX_FRAMES];
	unsigned nr = st->nr_frames, nu = nr - st->nr_kernel;
	unsigned gn = pv ? pv->nr_frames : 0, gnu = pv ? gn - pv->nr_kernel : 0;

	for (unsigned p = 0; p < gn; p++)
		prev[p] = ROOT_FRAME(&c->frames[pv->first], gn, p);
	for (unsigned p = 0; p < shared; p++)
		cur[p] = prev[p];
	for (unsigned p = shared; p < nr; p++) {
		uint64_t pred = frame_pred(pr, cur, nu, pv ? prev : NULL, gn, gnu, p);
		int64_t delta;

		if (rd_z(&d->r, &delta) < 0)
			return -EBADMSG;
		cur[p] = pred + (uint64_t)delta;
		pred_update(pr, cur, nu, p);
	}
	for (unsigned p = 0; p < nr; p++)
		ROOT_FRAME(&c->frames[st->first], nr, p) = cur[p];
	return 0;
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
	for (uint32_t i = 0; i < n; i++)
		TRY(decode_frames(d, pr, i, shared[i]));
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

/* Section 4: the gaps (`len` bytes at p). */
static int decode_gaps(struct fr_chunk *c, const unsigned char *p, size_t len)
{
	struct rd r = {p, p + len};
	uint32_t n;

	if (c->gaps || rd_count(&r, 5, &n) < 0 || n > FR_CHUNK_GAPS_MAX)
		return -EBADMSG;
	c->gaps = calloc(n ? n : 1, sizeof(*c->gaps));
	if (!c->gaps)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct fr_chunk_gap *g = &c->gaps[i];
		uint64_t span;
		int64_t from;

		if (rd_u32(&r, &g->kind) < 0 || g->kind > FR_GAP_STALL ||
		    rd_u32(&r, &g->event) < 0 || rd_v(&r, &g->count) < 0 || rd_z(&r, &from) < 0 ||
		    rd_v(&r, &span) < 0 || span > INT64_MAX)
			return -EBADMSG;
		g->from_ns = (int64_t)((uint64_t)c->hdr.first_ns + (uint64_t)from);
		if (g->from_ns > INT64_MAX - (int64_t)span)
			return -EBADMSG;
		g->to_ns = g->from_ns + (int64_t)span;
		c->ngaps = i + 1;
	}
	return r.p == r.end ? 0 : -EBADMSG;
}

/* What follows the samples: nothing in version 2, sections in version 3
 * (increasing ids; an unknown one skipped). */
static int decode_sections(struct rd *r, struct fr_chunk *c)
{
	int64_t prev = 0;

	if (c->hdr.version < 3)
		return r->p == r->end ? 0 : -EBADMSG;
	while (r->p != r->end) {
		uint64_t id, len;
		int ret;

		if (rd_v(r, &id) < 0 || (int64_t)id <= prev || id > UINT32_MAX ||
		    rd_v(r, &len) < 0 || len > rd_left(r))
			return -EBADMSG;
		ret = 0;
		if (id == FR_CHUNK_SECTION_NAMES)
			ret = chunk_decode_names(c, r->p, (size_t)len);
		else if (id == FR_CHUNK_SECTION_CREATORS)
			ret = chunk_decode_creators(c, r->p, (size_t)len);
		else if (id == FR_CHUNK_SECTION_APP)
			ret = chunk_app_decode(c, r->p, (size_t)len);
		else if (id == FR_CHUNK_SECTION_GAPS)
			ret = decode_gaps(c, r->p, (size_t)len);
		if (ret < 0)
			return ret;
		r->p += len;
		prev = (int64_t)id;
	}
	return 0;
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
	    (ret = decode_events(&d.r, c)) < 0 || (ret = decode_samples(&d)) < 0 ||
	    (ret = chunk_app_init(c)) < 0)
		goto err;
	ret = decode_sections(&d.r, c);
	if (ret == 0)
		ret = chunk_app_finish(c);
	if (ret < 0)
		goto err;
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
	free(c->gaps);
	free(c->names);
	free(c->name_changes);
	free(c->time_ns);
	free(c->tid);
	free(c->pid);
	free(c->cpu);
	free(c->event);
	free(c->rate_hz);
	free(c->stack);
	free(c->labelset);
	free(c->weight);
	if (c->app_strings)
		free((void *)c->app_strings[0]);
	free(c->app_strings);
	free(c->apps);
	free(c->app_keys);
	free(c->app_values);
	free(c->app);
	free(c);
}
