/* fr_pprof_read(), the project's pprof decoder: what core/pprof/pprof.c writes
 * (labels, mappings, period, times, comments) reads back equal, and a
 * reference that does not resolve (a string index out of range, a location
 * naming an unknown mapping, two mappings with one id) is rejected with
 * -EBADMSG. The encoder's wire format itself is checked in test_pprof.c. */
#include "core/pprof/pprof_read.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/compress.h"
#include "core/pprof/pprof.h"
#include "tests/unit/check.h"

#define PERIOD 10000000LL
#define TIME_NS 1795352700000000000LL
#define DURATION_NS 2500000000LL

/* The encoder's output, kept in memory. */
struct sink {
	unsigned char *buf;
	size_t len;
};

static int sink_write(void *arg, const void *buf, size_t len)
{
	struct sink *s = arg;
	unsigned char *grown = realloc(s->buf, s->len + len);

	if (!grown)
		return -ENOMEM;
	memcpy(grown + s->len, buf, len);
	s->buf = grown;
	s->len += len;
	return 0;
}

/* Two mappings (one without a build id), locations 1 and 2 in the first,
 * 3 in the second and 4 in none; three samples with 3, 1 and 0 labels. */
static void build_small(struct fr_pprof *p)
{
	struct fr_pprof_label labels[3] = {
		{.key = "thread", .str = "worker-1"},
		{.key = "bytes", .num = 4096},
		{.key = "cpu", .num = 3},
	};
	uint64_t m_app, m_libc, stack1[3], stack2[2], stack3[1];
	int64_t v1[2] = {3, 3 * PERIOD}, v2[2] = {5, 5 * PERIOD}, v3[2] = {1, PERIOD};

	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_period(p, "cpu", "nanoseconds", PERIOD);
	fr_pprof_time(p, TIME_NS, DURATION_NS);
	fr_pprof_comment(p, "recorded by flightrec-test");
	fr_pprof_comment(p, "second comment line");
	m_app = fr_pprof_mapping(p, 0x400000, 0x500000, 0, "/usr/bin/frtestapp",
				 "0123456789abcdef0123456789abcdef01234567", 1);
	m_libc = fr_pprof_mapping(p, 0x7f0000000000, 0x7f0000200000, 0x28000, "/usr/lib/libc.so.6",
				  NULL, 1);
	stack2[1] = stack1[2] = fr_pprof_location(p, m_app, 0x401000,
						  fr_pprof_function(p, "frtest_main", NULL, NULL));
	stack2[0] = stack1[1] = fr_pprof_location(p, m_app, 0x402000,
						  fr_pprof_function(p, "frtest_work", NULL, NULL));
	stack1[0] = fr_pprof_location(p, m_libc, 0x7f0000001234,
				      fr_pprof_function(p, "frtest_memcpy", NULL, NULL));
	stack3[0] = fr_pprof_location(p, 0, 0xdeadbeef, 0);
	fr_pprof_sample(p, stack1, 3, v1, 2, labels, 3);
	fr_pprof_sample(p, stack2, 2, v2, 2, labels, 1);
	fr_pprof_sample(p, stack3, 1, v3, 2, NULL, 0);
}

/* ---- fr_pprof_read: everything the encoder writes reads back ---- */

static int str_eq(const char *got, const char *want)
{
	return got && want ? strcmp(got, want) == 0 : got == want;
}

static void check_read_labels(const struct fr_pprof_data *d)
{
	const struct fr_pprof_rsample *s = d->samples;
	const struct fr_pprof_rlabel *l = d->labels + s[0].label;

	CHECK(d->nsamples == 3 && s[0].nlabel == 3 && s[1].nlabel == 1 && s[2].nlabel == 0 &&
		      d->nlabels == 4,
	      "label counts %zu %zu %zu of %zu", s[0].nlabel, s[1].nlabel, s[2].nlabel, d->nlabels);
	if (d->nsamples != 3 || s[0].nlabel != 3 || s[1].nlabel != 1)
		return;
	CHECK(str_eq(l[0].key, "thread") && str_eq(l[0].str, "worker-1") && !l[0].num_unit,
	      "label 0: %s %s", l[0].key, l[0].str ? l[0].str : "(null)");
	CHECK(str_eq(l[1].key, "bytes") && !l[1].str && l[1].num == 4096 && !l[1].num_unit,
	      "label 1: %s %" PRId64, l[1].key, l[1].num);
	CHECK(str_eq(l[2].key, "cpu") && !l[2].str && l[2].num == 3, "label 2: %s %" PRId64,
	      l[2].key, l[2].num);
	l = d->labels + s[1].label;
	CHECK(str_eq(l[0].key, "thread") && str_eq(l[0].str, "worker-1"), "sample 1 label: %s",
	      l[0].key);
}

