/* The pprof encoder, checked two ways: a small protobuf walker here checks
 * the wire format itself (field numbers, the order of the string table,
 * and that output leaves while samples are still being added), and, when
 * FR_GO names a Go toolchain, `go tool pprof` (an independent reader) must
 * read the profile and show what was put in. */
#include "core/query/pprof.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/gopprof.h"

static char tmpdir[] = "/tmp/fr-test-pprof-XXXXXX";
static const char *go;

/* ---- output sink: a file, plus a memory copy for the walker ---- */

struct sink {
	int fd;
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
	if (s->fd >= 0 && write(s->fd, buf, len) != (ssize_t)len)
		return -EIO;
	return 0;
}

/* ---- a minimal protobuf reader ---- */

struct pb {
	const unsigned char *p;
	const unsigned char *end;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		if (b->p >= b->end)
			return -1;
		x |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Next field: number, wire type, and either the varint value or the
 * length-delimited body. Returns 1, 0 at the end, -1 when malformed. */
static int pb_next(struct pb *b, unsigned *field, unsigned *wire, uint64_t *v, struct pb *body)
{
	uint64_t key, len;

	if (b->p == b->end)
		return 0;
	if (pb_varint(b, &key) < 0)
		return -1;
	*field = (unsigned)(key >> 3);
	*wire = (unsigned)(key & 7);
	if (*wire == 0)
		return pb_varint(b, v) < 0 ? -1 : 1;
	if (*wire != 2 || pb_varint(b, &len) < 0 || len > (uint64_t)(b->end - b->p))
		return -1;
	body->p = b->p;
	body->end = b->p + len;
	b->p += len;
	return 1;
}

struct decoded {
	/* string_table in order of appearance */
	const unsigned char **str;
	size_t *str_len;
	size_t nstr;
	size_t field_count[16];
	uint64_t samples;
	int64_t value_sum[4];
	uint64_t location_refs;
	uint64_t max_string_ref;
	uint64_t time_ns, duration_ns, period, default_sample_type;
	uint64_t period_type, period_unit;
	uint64_t comments[8];
	size_t ncomments;
	uint64_t label_str_refs, label_num_refs;
	uint64_t first_sample_labels[8][3]; /* key, str, num */
	size_t first_sample_nlabels;
};

static void note_ref(struct decoded *d, uint64_t idx)
{
	if (idx > d->max_string_ref)
		d->max_string_ref = idx;
}

static int decode_sample(struct decoded *d, struct pb b)
{
	unsigned field, wire;
	uint64_t v;
	struct pb body;
	int r;

	while ((r = pb_next(&b, &field, &wire, &v, &body)) == 1) {
		if (field == 1 && wire == 2) {
			while (body.p < body.end) {
				if (pb_varint(&body, &v) < 0)
					return -1;
				d->location_refs++;
			}
		} else if (field == 2 && wire == 2) {
			for (int i = 0; body.p < body.end; i++) {
				if (pb_varint(&body, &v) < 0)
					return -1;
				if (i < 4)
					d->value_sum[i] += (int64_t)v;
			}
		} else if (field == 3 && wire == 2) {
			uint64_t lab[3] = { 0 };
			unsigned lf, lw;
			struct pb lb;

			while ((r = pb_next(&body, &lf, &lw, &v, &lb)) == 1) {
				if (lw != 0 || lf < 1 || lf > 4)
					return -1;
				if (lf <= 3)
					lab[lf - 1] = v;
			}
			if (r < 0)
				return -1;
			note_ref(d, lab[0]);
			note_ref(d, lab[1]);
			d->label_str_refs += lab[1] != 0;
			d->label_num_refs += lab[1] == 0;
			if (d->samples == 0 && d->first_sample_nlabels < 8)
				memcpy(d->first_sample_labels[d->first_sample_nlabels++], lab,
				       sizeof(lab));
		} else {
			return -1;
		}
	}
	return r;
}

/* Checks a message whose fields are all varints, noting string refs. */
static int decode_flat(struct decoded *d, struct pb b, const unsigned *string_fields,
		       uint64_t *first, unsigned first_field)
{
	unsigned field, wire;
	uint64_t v;
	struct pb body;
	int r;

	while ((r = pb_next(&b, &field, &wire, &v, &body)) == 1) {
		if (wire == 2 && first_field == 4 && field == 4) {
			/* Location.line */
			continue;
		}
		if (wire != 0)
			return -1;
		for (const unsigned *s = string_fields; *s; s++)
			if (*s == field)
				note_ref(d, v);
		if (first && field == first_field)
			*first = v;
	}
	return r;
}

static int decode_profile(const unsigned char *buf, size_t len, struct decoded *d)
{
	static const unsigned vt_strings[] = { 1, 2, 0 };
	static const unsigned mapping_strings[] = { 5, 6, 0 };
	static const unsigned function_strings[] = { 2, 3, 4, 0 };
	static const unsigned no_strings[] = { 0 };
	struct pb b = { buf, buf + len }, body;
	unsigned field, wire;
	uint64_t v = 0;
	int r;

	memset(d, 0, sizeof(*d));
	while ((r = pb_next(&b, &field, &wire, &v, &body)) == 1) {
		if (field >= 16)
			return -1;
		d->field_count[field]++;
		switch (field) {
		case 1:
			if (wire != 2 || decode_flat(d, body, vt_strings, NULL, 0) < 0)
				return -1;
			break;
		case 2:
			if (wire != 2 || decode_sample(d, body) < 0)
				return -1;
			d->samples++;
			break;
		case 3:
			if (wire != 2 || decode_flat(d, body, mapping_strings, NULL, 0) < 0)
				return -1;
			break;
		case 4:
			if (wire != 2 || decode_flat(d, body, no_strings, NULL, 4) < 0)
				return -1;
			break;
		case 5:
			if (wire != 2 || decode_flat(d, body, function_strings, NULL, 0) < 0)
				return -1;
			break;
		case 6: {
			const unsigned char **s;
			size_t *l;

			if (wire != 2)
				return -1;
			s = realloc(d->str, (d->nstr + 1) * sizeof(*s));
			if (!s)
				return -1;
			d->str = s;
			l = realloc(d->str_len, (d->nstr + 1) * sizeof(*l));
			if (!l)
				return -1;
			d->str_len = l;
			d->str[d->nstr] = body.p;
			d->str_len[d->nstr] = (size_t)(body.end - body.p);
			d->nstr++;
			break;
		}
		case 9:
			d->time_ns = v;
			break;
		case 10:
			d->duration_ns = v;
			break;
		case 11:
			if (wire != 2 || decode_flat(d, body, vt_strings, &d->period_type, 1) < 0)
				return -1;
			decode_flat(d, body, vt_strings, &d->period_unit, 2);
			break;
		case 12:
			d->period = v;
			break;
		case 13:
			if (wire != 0)
				return -1;
			note_ref(d, v);
			if (d->ncomments < 8)
				d->comments[d->ncomments++] = v;
			break;
		case 14:
			note_ref(d, v);
			d->default_sample_type = v;
			break;
		default:
			return -1;
		}
	}
	return r;
}

static int str_is(const struct decoded *d, uint64_t idx, const char *want)
{
	return idx < d->nstr && d->str_len[idx] == strlen(want) &&
	       memcmp(d->str[idx], want, d->str_len[idx]) == 0;
}

/* ---- running go tool pprof ---- */

/* Runs `go tool pprof <args> <file>` and returns its stdout (malloc'd). */
static char *run_pprof(const char *args, const char *file)
{
	return fr_test_go_pprof(go, args, file, tmpdir);
}

static void expect_in(const char *out, const char *what, const char *want)
{
	CHECK(out && strstr(out, want), "%s output lacks \"%s\"", what, want);
}

/* Checks the flat and cum columns of `name`'s row in `pprof -top`. */
static void expect_top(const char *out, const char *name, long flat, long cum)
{
	char pat[128];
	const char *line;
	long f = -1, c = -1;

	snprintf(pat, sizeof(pat), "  %s\n", name);
	line = out ? strstr(out, pat) : NULL;
	CHECK(line, "-top output has no row for %s", name);
	if (!line)
		return;
	while (line > out && line[-1] != '\n')
		line--;
	CHECK(sscanf(line, "%ld %*s %*s %ld", &f, &c) == 2 && f == flat && c == cum,
	      "-top row of %s: flat %ld cum %ld, want %ld %ld", name, f, c, flat, cum);
}

/* ---- the small, fully checked profile ---- */

#define PERIOD 10000000LL
#define TIME_NS 1795352700000000000LL
#define DURATION_NS 2500000000LL

static void build_small(struct fr_pprof *p)
{
	uint64_t m_app, m_libc, f_main, f_work, f_work2, f_memcpy, l_main, l_work, l_memcpy, l_raw;
	struct fr_pprof_label labels[3] = {
		{ .key = "thread", .str = "worker-1" },
		{ .key = "bytes", .num = 4096 },
		{ .key = "cpu", .num = 3 },
	};
	uint64_t stack1[3], stack2[2], stack3[1];
	int64_t v1[2] = { 3, 3 * PERIOD };
	int64_t v2[2] = { 5, 5 * PERIOD };
	int64_t v3[2] = { 1, PERIOD };

	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_period(p, "cpu", "nanoseconds", PERIOD);
	fr_pprof_time(p, TIME_NS, DURATION_NS);
	fr_pprof_default_sample_type(p, "cpu");
	fr_pprof_comment(p, "recorded by flightrec-test");
	fr_pprof_comment(p, "second comment line");

	m_app = fr_pprof_mapping(p, 0x400000, 0x500000, 0, "/usr/bin/frtestapp",
				 "0123456789abcdef0123456789abcdef01234567", 1);
	m_libc = fr_pprof_mapping(p, 0x7f0000000000, 0x7f0000200000, 0x28000,
				  "/usr/lib/libc.so.6", NULL, 1);
	CHECK(m_app == 1 && m_libc == 2, "mapping ids %" PRIu64 ", %" PRIu64, m_app, m_libc);

	f_main = fr_pprof_function(p, "frtest_main", "frtest_main", "app.c");
	f_work = fr_pprof_function(p, "frtest_work", NULL, "app.c");
	f_work2 = fr_pprof_function(p, "frtest_work", NULL, "app.c");
	f_memcpy = fr_pprof_function(p, "frtest_memcpy", "__memcpy_avx2", NULL);
	CHECK(f_main == 1 && f_work == 2 && f_memcpy == 3, "function ids %" PRIu64 " %" PRIu64
	      " %" PRIu64, f_main, f_work, f_memcpy);
	CHECK(f_work2 == f_work, "function not interned: %" PRIu64 " vs %" PRIu64, f_work2,
	      f_work);
	/* Same name, different file: a different function. */
	CHECK(fr_pprof_function(p, "frtest_work", NULL, "other.c") == 4,
	      "function with another file shares an id");

	l_main = fr_pprof_location(p, m_app, 0x401000, f_main);
	l_work = fr_pprof_location(p, m_app, 0x402000, f_work);
	l_memcpy = fr_pprof_location(p, m_libc, 0x7f0000001234, f_memcpy);
	l_raw = fr_pprof_location(p, 0, 0xdeadbeef, 0);
	CHECK(l_main == 1 && l_raw == 4, "location ids %" PRIu64 "..%" PRIu64, l_main, l_raw);

	stack1[0] = l_memcpy;
	stack1[1] = l_work;
	stack1[2] = l_main;
	stack2[0] = l_work;
	stack2[1] = l_main;
	stack3[0] = l_raw;
	fr_pprof_sample(p, stack1, 3, v1, 2, labels, 3);
	fr_pprof_sample(p, stack2, 2, v2, 2, labels, 1);
	fr_pprof_sample(p, stack3, 1, v3, 2, NULL, 0);
}

static void test_small(void)
{
	struct sink s = { .fd = -1 };
	struct fr_pprof *p;
	char path[256];
	void *raw = NULL;
	size_t raw_len = 0;
	struct decoded d = { 0 };
	char *out;
	int ret;

	snprintf(path, sizeof(path), "%s/small.pb.gz", tmpdir);
	s.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(s.fd >= 0, "open %s: %s", path, strerror(errno));
	p = fr_pprof_new(6, sink_write, &s);
	CHECK(p, "fr_pprof_new");
	if (!p || s.fd < 0)
		goto out;

	CHECK(fr_pprof_string(p, "") == 0, "\"\" is not index 0");
	CHECK(fr_pprof_string(p, NULL) == 0, "NULL is not index 0");
	build_small(p);
	CHECK(fr_pprof_string(p, "samples") == 1, "first interned string is not 1");
	CHECK(fr_pprof_string(p, "cpu") == 3, "\"cpu\" is not 3");
	ret = fr_pprof_finish(p);
	CHECK(ret == 0, "finish returned %d", ret);
	CHECK(fr_pprof_finish(p) == 0, "second finish returned an error");

	ret = fr_gunzip(s.buf, s.len, &raw, &raw_len);
	CHECK(ret == 0, "gunzip returned %d", ret);
	if (ret)
		goto out;
	CHECK(raw_len == fr_pprof_raw_bytes(p), "raw bytes %" PRIu64 ", stream holds %zu",
	      fr_pprof_raw_bytes(p), raw_len);
	ret = decode_profile(raw, raw_len, &d);
	CHECK(ret == 0, "protobuf walk failed (%d)", ret);
	if (ret)
		goto out;

	/* Field numbers of profile.proto. */
	CHECK(d.field_count[1] == 2, "sample_type count %zu", d.field_count[1]);
	CHECK(d.field_count[2] == 3, "sample count %zu", d.field_count[2]);
	CHECK(d.field_count[3] == 2, "mapping count %zu", d.field_count[3]);
	CHECK(d.field_count[4] == 4, "location count %zu", d.field_count[4]);
	CHECK(d.field_count[5] == 4, "function count %zu (interning)", d.field_count[5]);
	CHECK(d.field_count[9] == 1 && d.time_ns == (uint64_t)TIME_NS, "time_nanos");
	CHECK(d.field_count[10] == 1 && d.duration_ns == (uint64_t)DURATION_NS, "duration_nanos");
	CHECK(d.field_count[11] == 1 && str_is(&d, d.period_type, "cpu") &&
	      str_is(&d, d.period_unit, "nanoseconds"), "period_type");
	CHECK(d.field_count[12] == 1 && d.period == (uint64_t)PERIOD, "period");
	CHECK(d.field_count[13] == 2 && str_is(&d, d.comments[0], "recorded by flightrec-test") &&
	      str_is(&d, d.comments[1], "second comment line"), "comments");
	CHECK(d.field_count[14] == 1 && str_is(&d, d.default_sample_type, "cpu"),
	      "default_sample_type");
	CHECK(d.samples == 3 && d.location_refs == 6, "samples %" PRIu64 ", location refs %" PRIu64,
	      d.samples, d.location_refs);
	CHECK(d.value_sum[0] == 9 && d.value_sum[1] == 9 * PERIOD, "value sums %" PRId64
	      " %" PRId64, d.value_sum[0], d.value_sum[1]);

	/* The string table: "" first, then in order of first use, once each. */
	CHECK(d.nstr == 19, "string table has %zu entries, want 19", d.nstr);
	CHECK(str_is(&d, 0, ""), "string 0 is not \"\"");
	CHECK(str_is(&d, 1, "samples") && str_is(&d, 2, "count") && str_is(&d, 3, "cpu") &&
	      str_is(&d, 4, "nanoseconds") && str_is(&d, 5, "recorded by flightrec-test") &&
	      str_is(&d, 7, "/usr/bin/frtestapp") && str_is(&d, 9, "/usr/lib/libc.so.6") &&
	      str_is(&d, 10, "frtest_main"), "string table order");
	for (size_t i = 0; i < d.nstr; i++)
		for (size_t j = i + 1; j < d.nstr; j++)
			CHECK(d.str_len[i] != d.str_len[j] ||
			      memcmp(d.str[i], d.str[j], d.str_len[i]) != 0,
			      "strings %zu and %zu are equal", i, j);
	CHECK(d.max_string_ref < d.nstr, "string index %" PRIu64 " beyond the table",
	      d.max_string_ref);
	CHECK(d.first_sample_nlabels == 3 && str_is(&d, d.first_sample_labels[0][0], "thread") &&
	      str_is(&d, d.first_sample_labels[0][1], "worker-1") &&
	      str_is(&d, d.first_sample_labels[1][0], "bytes") &&
	      d.first_sample_labels[1][2] == 4096, "labels of the first sample");

	if (!go)
		goto out;
	out = run_pprof("-raw -symbolize=none", path);
	CHECK(out, "go tool pprof -raw failed");
	if (out) {
		expect_in(out, "-raw", "Comment: recorded by flightrec-test");
		expect_in(out, "-raw", "Comment: second comment line");
		expect_in(out, "-raw", "PeriodType: cpu nanoseconds");
		expect_in(out, "-raw", "Period: 10000000\n");
		expect_in(out, "-raw", "Duration: 2.5s");
		expect_in(out, "-raw", "samples/count cpu/nanoseconds[dflt]");
		/* pprof renumbers locations, so stacks are checked by -top. */
		expect_in(out, "-raw", "          3   30000000: ");
		expect_in(out, "-raw", "          5   50000000: ");
		expect_in(out, "-raw", "          1   10000000: ");
		expect_in(out, "-raw", "thread:[worker-1]");
		expect_in(out, "-raw", "bytes:[4096]");
		expect_in(out, "-raw", "cpu:[3]");
		expect_in(out, "-raw", "0x401000 M=1 frtest_main app.c:0");
		expect_in(out, "-raw", "0x7f0000001234 M=2 frtest_memcpy :0 s=0(__memcpy_avx2)");
		expect_in(out, "-raw", "0xdeadbeef ");
		expect_in(out, "-raw", "1: 0x400000/0x500000/0x0 /usr/bin/frtestapp "
				       "0123456789abcdef0123456789abcdef01234567 [FN]");
		expect_in(out, "-raw", "2: 0x7f0000000000/0x7f0000200000/0x28000 /usr/lib/libc.so.6");
		if (failures)
			fprintf(stderr, "pprof -raw output:\n%s", out);
	}
	free(out);
	out = run_pprof("-top -symbolize=none -sample_index=samples", path);
	CHECK(out, "go tool pprof -top failed");
	if (out) {
		expect_in(out, "-top", "Showing nodes accounting for 9, 100% of 9 total");
		expect_top(out, "frtest_work", 5, 8);
		expect_top(out, "frtest_main", 0, 8);
		expect_top(out, "frtest_memcpy", 3, 3);
		expect_top(out, "<unknown>", 1, 1);
		if (failures)
			fprintf(stderr, "pprof -top output:\n%s", out);
	}
	free(out);
out:
	if (s.fd >= 0)
		close(s.fd);
	fr_pprof_free(p);
	free(raw);
	free(d.str);
	free(d.str_len);
	free(s.buf);
}

/* ---- many samples: streaming, interning at scale ---- */

#define BIG_SAMPLES 200000
#define BIG_FUNCS 5000

static void test_big(void)
{
	struct sink s = { .fd = -1 };
	struct fr_pprof *p;
	char path[256], name[64], thread[32];
	uint64_t *locs = NULL, stack[32];
	void *raw = NULL;
	size_t raw_len = 0, before_finish;
	struct decoded d = { 0 };
	int64_t want_sum = 0;
	char *out;
	int ret;

	snprintf(path, sizeof(path), "%s/big.pb.gz", tmpdir);
	s.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	p = fr_pprof_new(1, sink_write, &s);
	locs = calloc(BIG_FUNCS + 1, sizeof(*locs));
	CHECK(p && s.fd >= 0 && locs, "setup");
	if (!p || s.fd < 0 || !locs)
		goto out;

	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_period(p, "cpu", "nanoseconds", PERIOD);
	fr_pprof_comment(p, "big profile");
	fr_pprof_mapping(p, 0x400000, 0x8000000, 0, "/usr/bin/big", "abcdef", 1);
	for (uint64_t i = 0; i < BIG_SAMPLES; i++) {
		/* Real profiles repeat stacks; 1000 distinct ones keep
		 * go tool pprof quick while every sample is still encoded. */
		uint32_t x = (uint32_t)((i % 1000) * 2654435761u);
		size_t depth = 4 + x % 28;
		int64_t v[2] = { 1 + (int64_t)(x % 3), 0 };
		struct fr_pprof_label label[2] = {
			{ .key = "thread", .str = thread },
			{ .key = "tid", .num = (int64_t)(i % 64) },
		};

		v[1] = v[0] * PERIOD;
		want_sum += v[0];
		snprintf(thread, sizeof(thread), "worker-%u", (unsigned)(i % 64));
		for (size_t k = 0; k < depth; k++) {
			uint32_t fi = (x >> (k % 16)) % BIG_FUNCS;

			/* Functions and their locations are interned lazily,
			 * the way a symbolizer would. */
			if (!locs[fi]) {
				snprintf(name, sizeof(name), "ns::Class::method_%u(int, char const*)",
					 fi);
				locs[fi] = fr_pprof_location(
					p, 1, 0x400000 + 16 * fi,
					fr_pprof_function(p, name, name, "big.cc"));
			}
			stack[k] = locs[fi];
		}
		fr_pprof_sample(p, stack, depth, v, 2, label, 2);
	}
	before_finish = s.len;
	ret = fr_pprof_finish(p);
	CHECK(ret == 0, "finish returned %d", ret);
	/* Output leaves while samples are added, not at the end. */
	CHECK(before_finish > s.len / 2 && s.calls > 4,
	      "only %zu of %zu bytes written before finish (%zu sink calls)", before_finish,
	      s.len, s.calls);

	ret = fr_gunzip(s.buf, s.len, &raw, &raw_len);
	CHECK(ret == 0 && raw_len == fr_pprof_raw_bytes(p), "gunzip %d, %zu bytes", ret, raw_len);
	if (ret)
		goto out;
	ret = decode_profile(raw, raw_len, &d);
	CHECK(ret == 0, "protobuf walk failed");
	CHECK(d.samples == BIG_SAMPLES, "%" PRIu64 " samples", d.samples);
	CHECK(d.value_sum[0] == want_sum, "sample sum %" PRId64 ", want %" PRId64, d.value_sum[0],
	      want_sum);
	CHECK(d.field_count[5] <= BIG_FUNCS && d.field_count[5] == d.field_count[4],
	      "%zu functions, %zu locations", d.field_count[5], d.field_count[4]);
	/* "" + 4 type strings + comment + file + build id + "thread", "tid",
	 * 64 thread names + function names + "big.cc". */
	CHECK(d.nstr == 1 + 4 + 1 + 2 + 2 + 64 + d.field_count[5] + 1,
	      "string table has %zu entries for %zu functions", d.nstr, d.field_count[5]);
	CHECK(d.max_string_ref < d.nstr, "string index beyond the table");
	CHECK(d.label_str_refs == BIG_SAMPLES, "%" PRIu64 " string labels", d.label_str_refs);

	if (go) {
		char want[128];

		out = run_pprof("-top -symbolize=none -sample_index=samples -nodecount=3", path);
		CHECK(out, "go tool pprof -top on the large profile failed");
		snprintf(want, sizeof(want), "of %" PRId64 " total", want_sum);
		expect_in(out, "-top (large)", want);
		expect_in(out, "-top (large)", "ns::Class::method_");
		free(out);
	}
out:
	if (s.fd >= 0)
		close(s.fd);
	fr_pprof_free(p);
	free(locs);
	free(raw);
	free(d.str);
	free(d.str_len);
	free(s.buf);
}

/* A failing sink makes finish fail, with no crash in between. */
static void test_sink_error(void)
{
	struct sink s = { .fd = -1, .fail_at = 2 };
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
	struct sink s = { .fd = -1 };
	struct fr_pprof *p = fr_pprof_new(6, sink_write, &s);

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_function(p, "f", NULL, NULL);
	fr_pprof_free(p);
	free(s.buf);
}

static void setup_go_env(void)
{
	char path[300];

	/* Keep go's caches and pprof's files out of the user's home. */
	setenv("HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/gocache", tmpdir);
	setenv("GOCACHE", path, 1);
	snprintf(path, sizeof(path), "%s/gopath", tmpdir);
	setenv("GOPATH", path, 1);
	setenv("PPROF_TMPDIR", tmpdir, 1);
	setenv("GOFLAGS", "-mod=mod", 1);
	unsetenv("PPROF_BINARY_PATH");
}

int main(void)
{
	char cmd[300];

	/* The wire format is checked here with or without Go; reading the
	 * profiles with `go tool pprof` as well needs FR_GO. */
	go = getenv("FR_GO");
	if (!go || !*go || access(go, X_OK) != 0) {
		fprintf(stderr, "note: FR_GO is not set or not executable; the wire format is "
				"checked without go tool pprof\n");
		go = NULL;
	}
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	setup_go_env();

	test_small();
	test_big();
	test_sink_error();
	test_unfinished();

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
