/* Hardware-counter semantics of recorder/sampling/perf_drain.c and perf_pmu.c, on
 * PERF_RECORD_SAMPLE records written byte for byte as the kernel lays
 * them out (IP, TID, TIME, CPU, PERIOD, CALLCHAIN) into a ring in memory
 * and drained by fr_perf_drain:
 * - precise_ip > 0: the sample's IP is the leaf, the callchain gives the
 *   callers (a user IP drops the kernel frames the interrupt skidded
 *   into); precise_ip 0 keeps the callchain as it came;
 * - period mode: every sample weighs the period in force, cpu's rate
 *   follows from its period, a count's is 0 (never downsampled);
 * - multiplexing: the scaling arithmetic (fr_perf_mux_scale), and a
 *   drain that scales by the times read before it.
 */
#include "recorder/sampling/perf_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check.h"

#define PAGE 4096u
#define DATA_PAGES 16u
#define SKID_USER 0x401010ull /* where the interrupt landed, in user code */
#define PRECISE 0x401000ull   /* the instruction that counted */
#define CALLER 0x402000ull    /* its caller */
#define KSKID 0xffffffff81000100ull
#define KCALLER 0xffffffff81000200ull

struct got {
	int samples;
	struct fr_sample s;
	uint64_t ips[FR_MAX_FRAMES];
};

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct got *g = arg;

	g->samples++;
	g->s = *s;
	memcpy(g->ips, s->ips, s->nr_frames * sizeof(uint64_t));
}

struct rec {
	unsigned char b[4096];
	size_t n;
};

static void put(struct rec *r, const void *p, size_t len)
{
	memcpy(r->b + r->n, p, len);
	r->n += len;
}

static void put64(struct rec *r, uint64_t v)
{
	put(r, &v, sizeof(v));
}

/* A sample of IP `ip` (cpumode `misc`) with period `period` (0: no
 * PERIOD field, as in period mode) and a callchain of `nk` kernel frames
 * `k` and `nu` user frames `u`. */
static void sample(struct rec *r, uint16_t misc, uint64_t ip, uint64_t period, const uint64_t *k,
		   unsigned nk, const uint64_t *u, unsigned nu)
{
	struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .misc = misc};
	uint32_t pid_tid[2] = {4242, 4243}, cpu[2] = {1, 0};

	r->n = 0;
	put(r, &h, sizeof(h));
	put64(r, ip);
	put(r, pid_tid, sizeof(pid_tid));
	put64(r, 123456789);
	put(r, cpu, sizeof(cpu));
	if (period)
		put64(r, period);
	put64(r, (nk ? nk + 1 : 0) + (nu ? nu + 1 : 0));
	if (nk) {
		put64(r, (uint64_t)PERF_CONTEXT_KERNEL);
		for (unsigned i = 0; i < nk; i++)
			put64(r, k[i]);
	}
	if (nu) {
		put64(r, (uint64_t)PERF_CONTEXT_USER);
		for (unsigned i = 0; i < nu; i++)
			put64(r, u[i]);
	}
	((struct perf_event_header *)r->b)->size = (uint16_t)r->n;
}

/* A source of `event` with frame-pointer stacks on one CPU's ring in
 * memory (no descriptor: the times are not read). */
struct ring {
	struct fr_perf *p;
	void *base;
};

static void ring_init(struct ring *rg, uint32_t event)
{
	rg->base = aligned_alloc(PAGE, PAGE * (1 + DATA_PAGES));
	memset(rg->base, 0, PAGE * (1 + DATA_PAGES));
	rg->p = calloc(1, sizeof(*rg->p));
	rg->p->cfg = (struct fr_perf_config){.event = event, .hz = 99};
	rg->p->hz = 99;
	rg->p->page_size = PAGE;
	rg->p->ncpus = 1;
	rg->p->rings = calloc(1, sizeof(*rg->p->rings));
	rg->p->rings[0] =
		(struct cpu_ring){.fd = -1, .base = rg->base, .data_size = PAGE * DATA_PAGES};
}

static void ring_fini(struct ring *rg)
{
	free(rg->p->rings);
	free(rg->p);
	free(rg->base);
}

static void drain_one(struct ring *rg, const struct rec *r, struct got *g)
{
	struct perf_event_mmap_page *meta = rg->base;
	unsigned char *data = (unsigned char *)rg->base + PAGE;
	struct fr_perf_handler h = {.sample = on_sample, .arg = g};
	uint64_t at = meta->data_head;

	memcpy(data + (at & (PAGE * DATA_PAGES - 1)), r->b, r->n);
	meta->data_head = at + r->n;
	memset(g, 0, sizeof(*g));
	fr_perf_drain(rg->p, &h, 0);
	CHECK(g->samples == 1, "%d samples, want 1", g->samples);
}

