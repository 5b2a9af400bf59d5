/* Decoding the user registers and stack copy of sample records
 * (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER) in recorder/sampling/perf_drain.c,
 * on records written by hand into a ring laid out as the kernel lays it
 * out: a well-formed sample is unwound after its kernel frames and ends
 * in the marker of why it stopped; a kernel thread's sample (ABI NONE, no
 * copy) and a 32-bit process's keep their kernel frames; records whose sizes disagree with their
 * length are dropped and counted, never read past their end. */
#include "recorder/sampling/perf_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

#define PAGE 4096u
#define DATA_PAGES 16u
#define COPY 512u /* the source's stack copy */
#define USER_IP 0x401000ull
#define USER_SP 0x7ffd00000000ull

struct got {
	int samples, finds;
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

/* Every address is in code without CFI. */
static const struct fr_cfi_table *find(void *arg, uint32_t pid, uint64_t addr, uint64_t *vaddr,
				       int *miss)
{
	(void)pid;
	(void)addr;
	(void)vaddr;
	((struct got *)arg)->finds++;
	*miss = FR_UNWIND_MISS_NOCFI;
	return NULL;
}

struct rec {
	unsigned char b[8192];
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

/* The fields before REGS_USER: IP, TID, TIME, CPU, PERIOD, and a
 * callchain of two kernel frames. */
static void head(struct rec *r)
{
	struct perf_event_header h = {.type = PERF_RECORD_SAMPLE};
	uint32_t pid_tid[2] = {4242, 4243}, cpu[2] = {1, 0};

	r->n = 0;
	put(r, &h, sizeof(h));
	put64(r, USER_IP);
	put(r, pid_tid, sizeof(pid_tid));
	put64(r, 123456789);
	put(r, cpu, sizeof(cpu));
	put64(r, 10101010);
	put64(r, 3);
	put64(r, (uint64_t)PERF_CONTEXT_KERNEL);
	put64(r, 0xffffffff81000100ull);
	put64(r, 0xffffffff81000200ull);
}

/* A source with a stack copy, on one CPU's ring in memory. */
struct ring {
	struct fr_perf *p;
	void *base;
};

static void ring_init(struct ring *rg)
{
	rg->base = aligned_alloc(PAGE, PAGE * (1 + DATA_PAGES));
	memset(rg->base, 0, PAGE * (1 + DATA_PAGES));
	rg->p = calloc(1, sizeof(*rg->p));
	rg->p->cfg = (struct fr_perf_config){.event = FR_EVENT_CPU, .hz = 99, .stack_copy = COPY};
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

/* Writes record `r` (its header's size set here) at the ring's head and
 * drains it. */
static void drain_one(struct ring *rg, struct rec *r, struct got *g)
{
	struct perf_event_mmap_page *meta = rg->base;
	unsigned char *data = (unsigned char *)rg->base + PAGE;
	struct fr_perf_handler h = {.sample = on_sample, .unwind_find = find, .arg = g};
	uint64_t at = meta->data_head;

	((struct perf_event_header *)r->b)->size = (uint16_t)r->n;
	memcpy(data + (at & (PAGE * DATA_PAGES - 1)), r->b, r->n);
	meta->data_head = at + r->n;
	memset(g, 0, sizeof(*g));
	fr_perf_drain(rg->p, &h, 0);
	CHECK(meta->data_tail == meta->data_head, "the record was not consumed");
}

/* The user registers (ABI 64: rbp, rsp, rip) and a copy whose rbp points
 * at a frame record: the unwinder follows it once, then stops in code
 * without CFI. */
static void test_unwound(struct ring *rg)
{
	struct rec r;
	struct got g;
	struct fr_perf_unwind_stats st;
	uint64_t stack[COPY / 8] = {0};

	head(&r);
	put64(&r, PERF_SAMPLE_REGS_ABI_64);
	put64(&r, USER_SP + 64); /* rbp */
	put64(&r, USER_SP);	 /* rsp */
	put64(&r, USER_IP);	 /* rip */
	/* The caller's rbp: outside the copy (a saved 0 would be the
	 * outermost frame). */
	stack[64 / 8] = 0x1000;
	stack[64 / 8 + 1] = 0x402345;
	put64(&r, COPY);
	put(&r, stack, sizeof(stack));
	put64(&r, COPY); /* dyn_size */
	drain_one(rg, &r, &g);
	CHECK(g.samples == 1, "%d samples, want 1", g.samples);
	CHECK(g.finds > 0, "the unwinder asked for no table");
	CHECK(g.s.nr_kernel == 2 && g.ips[0] == 0xffffffff81000100ull,
	      "kernel frames: %u, first 0x%llx", g.s.nr_kernel, (unsigned long long)g.ips[0]);
	CHECK(g.s.nr_frames >= 4 && g.ips[2] == USER_IP, "user leaf 0x%llx of %u frames",
	      (unsigned long long)g.ips[2], g.s.nr_frames);
	CHECK(g.s.nr_frames >= 4 && g.ips[3] == 0x402345, "caller 0x%llx",
	      (unsigned long long)g.ips[3]);
	CHECK(g.ips[g.s.nr_frames - 1] == FR_FRAME_MARK_ADDR(FR_FRAME_MARK_NO_CFI),
	      "root 0x%llx, want the no-CFI marker", (unsigned long long)g.ips[g.s.nr_frames - 1]);
	fr_perf_unwind_stats(rg->p, &st);
	CHECK(st.stacks == 1 && st.ends[FR_UNWIND_NO_CFI] == 1, "stats: %llu stacks, %llu no cfi",
	      (unsigned long long)st.stacks, (unsigned long long)st.ends[FR_UNWIND_NO_CFI]);
}

/* A kernel thread: ABI NONE, no registers, a copy of size 0 and no
 * dyn_size. */
static void test_kernel_thread(struct ring *rg)
{
	struct rec r;
	struct got g;
	struct fr_perf_unwind_stats before, after;

	fr_perf_unwind_stats(rg->p, &before);
	head(&r);
	put64(&r, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&r, 0);
	drain_one(rg, &r, &g);
	fr_perf_unwind_stats(rg->p, &after);
	CHECK(g.samples == 1 && g.s.nr_kernel == 2 && g.s.nr_frames == 2,
	      "kernel thread: %d samples, %u/%u frames", g.samples, g.s.nr_kernel, g.s.nr_frames);
	CHECK(g.finds == 0, "a sample without registers was unwound");
	CHECK(after.no_regs == before.no_regs + 1 && after.stacks == before.stacks,
	      "no_regs %llu -> %llu", (unsigned long long)before.no_regs,
	      (unsigned long long)after.no_regs);
}

/* A 32-bit process: registers and a copy, but no x86-64 CFI describes
 * its stack, so it is not unwound. */
static void test_compat(struct ring *rg)
{
	struct rec r;
	struct got g;
	uint64_t stack[COPY / 8] = {0};

	head(&r);
	put64(&r, PERF_SAMPLE_REGS_ABI_32);
	put64(&r, 0xffd00040);
	put64(&r, 0xffd00000);
	put64(&r, 0x8049000);
	put64(&r, COPY);
	put(&r, stack, sizeof(stack));
	put64(&r, COPY);
	drain_one(rg, &r, &g);
	CHECK(g.samples == 1 && g.finds == 0 && g.s.nr_frames == 2,
	      "32-bit: %d samples, %d look-ups, %u frames", g.samples, g.finds, g.s.nr_frames);
}

/* Records whose fields do not fit: dropped, counted, nothing read past
 * their end (the sanitizer build would see it). */
static void test_malformed(struct ring *rg)
{
	static const char *const what[] = {"registers cut short", "copy larger than the record",
					   "dyn_size above size", "no dyn_size", "no ABI"};
	uint64_t stack[COPY / 8] = {0};

	for (unsigned k = 0; k < sizeof(what) / sizeof(what[0]); k++) {
		struct fr_perf_unwind_stats before, after;
		struct rec r;
		struct got g;

		fr_perf_unwind_stats(rg->p, &before);
		head(&r);
		if (k != 4)
			put64(&r, PERF_SAMPLE_REGS_ABI_64);
		if (k == 0) {
			put64(&r, USER_SP); /* rbp; rsp and rip missing */
		} else if (k != 4) {
			put64(&r, USER_SP);
			put64(&r, USER_SP);
			put64(&r, USER_IP);
			put64(&r, k == 1 ? 4096 : COPY);
			put(&r, stack, k == 1 ? 64 : sizeof(stack));
			if (k == 2)
				put64(&r, COPY + 8);
		}
		drain_one(rg, &r, &g);
		fr_perf_unwind_stats(rg->p, &after);
		CHECK(g.samples == 0, "%s: the sample was kept", what[k]);
		CHECK(after.bad_records == before.bad_records + 1, "%s: not counted", what[k]);
	}
}

/* Fills the stack below the caller with ones, so a sample the drain
 * builds without setting every field shows it. */
__attribute__((noinline)) static void dirty_stack(void)
{
	volatile unsigned char junk[65536];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xff;
}

/* Regression: the drain built its samples field by field and left
 * app_ref (added later) as it found it on the stack; a non-zero app_ref
 * tells the seal the sample's labels are already known, so cpu samples
 * lost their application labels at random. */
static void test_sample_app_ref_zero(struct ring *rg)
{
	struct rec r;
	struct got g;

	head(&r);
	put64(&r, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&r, 0); /* no stack copy */
	dirty_stack();
	drain_one(rg, &r, &g);
	CHECK(g.samples == 1, "%d samples, want 1", g.samples);
	CHECK(g.s.app_ref == 0, "a drained sample has app_ref %u, not 0", g.s.app_ref);
}

int main(void)
{
	struct ring rg;

	ring_init(&rg);
	test_sample_app_ref_zero(&rg);
	test_unwound(&rg);
	test_kernel_thread(&rg);
	test_compat(&rg);
	test_malformed(&rg);
	ring_fini(&rg);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("perf_decode: all checks passed\n");
	return 0;
}
