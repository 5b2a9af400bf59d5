/* flightrec top: a hand-made profile written by the project's own encoder
 * is read back by core/pprof/pprof_read.c and aggregated; flat and cum must be
 * exact, recursion must count once per sample, kernel frames (on the
 * kernel's mapping) must stay apart from user ones, and garbage or truncated
 * input must be refused with -EBADMSG without reading out of bounds. */
#include "core/pprof/pprof_read.h"
#include "tools/top/top.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/compress.h"
#include "core/pprof/pprof.h"
#include "core/query/profile.h"
#include "core/util/time.h"
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

static const struct fr_top_row *row(const struct fr_top_row *rows, ssize_t n, const char *name)
{
	for (ssize_t i = 0; i < n; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	return NULL;
}

static void check_row(const struct fr_top_row *rows, ssize_t n, const char *name, int64_t flat,
		      int64_t cum, int64_t flat_samples, int64_t cum_samples)
{
	const struct fr_top_row *r = row(rows, n, name);

	CHECK(r, "no row for %s", name);
	if (!r)
		return;
	CHECK(r->flat == flat && r->cum == cum, "%s: flat %lld cum %lld, want %lld %lld", name,
	      (long long)r->flat, (long long)r->cum, (long long)flat, (long long)cum);
	CHECK(r->flat_samples == flat_samples && r->cum_samples == cum_samples,
	      "%s: samples %lld/%lld, want %lld/%lld", name, (long long)r->flat_samples,
	      (long long)r->cum_samples, (long long)flat_samples, (long long)cum_samples);
}

/* main -> a -> rec -> rec (leaf rec); main -> a -> b; main; main -> 0x1234 */
static void encode(struct mem *m)
{
	struct fr_pprof *p = fr_pprof_new(6, mem_write, m);
	uint64_t lmain, la, lrec, lb, lraw;

	CHECK(p, "fr_pprof_new");
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_time(p, 1000, 10 * FR_NS_PER_S);
	lmain = fr_pprof_location(p, 0, 0x10, fr_pprof_function(p, "main", NULL, NULL));
	la = fr_pprof_location(p, 0, 0x20, fr_pprof_function(p, "a", NULL, NULL));
	lrec = fr_pprof_location(p, 0, 0x30, fr_pprof_function(p, "rec", NULL, NULL));
	lb = fr_pprof_location(p, 0, 0x40, fr_pprof_function(p, "b", NULL, NULL));
	lraw = fr_pprof_location(p, 0, 0x1234, 0);
	{
		const uint64_t s1[] = {lrec, lrec, la, lmain}, s2[] = {lb, la, lmain};
		const uint64_t s3[] = {lmain}, s4[] = {lraw, lmain};
		const int64_t v1[] = {1, 10}, v2[] = {2, 20}, v3[] = {1, 5}, v4[] = {1, 7};

		fr_pprof_sample(p, s1, 4, v1, 2, NULL, 0);
		fr_pprof_sample(p, s2, 3, v2, 2, NULL, 0);
		fr_pprof_sample(p, s3, 1, v3, 2, NULL, 0);
		fr_pprof_sample(p, s4, 2, v4, 2, NULL, 0);
	}
	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
}

static void test_roundtrip(const void *raw, size_t len)
{
	struct fr_pprof_data *d;
	struct fr_top t;

	CHECK(fr_pprof_read(raw, len, &d) == 0, "decode");
	if (!d)
		return;
	CHECK(d->ntypes == 2 && strcmp(d->types[1].type, "cpu") == 0 &&
		      strcmp(d->types[1].unit, "nanoseconds") == 0,
	      "sample types");
	CHECK(d->nsamples == 4, "%zu samples", d->nsamples);
	CHECK(d->duration_nanos == 10 * FR_NS_PER_S, "duration %lld", (long long)d->duration_nanos);
	CHECK(fr_top_aggregate(d, 1, 0, &t) == 0, "aggregate");
	CHECK(t.nrows == 5, "%zu functions", t.nrows);
	CHECK(t.total == 42 && t.total_samples == 5, "totals %lld %lld", (long long)t.total,
	      (long long)t.total_samples);
	check_row(t.rows, (ssize_t)t.nrows, "rec", 10, 10, 1, 1);
	check_row(t.rows, (ssize_t)t.nrows, "a", 0, 30, 0, 3);
	check_row(t.rows, (ssize_t)t.nrows, "b", 20, 20, 2, 2);
	check_row(t.rows, (ssize_t)t.nrows, "main", 5, 42, 1, 5);
	check_row(t.rows, (ssize_t)t.nrows, "0x1234", 7, 7, 1, 1);
	fr_top_free(&t);
	/* without a samples column, each sample counts one */
	CHECK(fr_top_aggregate(d, 1, -1, &t) == 0, "aggregate");
	check_row(t.rows, (ssize_t)t.nrows, "main", 5, 42, 1, 4);
	fr_top_free(&t);
	fr_pprof_data_free(d);
}

/* Kernel frames carry plain names in pprof and are told apart by their
 * mapping: the table shows them as "name_[k]", apart from a user function
 * of the same name, and an unnamed kernel address as "0xADDR_[k]".
 * main -> read -> kernel read -> kernel 0xffffffff81000010; main -> read. */
static void test_kernel(void)
{
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(6, mem_write, &m);
	struct fr_pprof_data *d = NULL;
	struct fr_top t = {0};
	void *raw = NULL;
	size_t len = 0;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "samples", "count");
	{
		uint64_t exe = fr_pprof_mapping(p, 0x1000, 0x2000, 0, "/bin/x", NULL, 1);
		uint64_t kmap = fr_pprof_mapping(p, 0xffffffff81000000, 0xffffffff82000000, 0,
						 FR_PROFILE_KERNEL_MAPPING, NULL, 1);
		uint64_t lmain = fr_pprof_location(p, exe, 0x1010,
						   fr_pprof_function(p, "main", NULL, "/bin/x"));
		uint64_t lread = fr_pprof_location(p, exe, 0x1020,
						   fr_pprof_function(p, "read", NULL, "/bin/x"));
		uint64_t lkread = fr_pprof_location(p, kmap, 0xffffffff81000100,
						    fr_pprof_function(p, "read", NULL,
								      FR_PROFILE_KERNEL_MAPPING));
		uint64_t lkaddr = fr_pprof_location(p, kmap, 0xffffffff81000010, 0);
		const uint64_t s1[] = {lkaddr, lkread, lread, lmain}, s2[] = {lread, lmain};
		const int64_t v1[] = {3}, v2[] = {2};

		fr_pprof_sample(p, s1, 4, v1, 1, NULL, 0);
		fr_pprof_sample(p, s2, 2, v2, 1, NULL, 0);
	}
	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
	CHECK(fr_gunzip(m.buf, m.len, &raw, &len) == 0 && fr_pprof_read(raw, len, &d) == 0,
	      "decode the kernel profile");
	if (d) {
		ssize_t n;

		CHECK(fr_top_aggregate(d, 0, -1, &t) == 0, "aggregate");
		n = (ssize_t)t.nrows;
		CHECK(n == 4, "%zd functions, want 4", n);
		check_row(t.rows, n, "0xffffffff81000010_[k]", 3, 3, 1, 1);
		check_row(t.rows, n, "read_[k]", 0, 3, 0, 1);
		check_row(t.rows, n, "read", 2, 5, 1, 2);
		check_row(t.rows, n, "main", 0, 5, 0, 2);
	}
	fr_top_free(&t);
	fr_pprof_data_free(d);
	free(raw);
	free(m.buf);
}

