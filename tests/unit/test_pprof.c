/* The pprof encoder (core/pprof/pprof.c), its output read back with the
 * project's decoder (core/pprof/pprof_read.c): what was put in comes out,
 * the string table is in order of first use, and output leaves while
 * samples are still being added. A few checks are about the bytes
 * themselves, which a decoder cannot show: each top-level scalar is written
 * once, no field the encoder does not mean to write appears, and a tiny
 * profile is compared byte for byte (packed runs, zero fields left out).
 * tests/unit/test_profile_pprof_compat.c has `go tool pprof` read the same
 * profiles (tests/unit/gopprof.h builds them). */
#include "core/pprof/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof_read.h"
#include "core/util/compress.h"
#include "tests/unit/check.h"
#include "tests/unit/gopprof.h"

/* ---- output sink: a memory copy of the gzip stream ---- */

struct sink {
	unsigned char *buf;
	size_t len;
	size_t cap;
	size_t calls;
	int fail_at; /* fail this call (1-based); 0 never */
};

static int sink_write(void *arg, const void *buf, size_t len)
{
	struct sink *s = arg;

	s->calls++;
	if (s->fail_at && (int)s->calls >= s->fail_at)
		return -EIO;
	if (s->len + len > s->cap) {
		size_t cap = (s->len + len) * 2;
		unsigned char *grown = realloc(s->buf, cap);

		if (!grown)
			return -ENOMEM;
		s->buf = grown;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

/* ---- the bytes: top-level fields only ---- */

static int varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 70 && *p < end; shift += 7) {
		x |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Counts how often each top-level field of profile.proto occurs. The
 * decoder keeps the last of a repeated scalar and skips unknown fields, so
 * only the bytes show that a scalar is written once and that nothing else
 * (drop_frames 7, keep_frames 8, numbers beyond 14) is. Returns 0, or -1
 * on a malformed field or one the encoder should not write. */
static int count_fields(const unsigned char *p, size_t len, size_t count[15])
{
	const unsigned char *end = p + len;
	uint64_t key, v;

	memset(count, 0, 15 * sizeof(*count));
	while (p < end) {
		if (varint(&p, end, &key) < 0 || varint(&p, end, &v) < 0)
			return -1;
		if (key >> 3 == 0 || key >> 3 == 7 || key >> 3 == 8 || key >> 3 > 14)
			return -1;
		if ((key & 7) == 2 && v <= (uint64_t)(end - p))
			p += v;
		else if ((key & 7) != 0)
			return -1;
		count[key >> 3]++;
	}
	return 0;
}

/* ---- reading the output back ---- */

static int str_is(const char *s, const char *want)
{
	return s && strcmp(s, want) == 0;
}

/* Gunzips the sink, checks its size against the encoder's count and
 * decodes it; returns the decoded profile or NULL (a failed CHECK). The raw
 * bytes are left in *raw for the caller to free. */
static struct fr_pprof_data *read_back(const struct sink *s, const struct fr_pprof *p, void **raw,
				       size_t *raw_len)
{
	struct fr_pprof_data *d = NULL;
	int ret;

	*raw = NULL;
	ret = fr_gunzip(s->buf, s->len, raw, raw_len);
	CHECK(ret == 0, "gunzip returned %d", ret);
	if (ret)
		return NULL;
	CHECK(*raw_len == fr_pprof_raw_bytes(p), "raw bytes %" PRIu64 ", stream holds %zu",
	      fr_pprof_raw_bytes(p), *raw_len);
	/* fr_pprof_read also rejects any string index beyond the table and
	 * any dangling location, function or mapping id. */
	ret = fr_pprof_read(*raw, *raw_len, &d);
	CHECK(ret == 0, "the decoder cannot read the profile (%d)", ret);
	return ret ? NULL : d;
}

/* ---- the small, fully checked profile ---- */

static void check_small_ids(const struct fr_test_small_ids *id)
{
	CHECK(id->m_app == 1 && id->m_libc == 2, "mapping ids %" PRIu64 ", %" PRIu64, id->m_app,
	      id->m_libc);
	CHECK(id->f_main == 1 && id->f_work == 2 && id->f_memcpy == 3,
	      "function ids %" PRIu64 " %" PRIu64 " %" PRIu64, id->f_main, id->f_work,
	      id->f_memcpy);
	CHECK(id->f_work2 == id->f_work, "function not interned: %" PRIu64 " vs %" PRIu64,
	      id->f_work2, id->f_work);
	CHECK(id->f_other == 4, "function with another file shares an id");
	CHECK(id->l_main == 1 && id->l_raw == 4, "location ids %" PRIu64 "..%" PRIu64, id->l_main,
	      id->l_raw);
}

/* Each top-level scalar once, the repeated fields as often as added. */
static void check_small_fields(const void *raw, size_t raw_len)
{
	size_t n[15];

	CHECK(count_fields(raw, raw_len, n) == 0, "a top-level field is malformed or unexpected");
	CHECK(n[1] == 2 && n[2] == 3 && n[3] == 2 && n[4] == 4 && n[5] == 4 && n[6] == 19,
	      "fields 1..6 occur %zu %zu %zu %zu %zu %zu times", n[1], n[2], n[3], n[4], n[5],
	      n[6]);
	CHECK(n[9] == 1 && n[10] == 1 && n[11] == 1 && n[12] == 1 && n[13] == 2 && n[14] == 1,
	      "fields 9..14 occur %zu %zu %zu %zu %zu %zu times", n[9], n[10], n[11], n[12], n[13],
	      n[14]);
}

static void check_small_header(const struct fr_pprof_data *d)
{
	int64_t sum[2] = {0, 0};
	size_t nlocs = 0;

	CHECK(d->ntypes == 2, "sample_type count %zu", d->ntypes);
	CHECK(d->nsamples == 3, "sample count %zu", d->nsamples);
	CHECK(d->nmappings == 2, "mapping count %zu", d->nmappings);
	CHECK(d->nlocations == 4, "location count %zu", d->nlocations);
	CHECK(d->nfunctions == 4, "function count %zu (interning)", d->nfunctions);
	CHECK(d->time_nanos == FR_TEST_TIME_NS, "time_nanos");
	CHECK(d->duration_nanos == FR_TEST_DURATION_NS, "duration_nanos");
	CHECK(str_is(d->period_type.type, "cpu") && str_is(d->period_type.unit, "nanoseconds"),
	      "period_type");
	CHECK(d->period == FR_TEST_PERIOD, "period");
	CHECK(d->ncomments == 2 && str_is(d->comments[0], "recorded by flightrec-test") &&
		      str_is(d->comments[1], "second comment line"),
	      "comments");
	CHECK(d->default_type == 1 && str_is(d->types[1].type, "cpu"), "default_sample_type");
	for (size_t i = 0; i < d->nsamples; i++) {
		nlocs += d->samples[i].nloc;
		sum[0] += d->values[d->samples[i].val];
		sum[1] += d->values[d->samples[i].val + 1];
	}
	CHECK(d->nsamples == 3 && nlocs == 6, "samples %zu, location refs %zu", d->nsamples, nlocs);
	CHECK(sum[0] == 9 && sum[1] == 9 * FR_TEST_PERIOD, "value sums %" PRId64 " %" PRId64,
	      sum[0], sum[1]);
}

/* The string table: "" first, then in order of first use, once each; and
 * the labels of the first sample. */
static void check_small_strings(const struct fr_pprof_data *d)
{
	char *const *s = d->strings;
	const struct fr_pprof_rlabel *l = &d->labels[d->samples[0].label];

	CHECK(d->nstrings == 19, "string table has %zu entries, want 19", d->nstrings);
	if (d->nstrings != 19)
		return;
	CHECK(str_is(s[0], ""), "string 0 is not \"\"");
	CHECK(str_is(s[1], "samples") && str_is(s[2], "count") && str_is(s[3], "cpu") &&
		      str_is(s[4], "nanoseconds") && str_is(s[5], "recorded by flightrec-test") &&
		      str_is(s[7], "/usr/bin/frtestapp") && str_is(s[9], "/usr/lib/libc.so.6") &&
		      str_is(s[10], "frtest_main"),
	      "string table order");
	for (size_t i = 0; i < d->nstrings; i++)
		for (size_t j = i + 1; j < d->nstrings; j++)
			CHECK(strcmp(s[i], s[j]) != 0, "strings %zu and %zu are equal", i, j);
	CHECK(d->samples[0].nlabel == 3 && str_is(l[0].key, "thread") &&
		      str_is(l[0].str, "worker-1") && str_is(l[1].key, "bytes") && !l[1].str &&
		      l[1].num == 4096 && str_is(l[2].key, "cpu") && l[2].num == 3,
	      "labels of the first sample");
}

static void test_small(void)
{
	struct sink s = {0};
	struct fr_test_small_ids id;
	struct fr_pprof *p = fr_pprof_new(6, sink_write, &s);
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t raw_len = 0;
	int ret;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	CHECK(fr_pprof_string(p, "") == 0, "\"\" is not index 0");
	CHECK(fr_pprof_string(p, NULL) == 0, "NULL is not index 0");
	fr_test_pprof_small(p, &id);
	check_small_ids(&id);
	CHECK(fr_pprof_string(p, "samples") == 1, "first interned string is not 1");
	CHECK(fr_pprof_string(p, "cpu") == 3, "\"cpu\" is not 3");
	ret = fr_pprof_finish(p);
	CHECK(ret == 0, "finish returned %d", ret);
	CHECK(fr_pprof_finish(p) == 0, "second finish returned an error");

	d = read_back(&s, p, &raw, &raw_len);
	if (d) {
		check_small_fields(raw, raw_len);
		check_small_header(d);
		check_small_strings(d);
	}
	fr_pprof_data_free(d);
	fr_pprof_free(p);
	free(raw);
	free(s.buf);
}

/* ---- the exact bytes of a tiny profile ---- */

/* What a decoder cannot show: location_id and value are packed, a zero
 * inside a packed run is kept, and zero scalars (a location's mapping_id,
 * a numeric label's str) are left out. Worked out by hand from
 * profile.proto; strings are interned on first use. */
static void test_tiny_bytes(void)
{
	static const unsigned char want[] = {
		0x32, 0x00,			    /* string 0 "" */
		0x32, 0x01, 's',  0x32, 0x01, 'c',  /* strings 1, 2 */
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* sample_type {1, 2} */
		0x32, 0x01, 't',  0x32, 0x01, 'u',  /* strings 3, 4 */
		0x0a, 0x04, 0x08, 0x03, 0x10, 0x04, /* sample_type {3, 4} */
		0x22, 0x04, 0x08, 0x01, 0x18, 0x10, /* location {id 1, address 0x10} */
		0x22, 0x04, 0x08, 0x02, 0x18, 0x20, /* location {id 2, address 0x20} */
		0x32, 0x01, 'n',		    /* string 5 */
		0x12, 0x0e,			    /* sample, 14 bytes: */
		0x0a, 0x02, 0x01, 0x02,		    /*   location_id [1, 2] packed */
		0x12, 0x02, 0x03, 0x00,		    /*   value [3, 0] packed */
		0x1a, 0x04, 0x08, 0x05, 0x18, 0x02, /*   label {key 5, num 2} */
	};
	struct fr_pprof_label label = {.key = "n", .num = 2};
	struct sink s = {0};
	struct fr_pprof *p = fr_pprof_new(1, sink_write, &s);
	uint64_t loc[2];
	int64_t v[2] = {3, 0};
	void *raw = NULL;
	size_t raw_len = 0;
	int ret;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "s", "c");
	fr_pprof_sample_type(p, "t", "u");
	loc[0] = fr_pprof_location(p, 0, 0x10, 0);
	loc[1] = fr_pprof_location(p, 0, 0x20, 0);
	fr_pprof_sample(p, loc, 2, v, 2, &label, 1);
	ret = fr_pprof_finish(p);
	CHECK(ret == 0, "finish returned %d", ret);
	ret = fr_gunzip(s.buf, s.len, &raw, &raw_len);
	CHECK(ret == 0, "gunzip returned %d", ret);
	CHECK(ret == 0 && raw_len == sizeof(want) && memcmp(raw, want, sizeof(want)) == 0,
	      "the tiny profile is %zu bytes, not the %zu worked out by hand", raw_len,
	      sizeof(want));
	fr_pprof_free(p);
	free(raw);
	free(s.buf);
}

/* ---- source lines and inline frames ---- */

/* Occurrences of the `n` bytes `b` in the `len` bytes at `p`. */
static size_t count_bytes(const void *p, size_t len, const unsigned char *b, size_t n)
{
	const unsigned char *at = p, *end = at + len;
	size_t count = 0;

	while ((at = memmem(at, (size_t)(end - at), b, n))) {
		count++;
		at++;
	}
	return count;
}

/* A location with an inlined call is one address with two Lines, innermost
 * first, each with its line number; the mapping's has_* flags are written
 * as fields 7 to 10, and only those asked for. */
static void test_inline_lines(void)
{
	struct sink s = {0};
	struct fr_pprof *p = fr_pprof_new(1, sink_write, &s);
	struct fr_pprof_data *d = NULL;
	struct fr_pprof_line lines[2];
	uint64_t m_all, m_fn, loc;
	int64_t v = 1;
	void *raw = NULL;
	size_t raw_len = 0;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "samples", "count");
	m_all = fr_pprof_mapping(p, 0x1000, 0x2000, 0, "/bin/lines", NULL,
				 FR_PPROF_HAS_FUNCTIONS | FR_PPROF_HAS_FILENAMES |
					 FR_PPROF_HAS_LINE_NUMBERS | FR_PPROF_HAS_INLINE_FRAMES);
	m_fn = fr_pprof_mapping(p, 0x3000, 0x4000, 0, "/bin/names", NULL, FR_PPROF_HAS_FUNCTIONS);
	lines[0] = (struct fr_pprof_line){fr_pprof_function(p, "leaf", NULL, "a.c"), 22};
	lines[1] = (struct fr_pprof_line){fr_pprof_function(p, "outer", NULL, "a.c"), 35};
	loc = fr_pprof_location_lines(p, m_all, 0x1010, lines, 2);
	fr_pprof_sample(p, &loc, 1, &v, 1, NULL, 0);
	CHECK(fr_pprof_finish(p) == 0, "finish");
	d = read_back(&s, p, &raw, &raw_len);
	if (d) {
		const struct fr_pprof_rlocation *l = &d->locations[0];
		static const unsigned char flags_all[] = {0x38, 1, 0x40, 1, 0x48, 1, 0x50, 1};
		static const unsigned char has_fn[] = {0x38, 1}, has_files[] = {0x40, 1};
		const unsigned char line_leaf[] = {0x22, 4,
						   0x08, (unsigned char)lines[0].function_id,
						   0x10, 22};
		const unsigned char line_outer[] = {0x22, 4,
						    0x08, (unsigned char)lines[1].function_id,
						    0x10, 35};

		CHECK(d->nlocations == 1 && l->nline == 2, "%zu locations, %zu lines",
		      d->nlocations, d->nlocations ? l->nline : 0);
		CHECK(d->nlocations == 1 && l->nline == 2 &&
			      str_is(d->functions[d->line_funcs[l->line]].name, "leaf") &&
			      str_is(d->functions[d->line_funcs[l->line + 1]].name, "outer"),
		      "lines not innermost first");
		CHECK(memmem(raw, raw_len, flags_all, sizeof(flags_all)), "has_* fields missing");
		CHECK(count_bytes(raw, raw_len, has_fn, 2) == 2 &&
			      count_bytes(raw, raw_len, has_files, 2) == 1,
		      "a mapping with functions alone claims more");
		CHECK(memmem(raw, raw_len, line_leaf, sizeof(line_leaf)) &&
			      memmem(raw, raw_len, line_outer, sizeof(line_outer)),
		      "line numbers missing");
	}
	(void)m_fn;
	fr_pprof_data_free(d);
	fr_pprof_free(p);
	free(raw);
	free(s.buf);
}