static int frames_are(const struct got *g, unsigned nk, const uint64_t *want, unsigned n)
{
	if (g->s.nr_frames != n || g->s.nr_kernel != nk)
		return 0;
	return memcmp(g->ips, want, n * sizeof(*want)) == 0;
}

static void print_frames(const struct got *g)
{
	fprintf(stderr, "  got %u frames (%u kernel):", g->s.nr_frames, g->s.nr_kernel);
	for (unsigned i = 0; i < g->s.nr_frames; i++)
		fprintf(stderr, " %#llx", (unsigned long long)g->ips[i]);
	fputc('\n', stderr);
}

#define EXPECT(g, nk, ...)                                                            \
	do {                                                                          \
		const uint64_t want_[] = {__VA_ARGS__};                               \
		int ok_ = frames_are(g, nk, want_, sizeof(want_) / sizeof(want_[0])); \
		CHECK(ok_, "frames differ");                                          \
		if (!ok_)                                                             \
			print_frames(g);                                              \
	} while (0)

/* A user-mode sample: the skidded leaf of the callchain gives way to the
 * precise IP; without precise_ip nothing changes. */
static void test_user_leaf(void)
{
	const uint64_t u[] = {SKID_USER, CALLER};
	struct ring rg;
	struct rec r;
	struct got g;

	ring_init(&rg, FR_EVENT_CYCLES);
	sample(&r, PERF_RECORD_MISC_USER, PRECISE, 1000, NULL, 0, u, 2);
	drain_one(&rg, &r, &g);
	EXPECT(&g, 0, SKID_USER, CALLER);

	rg.p->pmu.precise_ip = 2;
	drain_one(&rg, &r, &g);
	EXPECT(&g, 0, PRECISE, CALLER);
	CHECK(g.s.weight == 1000, "weight %llu", (unsigned long long)g.s.weight);
	ring_fini(&rg);
}

/* The counting instruction was in user code, but the interrupt came in
 * the system call that followed: the kernel frames are the skid's. */
static void test_user_ip_kernel_skid(void)
{
	const uint64_t k[] = {KSKID, KCALLER}, u[] = {SKID_USER, CALLER};
	struct ring rg;
	struct rec r;
	struct got g;

	ring_init(&rg, FR_EVENT_CYCLES);
	sample(&r, PERF_RECORD_MISC_USER, PRECISE, 1000, k, 2, u, 2);
	drain_one(&rg, &r, &g);
	EXPECT(&g, 2, KSKID, KCALLER, SKID_USER, CALLER);
	rg.p->pmu.precise_ip = 1;
	drain_one(&rg, &r, &g);
	EXPECT(&g, 0, PRECISE, CALLER);
	ring_fini(&rg);
}

/* A kernel IP replaces the kernel leaf and keeps the user callers. */
static void test_kernel_leaf(void)
{
	const uint64_t k[] = {KSKID, KCALLER}, u[] = {SKID_USER, CALLER};
	const uint64_t kprecise = 0xffffffff81000080ull;
	struct ring rg;
	struct rec r;
	struct got g;

	ring_init(&rg, FR_EVENT_CYCLES);
	rg.p->pmu.precise_ip = 3;
	sample(&r, PERF_RECORD_MISC_KERNEL, kprecise, 1000, k, 2, u, 2);
	drain_one(&rg, &r, &g);
	EXPECT(&g, 2, kprecise, KCALLER, SKID_USER, CALLER);

	/* No kernel callchain (it could not walk): the IP goes first. */
	sample(&r, PERF_RECORD_MISC_KERNEL, kprecise, 1000, NULL, 0, u, 2);
	drain_one(&rg, &r, &g);
	EXPECT(&g, 1, kprecise, SKID_USER, CALLER);
	ring_fini(&rg);
}

/* No callchain at all: the IP alone, with or without precise_ip; an IP of
 * 0 (the PMU gave none) leaves the callchain alone. */
static void test_no_chain(void)
{
	const uint64_t u[] = {SKID_USER, CALLER};
	struct ring rg;
	struct rec r;
	struct got g;

	ring_init(&rg, FR_EVENT_CYCLES);
	rg.p->pmu.precise_ip = 2;
	sample(&r, PERF_RECORD_MISC_USER, PRECISE, 1000, NULL, 0, NULL, 0);
	drain_one(&rg, &r, &g);
	EXPECT(&g, 0, PRECISE);
	sample(&r, PERF_RECORD_MISC_USER, 0, 1000, NULL, 0, u, 2);
	drain_one(&rg, &r, &g);
	EXPECT(&g, 0, SKID_USER, CALLER);
	ring_fini(&rg);
}

