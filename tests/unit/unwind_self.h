/* This process as the unwinder sees a sampled one, for the unwinding tests
 * and benchmark: a CFI table for every executable file mapping (each file
 * read whole into memory), a look-up from an address to its table, and a
 * capture of the registers and the stack at a point of the caller, with
 * glibc's backtrace() (libgcc's unwinder) taken there to compare with.
 */
#ifndef FR_TESTS_UNWIND_SELF_H
#define FR_TESTS_UNWIND_SELF_H

#include <stddef.h>
#include <stdint.h>

#include "core/unwind/unwind.h"

#define SELF_MAX_MAPS 64
#define SELF_STACK_COPY 16384
#define SELF_MAX_BT 128

struct self_map {
	uint64_t start, end, offset;
	struct fr_cfi_table *table; /* NULL: see miss */
	int miss;		    /* enum fr_unwind_miss */
	int err;		    /* fr_cfi_build()'s result */
	char path[256];
};

struct self_maps {
	struct self_map map[SELF_MAX_MAPS];
	int n;
	uint64_t stack_end; /* the end of [stack] */
};

/* Reads file `path` whole into *data (malloc'd). Returns 0 or -errno. */
int self_read_file(const char *path, void **data, size_t *size);

/* Reads /proc/self/maps and builds the tables. Returns 0 or -errno. */
int self_maps_load(struct self_maps *m);
void self_maps_free(struct self_maps *m);

/* A fr_unwind_find_fn over a struct self_maps. */
const struct fr_cfi_table *self_find(void *arg, uint64_t addr, uint64_t *vaddr, int *miss);

/* The mapping holding `addr`, or NULL. */
const struct self_map *self_map_of(const struct self_maps *m, uint64_t addr);

struct self_snap {
	struct fr_unwind_regs regs;
	struct fr_unwind_stack stack;
	uint8_t data[SELF_STACK_COPY];
	void *bt[SELF_MAX_BT]; /* bt[0] is in self_capture() */
	int nbt;
};

/* The end of the stack, for self_capture(): the copy stops there. */
extern uint64_t self_stack_end;

/* Captures the registers at a point inside itself, up to `copy` bytes of
 * the stack above them, then backtrace(). Built without frame pointers
 * and never inlined, like its callers in the tests. */
void self_capture(struct self_snap *s, size_t copy);

#endif