static void check_read_mappings(const struct fr_pprof_data *d)
{
	const struct fr_pprof_rmapping *m = d->mappings;

	CHECK(d->nmappings == 2, "%zu mappings, want 2", d->nmappings);
	if (d->nmappings != 2)
		return;
	CHECK(m[0].id == 1 && m[0].memory_start == 0x400000 && m[0].memory_limit == 0x500000 &&
		      m[0].file_offset == 0 && str_eq(m[0].filename, "/usr/bin/frtestapp") &&
		      str_eq(m[0].build_id, "0123456789abcdef0123456789abcdef01234567"),
	      "mapping 1: %" PRIu64 " %s %s", m[0].id, m[0].filename, m[0].build_id);
	CHECK(m[1].id == 2 && m[1].memory_start == 0x7f0000000000 &&
		      m[1].memory_limit == 0x7f0000200000 && m[1].file_offset == 0x28000 &&
		      str_eq(m[1].filename, "/usr/lib/libc.so.6") && str_eq(m[1].build_id, ""),
	      "mapping 2: %" PRIu64 " %s '%s'", m[1].id, m[1].filename, m[1].build_id);
	/* locations 1..3 lie in mappings 1, 1, 2; location 4 in none */
	CHECK(d->nlocations == 4 && d->locations[0].mapping == 0 && d->locations[1].mapping == 0 &&
		      d->locations[2].mapping == 1 && d->locations[3].mapping == -1,
	      "location mappings %zd %zd %zd %zd", d->locations[0].mapping, d->locations[1].mapping,
	      d->locations[2].mapping, d->locations[3].mapping);
}

static void test_read_round_trip(void)
{
	struct sink s = {0};
	struct fr_pprof *p = fr_pprof_new(1, sink_write, &s);
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t raw_len = 0;
	int ret = -1;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	build_small(p);
	if (fr_pprof_finish(p) == 0 && fr_gunzip(s.buf, s.len, &raw, &raw_len) == 0)
		ret = fr_pprof_read(raw, raw_len, &d);
	CHECK(ret == 0, "fr_pprof_read of the encoder's profile: %d", ret);
	if (ret == 0) {
		check_read_labels(d);
		check_read_mappings(d);
		CHECK(str_eq(d->period_type.type, "cpu") &&
			      str_eq(d->period_type.unit, "nanoseconds") && d->period == PERIOD,
		      "period %s %s %" PRId64, d->period_type.type, d->period_type.unit, d->period);
		CHECK(d->time_nanos == TIME_NS && d->duration_nanos == DURATION_NS,
		      "time %" PRId64 " duration %" PRId64, d->time_nanos, d->duration_nanos);
		CHECK(d->ncomments == 2 && str_eq(d->comments[0], "recorded by flightrec-test") &&
			      str_eq(d->comments[1], "second comment line"),
		      "%zu comments", d->ncomments);
	}
	fr_pprof_data_free(d);
	fr_pprof_free(p);
	free(raw);
	free(s.buf);
}

/* ---- fr_pprof_read: references that do not resolve ---- */

struct pbw {
	unsigned char b[512];
	size_t n;
};

