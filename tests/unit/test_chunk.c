/* Chunk codec: builder -> seal -> decode round trip with every field
 * compared, counters-only chunks, streams shaped like the recorder's and
 * the extremes, and capacity limits. The fake tracker and the comparison
 * of decoded samples are in fixture_chunk.{c,h}; corruption is
 * test_chunk_corrupt.c, label sets test_chunk_labels.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"

#include "tests/unit/fixture_chunk.h"

static int cmp_pa(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The distinct stacks (pid, frames) among `n` samples. */
static uint32_t distinct_stacks(const struct stored *in, int n)
{
	uint32_t distinct = 0;

	for (int i = 0; i < n; i++) {
		int seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = in[j].s.pid == in[i].s.pid &&
			       in[j].s.nr_kernel == in[i].s.nr_kernel &&
			       in[j].s.nr_frames == in[i].s.nr_frames &&
			       memcmp(in[j].ips, in[i].ips, in[i].s.nr_frames * 8) == 0;
		distinct += !seen;
	}
	return distinct;
}

/* The mapping lookups sealing `n` samples should make: one per fake
 * mapping touched and one per distinct unmapped (pid, address). */
static int lookups_wanted(const struct stored *in, int n)
{
	struct pa {
		uint64_t pid, addr;
	} *un = malloc((size_t)n * FR_MAX_FRAMES * sizeof(*un));
	size_t nun = 0;
	int want = 0, touched[NFAKE_MAPS] = {0};

	for (int i = 0; un && i < n; i++) {
		const struct fr_sample *s = &in[i].s;

		for (unsigned k = s->nr_kernel; k < s->nr_frames; k++) {
			const struct fake_map *fm = fake_find(s->pid, in[i].ips[k]);

			if (fm)
				touched[fm - fake_maps] = 1;
			else
				un[nun++] = (struct pa){s->pid, in[i].ips[k]};
		}
	}
	qsort(un, nun, sizeof(*un), cmp_pa);
	for (size_t i = 0; i < nun; i++)
		want += i == 0 || un[i].pid != un[i - 1].pid || un[i].addr != un[i - 1].addr;
	for (size_t m = 0; m < NFAKE_MAPS; m++)
		want += touched[m];
	free(un);
	return want;
}

