/* Reading a profile back for the profile tests with fr_pprof_read(), laid
 * out as `go tool pprof -raw` prints it; see fixture.h. */
#include "tests/unit/fixture.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/compress.h"

/* Appends one label to `s` as `go tool pprof -raw` prints it. */
static void label_append(const struct fr_pprof_rlabel *l, struct rsample *s)
{
	size_t n = strlen(s->labels);

	if (l->str)
		snprintf(s->labels + n, sizeof(s->labels) - n, "%s:[%s] ", l->key, l->str);
	else if (l->num_unit)
		snprintf(s->labels + n, sizeof(s->labels) - n, "%s:[%" PRId64 " %s] ", l->key,
			 l->num, l->num_unit);
	else
		snprintf(s->labels + n, sizeof(s->labels) - n, "%s:[%" PRId64 "] ", l->key, l->num);
}

/* Comments, period type, period and times into `head`; mapping lines
 * ("ID: 0xSTART/0xLIMIT/0xOFFSET FILE BUILDID") into `maps`. */
static void print_header(struct raw *r, FILE *head, FILE *maps)
{
	const struct fr_pprof_data *d = r->d;

	for (size_t i = 0; i < d->nmappings; i++) {
		const struct fr_pprof_rmapping *m = &d->mappings[i];

		fprintf(maps, "%" PRIu64 ": 0x%" PRIx64 "/0x%" PRIx64 "/0x%" PRIx64 " %s %s\n",
			m->id, m->memory_start, m->memory_limit, m->file_offset, m->filename,
			m->build_id);
	}
	for (size_t i = 0; i < d->ncomments; i++)
		fprintf(head, "Comment: %s\n", d->comments[i]);
	if (d->period_type.type)
		fprintf(head, "PeriodType: %s %s\n", d->period_type.type, d->period_type.unit);
	fprintf(head, "Period: %" PRId64 "\nTime: %" PRId64 "\nDuration: %" PRId64 "\n", r->period,
		r->time_ns, r->duration_ns);
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
		for (size_t k = 0; k < ds->nlabel; k++)
			label_append(&d->labels[ds->label + k], s);
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
	r->period = r->d->period;
	r->time_ns = r->d->time_nanos;
	r->duration_ns = r->d->duration_nanos;
	fh = open_memstream(&head, &hlen);
	fm = open_memstream(&maps, &mlen);
	if (!fh || !fm || read_samples(r) != 0) {
		fprintf(stderr, "%s: more sample types or frames than the tests expect\n", file);
		goto err;
	}
	print_header(r, fh, fm);
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
		      "%s: sample %d values [%" PRId64 ", %" PRId64 "], want [n, n*%" PRId64 "]",
		      what, i, r->s[i].v[0], r->s[i].v[1], period);
}

void dump_on_failure(const struct raw *r, int before)
{
	if (failures > before && r->text)
		fprintf(stderr, "---- pprof -raw ----\n%s--------\n", r->text);
}

int raw_read(struct raw *r, const struct out *o, const char *what)
{
	if (raw_parse(r, o->path) == 0)
		return 0;
	CHECK(0, "cannot read %s", what);
	return -1;
}

void raw_done(struct raw *r, int before)
{
	dump_on_failure(r, before);
	raw_free(r);
}

/* time_nanos and duration_nanos of the profile in `o`. */
int profile_times(const struct out *o, int64_t *time_ns, int64_t *dur_ns)
{
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t len = 0;
	int ret;

	*time_ns = *dur_ns = 0;
	if (fr_gunzip(o->buf, o->len, &raw, &len) != 0)
		return -1;
	ret = fr_pprof_read(raw, len, &d);
	free(raw);
	if (ret < 0)
		return -1;
	*time_ns = d->time_nanos;
	*dur_ns = d->duration_nanos;
	fr_pprof_data_free(d);
	return 0;
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
