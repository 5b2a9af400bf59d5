/* The off-CPU pairing table alone: switch-outs and switch-ins handed over
 * in the orders the time-ordered drain can read them (in order, the
 * switch-in first, halves lost), exiting threads and reused tids, pairs
 * too far apart, a full table, and many threads at once so that removals
 * move entries within their probe clusters. */
#include "recorder/sampling/offcpu.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

/* In a sanitizer build, undefined behaviour in the code under test fails
 * the test rather than printing a line nobody reads. Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

/* A switch-out of `tid` at `time`, with a stack derived from the tid and
 * the time so that a pair can be checked against the switch-out it came
 * from. The frames live in `ips` (FR_MAX_FRAMES is more than needed). */
static struct fr_offcpu_switch make_out(uint64_t *ips, uint32_t pid, uint32_t tid, uint32_t cpu,
					uint64_t time)
{
	uint16_t n = (uint16_t)(1 + (tid + time) % 5);

	for (uint16_t i = 0; i < n; i++)
		ips[i] = ((uint64_t)tid << 32) + time * 8 + i;
	return (struct fr_offcpu_switch){
		.time = time,
		.pid = pid,
		.tid = tid,
		.cpu = cpu,
		.nr_kernel = (uint16_t)(n / 2),
		.nr_frames = n,
		.ips = ips,
	};
}

/* Checks that `pair` is the switch-out made by make_out(pid, tid, cpu,
 * out_time) completed at in_time. */
static void check_pair(const struct fr_offcpu_pair *pair, uint32_t pid, uint32_t tid, uint32_t cpu,
		       uint64_t out_time, uint64_t in_time, int line)
{
	uint64_t want[8];
	struct fr_offcpu_switch w = make_out(want, pid, tid, cpu, out_time);

	CHECK(pair->out.time == out_time && pair->in_time == in_time,
	      "line %d: pair of tid %u is %llu..%llu, want %llu..%llu", line, tid,
	      (unsigned long long)pair->out.time, (unsigned long long)pair->in_time,
	      (unsigned long long)out_time, (unsigned long long)in_time);
	CHECK(pair->out.pid == pid && pair->out.tid == tid && pair->out.cpu == cpu,
	      "line %d: pair names pid %u tid %u cpu %u, want %u %u %u", line, pair->out.pid,
	      pair->out.tid, pair->out.cpu, pid, tid, cpu);
	CHECK(pair->out.nr_frames == w.nr_frames && pair->out.nr_kernel == w.nr_kernel &&
		      memcmp(pair->out.ips, want, w.nr_frames * sizeof(want[0])) == 0,
	      "line %d: pair of tid %u has another stack than its switch-out", line, tid);
}

static struct fr_offcpu *table(uint32_t capacity)
{
	struct fr_offcpu *o = NULL;
	int ret = fr_offcpu_new(&o, capacity);

	if (ret < 0) {
		fprintf(stderr, "fr_offcpu_new(%u): %s\n", capacity, strerror(-ret));
		exit(1);
	}
	return o;
}

static void test_capacity(void)
{
	struct fr_offcpu *o = NULL;

	CHECK(fr_offcpu_new(&o, 0) == -EINVAL, "capacity 0 accepted");
	CHECK(fr_offcpu_new(&o, 4) == -EINVAL, "capacity below the eviction scan accepted");
	CHECK(fr_offcpu_new(&o, 24) == -EINVAL, "capacity not a power of two accepted");
	CHECK(o == NULL, "a refused table was returned");
	fr_offcpu_free(NULL);
}

/* Switch-out, then switch-in: one pair, with the stack as it was at the
 * switch-out even though the caller's buffer changed since. */
static void test_in_order(void)
{
	struct fr_offcpu *o = table(64);
	struct fr_offcpu_pair pair;
	uint64_t ips[8];
	struct fr_offcpu_switch sw = make_out(ips, 10, 11, 1, 1000);

	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 0, "a lone switch-out made a pair");
	memset(ips, 0xee, sizeof(ips));
	CHECK(fr_offcpu_waiting(o) == 1, "%u waiting, want 1", fr_offcpu_waiting(o));
	CHECK(fr_offcpu_switch_in(o, 11, 1500, &pair) == 1, "switch-in did not pair");
	check_pair(&pair, 10, 11, 1, 1000, 1500, __LINE__);
	CHECK(fr_offcpu_waiting(o) == 0, "%u waiting after the pair", fr_offcpu_waiting(o));
	/* The pair is used up: a second switch-in pairs with nothing. */
	CHECK(fr_offcpu_switch_in(o, 11, 1600, &pair) == 0, "one switch-out paired twice");
	fr_offcpu_free(o);
}

