/* Reading a profile back for the profile tests: fr_pprof_read() and the
 * few fields it leaves out; see fixture.h. */
#include "tests/unit/fixture.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/compress.h"

/* fr_pprof_read() decodes what a terminal summary needs: samples and their
 * values, locations, functions, sample types. The tests also look at the
 * labels, the period, the comments and the mappings; those few fields are
 * read here, by a walk over the same bytes, and checked as strictly
 * (every string index in range, every length within its message). */

struct pb {
	const unsigned char *p, *end;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p == b->end)
			return -1;
		*v |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, wire type, and its value (varint, fixed) or
 * its bytes in *sub (length-delimited). Returns 0, or -1 when malformed. */
static int pb_next(struct pb *b, uint32_t *field, int *wt, uint64_t *v, struct pb *sub)
{
	uint64_t key;

	if (pb_varint(b, &key) != 0)
		return -1;
	*field = (uint32_t)(key >> 3);
	*wt = (int)(key & 7);
	switch (*wt) {
	case 0:
		return pb_varint(b, v);
	case 1:
	case 5:
		if ((size_t)(b->end - b->p) < (*wt == 1 ? 8u : 4u))
			return -1;
		b->p += *wt == 1 ? 8 : 4;
		return 0;
	case 2:
		if (pb_varint(b, v) != 0 || *v > (uint64_t)(b->end - b->p))
			return -1;
		sub->p = b->p;
		sub->end = b->p + *v;
		b->p += *v;
		return 0;
	default:
		return -1;
	}
}

/* String `i` of the table, or NULL when out of range. */
static const char *str_at(const struct fr_pprof_data *d, uint64_t i)
{
	return i < d->nstrings ? d->strings[i] : NULL;
}

/* Appends one label message (key 1, str 2, num 3, num_unit 4) to `s`. */
static int label_append(const struct fr_pprof_data *d, struct pb m, struct rsample *s)
{
	uint64_t key = 0, str = 0, num = 0, unit = 0, v;
	int has_str = 0, wt;
	uint32_t f;
	struct pb sub;
	size_t n = strlen(s->labels);

	while (m.p < m.end) {
		if (pb_next(&m, &f, &wt, &v, &sub) != 0)
			return -1;
		if (f == 1)
			key = v;
		else if (f == 2)
			str = v, has_str = 1;
		else if (f == 3)
			num = v;
		else if (f == 4)
			unit = v;
	}
	if (!str_at(d, key) || !str_at(d, str) || !str_at(d, unit))
		return -1;
	if (has_str && str)
		snprintf(s->labels + n, sizeof(s->labels) - n, "%s:[%s] ", str_at(d, key),
			 str_at(d, str));
	else if (unit)
		snprintf(s->labels + n, sizeof(s->labels) - n, "%s:[%" PRId64 " %s] ",
			 str_at(d, key), (int64_t)num, str_at(d, unit));
	else
		snprintf(s->labels + n, sizeof(s->labels) - n, "%s:[%" PRId64 "] ",
			 str_at(d, key), (int64_t)num);
	return 0;
}

static int sample_labels(const struct fr_pprof_data *d, struct pb m, struct rsample *s)
{
	uint32_t f;
	int wt;
	uint64_t v;
	struct pb sub;

	while (m.p < m.end) {
		if (pb_next(&m, &f, &wt, &v, &sub) != 0)
			return -1;
		if (f == 3 && wt == 2 && label_append(d, sub, s) != 0)
			return -1;
	}
	return 0;
}

