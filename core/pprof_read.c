/* Bounds-checked protobuf reader for the pprof subset in pprof_read.h.
 *
 * One pass over the message collects raw ids and string indices into
 * growable arrays; a second step sorts locations and functions by id and
 * rewrites every reference into an array index, rejecting anything that
 * does not resolve. Nothing is read past `end`: each length is compared
 * with the bytes left before it is used.
 */
#include "core/pprof_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/le.h"

struct pb {
	const unsigned char *p;
	const unsigned char *end;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	return fr_varint_get(&b->p, b->end, v);
}

/* Reads a tag; field 0 and the group wire types (3, 4) are rejected. */
static int pb_tag(struct pb *b, uint32_t *field, int *wt)
{
	uint64_t t;

	if (pb_varint(b, &t) < 0 || (t >> 3) == 0 || (t >> 3) > UINT32_MAX)
		return -EBADMSG;
	*field = (uint32_t)(t >> 3);
	*wt = (int)(t & 7);
	return *wt == 3 || *wt == 4 || *wt > 5 ? -EBADMSG : 0;
}

/* Reads a length-delimited payload into `sub`. */
static int pb_bytes(struct pb *b, struct pb *sub)
{
	uint64_t n;

	if (pb_varint(b, &n) < 0 || n > (uint64_t)(b->end - b->p))
		return -EBADMSG;
	sub->p = b->p;
	sub->end = b->p + n;
	b->p += n;
	return 0;
}

static int pb_skip(struct pb *b, int wt)
{
	struct pb sub;
	uint64_t v;
	size_t n;

	switch (wt) {
	case 0: return pb_varint(b, &v);
	case 2: return pb_bytes(b, &sub);
	case 1: n = 8; break;
	case 5: n = 4; break;
	default: return -EBADMSG;
	}
	if (n > (size_t)(b->end - b->p))
		return -EBADMSG;
	b->p += n;
	return 0;
}

/* A growable array of fixed-size elements. */
struct vec {
	void *a;
	size_t n, cap;
};

static void *vec_push(struct vec *v, size_t size)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		void *a;

		if (cap > SIZE_MAX / size)
			return NULL;
		a = realloc(v->a, cap * size);
		if (!a)
			return NULL;
		v->a = a;
		v->cap = cap;
	}
	return (char *)v->a + v->n++ * size;
}

static int vec_push_u64(struct vec *v, uint64_t x)
{
	uint64_t *slot = vec_push(v, sizeof(x));

	if (!slot)
		return -ENOMEM;
	*slot = x;
	return 0;
}

/* Appends one (wire type 0) or a packed run (wire type 2) of varints. */
static int read_repeated(struct pb *b, int wt, struct vec *v)
{
	struct pb sub;
	uint64_t x;
	int ret;

	if (wt == 0) {
		if (pb_varint(b, &x) < 0)
			return -EBADMSG;
		return vec_push_u64(v, x);
	}
	if (wt != 2 || pb_bytes(b, &sub) < 0)
		return -EBADMSG;
	while (sub.p < sub.end) {
		if (pb_varint(&sub, &x) < 0)
			return -EBADMSG;
		if ((ret = vec_push_u64(v, x)) < 0)
			return ret;
	}
	return 0;
}

/* Reads a varint field, rejecting other wire types. */
static int read_u64(struct pb *b, int wt, uint64_t *v)
{
	return wt == 0 ? pb_varint(b, v) : -EBADMSG;
}

struct reader {
	struct vec strings;   /* char * */
	struct vec types;     /* uint64_t pairs: type, unit string index */
	struct vec samples;   /* struct fr_pprof_rsample */
	struct vec locs;      /* uint64_t location ids, then indices */
	struct vec values;    /* int64_t as uint64_t */
	struct vec locations; /* struct fr_pprof_rlocation */
	struct vec funcs;     /* uint64_t function ids, then indices */
	struct vec functions; /* struct fr_pprof_rfunction */
	struct vec names;     /* uint64_t name string index per function */
	int64_t duration;
	uint64_t default_type; /* string index; 0: none */
};

static int read_sample(struct reader *r, struct pb *b)
{
	struct fr_pprof_rsample *s = vec_push(&r->samples, sizeof(*s));
	uint32_t field;
	int wt, ret;

	if (!s)
		return -ENOMEM;
	s->loc = r->locs.n;
	s->val = r->values.n;
	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		if (field == 1)
			ret = read_repeated(b, wt, &r->locs);
		else if (field == 2)
			ret = read_repeated(b, wt, &r->values);
		else
			ret = pb_skip(b, wt);
		if (ret < 0)
			return ret;
	}
	/* vec_push may have moved the array: index it again */
	s = (struct fr_pprof_rsample *)r->samples.a + r->samples.n - 1;
	s->nloc = r->locs.n - s->loc;
	return 0;
}