/* The switch-in is read first (its CPU's ring was read earlier). */
static void test_switch_in_first(void)
{
	struct fr_offcpu *o = table(64);
	struct fr_offcpu_pair pair;
	uint64_t ips[8];
	struct fr_offcpu_switch sw = make_out(ips, 20, 21, 0, 2000);

	CHECK(fr_offcpu_switch_in(o, 21, 2700, &pair) == 0, "a lone switch-in made a pair");
	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 1, "switch-out did not pair");
	check_pair(&pair, 20, 21, 0, 2000, 2700, __LINE__);
	CHECK(fr_offcpu_waiting(o) == 0, "%u waiting after the pair", fr_offcpu_waiting(o));

	/* Of two switch-ins read first, the newer is kept. */
	CHECK(fr_offcpu_switch_in(o, 21, 5000, &pair) == 0, "a lone switch-in made a pair");
	CHECK(fr_offcpu_switch_in(o, 21, 4000, &pair) == 0, "a lone switch-in made a pair");
	sw = make_out(ips, 20, 21, 0, 3000);
	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 1, "switch-out did not pair");
	check_pair(&pair, 20, 21, 0, 3000, 5000, __LINE__);

	/* A switch-in read first but earlier than the switch-out belonged to
	 * a switch-out that was lost: the new switch-out waits for its own. */
	CHECK(fr_offcpu_switch_in(o, 21, 5500, &pair) == 0, "a lone switch-in made a pair");
	sw = make_out(ips, 20, 21, 0, 6000);
	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 0,
	      "a switch-out paired with a switch-in before it");
	CHECK(fr_offcpu_switch_in(o, 21, 6400, &pair) == 1, "switch-in did not pair");
	check_pair(&pair, 20, 21, 0, 6000, 6400, __LINE__);
	fr_offcpu_free(o);
}

/* Lost records: a switch-in lost leaves two switch-outs, the newer one
 * counts; a switch-out lost leaves a switch-in earlier than the waiting
 * switch-out, which must not end it. */
static void test_missed_records(void)
{
	struct fr_offcpu *o = table(64);
	struct fr_offcpu_pair pair;
	uint64_t ips[8];
	struct fr_offcpu_switch sw;

	sw = make_out(ips, 30, 31, 0, 100);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	sw = make_out(ips, 30, 31, 1, 300);
	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 0, "two switch-outs made a pair");
	/* Read late, an older switch-out does not replace the newer one. */
	sw = make_out(ips, 30, 31, 0, 200);
	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 0, "two switch-outs made a pair");
	CHECK(fr_offcpu_switch_in(o, 31, 250, &pair) == 0,
	      "a switch-in before the waiting switch-out paired with it");
	CHECK(fr_offcpu_switch_in(o, 31, 400, &pair) == 1, "switch-in did not pair");
	check_pair(&pair, 30, 31, 1, 300, 400, __LINE__);
	CHECK(fr_offcpu_waiting(o) == 0, "%u waiting after the pair", fr_offcpu_waiting(o));
	fr_offcpu_free(o);
}

/* A pair further apart than FR_OFFCPU_MAX_GAP_NS is dropped, and so is
 * its switch-out; one exactly that far apart is kept. */
static void test_gap(void)
{
	struct fr_offcpu *o = table(64);
	struct fr_offcpu_pair pair;
	uint64_t ips[8], t0 = 1000;
	struct fr_offcpu_switch sw = make_out(ips, 40, 41, 0, t0);

	fr_offcpu_switch_out(o, &sw, 0, &pair);
	CHECK(fr_offcpu_switch_in(o, 41, t0 + FR_OFFCPU_MAX_GAP_NS + 1, &pair) == 0,
	      "a pair over an hour apart was believed");
	CHECK(fr_offcpu_waiting(o) == 0, "the unbelievable switch-out still waits");

	fr_offcpu_switch_out(o, &sw, 0, &pair);
	CHECK(fr_offcpu_switch_in(o, 41, t0 + FR_OFFCPU_MAX_GAP_NS, &pair) == 1,
	      "a pair exactly at the limit was dropped");
	check_pair(&pair, 40, 41, 0, t0, t0 + FR_OFFCPU_MAX_GAP_NS, __LINE__);

	/* The same with the switch-in read first: it is replaced. */
	CHECK(fr_offcpu_switch_in(o, 41, t0 + FR_OFFCPU_MAX_GAP_NS + 1, &pair) == 0,
	      "a lone switch-in made a pair");
	CHECK(fr_offcpu_switch_out(o, &sw, 0, &pair) == 0,
	      "a pair over an hour apart was believed (switch-in first)");
	CHECK(fr_offcpu_switch_in(o, 41, t0 + 5, &pair) == 1, "switch-in did not pair");
	check_pair(&pair, 40, 41, 0, t0, t0 + 5, __LINE__);
	fr_offcpu_free(o);
}

