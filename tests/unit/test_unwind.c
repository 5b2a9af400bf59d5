/* The unwinder (core/unwind) on this very process, built without frame
 * pointers: stacks captured at known points are unwound with the tables
 * of every mapped file and compared, frame by frame, with glibc's
 * backtrace() taken at the same point (libgcc's unwinder, independent of
 * ours): a plain chain of calls, a chain through libc's qsort (libc has
 * no frame pointers), a chain through a signal frame (the handler
 * interrupting a spinning function), and a stack copy too small for the
 * stack. And, on a stack made here, the frame-pointer steps through code
 * without CFI and the other ends of an unwind. */
#include <execinfo.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "core/unwind/unwind.h"
#include "tests/unit/check.h"
#include "tests/unit/unwind_self.h"

#define NOINLINE __attribute__((noinline, noclone))

static struct self_maps maps;
static struct self_snap snap;
static size_t copy_size = SELF_STACK_COPY;
static volatile int depth_sink;

/* ---- a plain chain ---- */

static NOINLINE int chain3(int x)
{
	self_capture(&snap, copy_size);
	return x + depth_sink;
}

static NOINLINE int chain2(int x)
{
	return chain3(x * 3) + 1;
}

static NOINLINE int chain1(int x)
{
	return chain2(x + 7) * 2;
}

/* ---- through qsort ---- */

/* Calls of the comparison function so far: the capture is at the 100th,
 * well inside libc's merge sort of 64 elements (about 300 comparisons),
 * and past the 63 direct calls with which a sanitizer's qsort()
 * interceptor checks the array first. */
static int cmp_calls;

static NOINLINE int by_value(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (++cmp_calls == 100)
		self_capture(&snap, copy_size);
	return (x > y) - (x < y);
}

static NOINLINE int sort_some(int seed)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37 + seed) % 64;
	qsort(v, 64, sizeof(v[0]), by_value);
	return v[0] + depth_sink;
}

static NOINLINE int sort_caller(int seed)
{
	return sort_some(seed + 1) + 1;
}

/* ---- through a signal frame ---- */

static volatile sig_atomic_t signalled;

static void on_prof(int sig)
{
	(void)sig;
	if (!signalled) {
		self_capture(&snap, copy_size);
		signalled = 1;
	}
}

static NOINLINE uint64_t spin(void)
{
	uint64_t n = 0;

	while (!signalled)
		n++;
	return n;
}

static NOINLINE uint64_t spin_caller(void)
{
	return spin() + 1;
}

/* Unwinds the snapshot and compares with its backtrace(): every return
 * address backtrace() found must be ours at the same position. bt[0] is
 * in self_capture, after ours; a sanitizer's backtrace() interceptor may
 * add its own frames before self_capture's caller, which are skipped.
 * Returns how many frames were ours. */
static unsigned unwind_and_compare(const char *what, enum fr_unwind_end *endp, uint64_t *ips)
{
	unsigned n = 0, match, skip = 0;
	enum fr_unwind_end end =
		fr_unwind(&snap.regs, &snap.stack, self_find, &maps, ips, SELF_MAX_BT, &n);
	const uint64_t *bt;
	int nbt;

	*endp = end;
	CHECK(n >= 2, "%s: %u frames (%s)", what, n, fr_unwind_end_name(end));
	while (n >= 2 && (int)skip < snap.nbt - 2 && skip < 3 &&
	       (uint64_t)(uintptr_t)snap.bt[1 + skip] != ips[1])
		skip++;
	bt = (const uint64_t *)(snap.bt + skip);
	nbt = snap.nbt - (int)skip;
	for (match = 1; match < n && (int)match < nbt; match++)
		if (ips[match] != bt[match])
			break;
	/* backtrace() may go one frame further than the outermost with a
	 * return address (_start's caller), or stop there. */
	CHECK((int)match >= nbt - 1,
	      "%s: frame %u: 0x%" PRIx64 ", backtrace 0x%" PRIx64 " (%u frames, backtrace %d, %s)",
	      what, match, match < n ? ips[match] : 0, (int)match < nbt ? bt[match] : 0, n, nbt,
	      fr_unwind_end_name(end));
	if ((int)match < nbt - 1) {
		for (unsigned i = 0; i < n || (int)i < nbt; i++)
			fprintf(stderr, "  %2u ours 0x%" PRIx64 " backtrace 0x%" PRIx64 "\n", i,
				i < n ? ips[i] : 0, (int)i < nbt ? bt[i] : 0);
	}
	return n;
}

