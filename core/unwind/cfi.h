/* A binary's call frame information (.eh_frame, found through
 * .eh_frame_hdr, else .debug_frame) compiled once into a compact sorted
 * table, so that unwinding a sample is table look-ups and loads from the
 * copied stack, with no DWARF interpreted on the hot path.
 *
 * Each row covers link-time addresses [pc, next row's pc) and says, for
 * x86-64, where the canonical frame address is (rsp + off, rbp + off, the
 * PLT's well-known expression, or a signal frame's saved context), and
 * where the caller's rbp was saved. The return address is always at
 * CFA - 8 on x86-64; a row whose CFI says otherwise, or uses an expression
 * the table cannot express, is FR_CFA_UNDEF: unwinding stops there rather
 * than guess.
 *
 * The CFI is read with libdw (dwarf_cfi_addrframe and friends) from an
 * ELF image in private memory: the caller reads the file safely (through
 * the mapped inode, size-limited, off the sampling thread) and hands the
 * bytes over. Part of core/unwind, which uses only core/util.
 */
#ifndef FR_CORE_UNWIND_CFI_H
#define FR_CORE_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

/* How the canonical frame address of a row is found. */
enum fr_cfa_kind {
	FR_CFA_UNDEF = 0, /* no rule the table can express: stop */
	FR_CFA_SP,	  /* CFA = rsp + cfa_off */
	FR_CFA_FP,	  /* CFA = rbp + cfa_off */
	FR_CFA_PLT,	  /* the PLT's expression: rsp + cfa_off, + 8 when
			   * (rip & 15) >= fp_off (11 for the lazy PLT: from
			   * there its stub has pushed the relocation index) */
	FR_CFA_SIGNAL,	  /* a signal frame (__restore_rt): the interrupted
			   * rsp, rip and rbp are loaded from rsp + cfa_off,
			   * rsp + cfa_off + 8 and rsp + fp_off (struct
			   * sigcontext keeps rip right after rsp; a signal
			   * frame whose CFI says otherwise is FR_CFA_UNDEF) */
	FR_CFA_END,	  /* the outermost frame: return address undefined */
};

/* What happened to the caller's rbp in a row (FR_CFA_SP, FR_CFA_FP). */
enum fr_fp_rule {
	FR_FP_SAME = 0, /* unchanged: the caller's rbp is the current rbp */
	FR_FP_SAVED,	/* saved at CFA + fp_off */
	FR_FP_UNDEF,	/* not recoverable: an rbp-based CFA above stops */
};

/* One row; 12 bytes. */
struct fr_cfi_row {
	uint32_t pc;	 /* link-time address - table->base */
	int32_t cfa_off; /* see enum fr_cfa_kind */
	int16_t fp_off;	 /* FR_FP_SAVED: offset from the CFA; FR_CFA_SIGNAL:
			  * offset of the saved rbp from rsp; FR_CFA_PLT:
			  * the (rip & 15) from which 8 is added */
	uint8_t kind;	 /* enum fr_cfa_kind */
	uint8_t fp_rule; /* enum fr_fp_rule; FR_CFA_SIGNAL: unused */
};

/* An executable PT_LOAD segment, to turn file offsets into link-time
 * addresses. */
struct fr_cfi_load {
	uint64_t offset, vaddr, filesz;
};

#define FR_CFI_MAX_LOADS 8

struct fr_cfi_table {
	uint64_t base;	/* lowest link-time address a row may cover */
	uint64_t limit; /* rows cover [base, limit) at most */
	uint32_t nrows; /* sorted by pc, unique pcs */
	uint32_t nloads;
	struct fr_cfi_load loads[FR_CFI_MAX_LOADS];
	uint8_t build_id[64];
	uint8_t build_id_len;	  /* 0: the file has none */
	uint8_t from_debug_frame; /* rows came from .debug_frame */
	struct fr_cfi_row rows[];
};

/* Compiles the CFI of the ELF image of `size` bytes at `elf` (private
 * memory, not a mapping of a file someone else may truncate). x86-64 ELF
 * files only. Returns 0 and a table (free with fr_cfi_free()) in *out;
 * -ENOENT when the file has no CFI (*out is NULL), -ENOEXEC for a file
 * that is no x86-64 ELF file, -EBADMSG for corrupt CFI, -EFBIG when the
 * table would exceed FR_CFI_MAX_ROWS rows, -ENOMEM. Never crashes or
 * loops on hostile input (a fuzz target holds it to that). */
#define FR_CFI_MAX_ROWS (16u << 20)
int fr_cfi_build(const void *elf, size_t size, struct fr_cfi_table **out);

/* A stack pointer offset over link-time addresses [start, end): how far
 * below the CFA - 8 rsp is there. */
struct fr_cfi_sp_range {
	uint64_t start, end;
	int32_t sp;
};

/* A table for an x86-64 ELF file without CFI whose functions' stack
 * pointer offsets are known (a Go binary's, from its .gopclntab, which
 * core/symbols reads), from `n` ranges sorted by address (overlapping or
 * unsorted ones are skipped): CFA = rsp + sp + 8, the caller's rbp saved
 * at CFA - 16 once sp > 0 (Go's frames) and unchanged while sp is 0 (at
 * entry, in frameless leaves); an offset that is negative, not a
 * multiple of 8 or over 1 GiB gives FR_CFA_UNDEF. Loads and build id
 * come from the image, as with fr_cfi_build(). Returns 0 and the table,
 * -ENOENT for no ranges, -ENOEXEC, -EFBIG, -ENOMEM. */
int fr_cfi_build_sp(const void *image, size_t size, const struct fr_cfi_sp_range *v, size_t n,
		    struct fr_cfi_table **out);

/* The table of an x86-64 ELF file with both CFI and stack pointer
 * offsets (a Go program linked by the system linker, with cgo: CFI for
 * its C code and the runtime's cgo glue, none for its Go functions): the
 * CFI's rows where an FDE covers an address, the offsets' rows (as
 * fr_cfi_build_sp() makes them, clipped to the gaps) where none does; a
 * file without CFI gets the offsets' rows alone. Returns as
 * fr_cfi_build(). */
int fr_cfi_build_merged(const void *image, size_t size, const struct fr_cfi_sp_range *v, size_t n,
			struct fr_cfi_table **out);

void fr_cfi_free(struct fr_cfi_table *t);

/* Bytes the table occupies in memory. */
size_t fr_cfi_size(const struct fr_cfi_table *t);

/* The row covering link-time address `vaddr`, or NULL when none does
 * (outside [base, limit), or in a gap between FDEs: such a gap has an
 * FR_CFA_UNDEF row, so that a look-up never lands on the previous
 * function's row). An FR_CFA_UNDEF row inside an FDE (a rule the table
 * cannot express) gives NULL too: either way there is nothing to unwind
 * with. Binary search, no allocation. */
const struct fr_cfi_row *fr_cfi_lookup(const struct fr_cfi_table *t, uint64_t vaddr);

/* File offset -> link-time address through the executable loads.
 * Returns 0 or -ENOENT. */
int fr_cfi_translate(const struct fr_cfi_table *t, uint64_t off, uint64_t *vaddr);

#endif