/* An exiting thread's switch-out is not kept and ends a waiting one; its
 * tid, reused by a new process, pairs under the new pid. */
static void test_exit_and_tid_reuse(void)
{
	struct fr_offcpu *o = table(64);
	struct fr_offcpu_pair pair;
	uint64_t ips[8];
	struct fr_offcpu_switch sw;

	sw = make_out(ips, 50, 51, 0, 100);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	sw = make_out(ips, 50, 51, 0, 200);
	CHECK(fr_offcpu_switch_out(o, &sw, 1, &pair) == 0, "an exiting switch-out paired");
	CHECK(fr_offcpu_waiting(o) == 0, "an exiting thread still waits");

	/* The tid comes back in process 60: its pair names process 60. */
	sw = make_out(ips, 60, 51, 1, 300);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	CHECK(fr_offcpu_switch_in(o, 51, 350, &pair) == 1, "switch-in did not pair");
	check_pair(&pair, 60, 51, 1, 300, 350, __LINE__);

	/* Reused without an exit seen (its records lost): the newer process
	 * replaces the older one's switch-out. */
	sw = make_out(ips, 60, 51, 1, 400);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	sw = make_out(ips, 70, 51, 0, 500);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	CHECK(fr_offcpu_switch_in(o, 51, 650, &pair) == 1, "switch-in did not pair");
	check_pair(&pair, 70, 51, 0, 500, 650, __LINE__);
	fr_offcpu_free(o);
}

/* A full table drops the oldest of the entries it scans, counts it, and
 * keeps following the others. */
static void test_full(void)
{
	struct fr_offcpu *o = table(8);
	struct fr_offcpu_pair pair;
	uint64_t ips[8];
	struct fr_offcpu_switch sw;
	/* Times out of tid order, so the oldest is not simply the first. */
	static const uint64_t times[8] = {500, 300, 800, 100, 700, 200, 600, 400};
	int paired = 0;

	for (uint32_t i = 0; i < 8; i++) {
		sw = make_out(ips, 80, 100 + i, 0, times[i]);
		fr_offcpu_switch_out(o, &sw, 0, &pair);
	}
	CHECK(fr_offcpu_waiting(o) == 8, "%u waiting, want 8", fr_offcpu_waiting(o));
	CHECK(fr_offcpu_take_evicted(o) == 0, "entries evicted from a table not yet full");
	sw = make_out(ips, 80, 200, 0, 900);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	CHECK(fr_offcpu_waiting(o) == 8, "%u waiting in a full table", fr_offcpu_waiting(o));
	CHECK(fr_offcpu_take_evicted(o) == 1, "an eviction was not counted");
	CHECK(fr_offcpu_take_evicted(o) == 0, "the eviction count was not reset");

	/* tid 103 (time 100) was the oldest: it pairs no more; every other
	 * one does, with its own stack. */
	for (uint32_t i = 0; i < 8; i++) {
		int r = fr_offcpu_switch_in(o, 100 + i, 1000, &pair);

		if (i == 3) {
			CHECK(r == 0, "the evicted switch-out still paired");
			continue;
		}
		CHECK(r == 1, "tid %u did not pair", 100 + i);
		if (r == 1) {
			check_pair(&pair, 80, 100 + i, 0, times[i], 1000, __LINE__);
			paired++;
		}
	}
	CHECK(fr_offcpu_switch_in(o, 200, 1000, &pair) == 1, "the newest switch-out was lost");
	check_pair(&pair, 80, 200, 0, 900, 1000, __LINE__);
	CHECK(paired == 7, "%d pairs, want 7", paired);
	fr_offcpu_free(o);
}

