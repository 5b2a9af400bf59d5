/* Memory profiles (core/query/profile_mem.c): the events alloc and heap
 * built from allocation, free and live-block records of several processes
 * with snapshots at various times and several sampling means; each block
 * weighed 1/p objects and size/p bytes; Go's sample types in Go's order;
 * the heap at several moments, its growth between two, negative stacks
 * clamped outside a diff; filters; the requests a memory profile refuses. */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/alloc_weight.h"
#include "core/query/profile.h"
#include "core/query/profile_value.h"
#include "core/query/timeline.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

/* Before fixture.h, whose tmpdir its parameter would shadow. */
#include "tests/unit/gopprof.h"

#include "tests/unit/fixture.h"

#define KIB 1024u
#define MEAN (512 * KIB)

/* Times of the story, seconds after T0. */
#define AT(s) (T0 + (int64_t)(s)*SEC)

/*  app (mean 512 KiB): snapshot at 10 s: 2 blocks of 64 B on ST_USER, 1
 *      of 4 KiB on ST_OTHER; at 12 s one more 64 B on ST_USER (thread 1),
 *      freed at 15 s by thread 2; snapshot at 40 s as at 10 s; at 45 s
 *      4 KiB more on ST_OTHER.
 *  db (mean 0: every block, weighs itself): 1000 B on ST_USER at 5 s and
 *      at 20 s, one freed at 25 s; at 30 s a free of 500 B on ST_OTHER
 *      of a block allocated before anything was recorded.
 *  web (mean 64 KiB): snapshot at 50 s: one block of 64 KiB on ST_USER. */
static struct fr_ring *mem_ring(const char *name)
{
	struct fr_ring *r = test_ring_create(name);
	struct writer w;

	if (!r)
		return NULL;
	w_init(&w, r);
	w_add_ev(&w, AT(5), PID_DB, PID_DB, 0, FR_EVENT_ALLOC, 0, 1000, ST_USER);
	for (int k = 0; k < 2; k++)
		w_add_ev(&w, AT(10), PID_APP, TID(PID_APP, k), 0, FR_EVENT_HEAP_LIVE, MEAN, 64,
			 ST_USER);
	w_add_ev(&w, AT(10), PID_APP, PID_APP, 0, FR_EVENT_HEAP_LIVE, MEAN, 4096, ST_OTHER);
	w_add_ev(&w, AT(12), PID_APP, TID(PID_APP, 1), 1, FR_EVENT_ALLOC, MEAN, 64, ST_USER);
	w_add_ev(&w, AT(15), PID_APP, TID(PID_APP, 2), 1, FR_EVENT_ALLOC_FREE, MEAN, 64, ST_USER);
	w_seal(&w);
	w_add_ev(&w, AT(20), PID_DB, PID_DB, 0, FR_EVENT_ALLOC, 0, 1000, ST_USER);
	w_add_ev(&w, AT(25), PID_DB, PID_DB, 0, FR_EVENT_ALLOC_FREE, 0, 1000, ST_USER);
	w_add_ev(&w, AT(30), PID_DB, PID_DB, 0, FR_EVENT_ALLOC_FREE, 0, 500, ST_OTHER);
	/* cpu samples beside them, which no memory profile counts */
	w_add(&w, AT(30), PID_APP, PID_APP, 0, 99, ST_USER);
	for (int k = 0; k < 2; k++)
		w_add_ev(&w, AT(40), PID_APP, TID(PID_APP, k), 0, FR_EVENT_HEAP_LIVE, MEAN, 64,
			 ST_USER);
	w_add_ev(&w, AT(40), PID_APP, PID_APP, 0, FR_EVENT_HEAP_LIVE, MEAN, 4096, ST_OTHER);
	w_seal(&w);
	w_add_ev(&w, AT(45), PID_APP, PID_APP, 0, FR_EVENT_ALLOC, MEAN, 4096, ST_OTHER);
	w_add_ev(&w, AT(50), PID_WEB, PID_WEB, 0, FR_EVENT_HEAP_LIVE, 64 * KIB, 64 * KIB, ST_USER);
	/* 3 allocation samples the recorder could not take from web */
	fr_chunk_builder_count(w.b, FR_EVENT_ALLOC, 3, 0, 0);
	/* Frees lost: the heap counts them, the alloc profile not. */
	fr_chunk_builder_count(w.b, FR_EVENT_ALLOC_FREE, 2, 0, 0);
	w_fini(&w);
	return r;
}