/* ---- nothing left for a reader to look up ---- */

/* go tool pprof names the locations of a mapping without has_functions
 * again by opening the file at the mapping's path, which may be a FIFO by
 * the time the profile is read: every mapping says has_functions, whatever
 * the writer asked, and only the line flags it asked for. */
static void test_has_functions_always(void)
{
	struct sink s = {0};
	struct fr_pprof *p = fr_pprof_new(1, sink_write, &s);
	struct fr_pprof_data *d = NULL;
	uint64_t loc[2];
	int64_t v = 1;
	void *raw = NULL;
	size_t raw_len = 0;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "samples", "count");
	loc[0] = fr_pprof_mapping(p, 0x7f0000001000, 0x7f0000009000, 0x1000, "/opt/app/libfoo.so",
				  "abcd", 0);
	loc[1] = fr_pprof_mapping(p, 0x400000, 0x500000, 0, "/bin/lines", NULL,
				  FR_PPROF_HAS_FILENAMES | FR_PPROF_HAS_LINE_NUMBERS);
	loc[0] = fr_pprof_location(p, loc[0], 0x7f0000001a2b,
				   fr_pprof_function(p, "libfoo.so+0x1a2b", NULL, NULL));
	loc[1] = fr_pprof_location(p, loc[1], 0x400010, fr_pprof_function(p, "main", NULL, "m.c"));
	fr_pprof_sample(p, loc, 2, &v, 1, NULL, 0);
	CHECK(fr_pprof_finish(p) == 0, "finish");
	d = read_back(&s, p, &raw, &raw_len);
	CHECK(d && d->nmappings == 2, "%zu mappings", d ? d->nmappings : 0);
	if (d && d->nmappings == 2) {
		const struct fr_pprof_rmapping *m = d->mappings;

		CHECK(m[0].has_functions && !m[0].has_filenames && !m[0].has_line_numbers &&
			      !m[0].has_inline_frames,
		      "a mapping asked for no flag: functions %d files %d lines %d inline %d",
		      m[0].has_functions, m[0].has_filenames, m[0].has_line_numbers,
		      m[0].has_inline_frames);
		CHECK(m[1].has_functions && m[1].has_filenames && m[1].has_line_numbers &&
			      !m[1].has_inline_frames,
		      "a mapping asked for files and lines: functions %d files %d lines %d "
		      "inline %d",
		      m[1].has_functions, m[1].has_filenames, m[1].has_line_numbers,
		      m[1].has_inline_frames);
	}
	fr_pprof_data_free(d);
	fr_pprof_free(p);
	free(raw);
	free(s.buf);
}