/* Many threads at once: most share probe clusters, and pairs completed
 * in an order unlike the insertion order move entries back within them.
 * Every thread must still find its own switch-out. */
static void test_many(void)
{
	enum { N = 900 };
	struct fr_offcpu *o = table(1024);
	struct fr_offcpu_pair pair;
	uint64_t ips[8];
	static uint32_t order[N];
	int wrong = 0;

	for (uint32_t i = 0; i < N; i++) {
		struct fr_offcpu_switch sw = make_out(ips, 1, 7 * i + 3, i % 4, 1000 + i);

		fr_offcpu_switch_out(o, &sw, 0, &pair);
		order[i] = i;
	}
	CHECK(fr_offcpu_waiting(o) == N, "%u waiting, want %d", fr_offcpu_waiting(o), N);
	srand(7);
	for (uint32_t i = N - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t k = 0; k < N; k++) {
		uint32_t i = order[k];

		if (fr_offcpu_switch_in(o, 7 * i + 3, 5000, &pair) != 1) {
			wrong++;
			continue;
		}
		check_pair(&pair, 1, 7 * i + 3, i % 4, 1000 + i, 5000, __LINE__);
	}
	CHECK(wrong == 0, "%d of %d threads did not find their switch-out", wrong, N);
	CHECK(fr_offcpu_waiting(o) == 0, "%u still waiting", fr_offcpu_waiting(o));
	CHECK(fr_offcpu_take_evicted(o) == 0, "evictions below capacity");
	fr_offcpu_free(o);
}

/* The open waits listed: every switch-out still waiting with its stack,
 * none of the switch-ins read early, none of the pairs completed or the
 * threads that exited, and idle (tid 0) never. */
static void test_open_waits(void)
{
	struct fr_offcpu *o;
	struct fr_offcpu_pair pair;
	struct fr_offcpu_switch sw, ow;
	uint64_t ips[8];
	uint32_t cursor = 0, seen = 0;

	if (fr_offcpu_new(&o, 64) != 0) {
		CHECK(0, "cannot allocate");
		return;
	}
	for (uint32_t tid = 0; tid < 20; tid++) {
		sw = make_out(ips, 7, tid, tid % 4, 1000 + tid);
		fr_offcpu_switch_out(o, &sw, tid == 13, &pair);
	}
	fr_offcpu_switch_in(o, 5, 2000, &pair);	 /* back: not open */
	fr_offcpu_switch_in(o, 99, 2000, &pair); /* a switch-in read first */
	while (fr_offcpu_open_next(o, &cursor, &ow)) {
		uint32_t tid = ow.tid;

		seen |= 1u << (tid < 31 ? tid : 31);
		check_pair(&(struct fr_offcpu_pair){.out = ow, .in_time = 0}, 7, tid, tid % 4,
			   1000 + tid, 0, __LINE__);
	}
	CHECK(seen == (0xfffffu & ~(1u << 0 | 1u << 5 | 1u << 13)),
	      "open waits listed %#x, want tids 1..19 but 5 and 13", seen);
	CHECK(fr_offcpu_open_next(o, &cursor, &ow) == 0, "the listing restarted");
	fr_offcpu_free(o);
}

/* A thread blocked for hours is still paired when it comes back: long
 * waits are reported, not dropped. */
static void test_long_wait(void)
{
	const uint64_t t0 = 5000000000ull, hours = 5 * 3600 * 1000000000ull;
	struct fr_offcpu *o;
	struct fr_offcpu_pair pair;
	struct fr_offcpu_switch sw;
	uint64_t ips[8];

	if (fr_offcpu_new(&o, 8) != 0) {
		CHECK(0, "cannot allocate");
		return;
	}
	sw = make_out(ips, 3, 4, 1, t0);
	fr_offcpu_switch_out(o, &sw, 0, &pair);
	CHECK(fr_offcpu_switch_in(o, 4, t0 + hours, &pair) == 1, "a 5 h wait was dropped");
	check_pair(&pair, 3, 4, 1, t0, t0 + hours, __LINE__);
	fr_offcpu_free(o);
}

int main(void)
{
	test_capacity();
	test_in_order();
	test_switch_in_first();
	test_missed_records();
	test_gap();
	test_exit_and_tid_reuse();
	test_full();
	test_many();
	test_open_waits();
	test_long_wait();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
