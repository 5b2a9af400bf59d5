/* Downsampling: a window collected at 999 Hz read at 99 Hz keeps a tenth
 * of its samples, unbiased and reproducibly, with one period; exactly 99
 * per busy CPU-second; a window of mixed rates is read at the lowest; two
 * events at two rates of their own (event_hz). */

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

/* Writes `seconds` of samples at `hz` on `ncpu` cpus from `t`: stack
 * ST_OTHER a quarter of the time, ST_USER otherwise, over 8 threads. */
static uint64_t write_rate(struct writer *w, int64_t t, int seconds, uint32_t hz, int ncpu)
{
	int64_t step = SEC / hz;
	uint64_t n = 0;

	for (int sec = 0; sec < seconds; sec++) {
		for (uint32_t i = 0; i < hz; i++) {
			for (int cpu = 0; cpu < ncpu; cpu++) {
				int64_t ts = t + sec * SEC + (int64_t)i * step + cpu * 1237;
				uint32_t k = (uint32_t)(n % 8);
				w_add(w, ts, PID_APP, TID(PID_APP, k), (uint32_t)cpu, hz,
				      n % 4 == 3 ? ST_OTHER : ST_USER);
				n++;
			}
		}
		w_seal(w);
	}
	return n;
}

static void test_downsampling(void)
{
	struct fr_ring *r = test_ring_create("downsample");
	struct fr_profile_request q;
	struct fr_profile_result res, res2;
	struct writer w;
	struct out o, o2;
	struct raw raw;
	int before = failures;
	uint64_t n;
	double want;

	if (!r)
		return;
	w_init(&w, r);
	n = write_rate(&w, T0, 25, 999, 2); /* 49950 samples */
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	if (run(r, &q, &res, &o, "down") == 0) {
		want = (double)n * 99 / 999;
		CHECK(res.samples_seen == n, "seen %" PRIu64 ", want %" PRIu64, res.samples_seen,
		      n);
		CHECK(res.hz == 99, "hz %u, want 99", res.hz);
		CHECK(res.samples_kept > want * 0.95 && res.samples_kept < want * 1.05,
		      "kept %" PRIu64 " of %" PRIu64 " at 999 Hz -> 99 Hz, want about %.0f",
		      res.samples_kept, n, want);
		if (raw_read(&raw, &o, "the downsampled profile") == 0) {
			const char *none[] = {NULL};
			int64_t other = 0, total = raw_total(&raw);

			CHECK(raw.period == PERIOD_99, "period %" PRId64 ", want %" PRId64,
			      raw.period, PERIOD_99);
			check_values(&raw, PERIOD_99, "downsampled");
			CHECK(total == (int64_t)res.samples_kept,
			      "pprof total %" PRId64 " differs from samples_kept %" PRIu64, total,
			      res.samples_kept);
			/* Unbiased: a quarter of the samples were in frtest_other. */
			for (int i = 0; i < raw.nsamples; i++)
				if (sample_has_stack(&raw, &raw.s[i], &stacks[ST_OTHER]))
					other += raw.s[i].v[0];
			CHECK(total && other > total * 0.20 && other < total * 0.30,
			      "frtest_other has %" PRId64 " of %" PRId64 " kept samples, want ~1/4",
			      other, total);
			CHECK(find_sample(&raw, ST_USER, none), "no sample of frtest_leaf");
			CHECK(strstr(raw.text, "Comment: cpu: downsampled from 999 Hz to 99 Hz"),
			      "no downsampling comment");
			raw_done(&raw, before);
		}
		/* The same request, the same bytes. */
		if (run(r, &q, &res2, &o2, "down-again") == 0) {
			CHECK(o.len == o2.len && memcmp(o.buf, o2.buf, o.len) == 0,
			      "the same request gave different profiles (%zu and %zu bytes)", o.len,
			      o2.len);
			CHECK(res2.samples_kept == res.samples_kept && res2.stacks == res.stacks,
			      "the same request kept %" PRIu64 " then %" PRIu64 " samples",
			      res.samples_kept, res2.samples_kept);
		}
		out_free(&o2);
	}
	out_free(&o);

	/* As collected: nothing dropped, the 999 Hz period. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "down-asis") == 0) {
		CHECK(res.hz == 999 && res.samples_kept == n,
		      "hz 0 over 999 Hz: hz %u kept %" PRIu64 " of %" PRIu64, res.hz,
		      res.samples_kept, n);
		if (raw_read(&raw, &o, "the 999 Hz profile") == 0) {
			CHECK(raw.period == SEC / 999, "period %" PRId64 ", want %" PRId64,
			      raw.period, SEC / 999);
			CHECK(raw_total(&raw) == (int64_t)n, "pprof total %" PRId64,
			      raw_total(&raw));
			check_values(&raw, SEC / 999, "as collected");
			CHECK(!strstr(raw.text, "downsampled"),
			      "a profile at the collected rate says "
			      "it was downsampled");
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* A window half at 999 Hz and half at 99 Hz has one period: 99 Hz. */
static void test_mixed_rates(void)
{
	struct fr_ring *r = test_ring_create("mixed");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	uint64_t fast, slow;
	double want;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	fast = write_rate(&w, T0, 10, 999, 2);
	slow = write_rate(&w, T0 + 10 * SEC, 10, 99, 2);
	w_fini(&w);

	req_init(&q, T0, T0 + 30 * SEC, 0);
	if (run(r, &q, &res, &o, "mixed") == 0) {
		want = (double)fast * 99 / 999 + (double)slow;
		CHECK(res.hz == 99, "mixed, hz 0: profile at %u Hz, want 99", res.hz);
		CHECK(res.samples_seen == fast + slow, "seen %" PRIu64, res.samples_seen);
		CHECK(res.samples_kept > want - (double)fast * 99 / 999 * 0.1 &&
			      res.samples_kept < want + (double)fast * 99 / 999 * 0.1,
		      "mixed: kept %" PRIu64 ", want about %.0f (all %" PRIu64
		      " at 99 Hz and ~1/10 of %" PRIu64 " at 999 Hz)",
		      res.samples_kept, want, slow, fast);
		if (raw_read(&raw, &o, "the mixed-rate profile") == 0) {
			CHECK(raw.period == PERIOD_99, "period %" PRId64, raw.period);
			check_values(&raw, PERIOD_99, "mixed");
			CHECK(raw_total(&raw) == (int64_t)res.samples_kept, "pprof total %" PRId64,
			      raw_total(&raw));
			CHECK(strstr(raw.text, "Comment: ") && strstr(raw.text, "downsampled"),
			      "no comment says the profile was downsampled");
			raw_done(&raw, before);
		}
	}
	out_free(&o);

	/* Only the 99 Hz half, asked at 999 Hz: 99 Hz it is, and the user is
	 * told so. */
	req_init(&q, T0 + 10 * SEC, T0 + 30 * SEC, 999);
	if (run(r, &q, &res, &o, "upsample") == 0) {
		CHECK(res.hz == 99, "999 Hz asked of 99 Hz data: profile at %u Hz", res.hz);
		CHECK(res.samples_kept == slow, "kept %" PRIu64 " of %" PRIu64, res.samples_kept,
		      slow);
		CHECK(strstr(res.warning, "99 Hz") && strstr(res.warning, "999"),
		      "warning does not name the rates: \"%s\"", res.warning);
		if (raw_read(&raw, &o, "the 99 Hz profile") == 0) {
			CHECK(raw.period == PERIOD_99, "period %" PRId64, raw.period);
			check_values(&raw, PERIOD_99, "upsample");
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* Each busy CPU-second at 999 Hz read at 99 Hz gives 99 samples (98..100
 * where the grid's strata straddle the second), and a 19 Hz profile has
 * the 19 Hz period and 19 samples per CPU-second. */
static void test_exact_seconds(void)
{
	struct fr_ring *r = test_ring_create("exact");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	write_rate(&w, T0, 10, 999, 2);
	w_fini(&w);
	for (int s = 0; s < 10; s++) {
		req_init(&q, T0 + s * SEC, T0 + (s + 1) * SEC, 99);
		if (run(r, &q, &res, &o, "exact-second") == 0)
			CHECK(res.samples_kept >= 2 * 98 && res.samples_kept <= 2 * 100,
			      "second %d on 2 busy CPUs kept %" PRIu64 ", want 198 (2 x 99)", s,
			      res.samples_kept);
		out_free(&o);
	}
	req_init(&q, T0, T0 + 10 * SEC, 19);
	if (run(r, &q, &res, &o, "exact-19") == 0) {
		CHECK(res.hz == 19, "hz %u, want 19", res.hz);
		CHECK(res.samples_kept >= 2 * 190 - 2 && res.samples_kept <= 2 * 190 + 2,
		      "10 s on 2 busy CPUs at 19 Hz kept %" PRIu64 ", want 380", res.samples_kept);
		if (raw_read(&raw, &o, "the 19 Hz profile") == 0) {
			CHECK(raw.period == SEC / 19, "period %" PRId64 ", want %" PRId64,
			      raw.period, SEC / 19);
			CHECK(raw_column(&raw, 1) == (int64_t)res.samples_kept * (SEC / 19),
			      "cpu total %" PRId64 " is not kept x period", raw_column(&raw, 1));
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* cpu asked at 99 Hz and page-faults at 19 Hz in one request, both
 * collected at 999 Hz: each at its own rate, counts exact to within one
 * per CPU, and the page-faults column still totals the faults counted. */
static void test_event_rates(void)
{
	static const uint32_t ev[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	struct fr_ring *r = test_ring_create("event-rates");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;
	uint64_t faults = 0;

	if (!r)
		return;
	w_init(&w, r);
	for (int sec = 0; sec < 10; sec++) {
		for (uint32_t i = 0; i < 999; i++) {
			for (uint32_t cpu = 0; cpu < 2; cpu++) {
				int64_t ts = T0 + sec * SEC + (int64_t)i * (SEC / 999) + cpu * 1237;

				w_add(&w, ts, PID_APP, TID(PID_APP, cpu), cpu, 999, ST_USER);
				w_add_ev(&w, ts + 500, PID_APP, TID(PID_APP, cpu), cpu,
					 FR_EVENT_PAGE_FAULTS, 999, 3 + i % 5, ST_OTHER);
				faults += 3 + i % 5;
			}
		}
		w_seal(&w);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 10 * SEC, 0);
	req_events(&q, 2, ev);
	q.event_hz[0] = 99;
	q.event_hz[1] = 19;
	if (run(r, &q, &res, &o, "event-rates") == 0) {
		CHECK(res.events[0].hz == 99 && res.events[1].hz == 19,
		      "cpu at %u Hz and page-faults at %u Hz, want 99 and 19", res.events[0].hz,
		      res.events[1].hz);
		CHECK(res.events[0].samples_kept >= 1978 && res.events[0].samples_kept <= 1982,
		      "cpu kept %" PRIu64 ", want 1980", res.events[0].samples_kept);
		CHECK(res.events[1].samples_kept >= 378 && res.events[1].samples_kept <= 382,
		      "page-faults kept %" PRIu64 ", want 380", res.events[1].samples_kept);
		if (raw_read(&raw, &o, "the two-rate profile") == 0) {
			int64_t pf = raw_column(&raw, 2);

			CHECK(raw.period == PERIOD_99, "period %" PRId64, raw.period);
			CHECK(raw_column(&raw, 1) ==
				      (int64_t)res.events[0].samples_kept * PERIOD_99,
			      "cpu total %" PRId64, raw_column(&raw, 1));
			CHECK(pf > (int64_t)faults * 9 / 10 && pf < (int64_t)faults * 11 / 10,
			      "page-faults total %" PRId64 ", want about %" PRIu64, pf, faults);
			CHECK(strstr(raw.text, "page-faults: downsampled from 999 Hz to 19 Hz") &&
				      strstr(raw.text, "cpu: downsampled from 999 Hz to 99 Hz"),
			      "the comments do not give each event's rate");
			raw_done(&raw, before);
		}
	}
	out_free(&o);

	/* An event's own rate wins over hz, in either direction. */
	req_init(&q, T0, T0 + 10 * SEC, 99);
	req_events(&q, 2, ev);
	q.event_hz[1] = 499;
	if (run(r, &q, &res, &o, "event-rates-hz") == 0)
		CHECK(res.events[0].hz == 99 && res.events[1].hz == 499,
		      "hz 99 with page-faults at 499: %u and %u", res.events[0].hz,
		      res.events[1].hz);
	out_free(&o);
	test_ring_done(r);
}

int main(void)
{
	if (fixture_init("profile-rates") != 0)
		return 1;
	test_downsampling();
	test_mixed_rates();
	test_exact_seconds();
	test_event_rates();
	return fixture_fini();
}