/* What the blocks stand for, rounded: 64 B at 512 KiB is 8192.5 blocks
 * of 524320 B; 4 KiB is 128.5007 blocks of 526338.67 B; 64 KiB at a
 * 64 KiB mean 1.58 blocks of 103676.4 B. */
#define O64 8193
#define B64 524320
#define O4K 129
#define B4K 526339
#define O64K 2
#define B64K 103676

static void test_weight_math(void)
{
	double o, b;

	fr_alloc_scale(64, MEAN, &o, &b);
	CHECK(fabs(o - 8192.5) < 1e-3 && fabs(b - 524320) < 0.01, "64 B at 512 KiB: %f %f", o, b);
	fr_alloc_scale(4096, MEAN, &o, &b);
	CHECK(fabs(o - 128.50065) < 1e-4 && fabs(b - 526338.667) < 0.01, "4 KiB: %f %f", o, b);
	fr_alloc_scale(1000, 0, &o, &b);
	CHECK(o == 1 && b == 1000, "mean 0: %f %f", o, b);
	fr_alloc_scale(0, MEAN, &o, &b);
	CHECK(o == 1 && b == 0, "size 0: %f %f", o, b);
	/* A block far above the mean is sampled for sure. */
	fr_alloc_scale(64 << 20, MEAN, &o, &b);
	CHECK(fabs(o - 1) < 1e-9 && fabs(b - (64 << 20)) < 1e-3, "64 MiB: %f %f", o, b);
	/* A size a hostile process made up stays within what adds up. */
	fr_alloc_scale(UINT64_MAX, 1, &o, &b);
	CHECK(fr_alloc_round(b) == (int64_t)1 << 62 &&
		      fr_alloc_round(-3 * b) == -((int64_t)1 << 62) && fr_alloc_round(NAN) == 0 &&
		      fr_alloc_round(2.5) == 3,
	      "rounding: %" PRId64, fr_alloc_round(b));
}

/* A row's values: the columns after the profile's, as -raw shows them. */
static void check_row(const struct raw *r, int st, uint32_t pid, const int64_t *want, int n,
		      const char *what)
{
	const struct rsample *s = find_pid(r, st, pid);

	CHECK(s != NULL, "%s: no row of pid %u stack %d", what, pid, st);
	if (!s)
		return;
	CHECK(s->nv == n, "%s: %d values", what, s->nv);
	for (int k = 0; k < n && k < s->nv; k++)
		CHECK(s->v[k] == want[k],
		      "%s: pid %u stack %d column %d: %" PRId64 ", want %" PRId64, what, pid, st, k,
		      s->v[k], want[k]);
	CHECK(!strstr(s->labels, "tid:") && !strstr(s->labels, "thread:"),
	      "%s: a memory row has no thread: %s", what, s->labels);
}

static void heap_req(struct fr_profile_request *q, int64_t t0, int64_t t1, uint32_t ev)
{
	req_init(q, t0, t1, 0);
	req_events(q, 1, &ev);
}

static bool has_comment(const struct raw *r, const char *text)
{
	for (size_t i = 0; i < r->d->ncomments; i++)
		if (strstr(r->d->comments[i], text))
			return true;
	return false;
}

