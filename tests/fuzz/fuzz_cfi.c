/* Fuzz target for the CFI table compiler (core/unwind/cfi.h), which parses
 * .eh_frame and .debug_frame of ELF files other users control, and for the
 * unwinder (core/unwind/unwind.h) on what such a table says.
 *
 * Input: bytes 0..7 a little-endian link-time address; the rest is the
 * ELF file, handed over in memory as the recorder hands over a file it
 * has read. The address and the 63 after it are looked up, and a stack
 * made of the file's first bytes is unwound from there, every address
 * mapped to this file's table.
 *
 * The file is built again with stack pointer offsets merged into its
 * CFI's gaps (fr_cfi_build_merged()): 16 ranges around the address, their
 * starts, lengths and offsets from the file's first bytes (some
 * overlapping, unsorted, empty, negative or not of whole words).
 *
 * Promises: no crash, no hang, no memory error; an error is one of those
 * fr_cfi_build() names, with no table; a table has sorted unique pcs
 * inside [base, limit), at most FR_CFI_MAX_ROWS rows, and a look-up gives
 * NULL or a row at or below the address, of a known kind; an unwind fills
 * at most `max` frames and ends with a known reason.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "core/unwind/unwind.h"

#define MAX_FRAMES 64

static const struct fr_cfi_table *find_all(void *arg, uint64_t addr, uint64_t *vaddr, int *miss)
{
	*vaddr = addr;
	*miss = FR_UNWIND_MISS_NOCFI;
	return addr & 1 ? NULL : arg;
}

static void check_table(const struct fr_cfi_table *t)
{
	FUZZ_CHECK(t->nrows >= 1 && t->nrows <= FR_CFI_MAX_ROWS, "%u rows", t->nrows);
	FUZZ_CHECK(t->nloads >= 1 && t->nloads <= FR_CFI_MAX_LOADS, "%u loads", t->nloads);
	FUZZ_CHECK(t->build_id_len <= sizeof(t->build_id), "build id of %u", t->build_id_len);
	for (uint32_t i = 0; i < t->nrows; i++) {
		FUZZ_CHECK(t->rows[i].kind <= FR_CFA_END && t->rows[i].fp_rule <= FR_FP_UNDEF,
			   "row %u: kind %u rule %u", i, t->rows[i].kind, t->rows[i].fp_rule);
		FUZZ_CHECK(i == 0 || t->rows[i - 1].pc < t->rows[i].pc, "row %u: pc 0x%x", i,
			   t->rows[i].pc);
		FUZZ_CHECK(t->base + t->rows[i].pc < t->limit, "row %u beyond the limit", i);
	}
}

static void check_lookups(const struct fr_cfi_table *t, uint64_t addr, const uint8_t *stack,
			  size_t size)
{
	uint64_t ips[MAX_FRAMES];

	for (uint64_t a = addr; a < addr + 64; a++) {
		const struct fr_cfi_row *r = fr_cfi_lookup(t, a);

		FUZZ_CHECK(!r || (a >= t->base && t->base + r->pc <= a && r->kind != FR_CFA_UNDEF),
			   "lookup 0x%llx", (unsigned long long)a);
	}
	for (unsigned i = 0; i < 4; i++) {
		/* The registers from the stack's first words, the rows' own
		 * addresses as instruction pointers. */
		struct fr_unwind_regs regs = {.ip = i ? t->base + t->rows[(addr + i) % t->nrows].pc
						      : addr,
					      .sp = 0x7ff000000000ull,
					      .bp = 0x7ff000000000ull + (i * 8) % (size | 1)};
		struct fr_unwind_stack st = {.sp = regs.sp, .data = stack, .size = size};
		unsigned n = 0;
		enum fr_unwind_end end =
			fr_unwind(&regs, &st, find_all, (void *)(uintptr_t)t, ips, MAX_FRAMES, &n);

		FUZZ_CHECK(n <= MAX_FRAMES && end < FR_UNWIND_END_COUNT,
			   "unwind: %u frames, end %d", n, (int)end);
		FUZZ_CHECK(n >= 1 || end == FR_UNWIND_MAX_DEPTH, "unwind: no frame");
	}
}

/* The answer of a build of `copy`: an error it names, or a table that
 * keeps its promises (freed here). */
static void check_built(const char *what, int err, struct fr_cfi_table *t, const uint8_t *copy,
			size_t size, uint64_t addr)
{
	FUZZ_CHECK((err == 0) == (t != NULL), "%s: %d with%s a table", what, err, t ? "" : "out");
	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -ENOEXEC || err == -EBADMSG ||
			   err == -EFBIG || err == -ENOMEM,
		   "%s: %d", what, err);
	if (t) {
		check_table(t);
		check_lookups(t, addr, copy, size < 8192 ? size : 8192);
	}
	fr_cfi_free(t);
}

/* Builds `copy` with ranges made from its bytes; checks it as above. */
static void fuzz_merged(const uint8_t *copy, size_t size, uint64_t addr)
{
	struct fr_cfi_sp_range v[16];
	struct fr_cfi_table *t = NULL;
	int err;

	for (size_t i = 0; i < 16; i++) {
		uint8_t b = size ? copy[i % size] : 0, c = size ? copy[(i + 16) % size] : 0;

		v[i].start = addr - 128 + 16 * i - (b & 7);
		v[i].end = v[i].start + (b >> 3);
		v[i].sp = (int8_t)c * 4;
	}
	err = fr_cfi_build_merged(copy, size, v, 16, &t);
	check_built("merged", err, t, copy, size, addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_cfi_table *t = NULL;
	uint64_t addr;
	void *copy;
	int err;

	if (size < 8)
		return 0;
	addr = fr_get_le64(data);
	copy = malloc(size - 8 ? size - 8 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 8, size - 8);
	err = fr_cfi_build(copy, size - 8, &t);
	check_built("build", err, t, copy, size - 8, addr);
	fuzz_merged(copy, size - 8, addr);
	free(copy);
	return 0;
}
