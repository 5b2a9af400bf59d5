/* Bounds-checked protobuf reader for the pprof subset in pprof_read.h.
 *
 * One pass over the message collects raw ids and string indices into
 * growable arrays; a second step sorts locations and functions by id and
 * rewrites every reference into an array index, rejecting anything that
 * does not resolve. Nothing is read past `end`: each length is compared
 * with the bytes left before it is used.
 */
#include "core/pprof/pprof_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/util/le.h"

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

/* A label or a mapping as read: string indices not yet resolved. */
struct raw_label {
	uint64_t key, str, num, unit;
};

struct raw_mapping {
	uint64_t id, start, limit, offset, file, build_id;
	uint64_t has[4]; /* functions, filenames, line numbers, inline frames */
};

struct reader {
	struct vec strings;	 /* char * */
	struct vec types;	 /* uint64_t pairs: type, unit string index */
	struct vec samples;	 /* struct fr_pprof_rsample */
	struct vec locs;	 /* uint64_t location ids, then indices */
	struct vec values;	 /* int64_t as uint64_t */
	struct vec labels;	 /* struct raw_label */
	struct vec locations;	 /* struct fr_pprof_rlocation */
	struct vec loc_maps;	 /* uint64_t mapping id per location, read order */
	struct vec funcs;	 /* uint64_t function ids, then indices */
	struct vec functions;	 /* struct fr_pprof_rfunction */
	struct vec names;	 /* uint64_t name string index per function */
	struct vec fnames;	 /* uint64_t filename string index per function */
	struct vec line_nums;	 /* int64_t line number per funcs entry */
	struct vec mappings;	 /* struct raw_mapping */
	struct vec comments;	 /* uint64_t string indices */
	uint64_t period_type[2]; /* type, unit string index */
	int has_period_type;
	int64_t period;
	int64_t time;
	int64_t duration;
	uint64_t default_type; /* string index; 0: none */
};

/* Reads a message of varint fields 1..n into slot[1..n] (slot[0] unused),
 * skipping any other field. */