static void test_alloc(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw r;
	int before = failures;

	heap_req(&q, AT(0), AT(60), FR_EVENT_ALLOC);
	if (run(ring, &q, &res, &o, "alloc") != 0 || raw_read(&r, &o, "alloc") != 0) {
		out_free(&o);
		return;
	}
	CHECK(strcmp(r.types, "alloc_objects/count alloc_space/bytes[dflt]") == 0,
	      "alloc types: %s", r.types);
	CHECK(r.d->period_type.type && strcmp(r.d->period_type.type, "space") == 0 &&
		      strcmp(r.d->period_type.unit, "bytes") == 0 && r.period == MEAN,
	      "alloc period: %s/%s %" PRId64, r.d->period_type.type, r.d->period_type.unit,
	      r.period);
	check_row(&r, ST_USER, PID_APP, (int64_t[]){O64, B64}, 2, "alloc app user");
	check_row(&r, ST_OTHER, PID_APP, (int64_t[]){O4K, B4K}, 2, "alloc app other");
	check_row(&r, ST_USER, PID_DB, (int64_t[]){2, 2000}, 2, "alloc db");
	CHECK(r.nsamples == 3, "alloc rows: %d (web allocated nothing, cpu is not memory)",
	      r.nsamples);
	CHECK(raw_column(&r, 1) == B64 + B4K + 2000, "alloc_space total %" PRId64,
	      raw_column(&r, 1));
	CHECK(has_comment(&r, "4 allocation samples") && has_comment(&r, "mean 512KiB") &&
		      has_comment(&r, "alloc: 3 allocation samples lost"),
	      "alloc comments");
	raw_done(&r, before);
	out_free(&o);

	/* Folded stacks count bytes. */
	q.format = FR_PROFILE_FOLDED;
	if (run(ring, &q, &res, &o, "alloc-folded") == 0) {
		char want[32];

		snprintf(want, sizeof(want), " %d\n", B64);
		CHECK(o.len && memmem(o.buf, o.len, want, strlen(want)),
		      "folded alloc lines count bytes: %.*s", (int)o.len, (char *)o.buf);
	}
	out_free(&o);

	/* An empty window says why. */
	heap_req(&q, AT(100), AT(160), FR_EVENT_ALLOC);
	if (run(ring, &q, &res, &o, "alloc-empty") == 0 && raw_read(&r, &o, "alloc-empty") == 0) {
		CHECK(r.nsamples == 0 && has_comment(&r, "no allocation samples: no process "
							 "loaded libflightrec"),
		      "empty alloc profile");
		raw_done(&r, before);
	}
	out_free(&o);
}

/* A heap profile at t1 of [t0, t1): its rows as Go orders them, alloc_*
 * over the window, inuse_* at t1. */
static int heap_at(struct fr_ring *ring, int64_t t0, int64_t t1, int diff, struct raw *r,
		   const char *what)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	int ret;

	heap_req(&q, t0, t1, FR_EVENT_HEAP);
	q.heap_diff = diff;
	ret = run(ring, &q, &res, &o, what) != 0 || raw_read(r, &o, what) != 0 ? -1 : 0;
	out_free(&o);
	/* The span said is the window's, not the read back to a snapshot. */
	if (ret == 0)
		CHECK(!res.first_ns || (res.first_ns >= t0 && res.last_ns <= t1),
		      "%s: span %" PRId64 "..%" PRId64, what, (res.first_ns - T0) / SEC,
		      (res.last_ns - T0) / SEC);
	if (ret == 0)
		CHECK(strcmp(r->types, "alloc_objects/count alloc_space/bytes "
				       "inuse_objects/count inuse_space/bytes[dflt]") == 0,
		      "%s: types %s", what, r->types);
	return ret;
}