static void test_round_trip(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(NSAMPLES, 4u << 20);
	struct stored *in = calloc(NSAMPLES, sizeof(*in));
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	uint32_t distinct = 0;
	int ret, want;

	if (!b || !in) {
		CHECK(0, "setup");
		goto out;
	}
	CHECK(fr_chunk_builder_seal(b, &fake_ops, 0, &buf, &len) == -ENODATA,
	      "empty builder sealed");
	for (int i = 0; i < NSAMPLES; i++) {
		make_sample(&in[i], i, i ? &in[i - 1] : NULL);
		ret = fr_chunk_builder_add(b, &in[i].s);
		CHECK(ret == 0, "add %d: %d", i, ret);
		if (ret)
			goto out;
	}
	distinct = distinct_stacks(in, NSAMPLES);
	CHECK(fr_chunk_builder_samples(b) == NSAMPLES, "builder sample count");
	fr_chunk_builder_count(b, FR_EVENT_CPU, 3, 1, 7);
	fr_chunk_builder_count(b, FR_EVENT_OFFCPU, 0, 0, 2);
	fr_chunk_builder_count(b, FR_EVENT_CPU, 10, 0, 0);

	nmapping_calls = 0;
	ret = fr_chunk_builder_seal(b, &fake_ops, -123456789, &buf, &len);
	CHECK(ret == 0, "seal: %d", ret);
	if (ret)
		goto out;
	/* One lookup per mapping touched and per distinct unmapped address,
	 * not one per frame. */
	want = lookups_wanted(in, NSAMPLES);
	CHECK(nmapping_calls == want, "%d mapping lookups, want %d", nmapping_calls, want);
	CHECK(fr_chunk_builder_samples(b) == 0, "builder not reset after seal");
	CHECK(fr_chunk_verify(buf, len) == 0, "verify of a fresh chunk");
	CHECK(fr_chunk_verify(buf, len - 1) == -EBADMSG, "verify of a short chunk");

	fr_chunk_set_seq(buf, 77, 0);
	CHECK(fr_chunk_verify(buf, len) == 0, "verify after set_seq");
	ret = fr_chunk_decode(buf, len, &c);
	CHECK(ret == 0, "decode: %d", ret);
	if (ret)
		goto out;
	CHECK(c->hdr.seq == 77, "seq after set_seq");
	c->hdr.seq = 0;
	check_decoded(c, in, NSAMPLES, -123456789);
	CHECK(c->nstacks == distinct, "%u stacks, want %u distinct", c->nstacks, distinct);
	CHECK(c->nevents == 2, "%u event counters", c->nevents);
	for (uint32_t i = 0; i < c->nevents; i++) {
		const struct fr_chunk_event_stats *e = &c->events[i];

		if (e->event == FR_EVENT_CPU)
			CHECK(e->lost == 13 && e->throttled == 1 && e->truncated == 7,
			      "cpu counters");
		else
			CHECK(e->event == FR_EVENT_OFFCPU && e->lost == 0 && e->truncated == 2,
			      "offcpu counters");
	}
	printf("round trip: %d samples, %u stacks, %u maps, %u strings, raw %u -> %u bytes\n",
	       NSAMPLES, c->nstacks, c->nmaps, c->nstrings, c->hdr.raw_len, c->hdr.comp_len);

	/* A second chunk from the same builder is independent. */
	fr_chunk_free(c);
	c = NULL;
	free(buf);
	buf = NULL;
	for (int i = 0; i < 10; i++)
		CHECK(fr_chunk_builder_add(b, &in[i].s) == 0, "add after seal");
	CHECK(fr_chunk_builder_seal(b, NULL, 5, &buf, &len) == 0, "seal without ops");
	CHECK(fr_chunk_decode(buf, len, &c) == 0, "decode second chunk");
	if (c) {
		CHECK(c->nsamples == 10 && c->nprocs == 0 && c->nthreads == 0 && c->nmaps == 0,
		      "chunk without ops has no tables");
		CHECK(c->nevents == 0, "counters carried over to the next chunk");
		struct pairing pr;

		if (c->nsamples == 10 && pair_samples(c, in, 10, &pr) == 0) {
			for (uint32_t i = 0; i < 10; i++)
				CHECK(c->time_ns[pr.index[i]] == pr.in[i].s.time_ns &&
					      c->pid[pr.index[i]] == pr.in[i].s.pid,
				      "second chunk sample %u", i);
			pairing_fini(&pr);
		}
	}
out:
	fr_chunk_free(c);
	free(buf);
	free(in);
	fr_chunk_builder_free(b);
}

static void test_counters_only(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(16, 65536);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len;

	fr_chunk_builder_count(b, FR_EVENT_CYCLES, 5, 6, 7);
	CHECK(fr_chunk_builder_seal(b, &fake_ops, 0, &buf, &len) == 0, "counters-only seal");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "counters-only decode");
	if (c) {
		CHECK(c->nsamples == 0 && c->nevents == 1 && c->events[0].lost == 5 &&
			      c->events[0].throttled == 6 && c->events[0].truncated == 7,
		      "counters-only content");
		CHECK(c->hdr.first_ns == c->hdr.last_ns && c->hdr.first_ns > 0,
		      "counters-only chunk has no time");
	}
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Encoding: streams shaped like the recorder's, and the extremes       */

/* Every decoded sample equals one input sample, field by field and frame
 * by frame, whatever the order. */
static void check_samples(const struct fr_chunk *c, const struct stored *in, uint32_t n,
			  const char *what)
{
	struct pairing pr;
	int bad = 0;

	CHECK(c->nsamples == n, "%s: %u samples, want %u", what, c->nsamples, n);
	if (c->nsamples != n || pair_samples(c, in, n, &pr) < 0)
		return;
	for (uint32_t k = 0; k < n && bad < 5; k++) {
		uint32_t i = pr.index[k];
		struct stored d;

		memset(&d, 0, sizeof(d));
		d.s.time_ns = c->time_ns[i];
		d.s.cpu = c->cpu[i];
		d.s.tid = c->tid[i];
		d.s.pid = c->pid[i];
		d.s.event = c->event[i];
		d.s.weight = c->weight[i];
		d.s.rate_hz = c->rate_hz[i];
		d.s.nr_kernel = (uint16_t)c->stacks[c->stack[i]].nr_kernel;
		d.s.nr_frames = (uint16_t)c->stacks[c->stack[i]].nr_frames;
		memcpy(d.ips, &c->frames[c->stacks[c->stack[i]].first],
		       d.s.nr_frames * sizeof(uint64_t));
		if (cmp_stored(&d, &pr.in[k]) != 0 || c->stacks[c->stack[i]].pid != c->pid[i]) {
			CHECK(0, "%s: sample %u (time %lld cpu %u) differs", what, k,
			      (long long)pr.in[k].s.time_ns, pr.in[k].s.cpu);
			bad++;
		}
	}
	pairing_fini(&pr);
}

