/* Window queries end to end: which samples a window [t0, t1) holds, the
 * pid filter, how samples aggregate into rows with their labels, the
 * mappings and comments of the profile, and folded stacks. The fixture
 * (fixture.h) builds the rings and reads the profiles back. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

#include "tests/unit/fixture.h"

/* [t0, t1): a sample exactly at t0 is in, one at t1 is out; chunks that
 * do not overlap the window are not read at all. */
static void test_window(void)
{
	const int64_t t0 = T0, t1 = T0 + 10 * SEC;
	struct fr_ring *r = test_ring_create("window");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t tn, dn;
	int before = failures;
	char l1[64];
	/* Each sample is told apart by its thread (TID(PID_APP, k)). */
	static const struct {
		int chunk;
		int64_t t;
		int in;
	} samples[] = {
		{0, T0 - 30 * SEC, 0}, {0, T0 - 1, 0},			  /* ends just before t0 */
		{1, T0 - 2 * SEC, 0},  {1, T0 - 1, 0},	      {1, T0, 1}, /* ends at t0 */
		{2, T0 + 1, 1},	       {2, T0 + 5 * SEC, 1},  {2, T0 + 10 * SEC - 1, 1},
		{2, T0 + 10 * SEC, 0},			      /* ends at t1 */
		{3, T0 + 10 * SEC, 0}, {3, T0 + 11 * SEC, 0}, /* starts at t1 */
		{4, T0 + 60 * SEC, 0},			      /* after */
	};
	const size_t n = sizeof(samples) / sizeof(samples[0]);

	if (!r)
		return;
	w_init(&w, r);
	for (size_t i = 0; i < n; i++) {
		if (i && samples[i].chunk != samples[i - 1].chunk)
			w_seal(&w);
		w_add(&w, samples[i].t, PID_APP, TID(PID_APP, i + 1), 0, 99, ST_USER);
	}
	w_fini(&w);
	CHECK(w.chunks == 5, "wrote %u chunks, want 5", w.chunks);

	req_init(&q, t0, t1, 0);
	if (run(r, &q, &res, &o, "window") == 0) {
		CHECK(res.chunks == 2, "chunks read %" PRIu64 ", want 2 (the two overlapping)",
		      res.chunks);
		CHECK(res.chunks_skipped == 0, "chunks skipped %" PRIu64, res.chunks_skipped);
		CHECK(res.samples_seen == 4, "samples seen %" PRIu64 ", want 4", res.samples_seen);
		CHECK(res.samples_kept == 4, "samples kept %" PRIu64 ", want 4", res.samples_kept);
		CHECK(res.stacks == 4, "stacks %" PRIu64 ", want 4", res.stacks);
		CHECK(res.hz == 99, "hz %u, want 99", res.hz);
		CHECK(res.warning[0] == '\0', "unexpected warning: %s", res.warning);
		CHECK(profile_times(&o, &tn, &dn) == 0, "cannot decode the profile");
		CHECK(tn == t0 && dn == t1 - t0,
		      "time %" PRId64 " duration %" PRId64 ", want the window", tn, dn);
		if (raw_read(&raw, &o, "the window profile") == 0) {
			CHECK(raw.nsamples == 4, "pprof shows %d samples, want 4", raw.nsamples);
			for (size_t i = 0; i < n; i++) {
				const char *want[] = {label(l1, sizeof(l1), "tid",
							    TID(PID_APP, i + 1)),
						      NULL};
				const struct rsample *s = find_sample(&raw, ST_USER, want);

				CHECK(!s == !samples[i].in,
				      "sample at t0%+" PRId64 " ns: %s, want %s", samples[i].t - T0,
				      s ? "in" : "out", samples[i].in ? "in" : "out");
				if (s)
					CHECK(s->v[0] == 1,
					      "sample at t0%+" PRId64 ": count %" PRId64,
					      samples[i].t - T0, s->v[0]);
			}
			raw_done(&raw, before);
		}
	}
	out_free(&o);

	/* A window inside one chunk, between two of its samples: the chunk is
	 * read but no sample is in. */
	req_init(&q, T0 + 2 * SEC, T0 + 3 * SEC, 0);
	if (run(r, &q, &res, &o, "window-gap") == 0) {
		CHECK(res.chunks == 1 && res.samples_seen == 0 && res.stacks == 0,
		      "gap: chunks %" PRIu64 " seen %" PRIu64 " stacks %" PRIu64, res.chunks,
		      res.samples_seen, res.stacks);
		if (raw_read(&raw, &o, "the empty-window profile") == 0) {
			CHECK(raw.nsamples == 0, "gap: pprof shows %d samples", raw.nsamples);
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

static void test_pid_filter(void)
{
	struct fr_ring *r = test_ring_create("pids");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	char l1[64];
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 60; i++) {
		uint32_t pid = i < 10 ? PID_APP : i < 30 ? PID_DB : PID_WEB;
		w_add(&w, T0 + i * (SEC / 100), pid, pid, (uint32_t)i % 4, 99, ST_USER);
		if (i == 25)
			w_seal(&w);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 10 * SEC, 0);
	q.targets.npids = 2;
	q.targets.pids[0] = PID_WEB;
	q.targets.pids[1] = PID_APP;
	if (run(r, &q, &res, &o, "pids") == 0) {
		CHECK(res.samples_seen == 40 && res.samples_kept == 40 && res.stacks == 2,
		      "pids app+web: seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64
		      ", want 40 40 2",
		      res.samples_seen, res.samples_kept, res.stacks);
		if (raw_read(&raw, &o, "the pid-filtered profile") == 0) {
			const char *app[] = {label(l1, sizeof(l1), "pid", PID_APP), NULL};
			const struct rsample *s = find_sample(&raw, ST_USER, app);
			char l2[64], l3[64];
			const char *web[] = {label(l2, sizeof(l2), "pid", PID_WEB), NULL};
			const char *db[] = {label(l3, sizeof(l3), "pid", PID_DB), NULL};

			CHECK(s && s->v[0] == 10, "pid app: %" PRId64 " samples, want 10",
			      s ? s->v[0] : -1);
			s = find_sample(&raw, ST_USER, web);
			CHECK(s && s->v[0] == 30, "pid web: %" PRId64 " samples, want 30",
			      s ? s->v[0] : -1);
			CHECK(!find_sample(&raw, -1, db), "pid db is in a profile of app and web");
			CHECK(raw.nsamples == 2, "pprof shows %d samples, want 2", raw.nsamples);
			raw_done(&raw, before);
		}
	}
	out_free(&o);

	q.targets.npids = 1;
	q.targets.pids[0] = PID_DB;
	if (run(r, &q, &res, &o, "pids-db") == 0)
		CHECK(res.samples_seen == 20 && res.samples_kept == 20 && res.stacks == 1,
		      "pid db: seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64, res.samples_seen,
		      res.samples_kept, res.stacks);
	out_free(&o);

	q.targets.pids[0] = PID_BASE + 99;
	if (run(r, &q, &res, &o, "pids-none") == 0) {
		CHECK(res.samples_seen == 0 && res.stacks == 0,
		      "absent pid: seen %" PRIu64 " stacks %" PRIu64, res.samples_seen, res.stacks);
		if (raw_read(&raw, &o, "the profile of an absent pid") == 0)
			raw_free(&raw);
	}
	out_free(&o);
	test_ring_done(r);
}

/* Two chunks of the same five stacks, interned in different orders, from
 * three processes; returns the ring, or NULL. */
static struct fr_ring *aggregation_ring(const char *name)
{
	struct fr_ring *r = test_ring_create(name);
	struct writer w;
	int64_t t = T0 + SEC;

	if (!r)
		return NULL;
	w_init(&w, r);
	/* Chunk 1. */
	w_add(&w, t += 1000, PID_APP, PID_APP, 0, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 1, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, PID_APP, 2, 99, ST_USER);
	w_add(&w, t += 1000, PID_APP, TID(PID_APP, 1), 0, 99, ST_USER);
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 3, 99, ST_USER);
	w_seal(&w);
	/* Chunk 2: the same stacks interned in another order. */
	w_add(&w, t += 1000, PID_APP, PID_APP, 1, 99, ST_OTHER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 0, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, PID_APP, 3, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 2, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, TID(PID_APP, 1), 1, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 3, 99, ST_KERNEL);
	for (int i = 0; i < 4; i++)
		w_add(&w, t += 1000, PID_WEB, PID_WEB, (uint32_t)i, 99, ST_USER);
	w_fini(&w);
	return r;
}

static void test_aggregation(void)
{
	struct fr_ring *r = aggregation_ring("aggregate");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;
	char l1[64], l2[64];

	if (!r)
		return;

	req_init(&q, T0, T0 + 60 * SEC, 99);
	/* What the daemon says when it could not flush before reading. */
	q.note = "incomplete: frtest note";
	if (run(r, &q, &res, &o, "aggregate") == 0) {
		CHECK(res.samples_seen == 15 && res.samples_kept == 15,
		      "seen %" PRIu64 " kept %" PRIu64 ", want 15 15", res.samples_seen,
		      res.samples_kept);
		CHECK(res.stacks == 5, "stacks %" PRIu64 ", want 5", res.stacks);
		CHECK(res.chunks == 2 && res.hz == 99, "chunks %" PRIu64 " hz %u", res.chunks,
		      res.hz);
		if (raw_read(&raw, &o, "the aggregated profile") == 0) {
			static const struct {
				int st;
				uint32_t pid, tid;
				const char *comm, *thread;
				int64_t count;
			} want[] = {
				{ST_USER, PID_APP, PID_APP, "frtest-app", "frtest-app", 3},
				{ST_USER, PID_APP, TID(PID_APP, 1), "frtest-app", "worker-1", 2},
				{ST_KERNEL, PID_DB, PID_DB, "frtest-db", "frtest-db", 4},
				{ST_OTHER, PID_APP, PID_APP, "frtest-app", "frtest-app", 1},
				{ST_USER, PID_WEB, PID_WEB, "frtest-web", "frtest-web", 5},
			};

			CHECK(strstr(raw.text, "PeriodType: cpu nanoseconds\n"),
			      "no \"PeriodType: cpu nanoseconds\"");
			CHECK(strstr(raw.text, "Period: 10101010\n"), "no \"Period: 10101010\"");
			CHECK(strstr(raw.text, "samples/count cpu/nanoseconds[dflt]"),
			      "sample types are not samples/count cpu/nanoseconds[dflt]");
			CHECK(strstr(raw.text, "Comment: flightrec test"), "no version comment");
			CHECK(strstr(raw.text, "Comment: incomplete: frtest note"),
			      "the request's note is not a comment");
			CHECK(raw.nsamples == 5, "pprof shows %d samples, want 5", raw.nsamples);
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
				char lc[64], lt[64];
				const char *labels[] = {label(l1, sizeof(l1), "pid", want[i].pid),
							label(l2, sizeof(l2), "tid", want[i].tid),
							lc, lt, NULL};
				const struct rsample *s;

				snprintf(lc, sizeof(lc), "comm:[%s]", want[i].comm);
				snprintf(lt, sizeof(lt), "thread:[%s]", want[i].thread);
				s = find_sample(&raw, want[i].st, labels);
				CHECK(s, "no sample %s %s %s with stack %s;%s;...", l1, l2, lt,
				      stacks[want[i].st].names[0], stacks[want[i].st].names[1]);
				if (s)
					CHECK(s->v[0] == want[i].count &&
						      s->v[1] == want[i].count * PERIOD_99,
					      "%s %s stack %s: values [%" PRId64 " %" PRId64
					      "], want [%" PRId64 " %" PRId64 "]",
					      l1, l2, stacks[want[i].st].names[0], s->v[0], s->v[1],
					      want[i].count, want[i].count * PERIOD_99);
			}
			/* The mapping of this binary, with its build id. */
			CHECK(strstr(raw.text, exe_path), "no mapping of %s", exe_path);
			if (exe_bid_len > 0) {
				char hex[2 * FR_BUILD_ID_MAX + 1];
				fr_build_id_hex(exe_bid, (size_t)exe_bid_len, hex);
				CHECK(strstr(raw.text, hex), "no build id %s", hex);
			}
			CHECK(strstr(raw.text, "[kernel.kallsyms]"), "no kernel mapping");
			/* The control for the uid-limited profile below. */
			CHECK(strstr(raw.text, "ffffffff81"),
			      "no kernel addresses in root's profile");
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* The aggregation ring seen by one uid, and with cpu labels. */
static void test_aggregation_views(void)
{
	struct fr_ring *r = aggregation_ring("aggregate-views");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	char l1[64];

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.note = "incomplete: frtest note";
	/* A profile limited to one uid (a user who is not privileged) names
	 * kernel functions but gives no kernel address: those would undo
	 * the kernel's address layout randomization. PID_DB runs as uid 0
	 * and has the kernel stacks. */
	q.targets.has_uid = 1;
	q.targets.uid = 0;
	if (run(r, &q, &res, &o, "aggregate-uid") == 0) {
		if (raw_read(&raw, &o, "the uid-limited profile") == 0) {
			CHECK(strstr(raw.text, "frk_schedule"), "no kernel function names");
			CHECK(!strstr(raw.text, "ffffffff81"),
			      "kernel addresses in a user's profile");
			raw_free(&raw);
		}
	}
	out_free(&o);
	q.targets.has_uid = 0;

	/* With a cpu label, samples of one thread on different cpus stay apart. */
	q.cpu_label = 1;
	if (run(r, &q, &res, &o, "aggregate-cpu") == 0) {
		CHECK(res.samples_kept == 15 && res.stacks == 14,
		      "cpu label: kept %" PRIu64 " stacks %" PRIu64 ", want 15 14",
		      res.samples_kept, res.stacks);
		if (raw_read(&raw, &o, "the profile with cpu labels") == 0) {
			const char *labels[] = {label(l1, sizeof(l1), "pid", PID_WEB), "cpu:[3]",
						NULL};
			const struct rsample *s = find_sample(&raw, ST_USER, labels);

			CHECK(s && s->v[0] == 2, "web on cpu 3: %" PRId64 ", want 2",
			      s ? s->v[0] : -1);
			labels[1] = "cpu:[0]";
			s = find_sample(&raw, ST_USER, labels);
			CHECK(s && s->v[0] == 1, "web on cpu 0: %" PRId64 ", want 1",
			      s ? s->v[0] : -1);
			/* Regression: go tool pprof drops a numeric label of 0
			 * (it has no unit), so CPU 0's samples showed no cpu
			 * label there; the label is a string. */
			for (size_t i = 0; i < raw.d->nsamples; i++) {
				const struct fr_pprof_rsample *rs = &raw.d->samples[i];

				for (size_t k = 0; k < rs->nlabel; k++) {
					const struct fr_pprof_rlabel *lb =
						&raw.d->labels[rs->label + k];

					if (strcmp(lb->key, "cpu") == 0)
						CHECK(lb->str, "a numeric cpu label (%" PRId64 ")",
						      lb->num);
				}
			}
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* Folded stacks: comm first, frames root first with kernel frames as
 * leaves, threads and cpus of a process merged, lines sorted. */
static void test_folded(void)
{
	static const char want[] =
		"frtest-app;frtest_root;frtest_middle;frtest_leaf 5\n"
		"frtest-app;frtest_root;frtest_other 1\n"
		"frtest-db;frtest_root;frtest_middle;frtest_leaf;frk_entry_syscall_[k];"
		"frk_do_sys_read_[k];frk_schedule_[k] 4\n"
		"frtest-web;frtest_root;frtest_middle;frtest_leaf 2\n";
	struct fr_ring *r = test_ring_create("folded");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	int64_t t = T0 + SEC;

	if (!r)
		return;
	w_init(&w, r);
	w_add(&w, t += 1000, PID_APP, PID_APP, 0, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 1, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, TID(PID_APP, 1), 2, 99, ST_USER);
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 3, 99, ST_USER);
	w_seal(&w);
	w_add(&w, t += 1000, PID_APP, PID_APP, 1, 99, ST_OTHER);
	for (int i = 0; i < 3; i++) {
		w_add(&w, t += 1000, PID_DB, PID_DB, (uint32_t)i, 99, ST_KERNEL);
		w_add(&w, t += 1000, PID_APP, TID(PID_APP, i), (uint32_t)i, 99, ST_USER);
	}
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 0, 99, ST_USER);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.format = FR_PROFILE_FOLDED;
	q.cpu_label = 1;
	if (run(r, &q, &res, &o, "folded") == 0) {
		CHECK(o.len == strlen(want) && memcmp(o.buf, want, o.len) == 0,
		      "folded output is\n%.*s\nwant\n%s", (int)o.len, (char *)o.buf, want);
		CHECK(res.samples_kept == 12 && res.stacks == 4 && res.bytes == o.len,
		      "kept %" PRIu64 " lines %" PRIu64 " bytes %" PRIu64 ", want 12 4 %zu",
		      res.samples_kept, res.stacks, res.bytes, o.len);
	}
	out_free(&o);
	test_ring_done(r);
	CHECK(fr_profile_format_parse("pprof") == FR_PROFILE_PPROF &&
		      fr_profile_format_parse("folded") == FR_PROFILE_FOLDED &&
		      fr_profile_format_parse("svg") == -EINVAL &&
		      fr_profile_format_parse("") == -EINVAL,
	      "fr_profile_format_parse");
}

int main(void)
{
	if (fixture_init("profile-window") != 0)
		return 1;
	test_window();
	test_pid_filter();
	test_aggregation();
	test_aggregation_views();
	test_folded();
	return fixture_fini();
}