/* "Mappings" lines: "ID: 0xSTART/0xLIMIT/0xOFFSET FILE BUILDID". */
static int mapping_print(const struct fr_pprof_data *d, struct pb m, FILE *f)
{
	uint64_t x[7] = {0}, v;
	uint32_t field;
	int wt;
	struct pb sub;

	while (m.p < m.end) {
		if (pb_next(&m, &field, &wt, &v, &sub) != 0)
			return -1;
		if (field >= 1 && field <= 6 && wt == 0)
			x[field] = v;
	}
	if (!str_at(d, x[5]) || !str_at(d, x[6]))
		return -1;
	fprintf(f, "%" PRIu64 ": 0x%" PRIx64 "/0x%" PRIx64 "/0x%" PRIx64 " %s %s\n", x[1], x[2],
		x[3], x[4], str_at(d, x[5]), str_at(d, x[6]));
	return 0;
}

/* Comment string indices, packed or not, printed as "Comment: TEXT". */
static int comments_print(const struct fr_pprof_data *d, int wt, uint64_t v, struct pb sub,
			  FILE *f)
{
	if (wt == 0) {
		if (!str_at(d, v))
			return -1;
		fprintf(f, "Comment: %s\n", str_at(d, v));
		return 0;
	}
	while (sub.p < sub.end) {
		if (pb_varint(&sub, &v) != 0 || !str_at(d, v))
			return -1;
		fprintf(f, "Comment: %s\n", str_at(d, v));
	}
	return 0;
}

/* The top-level fields fr_pprof_read() skips: labels into r->s, period,
 * time, and comments and mappings printed to `head` and `maps`. */
static int read_extras(struct raw *r, const void *buf, size_t len, FILE *head, FILE *maps)
{
	struct pb b = {buf, (const unsigned char *)buf + len}, sub;
	uint64_t v, ptype[3] = {0};
	int wt, nsample = 0, has_ptype = 0;
	uint32_t f;

	while (b.p < b.end) {
		if (pb_next(&b, &f, &wt, &v, &sub) != 0)
			return -1;
		if (f == 2 && wt == 2) {
			if (nsample >= r->nsamples ||
			    sample_labels(r->d, sub, &r->s[nsample++]) != 0)
				return -1;
		} else if (f == 3 && wt == 2) {
			if (mapping_print(r->d, sub, maps) != 0)
				return -1;
		} else if (f == 9 && wt == 0) {
			r->time_ns = (int64_t)v;
		} else if (f == 11 && wt == 2) {
			has_ptype = 1;
			while (sub.p < sub.end) {
				uint32_t g;
				struct pb unused;

				if (pb_next(&sub, &g, &wt, &v, &unused) != 0)
					return -1;
				if (g == 1 || g == 2)
					ptype[g] = v;
			}
		} else if (f == 12 && wt == 0) {
			r->period = (int64_t)v;
		} else if (f == 13) {
			if (comments_print(r->d, wt, v, sub, head) != 0)
				return -1;
		}
	}
	if (has_ptype) {
		if (!str_at(r->d, ptype[1]) || !str_at(r->d, ptype[2]))
			return -1;
		fprintf(head, "PeriodType: %s %s\n", str_at(r->d, ptype[1]),
			str_at(r->d, ptype[2]));
	}
	fprintf(head, "Period: %" PRId64 "\nTime: %" PRId64 "\nDuration: %" PRId64 "\n",
		r->period, r->time_ns, r->duration_ns);
	return nsample == r->nsamples ? 0 : -1;
}

