/* Downsampling: a window collected at 999 Hz read at 99 Hz keeps about a
 * tenth of its samples, unbiased and reproducibly, with one period; a
 * window of mixed rates is read at the lowest. */

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

int main(void)
{
	if (fixture_init("profile-rates") != 0)
		return 1;
	test_downsampling();
	test_mixed_rates();
	return fixture_fini();
}
