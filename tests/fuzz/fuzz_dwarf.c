/* Fuzz target for the source-line reader (core/symbols/dwarf_lines.h), which
 * parses the DWARF of ELF files other users control: .debug_line, the
 * units' file tables and the inlined-subroutine chains of .debug_info.
 *
 * Input: bytes 0..7 a little-endian link-time address; the rest is the
 * ELF file, handed over in memory as the symbolizer hands over a file it
 * has read. The address and the 63 after it are looked up.
 *
 * Promises: no crash, no hang, no memory error; a lookup returns -ENOENT
 * or 1..FR_DWARF_MAX_FRAMES frames, whose names and files are strings.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "core/symbols/dwarf_lines.h"

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_dwarf_frame fr[FR_DWARF_MAX_FRAMES];
	struct fr_dwarf_lines *d;
	uint64_t addr;
	void *copy;

	if (size < 8)
		return 0;
	addr = fr_get_le64(data);
	copy = malloc(size - 8 ? size - 8 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 8, size - 8);
	d = fr_dwarf_lines_new(copy, size - 8);
	for (uint64_t a = addr; d && a < addr + 64; a++) {
		int n = fr_dwarf_lines_lookup(d, a, fr, FR_DWARF_MAX_FRAMES);

		FUZZ_CHECK(n == -ENOENT || (n >= 1 && n <= FR_DWARF_MAX_FRAMES),
			   "lookup 0x%llx: %d", (unsigned long long)a, n);
		for (int i = 0; i < n; i++)
			sink += (fr[i].function ? strlen(fr[i].function) : 0) +
				(fr[i].file ? strlen(fr[i].file) : 0) + fr[i].line;
	}
	fr_dwarf_lines_free(d);
	return 0;
}