static void test_heap(struct fr_ring *ring)
{
	struct raw r;
	int before = failures;

	/* At 30 s (a 30 s window: the read reaches back to the snapshot at
	 * 10 s): app's snapshot + 1 - 1; db without a snapshot, its frees
	 * of the 500 B block clamped (the row, all zero, dropped). */
	if (heap_at(ring, AT(0), AT(30), 0, &r, "heap@30") == 0) {
		check_row(&r, ST_USER, PID_APP, (int64_t[]){O64, B64, 2 * O64 - 1, 2 * B64}, 4,
			  "heap@30 app user");
		check_row(&r, ST_OTHER, PID_APP, (int64_t[]){0, 0, O4K, B4K}, 4,
			  "heap@30 app other");
		check_row(&r, ST_USER, PID_DB, (int64_t[]){2, 2000, 1, 1000}, 4, "heap@30 db");
		CHECK(!find_pid(&r, ST_OTHER, PID_DB) && !find_pid(&r, -1, PID_WEB),
		      "heap@30: the clamped row and web's later snapshot are out");
		CHECK(r.nsamples == 3, "heap@30 rows: %d", r.nsamples);
		CHECK(has_comment(&r, "snapshot at 2023-11-14T22:13:30.000Z") &&
			      has_comment(&r, "no snapshot: since") &&
			      has_comment(&r, "1 stacks had more frees"),
		      "heap@30 comments");
		raw_done(&r, before);
	}
	/* At 60 s from a 10 s window: the snapshot at 40 s, 60 s back. */
	if (heap_at(ring, AT(50), AT(60), 0, &r, "heap@60") == 0) {
		check_row(&r, ST_USER, PID_APP, (int64_t[]){0, 0, 2 * O64 - 1, 2 * B64}, 4,
			  "heap@60 app user");
		check_row(&r, ST_OTHER, PID_APP, (int64_t[]){0, 0, 257, 1052677}, 4,
			  "heap@60 app other");
		check_row(&r, ST_USER, PID_WEB, (int64_t[]){0, 0, O64K, B64K}, 4, "heap@60 web");
		check_row(&r, ST_USER, PID_DB, (int64_t[]){0, 0, 1, 1000}, 4, "heap@60 db");
		CHECK(r.nsamples == 4, "heap@60 rows: %d", r.nsamples);
		CHECK(has_comment(&r, "heap: 5 allocation records lost in this window"),
		      "heap@60: the lost allocation samples");
		raw_done(&r, before);
	}
	/* At 12 s: the snapshot at 10 s and the allocation at 12 s (T
	 * included); a free after T does not count. */
	if (heap_at(ring, AT(11), AT(12), 0, &r, "heap@12") == 0) {
		check_row(&r, ST_USER, PID_APP, (int64_t[]){0, 0, 3 * O64 - 1, 3 * B64}, 4,
			  "heap@12 app user");
		raw_done(&r, before);
	}
}

static void test_diff(struct fr_ring *ring)
{
	struct raw r;
	int before = failures;

	/* (10 s, 50 s]: app's 64 B block came and went, 4 KiB more; db's
	 * 1000 B came and went, and a 500 B block went: negative growth. */
	if (heap_at(ring, AT(10), AT(50), 1, &r, "diff") != 0)
		return;
	check_row(&r, ST_USER, PID_APP, (int64_t[]){O64, B64, 0, 0}, 4, "diff app user");
	check_row(&r, ST_OTHER, PID_APP, (int64_t[]){O4K, B4K, O4K, B4K}, 4, "diff app other");
	check_row(&r, ST_USER, PID_DB, (int64_t[]){1, 1000, 0, 0}, 4, "diff db user");
	check_row(&r, ST_OTHER, PID_DB, (int64_t[]){0, 0, -1, -500}, 4, "diff db other");
	CHECK(r.nsamples == 4, "diff rows: %d (web's snapshot is no growth)", r.nsamples);
	CHECK(has_comment(&r, "negative where the heap shrank"), "diff comment");
	raw_done(&r, before);
}

/* Targets apply to every record: db alone. */
static void test_filters(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw r;
	int before = failures;

	heap_req(&q, AT(0), AT(30), FR_EVENT_HEAP);
	q.targets.npids = 1;
	q.targets.pids[0] = PID_DB;
	if (run(ring, &q, &res, &o, "heap-db") == 0 && raw_read(&r, &o, "heap-db") == 0) {
		check_row(&r, ST_USER, PID_DB, (int64_t[]){2, 2000, 1, 1000}, 4, "heap-db");
		CHECK(r.nsamples == 1, "heap-db rows: %d", r.nsamples);
		raw_done(&r, before);
	}
	out_free(&o);

	/* app by its command name, then by its cgroup: a label of its rows. */
	q.targets.npids = 0;
	q.targets.ncomms = 1;
	snprintf(q.targets.comms[0], sizeof(q.targets.comms[0]), "frtest-app");
	for (int k = 0; k < 2; k++) {
		if (run(ring, &q, &res, &o, "heap-app") == 0 && raw_read(&r, &o, "heap-app") == 0) {
			const struct rsample *s = find_pid(&r, ST_USER, PID_APP);

			CHECK(r.nsamples == 2 && s && strstr(s->labels, CG_NGINX) &&
				      strstr(s->labels, "comm:[frtest-app]"),
			      "heap of app (%s): %d rows, %s", k ? "cgroup" : "comm", r.nsamples,
			      s ? s->labels : "none");
			raw_done(&r, before);
		}
		out_free(&o);
		q.targets.ncomms = 0;
		snprintf(q.targets.cgroup, sizeof(q.targets.cgroup), "%s", CG_NGINX);
	}
}