/* Each function's cum split by the process of its samples ("pid" and
 * "comm" labels), the most first: x ran in b[2] (30) and a[1] (10), y in
 * b[2] alone, main in both (b[2] 35 first). */
static void test_processes(void)
{
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(6, mem_write, &m);
	struct fr_pprof_data *d = NULL;
	struct fr_top t = {0};
	void *raw = NULL;
	size_t len = 0;

	CHECK(p, "fr_pprof_new");
	if (!p)
		return;
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	{
		uint64_t lmain = fr_pprof_location(p, 0, 0x10, fr_pprof_function(p, "main", 0, 0));
		uint64_t lx = fr_pprof_location(p, 0, 0x20, fr_pprof_function(p, "x", NULL, NULL));
		uint64_t ly = fr_pprof_location(p, 0, 0x30, fr_pprof_function(p, "y", NULL, NULL));
		const uint64_t sx[] = {lx, lmain}, sy[] = {ly, lmain};
		const int64_t v10[] = {10}, v30[] = {30}, v5[] = {5};
		struct fr_pprof_label a[] = {{.key = "pid", .num = 1}, {.key = "comm", .str = "a"}};
		struct fr_pprof_label b[] = {{.key = "pid", .num = 2}, {.key = "comm", .str = "b"}};

		fr_pprof_sample(p, sx, 2, v10, 1, a, 2);
		fr_pprof_sample(p, sx, 2, v30, 1, b, 2);
		fr_pprof_sample(p, sy, 2, v5, 1, b, 2);
	}
	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
	CHECK(fr_gunzip(m.buf, m.len, &raw, &len) == 0 && fr_pprof_read(raw, len, &d) == 0,
	      "decode the profile");
	if (d && fr_top_aggregate(d, 0, -1, &t) == 0) {
		const struct fr_top_row *x = row(t.rows, (ssize_t)t.nrows, "x");
		const struct fr_top_row *y = row(t.rows, (ssize_t)t.nrows, "y");
		const struct fr_top_row *mn = row(t.rows, (ssize_t)t.nrows, "main");

		CHECK(t.nprocesses == 2, "%zu processes", t.nprocesses);
		CHECK(x && x->nshares == 2 && x->shares[0].cum == 30 && x->shares[1].cum == 10 &&
			      t.processes[x->shares[0].process].pid == 2 &&
			      strcmp(t.processes[x->shares[1].process].comm, "a") == 0,
		      "x's processes");
		CHECK(y && y->nshares == 1 && y->shares[0].cum == 5 &&
			      t.processes[y->shares[0].process].pid == 2,
		      "y's processes");
		CHECK(mn && mn->nshares == 2 && mn->shares[0].cum == 35, "main's processes");
	} else {
		CHECK(0, "aggregate");
	}
	fr_top_free(&t);
	fr_pprof_data_free(d);
	free(raw);
	free(m.buf);
}