/* A full stack: the kernel IP inserted first drops the root, never
 * writes past the frames. */
static void test_full_stack(void)
{
	uint64_t ips[FR_MAX_FRAMES];
	uint16_t n = FR_MAX_FRAMES, nk = 0;

	for (unsigned i = 0; i < FR_MAX_FRAMES; i++)
		ips[i] = 0x400000 + i * 16;
	fr_perf_precise_leaf(ips, &n, &nk, FR_MAX_FRAMES, KSKID, 1);
	CHECK(n == FR_MAX_FRAMES && nk == 1 && ips[0] == KSKID && ips[1] == 0x400000 &&
		      ips[FR_MAX_FRAMES - 1] == 0x400000 + (FR_MAX_FRAMES - 2) * 16,
	      "full stack: %u frames, %u kernel, leaf %#llx", n, nk, (unsigned long long)ips[0]);

	/* A stack that is only a marker (the unwinder stopped at once)
	 * keeps it as the root, under the IP. */
	ips[0] = FR_FRAME_MARK_ADDR(FR_FRAME_MARK_NO_CFI);
	n = 1;
	nk = 0;
	fr_perf_precise_leaf(ips, &n, &nk, FR_MAX_FRAMES, PRECISE, 0);
	CHECK(n == 2 && ips[0] == PRECISE && ips[1] == FR_FRAME_MARK_ADDR(FR_FRAME_MARK_NO_CFI),
	      "marker: %u frames, %#llx %#llx", n, (unsigned long long)ips[0],
	      (unsigned long long)ips[1]);
}

/* Period mode: records have no PERIOD field, the weight is the period in
 * force and the rate 0 (never downsampled), cpu's too. Frequency mode keeps
 * the record's period. A period-mode record cut before its callchain's
 * count is dropped. */
static void test_period_weights(void)
{
	const uint64_t u[] = {SKID_USER, CALLER};
	struct ring rg;
	struct rec r;
	struct got g;

	ring_init(&rg, FR_EVENT_PAGE_FAULTS);
	sample(&r, PERF_RECORD_MISC_USER, SKID_USER, 777, NULL, 0, u, 2);
	drain_one(&rg, &r, &g);
	CHECK(g.s.weight == 777 && g.s.rate_hz == 99, "frequency mode: %llu at %u Hz",
	      (unsigned long long)g.s.weight, g.s.rate_hz);
	rg.p->period = 1;
	sample(&r, PERF_RECORD_MISC_USER, SKID_USER, 0, NULL, 0, u, 2);
	drain_one(&rg, &r, &g);
	CHECK(g.s.weight == 1 && g.s.rate_hz == 0, "page-faults period 1: %llu at %u Hz",
	      (unsigned long long)g.s.weight, g.s.rate_hz);
	EXPECT(&g, 0, SKID_USER, CALLER);
	{
		struct perf_event_mmap_page *meta = rg.base;
		struct fr_perf_handler h = {.sample = on_sample, .arg = &g};

		sample(&r, PERF_RECORD_MISC_USER, SKID_USER, 0, NULL, 0, NULL, 0);
		r.n -= 8; /* no nr */
		((struct perf_event_header *)r.b)->size = (uint16_t)r.n;
		memcpy((unsigned char *)rg.base + PAGE +
			       (meta->data_head & (PAGE * DATA_PAGES - 1)),
		       r.b, r.n);
		meta->data_head += r.n;
		memset(&g, 0, sizeof(g));
		fr_perf_drain(rg.p, &h, 0);
		CHECK(g.samples == 0 && meta->data_tail == meta->data_head,
		      "a cut record: %d samples", g.samples);
	}
	ring_fini(&rg);

	ring_init(&rg, FR_EVENT_CPU);
	rg.p->period = 250000;
	rg.p->hz = 4000;
	sample(&r, PERF_RECORD_MISC_USER, SKID_USER, 0, NULL, 0, u, 2);
	drain_one(&rg, &r, &g);
	CHECK(g.s.weight == 250000 && g.s.rate_hz == 0, "cpu period 250us: %llu at %u Hz",
	      (unsigned long long)g.s.weight, g.s.rate_hz);
	ring_fini(&rg);
}

/* The arithmetic: enabled/running, exact in 128 bits, saturating; no
 * scaling without a measured running time or when it ran all along. */
