/* Decimation benchmark: how close a profile downsampled from the rate it
 * was collected at comes to the truth (the full-rate profile of the same
 * samples), for the grid (core/query/decimate.h, what profiles use), the
 * per-sample hash (what they used before), and, for reference, keeping the
 * first sample of each 1/T-second cell of each CPU (a plain time grid).
 *
 *   bench_decimate [TRIALS]
 *
 * For each workload and target rate, TRIALS windows of synthetic samples
 * (each with its own random stacks, times and threads) are decimated by
 * each method; a kept sample stands for R/T samples, as in a profile.
 * Printed per method, averaged over the trials:
 *   count  the |error| of the window's total (samples, so also CPU time),
 *          relative to the truth, mean and worst;
 *   share  the total variation distance between the stacks' shares and
 *          the truth's (half the sum of |share - true share|), mean.
 * Workloads (2 CPUs, 10 s windows, 16 stacks with shares 1/2, 1/4, ...):
 *   busy     both CPUs busy, stacks drawn independently per sample;
 *   periodic busy, stack 1 on every 10th sample (a loop in step with the
 *            sampling), the rest drawn as in busy;
 *   bursty   each 25 ms busy with probability 0.3, for a random part of it;
 *   change   busy, the first half at R, the second at R/2.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/decimate.h"
#include "core/util/time.h"

#define SEC FR_NS_PER_S
#define NCPU 2
#define NSTACKS 16
#define WINDOW_S 10
#define NMETHODS 3

enum workload { BUSY, PERIODIC, BURSTY, CHANGE, NWORKLOADS };
static const char *const workload_names[] = {"busy", "periodic", "bursty", "change"};
static const char *const method_names[] = {"grid", "hash", "first-in-cell"};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double rnd01(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* A stack with share 1/2, 1/4, ... (the last two share the rest). */
static int draw_stack(void)
{
	int s = 0;

	while (s < NSTACKS - 1 && (rnd() & 1))
		s++;
	return s;
}

struct tally {
	double truth[NSTACKS], est[NMETHODS][NSTACKS];
	struct fr_decimator dec[2];
	int64_t last_cell[NMETHODS][NCPU];
};

/* One sample: the truth counts it once, each method m times R/T. */
static void sample(struct tally *t, uint32_t cpu, int64_t ts, uint32_t tid, uint32_t rate,
		   uint32_t target, int st)
{
	double scale = (double)rate / target;
	int64_t cell = ts / (SEC / target);

	t->truth[st] += 1;
	for (int m = 0; m < 2; m++)
		t->est[m][st] += scale * fr_decimate(&t->dec[m], cpu, 0, ts, tid, rate, target);
	if (cell != t->last_cell[2][cpu]) {
		t->last_cell[2][cpu] = cell;
		t->est[2][st] += scale;
	}
}

/* The samples of one window of `w` at `rate`, in time order. */
static void window(struct tally *t, enum workload w, uint32_t rate, uint32_t target)
{
	int64_t t0 = (int64_t)1700000000 * SEC + (int64_t)(rnd() % SEC);
	uint32_t tid = 1000 + (uint32_t)(rnd() % 30000);

	for (int cpu = 0; cpu < NCPU; cpu++)
		t->last_cell[2][cpu] = -1;
	for (uint32_t cpu = 0; cpu < NCPU; cpu++) {
		int64_t ts = t0 + (int64_t)(rnd() % (SEC / rate)), end = t0 + WINDOW_S * SEC;
		int64_t slot_end = 0, busy_end = 0;
		uint64_t i = 0;

		while (ts < end) {
			uint32_t r = w == CHANGE && ts >= t0 + WINDOW_S * SEC / 2 ? rate / 2 : rate;
			int st = draw_stack();

			if (w == BURSTY) {
				if (ts >= slot_end) {
					slot_end = ts + 25000000;
					busy_end = rnd01() < 0.3
							   ? ts + (int64_t)(rnd01() * 25000000)
							   : ts;
				}
				if (ts >= busy_end) {
					ts += SEC / r;
					continue;
				}
			}
			if (w == PERIODIC)
				st = i % 10 == 0 ? 1 : st == 1 ? 0 : st;
			sample(t, cpu, ts, tid + cpu, r, target, st);
			ts += SEC / r;
			i++;
		}
	}
}

int main(int argc, char **argv)
{
	int trials = argc > 1 ? atoi(argv[1]) : 200;
	static const uint32_t rates[][2] = {{999, 99}, {999, 19}, {99, 19}};

	printf("%-9s %-9s %-14s %12s %12s %12s\n", "workload", "rates", "method", "count mean",
	       "count worst", "share mean");
	for (int w = 0; w < NWORKLOADS; w++) {
		for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
			double cmean[NMETHODS] = {0}, cworst[NMETHODS] = {0}, smean[NMETHODS] = {0};
			char rs[32];

			rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)w << 32 | k);
			for (int tr = 0; tr < trials; tr++) {
				struct tally *t = calloc(1, sizeof(*t));
				double n = 0;

				if (!t)
					return 1;
				fr_decimator_init(&t->dec[0], FR_DECIMATE_GRID);
				fr_decimator_init(&t->dec[1], FR_DECIMATE_HASH);
				window(t, (enum workload)w, rates[k][0], rates[k][1]);
				for (int s = 0; s < NSTACKS; s++)
					n += t->truth[s];
				for (int m = 0; m < NMETHODS; m++) {
					double e = 0, tv = 0, c;

					for (int s = 0; s < NSTACKS; s++)
						e += t->est[m][s];
					c = fabs(e - n) / n;
					cmean[m] += c / trials;
					if (c > cworst[m])
						cworst[m] = c;
					for (int s = 0; e > 0 && s < NSTACKS; s++)
						tv += fabs(t->est[m][s] / e - t->truth[s] / n) / 2;
					smean[m] += tv / trials;
				}
				fr_decimator_fini(&t->dec[0]);
				fr_decimator_fini(&t->dec[1]);
				free(t);
			}
			snprintf(rs, sizeof(rs), "%u->%u", rates[k][0], rates[k][1]);
			for (int m = 0; m < NMETHODS; m++)
				printf("%-9s %-9s %-14s %11.3f%% %11.3f%% %11.3f%%\n",
				       workload_names[w], rs, method_names[m], 100 * cmean[m],
				       100 * cworst[m], 100 * smean[m]);
		}
	}
	return 0;
}