static void test_bad(const unsigned char *raw, size_t len)
{
	static const unsigned char garbage[][12] = {
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0x12, 0x7f, 0x08},			   /* sample longer than the input */
		{0x00, 0x01},				   /* field 0 */
		{0x0b, 0x00},				   /* group wire type */
		{0x12, 0x02, 0x08, 0x05},		   /* sample with a dangling location id */
		{0x32, 0x01, 'x', 0x0a, 0x02, 0x08, 0x07}, /* sample type string 7 of 1 */
		{0x22, 0x02, 0x08, 0x01, 0x22, 0x02, 0x08, 0x01}, /* duplicate location id */
		{0x0a, 0x00, 0x12, 0x02, 0x10, 0x01, 0x10, 0x02}, /* 2 values, 1 type */
	};
	static const size_t glen[] = {12, 3, 2, 2, 4, 7, 8, 8};
	struct fr_pprof_data *d;
	size_t bad = 0;

	for (size_t i = 0; i < sizeof(glen) / sizeof(glen[0]); i++) {
		int ret = fr_pprof_read(garbage[i], glen[i], &d);

		CHECK(ret == -EBADMSG && !d, "garbage %zu: %d", i, ret);
	}
	/* Every prefix either ends on a field boundary (a valid, smaller
	 * profile) or is refused; none may crash. Cutting the last byte always
	 * leaves a field without its value. */
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *copy = malloc(cut + 1);
		int ret;

		memcpy(copy, raw, cut);
		ret = fr_pprof_read(copy, cut, &d);
		CHECK(ret == 0 || ret == -EBADMSG, "prefix %zu: %d", cut, ret);
		bad += ret == -EBADMSG;
		fr_pprof_data_free(d);
		free(copy);
	}
	CHECK(bad > len / 2, "only %zu of %zu prefixes refused", bad, len);
	CHECK(fr_pprof_read(raw, len - 1, &d) == -EBADMSG, "truncated by one byte");
}

