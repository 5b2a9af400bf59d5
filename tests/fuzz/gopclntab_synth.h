/* A small Go function table (.gopclntab) written by hand in each layout
 * the reader knows (Go 1.16, 1.18, 1.20; pointers of 8 or 4 bytes), with
 * the inline tree and the runtime's module record that go with it: the
 * unit test's known answers for the layouts no installed Go toolchain
 * writes, and the fuzz target's seeds.
 *
 * Text at GO_SYNTH_TEXT: main.outer [0, 0x40), main.other [0x40, 0x60).
 * In main.outer, lines 10 (a.go) on [0, 0x10), then main.inner inlined
 * (called at 0x08) on [0x10, 0x30), line 20, with main.leaf inlined into
 * it (called at 0x18) on [0x20, 0x30), line 30 of b.go; line 30 of a.go
 * on [0x30, 0x40). main.other is line 40 of a.go throughout.
 */
#ifndef FR_TESTS_FUZZ_GOPCLNTAB_SYNTH_H
#define FR_TESTS_FUZZ_GOPCLNTAB_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#define GO_SYNTH_TEXT 0x401000ull

struct go_synth {
	uint8_t tab[1024]; /* the table */
	size_t tab_len;
	uint64_t tab_addr;
	uint8_t fdata[64]; /* the inline trees: moduledata.gofunc on, or .rodata */
	size_t flen;
	uint64_t faddr;
	uint8_t mod[8 * 48]; /* .noptrdata with the module record (1.18+) */
	size_t mod_len;
};

/* Writes the table of `layout` (116, 118, 120) with pointers of `ptr`
 * bytes (8 or 4) into s. */
void go_synth_build(struct go_synth *s, int layout, unsigned ptr);

#endif