/* The value: values[0] is the default column's bytes, mem[] every column. */
static void test_value(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct fr_profile *p = NULL;
	char err[256];
	int64_t total = 0;

	heap_req(&q, AT(0), AT(30), FR_EVENT_HEAP);
	CHECK(fr_profile_build(ring, &q, &p, &res, err, sizeof(err)) == 0, "build: %s", err);
	for (size_t i = 0; p && i < fr_profile_nsamples(p); i++) {
		struct fr_profile_sample s;

		fr_profile_sample(p, i, &s);
		CHECK(s.is_mem && s.values[0] == s.mem[3], "value %zu: %" PRId64 " %" PRId64, i,
		      s.values[0], s.mem[3]);
		total += s.values[0];
	}
	CHECK(total == 2 * B64 + B4K + 1000, "in use at 30 s: %" PRId64, total);
	fr_profile_free(p);
}

/* cpu beside heap: samples/count, cpu, then heap's four columns. */
static void test_mixed(struct fr_ring *ring)
{
	static const uint32_t ev[] = {FR_EVENT_CPU, FR_EVENT_HEAP};
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw r;
	int before = failures;

	req_init(&q, AT(0), AT(30) + 1, 0);
	req_events(&q, 2, ev);
	if (run(ring, &q, &res, &o, "mixed") == 0 && raw_read(&r, &o, "mixed") == 0) {
		CHECK(strcmp(r.types,
			     "samples/count cpu/nanoseconds[dflt] alloc_objects/count "
			     "alloc_space/bytes inuse_objects/count inuse_space/bytes") == 0,
		      "mixed types: %s", r.types);
		CHECK(raw_column(&r, 1) == PERIOD_99 && raw_column(&r, 5) == 2 * B64 + B4K + 1000,
		      "mixed: cpu %" PRId64 " inuse_space %" PRId64, raw_column(&r, 1),
		      raw_column(&r, 5));
		raw_done(&r, before);
	}
	out_free(&o);
}

/* The edges: an allocation at its snapshot's time is in the snapshot
 * (not counted twice); one at T is in the heap at T, not before. Mean 0:
 * each block weighs itself. */
static void test_edges(void)
{
	struct fr_ring *ring = test_ring_create("edges");
	static const struct {
		int64_t t0, t1;
		int64_t user[4], other[4];
	} want[] = {
		{AT(5), AT(10), {0, 0, 1, 100}, {0}},
		{AT(5), AT(11), {1, 100, 1, 100}, {0}},
		{AT(15), AT(20), {0, 0, 1, 100}, {0, 0, 1, 7}},
		{AT(15), AT(20) - 1, {0, 0, 1, 100}, {0}},
	};
	struct writer w;
	struct raw r;
	int before = failures;

	if (!ring)
		return;
	w_init(&w, ring);
	w_add_ev(&w, AT(10), PID_APP, PID_APP, 0, FR_EVENT_ALLOC, 0, 100, ST_USER);
	w_add_ev(&w, AT(10), PID_APP, PID_APP, 0, FR_EVENT_HEAP_LIVE, 0, 100, ST_USER);
	w_add_ev(&w, AT(20), PID_APP, PID_APP, 0, FR_EVENT_ALLOC, 0, 7, ST_OTHER);
	w_fini(&w);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		char what[32];

		snprintf(what, sizeof(what), "edges %zu", k);
		if (heap_at(ring, want[k].t0, want[k].t1, 0, &r, what) != 0)
			continue;
		check_row(&r, ST_USER, PID_APP, want[k].user, 4, what);
		if (want[k].other[3])
			check_row(&r, ST_OTHER, PID_APP, want[k].other, 4, what);
		else
			CHECK(!find_pid(&r, ST_OTHER, PID_APP), "%s: the block after T is in",
			      what);
		raw_done(&r, before);
	}
	test_ring_done(ring);
}