/* fr_top_print's output of `d` as `o` says, into out. */
static void print_to(const struct fr_pprof_data *d, const struct fr_top_opts *o, char *out,
		     size_t len)
{
	char path[] = "/tmp/fr-test-top-XXXXXX";
	int fd = mkstemp(path), saved;
	ssize_t n = 0;

	out[0] = '\0';
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	if (d && fd >= 0 && saved >= 0 && dup2(fd, STDOUT_FILENO) >= 0) {
		CHECK(fr_top_print(d, o) == 0, "fr_top_print");
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		n = pread(fd, out, len - 1, 0);
		CHECK(n > 0, "top's output");
		out[n > 0 ? n : 0] = '\0';
	}
	if (saved >= 0)
		close(saved);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

/* A heap profile as Go and flightrec write it (no samples/count): the
 * table shows inuse_space, its default, and counts inuse_objects as the
 * samples of each function (not one per row). main -> leak (3 blocks, 300 B in use; 5 and
 * 500 allocated); main -> tmp (0 in use; 2 and 64 allocated). */
static void test_heap(void)
{
	static const char *const types[] = {"alloc_objects", "alloc_space", "inuse_objects",
					    "inuse_space"};
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(6, mem_write, &m);
	struct fr_pprof_data *d = NULL;
	struct fr_top_opts o = {.limit = 10, .json = 1};
	char out[4096] = "";
	uint64_t lmain, lleak, ltmp;
	void *raw = NULL;
	size_t len = 0;

	CHECK(p, "fr_pprof_new");
	for (int k = 0; k < 4; k++)
		fr_pprof_sample_type(p, types[k], k % 2 ? "bytes" : "count");
	fr_pprof_default_sample_type(p, "inuse_space");
	lmain = fr_pprof_location(p, 0, 0x10, fr_pprof_function(p, "main", NULL, NULL));
	lleak = fr_pprof_location(p, 0, 0x20, fr_pprof_function(p, "leak", NULL, NULL));
	ltmp = fr_pprof_location(p, 0, 0x30, fr_pprof_function(p, "tmp", NULL, NULL));
	{
		const uint64_t s1[] = {lleak, lmain}, s2[] = {ltmp, lmain};
		const int64_t v1[] = {5, 500, 3, 300}, v2[] = {2, 64, 0, 0};

		fr_pprof_sample(p, s1, 2, v1, 4, NULL, 0);
		fr_pprof_sample(p, s2, 2, v2, 4, NULL, 0);
	}
	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
	CHECK(fr_gunzip(m.buf, m.len, &raw, &len) == 0 && fr_pprof_read(raw, len, &d) == 0,
	      "heap profile decodes");
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "\"name\":\"leak\"") && strstr(out, "\"flat\":300") &&
		      strstr(out, "\"flat_samples\":3"),
	      "top of a heap profile: %s", out);
	/* The table of inuse_space names alloc_space (alloc_objects counts
	 * its blocks, inuse_objects the table's: neither is an event) */
	o.json = 0;
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "inuse_space total 300B (3 samples)") &&
		      strstr(out, "also holds alloc_space: total 564B (7 samples)") &&
		      !strstr(out, "alloc_objects") && !strstr(out, "holds inuse_objects"),
	      "the heap table's events: %s", out);
	fr_pprof_data_free(d);
	free(raw);
	free(m.buf);
}

/* A wakeup profile: every stack's leaf is the kernel's waking code, the
 * program's functions above it. main -> holder_slow -> unlock -> wake
 * (100 ns waited), main -> produce -> write -> wake (30), wake in the
 * kernel. Unless --sort says, the table is by cum without the kernel's
 * functions: the first three rows hold holder_slow; sorted by flat,
 * wake_[k] alone is first; the text table says what the values are. */
static void test_wakeup(void)
{
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(6, mem_write, &m);
	struct fr_pprof_data *d = NULL;
	struct fr_top_opts o = {.limit = 3, .json = 1, .sort_cum = -1};
	static const char *const fns[] = {"main", "holder_slow", "unlock",
					  "wake", "produce",	 "write"};
	uint64_t l[6];
	char out[4096];
	void *raw = NULL;
	size_t len = 0;

	CHECK(p, "fr_pprof_new");
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "wakeup", "nanoseconds");
	{
		uint64_t exe = fr_pprof_mapping(p, 0x1000, 0x2000, 0, "/bin/x", NULL, 1);
		uint64_t kmap = fr_pprof_mapping(p, 0xffffffff81000000, 0xffffffff82000000, 0,
						 FR_PROFILE_KERNEL_MAPPING, NULL, 1);

		/* "wake" in the kernel, the others in the program */
		for (int k = 0; k < 6; k++)
			l[k] = fr_pprof_location(p, k == 3 ? kmap : exe,
						 (k == 3 ? 0xffffffff81000000 : 0x1000) +
							 0x10 * (uint64_t)(k + 1),
						 fr_pprof_function(p, fns[k], NULL,
								   k == 3 ? FR_PROFILE_KERNEL_MAPPING
									  : "/bin/x"));
	}
	{
		const uint64_t s1[] = {l[3], l[2], l[1], l[0]}, s2[] = {l[3], l[5], l[4], l[0]};
		const int64_t v1[] = {1, 100}, v2[] = {1, 30};

		fr_pprof_sample(p, s1, 4, v1, 2, NULL, 0);
		fr_pprof_sample(p, s2, 4, v2, 2, NULL, 0);
	}
	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
	CHECK(fr_gunzip(m.buf, m.len, &raw, &len) == 0 && fr_pprof_read(raw, len, &d) == 0,
	      "wakeup profile decodes");
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "\"name\":\"holder_slow\"") && !strstr(out, "\"name\":\"produce\"") &&
		      !strstr(out, "_[k]"),
	      "wakeup by cum, without the kernel's functions: %s", out);
	o.sort_cum = 0;
	o.limit = 1;
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "\"name\":\"wake_[k]\"") && !strstr(out, "holder_slow"),
	      "wakeup by flat: %s", out);
	o.json = 0;
	o.sort_cum = -1;
	print_to(d, &o, out, sizeof(out));
	CHECK(strncmp(out, "wakeup: ", 8) == 0, "the table's first line: %s", out);
	fr_pprof_data_free(d);
	free(raw);
	free(m.buf);
}

