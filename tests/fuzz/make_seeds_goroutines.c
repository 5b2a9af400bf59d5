/* Seeds of the goroutines target (tests/fuzz/fuzz_goroutines.c): a
 * process's memory holding the list of two goroutines in the Go 1.19
 * layout, the first on a CPU, the second waiting with a stack and a label
 * (as a map, and as a slice), and that memory cut short; code addressing
 * a variable; the start of an ELF file. */
#include <string.h>

#include "core/symbols/go_exe.h"
#include "tests/fuzz/gopclntab_synth.h"
#include "tests/fuzz/make_seeds.h"

#define BASE 0x10000000ull
#define SIZE 0x2000u

static void put(uint8_t *m, uint64_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		m[at + i] = (uint8_t)(v >> (8 * i));
}

static void g(uint8_t *m, const struct fr_go_glayout *l, uint64_t at, uint64_t goid,
	      uint32_t status)
{
	put(m, at + l->goid, goid);
	put(m, at + l->status, status);
	put(m, at + l->stack_lo, BASE + 0x1000);
	put(m, at + l->stack_hi, BASE + 0x2000);
	put(m, at + l->sched_sp, BASE + 0x1800);
	put(m, at + l->sched_pc, GO_SYNTH_TEXT + 0x11);
	put(m, at + l->gopc, GO_SYNTH_TEXT + 0x41);
	put(m, at + l->startpc, GO_SYNTH_TEXT);
}

/* The memory; labels as a map (slice 0) or a slice. */
static void memory(uint8_t *m, int slice)
{
	struct fr_go_glayout l;

	memset(m, 0, SIZE);
	fr_go_glayout_table(19, &l);
	put(m, 0, BASE + 0x20); /* allgs: {ptr, len, cap} */
	put(m, 8, 2);
	put(m, 16, 2);
	put(m, 0x20, BASE + 0x100);
	put(m, 0x28, BASE + 0x400);
	g(m, &l, 0x100, 1, 2);
	put(m, 0x100 + l.m, BASE + 0x800);
	put(m, 0x800 + l.m_procid, 4242);
	g(m, &l, 0x400, 2, 4);
	m[0x400 + l.waitreason] = 14;
	put(m, 0x400 + l.labels, BASE + 0x900);
	memcpy(m + 0xc00, "endpoint/a", 10);
	if (slice) {
		put(m, 0x900, BASE + 0xb00); /* {ptr, len} of {key, value} */
		put(m, 0x908, 1);
		put(m, 0xb00, BASE + 0xc00);
		put(m, 0xb08, 8);
		put(m, 0xb10, BASE + 0xc08);
		put(m, 0xb18, 2);
	} else {
		put(m, 0x900, BASE + 0xa00); /* the map variable */
		put(m, 0xa00, 1);	     /* hmap: count, flags/B, ... buckets */
		put(m, 0xa10, BASE + 0xb00);
		m[0xb00] = 9; /* tophash[0] */
		put(m, 0xb08, BASE + 0xc00);
		put(m, 0xb10, 8);
		put(m, 0xb88, BASE + 0xc08);
		put(m, 0xb90, 2);
	}
	put(m, 0x1800, GO_SYNTH_TEXT + 0x41); /* a return address */
}

void make_goroutines_seeds(void)
{
	static uint8_t m[SIZE];
	/* MOVQ runtime.allgs(SB), CX; MOVQ CX, runtime.allgs+8(SB) */
	static const uint8_t code[] = {0x48, 0x8b, 0x0d, 0xf9, 0xff, 0x0f, 0x00,
				       0x48, 0x89, 0x0d, 0xfa, 0xff, 0x0f, 0x00};
	static const uint8_t elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};

	clean_dir("goroutines");
	memory(m, 0);
	write_seed("goroutines", "map", 0, m, SIZE);
	write_seed("goroutines", "map-cut", 0, m, SIZE / 2);
	memory(m, 1);
	write_seed("goroutines", "slice", 1, m, SIZE);
	write_seed("goroutines", "code", 3, code, sizeof(code));
	write_seed("goroutines", "elf-head", 2, elf, sizeof(elf));
}