static void test_mux_scale(void)
{
	CHECK(fr_perf_mux_scale(1000, 100, 100) == 1000, "not multiplexed");
	CHECK(fr_perf_mux_scale(1000, 100, 0) == 1000, "never ran: nothing to scale by");
	CHECK(fr_perf_mux_scale(1000, 0, 0) == 1000, "no times");
	CHECK(fr_perf_mux_scale(1000, 100, 200) == 1000, "running > enabled is not scaled");
	CHECK(fr_perf_mux_scale(1000, 100, 50) == 2000, "half the time: x2");
	CHECK(fr_perf_mux_scale(1000, 300, 100) == 3000, "a third: x3");
	CHECK(fr_perf_mux_scale(10, 3, 2) == 15, "x1.5");
	CHECK(fr_perf_mux_scale(7, 3, 2) == 10, "rounded down: %llu",
	      (unsigned long long)fr_perf_mux_scale(7, 3, 2));
	/* 2^62 x 2^40 needs 128 bits before the division... */
	CHECK(fr_perf_mux_scale(1ull << 62, 1ull << 40, 1ull << 39) == 1ull << 63,
	      "large, exact: %llu",
	      (unsigned long long)fr_perf_mux_scale(1ull << 62, 1ull << 40, 1ull << 39));
	CHECK(fr_perf_mux_scale(1ull << 62, 1ull << 40, 1ull << 37) == UINT64_MAX, "saturates");
	/* ...and the product of two large values does not overflow. */
	CHECK(fr_perf_mux_scale(UINT64_MAX / 2, UINT64_MAX, UINT64_MAX / 2 + 1) == UINT64_MAX - 2,
	      "128-bit product: %llu",
	      (unsigned long long)fr_perf_mux_scale(UINT64_MAX / 2, UINT64_MAX,
						    UINT64_MAX / 2 + 1));
}

/* Writes what read(2) of a counter gives with this read_format: value,
 * time enabled, time running. */
static void put_times(int fd, uint64_t enabled, uint64_t running)
{
	uint64_t v[3] = {0, enabled, running};

	CHECK(write(fd, v, sizeof(v)) == (ssize_t)sizeof(v), "write times");
}

/* A drain reads the ring's times first (from a pipe standing in for the
 * counter's descriptor, read as the kernel's would be) and scales by what
 * they grew since the drain before, counting the samples it scaled. */
static void test_drain_scales(void)
{
	const uint64_t u[] = {SKID_USER, CALLER};
	struct fr_perf_pmu_stats st;
	struct ring rg;
	struct rec r;
	struct got g;
	int fds[2];

	CHECK(pipe2(fds, O_NONBLOCK) == 0, "pipe");
	ring_init(&rg, FR_EVENT_INSTRUCTIONS);
	rg.p->rings[0].fd = fds[0];
	rg.p->period = 1000000;
	sample(&r, PERF_RECORD_MISC_USER, SKID_USER, 0, NULL, 0, u, 2);

	put_times(fds[1], 4000, 1000); /* counted a quarter of the time */
	drain_one(&rg, &r, &g);
	CHECK(g.s.weight == 4000000, "a quarter of the time: weight %llu",
	      (unsigned long long)g.s.weight);

	put_times(fds[1], 6000, 3000); /* then all of the time since */
	drain_one(&rg, &r, &g);
	CHECK(g.s.weight == 1000000, "not multiplexed since: weight %llu",
	      (unsigned long long)g.s.weight);

	put_times(fds[1], 5000, 3000); /* times that go back: not trusted */
	drain_one(&rg, &r, &g);
	CHECK(g.s.weight == 1000000, "times going back: weight %llu",
	      (unsigned long long)g.s.weight);

	drain_one(&rg, &r, &g); /* nothing to read */
	CHECK(g.s.weight == 1000000, "no times: weight %llu", (unsigned long long)g.s.weight);

	fr_perf_pmu_stats(rg.p, &st);
	CHECK(st.scaled_samples == 1, "scaled %llu", (unsigned long long)st.scaled_samples);
	CHECK(st.enabled_ns == 6000 && st.running_ns == 3000, "times %llu/%llu",
	      (unsigned long long)st.enabled_ns, (unsigned long long)st.running_ns);
	CHECK(st.reads_failed == 2, "failed reads %llu", (unsigned long long)st.reads_failed);
	close(fds[0]);
	close(fds[1]);
	rg.p->rings[0].fd = -1;
	ring_fini(&rg);
}

int main(void)
{
	test_user_leaf();
	test_user_ip_kernel_skid();
	test_kernel_leaf();
	test_no_chain();
	test_full_stack();
	test_period_weights();
	test_mux_scale();
	test_drain_scales();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("pmu_samples: all checks passed\n");
	return 0;
}
