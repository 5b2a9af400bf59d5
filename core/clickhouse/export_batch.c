/* Export batches (core/clickhouse/export_batch.h): a ring interval's profiles,
 * read back, folded into the schema's rows as JSONEachRow text.
 */
#include "core/clickhouse/export_batch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clickhouse/ch_schema.h"
#include "core/query/profile_value.h"
#include "core/store/sample.h"
#include "core/util/grow.h"
#include "core/util/hash.h"
#include "core/util/http.h"
#include "core/util/time.h"

#define DAY_NS (86400 * FR_NS_PER_S)

struct fr_export_seen {
	uint64_t *slots; /* open addressing; 0: empty (a hash of 0 is stored as 1) */
	uint32_t cap, n;
	int64_t day;
};

/* A string and its terminating NUL, so ("ab", "c") and ("a", "bc") differ. */
static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fr_fnv1a(h, s, strlen(s) + 1);
}

uint64_t fr_export_batch_id(const char *host, int64_t t0, int64_t len)
{
	uint64_t h = fnv_str(FR_FNV_OFFSET, host);

	h = fr_fnv1a(h, &t0, sizeof(t0));
	return fr_fnv1a(h, &len, sizeof(len));
}

struct fr_export_seen *fr_export_seen_new(uint32_t cap)
{
	struct fr_export_seen *s = calloc(1, sizeof(*s));
	uint32_t c = 64;

	while (c < cap && c < (1u << 30))
		c <<= 1;
	if (!s || !(s->slots = calloc(c, sizeof(*s->slots)))) {
		free(s);
		return NULL;
	}
	s->cap = c;
	s->day = -1;
	return s;
}

void fr_export_seen_free(struct fr_export_seen *s)
{
	if (!s)
		return;
	free(s->slots);
	free(s);
}

static void seen_clear(struct fr_export_seen *s)
{
	memset(s->slots, 0, s->cap * sizeof(*s->slots));
	s->n = 0;
}

static int seen_has(const struct fr_export_seen *s, uint64_t h)
{
	uint32_t i = (uint32_t)(h ^ (h >> 32)) & (s->cap - 1);

	h = h ? h : 1;
	for (; s->slots[i]; i = (i + 1) & (s->cap - 1))
		if (s->slots[i] == h)
			return 1;
	return 0;
}

static void seen_add(struct fr_export_seen *s, uint64_t h)
{
	uint32_t i = (uint32_t)(h ^ (h >> 32)) & (s->cap - 1);

	if (seen_has(s, h))
		return;
	/* Full at three quarters: forget everything; shipping a stack again
	 * costs a row, never a wrong answer. */
	if (s->n + 1 > s->cap / 4 * 3)
		seen_clear(s);
	h = h ? h : 1;
	while (s->slots[i])
		i = (i + 1) & (s->cap - 1);
	s->slots[i] = h;
	s->n++;
}

static int text_put(struct fr_export_text *t, const char *p, size_t len)
{
	if (t->len + len + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		char *n;

		while (cap < t->len + len + 1)
			cap *= 2;
		n = realloc(t->p, cap);
		if (!n)
			return -ENOMEM;
		t->p = n;
		t->cap = cap;
	}
	memcpy(t->p + t->len, p, len);
	t->len += len;
	t->p[t->len] = '\0';
	return 0;
}