/* Index of the first frame in [lo, hi), or -1. */
static int frame_in(const uint64_t *ips, unsigned n, uintptr_t lo, uintptr_t hi)
{
	for (unsigned i = 0; i < n; i++)
		if (ips[i] >= lo && ips[i] < hi)
			return (int)i;
	return -1;
}

static void test_chain(void)
{
	uint64_t ips[SELF_MAX_BT];
	enum fr_unwind_end end;
	unsigned n;

	chain1(1);
	n = unwind_and_compare("chain", &end, ips);
	CHECK(end == FR_UNWIND_DONE, "chain: ended %s after %u frames", fr_unwind_end_name(end), n);
	/* self_capture, chain3, chain2, chain1, test_chain, main, libc's
	 * start (two), _start */
	CHECK(n >= 8, "chain: %u frames", n);
}

static void test_qsort(void)
{
	uint64_t ips[SELF_MAX_BT];
	enum fr_unwind_end end;
	const struct self_map *self;
	unsigned n, in_libc = 0;
	int at_sort;

	cmp_calls = 0;
	sort_caller(5);
	n = unwind_and_compare("qsort", &end, ips);
	CHECK(end == FR_UNWIND_DONE, "qsort: ended %s after %u frames", fr_unwind_end_name(end), n);
	/* After the comparison function, frames of other files only (libc's
	 * merge sort; a sanitizer's interceptor), at least one of libc, then
	 * this program again: sort_some, which called qsort. */
	self = self_map_of(&maps, (uint64_t)(uintptr_t)&sort_some);
	for (at_sort = 2; at_sort < (int)n && self_map_of(&maps, ips[at_sort]) != self; at_sort++) {
		const struct self_map *m = self_map_of(&maps, ips[at_sort]);

		in_libc += m && strstr(m->path, "/libc.so") != NULL;
	}
	CHECK(at_sort >= 3 && at_sort < (int)n, "qsort: back in this program at frame %d of %u",
	      at_sort, n);
	CHECK(in_libc >= 1, "qsort: %u frames of libc after the callback", in_libc);
}

static void test_signal(void)
{
	uint64_t ips[SELF_MAX_BT];
	enum fr_unwind_end end;
	struct sigaction sa = {.sa_handler = on_prof};
	struct itimerval it = {.it_value = {.tv_usec = 2000}, .it_interval = {.tv_usec = 2000}};
	struct itimerval off = {0};
	unsigned n;
	int at_spin, at_caller;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	signalled = 0;
	setitimer(ITIMER_PROF, &it, NULL);
	spin_caller();
	setitimer(ITIMER_PROF, &off, NULL);
	signal(SIGPROF, SIG_IGN);
	n = unwind_and_compare("signal", &end, ips);
	CHECK(end == FR_UNWIND_DONE, "signal: ended %s after %u frames", fr_unwind_end_name(end),
	      n);
	/* The interrupted instruction in spin() (exactly, not a return
	 * address), then its caller. */
	at_spin = frame_in(ips, n, (uintptr_t)&spin, (uintptr_t)&spin + 64);
	at_caller = frame_in(ips, n, (uintptr_t)&spin_caller, (uintptr_t)&spin_caller + 64);
	CHECK(at_spin >= 2, "signal: no frame in spin()");
	CHECK(at_caller == at_spin + 1, "signal: spin_caller at frame %d, spin at %d", at_caller,
	      at_spin);
}

static void test_small_copy(void)
{
	uint64_t ips[SELF_MAX_BT];
	enum fr_unwind_end end;
	unsigned n = 0;

	copy_size = 256;
	chain1(2);
	copy_size = SELF_STACK_COPY;
	CHECK(snap.stack.size == 256, "small: copied %zu", snap.stack.size);
	end = fr_unwind(&snap.regs, &snap.stack, self_find, &maps, ips, SELF_MAX_BT, &n);
	CHECK(end == FR_UNWIND_STACK_COPY, "small: ended %s after %u frames",
	      fr_unwind_end_name(end), n);
	CHECK(n >= 1 && n < 8, "small: %u frames", n);
	/* And at most `max` frames. */
	chain1(3);
	end = fr_unwind(&snap.regs, &snap.stack, self_find, &maps, ips, 3, &n);
	CHECK(end == FR_UNWIND_MAX_DEPTH && n == 3, "max: ended %s after %u frames",
	      fr_unwind_end_name(end), n);
}

