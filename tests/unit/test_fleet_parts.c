/* Fleet queries' pieces without a server: SQL literals and LIKE patterns
 * that no value can leave, RowBinary rows read the same however the
 * answer is cut, and a fleet profile read back with the project's pprof
 * reader (host labels, values, frames, mappings). ClickHouse itself is in
 * tests/integration/fleet.sh. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/clickhouse/fleet_pprof.h"
#include "core/clickhouse/fleet_sql.h"
#include "core/pprof/pprof_read.h"
#include "core/clickhouse/rowbinary.h"
#include "core/util/compress.h"
#include "tests/unit/check.h"

static const char *sql_str(const char *v, int like)
{
	static struct fr_sql s;

	fr_sql_free(&s);
	fr_sql_init(&s, 0);
	if (like)
		fr_sql_like_glob(&s, v);
	else
		fr_sql_str(&s, v);
	return s.buf;
}

static void test_sql(void)
{
	struct fr_sql s;

	CHECK(strcmp(sql_str("web-1", 0), "'web-1'") == 0, "%s", sql_str("web-1", 0));
	CHECK(strcmp(sql_str("a'b\\c", 0), "'a\\'b\\\\c'") == 0, "%s", sql_str("a'b\\c", 0));
	CHECK(strcmp(sql_str("x\ny\x7f", 0), "'x\\x0ay\\x7f'") == 0, "%s", sql_str("x\ny", 0));
	/* An attempt to close the literal stays inside it. */
	CHECK(strcmp(sql_str("' OR 1=1 --", 0), "'\\' OR 1=1 --'") == 0, "%s",
	      sql_str("' OR 1=1 --", 0));
	CHECK(strcmp(sql_str("web-*", 1), "'web-%'") == 0, "%s", sql_str("web-*", 1));
	CHECK(strcmp(sql_str("db?", 1), "'db_'") == 0, "%s", sql_str("db?", 1));
	/* LIKE's own wildcards and escape match themselves: \% in the
	 * pattern, each backslash doubled in the literal. */
	CHECK(strcmp(sql_str("a%b_c\\d", 1), "'a\\\\%b\\\\_c\\\\\\\\d'") == 0, "%s",
	      sql_str("a%b_c\\d", 1));
	CHECK(strcmp(sql_str("it's*", 1), "'it\\'s%'") == 0, "%s", sql_str("it's*", 1));
	sql_str("", 0);

	CHECK(fr_sql_name_ok("flightrec") && fr_sql_name_ok("_x9"), "plain names");
	CHECK(!fr_sql_name_ok("") && !fr_sql_name_ok("9x") && !fr_sql_name_ok("a.b") &&
		      !fr_sql_name_ok("a`b") && !fr_sql_name_ok("a b"),
	      "odd names refused");

	/* Past the bound, the text fails and stays failed. */
	fr_sql_init(&s, 16);
	fr_sql_add(&s, "SELECT %d", 1);
	fr_sql_str(&s, "0123456789");
	CHECK(s.err == -E2BIG, "err %d", s.err);
	fr_sql_add(&s, "x");
	CHECK(s.err == -E2BIG && s.len <= 16, "stays failed");
	fr_sql_free(&s);
}

/* A RowBinary answer of (String host, UInt64 id, UInt64 count, UInt64
 * value) rows, built here as ClickHouse writes it. */
static size_t put_row(uint8_t *p, const char *host, uint64_t id, uint64_t count, uint64_t value)
{
	size_t n = 0, len = strlen(host);
	uint64_t v[3] = {id, count, value};

	/* A length of 200 takes two LEB128 bytes. */
	do {
		p[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
		len >>= 7;
	} while (len);
	memcpy(p + n, host, strlen(host));
	n += strlen(host);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 8; i++)
			p[n++] = (uint8_t)(v[k] >> (8 * i));
	return n;
}

struct got {
	char hosts[4][256];
	uint64_t ids[4], counts[4], values[4];
	int n;
};

static int got_row(void *arg, struct fr_rb_cur *c)
{
	struct got *g = arg;
	const char *h;
	size_t hl;
	uint64_t id, count, value;
	int ret;

	if ((ret = fr_rb_str(c, &h, &hl)) < 0 || (ret = fr_rb_uint(c, 8, &id)) < 0 ||
	    (ret = fr_rb_uint(c, 8, &count)) < 0 || (ret = fr_rb_uint(c, 8, &value)) < 0)
		return ret;
	if (g->n < 4) {
		snprintf(g->hosts[g->n], sizeof(g->hosts[0]), "%.*s", (int)hl, h);
		g->ids[g->n] = id;
		g->counts[g->n] = count;
		g->values[g->n] = value;
	}
	g->n++;
	return 0;
}