static int read_line(struct reader *r, struct pb *b)
{
	uint64_t id = 0;
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		ret = field == 1 ? read_u64(b, wt, &id) : pb_skip(b, wt);
		if (ret < 0)
			return ret;
	}
	return id ? vec_push_u64(&r->funcs, id) : 0;
}

static int read_location(struct reader *r, struct pb *b)
{
	struct fr_pprof_rlocation *l;
	size_t first = r->funcs.n;
	uint64_t id = 0, address = 0;
	struct pb sub;
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		if (field == 1)
			ret = read_u64(b, wt, &id);
		else if (field == 3)
			ret = read_u64(b, wt, &address);
		else if (field == 4)
			ret = wt == 2 && pb_bytes(b, &sub) == 0 ? read_line(r, &sub) : -EBADMSG;
		else
			ret = pb_skip(b, wt);
		if (ret < 0)
			return ret;
	}
	if (!id)
		return -EBADMSG;
	l = vec_push(&r->locations, sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (struct fr_pprof_rlocation){.id = id, .address = address, .line = first,
					 .nline = r->funcs.n - first};
	return 0;
}

/* Function and ValueType both keep what this reader needs in their
 * fields 1 and 2 (id and name; type and unit). */
static int read_fields_1_2(struct pb *b, uint64_t *one, uint64_t *two)
{
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		if (field == 1)
			ret = read_u64(b, wt, one);
		else if (field == 2)
			ret = read_u64(b, wt, two);
		else
			ret = pb_skip(b, wt);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int read_function(struct reader *r, struct pb *b)
{
	struct fr_pprof_rfunction *f;
	uint64_t id = 0, name = 0;
	int ret = read_fields_1_2(b, &id, &name);

	if (ret < 0)
		return ret;
	if (!id)
		return -EBADMSG;
	f = vec_push(&r->functions, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->id = id;
	f->name = NULL;
	return vec_push_u64(&r->names, name);
}

static int read_value_type(struct reader *r, struct pb *b)
{
	uint64_t type = 0, unit = 0;
	int ret = read_fields_1_2(b, &type, &unit);

	if (ret < 0 || (ret = vec_push_u64(&r->types, type)) < 0)
		return ret;
	return vec_push_u64(&r->types, unit);
}

static int read_string(struct reader *r, struct pb *b)
{
	size_t n = (size_t)(b->end - b->p);
	char **slot, *s = malloc(n + 1);

	if (!s)
		return -ENOMEM;
	memcpy(s, b->p, n);
	s[n] = '\0';
	slot = vec_push(&r->strings, sizeof(*slot));
	if (!slot) {
		free(s);
		return -ENOMEM;
	}
	*slot = s;
	return 0;
}

static int read_profile(struct reader *r, struct pb *b)
{
	struct pb sub;
	uint64_t v = 0;
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		switch (field) {
		case 1: case 2: case 4: case 5: case 6:
			if (wt != 2 || pb_bytes(b, &sub) < 0)
				return -EBADMSG;
			if (field == 1)
				ret = read_value_type(r, &sub);
			else if (field == 2)
				ret = read_sample(r, &sub);
			else if (field == 4)
				ret = read_location(r, &sub);
			else if (field == 5)
				ret = read_function(r, &sub);
			else
				ret = read_string(r, &sub);
			break;
		case 10:
			ret = read_u64(b, wt, &v);
			r->duration = (int64_t)v;
			break;
		case 14:
			ret = read_u64(b, wt, &v);
			r->default_type = v;
			break;
		default:
			ret = pb_skip(b, wt);
			break;
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int cmp_loc(const void *a, const void *b)
{
	uint64_t x = ((const struct fr_pprof_rlocation *)a)->id;
	uint64_t y = ((const struct fr_pprof_rlocation *)b)->id;

	return x < y ? -1 : x > y;
}

static int cmp_func(const void *a, const void *b)
{
	uint64_t x = ((const struct fr_pprof_rfunction *)a)->id;
	uint64_t y = ((const struct fr_pprof_rfunction *)b)->id;

	return x < y ? -1 : x > y;
}

/* Index of the location with `id`, or -1. The array is sorted by id. */
static ssize_t find_loc(const struct fr_pprof_rlocation *a, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].id == id)
			return (ssize_t)mid;
		if (a[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static ssize_t find_func(const struct fr_pprof_rfunction *a, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].id == id)
			return (ssize_t)mid;
		if (a[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Turns ids and string indices into array indices and pointers. */
static int resolve(struct reader *r, struct fr_pprof_data *d)
{
	struct fr_pprof_rlocation *locs = r->locations.a;
	struct fr_pprof_rfunction *fns = r->functions.a;
	uint64_t *names = r->names.a, *types = r->types.a;
	uint64_t *sl = r->locs.a, *lf = r->funcs.a;
	char **strings = r->strings.a;
	size_t ns = r->strings.n;

	/* names[] follows functions[] by position: attach names before sorting */
	for (size_t i = 0; i < r->functions.n; i++) {
		if (names[i] >= ns)
			return -EBADMSG;
		fns[i].name = strings[names[i]];
	}
	if (r->locations.n)
		qsort(locs, r->locations.n, sizeof(*locs), cmp_loc);
	if (r->functions.n)
		qsort(fns, r->functions.n, sizeof(*fns), cmp_func);
	for (size_t i = 1; i < r->locations.n; i++)
		if (locs[i].id == locs[i - 1].id)
			return -EBADMSG;
	for (size_t i = 1; i < r->functions.n; i++)
		if (fns[i].id == fns[i - 1].id)
			return -EBADMSG;
	for (size_t i = 0; i < r->locs.n; i++) {
		ssize_t k = find_loc(locs, r->locations.n, sl[i]);

		if (k < 0)
			return -EBADMSG;
		sl[i] = (uint64_t)k;
	}
	for (size_t i = 0; i < r->funcs.n; i++) {
		ssize_t k = find_func(fns, r->functions.n, lf[i]);

		if (k < 0)
			return -EBADMSG;
		lf[i] = (uint64_t)k;
	}
	d->ntypes = r->types.n / 2;
	if (d->ntypes) {
		d->types = calloc(d->ntypes, sizeof(*d->types));
		if (!d->types)
			return -ENOMEM;
	}
	for (size_t i = 0; i < d->ntypes; i++) {
		if (types[2 * i] >= ns || types[2 * i + 1] >= ns)
			return -EBADMSG;
		d->types[i].type = strings[types[2 * i]];
		d->types[i].unit = strings[types[2 * i + 1]];
	}
	/* sample_type may follow the samples, so value counts are checked here */
	for (size_t i = 0; i < r->samples.n; i++) {
		const struct fr_pprof_rsample *s = (const struct fr_pprof_rsample *)r->samples.a + i;
		size_t next = i + 1 < r->samples.n ?
			((const struct fr_pprof_rsample *)r->samples.a)[i + 1].val : r->values.n;

		if (next - s->val != d->ntypes)
			return -EBADMSG;
	}
	return 0;
}

static void reader_fini(struct reader *r)
{
	for (size_t i = 0; i < r->strings.n; i++)
		free(((char **)r->strings.a)[i]);
	free(r->strings.a);
	free(r->types.a);
	free(r->samples.a);
	free(r->locs.a);
	free(r->values.a);
	free(r->locations.a);
	free(r->funcs.a);
	free(r->functions.a);
	free(r->names.a);
}

int fr_pprof_read(const void *buf, size_t len, struct fr_pprof_data **out)
{
	struct reader r = {0};
	struct pb b = {.p = buf, .end = (const unsigned char *)buf + len};
	struct fr_pprof_data *d;
	int ret;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = read_profile(&r, &b);
	if (ret == 0)
		ret = resolve(&r, d);
	if (ret < 0) {
		free(d->types);
		free(d);
		reader_fini(&r);
		return ret;
	}
	d->nstrings = r.strings.n;
	d->strings = r.strings.a;
	d->nsamples = r.samples.n;
	d->samples = r.samples.a;
	d->sample_locs = r.locs.a;
	d->values = r.values.a;
	d->nlocations = r.locations.n;
	d->locations = r.locations.a;
	d->line_funcs = r.funcs.a;
	d->nfunctions = r.functions.n;
	d->functions = r.functions.a;
	d->duration_nanos = r.duration;
	d->default_type = -1;
	if (r.default_type && r.default_type < r.strings.n) {
		const char *name = ((char **)r.strings.a)[r.default_type];

		for (size_t i = 0; i < d->ntypes; i++)
			if (strcmp(d->types[i].type, name) == 0)
				d->default_type = (ssize_t)i;
	}
	free(r.types.a);
	free(r.names.a);
	*out = d;
	return 0;
}

void fr_pprof_data_free(struct fr_pprof_data *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i]);
	free(d->strings);
	free(d->types);
	free(d->samples);
	free(d->sample_locs);
	free(d->values);
	free(d->locations);
	free(d->line_funcs);
	free(d->functions);
	free(d);
}