/* Samples, values and locations from the decoded data. */
static int read_samples(struct raw *r)
{
	const struct fr_pprof_data *d = r->d;
	size_t n = 0;

	for (size_t i = 0; i < d->ntypes; i++)
		n += (size_t)snprintf(r->types + n, n < sizeof(r->types) ? sizeof(r->types) - n : 0,
				      "%s%s/%s%s", i ? " " : "", d->types[i].type, d->types[i].unit,
				      (ssize_t)i == d->default_type ? "[dflt]" : "");
	if (n >= sizeof(r->types) || d->ntypes > MAX_VALUES)
		return -1;
	r->nsamples = (int)d->nsamples;
	r->s = calloc(d->nsamples + 1, sizeof(*r->s));
	r->loc_name = calloc(d->nlocations + 1, sizeof(*r->loc_name));
	if (!r->s || !r->loc_name)
		return -1;
	for (size_t i = 0; i < d->nlocations; i++)
		if (d->locations[i].nline)
			r->loc_name[i + 1] = d->functions[d->line_funcs[d->locations[i].line]].name;
	for (size_t i = 0; i < d->nsamples; i++) {
		const struct fr_pprof_rsample *ds = &d->samples[i];
		struct rsample *s = &r->s[i];

		if (ds->nloc > FR_MAX_FRAMES)
			return -1;
		s->nv = (int)d->ntypes;
		memcpy(s->v, d->values + ds->val, d->ntypes * sizeof(*s->v));
		s->nlocs = (int)ds->nloc;
		for (size_t k = 0; k < ds->nloc; k++)
			s->loc[k] = (uint32_t)d->sample_locs[ds->loc + k] + 1;
	}
	return 0;
}

/* The text of the samples and locations, as `go tool pprof -raw` lays
 * them out. */
static void print_samples(const struct raw *r, FILE *f)
{
	const struct fr_pprof_data *d = r->d;

	fprintf(f, "Samples:\n%s\n", r->types);
	for (int i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->s[i];

		for (int k = 0; k < s->nv; k++)
			fprintf(f, " %10" PRId64, s->v[k]);
		fputc(':', f);
		for (int k = 0; k < s->nlocs; k++)
			fprintf(f, " %" PRIu64, d->locations[s->loc[k] - 1].id);
		fprintf(f, "\n                %s\n", s->labels);
	}
	fprintf(f, "Locations\n");
	for (size_t i = 0; i < d->nlocations; i++) {
		const struct fr_pprof_rlocation *l = &d->locations[i];

		fprintf(f, "%6" PRIu64 ": 0x%" PRIx64, l->id, l->address);
		for (size_t k = 0; k < l->nline; k++)
			fprintf(f, " %s", d->functions[d->line_funcs[l->line + k]].name);
		fputc('\n', f);
	}
}

