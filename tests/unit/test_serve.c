/* flightrec serve's pure parts: the flame graph trees (tools/serve/serve_tree.c)
 * from profiles written by the project's own encoder and read back by
 * core/pprof/pprof_read.c, and the request parser's rules
 * (tools/serve/serve_http.c) that the fuzz target cannot state: which Host
 * headers pass, how a query parameter decodes, which status a bad request
 * gets.
 *
 * Trees: values are sums of the samples through each node, process name
 * first, inlined functions below their caller, kernel frames marked; a
 * differential tree's own deltas add up (as d3-flame-graph's computeDelta
 * adds them) to each node's change of share; past the node cap, a parent's
 * smallest children are merged into "(other)" without losing value. */
#include "core/util/parse.h"
#include "tools/serve/serve_http.h"
#include "tools/serve/serve_tree.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof.h"
#include "core/query/profile.h"
#include "core/util/compress.h"
#include "tests/unit/check.h"

struct mem {
	unsigned char *buf;
	size_t len;
};

static int mem_write(void *arg, const void *buf, size_t len)
{
	struct mem *m = arg;
	unsigned char *grown = realloc(m->buf, m->len + len);

	if (!grown)
		return -ENOMEM;
	memcpy(grown + m->len, buf, len);
	m->buf = grown;
	m->len += len;
	return 0;
}

static struct fr_pprof_data *finish(struct fr_pprof *p, struct mem *m)
{
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t len = 0;

	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
	CHECK(fr_gunzip(m->buf, m->len, &raw, &len) == 0 && fr_pprof_read(raw, len, &d) == 0,
	      "read back");
	free(raw);
	free(m->buf);
	return d;
}

/* Process "x": main -> a -> b (kernel k above b) 30, main -> a 10,
 * main -> g < f (f inlined into g) 20, scaled by `mul` for b and c-paths
 * so that two profiles differ. Values: samples, then cpu (default). */
static struct fr_pprof_data *profile(int64_t ab, int64_t a, int64_t gf)
{
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(6, mem_write, &m);
	const struct fr_pprof_label comm = {.key = "comm", .str = "x"};
	uint64_t kmap, lmain, la, lb, lk, lgf;

	CHECK(p, "fr_pprof_new");
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_default_sample_type(p, "cpu");
	kmap = fr_pprof_mapping(p, 0xffffffff80000000ULL, 0xffffffffc0000000ULL, 0,
				FR_PROFILE_KERNEL_MAPPING, NULL, 1);
	lmain = fr_pprof_location(p, 0, 0x10, fr_pprof_function(p, "main", NULL, NULL));
	la = fr_pprof_location(p, 0, 0x20, fr_pprof_function(p, "a", NULL, NULL));
	lb = fr_pprof_location(p, 0, 0x30, fr_pprof_function(p, "b", NULL, NULL));
	lk = fr_pprof_location(p, kmap, 0xffffffff81000000ULL,
			       fr_pprof_function(p, "k", NULL, NULL));
	{
		const struct fr_pprof_line lines[] = {
			{fr_pprof_function(p, "f", NULL, NULL), 0},
			{fr_pprof_function(p, "g", NULL, NULL), 0},
		};
		lgf = fr_pprof_location_lines(p, 0, 0x40, lines, 2);
	}
	{
		const uint64_t s1[] = {lk, lb, la, lmain}, s2[] = {la, lmain}, s3[] = {lgf, lmain};
		const int64_t v1[] = {1, ab}, v2[] = {1, a}, v3[] = {1, gf};

		if (ab)
			fr_pprof_sample(p, s1, 4, v1, 2, &comm, 1);
		if (a)
			fr_pprof_sample(p, s2, 2, v2, 2, &comm, 1);
		if (gf)
			fr_pprof_sample(p, s3, 2, v3, 2, &comm, 1);
	}
	return finish(p, &m);
}

static const cJSON *child(const cJSON *node, const char *name)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(node, "children"))
		if (strcmp(cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring, name) == 0)
			return c;
	return NULL;
}

static double num(const cJSON *node, const char *key)
{
	const cJSON *v = node ? cJSON_GetObjectItemCaseSensitive(node, key) : NULL;

	if (cJSON_IsRaw(v))
		return strtod(v->valuestring, NULL);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A path of names from `node`, or NULL. */
static const cJSON *path(const cJSON *node, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n && node; i++)
		node = child(node, names[i]);
	return node;
}

/* d3-flame-graph's computeDelta: own delta plus the children's. */
static double subtree_delta(const cJSON *node)
{
	double d = num(node, "delta");
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(node, "children"))
		d += subtree_delta(c);
	return d;
}

