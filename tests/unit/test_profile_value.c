/* A profile as a value (core/query/profile_value.h): built from a ring of
 * the fixture, its samples, labels, values, locations, functions and
 * mappings read through the value's API; the same as the pprof written
 * from it says once decoded; written again from the value byte for byte
 * as fr_profile_write() writes it, in both formats; and independent of
 * the request it was built from once built. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/profile_value.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

static ssize_t find_row(const struct fr_profile *p, uint32_t pid, uint32_t tid)
{
	struct fr_profile_sample s;

	for (size_t i = 0; i < fr_profile_nsamples(p); i++) {
		fr_profile_sample(p, i, &s);
		if (s.pid == pid && s.tid == tid)
			return (ssize_t)i;
	}
	return -1;
}

/* The name a location shows: its outermost function (the symbol's). */
static const char *loc_name(const struct fr_profile *p, uint32_t loc)
{
	struct fr_profile_location l;
	struct fr_profile_line line;

	fr_profile_location(p, loc, &l);
	if (!l.nlines)
		return NULL;
	fr_profile_line(p, loc, l.nlines - 1, &line);
	return line.function;
}

/* The row of (pid, tid) has stack `st` with `n` kept cpu samples: its
 * count and value, its frames named as the fixture names them, kernel
 * ones on the kernel mapping, user ones on this binary's. */
static void check_row(const struct fr_profile *p, uint32_t pid, uint32_t tid, int st, uint64_t n)
{
	ssize_t row = find_row(p, pid, tid);
	struct fr_profile_sample s;
	char bid[2 * FR_BUILD_ID_MAX + 1];

	CHECK(row >= 0, "no row of %u/%u", pid, tid);
	if (row < 0)
		return;
	fr_profile_sample(p, (size_t)row, &s);
	CHECK(s.count == n && s.values[0] == (int64_t)n * PERIOD_99,
	      "row %u/%u: count %" PRIu64 " value %" PRId64 ", want %" PRIu64 " and %" PRId64, pid,
	      tid, s.count, s.values[0], n, (int64_t)n * PERIOD_99);
	CHECK(s.nlocs == stacks[st].nr_frames, "row %u/%u: %u locations, want %u", pid, tid,
	      s.nlocs, stacks[st].nr_frames);
	for (uint32_t j = 0; j < s.nlocs && j < stacks[st].nr_frames; j++) {
		struct fr_profile_location l;
		struct fr_profile_mapping m;
		const char *name = loc_name(p, s.locs[j]);

		fr_profile_location(p, s.locs[j], &l);
		CHECK(name && strcmp(name, stacks[st].names[j]) == 0,
		      "row %u/%u frame %u: %s, want %s", pid, tid, j, name ? name : "(none)",
		      stacks[st].names[j]);
		CHECK(l.kernel == (j < stacks[st].nr_kernel) && l.mapping,
		      "row %u/%u frame %u: kernel %d mapping %u", pid, tid, j, l.kernel, l.mapping);
		if (!l.mapping)
			continue;
		fr_profile_mapping(p, l.mapping, &m);
		if (l.kernel) {
			CHECK(strcmp(m.file, FR_PROFILE_KERNEL_MAPPING) == 0 && !m.build_id[0] &&
				      m.start <= l.address && l.address < m.limit,
			      "kernel frame %u on %s [%#" PRIx64 ", %#" PRIx64 ")", j, m.file,
			      m.start, m.limit);
		} else {
			fr_build_id_hex(exe_bid, (size_t)exe_bid_len, bid);
			CHECK(strcmp(m.file, exe_path) == 0 && strcmp(m.build_id, bid) == 0 &&
				      m.start <= l.address && l.address < m.limit,
			      "user frame %u on %s (%s), want %s (%s)", j, m.file, m.build_id,
			      exe_path, bid);
		}
	}
}

