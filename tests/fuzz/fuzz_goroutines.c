/* Fuzz target for reading a Go process's goroutines
 * (recorder/tracking/goroutines.h) and the executable they are read with
 * (core/symbols/go_exe.h): the memory and the file are another user's.
 *
 * Input: byte 0 selects what the rest is:
 *   0, 1  the process's memory from FUZZ_GO_BASE on (the list of
 *         goroutines, runtime.allgs, is at its start), read with the Go
 *         1.19 layout and the labels as a map (0) or a slice (1), the
 *         stacks unwound with the function table of gopclntab_synth.h
 *   2     an executable file (in a memfd): fr_go_exe_read
 *   3     code whose RIP-relative operands are looked for:
 *         fr_go_rip_targets
 *
 * Promises: no crash, no memory error, no endless walk (the reads a
 * listing makes are bounded by the goroutines it finds); each goroutine
 * given has a state that lists, at most FR_GOROUTINE_DEPTH frames, at
 * most FR_GOROUTINE_LABELS labels of NUL-terminated keys and values that
 * fit; a stack that changed or runs has no frames; an executable read
 * has a layout inside a g's first 4 KiB and a version of printable
 * bytes; candidates lie in the range asked, 8-aligned, without repeats.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/symbols/go_exe.h"
#include "core/symbols/gopclntab.h"
#include "recorder/tracking/goroutines.h"
#include "tests/fuzz/gopclntab_synth.h"

#define FUZZ_GO_BASE 0x10000000ull

struct mem {
	const uint8_t *p;
	size_t n;
	uint64_t reads;
};

static int mem_read(void *arg, uint64_t addr, void *buf, size_t n)
{
	struct mem *m = arg;

	m->reads++;
	if (addr < FUZZ_GO_BASE || addr - FUZZ_GO_BASE > m->n || m->n - (addr - FUZZ_GO_BASE) < n)
		return -EFAULT;
	memcpy(buf, m->p + (addr - FUZZ_GO_BASE), n);
	return 0;
}

/* Reads the ranges in turn, stopping at the first that fails, as the
 * kernel does. */
static int mem_readv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	size_t i = 0;

	while (i < n && mem_read(arg, addr[i], buf[i], len[i]) == 0)
		i++;
	((struct mem *)arg)->reads -= i + (i < n) - 1;
	return (int)i;
}

static int check_g(void *arg, const struct fr_goroutine *g)
{
	(void)arg;
	FUZZ_CHECK(g->status == FR_G_RUNNABLE || g->status == FR_G_RUNNING ||
			   g->status == FR_G_SYSCALL || g->status == FR_G_WAITING ||
			   g->status == FR_G_COPYSTACK || g->status == FR_G_PREEMPTED,
		   "state %u", g->status);
	FUZZ_CHECK(g->goid, "goid 0");
	FUZZ_CHECK(g->npc <= FR_GOROUTINE_DEPTH, "%u frames", g->npc);
	FUZZ_CHECK(!g->npc || (g->stack != FR_GSTACK_CHANGED && g->stack != FR_GSTACK_RUNNING),
		   "frames of a stack not read");
	FUZZ_CHECK(g->nlabels <= FR_GOROUTINE_LABELS, "%u labels", g->nlabels);
	for (uint32_t i = 0; i < g->nlabels; i++) {
		FUZZ_CHECK(memchr(g->labels[i].k, 0, FR_GOROUTINE_KEY_MAX) && g->labels[i].k[0],
			   "key %u", i);
		FUZZ_CHECK(memchr(g->labels[i].v, 0, FR_GOROUTINE_VALUE_MAX), "value %u", i);
	}
	return 0;
}

static struct fr_gopclntab *synth_table(void)
{
	struct go_synth s;
	void *tab, *fdata;
	int err;

	go_synth_build(&s, 120, 8);
	tab = malloc(s.tab_len);
	fdata = malloc(s.flen);
	FUZZ_CHECK(tab && fdata, "memory");
	memcpy(tab, s.tab, s.tab_len);
	memcpy(fdata, s.fdata, s.flen);
	return fr_gopclntab_new(tab, s.tab_len, fdata, s.flen, s.faddr, GO_SYNTH_TEXT, &err);
}