static int text_printf(struct fr_export_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int text_printf(struct fr_export_text *t, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EINVAL;
	return text_put(t, buf, (size_t)n);
}

/* A JSON string: quotes, backslashes and control bytes escaped; other
 * bytes as they are (ClickHouse's String holds any bytes). */
static int text_json_str(struct fr_export_text *t, const char *s)
{
	char esc[8];
	int ret = text_put(t, "\"", 1);

	for (const char *p = s; ret == 0 && *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			ret = text_put(t, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			ret = text_put(t, esc, 6);
		} else {
			ret = text_put(t, p, 1);
		}
	}
	return ret ? ret : text_put(t, "\"", 1);
}

/* One symbolized frame of a stack. */
struct frame {
	const char *fn, *file, *map, *build_id;
	int64_t line;
	char addr[24]; /* the function of an address nothing names */
};

/* A row being folded: its key text (stack, pid, comm, labels as JSON
 * members) and its sums. */
struct row {
	char *key;
	uint64_t value, count;
};

struct build {
	const struct fr_export_req *req;
	struct fr_export_seen *seen, *local;
	struct fr_export_batch *b;
	struct frame *frames;
	size_t nframes, capframes;
	struct row *rows;
	size_t nrows, caprows;
	struct fr_export_text key;
};

static int sink_text(void *arg, const void *p, size_t len)
{
	return text_put(arg, p, len);
}

static struct frame *push_frame(struct build *bd)
{
	if (FR_GROW(bd->frames, &bd->capframes, bd->nframes + 1, 64) < 0)
		return NULL;
	return &bd->frames[bd->nframes++];
}

/* The frames of sample `s` of `p`, leaf first, inlined frames expanded:
 * as pprof gives them, an address nothing names by its address. */
static int collect_frames(struct build *bd, const struct fr_profile *p,
			  const struct fr_profile_sample *s)
{
	bd->nframes = 0;
	for (uint32_t i = 0; i < s->nlocs; i++) {
		struct fr_profile_location l;
		struct fr_profile_mapping m = {.file = "", .build_id = ""};
		uint32_t nl;

		fr_profile_location(p, s->locs[i], &l);
		if (l.mapping)
			fr_profile_mapping(p, l.mapping, &m);
		nl = l.nlines ? l.nlines : 1;
		for (uint32_t j = 0; j < nl; j++) {
			struct frame *f = push_frame(bd);
			struct fr_profile_line line;

			if (!f)
				return -ENOMEM;
			f->map = m.file;
			f->build_id = m.build_id;
			if (l.nlines) {
				fr_profile_line(p, s->locs[i], j, &line);
				f->fn = line.function;
				f->file = line.file;
				f->line = line.line;
			} else {
				snprintf(f->addr, sizeof(f->addr), "0x%" PRIx64, l.address);
				f->fn = f->addr;
				f->file = "";
				f->line = 0;
			}
		}
	}
	return 0;
}

static uint64_t stack_hash(const struct build *bd)
{
	uint64_t h = FR_FNV_OFFSET;

	for (size_t i = 0; i < bd->nframes; i++) {
		const struct frame *f = &bd->frames[i];

		h = fnv_str(h, f->fn);
		h = fnv_str(h, f->file);
		h = fr_fnv1a(h, &f->line, sizeof(f->line));
		h = fnv_str(h, f->map);
		h = fnv_str(h, f->build_id);
	}
	return h;
}

/* One array member of a stacks row: `which` 0 function, 1 file, 2 line,
 * 3 mapping, 4 build id. */
static int stack_array(struct build *bd, const char *name, int which)
{
	struct fr_export_text *t = &bd->b->stacks;
	int ret = text_printf(t, ",\"%s\":[", name);

	for (size_t i = 0; ret == 0 && i < bd->nframes; i++) {
		const struct frame *f = &bd->frames[i];

		if (i)
			ret = text_put(t, ",", 1);
		if (ret)
			break;
		switch (which) {
		case 0: ret = text_json_str(t, f->fn); break;
		case 1: ret = text_json_str(t, f->file); break;
		case 2:
			ret = text_printf(t, "%" PRIu32, (uint32_t)(f->line > 0 ? f->line : 0));
			break;
		case 3: ret = text_json_str(t, f->map); break;
		default: ret = text_json_str(t, f->build_id); break;
		}
	}
	return ret ? ret : text_put(t, "]", 1);
}

/* A stacks row for `h` unless shipped before or already in this batch. */
static int add_stack(struct build *bd, uint64_t h)
{
	static const char *const names[] = {"function", "file", "line", "mapping", "build_id"};
	struct fr_export_batch *b = bd->b;
	uint64_t *n;
	int ret;

	if (seen_has(bd->seen, h) || seen_has(bd->local, h))
		return 0;
	seen_add(bd->local, h);
	n = realloc(b->new_hashes, (b->nnew + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	b->new_hashes = n;
	b->new_hashes[b->nnew++] = h;
	ret = text_printf(&b->stacks, "{\"time\":%" PRId64 ",\"stack_hash\":%" PRIu64, bd->req->t0,
			  h);
	for (int i = 0; ret == 0 && i < 5; i++)
		ret = stack_array(bd, names[i], i);
	if (ret == 0)
		ret = text_put(&b->stacks, "}\n", 2);
	b->nstacks++;
	return ret;
}

static int cmp_label(const void *a, const void *b)
{
	const struct fr_profile_label *x = *(const struct fr_profile_label *const *)a;
	const struct fr_profile_label *y = *(const struct fr_profile_label *const *)b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->str, y->str);
}

/* The key members of sample `s`'s row: stack, pid, comm, the other string
 * labels (cgroup, application labels) sorted by key. A label whose string
 * is empty counts as none, as in pprof, where it has no value. */
static int row_key(struct build *bd, const struct fr_profile_sample *s, uint64_t h)
{
	const struct fr_profile_label *lab[64];
	const char *comm = "";
	size_t nlab = 0;
	int64_t pid = 0;
	int ret;

	for (size_t i = 0; i < s->nlabels; i++) {
		const struct fr_profile_label *l = &s->labels[i];
		const char *str = l->str && l->str[0] ? l->str : NULL;

		if (strcmp(l->key, "pid") == 0)
			pid = str ? 0 : l->num;
		else if (strcmp(l->key, "comm") == 0 && str)
			comm = str;
		else if (str && strcmp(l->key, "tid") && strcmp(l->key, "thread") &&
			 strcmp(l->key, "cpu") && nlab < 64)
			lab[nlab++] = l;
	}
	qsort(lab, nlab, sizeof(lab[0]), cmp_label);
	bd->key.len = 0;
	ret = text_printf(&bd->key, "\"stack_hash\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"comm\":", h,
			  (uint32_t)pid);
	if (ret == 0)
		ret = text_json_str(&bd->key, comm);
	for (int k = 0; k < 2 && ret == 0; k++) {
		ret = text_printf(&bd->key, k ? "],\"label_value\":[" : ",\"label_key\":[");
		for (size_t i = 0; ret == 0 && i < nlab; i++) {
			if (i)
				ret = text_put(&bd->key, ",", 1);
			if (ret == 0)
				ret = text_json_str(&bd->key, k ? lab[i]->str : lab[i]->key);
		}
	}
	return ret ? ret : text_put(&bd->key, "]", 1);
}

static int push_row(struct build *bd, uint64_t value, uint64_t count)
{
	struct row *r;

	if (FR_GROW(bd->rows, &bd->caprows, bd->nrows + 1, 256) < 0)
		return -ENOMEM;
	r = &bd->rows[bd->nrows];
	r->key = strdup(bd->key.p);
	if (!r->key)
		return -ENOMEM;
	r->value = value;
	r->count = count;
	bd->nrows++;
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

/* The folded rows of one event, written to the samples text. */
static int emit_rows(struct build *bd, const char *event)
{
	struct fr_export_batch *b = bd->b;
	size_t i = 0, j;
	int ret = 0;

	if (bd->nrows)
		qsort(bd->rows, bd->nrows, sizeof(*bd->rows), cmp_row);
	for (; ret == 0 && i < bd->nrows; i = j) {
		uint64_t v = 0, c = 0;

		for (j = i; j < bd->nrows && strcmp(bd->rows[j].key, bd->rows[i].key) == 0; j++) {
			v += bd->rows[j].value;
			c += bd->rows[j].count;
		}
		b->samples_kept += c;
		if (b->rows >= FR_EXPORT_MAX_ROWS) {
			b->rows_dropped++;
			continue;
		}
		ret = text_printf(&b->samples, "{\"time\":%" PRId64 ",\"host\":", bd->req->t0);
		if (ret == 0)
			ret = text_json_str(&b->samples, bd->req->host);
		if (ret == 0)
			ret = text_printf(&b->samples, ",\"event\":\"%s\",", event);
		if (ret == 0)
			ret = text_put(&b->samples, bd->rows[i].key, strlen(bd->rows[i].key));
		if (ret == 0)
			ret = text_printf(&b->samples,
					  ",\"value\":%" PRIu64 ",\"count\":%" PRIu64
					  ",\"batch_id\":%" PRIu64 "}\n",
					  v, c, b->batch_id);
		b->rows++;
	}
	for (i = 0; i < bd->nrows; i++)
		free(bd->rows[i].key);
	bd->nrows = 0;
	return ret;
}

/* Folds the samples of profile `p` (one event) into rows. */
static int fold_profile(struct build *bd, const struct fr_profile *p, const char *event)
{
	struct fr_profile_sample s;
	int ret = 0;

	for (size_t i = 0; ret == 0 && i < fr_profile_nsamples(p); i++) {
		uint64_t h;

		fr_profile_sample(p, i, &s);
		ret = collect_frames(bd, p, &s);
		if (ret)
			break;
		h = stack_hash(bd);
		ret = add_stack(bd, h);
		if (ret == 0)
			ret = row_key(bd, &s, h);
		if (ret == 0)
			ret = push_row(bd, (uint64_t)s.values[0], s.count);
	}
	return ret ? ret : emit_rows(bd, event);
}

/* The profile of one event of the interval, built and folded. */
static int build_event(struct fr_ring *ring, struct build *bd, uint32_t event, char *err,
		       size_t errlen)
{
	const struct fr_export_req *req = bd->req;
	struct fr_profile_request pr = {
		.t0 = req->t0,
		.t1 = req->t1,
		.nevents = 1,
		.events = {event},
		.hz = req->hz,
		.kallsyms = req->kallsyms,
		.symbol_cache = req->symbol_cache,
		.debug_dirs = req->debug_dirs,
		.ndebug_dirs = req->ndebug_dirs,
		.format = FR_PROFILE_PPROF,
		.cache_bytes = req->cache_bytes,
		.stop = req->stop,
		.stop_arg = req->stop_arg,
		.version = "export",
	};
	struct fr_profile_result res;
	struct fr_profile *p = NULL;
	char name[FR_EVENT_NAME_MAX];
	int ret;

	ret = fr_profile_build(ring, &pr, &p, &res, err, errlen);
	if (ret == 0) {
		bd->b->chunks_skipped += res.chunks_skipped;
		if (!bd->b->covered_t0 || res.covered_t0 < bd->b->covered_t0)
			bd->b->covered_t0 = res.covered_t0;
		ret = fold_profile(bd, p, fr_event_format(event, name, sizeof(name)));
	}
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "export batch: %s", strerror(-ret));
	fr_profile_free(p);
	return ret;
}

int fr_export_batch_build(struct fr_ring *ring, const struct fr_export_req *req,
			  struct fr_export_seen *seen, struct fr_export_batch *b, char *err,
			  size_t errlen)
{
	struct build bd = {.req = req, .seen = seen, .b = b};
	uint32_t nev = req->nevents ? req->nevents : 1;
	int ret = 0;

	memset(b, 0, sizeof(*b));
	err[0] = '\0';
	b->batch_id = fr_export_batch_id(req->host, req->t0, req->t1 - req->t0);
	/* A new day: every stack is shipped again (see the header). */
	if (seen->day != req->t0 / DAY_NS) {
		seen_clear(seen);
		seen->day = req->t0 / DAY_NS;
	}
	bd.local = fr_export_seen_new(4096);
	if (!bd.local)
		return -ENOMEM;
	/* alloc ships as any event (its rows' value: the bytes allocated, as
	 * estimated). heap does not: what is in use at an interval's end is
	 * a level, and rows that fleet queries add up over time would mean
	 * nothing. */
	for (uint32_t e = 0; ret == 0 && e < nev; e++)
		if (!req->nevents || req->events[e] != FR_EVENT_HEAP)
			ret = build_event(ring, &bd, req->nevents ? req->events[e] : FR_EVENT_CPU,
					  err, errlen);
	fr_export_seen_free(bd.local);
	for (size_t i = 0; i < bd.nrows; i++)
		free(bd.rows[i].key);
	free(bd.frames);
	free(bd.rows);
	free(bd.key.p);
	if (ret < 0)
		fr_export_batch_fini(b);
	return ret;
}

void fr_export_batch_shipped(const struct fr_export_batch *b, struct fr_export_seen *seen)
{
	for (uint32_t i = 0; i < b->nnew; i++)
		seen_add(seen, b->new_hashes[i]);
}

void fr_export_batch_fini(struct fr_export_batch *b)
{
	free(b->stacks.p);
	free(b->samples.p);
	free(b->new_hashes);
	memset(b, 0, sizeof(*b));
}

/* POSTs `body` to `url` with `query` (already URL-encoded) in its query
 * string, gzip'ed on the wire. */
static int post(struct fr_http *h, const char *url, const char *query,
		const struct fr_export_text *body, struct fr_export_text *answer, char *err,
		size_t errlen)
{
	char u[2048];
	long status;

	if ((size_t)snprintf(u, sizeof(u), "%s/?enable_http_compression=1&query=%s", url, query) >=
	    sizeof(u)) {
		snprintf(err, errlen, "URL too long: %s", url);
		return -ENAMETOOLONG;
	}
	return fr_http_request(h, u, body ? body->p : "", body ? body->len : 0, body != NULL,
			       answer ? sink_text : NULL, answer, &status, err, errlen);
}

static int insert(struct fr_http *h, const char *url, const char *db, const char *table,
		  const struct fr_export_text *rows, char *err, size_t errlen)
{
	char sql[256], q[512] = "";

	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT JSONEachRow", db, table);
	if (fr_http_urlencode(q, sizeof(q), sql) < 0)
		return -ENAMETOOLONG;
	return post(h, url, q, rows, NULL, err, errlen);
}

int fr_export_batch_ship(struct fr_http *h, const char *url, const char *db, const char *host,
			 int64_t t0, struct fr_export_batch *b, struct fr_export_seen *seen,
			 int *duplicate, char *err, size_t errlen)
{
	struct fr_export_text ans = {0}, sql = {0};
	char q[2048] = "";
	int ret = 0;

	*duplicate = 0;
	if (b->stacks.len)
		ret = insert(h, url, db, FR_CH_STACKS, &b->stacks, err, errlen);
	if (ret < 0)
		return ret;
	fr_export_batch_shipped(b, seen);
	if (!b->rows)
		return 0;
	ret = text_printf(&sql,
			  "SELECT count() FROM %s." FR_CH_SAMPLES " WHERE time = %" PRId64
			  " AND batch_id = %" PRIu64 " AND host = ",
			  db, t0, b->batch_id);
	/* The host as a ClickHouse string literal: quotes and backslashes
	 * escaped, nothing else is special there. */
	if (ret == 0)
		ret = text_put(&sql, "'", 1);
	for (const char *p = host; ret == 0 && *p; p++) {
		if (*p == '\'' || *p == '\\')
			ret = text_put(&sql, "\\", 1);
		if (ret == 0)
			ret = text_put(&sql, p, 1);
	}
	if (ret == 0)
		ret = text_put(&sql, "'", 1);
	if (ret == 0)
		ret = fr_http_urlencode(q, sizeof(q), sql.p) < 0 ? -ENAMETOOLONG : 0;
	if (ret == 0)
		ret = post(h, url, q, NULL, &ans, err, errlen);
	if (ret == 0 && ans.len && strtoull(ans.p, NULL, 10) > 0)
		*duplicate = 1;
	else if (ret == 0)
		ret = insert(h, url, db, FR_CH_SAMPLES, &b->samples, err, errlen);
	free(ans.p);
	free(sql.p);
	return ret;
}