/* Labels in pprof's order: pid, tid, comm, thread, cpu (asked), cgroup. */
static void check_labels(const struct fr_profile *p)
{
	ssize_t row = find_row(p, PID_DB, PID_DB);
	struct fr_profile_sample s;
	static const char *const keys[] = {"pid", "tid", "comm", "thread", "cpu", "cgroup"};

	if (row < 0)
		return;
	fr_profile_sample(p, (size_t)row, &s);
	CHECK(s.nlabels == 6, "db's row has %zu labels, want 6", s.nlabels);
	for (size_t k = 0; k < s.nlabels && k < 6; k++)
		CHECK(strcmp(s.labels[k].key, keys[k]) == 0, "label %zu is %s, want %s", k,
		      s.labels[k].key, keys[k]);
	if (s.nlabels < 6)
		return;
	CHECK(!s.labels[0].str && s.labels[0].num == PID_DB && !s.labels[1].str &&
		      s.labels[1].num == PID_DB,
	      "pid and tid labels are numbers");
	CHECK(s.labels[2].str && strcmp(s.labels[2].str, s.comm) == 0 && s.comm[0],
	      "comm label \"%s\"", s.comm);
	CHECK(s.cgroup && strcmp(s.cgroup, CG_DB) == 0 && s.labels[5].str == s.cgroup,
	      "db's cgroup: %s", s.cgroup ? s.cgroup : "(none)");
	/* db's kernel stack ran on CPUs 0, 1 and 2: one row each with the
	 * cpu label, so its main thread has three rows. */
	CHECK(s.labels[4].str && strlen(s.labels[4].str) == 1, "cpu label \"%s\"",
	      s.labels[4].str ? s.labels[4].str : "(number)");
}

/* db's thread 1: its leaf is a kernel address kallsyms does not name,
 * named by its address. */
static void check_unnamed(const struct fr_profile *p)
{
	ssize_t row = find_row(p, PID_DB, TID(PID_DB, 1));
	struct fr_profile_sample s;
	struct fr_profile_location l;
	struct fr_profile_line line = {.function = ""};

	CHECK(row >= 0, "no row of db's thread 1");
	if (row < 0)
		return;
	fr_profile_sample(p, (size_t)row, &s);
	fr_profile_location(p, s.locs[0], &l);
	if (l.nlines == 1)
		fr_profile_line(p, s.locs[0], 0, &line);
	CHECK(l.kernel && l.nlines == 1 && strcmp(line.function, "0xffffffff80000010") == 0 &&
		      l.address == KADDR_UNNAMED,
	      "unnamed leaf: kernel %d, %u functions (%s), address %#" PRIx64, l.kernel, l.nlines,
	      line.function, l.address);
}

/* Every sample of the value, against the pprof written from it decoded:
 * the same samples in the same order, values, labels and function names. */
static void check_against_pprof(const struct fr_profile *p, const struct raw *raw)
{
	const struct fr_pprof_data *d = raw->d;

	CHECK(d->nsamples == fr_profile_nsamples(p), "pprof has %zu samples, the value %zu",
	      d->nsamples, fr_profile_nsamples(p));
	for (size_t i = 0; i < d->nsamples && i < fr_profile_nsamples(p); i++) {
		const struct fr_pprof_rsample *r = &d->samples[i];
		struct fr_profile_sample s;

		fr_profile_sample(p, i, &s);
		CHECK(d->values[r->val] == (int64_t)s.count && d->values[r->val + 1] == s.values[0],
		      "sample %zu: values differ", i);
		CHECK(r->nlabel == s.nlabels && r->nloc == s.nlocs,
		      "sample %zu: %zu labels, %zu locations; value %zu, %u", i, r->nlabel, r->nloc,
		      s.nlabels, s.nlocs);
		for (size_t k = 0; k < r->nlabel && k < s.nlabels; k++) {
			const struct fr_pprof_rlabel *l = &d->labels[r->label + k];

			CHECK(strcmp(l->key, s.labels[k].key) == 0 &&
				      (s.labels[k].str
					       ? l->str && strcmp(l->str, s.labels[k].str) == 0
					       : l->num == s.labels[k].num),
			      "sample %zu label %zu (%s) differs", i, k, l->key);
		}
		for (size_t j = 0; j < r->nloc && j < s.nlocs; j++) {
			const struct fr_pprof_rlocation *l =
				&d->locations[d->sample_locs[r->loc + j]];
			struct fr_profile_location v;

			fr_profile_location(p, s.locs[j], &v);
			CHECK(l->nline == v.nlines && l->address == v.address,
			      "sample %zu location %zu differs", i, j);
			for (uint32_t k = 0; k < l->nline && k < v.nlines; k++) {
				struct fr_profile_line line;

				fr_profile_line(p, s.locs[j], k, &line);
				CHECK(strcmp(d->functions[d->line_funcs[l->line + k]].name,
					     line.function) == 0 &&
					      d->line_nums[l->line + k] == line.line,
				      "sample %zu location %zu line %u: %s, value %s", i, j, k,
				      d->functions[d->line_funcs[l->line + k]].name, line.function);
			}
		}
	}
}

