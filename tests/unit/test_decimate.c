/* Decimation (core/query/decimate.h): the grid keeps exactly T/R of a
 * stream's samples (to within one), per second of a busy CPU, through a
 * change of rate, per stream; it is unbiased where the program moves in
 * step with the sampling (where keeping every tenth sample would see one
 * phase only); it is deterministic; the hash method is binomial. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/decimate.h"
#include "core/util/time.h"
#include "tests/unit/check.h"

#define SEC FR_NS_PER_S
#define T0 (1700000000 * SEC)

/* Counts of `n` samples at `rate` on `cpu` from `t`, read at `target`,
 * added to *kept; with `phase`, also the counts of samples i with
 * i % period == 0 into *phase. */
static int run(struct fr_decimator *d, uint32_t cpu, int64_t t, uint32_t n, uint32_t rate,
	       uint32_t target, uint32_t period, int64_t *kept, int64_t *phase)
{
	for (uint32_t i = 0; i < n; i++) {
		int m = fr_decimate(d, cpu, 0, t + (int64_t)i * (SEC / rate), 100 + cpu, rate,
				    target);

		if (m < 0 || m > 2)
			return -1;
		*kept += m;
		if (phase && i % period == 0)
			*phase += m;
	}
	return 0;
}

/* A CPU busy for 60 s at 999 Hz read at 99 Hz: every second 99 (98..100
 * where a stratum straddles the second), the minute 5940 to within one. */
static void test_grid_exact(void)
{
	struct fr_decimator d;
	int64_t total = 0;
	int off = 0;

	fr_decimator_init(&d, FR_DECIMATE_GRID);
	for (int s = 0; s < 60; s++) {
		int64_t k = 0;

		CHECK(run(&d, 0, T0 + s * SEC, 999, 999, 99, 1, &k, NULL) == 0, "run failed");
		CHECK(k >= 98 && k <= 100, "second %d kept %" PRId64 ", want 99 (98..100)", s, k);
		off += k != 99;
		total += k;
	}
	CHECK(total >= 5939 && total <= 5941, "60 busy seconds kept %" PRId64 ", want 5940", total);
	CHECK(off <= 60, "off %d", off);
	fr_decimator_fini(&d);

	/* 19 Hz from 999 Hz: 1140 a minute, to within one. */
	fr_decimator_init(&d, FR_DECIMATE_GRID);
	total = 0;
	CHECK(run(&d, 3, T0, 999 * 60, 999, 19, 1, &total, NULL) == 0, "run failed");
	CHECK(total >= 1139 && total <= 1141, "999 -> 19 Hz kept %" PRId64 ", want 1140", total);
	fr_decimator_fini(&d);
}

/* Streams are per (cpu, event): four CPUs each keep their own exact share,
 * interleaved; and a stream whose rate changes from 999 to 499 Hz keeps
 * 99/999 then 99/499 of its samples. */
static void test_grid_streams(void)
{
	struct fr_decimator d;
	int64_t per[4] = {0}, k = 0;

	fr_decimator_init(&d, FR_DECIMATE_GRID);
	for (uint32_t i = 0; i < 9990; i++)
		for (uint32_t cpu = 0; cpu < 4; cpu++)
			per[cpu] += fr_decimate(&d, cpu, 0, T0 + i * 1001001, 7, 999, 99);
	for (int cpu = 0; cpu < 4; cpu++)
		CHECK(per[cpu] >= 989 && per[cpu] <= 991, "cpu %d kept %" PRId64 ", want 990", cpu,
		      per[cpu]);
	/* Another event on cpu 0 is a stream of its own. */
	for (uint32_t i = 0; i < 999; i++)
		k += fr_decimate(&d, 0, 7, T0 + i * 1001001, 7, 999, 99);
	CHECK(k >= 98 && k <= 100, "page-faults on cpu 0 kept %" PRId64 ", want 99", k);
	fr_decimator_fini(&d);

	fr_decimator_init(&d, FR_DECIMATE_GRID);
	k = 0;
	CHECK(run(&d, 0, T0, 9990, 999, 99, 1, &k, NULL) == 0 &&
		      run(&d, 0, T0 + 10 * SEC, 4990, 499, 99, 1, &k, NULL) == 0,
	      "run failed");
	CHECK(k >= 1979 && k <= 1981, "999 then 499 Hz kept %" PRId64 ", want 990 + 990", k);
	fr_decimator_fini(&d);
}

/* A program in step with the sampling: a phase every 10th sample (10% of
 * the samples). Keeping every tenth sample would keep that phase always
 * or never; the grid keeps it about 10% of the time. */
static void test_grid_unbiased(void)
{
	struct fr_decimator d;
	int64_t kept = 0, phase = 0;

	fr_decimator_init(&d, FR_DECIMATE_GRID);
	CHECK(run(&d, 1, T0, 100000, 1000, 100, 10, &kept, &phase) == 0, "run failed");
	CHECK(kept >= 9999 && kept <= 10001, "kept %" PRId64 ", want 10000", kept);
	CHECK(phase > 850 && phase < 1150,
	      "the phase of every 10th sample counted %" PRId64 " of %" PRId64 ", want ~1000",
	      phase, kept);
	fr_decimator_fini(&d);

	/* Two phases alternating: each about half. */
	fr_decimator_init(&d, FR_DECIMATE_GRID);
	kept = phase = 0;
	CHECK(run(&d, 1, T0, 99900, 999, 99, 2, &kept, &phase) == 0, "run failed");
	CHECK(phase > kept * 45 / 100 && phase < kept * 55 / 100,
	      "alternating phases: one counted %" PRId64 " of %" PRId64, phase, kept);
	fr_decimator_fini(&d);
}

/* Same input, same counts; nothing to decimate, everything counted once. */
static void test_deterministic(void)
{
	struct fr_decimator a, b;
	int same = 1;

	fr_decimator_init(&a, FR_DECIMATE_GRID);
	fr_decimator_init(&b, FR_DECIMATE_GRID);
	for (uint32_t i = 0; i < 20000; i++)
		same &= fr_decimate(&a, i % 3, 0, T0 + i, 1, 999, 99) ==
			fr_decimate(&b, i % 3, 0, T0 + i, 1, 999, 99);
	CHECK(same, "two decimators of the same samples disagree");
	CHECK(fr_decimate(&a, 0, 0, T0, 1, 99, 99) == 1 &&
		      fr_decimate(&a, 0, 0, T0, 1, 19, 99) == 1 &&
		      fr_decimate(&a, 0, 0, T0, 1, 0, 99) == 1 &&
		      fr_decimate(&a, 0, 0, T0, 1, 999, 0) == 1,
	      "a sample at or below the target rate is not counted once");
	fr_decimator_fini(&a);
	fr_decimator_fini(&b);
}

/* The hash: about T/R, but not exact (binomial). */
static void test_hash(void)
{
	struct fr_decimator d;
	int64_t kept = 0;

	fr_decimator_init(&d, FR_DECIMATE_HASH);
	CHECK(run(&d, 0, T0, 99900, 999, 99, 1, &kept, NULL) == 0, "run failed");
	CHECK(kept > 9900 - 400 && kept < 9900 + 400, "hash kept %" PRId64 ", want ~9900", kept);
	fr_decimator_fini(&d);
}

int main(void)
{
	test_grid_exact();
	test_grid_streams();
	test_grid_unbiased();
	test_deterministic();
	test_hash();
	return failures ? 1 : 0;
}