static void pbw_varint(struct pbw *w, uint64_t v)
{
	do {
		w->b[w->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void pbw_u64(struct pbw *w, uint32_t field, uint64_t v)
{
	pbw_varint(w, (uint64_t)field << 3);
	pbw_varint(w, v);
}

static void pbw_bytes(struct pbw *w, uint32_t field, const void *buf, size_t len)
{
	pbw_varint(w, (uint64_t)field << 3 | 2);
	pbw_varint(w, len);
	memcpy(w->b + w->n, buf, len);
	w->n += len;
}

/* What a hand-made profile's references name; strings are "", "key",
 * "val", "file", so any index from 4 on is out of range. */
struct refs {
	uint64_t label_key, label_str, label_unit;
	uint64_t loc_mapping;
	uint64_t map_id2; /* a second mapping's id, 0 for none */
	uint64_t map_file;
	uint64_t comment;
	uint64_t period_type;
};

static const struct refs good_refs = {
	.label_key = 1,
	.label_str = 2,
	.label_unit = 0,
	.loc_mapping = 1,
	.map_id2 = 2,
	.map_file = 3,
	.comment = 2,
	.period_type = 1,
};

static void make_profile(struct pbw *w, const struct refs *r)
{
	static const char *strings[] = {"", "key", "val", "file"};
	struct pbw label = {0}, sample = {0}, map = {0}, map2 = {0}, loc = {0}, ptype = {0};

	pbw_u64(&label, 1, r->label_key);
	pbw_u64(&label, 2, r->label_str);
	pbw_u64(&label, 4, r->label_unit);
	pbw_u64(&sample, 1, 1);
	pbw_bytes(&sample, 3, label.b, label.n);
	pbw_u64(&map, 1, 1);
	pbw_u64(&map, 5, r->map_file);
	pbw_u64(&map2, 1, r->map_id2);
	pbw_u64(&loc, 1, 1);
	pbw_u64(&loc, 2, r->loc_mapping);
	pbw_u64(&loc, 3, 0x1000);
	pbw_u64(&ptype, 1, r->period_type);
	pbw_u64(&ptype, 2, r->period_type);
	memset(w, 0, sizeof(*w));
	pbw_bytes(w, 2, sample.b, sample.n);
	pbw_bytes(w, 3, map.b, map.n);
	if (r->map_id2)
		pbw_bytes(w, 3, map2.b, map2.n);
	pbw_bytes(w, 4, loc.b, loc.n);
	for (size_t i = 0; i < sizeof(strings) / sizeof(*strings); i++)
		pbw_bytes(w, 6, strings[i], strlen(strings[i]));
	pbw_bytes(w, 11, ptype.b, ptype.n);
	pbw_u64(w, 13, r->comment);
}

static int read_refs(const struct refs *r, struct fr_pprof_data **d)
{
	struct pbw w;

	make_profile(&w, r);
	return fr_pprof_read(w.b, w.n, d);
}

static void test_read_malformed(void)
{
	static const struct {
		const char *what;
		size_t off; /* the member of struct refs to spoil */
		uint64_t value;
	} cases[] = {
		{"label key index out of range", offsetof(struct refs, label_key), 4},
		{"label str index out of range", offsetof(struct refs, label_str), 9},
		{"label num_unit index out of range", offsetof(struct refs, label_unit), 4},
		{"location naming an unknown mapping", offsetof(struct refs, loc_mapping), 3},
		{"two mappings with one id", offsetof(struct refs, map_id2), 1},
		{"mapping filename out of range", offsetof(struct refs, map_file), 4},
		{"comment index out of range", offsetof(struct refs, comment), 4},
		{"period_type index out of range", offsetof(struct refs, period_type), 4},
	};
	struct fr_pprof_data *d = NULL;
	int ret = read_refs(&good_refs, &d);

	/* The unspoiled profile reads, so each failure below is its one change. */
	CHECK(ret == 0, "the well-formed hand-made profile: %d", ret);
	if (ret == 0) {
		CHECK(d->nlabels == 1 && str_eq(d->labels[0].key, "key") &&
			      str_eq(d->labels[0].str, "val") && d->nmappings == 2 &&
			      d->locations[0].mapping == 0 &&
			      str_eq(d->mappings[0].filename, "file") && d->ncomments == 1 &&
			      str_eq(d->comments[0], "val") && str_eq(d->period_type.type, "key"),
		      "the hand-made profile reads wrong");
	}
	fr_pprof_data_free(d);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct refs r = good_refs;

		memcpy((char *)&r + cases[i].off, &cases[i].value, sizeof(uint64_t));
		d = NULL;
		ret = read_refs(&r, &d);
		CHECK(ret == -EBADMSG && !d, "%s: fr_pprof_read returned %d, want -EBADMSG",
		      cases[i].what, ret);
		fr_pprof_data_free(d);
	}
}

int main(void)
{
	test_read_round_trip();
	test_read_malformed();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