/* ---- many samples: streaming, interning at scale ---- */

static void check_big(const struct fr_pprof_data *d, int64_t want_sum)
{
	int64_t sum = 0;
	size_t str_labels = 0;

	CHECK(d->nsamples == FR_TEST_BIG_SAMPLES, "%zu samples", d->nsamples);
	for (size_t i = 0; i < d->nsamples; i++)
		sum += d->values[d->samples[i].val];
	CHECK(sum == want_sum, "sample sum %" PRId64 ", want %" PRId64, sum, want_sum);
	CHECK(d->nfunctions <= FR_TEST_BIG_FUNCS && d->nfunctions == d->nlocations,
	      "%zu functions, %zu locations", d->nfunctions, d->nlocations);
	/* "" + 4 type strings + comment + file + build id + "thread", "tid",
	 * 64 thread names + function names + "big.cc". */
	CHECK(d->nstrings == 1 + 4 + 1 + 2 + 2 + 64 + d->nfunctions + 1,
	      "string table has %zu entries for %zu functions", d->nstrings, d->nfunctions);
	for (size_t i = 0; i < d->nlabels; i++)
		str_labels += d->labels[i].str != NULL;
	CHECK(str_labels == FR_TEST_BIG_SAMPLES, "%zu string labels", str_labels);
}