/* alloc and heap asked together (a session may record both): Go's four
 * columns once, the default the first one's; each event's samples. */
static void test_both(struct fr_ring *ring)
{
	static const uint32_t orders[2][2] = {{FR_EVENT_ALLOC, FR_EVENT_HEAP},
					      {FR_EVENT_HEAP, FR_EVENT_ALLOC}};
	static const char *const types[2] = {
		"alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes",
		"alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]"};
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw r;
	int before = failures;

	for (int k = 0; k < 2; k++) {
		req_init(&q, AT(0), AT(30), 0);
		req_events(&q, 2, orders[k]);
		if (run(ring, &q, &res, &o, "both") == 0 && raw_read(&r, &o, "both") == 0) {
			CHECK(strcmp(r.types, types[k]) == 0, "both, order %d: %s", k, r.types);
			check_row(&r, ST_USER, PID_APP, (int64_t[]){O64, B64, 2 * O64 - 1, 2 * B64},
				  4, "both app user");
			CHECK(r.nsamples == 3, "both rows: %d", r.nsamples);
			raw_done(&r, before);
		}
		out_free(&o);
		CHECK(res.events[k].event == FR_EVENT_ALLOC && res.events[k].samples_seen == 3 &&
			      res.events[k].samples_kept == 3,
		      "alloc's samples beside heap: %" PRIu64 " %" PRIu64,
		      res.events[k].samples_seen, res.events[k].samples_kept);
	}
}

static void test_refused(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	char err[256] = "";

	heap_req(&q, AT(0), AT(30), FR_EVENT_ALLOC);
	q.heap_diff = 1;
	CHECK(fr_profile_write(ring, &q, sink_mem, NULL, &res, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "event heap"),
	      "diff of alloc: %s", err);
}

/* Frees and live blocks carry no application labels: a label narrows a
 * heap's alloc_* alone (no allocation here has tenant 42), its in-use is
 * every label's; alloc is narrowed whole. */
static void test_labels(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw r;
	int before = failures;

	heap_req(&q, AT(0), AT(30), FR_EVENT_HEAP);
	CHECK(fr_targets_add_label(&q.targets, "tenant=42") == 0, "label");
	if (run(ring, &q, &res, &o, "heap-label") == 0 && raw_read(&r, &o, "heap-label") == 0) {
		check_row(&r, ST_USER, PID_APP, (int64_t[]){0, 0, 2 * O64 - 1, 2 * B64}, 4,
			  "heap-label app user");
		check_row(&r, ST_USER, PID_DB, (int64_t[]){0, 0, 1, 1000}, 4, "heap-label db");
		CHECK(has_comment(&r, "narrow alloc_objects and alloc_space only"),
		      "heap-label comment");
		raw_done(&r, before);
	}
	out_free(&o);
	heap_req(&q, AT(0), AT(30), FR_EVENT_ALLOC);
	CHECK(fr_targets_add_label(&q.targets, "tenant=42") == 0, "label");
	if (run(ring, &q, &res, &o, "alloc-label") == 0 && raw_read(&r, &o, "alloc-label") == 0) {
		CHECK(r.nsamples == 0, "alloc-label: %d rows", r.nsamples);
		raw_done(&r, before);
	}
	out_free(&o);
}

/* flightrec timeline --event alloc: per 10 s step, the bytes allocated,
 * estimated as the profiles do; frees and live blocks are not
 * allocations; heap has no timeline. */
