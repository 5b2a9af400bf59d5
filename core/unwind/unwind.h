/* Unwinding a sample's user stack with compiled CFI tables
 * (core/unwind/cfi.h): from the registers and the copy of the stack the
 * kernel took at the sample (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER)
 * to the return addresses, by table look-ups and loads from the copy. No
 * allocation, no system call, no lock: runs on the ingest thread for
 * every sample.
 *
 * Where the CFI cannot be trusted or is missing the unwinder degrades
 * rather than invents: code without CFI (JIT code in anonymous memory,
 * code between a file's FDEs such as V8's builtins, a file without CFI)
 * is stepped with its frame pointer when rbp points into the copied stack
 * and above the current frame, and the CFI takes over again at the first
 * return address it covers; rbp stays current through the CFI frames, so
 * a JIT frame called from code that keeps no frame pointer is found too.
 * A saved rbp of 0 that such a step loads is the outermost frame (the
 * stack is whole). Where
 * rbp leads nowhere, a stub that reserved one slot below its return
 * address (CPython 3.12's perf trampolines) is stepped when the return
 * address at rsp + 8 is in code with CFI; anything else stops the unwind
 * and says why, so the profile can count the stack as truncated. x86-64
 * only.
 */
#ifndef FR_CORE_UNWIND_UNWIND_H
#define FR_CORE_UNWIND_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "core/unwind/cfi.h"

/* The user registers at the sample. */
struct fr_unwind_regs {
	uint64_t ip, sp, bp;
};

/* The copy of the user stack: `size` bytes that were at [sp, sp + size). */
struct fr_unwind_stack {
	uint64_t sp;
	const uint8_t *data;
	size_t size;
};

/* Why a look-up found no table. */
enum fr_unwind_miss {
	FR_UNWIND_MISS_NOMAP = 1, /* no executable mapping holds the address */
	FR_UNWIND_MISS_NOCFI,	  /* a mapping without CFI (JIT, a file without
				   * .eh_frame, a file that could not be read) */
	FR_UNWIND_MISS_PENDING,	  /* its table is still being built */
	FR_UNWIND_MISS_VDSO,	  /* [vdso]: no file to read */
};

/* Finds the table for absolute address `addr` of the sampled process: the
 * table and the address as a link-time address of its file in *vaddr, or
 * NULL and the reason in *miss. */
typedef const struct fr_cfi_table *(*fr_unwind_find_fn)(void *arg, uint64_t addr, uint64_t *vaddr,
							int *miss);

/* How an unwind ended. */
enum fr_unwind_end {
	FR_UNWIND_DONE = 0,   /* reached the outermost frame (return address
			       * undefined or 0, or a saved rbp of 0 in the
			       * frame-pointer chain): the stack is whole */
	FR_UNWIND_STACK_COPY, /* a load fell outside the stack copy: the copy
			       * was too small for this stack */
	FR_UNWIND_NO_CFI,     /* a frame in code without CFI, where the frame
			       * pointer could not be followed */
	FR_UNWIND_PENDING,    /* a frame whose table is not built yet */
	FR_UNWIND_BAD,	      /* the CFI led somewhere impossible (no progress,
			       * an address in no mapping, an undefined rule) */
	FR_UNWIND_MAX_DEPTH,  /* `max` frames were filled */
	FR_UNWIND_END_COUNT
};

/* Unwinds into ips[0..*n): ips[0] is regs->ip, then each caller's return
 * address (as the kernel's callchain gives them: the address after the
 * call, not the call). At most `max` frames. Returns how it ended. */
enum fr_unwind_end fr_unwind(const struct fr_unwind_regs *regs, const struct fr_unwind_stack *stack,
			     fr_unwind_find_fn find, void *arg, uint64_t *ips, unsigned max,
			     unsigned *n);

/* A name for an end, for logs and status: "done", "stack copy", ... */
const char *fr_unwind_end_name(enum fr_unwind_end end);

#endif