static int read_fields(struct pb *b, uint64_t *const *slot, uint32_t n)
{
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		ret = field >= 1 && field <= n ? read_u64(b, wt, slot[field]) : pb_skip(b, wt);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int read_label(struct reader *r, struct pb *b)
{
	struct raw_label *l = vec_push(&r->labels, sizeof(*l));

	if (!l)
		return -ENOMEM;
	*l = (struct raw_label){0};
	return read_fields(b, (uint64_t *const[]){NULL, &l->key, &l->str, &l->num, &l->unit}, 4);
}

static int read_sample(struct reader *r, struct pb *b)
{
	struct fr_pprof_rsample *s = vec_push(&r->samples, sizeof(*s));
	uint32_t field;
	int wt, ret;

	if (!s)
		return -ENOMEM;
	s->loc = r->locs.n;
	s->val = r->values.n;
	s->label = r->labels.n;
	while (b->p < b->end) {
		struct pb sub;

		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		if (field == 1)
			ret = read_repeated(b, wt, &r->locs);
		else if (field == 2)
			ret = read_repeated(b, wt, &r->values);
		else if (field == 3)
			ret = wt == 2 && pb_bytes(b, &sub) == 0 ? read_label(r, &sub) : -EBADMSG;
		else
			ret = pb_skip(b, wt);
		if (ret < 0)
			return ret;
	}
	/* vec_push may have moved the array: index it again */
	s = (struct fr_pprof_rsample *)r->samples.a + r->samples.n - 1;
	s->nloc = r->locs.n - s->loc;
	s->nlabel = r->labels.n - s->label;
	return 0;
}

static int read_line(struct reader *r, struct pb *b)
{
	uint64_t id = 0, line = 0;
	int ret = read_fields(b, (uint64_t *const[]){NULL, &id, &line}, 2);

	if (ret < 0 || !id)
		return ret;
	ret = vec_push_u64(&r->funcs, id);
	return ret < 0 ? ret : vec_push_u64(&r->line_nums, line);
}

static int read_location(struct reader *r, struct pb *b)
{
	struct fr_pprof_rlocation *l;
	size_t first = r->funcs.n;
	uint64_t id = 0, mapping = 0, address = 0;
	struct pb sub;
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		if (field == 1)
			ret = read_u64(b, wt, &id);
		else if (field == 2)
			ret = read_u64(b, wt, &mapping);
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
	*l = (struct fr_pprof_rlocation){.id = id,
					 .address = address,
					 .line = first,
					 .nline = r->funcs.n - first,
					 .mapping = -1};
	return vec_push_u64(&r->loc_maps, mapping);
}

static int read_mapping(struct reader *r, struct pb *b)
{
	struct raw_mapping *m = vec_push(&r->mappings, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	*m = (struct raw_mapping){0};
	ret = read_fields(b,
			  (uint64_t *const[]){NULL, &m->id, &m->start, &m->limit, &m->offset,
					      &m->file, &m->build_id, &m->has[0], &m->has[1],
					      &m->has[2], &m->has[3]},
			  10);
	if (ret < 0)
		return ret;
	return m->id ? 0 : -EBADMSG;
}

/* Function and ValueType both keep what this reader needs in their
 * fields 1 and 2 (id and name; type and unit). */
static int read_fields_1_2(struct pb *b, uint64_t *one, uint64_t *two)
{
	return read_fields(b, (uint64_t *const[]){NULL, one, two}, 2);
}

static int read_function(struct reader *r, struct pb *b)
{
	struct fr_pprof_rfunction *f;
	uint64_t id = 0, name = 0, system_name = 0, filename = 0, start_line = 0;
	int ret = read_fields(b,
			      (uint64_t *const[]){NULL, &id, &name, &system_name, &filename,
						  &start_line},
			      5);

	if (ret < 0)
		return ret;
	if (!id)
		return -EBADMSG;
	f = vec_push(&r->functions, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->id = id;
	f->name = NULL;
	f->filename = NULL;
	f->start_line = (int64_t)start_line;
	ret = vec_push_u64(&r->names, name);
	return ret < 0 ? ret : vec_push_u64(&r->fnames, filename);
}

static int read_value_type(struct reader *r, struct pb *b)
{
	uint64_t type = 0, unit = 0;
	int ret = read_fields_1_2(b, &type, &unit);

	if (ret < 0 || (ret = vec_push_u64(&r->types, type)) < 0)
		return ret;
	return vec_push_u64(&r->types, unit);
}

static int read_period_type(struct reader *r, struct pb *b)
{
	r->has_period_type = 1;
	return read_fields_1_2(b, &r->period_type[0], &r->period_type[1]);
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

/* The embedded messages of Profile, by field number. */
static int read_message(struct reader *r, uint32_t field, struct pb *sub)
{
	switch (field) {
	case 1: return read_value_type(r, sub);
	case 2: return read_sample(r, sub);
	case 3: return read_mapping(r, sub);
	case 4: return read_location(r, sub);
	case 5: return read_function(r, sub);
	case 6: return read_string(r, sub);
	default: return read_period_type(r, sub); /* 11 */
	}
}

/* The scalar fields of Profile, by field number. */
static int read_scalar(struct reader *r, uint32_t field, struct pb *b, int wt)
{
	uint64_t v = 0;
	int ret = read_u64(b, wt, &v);

	if (field == 9)
		r->time = (int64_t)v;
	else if (field == 10)
		r->duration = (int64_t)v;
	else if (field == 12)
		r->period = (int64_t)v;
	else
		r->default_type = v; /* 14 */
	return ret;
}

static int read_profile(struct reader *r, struct pb *b)
{
	struct pb sub;
	uint32_t field;
	int wt, ret;

	while (b->p < b->end) {
		if (pb_tag(b, &field, &wt) < 0)
			return -EBADMSG;
		switch (field) {
		case 1:
		case 2:
		case 3:
		case 4:
		case 5:
		case 6:
		case 11:
			if (wt != 2 || pb_bytes(b, &sub) < 0)
				return -EBADMSG;
			ret = read_message(r, field, &sub);
			break;
		case 9:
		case 10:
		case 12:
		case 14: ret = read_scalar(r, field, b, wt); break;
		case 13: ret = read_repeated(b, wt, &r->comments); break;
		default: ret = pb_skip(b, wt); break;
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

/* Index of the element with `id` in an array sorted by id, or -1. Every
 * element type searched here (location, function, map_ref) starts with its
 * uint64_t id. */
static ssize_t find_id(const void *a, size_t n, size_t size, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t x;

		memcpy(&x, (const char *)a + mid * size, sizeof(x));
		if (x == id)
			return (ssize_t)mid;
		if (x < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Mapping ids are looked up in a copy sorted by id, so that mappings keep
 * the order of the message. */
struct map_ref {
	uint64_t id;
	size_t idx;
};

static int cmp_map_ref(const void *a, const void *b)
{
	uint64_t x = ((const struct map_ref *)a)->id;
	uint64_t y = ((const struct map_ref *)b)->id;

	return x < y ? -1 : x > y;
}

/* String `i` of the table into *out; -EBADMSG when out of range. */
static int string_at(const struct reader *r, uint64_t i, const char **out)
{
	if (i >= r->strings.n)
		return -EBADMSG;
	*out = ((char **)r->strings.a)[i];
	return 0;
}

/* Like string_at(), but index 0 (unset) becomes NULL. */
static int string_or_null(const struct reader *r, uint64_t i, const char **out)
{
	*out = NULL;
	return i ? string_at(r, i, out) : 0;
}

/* Builds d->mappings and points each location (still in read order, which
 * loc_maps follows) at its mapping. */
static int resolve_mappings(struct reader *r, struct fr_pprof_data *d)
{
	const struct raw_mapping *raw = r->mappings.a;
	struct fr_pprof_rlocation *locs = r->locations.a;
	const uint64_t *loc_maps = r->loc_maps.a;
	size_t n = r->mappings.n;
	struct map_ref *refs = NULL;
	int ret = -ENOMEM;

	if (n) {
		d->mappings = calloc(n, sizeof(*d->mappings));
		refs = calloc(n, sizeof(*refs));
		if (!d->mappings || !refs)
			goto out;
	}
	d->nmappings = n;
	ret = -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		struct fr_pprof_rmapping *m = &d->mappings[i];

		*m = (struct fr_pprof_rmapping){.id = raw[i].id,
						.memory_start = raw[i].start,
						.memory_limit = raw[i].limit,
						.file_offset = raw[i].offset,
						.has_functions = raw[i].has[0] != 0,
						.has_filenames = raw[i].has[1] != 0,
						.has_line_numbers = raw[i].has[2] != 0,
						.has_inline_frames = raw[i].has[3] != 0};
		if (string_at(r, raw[i].file, &m->filename) < 0 ||
		    string_at(r, raw[i].build_id, &m->build_id) < 0)
			goto out;
		refs[i] = (struct map_ref){.id = raw[i].id, .idx = i};
	}
	if (n)
		qsort(refs, n, sizeof(*refs), cmp_map_ref);
	for (size_t i = 1; i < n; i++)
		if (refs[i].id == refs[i - 1].id)
			goto out;
	for (size_t i = 0; i < r->locations.n; i++) {
		if (!loc_maps[i])
			continue;
		ssize_t k = find_id(refs, n, sizeof(*refs), loc_maps[i]);

		if (k < 0)
			goto out;
		locs[i].mapping = (ssize_t)refs[k].idx;
	}
	ret = 0;
out:
	free(refs);
	return ret;
}

/* Names the functions, sorts locations and functions by id and turns the
 * ids that samples and lines name into indices. */
static int resolve_ids(struct reader *r)
{
	struct fr_pprof_rlocation *locs = r->locations.a;
	struct fr_pprof_rfunction *fns = r->functions.a;
	uint64_t *names = r->names.a, *fnames = r->fnames.a;
	uint64_t *sl = r->locs.a, *lf = r->funcs.a;

	/* names[] follows functions[] by position: attach names before sorting */
	for (size_t i = 0; i < r->functions.n; i++)
		if (string_at(r, names[i], &fns[i].name) < 0 ||
		    string_at(r, fnames[i], &fns[i].filename) < 0)
			return -EBADMSG;
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
		ssize_t k = find_id(locs, r->locations.n, sizeof(*locs), sl[i]);

		if (k < 0)
			return -EBADMSG;
		sl[i] = (uint64_t)k;
	}
	for (size_t i = 0; i < r->funcs.n; i++) {
		ssize_t k = find_id(fns, r->functions.n, sizeof(*fns), lf[i]);

		if (k < 0)
			return -EBADMSG;
		lf[i] = (uint64_t)k;
	}
	return 0;
}

/* Sample types, and each sample's value count checked against them:
 * sample_type may follow the samples, so it cannot be checked earlier. */
static int resolve_types(struct reader *r, struct fr_pprof_data *d)
{
	const struct fr_pprof_rsample *samples = r->samples.a;
	uint64_t *types = r->types.a;

	d->ntypes = r->types.n / 2;
	if (d->ntypes) {
		d->types = calloc(d->ntypes, sizeof(*d->types));
		if (!d->types)
			return -ENOMEM;
	}
	for (size_t i = 0; i < d->ntypes; i++)
		if (string_at(r, types[2 * i], &d->types[i].type) < 0 ||
		    string_at(r, types[2 * i + 1], &d->types[i].unit) < 0)
			return -EBADMSG;
	for (size_t i = 0; i < r->samples.n; i++) {
		size_t next = i + 1 < r->samples.n ? samples[i + 1].val : r->values.n;

		if (next - samples[i].val != d->ntypes)
			return -EBADMSG;
	}
	return 0;
}

static int resolve_labels(struct reader *r, struct fr_pprof_data *d)
{
	const struct raw_label *raw = r->labels.a;

	if (r->labels.n) {
		d->labels = calloc(r->labels.n, sizeof(*d->labels));
		if (!d->labels)
			return -ENOMEM;
	}
	d->nlabels = r->labels.n;
	for (size_t i = 0; i < r->labels.n; i++) {
		struct fr_pprof_rlabel *l = &d->labels[i];

		l->num = (int64_t)raw[i].num;
		if (string_at(r, raw[i].key, &l->key) < 0 ||
		    string_or_null(r, raw[i].str, &l->str) < 0 ||
		    string_or_null(r, raw[i].unit, &l->num_unit) < 0)
			return -EBADMSG;
	}
	return 0;
}

/* Comments and period_type: the string indices of the profile's header. */
static int resolve_header(struct reader *r, struct fr_pprof_data *d)
{
	const uint64_t *comments = r->comments.a;

	if (r->comments.n) {
		d->comments = calloc(r->comments.n, sizeof(*d->comments));
		if (!d->comments)
			return -ENOMEM;
	}
	d->ncomments = r->comments.n;
	for (size_t i = 0; i < r->comments.n; i++)
		if (string_at(r, comments[i], &d->comments[i]) < 0)
			return -EBADMSG;
	if (r->has_period_type && (string_at(r, r->period_type[0], &d->period_type.type) < 0 ||
				   string_at(r, r->period_type[1], &d->period_type.unit) < 0))
		return -EBADMSG;
	return 0;
}

/* Turns ids and string indices into array indices and pointers. Mappings
 * go first: they follow the locations' read order, which sorting loses. */
static int resolve(struct reader *r, struct fr_pprof_data *d)
{
	int ret = resolve_mappings(r, d);

	if (ret == 0)
		ret = resolve_ids(r);
	if (ret == 0)
		ret = resolve_types(r, d);
	if (ret == 0)
		ret = resolve_labels(r, d);
	if (ret == 0)
		ret = resolve_header(r, d);
	return ret;
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
	free(r->labels.a);
	free(r->locations.a);
	free(r->loc_maps.a);
	free(r->funcs.a);
	free(r->functions.a);
	free(r->names.a);
	free(r->fnames.a);
	free(r->line_nums.a);
	free(r->mappings.a);
	free(r->comments.a);
}

/* The arrays resolve() allocates, freed on its failure. */
static void resolved_free(struct fr_pprof_data *d)
{
	free(d->types);
	free(d->labels);
	free(d->mappings);
	free(d->comments);
	free(d);
}

/* The index of default_sample_type among the sample types, or -1. */
static ssize_t default_type(const struct reader *r, const struct fr_pprof_data *d)
{
	const char *name;
	ssize_t found = -1;

	if (!r->default_type || r->default_type >= r->strings.n)
		return -1;
	name = ((char **)r->strings.a)[r->default_type];
	for (size_t i = 0; i < d->ntypes; i++)
		if (strcmp(d->types[i].type, name) == 0)
			found = (ssize_t)i;
	return found;
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
		resolved_free(d);
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
	d->line_nums = r.line_nums.a;
	d->nfunctions = r.functions.n;
	d->functions = r.functions.a;
	d->period = r.period;
	d->time_nanos = r.time;
	d->duration_nanos = r.duration;
	d->default_type = default_type(&r, d);
	free(r.types.a);
	free(r.names.a);
	free(r.fnames.a);
	free(r.labels.a);
	free(r.loc_maps.a);
	free(r.mappings.a);
	free(r.comments.a);
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
	free(d->line_nums);
	free(d->functions);
	free(d->labels);
	free(d->mappings);
	free(d->comments);
	free(d);
}