/* Seals `in` in one chunk, decodes and compares it. Returns the chunk's
 * size, or 0 on failure. */
static size_t round_trip(const struct stored *in, uint32_t n, const char *what, uint32_t *raw_len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(n, 8u << 20);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	int ret;

	for (uint32_t i = 0; b && i < n; i++) {
		ret = fr_chunk_builder_add(b, &in[i].s);
		if (ret) {
			CHECK(0, "%s: add %u: %d", what, i, ret);
			goto out;
		}
	}
	ret = b ? fr_chunk_builder_seal(b, NULL, 0, &buf, &len) : -ENOMEM;
	CHECK(ret == 0, "%s: seal: %d", what, ret);
	if (ret == 0) {
		ret = fr_chunk_decode(buf, len, &c);
		CHECK(ret == 0, "%s: decode: %d", what, ret);
	}
	if (c) {
		check_samples(c, in, n, what);
		check_invariants(c);
		if (raw_len)
			*raw_len = c->hdr.raw_len;
	}
out:
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
	return c ? len : 0;
}

/* Steady cpu-clock at 999 Hz on two CPUs, handed over CPU by CPU in
 * batches as the recorder drains them: two threads, eight stacks
 * sharing their roots, a few with kernel frames on top, jitter of a
 * few microseconds and some idle gaps. */
static void steady_stream(struct stored *in, uint32_t n)
{
	uint64_t tree[8][FR_MAX_FRAMES];

	for (int k = 0; k < 8; k++)
		for (int f = 0; f < FR_MAX_FRAMES; f++)
			tree[k][f] = 0x555555554000ull + (uint64_t)(f * 0x40) +
				     (f < 3 ? (uint64_t)k * 8 : 0);
	{
		int64_t t[2] = {BASE_NS, BASE_NS + 333333};
		uint32_t i = 0;

		while (i < n) {
			for (uint32_t cpu = 0; cpu < 2 && i < n; cpu++) {
				for (int k = 0; k < 50 && i < n; k++, i++) {
					struct fr_sample *s = &in[i].s;
					int st = (int)(rng() % 8);

					t[cpu] += 1001001 *
						  (rng() % 50 ? 1 : 1 + (int64_t)(rng() % 30));
					s->time_ns = t[cpu] + (int64_t)(rng() % 6000) - 3000;
					s->cpu = cpu;
					s->pid = 100;
					s->tid = 100 + cpu;
					s->event = FR_EVENT_CPU;
					s->weight = 1001001;
					s->rate_hz = 999;
					s->nr_kernel = st < 2 ? 3 : 0;
					s->nr_frames = (uint16_t)(s->nr_kernel + 12);
					for (int f = 0; f < s->nr_kernel; f++)
						in[i].ips[f] = KERNEL_BASE + 0x100 * (uint64_t)f;
					memcpy(in[i].ips + s->nr_kernel, tree[st],
					       12 * sizeof(uint64_t));
					s->ips = in[i].ips;
				}
			}
		}
	}
}