/* ---- frame pointers where there is no CFI, and the other ends ---- */

#define FAKE_SP 0x7ff000000000ull

/* What the look-up answers: NOCFI (code without CFI, JIT code say) up
 * to `nocfi_below`, `miss` above. */
struct fake_find {
	uint64_t nocfi_below;
	int miss;
};

static const struct fr_cfi_table *fake_find(void *arg, uint64_t addr, uint64_t *vaddr, int *miss)
{
	const struct fake_find *f = arg;

	*vaddr = addr;
	*miss = addr < f->nocfi_below ? FR_UNWIND_MISS_NOCFI : f->miss;
	return NULL;
}

static void put_frame(uint8_t *stack, uint64_t at, uint64_t bp, uint64_t ra)
{
	memcpy(stack + (at - FAKE_SP), &bp, 8);
	memcpy(stack + (at - FAKE_SP) + 8, &ra, 8);
}

/* A chain of rbp-linked frames (a JIT's, say) in a stack of 256 bytes:
 * 0x1000 <- 0x2000 <- 0x3000 <- `last_ra` with `last_bp` saved. */
static enum fr_unwind_end fake_unwind(uint64_t last_bp, uint64_t last_ra, uint64_t bp,
				      const struct fake_find *f, unsigned max, uint64_t *ips,
				      unsigned *n)
{
	static uint8_t data[256];
	struct fr_unwind_regs regs = {.ip = 0x1000, .sp = FAKE_SP, .bp = bp};
	struct fr_unwind_stack st = {.sp = FAKE_SP, .data = data, .size = sizeof(data)};

	put_frame(data, FAKE_SP + 32, FAKE_SP + 96, 0x2000);
	put_frame(data, FAKE_SP + 96, FAKE_SP + 160, 0x3000);
	put_frame(data, FAKE_SP + 160, last_bp, last_ra);
	return fr_unwind(&regs, &st, fake_find, (void *)(uintptr_t)f, ips, max, n);
}

static void test_ends(void)
{
	struct fake_find nocfi = {.nocfi_below = UINT64_MAX};
	struct fake_find pending = {.nocfi_below = 0, .miss = FR_UNWIND_MISS_PENDING};
	struct fake_find nomap = {.nocfi_below = 0x1800, .miss = FR_UNWIND_MISS_NOMAP};
	uint64_t ips[8], bp = FAKE_SP + 32;
	enum fr_unwind_end end;
	unsigned n;

	/* The chain ends with a zero return address: whole. */
	end = fake_unwind(0, 0, bp, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_DONE && n == 3 && ips[0] == 0x1000 && ips[1] == 0x2000 &&
		      ips[2] == 0x3000,
	      "fp: %s, %u frames", fr_unwind_end_name(end), n);
	/* The last saved rbp points out of the copy: the walk stops there. */
	end = fake_unwind(FAKE_SP + 4096, 0x4000, bp, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_NO_CFI && n == 4 && ips[3] == 0x4000, "fp out: %s, %u frames",
	      fr_unwind_end_name(end), n);
	/* A saved rbp below the frame would go back down the stack. */
	end = fake_unwind(FAKE_SP + 8, 0x4000, bp, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_NO_CFI && n == 4, "fp down: %s, %u frames", fr_unwind_end_name(end),
	      n);
	/* rbp misaligned, or not in the copy at all, from the start. */
	end = fake_unwind(0, 0, bp + 1, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_NO_CFI && n == 1, "fp misaligned: %s, %u frames",
	      fr_unwind_end_name(end), n);
	end = fake_unwind(0, 0, 0x1234, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_NO_CFI && n == 1, "fp elsewhere: %s, %u frames",
	      fr_unwind_end_name(end), n);
	/* The last frame's saved rbp is 0, as the process's entry and a
	 * thread's start leave it: the outermost frame, the stack is whole
	 * (was "no cfi": a Go program without CFI was truncated at its
	 * goroutine's first frame). */
	end = fake_unwind(0, 0x4000, bp, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_DONE && n == 4 && ips[3] == 0x4000, "fp outermost: %s, %u frames",
	      fr_unwind_end_name(end), n);
	/* rbp 0 in the registers, not saved by a frame-pointer step: code
	 * built without frame pointers often leaves it 0 from _start on, so
	 * it says nothing of the caller (regression: JIT code called from
	 * such a program was a whole stack of one frame). */
	end = fake_unwind(0, 0x4000, 0, &nocfi, 8, ips, &n);
	CHECK(end == FR_UNWIND_NO_CFI && n == 1, "rbp 0: %s, %u frames", fr_unwind_end_name(end),
	      n);
	/* The table is not built yet. */
	end = fake_unwind(0, 0, bp, &pending, 8, ips, &n);
	CHECK(end == FR_UNWIND_PENDING && n == 1, "pending: %s, %u frames", fr_unwind_end_name(end),
	      n);
	/* A return address into no mapping is a wrong unwind. */
	end = fake_unwind(0, 0, bp, &nomap, 8, ips, &n);
	CHECK(end == FR_UNWIND_BAD && n == 2, "nomap: %s, %u frames", fr_unwind_end_name(end), n);
	/* At most `max` frames. */
	end = fake_unwind(0, 0, bp, &nocfi, 2, ips, &n);
	CHECK(end == FR_UNWIND_MAX_DEPTH && n == 2, "max: %s, %u frames", fr_unwind_end_name(end),
	      n);
	for (int e = 0; e < FR_UNWIND_END_COUNT; e++)
		CHECK(strcmp(fr_unwind_end_name((enum fr_unwind_end)e), "unknown") != 0,
		      "end %d has no name", e);
}

