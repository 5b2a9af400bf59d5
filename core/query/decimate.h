/* Decimation: which samples of an event collected at R Hz a profile at a
 * lower target rate T keeps, and how many times each counts.
 *
 * FR_DECIMATE_GRID (what profiles use): each stream of samples, one per
 * (cpu, event), is cut into consecutive strata of R/T samples (by a
 * running sum of T/R per sample, so rates that change inside the window
 * are followed), and one point is drawn in each stratum at a position
 * given by a hash of (stream, its first sample, stratum number). A sample
 * counts as many
 * times as points fall in it: 0 or 1, and rarely 2 when it straddles two
 * strata whose points both land in it (the end of one, the start of the
 * next).
 * Every sample so counts T/R times on average (unbiased, whatever the
 * program does in step with the sampling), and a stream of n samples
 * counts n*T/R to within one: a CPU busy for a second at 999 Hz, read at
 * 99 Hz, yields exactly 99 samples (98 or 100 only where a stratum is cut
 * by the window's edge). On a busy CPU the strata are a time grid of
 * 1/T s, one sample kept in each cell.
 *
 * FR_DECIMATE_HASH (what profiles did before): each sample is kept with
 * probability T/R on a hash of its time, thread, cpu and event; unbiased,
 * but the count is binomial: about sqrt(n*T/R) off. Kept for the
 * benchmark that compares the two (tests/bench/bench_decimate.c,
 * docs/performance.md).
 *
 * Both are deterministic: the same samples in the same order give the
 * same result, so the same request gives the same profile.
 */
#ifndef FR_CORE_DECIMATE_H
#define FR_CORE_DECIMATE_H

#include <stdint.h>

enum fr_decimate_method {
	FR_DECIMATE_GRID = 0,
	FR_DECIMATE_HASH,
};

/* The running state of the streams of one query. */
struct fr_decimator {
	enum fr_decimate_method method;
	struct fr_decimate_stream *slots; /* open addressing; key 0: empty */
	uint32_t cap;			  /* power of two, or 0 */
	uint32_t n;
};

void fr_decimator_init(struct fr_decimator *d, enum fr_decimate_method method);
void fr_decimator_fini(struct fr_decimator *d);

/* How many times the sample at `time_ns` of thread `tid` on `cpu` of
 * `event`, collected at `rate`, counts in a profile at `target`: 0, 1 or
 * 2 (always 1 when target is 0, rate is 0 or rate <= target). Samples of
 * one stream must come in the order they were taken for the grid's
 * exactness (any fixed order keeps it unbiased and deterministic).
 * Returns the count, or -ENOMEM. */
int fr_decimate(struct fr_decimator *d, uint32_t cpu, uint32_t event, int64_t time_ns, uint32_t tid,
		uint32_t rate, uint32_t target);

#endif