static void test_encoding(void)
{
	enum { N = 4000 };
	struct stored *in = calloc(N, sizeof(*in));
	uint32_t raw = 0;
	size_t len;

	if (!in) {
		CHECK(0, "setup");
		return;
	}

	steady_stream(in, N);
	len = round_trip(in, N, "steady", &raw);
	printf("steady 999 Hz stream: %.2f bytes/sample stored, raw %.2f\n", (double)len / N,
	       (double)raw / N);
	/* Runs, the time grid and interned stacks keep a steady stream at a
	 * few bytes a sample: the jitter (about 13 bits) dominates. */
	CHECK(len > 0 && len < 4 * N, "steady stream: %zu bytes for %d samples", len, N);

	/* The extremes: any order, equal times, times before 1970, CPUs and
	 * ids up to 2^32 - 1, a tid below its pid, pid 0, rate 0 (no time
	 * grid), varying weights and rates, empty stacks. */
	for (uint32_t i = 0; i < N; i++) {
		struct fr_sample *s = &in[i].s;
		static const uint32_t cpus[] = {0, 1, 7, 4095, UINT32_MAX - 1, UINT32_MAX};
		static const uint32_t rates[] = {0, 1, 99, 999, 4999, UINT32_MAX};

		memset(&in[i], 0, sizeof(in[i]));
		s->time_ns = i % 10 == 0 ? in[i ? i - 1 : 0].s.time_ns
					 : -5000000000ll + (int64_t)(rng() % 10000000000ull);
		s->cpu = cpus[rng() % 6];
		s->pid = i % 3 == 0 ? 0 : (uint32_t)(rng() % 3 ? 1000 + rng() % 5 : UINT32_MAX);
		s->tid = rng() % 4 ? s->pid : (uint32_t)rng();
		s->event = (uint32_t)(rng() % 3);
		s->weight = rng() % 2 ? 1000000 : rng();
		s->rate_hz = rates[rng() % 6];
		s->nr_frames = (uint16_t)(rng() % 5);
		s->nr_kernel = (uint16_t)(s->nr_frames ? rng() % (s->nr_frames + 1u) : 0);
		for (int f = 0; f < s->nr_frames; f++)
			in[i].ips[f] = rng() % 2 ? rng() : KERNEL_BASE + rng() % 64;
		s->ips = in[i].ips;
	}
	round_trip(in, N, "extremes", NULL);

	/* Many stacks with common roots: front coding stores the shared root
	 * frames once. 4000 stacks 40 to 100 frames deep, all sharing their
	 * 36 root frames and branching below. */
	for (uint32_t i = 0; i < N; i++) {
		struct fr_sample *s = &in[i].s;
		unsigned depth = 40 + (unsigned)(rng() % 61);

		memset(&in[i], 0, sizeof(in[i]));
		s->time_ns = BASE_NS + (int64_t)i * 1000;
		s->cpu = i % 4;
		s->pid = 4242;
		s->tid = 4242 + i % 16;
		s->weight = 1;
		s->rate_hz = 999;
		s->nr_frames = (uint16_t)depth;
		for (unsigned p = 0; p < depth; p++) /* root first */
			in[i].ips[depth - 1 - p] = p < 36 ? 0x400000 + p * 0x100
							  : 0x400000 + (rng() % 0x100000);
		s->ips = in[i].ips;
	}
	len = round_trip(in, N, "shared roots", &raw);
	printf("shared roots: %.1f bytes/stack raw, %.1f stored\n", (double)raw / N,
	       (double)len / N);
	/* The 34 frames below the shared ones take about 3.1 bytes each (1 MiB
	 * apart) and the four columns 4 bytes, 110 in all; storing the 36 root
	 * frames in every stack would add 72 (2 bytes each). */
	CHECK(len > 0 && raw < N * 125, "shared roots: raw %u bytes", raw);
	free(in);
}