static void test_rowbinary(void)
{
	uint8_t buf[1024];
	char longhost[201];
	size_t n = 0;

	memset(longhost, 'h', 200);
	longhost[200] = '\0';
	n += put_row(buf + n, "web-1", 7, 3, 3000);
	n += put_row(buf + n, longhost, 1ULL << 63, 1, 5);
	n += put_row(buf + n, "", 0, 0, 0);
	/* Every way of cutting the answer in two, and byte by byte. */
	for (size_t cut = 0; cut <= n + 1; cut++) {
		struct fr_rb_stream s;
		struct got g = {0};
		int ret = 0;

		fr_rb_stream_init(&s, got_row, &g, 0);
		if (cut <= n) {
			ret = fr_rb_stream_feed(&s, buf, cut);
			if (!ret)
				ret = fr_rb_stream_feed(&s, buf + cut, n - cut);
		} else {
			for (size_t i = 0; i < n && !ret; i++)
				ret = fr_rb_stream_feed(&s, buf + i, 1);
		}
		if (!ret)
			ret = fr_rb_stream_end(&s);
		CHECK(ret == 0 && g.n == 3 && s.rows == 3, "cut %zu: ret %d, %d rows", cut, ret,
		      g.n);
		CHECK(strcmp(g.hosts[0], "web-1") == 0 && g.ids[0] == 7 && g.counts[0] == 3 &&
			      g.values[0] == 3000,
		      "cut %zu: row 1", cut);
		CHECK(strcmp(g.hosts[1], longhost) == 0 && g.ids[1] == 1ULL << 63, "cut %zu: row 2",
		      cut);
		CHECK(g.hosts[2][0] == '\0' && g.ids[2] == 0, "cut %zu: row 3", cut);
		fr_rb_stream_free(&s);
	}
	/* Regression: an answer whose rows end exactly where a piece ends
	 * left nothing to keep, and keeping nothing copied from a buffer not
	 * yet allocated (the rowbinary fuzz target's first find). */
	{
		struct fr_rb_stream s;
		struct got g = {0};

		fr_rb_stream_init(&s, got_row, &g, 0);
		CHECK(fr_rb_stream_feed(&s, buf, n) == 0 && s.buf == NULL && s.len == 0,
		      "whole rows keep nothing");
		CHECK(fr_rb_stream_end(&s) == 0 && g.n == 3, "%d rows", g.n);
		fr_rb_stream_free(&s);
	}
	/* Cut inside the last row: the end says so. */
	for (size_t cut = 1; cut < 8; cut++) {
		struct fr_rb_stream s;
		struct got g = {0};
		int ret;

		fr_rb_stream_init(&s, got_row, &g, 0);
		ret = fr_rb_stream_feed(&s, buf, n - cut);
		CHECK(ret == 0 && fr_rb_stream_end(&s) == -EBADMSG && g.n == 2,
		      "cut short by %zu: %d rows", cut, g.n);
		fr_rb_stream_free(&s);
	}
	/* A string that claims more than the row bound. */
	{
		uint8_t big[] = {0xff, 0xff, 0xff, 0x0f, 'x'};
		struct fr_rb_stream s;
		struct got g = {0};

		fr_rb_stream_init(&s, got_row, &g, 64);
		CHECK(fr_rb_stream_feed(&s, big, sizeof(big)) == 0, "a start is kept");
		for (int i = 0; i < 20 && !s.err; i++)
			fr_rb_stream_feed(&s, buf, 8);
		CHECK(s.err == -EFBIG, "err %d", s.err);
		fr_rb_stream_free(&s);
	}
	/* A length of ten continuation bytes is no length. */
	{
		uint8_t bad[16];
		struct fr_rb_stream s;
		struct got g = {0};

		memset(bad, 0x80, sizeof(bad));
		fr_rb_stream_init(&s, got_row, &g, 0);
		CHECK(fr_rb_stream_feed(&s, bad, sizeof(bad)) == -EBADMSG, "bad varint");
		fr_rb_stream_free(&s);
	}
}

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static int to_buf(void *arg, const void *data, size_t len)
{
	struct buf *b = arg;

	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			return -ENOMEM;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

#define STR(x) ((struct fr_fleet_str){(x), sizeof(x) - 1})

static void test_pprof(void)
{
	struct fr_fleet_pprof_opts o = {.name = "cpu",
					.unit = "nanoseconds",
					.t0 = 1000000000,
					.t1 = 61000000000};
	struct fr_fleet_frame f1[2] = {
		{.func = STR("leaf_a"),
		 .file = STR("a.c"),
		 .line = 10,
		 .mapping = STR("/bin/app"),
		 .build_id = STR("abcd")},
		{.func = STR("main"),
		 .file = STR("main.c"),
		 .line = 3,
		 .mapping = STR("/bin/app"),
		 .build_id = STR("abcd")},
	};
	struct fr_fleet_frame f2[2] = {
		{.func = STR("schedule"), .mapping = STR("[kernel.kallsyms]")},
		f1[1],
	};
	struct fr_fleet_pprof_stats st;
	struct fr_fleet_pprof *fp;
	struct fr_pprof_data *d = NULL;
	struct buf b = {0};
	void *raw = NULL;
	size_t rawlen;
	int64_t web = 0, db = 0;

	fp = fr_fleet_pprof_new(&o, to_buf, &b);
	CHECK(fp != NULL, "new");
	CHECK(fr_fleet_pprof_stack(fp, 1, f1, 2) == 0, "stack 1");
	CHECK(fr_fleet_pprof_stack(fp, 2, f2, 2) == 0, "stack 2");
	CHECK(fr_fleet_pprof_stack(fp, 1, f2, 2) == 0, "stack 1 again is ignored");
	fr_fleet_pprof_sample(fp, STR("web-1"), 1, 3, 3000);
	fr_fleet_pprof_sample(fp, STR("db-1"), 2, 1, 1000);
	fr_fleet_pprof_sample(fp, STR("db-1"), 9, 1, 1000);
	CHECK(fr_fleet_pprof_finish(fp, &st) == 0, "finish");
	fr_fleet_pprof_free(fp);
	CHECK(st.rows == 3 && st.samples == 5 && st.value == 5000 && st.stacks == 2 &&
		      st.locations == 3 && st.hosts == 2 && st.missing_stacks == 1,
	      "stats: rows %llu samples %llu stacks %llu locations %llu hosts %llu missing %llu",
	      (unsigned long long)st.rows, (unsigned long long)st.samples,
	      (unsigned long long)st.stacks, (unsigned long long)st.locations,
	      (unsigned long long)st.hosts, (unsigned long long)st.missing_stacks);
	CHECK(fr_gunzip(b.p, b.len, &raw, &rawlen) == 0, "gunzip");
	CHECK(raw && fr_pprof_read(raw, rawlen, &d) == 0, "read back");
	if (!d)
		goto out;
	CHECK(d->ntypes == 2 && strcmp(d->types[0].type, "samples") == 0 &&
		      strcmp(d->types[1].type, "cpu") == 0 &&
		      strcmp(d->types[1].unit, "nanoseconds") == 0 && d->default_type == 1,
	      "sample types as attach's");
	CHECK(d->time_nanos == o.t0 && d->duration_nanos == o.t1 - o.t0, "window");
	CHECK(d->period == 1000, "period %lld", (long long)d->period);
	CHECK(d->nsamples == 3 && d->nmappings == 2, "%zu samples, %zu mappings", d->nsamples,
	      d->nmappings);
	for (size_t i = 0; i < d->nsamples; i++) {
		const struct fr_pprof_rsample *s = &d->samples[i];
		const struct fr_pprof_rlabel *l = &d->labels[s->label];

		CHECK(s->nlabel == 1 && strcmp(l->key, "host") == 0 && l->str, "host label");
		if (l->str && strcmp(l->str, "web-1") == 0)
			web += d->values[s->val + 1];
		else if (l->str && strcmp(l->str, "db-1") == 0)
			db += d->values[s->val + 1];
	}
	CHECK(web == 3000 && db == 2000, "web %lld db %lld", (long long)web, (long long)db);
	/* The missing stack is named, not dropped. */
	{
		int found = 0;

		for (size_t i = 0; i < d->nfunctions; i++)
			found |= strcmp(d->functions[i].name, "[stack not in the stacks table]") ==
				 0;
		CHECK(found, "placeholder frame");
	}
out:
	fr_pprof_data_free(d);
	free(raw);
	free(b.p);
}

/* Regression: sums past INT64_MAX (a hostile or broken server) were
 * written as negative pprof values and overflowed the totals. */
static void test_pprof_huge_values(void)
{
	struct fr_fleet_pprof_opts o = {.name = "cpu", .unit = "nanoseconds", .t1 = 1};
	struct fr_fleet_pprof_stats st;
	struct fr_fleet_pprof *fp;
	struct fr_pprof_data *d = NULL;
	struct buf b = {0};
	void *raw = NULL;
	size_t rawlen;

	fp = fr_fleet_pprof_new(&o, to_buf, &b);
	CHECK(fp != NULL, "new");
	fr_fleet_pprof_sample(fp, STR("h"), 1, UINT64_MAX, UINT64_MAX);
	fr_fleet_pprof_sample(fp, STR("h"), 1, 1ULL << 63, 7);
	CHECK(fr_fleet_pprof_finish(fp, &st) == 0, "finish");
	fr_fleet_pprof_free(fp);
	CHECK(fr_gunzip(b.p, b.len, &raw, &rawlen) == 0 && fr_pprof_read(raw, rawlen, &d) == 0,
	      "read back");
	for (size_t i = 0; d && i < d->nsamples; i++)
		CHECK(d->values[d->samples[i].val] == INT64_MAX &&
			      d->values[d->samples[i].val + 1] >= 0,
		      "sample %zu: %lld %lld", i, (long long)d->values[d->samples[i].val],
		      (long long)d->values[d->samples[i].val + 1]);
	CHECK(d && d->period >= 0, "period");
	fr_pprof_data_free(d);
	free(raw);
	free(b.p);
}

/* A frame a server sends without a function (hosts name theirs, but a
 * row is the server's word) is named by where it is, and every mapping
 * says has_functions: go tool pprof opens the file at the path of a
 * mapping without it to name its locations, and that path is the
 * recording host's, anything on the reader's. */
static void test_pprof_unnamed(void)
{
	struct fr_fleet_pprof_opts o = {.name = "cpu", .unit = "nanoseconds", .t1 = 1};
	struct fr_fleet_frame f[3] = {
		{.mapping = STR("/usr/lib/libfoo.so"), .address = 0x1a2b},
		{.address = 0x77},
		{.func = STR("main"), .mapping = STR("/bin/app")},
	};
	static const char *const want[] = {"libfoo.so+0x1a2b", "[unknown]+0x77", "main"};
	struct fr_fleet_pprof *fp;
	struct fr_pprof_data *d = NULL;
	struct buf b = {0};
	void *raw = NULL;
	size_t rawlen;

	fp = fr_fleet_pprof_new(&o, to_buf, &b);
	CHECK(fp != NULL, "new");
	if (!fp)
		return;
	CHECK(fr_fleet_pprof_stack(fp, 1, f, 3) == 0, "stack");
	fr_fleet_pprof_sample(fp, STR("h"), 1, 1, 1);
	CHECK(fr_fleet_pprof_finish(fp, NULL) == 0, "finish");
	fr_fleet_pprof_free(fp);
	CHECK(fr_gunzip(b.p, b.len, &raw, &rawlen) == 0, "gunzip");
	CHECK(raw && fr_pprof_read(raw, rawlen, &d) == 0, "read back");
	if (d && d->nsamples == 1 && d->samples[0].nloc == 3) {
		for (size_t i = 0; i < 3; i++) {
			const struct fr_pprof_rlocation *l =
				&d->locations[d->sample_locs[d->samples[0].loc + i]];
			const char *name = l->nline ? d->functions[d->line_funcs[l->line]].name
						    : "(none)";

			CHECK(l->nline == 1 && strcmp(name, want[i]) == 0,
			      "frame %zu is named %s, not %s", i, name, want[i]);
		}
		for (size_t i = 0; i < d->nmappings; i++)
			CHECK(d->mappings[i].has_functions, "mapping %s without has_functions",
			      d->mappings[i].filename);
	} else {
		CHECK(0, "the stack did not come back whole");
	}
	fr_pprof_data_free(d);
	free(raw);
	free(b.p);
}

int main(void)
{
	test_sql();
	test_rowbinary();
	test_pprof();
	test_pprof_huge_values();
	test_pprof_unnamed();
	return failures ? 1 : 0;
}