static void test_tree(void)
{
	struct fr_pprof_data *d = profile(30, 10, 20);
	struct fr_serve_tree *t = fr_serve_tree_new();
	static const char *const kpath[] = {"x", "main", "a", "b", "k [k]"};
	static const char *const gpath[] = {"x", "main", "g", "f"};
	cJSON *j;

	CHECK(d && t && fr_serve_tree_add(t, d, 0, -1) == 0, "fold");
	CHECK(fr_serve_tree_total(t, 0) == 60, "total %lld", (long long)fr_serve_tree_total(t, 0));
	j = fr_serve_tree_json(t, 0);
	CHECK(j && num(j, "value") == 60, "root value %g", num(j, "value"));
	CHECK(num(path(j, kpath, 2), "value") == 60, "main");
	CHECK(num(path(j, kpath, 3), "value") == 40, "a %g", num(path(j, kpath, 3), "value"));
	CHECK(num(path(j, kpath, 5), "value") == 30, "kernel frame k [k] above b");
	CHECK(num(path(j, gpath, 4), "value") == 20, "f inlined into g, below it");
	CHECK(!path(j, (const char *const[]){"x", "main", "f"}, 3), "f directly under main");
	CHECK(!cJSON_GetObjectItemCaseSensitive(j, "delta"), "a delta outside a diff");
	cJSON_Delete(j);
	fr_serve_tree_free(t);
	fr_pprof_data_free(d);
}

/* First range: b 30, a 10, g<f 20 (60); second: b 90, a 10, no g<f (100).
 * By share b goes 1/2 -> 9/10, a 1/6 -> 1/10, f 1/3 -> 0. */
static void test_diff(void)
{
	struct fr_pprof_data *d0 = profile(30, 10, 20), *d1 = profile(90, 10, 0);
	struct fr_serve_tree *t = fr_serve_tree_new();
	static const char *const bpath[] = {"x", "main", "a", "b"};
	double scale = 100.0 / 60.0;
	cJSON *j;

	CHECK(d0 && d1 && t && fr_serve_tree_add(t, d0, 0, -1) == 0 &&
		      fr_serve_tree_add(t, d1, 1, -1) == 0,
	      "fold both");
	j = fr_serve_tree_json(t, 1);
	CHECK(j && num(j, "value") == 100, "the second range's values");
	CHECK(fabs(subtree_delta(j)) <= 2, "the root's change %g is not 0", subtree_delta(j));
	CHECK(fabs(subtree_delta(path(j, bpath, 4)) - (90 - 30 * scale)) <= 1, "b's change %g",
	      subtree_delta(path(j, bpath, 4)));
	CHECK(fabs(subtree_delta(path(j, bpath, 3)) - (100 - 40 * scale)) <= 2, "a's change %g",
	      subtree_delta(path(j, bpath, 3)));
	/* g is gone: not drawn, its loss is main's. */
	CHECK(!path(j, (const char *const[]){"x", "main", "g"}, 3), "g drawn with no width");
	CHECK(fabs(subtree_delta(path(j, bpath, 2)) - (100 - 60 * scale)) <= 2, "main's change %g",
	      subtree_delta(path(j, bpath, 2)));
	cJSON_Delete(j);
	fr_serve_tree_free(t);
	fr_pprof_data_free(d0);
	fr_pprof_data_free(d1);
}

static size_t count_nodes(const cJSON *node)
{
	size_t n = 1;
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(node, "children"))
		n += count_nodes(c);
	return n;
}

/* A profile of n leaves under main, leaf i of value i + 1. */
static struct fr_pprof_data *leaves(int n)
{
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(1, mem_write, &m);
	uint64_t lmain = fr_pprof_location(p, 0, 0x10, fr_pprof_function(p, "main", NULL, NULL));
	char name[32];

	fr_pprof_sample_type(p, "samples", "count");
	for (int i = 0; i < n; i++) {
		uint64_t locs[2];
		int64_t v = i + 1;

		snprintf(name, sizeof(name), "leaf%d", i);
		locs[0] = fr_pprof_location(p, 0, 0x1000 + (uint64_t)i,
					    fr_pprof_function(p, name, NULL, NULL));
		locs[1] = lmain;
		fr_pprof_sample(p, locs, 2, &v, 1, NULL, 0);
	}
	return finish(p, &m);
}

/* 3 * FR_SERVE_TREE_NODES leaves under main: the largest are kept, the
 * rest is one "(other)" holding exactly their value. */