static void test_timeline(struct fr_ring *ring)
{
	struct fr_timeline_request req = {.t0 = AT(0),
					  .t1 = AT(60),
					  .step_ns = 10 * SEC,
					  .event = FR_EVENT_ALLOC};
	struct fr_timeline *t = NULL;
	char err[256];
	int64_t want_app[6] = {0, B64, 0, 0, B4K, 0}, want_db[6] = {1000, 0, 1000, 0, 0, 0};

	CHECK(fr_timeline_compute(ring, &req, &t, err, sizeof(err)) == 0, "timeline: %s", err);
	if (!t)
		return;
	/* The events a page offers: alloc and heap, not the record kinds. */
	CHECK(t->nevents == 3 && t->events[0] == FR_EVENT_CPU && t->events[1] == FR_EVENT_ALLOC &&
		      t->events[2] == FR_EVENT_HEAP,
	      "timeline events: %u", t->nevents);
	CHECK(t->samples == 4 && t->nsteps == 6 && t->ngroups == 2,
	      "timeline: %" PRIu64 " samples, %u steps, %u groups", t->samples, t->nsteps,
	      t->ngroups);
	for (uint32_t g = 0; g < t->ngroups; g++) {
		const int64_t *want = t->groups[g].pid == PID_APP ? want_app : want_db;

		for (uint32_t k = 0; k < t->nsteps && k < 6; k++)
			CHECK((int64_t)t->groups[g].values[k] == want[k],
			      "timeline pid %u step %u: %" PRIu64 ", want %" PRId64,
			      t->groups[g].pid, k, t->groups[g].values[k], want[k]);
	}
	fr_timeline_free(t);
	t = NULL;
	req.event = FR_EVENT_HEAP;
	CHECK(fr_timeline_compute(ring, &req, &t, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "alloc"),
	      "timeline of heap: %s", err);
	fr_timeline_free(t);
}

/* go tool pprof, the reader users have, reads the heap profile as its
 * own: -sample_index=inuse_space and alloc_space pick Go's columns. */
static void test_go(struct fr_ring *ring, const char *go)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	char path[300], *top;
	struct out o;

	snprintf(path, sizeof(path), "%s", tmpdir);
	setenv("HOME", path, 1);
	snprintf(path, sizeof(path), "%s/gocache", tmpdir);
	setenv("GOCACHE", path, 1);
	setenv("PPROF_TMPDIR", tmpdir, 1);
	heap_req(&q, AT(0), AT(30), FR_EVENT_HEAP);
	if (run(ring, &q, &res, &o, "heap-go") != 0) {
		out_free(&o);
		return;
	}
	top = fr_test_go_pprof(go, "-symbolize=none -sample_index=inuse_space -top", o.path,
			       tmpdir);
	CHECK(top && strstr(top, "Type: inuse_space") && strstr(top, stacks[ST_USER].names[0]) &&
		      strstr(top, "of 1539.04kB total"),
	      "go tool pprof -sample_index=inuse_space -top:\n%s", top ? top : "(failed)");
	free(top);
	top = fr_test_go_pprof(go, "-symbolize=none -sample_index=alloc_space -top", o.path,
			       tmpdir);
	CHECK(top && strstr(top, "Type: alloc_space") && strstr(top, "of 513.98kB total"),
	      "go tool pprof -sample_index=alloc_space -top:\n%s", top ? top : "(failed)");
	free(top);
	out_free(&o);
}

/* With "go": only the check of go tool pprof (skipped without it). */
int main(int argc, char **argv)
{
	const char *go = argc > 1 && strcmp(argv[1], "go") == 0 ? getenv("FR_GO") : NULL;
	struct fr_ring *ring;

	if (argc > 1 && (!go || !*go || access(go, X_OK) != 0)) {
		fprintf(stderr, "SKIP: no Go toolchain (FR_GO, the meson's go program) to run "
				"go tool pprof, the reference reader\n");
		return 77;
	}
	if (fixture_init("profile-mem") != 0)
		return 1;
	ring = go ? mem_ring("mem") : NULL;
	if (go) {
		if (ring)
			test_go(ring, go);
		test_ring_done(ring);
		return fixture_fini();
	}
	test_weight_math();
	test_edges();
	ring = mem_ring("mem");
	if (ring) {
		test_alloc(ring);
		test_heap(ring);
		test_diff(ring);
		test_filters(ring);
		test_value(ring);
		test_mixed(ring);
		test_both(ring);
		test_refused(ring);
		test_labels(ring);
		test_timeline(ring);
	}
	test_ring_done(ring);
	return fixture_fini();
}