/* A profile of two events, as attach --event cpu,offcpu writes it: each
 * sample has a value in its event's column alone. The table of cpu (the
 * default column) counts cpu's samples alone, not offcpu's, and names
 * offcpu with its own total; --event offcpu shows that column. main ->
 * spin (2 samples, 20 ns on CPU); main -> wait (3 waits, 900 ns). */
static void test_two_events(void)
{
	struct mem m = {0};
	struct fr_pprof *p = fr_pprof_new(6, mem_write, &m);
	struct fr_pprof_data *d = NULL;
	struct fr_top_opts o = {.limit = 10, .sort_cum = -1};
	uint64_t lmain, lspin, lwait;
	char out[4096];
	struct fr_top t;
	void *raw = NULL;
	size_t len = 0;

	CHECK(p, "fr_pprof_new");
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_sample_type(p, "offcpu", "nanoseconds");
	fr_pprof_default_sample_type(p, "cpu");
	fr_pprof_time(p, 1000, 10 * FR_NS_PER_S);
	lmain = fr_pprof_location(p, 0, 0x10, fr_pprof_function(p, "main", NULL, NULL));
	lspin = fr_pprof_location(p, 0, 0x20, fr_pprof_function(p, "spin", NULL, NULL));
	lwait = fr_pprof_location(p, 0, 0x30, fr_pprof_function(p, "wait", NULL, NULL));
	{
		const uint64_t s1[] = {lspin, lmain}, s2[] = {lwait, lmain};
		const int64_t v1[] = {2, 20, 0}, v2[] = {3, 0, 900};

		fr_pprof_sample(p, s1, 2, v1, 3, NULL, 0);
		fr_pprof_sample(p, s2, 2, v2, 3, NULL, 0);
	}
	CHECK(fr_pprof_finish(p) == 0, "fr_pprof_finish");
	fr_pprof_free(p);
	CHECK(fr_gunzip(m.buf, m.len, &raw, &len) == 0 && fr_pprof_read(raw, len, &d) == 0,
	      "two-event profile decodes");
	if (!d)
		goto out;
	CHECK(fr_top_aggregate(d, 1, 0, &t) == 0, "aggregate");
	CHECK(t.total == 20 && t.total_samples == 2 && t.nrows == 2,
	      "cpu: total %lld, %lld samples, %zu functions; want 20, 2, 2 (no offcpu sample)",
	      (long long)t.total, (long long)t.total_samples, t.nrows);
	check_row(t.rows, (ssize_t)t.nrows, "main", 0, 20, 0, 2);
	fr_top_free(&t);
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "cpu total 20ns (2 samples)") &&
		      strstr(out, "also holds offcpu: total 900ns (3 samples)") &&
		      !strstr(out, "wait"),
	      "the table of cpu: %s", out);
	o.event = "offcpu";
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "offcpu total 900ns (3 samples)") &&
		      strstr(out, "also holds cpu: total 20ns (2 samples)") && !strstr(out, "spin"),
	      "the table of offcpu: %s", out);
	o.event = NULL;
	o.by = FR_TOP_BY_COMM;
	print_to(d, &o, out, sizeof(out));
	CHECK(strstr(out, "also holds offcpu") && !strstr(out, "samples without a comm"),
	      "--by of cpu leaves offcpu's samples out, without calling them comm-less: %s", out);
out:
	fr_pprof_data_free(d);
	free(raw);
	free(m.buf);
}

int main(void)
{
	struct mem m = {0};
	void *raw = NULL;
	size_t len = 0;

	encode(&m);
	CHECK(fr_gunzip(m.buf, m.len, &raw, &len) == 0, "gunzip");
	if (raw) {
		test_roundtrip(raw, len);
		test_bad(raw, len);
	}
	free(raw);
	free(m.buf);
	test_kernel();
	test_wakeup();
	test_two_events();
	test_processes();
	test_heap();
	return failures ? 1 : 0;
}