static void test_enospc(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(10, 1u << 20);
	struct stored st;
	void *buf = NULL;
	size_t len;
	int ret, added = 0;

	/* Sample count. */
	for (int i = 0; i < 10; i++) {
		make_sample(&st, i, NULL);
		CHECK(fr_chunk_builder_add(b, &st.s) == 0, "add %d of 10", i);
	}
	CHECK(fr_chunk_builder_add(b, &st.s) == -ENOSPC, "11th sample accepted");
	CHECK(fr_chunk_builder_samples(b) == 10, "rejected sample counted");
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal full builder");
	CHECK(fr_chunk_builder_add(b, &st.s) == 0, "add after seal");
	free(buf);
	fr_chunk_builder_free(b);

	/* Raw size budget: deep distinct stacks fill 4 KiB quickly; the first
	 * sample is accepted even when larger than the budget. */
	b = fr_chunk_builder_new(100000, 1000);
	memset(&st, 0, sizeof(st));
	st.s.ips = st.ips;
	st.s.pid = 100;
	st.s.nr_frames = FR_MAX_FRAMES;
	for (int k = 0; k < FR_MAX_FRAMES; k++)
		st.ips[k] = KERNEL_BASE + rng();
	CHECK(fr_chunk_builder_add(b, &st.s) == 0, "first oversized sample refused");
	st.ips[0]++;
	CHECK(fr_chunk_builder_add(b, &st.s) == -ENOSPC, "second oversized sample accepted");
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal oversized");
	free(buf);
	buf = NULL;
	fr_chunk_builder_free(b);
	b = fr_chunk_builder_new(100000, 4096);
	st.s.nr_frames = 4;
	for (;;) {
		st.ips[0] = rng();
		ret = fr_chunk_builder_add(b, &st.s);
		if (ret)
			break;
		added++;
	}
	CHECK(ret == -ENOSPC, "add returned %d", ret);
	CHECK(added > 20 && added < 400, "%d samples of 4-frame stacks in 4 KiB", added);
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal budget chunk");
	CHECK(len < 4096 + 64, "chunk of %zu bytes for a 4 KiB budget", len);
	free(buf);
	buf = NULL;
	/* The same stack repeated costs only its sample columns. */
	added = 0;
	while (fr_chunk_builder_add(b, &st.s) == 0)
		added++;
	CHECK(added > 300, "only %d samples of one repeated stack", added);
	fr_chunk_builder_free(b);

	/* Deeper than FR_MAX_FRAMES is cut to the leaf end. */
	b = fr_chunk_builder_new(4, 65536);
	{
		uint64_t deep[200];
		struct fr_sample s = {.pid = 1,
				      .tid = 1,
				      .nr_kernel = 3,
				      .nr_frames = 200,
				      .ips = deep,
				      .time_ns = 1};
		struct fr_chunk *c = NULL;

		for (int k = 0; k < 200; k++)
			deep[k] = 0x1000 + (uint64_t)k;
		CHECK(fr_chunk_builder_add(b, &s) == 0, "deep stack refused");
		CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal deep");
		CHECK(fr_chunk_decode(buf, len, &c) == 0, "decode deep");
		if (c)
			CHECK(c->stacks[0].nr_frames == FR_MAX_FRAMES &&
				      c->stacks[0].nr_kernel == 3 && c->frames[0] == 0x1000,
			      "deep stack not cut at the root end");
		fr_chunk_free(c);
		free(buf);
	}
	fr_chunk_builder_free(b);
}

/* Open-wait records (FR_EVENT_OFFCPU_OPEN, "open waits" in chunk.h) go
 * through the codec as samples: waits of hours keep their exact weight,
 * the records share their stacks with the offcpu samples of the same
 * threads, and a chunk of them cut short is refused, never trusted. */
static void test_open_waits(void)
{
	enum { NTHREADS = 40 };
	struct stored in[2 * NTHREADS];
	const int64_t seal = BASE_NS + 900000000ll;
	struct fr_chunk_builder *b = fr_chunk_builder_new(2 * NTHREADS, 1u << 20);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;

	memset(in, 0, sizeof(in));
	for (int i = 0; i < NTHREADS; i++) {
		struct stored *done = &in[i], *open = &in[NTHREADS + i];

		make_sample(done, i, i ? &in[i - 1] : NULL);
		done->s.event = FR_EVENT_OFFCPU;
		done->s.rate_hz = 0;
		done->s.weight = 1000 + (uint64_t)i;
		done->s.ips = done->ips;
		/* Blocked again on the same stack, for hours so far. */
		*open = *done;
		open->s.ips = open->ips;
		open->s.event = FR_EVENT_OFFCPU_OPEN;
		open->s.time_ns = seal;
		open->s.weight = (uint64_t)(3 + i) * 3600 * 1000000000ull + (uint64_t)i;
	}
	round_trip(in, 2 * NTHREADS, "open waits", NULL);

	for (int i = 0; b && i < 2 * NTHREADS; i++)
		fr_chunk_builder_add(b, &in[i].s);
	if (!b || fr_chunk_builder_seal(b, NULL, 0, &buf, &len) != 0 ||
	    fr_chunk_decode(buf, len, &c) != 0) {
		CHECK(0, "open waits: cannot build the chunk");
		goto out;
	}
	CHECK(c->nstacks == distinct_stacks(in, NTHREADS),
	      "open waits: %u stacks, want the %u of the offcpu samples", c->nstacks,
	      distinct_stacks(in, NTHREADS));
	for (size_t l = 0; l < len; l += 1 + l / 8) {
		struct fr_chunk *t = NULL;

		CHECK(fr_chunk_decode(buf, l, &t) == -EBADMSG, "open waits cut to %zu decoded", l);
		fr_chunk_free(t);
	}
out:
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
}

int main(void)
{
	test_round_trip();
	test_counters_only();
	test_open_waits();
	test_encoding();
	test_enospc();
	if (failures) {
		fprintf(stderr, "test_chunk: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
