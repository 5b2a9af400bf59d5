/* Off-CPU in a window with open-wait records (core/query/profile_open.c):
 * completed waits clipped to the window, threads still blocked at its end
 * counted from the latest records, windows that tile time adding up, and
 * a ring whose recorder stopped counting no further than its records say.
 * The rings are synthetic: chunk k is sealed at T0 + k s + 0.5 s with the
 * waits that completed since the previous seal and the records of the
 * threads blocked at the seal, as the recorder writes them. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

#include "tests/unit/fixture.h"

#define MS ((int64_t)1000000)
#define NSEALS 10

/* The threads: A blocked since 5 s before T0 and never back; B blocked
 * from 1.2 s to 3.7 s; C blocked from 8.8 s on (after the seal at 8.5 s);
 * D blocked from -2 s to 0.3 s (before any record). */
#define TA TID(PID_DB, 1)
#define TB TID(PID_DB, 2)
#define TC TID(PID_DB, 3)
#define TD TID(PID_DB, 4)
#define OUT_A (T0 - 5 * SEC)
#define OUT_B (T0 + 1200 * MS)
#define IN_B (T0 + 3700 * MS)
#define OUT_C (T0 + 8800 * MS)
#define OUT_D (T0 - 2 * SEC)
#define IN_D (T0 + 300 * MS)

static void record(struct writer *w, int64_t asof, uint32_t tid, int64_t out)
{
	w_add_ev(w, asof, PID_DB, tid, 0, FR_EVENT_OFFCPU_OPEN, 0, (uint64_t)(asof - out),
		 ST_KERNEL);
}

static void write_ring(struct fr_ring *r)
{
	struct writer w;

	w_init(&w, r);
	for (int k = 0; k < NSEALS; k++) {
		int64_t seal = T0 + k * SEC + 500 * MS;

		if (IN_D <= seal && IN_D > seal - SEC)
			w_add_ev(&w, IN_D, PID_DB, TD, 1, FR_EVENT_OFFCPU, 0,
				 (uint64_t)(IN_D - OUT_D), ST_USER);
		if (IN_B <= seal && IN_B > seal - SEC)
			w_add_ev(&w, IN_B, PID_DB, TB, 1, FR_EVENT_OFFCPU, 0,
				 (uint64_t)(IN_B - OUT_B), ST_KERNEL);
		record(&w, seal, TA, OUT_A);
		if (OUT_B < seal && IN_B > seal)
			record(&w, seal, TB, OUT_B);
		if (OUT_C < seal)
			record(&w, seal, TC, OUT_C);
		w_seal(&w);
	}
	w_fini(&w);
}

/* Offcpu ns of thread `tid` on stack `st` in the profile (0: no row). */
static int64_t thread_ns(const struct raw *raw, uint32_t tid, int st)
{
	char l[64];
	const char *want[] = {label(l, sizeof(l), "tid", tid), NULL};
	const struct rsample *s = find_sample(raw, st, want);

	return s ? s->v[1] : 0;
}

/* Queries offcpu in [t0, t1) and stores each thread's ns in got[4]. */
static int query(struct fr_ring *r, int64_t t0, int64_t t1, int64_t got[4])
{
	static const uint32_t off[] = {FR_EVENT_OFFCPU};
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int ret = -1, before = failures;

	req_init(&q, t0, t1, 0);
	req_events(&q, 1, off);
	if (run(r, &q, &res, &o, "open") == 0 && raw_read(&raw, &o, "the offcpu profile") == 0) {
		got[0] = thread_ns(&raw, TA, ST_KERNEL);
		got[1] = thread_ns(&raw, TB, ST_KERNEL);
		got[2] = thread_ns(&raw, TC, ST_KERNEL);
		got[3] = thread_ns(&raw, TD, ST_USER);
		CHECK(raw_column(&raw, 1) == got[0] + got[1] + got[2] + got[3],
		      "[%+" PRId64 ", %+" PRId64 ") ms: rows of other threads or stacks",
		      (t0 - T0) / MS, (t1 - T0) / MS);
		raw_done(&raw, before);
		ret = 0;
	}
	out_free(&o);
	return ret;
}

static void check4(const int64_t got[4], const int64_t want[4], const char *what)
{
	static const char names[] = "ABCD";

	for (int i = 0; i < 4; i++)
		CHECK(got[i] == want[i], "%s: thread %c has %" PRId64 " ns, want %" PRId64, what,
		      names[i], got[i], want[i]);
}

/* One window over everything: A blocked all of it, B's completed wait
 * whole, C from its switch-out to the end, D clipped at t0. */
static void test_whole_window(struct fr_ring *r)
{
	int64_t got[4];
	const int64_t want[4] = {10 * SEC, IN_B - OUT_B, T0 + 10 * SEC - OUT_C, IN_D - T0};

	if (query(r, T0, T0 + 10 * SEC, got) == 0)
		check4(got, want, "[0 s, 10 s)");
}

/* Windows of one second: each counts what falls inside it; they add up
 * to the waits, except C's 0.2 s between its switch-out and the end of
 * the window before its first record (the documented gap). */
static void test_tiling(struct fr_ring *r)
{
	int64_t got[4], sum[4] = {0};
	const int64_t want[4] = {10 * SEC, IN_B - OUT_B, T0 + 10 * SEC - (T0 + 9 * SEC), IN_D - T0};

	for (int k = 0; k < NSEALS; k++) {
		if (query(r, T0 + k * SEC, T0 + (k + 1) * SEC, got) < 0)
			return;
		CHECK(got[0] == SEC, "window %d: A has %" PRId64 " ns, want the whole second", k,
		      got[0]);
		if (k == 1)
			CHECK(got[1] == T0 + 2 * SEC - OUT_B, "window 1: B has %" PRId64, got[1]);
		if (k == 3)
			CHECK(got[1] == IN_B - (T0 + 3 * SEC), "window 3: B has %" PRId64 " ns",
			      got[1]);
		for (int i = 0; i < 4; i++)
			sum[i] += got[i];
	}
	check4(sum, want, "ten windows of 1 s");
}

/* A window reaching past the last records (a recorder that crashed after
 * its seal at 9.5 s): blocked threads are counted up to 2 s past their
 * records, no further. */
static void test_past_the_records(struct fr_ring *r)
{
	int64_t got[4];
	const int64_t end = T0 + 9500 * MS + 2 * SEC;
	const int64_t want[4] = {end - T0, IN_B - OUT_B, end - OUT_C, IN_D - T0};

	if (query(r, T0, T0 + 60 * SEC, got) == 0)
		check4(got, want, "[0 s, 60 s)");
}

/* Open-wait records are offcpu's only: a cpu profile shows none. */
static void test_not_cpu(struct fr_ring *r)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;

	req_init(&q, T0, T0 + 10 * SEC, 0);
	if (run(r, &q, &res, &o, "open-cpu") == 0)
		CHECK(res.samples_seen == 0 && res.stacks == 0,
		      "cpu profile: seen %" PRIu64 " stacks %" PRIu64, res.samples_seen,
		      res.stacks);
	out_free(&o);
}

int main(void)
{
	struct fr_ring *r;

	if (fixture_init("profile-open") != 0)
		return 1;
	r = test_ring_create("open");
	if (r) {
		write_ring(r);
		test_whole_window(r);
		test_tiling(r);
		test_past_the_records(r);
		test_not_cpu(r);
		test_ring_done(r);
	}
	return fixture_fini();
}