static void test_cap(void)
{
	enum { N = 3 * FR_SERVE_TREE_NODES };
	struct fr_serve_tree *t = fr_serve_tree_new();
	struct fr_pprof_data *d = leaves(N);
	const cJSON *mainn, *other, *c;
	double sum = 0, smallest_kept = INFINITY;
	cJSON *j;

	CHECK(d && t && fr_serve_tree_add(t, d, 0, -1) == 0, "fold");
	j = fr_serve_tree_json(t, 0);
	CHECK(j && count_nodes(j) <= FR_SERVE_TREE_NODES + 2, "%zu nodes", count_nodes(j));
	mainn = path(j, (const char *const[]){"?", "main"}, 2);
	other = child(mainn, "(other)");
	CHECK(mainn && other, "no (other) under main");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(mainn, "children")) {
		sum += num(c, "value");
		if (c != other && num(c, "value") < smallest_kept)
			smallest_kept = num(c, "value");
	}
	CHECK(sum == num(mainn, "value") && sum == (double)N * (N + 1) / 2,
	      "children sum %g, main %g", sum, num(mainn, "value"));
	CHECK(smallest_kept > (double)N - FR_SERVE_TREE_NODES, "kept a leaf of %g", smallest_kept);
	cJSON_Delete(j);
	fr_serve_tree_free(t);
	fr_pprof_data_free(d);
}

