/* What a parsed image costs in memory against what the symbolizer counts
 * of it (fr_symbols_get_stats(), the bound on the images kept): names and
 * DWARF lines for every STEP-th byte of [LO, HI) of FILE, the heap
 * (mallinfo2, mmapped blocks included) measured after the file is parsed
 * and after the look-ups.
 *
 *   bench_symbols_memory FILE LO HI STEP
 *
 * FILE is an absolute path without symbolic links (the symbolizer opens
 * nothing through one); LO and HI are file offsets, e.g. of its code
 * segment (`readelf -lW FILE`, the R E LOAD).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/symbols/dwarf_lines.h"
#include "core/symbols/elf_image.h"
#include "core/symbols/symbols.h"

static size_t heap(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

int main(int argc, char **argv)
{
	uint64_t lo, hi, step, vaddr;
	struct fr_symbols_stats st;
	struct fr_dwarf_lines *d;
	struct fr_symbols *s;
	size_t h0, h1, named = 0, lines = 0;
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	const char *name;
	int bid_len;

	if (argc != 5) {
		fprintf(stderr, "usage: %s FILE LO HI STEP\n", argv[0]);
		return 2;
	}
	lo = strtoull(argv[2], NULL, 0);
	hi = strtoull(argv[3], NULL, 0);
	step = strtoull(argv[4], NULL, 0);
	bid_len = fr_elf_build_id(argv[1], bid, sizeof(bid));
	if (bid_len <= 0 || !step) {
		fprintf(stderr, "%s: no build id, or STEP 0\n", argv[1]);
		return 1;
	}
	h0 = heap();
	s = fr_symbols_new(NULL);
	if (!s)
		return 1;
	fr_symbols_user(s, NULL, argv[1], bid, (size_t)bid_len, 0, 0, lo, &name, &vaddr);
	d = fr_symbols_user_dwarf(s, NULL, argv[1], bid, (size_t)bid_len);
	h1 = heap();
	for (uint64_t a = lo; a < hi; a += step) {
		struct fr_dwarf_frame fr[FR_DWARF_MAX_FRAMES];

		if (fr_symbols_user(s, NULL, argv[1], bid, (size_t)bid_len, 0, 0, a, &name,
				    &vaddr) != 0)
			continue;
		named++;
		if (d && fr_dwarf_lines_lookup(d, vaddr, fr, FR_DWARF_MAX_FRAMES) > 0)
			lines++;
	}
	/* The image stays, idle: what is kept is what is measured. */
	fr_symbols_free(s);
	fr_symbols_get_stats(&st);
	printf("%s: %zu addresses named, %zu with lines; counted %.1f MiB; heap +%.1f MiB "
	       "parsed, +%.1f MiB after the look-ups\n",
	       argv[1], named, lines, (double)st.bytes / 1048576, (double)(h1 - h0) / 1048576,
	       (double)(heap() - h0) / 1048576);
	return 0;
}