static void fuzz_memory(int slice, const uint8_t *data, size_t size)
{
	static struct fr_go_exe x;
	struct mem m = {data, size, 0};
	struct fr_goroutines_stats st;
	int ret;

	if (!x.tab) {
		FUZZ_CHECK(fr_go_glayout_table(19, &x.layout) == 0, "the 1.19 layout");
		x.tab = synth_table();
		FUZZ_CHECK(x.tab, "the synthetic table");
		x.allgs = FUZZ_GO_BASE;
	}
	x.layout.labels_kind = slice ? 2 : 1;
	/* Ranges read at once (what the recorder does), or one by one. */
	ret = fr_goroutines_read(&x, 0,
				 &(struct fr_go_mem){mem_read, size & 1 ? mem_readv : NULL, &m}, 64,
				 check_g, NULL, &st);
	FUZZ_CHECK(ret == 0 || ret == -EADDRNOTAVAIL || ret == -E2BIG || ret == -ENOMEM, "read: %d",
		   ret);
	FUZZ_CHECK(st.listed <= 64 && st.changed <= st.listed, "%lu listed, %lu changed",
		   (unsigned long)st.listed, (unsigned long)st.changed);
	/* Each entry of the list costs a bounded number of reads: its g
	 * twice, its stack's frames, its labels' buckets and strings. */
	FUZZ_CHECK(m.reads == st.reads && m.reads <= 8 + (st.listed + st.skipped + 1) * 2 *
								     (8 + FR_GOROUTINE_DEPTH + 64 +
								      4 * FR_GOROUTINE_LABELS),
		   "%lu reads for %lu goroutines", (unsigned long)m.reads,
		   (unsigned long)(st.listed + st.skipped));
}

static void fuzz_exe(const uint8_t *data, size_t size)
{
	static int memfd = -1;
	struct fr_go_exe x;
	int ret;

	if (memfd < 0)
		memfd = memfd_create("fuzz-goroutines", MFD_CLOEXEC);
	FUZZ_CHECK(memfd >= 0, "memfd_create");
	FUZZ_CHECK(ftruncate(memfd, 0) == 0 && pwrite(memfd, data, size, 0) == (ssize_t)size,
		   "write the file");
	ret = fr_go_exe_read(memfd, &x);
	FUZZ_CHECK(ret == 0 || ret == -ENOENT || ret == -ENOEXEC || ret == -ENOTSUP ||
			   ret == -EADDRNOTAVAIL || ret == -ENOMEM || ret == -EIO,
		   "exe: %d", ret);
	if (ret < 0)
		return;
	FUZZ_CHECK(x.layout.size >= 8 && x.layout.size <= 4104, "a g of %u bytes", x.layout.size);
	FUZZ_CHECK(x.ncand <= FR_GO_ALLGS_CANDS && x.nwait <= FR_GO_WAIT_REASONS, "counts");
	for (size_t i = 0; x.version[i]; i++)
		FUZZ_CHECK(x.version[i] >= 0x20 && x.version[i] < 0x7f, "version byte");
	fr_go_exe_fini(&x);
}

static void fuzz_rip(const uint8_t *data, size_t size)
{
	uint64_t cand[FR_GO_ALLGS_CANDS], lo = 0x500000, hi = 0x600000;
	unsigned n = fr_go_rip_targets(data, size, 0x401000, lo, hi, cand, 0, FR_GO_ALLGS_CANDS);

	FUZZ_CHECK(n <= FR_GO_ALLGS_CANDS, "%u candidates", n);
	for (unsigned i = 0; i < n; i++) {
		FUZZ_CHECK(cand[i] >= lo && cand[i] < hi && !(cand[i] & 7), "candidate %#lx",
			   (unsigned long)cand[i]);
		for (unsigned k = 0; k < i; k++)
			FUZZ_CHECK(cand[k] != cand[i], "a repeat");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0]) {
	case 0:
	case 1: fuzz_memory(data[0], data + 1, size - 1); break;
	case 2: fuzz_exe(data + 1, size - 1); break;
	case 3: fuzz_rip(data + 1, size - 1); break;
	}
	return 0;
}
