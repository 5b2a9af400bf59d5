/* Unwinding benchmark (core/unwind): the time to compile a file's CFI
 * into a table, and its size; and the cost of unwinding one sample, with
 * the tables against a plain frame-pointer walk over the same stack copy.
 *
 *   bench_unwind [FILE...]
 *
 * Each FILE (default: libc and python3) is read into memory and its table
 * built five times (the best time is printed). The sample is a stack of
 * this program captured 32 calls deep and then inside a qsort() callback
 * (libc's merge sort frames between), unwound 1,000,000 times. This
 * program is built with frame pointers so that the frame-pointer walk has
 * a chain to follow; libc has none, so that walk skips libc's frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/unwind/unwind.h"
#include "tests/unit/unwind_self.h"

#define NOINLINE __attribute__((noinline, noclone))
#define DEPTH 32
#define ROUNDS 1000000

static struct self_maps maps;
static struct self_snap snap;
static int captured;
static volatile int sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench_build(const char *path)
{
	double best = 1e9;
	struct fr_cfi_table *t = NULL;
	void *data;
	size_t size;
	int err = 0;

	if (self_read_file(path, &data, &size) < 0) {
		printf("%-50s cannot read\n", path);
		return;
	}
	for (int i = 0; i < 5 && err == 0; i++) {
		double t0 = now();

		fr_cfi_free(t);
		t = NULL;
		err = fr_cfi_build(data, size, &t);
		if (now() - t0 < best)
			best = now() - t0;
	}
	if (err < 0)
		printf("%-50s %6.1f MB  error %d\n", path, (double)size / 1e6, err);
	else
		printf("%-50s %6.1f MB  %8.1f ms  %9u rows  %10zu bytes%s\n", path,
		       (double)size / 1e6, best * 1e3, t->nrows, fr_cfi_size(t),
		       t->from_debug_frame ? " (.debug_frame)" : "");
	fr_cfi_free(t);
	free(data);
}

static NOINLINE int by_value(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!captured) {
		captured = 1;
		self_capture(&snap, SELF_STACK_COPY);
	}
	return (x > y) - (x < y);
}

static NOINLINE int deep(int n, int through_qsort)
{
	int v[32];

	if (n > 0)
		return deep(n - 1, through_qsort) + 1;
	if (!through_qsort) {
		self_capture(&snap, SELF_STACK_COPY);
		return sink;
	}
	for (int i = 0; i < 32; i++)
		v[i] = (i * 7) % 32;
	qsort(v, 32, sizeof(v[0]), by_value);
	return v[0] + sink;
}

/* The kernel's way: rbp chain, each frame's return address above it. */
static unsigned fp_walk(const struct fr_unwind_regs *regs, const struct fr_unwind_stack *s,
			uint64_t *ips, unsigned max)
{
	uint64_t bp = regs->bp;
	unsigned n = 0;

	ips[n++] = regs->ip;
	while (n < max && bp >= s->sp && bp - s->sp + 16 <= s->size && !(bp & 7)) {
		uint64_t next, ra;

		memcpy(&next, s->data + (bp - s->sp), 8);
		memcpy(&ra, s->data + (bp - s->sp) + 8, 8);
		if (!ra)
			break;
		ips[n++] = ra;
		if (next <= bp)
			break;
		bp = next;
	}
	return n;
}

static void bench_sample(int through_qsort)
{
	uint64_t ips[128];
	unsigned n = 0, nfp = 0;
	enum fr_unwind_end end = FR_UNWIND_DONE;
	double t0, cfi, fp;

	captured = 0;
	deep(DEPTH, through_qsort);
	t0 = now();
	for (int i = 0; i < ROUNDS; i++)
		end = fr_unwind(&snap.regs, &snap.stack, self_find, &maps, ips, 128, &n);
	cfi = (now() - t0) / ROUNDS;
	t0 = now();
	for (int i = 0; i < ROUNDS; i++)
		nfp = fp_walk(&snap.regs, &snap.stack, ips, 128);
	fp = (now() - t0) / ROUNDS;
	printf("sample %d calls deep%s, %zu bytes of stack copied, backtrace() %d frames\n", DEPTH,
	       through_qsort ? " then through qsort" : "", snap.stack.size, snap.nbt);
	printf("  CFI tables:     %3u frames (%s), %7.1f ns/sample, %5.1f ns/frame\n", n,
	       fr_unwind_end_name(end), cfi * 1e9, cfi * 1e9 / n);
	printf("  frame pointers: %3u frames,        %7.1f ns/sample, %5.1f ns/frame\n", nfp,
	       fp * 1e9, fp * 1e9 / nfp);
}

static void bench_unwind(void)
{
	/* The tables of every file mapped, as the recorder would have them
	 * (qsort's callback needs none loaded later: libc is mapped). */
	if (self_maps_load(&maps) < 0) {
		printf("cannot read /proc/self/maps\n");
		return;
	}
	bench_sample(0);
	bench_sample(1);
	self_maps_free(&maps);
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {"/lib/x86_64-linux-gnu/libc.so.6",
					       "/usr/bin/python3"};

	if (argc > 1)
		for (int i = 1; i < argc; i++)
			bench_build(argv[i]);
	else
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			bench_build(defaults[i]);
	bench_unwind();
	return 0;
}