static int read_file(const char *file, void **buf, size_t *len)
{
	struct stat st;
	int fd = open(file, O_RDONLY | O_CLOEXEC), ret = -1;

	*buf = NULL;
	if (fd < 0 || fstat(fd, &st) != 0)
		goto out;
	*len = (size_t)st.st_size;
	*buf = malloc(*len + 1);
	if (*buf && read(fd, *buf, *len) == (ssize_t)*len)
		ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int raw_parse(struct raw *r, const char *file)
{
	void *gz = NULL, *pb = NULL;
	size_t gz_len = 0, pb_len = 0, hlen = 0, mlen = 0;
	char *head = NULL, *maps = NULL;
	FILE *fh = NULL, *fm = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	if (read_file(file, &gz, &gz_len) != 0 || fr_gunzip(gz, gz_len, &pb, &pb_len) != 0) {
		fprintf(stderr, "%s: cannot read and gunzip\n", file);
		goto err;
	}
	ret = fr_pprof_read(pb, pb_len, &r->d);
	if (ret != 0) {
		fprintf(stderr, "%s: fr_pprof_read: %d\n", file, ret);
		goto err;
	}
	r->duration_ns = r->d->duration_nanos;
	fh = open_memstream(&head, &hlen);
	fm = open_memstream(&maps, &mlen);
	if (!fh || !fm || read_samples(r) != 0 || read_extras(r, pb, pb_len, fh, fm) != 0) {
		fprintf(stderr, "%s: labels, period, comments or mappings do not decode\n", file);
		goto err;
	}
	print_samples(r, fh);
	fclose(fm);
	fm = NULL;
	fprintf(fh, "Mappings\n%s", maps);
	fclose(fh);
	fh = NULL;
	r->text = head;
	head = NULL;
	free(maps);
	free(pb);
	free(gz);
	return 0;
err:
	if (fh)
		fclose(fh);
	if (fm)
		fclose(fm);
	free(head);
	free(maps);
	free(pb);
	free(gz);
	raw_free(r);
	return -1;
}

void raw_free(struct raw *r)
{
	fr_pprof_data_free(r->d);
	free(r->text);
	free(r->s);
	free(r->loc_name);
	memset(r, 0, sizeof(*r));
}

int raw_type_index(const struct raw *r, const char *type)
{
	for (size_t i = 0; i < r->d->ntypes; i++)
		if (strcmp(r->d->types[i].type, type) == 0)
			return (int)i;
	return -1;
}

int sample_has_stack(const struct raw *r, const struct rsample *s, const struct stack *st)
{
	if (s->nlocs != st->nr_frames)
		return 0;
	for (int i = 0; i < s->nlocs; i++) {
		const char *name = s->loc[i] ? r->loc_name[s->loc[i]] : NULL;
		if (!name || strcmp(name, st->names[i]) != 0)
			return 0;
	}
	return 1;
}

/* The sample with stack `st` whose labels contain every string of `want`
 * (NULL-terminated); NULL when there is none. */
const struct rsample *find_sample(const struct raw *r, int st, const char *const *want)
{
	for (int i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->s[i];
		int ok = st < 0 || sample_has_stack(r, s, &stacks[st]);

		for (int j = 0; ok && want[j]; j++)
			ok = strstr(s->labels, want[j]) != NULL;
		if (ok)
			return s;
	}
	return NULL;
}

int64_t raw_total(const struct raw *r)
{
	int64_t n = 0;

	for (int i = 0; i < r->nsamples; i++)
		n += r->s[i].v[0];
	return n;
}

/* Every sample's second value is its count times the period. */
void check_values(const struct raw *r, int64_t period, const char *what)
{
	for (int i = 0; i < r->nsamples; i++)
		CHECK(r->s[i].v[1] == r->s[i].v[0] * period,
		      "%s: sample %d values [%" PRId64 ", %" PRId64 "], want [n, n*%" PRId64 "]", what,
		      i, r->s[i].v[0], r->s[i].v[1], period);
}

void dump_on_failure(const struct raw *r, int before)
{
	if (failures > before && r->text)
		fprintf(stderr, "---- pprof -raw ----\n%s--------\n", r->text);
}

/* time_nanos and duration_nanos straight from the protobuf. */
/* time_nanos and duration_nanos straight from the protobuf. */
int profile_times(const struct out *o, int64_t *time_ns, int64_t *dur_ns)
{
	void *raw = NULL;
	size_t len = 0;
	struct pb b, sub;
	uint32_t f;
	uint64_t v;
	int wt, ret = 0;

	*time_ns = *dur_ns = 0;
	if (fr_gunzip(o->buf, o->len, &raw, &len) != 0)
		return -1;
	b.p = raw;
	b.end = b.p + len;
	while (ret == 0 && b.p < b.end) {
		ret = pb_next(&b, &f, &wt, &v, &sub);
		if (ret == 0 && wt == 0 && f == 9)
			*time_ns = (int64_t)v;
		else if (ret == 0 && wt == 0 && f == 10)
			*dur_ns = (int64_t)v;
	}
	free(raw);
	return ret;
}

const char *label(char *buf, size_t len, const char *key, uint64_t v)
{
	snprintf(buf, len, "%s:[%" PRIu64 "]", key, v);
	return buf;
}

/* The sum of value column `k` over every sample. */
int64_t raw_column(const struct raw *r, int k)
{
	int64_t n = 0;

	for (int i = 0; i < r->nsamples; i++)
		n += r->s[i].v[k];
	return n;
}

/* The row of stack `st` with pid label `pid`, or NULL. */
const struct rsample *find_pid(const struct raw *r, int st, uint32_t pid)
{
	char l1[64];
	const char *want[] = {label(l1, sizeof(l1), "pid", pid), NULL};

	return find_sample(r, st, want);
}