/* Emits the value into `o` (freed first). */
static int emit(struct fr_profile *p, struct out *o)
{
	char err[256] = "";
	int ret;

	out_free(o);
	memset(o, 0, sizeof(*o));
	ret = fr_profile_emit(p, sink_mem, o, NULL, err, sizeof(err));
	CHECK(ret == 0, "fr_profile_emit: %d %s", ret, err);
	return ret;
}

/* pprof and folded: built, read, and written again as fr_profile_write()
 * writes the same request. */
static void test_value(enum fr_profile_format format)
{
	struct fr_ring *r = test_kernel_ring(format ? "value-folded" : "value");
	struct fr_profile_request q;
	struct fr_profile_result res, vres;
	struct fr_profile *p = NULL;
	struct out o = {0}, v = {0};
	char err[256] = "", version[32];
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.cpu_label = 1;
	q.format = format;
	run(r, &q, &res, &o, format ? "value-folded" : "value");
	/* The value keeps what it needs of the request: the version the
	 * comments name is copied. */
	snprintf(version, sizeof(version), "test");
	q.version = version;
	CHECK(fr_profile_build(r, &q, &p, &vres, err, sizeof(err)) == 0, "fr_profile_build: %s",
	      err);
	memset(version, 'x', sizeof(version) - 1);
	if (!p) {
		out_free(&o);
		test_ring_done(r);
		return;
	}
	CHECK(vres.samples_kept == res.samples_kept && vres.samples_kept == 7,
	      "the value kept %" PRIu64 " samples, the profile %" PRIu64 ", want 7",
	      vres.samples_kept, res.samples_kept);
	CHECK(fr_profile_nsamples(p) == 7, "%zu samples, want 7 (db and app by cpu, db's thread 1)",
	      fr_profile_nsamples(p));
	check_row(p, PID_APP, PID_APP, ST_USER, 1);
	check_row(p, PID_DB, PID_DB, ST_KERNEL, 1);
	check_labels(p);
	check_unnamed(p);
	/* Written from the value, twice: the bytes fr_profile_write() gave. */
	for (int k = 0; k < 2; k++)
		if (emit(p, &v) == 0)
			CHECK(v.len == o.len && memcmp(v.buf, o.buf, o.len) == 0,
			      "emit %d: %zu bytes differ from fr_profile_write()'s %zu", k, v.len,
			      o.len);
	if (format == FR_PROFILE_PPROF && raw_parse(&raw, o.path) == 0) {
		check_against_pprof(p, &raw);
		dump_on_failure(&raw, before);
		raw_free(&raw);
	}
	fr_profile_free(p);
	out_free(&o);
	out_free(&v);
	test_ring_done(r);
}

/* A request the value refuses builds nothing. */
static void test_refused(void)
{
	struct fr_ring *r = test_kernel_ring("value-refused");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct fr_profile *p = (struct fr_profile *)&q;
	char err[256] = "";

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.nevents = 2;
	q.events[0] = q.events[1] = FR_EVENT_CPU;
	CHECK(fr_profile_build(r, &q, &p, &res, err, sizeof(err)) == -EINVAL && !p && err[0],
	      "an event named twice: built, or no reason (%s)", err);
	test_ring_done(r);
}

int main(void)
{
	if (fixture_init("profile-value") < 0)
		return 1;
	test_value(FR_PROFILE_PPROF);
	test_value(FR_PROFILE_FOLDED);
	test_refused();
	return fixture_fini();
}