static void test_host(void)
{
	static const struct {
		const char *host, *listen;
		int ok;
	} cases[] = {
		{"localhost", "127.0.0.1", 1},
		{"LocalHost:7077", "127.0.0.1", 1},
		{"127.0.0.1:7077", "127.0.0.1", 1},
		{"127.0.0.2:7077", "127.0.0.1", 1},
		{"[::1]:7077", "127.0.0.1", 1},
		{"[::1]", "::1", 1},
		{"192.0.2.7:7077", "127.0.0.1", 0},
		{"192.0.2.7:7077", "192.0.2.7", 1},
		{"192.0.2.7:7077", "0.0.0.0", 1},
		{"198.51.100.1:7077", "192.0.2.7", 0},
		{"[2001:db8::1]:7077", "::", 1},
		{"[2001:db8::1]:7077", "::1", 0},
		{"127.0.0.1:7078", "127.0.0.1", 0},
		{"localhost:", "127.0.0.1", 0},
		{"evil.example", "0.0.0.0", 0},
		{"evil.example:7077", "127.0.0.1", 0},
		{"127.0.0.1.nip.io:7077", "127.0.0.1", 0},
		{"", "127.0.0.1", 0},
		{"localhost.:7077", "127.0.0.1", 0},
		{"[::1]:7077:7077", "::1", 0},
		{"::1", "::1", 0},
		{"127.0.0.1 :7077", "127.0.0.1", 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(fr_http_host_ok(cases[i].host, cases[i].listen, 7077) == cases[i].ok,
		      "Host \"%s\" listening on %s: %d", cases[i].host, cases[i].listen,
		      !cases[i].ok);
}

static void test_query(void)
{
	char v[16];

	CHECK(fr_http_query_get("a=1&b=%41+c&d", "b", v, sizeof(v)) == 3 && !strcmp(v, "A c"),
	      "b is \"%s\"", v);
	CHECK(fr_http_query_get("a=1&b=2", "c", v, sizeof(v)) == -1, "absent");
	CHECK(fr_http_query_get("ab=1&a=2", "a", v, sizeof(v)) == 1 && !strcmp(v, "2"), "prefix");
	CHECK(fr_http_query_get("d&e=1", "d", v, sizeof(v)) == 0 && !v[0], "no value");
	CHECK(fr_http_query_get("a=%4", "a", v, sizeof(v)) == -2, "short escape");
	CHECK(fr_http_query_get("a=%00", "a", v, sizeof(v)) == -2, "NUL");
	CHECK(fr_http_query_get("a=%zz", "a", v, sizeof(v)) == -2, "bad escape");
	CHECK(fr_http_query_get("a=0123456789abcdef", "a", v, sizeof(v)) == -2, "too long");
}

static int parse(const char *text)
{
	struct fr_http_request r;

	return fr_http_parse(text, strlen(text), &r);
}

static void test_parse(void)
{
	struct fr_http_request r;
	const char *ok = "GET /api/profile?from=1&to=2 HTTP/1.1\r\nHost: localhost\r\n\r\n";

	CHECK(fr_http_parse(ok, strlen(ok), &r) == 0 && !strcmp(r.path, "/api/profile") &&
		      !strcmp(r.query, "from=1&to=2") && !strcmp(r.host, "localhost") &&
		      r.head_len == strlen(ok),
	      "a GET");
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\n") == -1, "incomplete");
	CHECK(parse("POST / HTTP/1.1\r\nHost: x\r\n\r\n") == 405, "POST");
	CHECK(parse("GET / HTTP/1.1\r\n\r\n") == 400, "no Host");
	CHECK(parse("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400, "two Hosts");
	CHECK(parse("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n") == 400,
	      "a body");
	CHECK(parse("GET http://x/ HTTP/1.1\r\nHost: a\r\n\r\n") == 400, "absolute form");
	CHECK(parse("GET / HTTP/2.0\r\nHost: a\r\n\r\n") == 505, "HTTP/2");
	CHECK(parse("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n") == 400, "folding");
	CHECK(parse("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n") == 400, "control byte");
	{
		char *big = malloc(FR_HTTP_HEAD_MAX + 64);

		memset(big, 'a', FR_HTTP_HEAD_MAX + 63);
		memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
		big[FR_HTTP_HEAD_MAX + 63] = '\0';
		CHECK(parse(big) == 431, "a head past the limit");
		free(big);
	}
}

static void test_utf8(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain", "plain"},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5",
		 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"},
		{"a\xff"
		 "b",
		 "a\xef\xbf\xbd"
		 "b"},
		{"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},		  /* overlong '/' */
		{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
		{"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
		{"end\xe2\x82", "end\xef\xbf\xbd\xef\xbf\xbd"}, /* cut short */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		char *out = fr_utf8_clean(cases[i].in, strlen(cases[i].in), &len);

		CHECK(out && len == strlen(cases[i].out) && strcmp(out, cases[i].out) == 0,
		      "case %zu: \"%s\"", i, out ? out : "(null)");
		free(out);
	}
}

/* Regression serve_trees_on_threads: the flame graph's node cap sorted
 * nodes with a comparator that read the tree from a global each caller
 * set, and serve builds trees on several threads at once: two flame
 * graphs answered together sorted one tree by the other's (past its
 * end), and serve crashed (a CI run of serve_concurrent). Four threads
 * emit a large tree (past the cap) and a small one, alternately, and
 * each answer must be its own tree's. */
struct tree_job {
	struct fr_serve_tree *t;
	size_t nodes; /* what its JSON holds */
	double total; /* main's value */
	int bad;
};

static void *emit_trees(void *arg)
{
	struct tree_job *jobs = arg;

	for (int i = 0; i < 40; i++) {
		struct tree_job *j = &jobs[i % 2];
		cJSON *o = fr_serve_tree_json(j->t, 0);
		const cJSON *m = o ? path(o, (const char *const[]){"?", "main"}, 2) : NULL;

		if (!m || count_nodes(o) != j->nodes || num(m, "value") != j->total)
			__atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
		cJSON_Delete(o);
	}
	return NULL;
}

static void test_trees_on_threads(void)
{
	enum { BIG = 4 * FR_SERVE_TREE_NODES, SMALL = 5 };
	struct fr_pprof_data *d[2] = {leaves(BIG), leaves(SMALL)};
	struct tree_job jobs[2] = {{.t = fr_serve_tree_new()}, {.t = fr_serve_tree_new()}};
	pthread_t th[4];

	CHECK(d[0] && d[1] && jobs[0].t && jobs[1].t &&
		      fr_serve_tree_add(jobs[0].t, d[0], 0, -1) == 0 &&
		      fr_serve_tree_add(jobs[1].t, d[1], 0, -1) == 0,
	      "fold");
	for (int k = 0; k < 2; k++) {
		cJSON *o = fr_serve_tree_json(jobs[k].t, 0);
		const cJSON *m = o ? path(o, (const char *const[]){"?", "main"}, 2) : NULL;

		jobs[k].nodes = o ? count_nodes(o) : 0;
		jobs[k].total = m ? num(m, "value") : -1;
		cJSON_Delete(o);
	}
	CHECK(jobs[0].total == (double)BIG * (BIG + 1) / 2 &&
		      jobs[1].total == SMALL * (SMALL + 1) / 2,
	      "alone: %g %g", jobs[0].total, jobs[1].total);
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, emit_trees, jobs) == 0, "thread");
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(!jobs[0].bad && !jobs[1].bad, "trees emitted together came out as another's: %d %d",
	      jobs[0].bad, jobs[1].bad);
	for (int k = 0; k < 2; k++) {
		fr_serve_tree_free(jobs[k].t);
		fr_pprof_data_free(d[k]);
	}
}

int main(void)
{
	test_utf8();
	test_tree();
	test_diff();
	test_cap();
	test_trees_on_threads();
	test_host();
	test_query();
	test_parse();
	return failures ? 1 : 0;
}