/* ---- an epilogue after `pop %rbp` (regression) ---- */

/* A table of two functions at 0x10000: one stopped in its epilogue,
 * after `pop %rbp` (CFA = rsp + 8, and the CFI, as GCC writes it, still
 * saying rbp is saved at CFA - 48, now below rsp), and its caller, the
 * outermost frame. */
static const struct fr_cfi_table *epilogue_find(void *arg, uint64_t addr, uint64_t *vaddr,
						int *miss)
{
	const struct fr_cfi_table *t = arg;

	*vaddr = addr;
	if (addr < t->base || addr >= t->limit) {
		*miss = FR_UNWIND_MISS_NOMAP;
		return NULL;
	}
	return t;
}

static void test_epilogue(void)
{
	static uint8_t data[64];
	struct fr_cfi_table *t = calloc(1, sizeof(*t) + 2 * sizeof(struct fr_cfi_row));
	struct fr_unwind_regs regs = {.ip = 0x10010, .sp = FAKE_SP, .bp = 0xabc0};
	struct fr_unwind_stack st = {.sp = FAKE_SP, .data = data, .size = sizeof(data)};
	uint64_t ra = 0x10101, ips[4];
	enum fr_unwind_end end;
	unsigned n = 0;

	if (!t) {
		CHECK(0, "calloc");
		return;
	}
	t->base = 0x10000;
	t->limit = 0x10200;
	t->nrows = 2;
	t->rows[0] = (struct fr_cfi_row){.pc = 0,
					 .cfa_off = 8,
					 .fp_off = -48,
					 .kind = FR_CFA_SP,
					 .fp_rule = FR_FP_SAVED};
	t->rows[1] = (struct fr_cfi_row){.pc = 0x100, .kind = FR_CFA_END};
	memcpy(data, &ra, sizeof(ra));
	end = fr_unwind(&regs, &st, epilogue_find, t, ips, 4, &n);
	/* Was "stack copy": the popped slot was loaded, below the copy. */
	CHECK(end == FR_UNWIND_DONE && n == 2 && ips[0] == 0x10010 && ips[1] == ra,
	      "epilogue: %s, %u frames", fr_unwind_end_name(end), n);
	free(t);
}

/* ---- code without CFI between code with CFI (regression) ---- */

/* A file with CFI at [0x10000, 0x10200): three functions of one row each
 * (CFA = rsp + 8, rbp unchanged: frameless), a gap without CFI at
 * [0x10100, 0x10180) (V8's builtins in node's text), and the outermost
 * frame at 0x10180; anonymous code without CFI (JIT code) at [0x20000,
 * 0x21000); nothing elsewhere. */
