/* Fuzz target for Go's function table reader (core/symbols/gopclntab.h),
 * which parses the .gopclntab of binaries other users control, the inline
 * trees its records point to, and the runtime's module record that says
 * where those lie.
 *
 * Input (little-endian): bytes 0..7 a link-time address, 8..15 the text
 * start (0: the table's), 16..23 the address of the inline trees' bytes,
 * 24..31 the table's address, 32..35 the table's length, 36..39 the inline
 * trees' length; then the table, the inline trees, and the rest: the
 * bytes the module record is looked for in (.noptrdata). Lengths beyond
 * the input are cut to it. The address and the 95 after it are looked up,
 * with room for every frame and for two.
 *
 * Promises: no crash, no hang, no memory error; a lookup returns -ENOENT
 * or 1..cap frames, every one named, names and files strings; the
 * function found covers the address; a module record found puts gofunc
 * inside the inline trees' bytes; the stack pointer runs are not empty.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "core/symbols/gopclntab.h"
#include "core/util/le.h"

#define HEAD 40

static volatile size_t sink;

static void *dup_bytes(const uint8_t *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	if (c && n)
		memcpy(c, p, n);
	return c;
}

static void lookups(const struct fr_gopclntab *g, uint64_t pc)
{
	struct fr_dwarf_frame fr[FR_DWARF_MAX_FRAMES];
	static const size_t caps[] = {FR_DWARF_MAX_FRAMES, 2};

	for (uint64_t a = pc; a < pc + 96; a++) {
		const char *name;
		uint64_t entry;

		for (size_t c = 0; c < 2; c++) {
			int n = fr_gopclntab_lookup(g, a, fr, caps[c]);

			FUZZ_CHECK(n == -ENOENT || (n >= 1 && (size_t)n <= caps[c]),
				   "lookup 0x%llx: %d", (unsigned long long)a, n);
			for (int i = 0; i < n; i++) {
				FUZZ_CHECK(fr[i].function, "frame %d of 0x%llx unnamed", i,
					   (unsigned long long)a);
				sink += strlen(fr[i].function) +
					(fr[i].file ? strlen(fr[i].file) : 0) + fr[i].line;
			}
		}
		if (fr_gopclntab_func(g, a, &name, &entry) == 0)
			FUZZ_CHECK(entry <= a && name, "function at 0x%llx starts after it",
				   (unsigned long long)a);
	}
}

/* A run of stack pointer offsets must not be empty. */
static int sp_run(void *arg, uint64_t start, uint64_t end, int32_t sp)
{
	FUZZ_CHECK(end > start, "empty run at 0x%llx", (unsigned long long)start);
	sink += (size_t)sp;
	return ++*(size_t *)arg < 1000000 ? 0 : -E2BIG;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t pc, text, faddr, gofunc = 0, tstart = 0;
	size_t tlen, flen;
	struct fr_go_sections secs;
	struct fr_gopclntab *g;
	int err;

	if (size < HEAD)
		return 0;
	pc = fr_get_le64(data);
	text = fr_get_le64(data + 8);
	faddr = fr_get_le64(data + 16);
	secs.tab_addr = fr_get_le64(data + 24);
	tlen = fr_get_le32(data + 32);
	flen = fr_get_le32(data + 36);
	data += HEAD;
	size -= HEAD;
	tlen = tlen < size ? tlen : size;
	flen = flen < size - tlen ? flen : size - tlen;
	secs.text = text;
	secs.etext = text + (1u << 20);
	secs.rodata = faddr;
	secs.erodata = faddr + flen;
	/* The header alone (as the symbol cache reads it) or the table. */
	if (fr_gopclntab_gofunc(data, (pc & 1) ? FR_GOPCLNTAB_HEAD_MAX : tlen, tlen,
				data + tlen + flen, size - tlen - flen, &secs, &gofunc,
				&tstart) == 0)
		FUZZ_CHECK(gofunc >= faddr && gofunc < faddr + flen, "gofunc 0x%llx outside",
			   (unsigned long long)gofunc);
	g = fr_gopclntab_new(dup_bytes(data, tlen), tlen,
			     flen ? dup_bytes(data + tlen, flen) : NULL, flen, faddr, text, &err);
	FUZZ_CHECK(g || err < 0, "no table and no error");
	if (g) {
		FUZZ_CHECK(fr_gopclntab_bytes(g) >= tlen + flen, "bytes not counted");
		size_t runs = 0;

		lookups(g, pc);
		FUZZ_CHECK(fr_gopclntab_sp_runs(g, sp_run, &runs) == 0 || runs >= 1000000,
			   "the pcsp walk failed");
	}
	fr_gopclntab_free(g);
	return 0;
}