static void test_big(void)
{
	struct sink s = {0};
	struct fr_pprof *p = fr_pprof_new(1, sink_write, &s);
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t raw_len = 0, before_finish;
	int64_t want_sum;
	int ret;

	CHECK(p, "setup");
	if (!p)
		return;
	want_sum = fr_test_pprof_big(p);
	CHECK(want_sum > 0, "building the profile failed (%" PRId64 ")", want_sum);
	before_finish = s.len;
	ret = fr_pprof_finish(p);
	CHECK(ret == 0, "finish returned %d", ret);
	/* Output leaves while samples are added, not at the end. */
	CHECK(before_finish > s.len / 2 && s.calls > 4,
	      "only %zu of %zu bytes written before finish (%zu sink calls)", before_finish, s.len,
	      s.calls);

	d = read_back(&s, p, &raw, &raw_len);
	if (d)
		check_big(d, want_sum);
	fr_pprof_data_free(d);
	fr_pprof_free(p);
	free(raw);
	free(s.buf);
}

/* A failing sink makes finish fail, with no crash in between. */
static void test_sink_error(void)
{
	struct sink s = {.fail_at = 2};
	struct fr_pprof *p = fr_pprof_new(1, sink_write, &s);
	int64_t v = 1;
	char name[32];
	int ret;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "samples", "count");
	for (int i = 0; i < 100000; i++) {
		uint64_t loc;

		snprintf(name, sizeof(name), "f%d", i);
		loc = fr_pprof_location(p, 0, (uint64_t)i, fr_pprof_function(p, name, NULL, NULL));
		fr_pprof_sample(p, &loc, 1, &v, 1, NULL, 0);
	}
	ret = fr_pprof_finish(p);
	CHECK(ret == -EIO, "finish after a sink error returned %d", ret);
	fr_pprof_free(p);
	fr_pprof_free(NULL);
	free(s.buf);
}

/* A profile nobody finishes is freed without output or leak. */
static void test_unfinished(void)
{
	struct sink s = {0};
	struct fr_pprof *p = fr_pprof_new(6, sink_write, &s);

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_function(p, "f", NULL, NULL);
	fr_pprof_free(p);
	free(s.buf);
}

int main(void)
{
	test_small();
	test_big();
	test_tiny_bytes();
	test_inline_lines();
	test_has_functions_always();
	test_sink_error();
	test_unfinished();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