static const struct fr_cfi_table *mixed_find(void *arg, uint64_t addr, uint64_t *vaddr, int *miss)
{
	const struct fr_cfi_table *t = arg;

	*vaddr = addr;
	if (addr >= 0x20000 && addr < 0x21000) {
		*miss = FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	if (addr < t->base || addr >= t->limit) {
		*miss = FR_UNWIND_MISS_NOMAP;
		return NULL;
	}
	return t;
}

static struct fr_cfi_table *mixed_table(void)
{
	struct fr_cfi_table *t = calloc(1, sizeof(*t) + 3 * sizeof(struct fr_cfi_row));

	if (!t)
		return NULL;
	t->base = 0x10000;
	t->limit = 0x10200;
	t->nrows = 3;
	t->rows[0] = (struct fr_cfi_row){.pc = 0, .cfa_off = 8, .kind = FR_CFA_SP};
	t->rows[1] = (struct fr_cfi_row){.pc = 0x100, .kind = FR_CFA_UNDEF};
	t->rows[2] = (struct fr_cfi_row){.pc = 0x180, .kind = FR_CFA_END};
	return t;
}

static void put64(uint8_t *stack, uint64_t at, uint64_t v)
{
	memcpy(stack + (at - FAKE_SP), &v, 8);
}

static void test_mixed(void)
{
	static uint8_t data[256];
	struct fr_cfi_table *t = mixed_table();
	struct fr_unwind_regs regs = {.ip = 0x10010, .sp = FAKE_SP, .bp = FAKE_SP + 32};
	struct fr_unwind_stack st = {.sp = FAKE_SP, .data = data, .size = sizeof(data)};
	uint64_t ips[8];
	enum fr_unwind_end end;
	unsigned n = 0;

	if (!t) {
		CHECK(0, "calloc");
		return;
	}
	/* A frameless function with CFI (rbp holds its caller's frame
	 * pointer, untouched) called from JIT code, called from a builtin in
	 * the CFI file's gap, called from a function with CFI, called from
	 * the outermost one: the frame pointer takes over where the CFI has
	 * nothing, the CFI again from 0x10050 on. */
	put64(data, FAKE_SP, 0x20010);			      /* leaf's return address */
	put_frame(data, FAKE_SP + 32, FAKE_SP + 96, 0x10110); /* the JIT frame */
	put_frame(data, FAKE_SP + 96, 0x5555, 0x10050);	      /* the builtin's frame */
	put64(data, FAKE_SP + 112, 0x10190);		      /* 0x10050's return address */
	end = fr_unwind(&regs, &st, mixed_find, t, ips, 8, &n);
	/* Was "bad" at 0x10110: the gap has no row. */
	CHECK(end == FR_UNWIND_DONE && n == 5 && ips[1] == 0x20010 && ips[2] == 0x10110 &&
		      ips[3] == 0x10050 && ips[4] == 0x10190,
	      "mixed: %s, %u frames", fr_unwind_end_name(end), n);

	/* CPython 3.12's perf trampoline: JIT code without a frame pointer
	 * (`sub $8, %rsp; call *%rcx`) called from code with CFI that uses
	 * rbp for data: its return address into CFI code is at rsp + 8. */
	memset(data, 0, sizeof(data));
	regs.bp = 0x7f0000001230;	    /* not a frame pointer */
	put64(data, FAKE_SP, 0x20006);	    /* leaf's return address */
	put64(data, FAKE_SP + 8, 0x10040);  /* the slot the stub reserved */
	put64(data, FAKE_SP + 16, 0x10060); /* its return address */
	put64(data, FAKE_SP + 24, 0x10190);
	end = fr_unwind(&regs, &st, mixed_find, t, ips, 8, &n);
	CHECK(end == FR_UNWIND_DONE && n == 4 && ips[1] == 0x20006 && ips[2] == 0x10060 &&
		      ips[3] == 0x10190,
	      "stub: %s, %u frames", fr_unwind_end_name(end), n);
	/* The same with a return address into no code with CFI: stopped. */
	put64(data, FAKE_SP + 16, 0x30000);
	end = fr_unwind(&regs, &st, mixed_find, t, ips, 8, &n);
	CHECK(end == FR_UNWIND_NO_CFI && n == 2, "stub elsewhere: %s, %u frames",
	      fr_unwind_end_name(end), n);
	free(t);
}

int main(void)
{
	void *warm[4];
	int err;

	/* backtrace() loads libgcc_s on first use: before the maps are
	 * read. */
	backtrace(warm, 4);
	err = self_maps_load(&maps);
	if (err < 0) {
		fprintf(stderr, "SKIP: /proc/self/maps: %s\n", strerror(-err));
		return 77;
	}
	test_chain();
	test_qsort();
	test_signal();
	test_small_copy();
	test_ends();
	test_epilogue();
	test_mixed();
	self_maps_free(&maps);
	return failures ? 1 : 0;
}
