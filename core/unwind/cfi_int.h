/* What the two halves of the CFI compiler share: cfi_fde.c enumerates a
 * section's FDEs (their address ranges), cfi.c compiles their rows. Part
 * of core/unwind; not for use outside it.
 */
#ifndef FR_CORE_UNWIND_CFI_INT_H
#define FR_CORE_UNWIND_CFI_INT_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/unwind/cfi.h"

/* An FDE's address range, and what a row look-up in it costs. */
struct fde {
	uint64_t start, end;
	uint64_t cost; /* bytes libdw interprets per row looked up */
};

/* A CFI section being enumerated. */
struct cfi_section {
	const unsigned char *ident;
	Elf_Data *data;
	uint64_t addr; /* sh_addr: for pc-relative pointers */
	bool eh;
	/* The last CIE looked up. */
	Dwarf_Off cie_off;
	uint8_t cie_enc;
	uint64_t cie_len;
	bool cie_ok;
};

/* Every FDE of section `s` that starts in an executable load of `t`, cut
 * to that load's end and sorted by start, into *out (malloc'd; NULL when
 * there is none). Stops quietly at a corrupt entry, keeping those before
 * it. Returns how many, or -ENOMEM. */
long fr_cfi_list_fdes(struct cfi_section *s, const struct fr_cfi_table *t, struct fde **out);

#endif
