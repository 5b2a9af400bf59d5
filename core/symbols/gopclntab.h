/* Go's own function table, .gopclntab: the functions, source lines and
 * inlined calls of a Go binary, kept by the Go linker even when the binary
 * is stripped of .symtab and DWARF (`go build -ldflags='-s -w'`, how most
 * Go services ship). Go 1.16 onward (header magics 0xfffffffa: 1.16 and
 * 1.17; 0xfffffff0: 1.18 and 1.19; 0xfffffff1: 1.20 and later), 64- and
 * 32-bit, little-endian.
 *
 * The table is read from private memory handed over by the caller (never
 * a mapping of a file others control), and every offset, count and length
 * in it is checked against the bytes held: a forged table gives -ENOENT or
 * fewer frames, never a read outside them, and every loop is bounded by
 * the size of the table it walks. Lookups only read, so one object may be
 * shared by threads.
 */
#ifndef FR_CORE_GOPCLNTAB_H
#define FR_CORE_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/dwarf_lines.h"

/* Tables larger than this are not read (the largest real ones, of
 * services of a few hundred MiB, are a few tens of MiB). */
#define FR_GOPCLNTAB_MAX (128u << 20)

struct fr_gopclntab;

/* The layout of a table, from its header alone: 116 (Go 1.16, 1.17), 118
 * (1.18, 1.19) or 120 (1.20 and later), and the size of a pointer in
 * *ptr_size (4 or 8). Returns the layout or -ENOEXEC. */
int fr_gopclntab_layout(const void *tab, size_t len, unsigned *ptr_size);

/* The address of the functions' data (moduledata.gofunc, go:func.*) that
 * the inline trees of a Go 1.18+ binary are offsets from, read from the
 * runtime's first module record (runtime.firstmoduledata), which is
 * looked for in `data` (`len` bytes: the binary's .noptrdata, or
 * .go.module). `head` holds the first `head_len` bytes of the table (its
 * header: FR_GOPCLNTAB_HEAD_MAX are enough) of `tab_len` bytes. The
 * record is the one whose first word is `tab_addr`, the address of the
 * table, and whose other words agree with the table and the sections
 * given: its name, unit and file tables' addresses, its text range inside
 * [text, etext), and a gofunc inside [rodata, erodata). *text_start is
 * set to the module's text address (the table's own is 0 from Go 1.26).
 * Returns 0, or -ENOENT. */
#define FR_GOPCLNTAB_HEAD_MAX 128
struct fr_go_sections {
	uint64_t tab_addr;
	uint64_t text, etext;
	uint64_t rodata, erodata;
};
int fr_gopclntab_gofunc(const void *head, size_t head_len, size_t tab_len, const void *data,
			size_t len, const struct fr_go_sections *secs, uint64_t *gofunc,
			uint64_t *text_start);

/* Parses the table `tab` of `len` bytes (malloc'd; taken, freed on every
 * path). `fdata` (malloc'd or NULL; taken too) holds `flen` bytes at
 * link-time address `faddr` where the inline trees lie: for Go 1.18+ from
 * moduledata.gofunc on (fr_gopclntab_gofunc()), for 1.16 and 1.17 the
 * section their absolute pointers lead into (.rodata); NULL: functions
 * and lines without inlined frames. `text_start` (0: the header's) is the
 * base of 1.18+ entry offsets. Returns the object, or NULL with *err
 * (-ENOEXEC for no table this reads, -EBADMSG for a broken one, -ENOMEM). */
struct fr_gopclntab *fr_gopclntab_new(void *tab, size_t len, void *fdata, size_t flen,
				      uint64_t faddr, uint64_t text_start, int *err);

/* Frees the object and the bytes it was given; accepts NULL. */
void fr_gopclntab_free(struct fr_gopclntab *g);

/* What the object holds in memory. 0 for NULL. */
size_t fr_gopclntab_bytes(const struct fr_gopclntab *g);

/* The function covering link-time address `pc`: 0 with its name (owned by
 * the object) and, when non-NULL, its entry address, or -ENOENT. */
int fr_gopclntab_func(const struct fr_gopclntab *g, uint64_t pc, const char **name,
		      uint64_t *entry);

/* The function named `name` (its first in the table): 0 with its
 * [*entry, *end), or -ENOENT. Walks the whole table. */
int fr_gopclntab_find(const struct fr_gopclntab *g, const char *name, uint64_t *entry,
		      uint64_t *end);

/* How far below its value at the function's entry the stack pointer is
 * at link-time address `pc` (the pcsp table): 0 with *sp (>= 0), or
 * -ENOENT. The return address of a frame stopped at pc is at its stack
 * pointer + *sp. */
int fr_gopclntab_sp_at(const struct fr_gopclntab *g, uint64_t pc, int32_t *sp);

/* The frames at link-time address `pc`, innermost first, into `out`
 * (capacity `cap` >= 1), as Go's own tracebacks give them: the functions
 * inlined there, then the function they were inlined into, each with its
 * file and line (the line of an inlined call's caller is the one of the
 * call). Chains deeper than `cap` keep their innermost frames and the
 * real function. Returns how many (>= 1), or -ENOENT. */
int fr_gopclntab_lookup(const struct fr_gopclntab *g, uint64_t pc, struct fr_dwarf_frame *out,
			size_t cap);

/* Calls cb, function after function in the table's order, for each run
 * of addresses [start, end) over which the function's stack pointer is
 * `sp` bytes below where it was at its entry (the pcsp table: what
 * unwinding a binary without CFI needs). Runs lie within their function;
 * cb may stop the walk with a negative value, which is returned. The walk
 * reads each byte of the pcsp tables once at most per function. Returns
 * 0 or cb's error. */
int fr_gopclntab_sp_runs(const struct fr_gopclntab *g,
			 int (*cb)(void *arg, uint64_t start, uint64_t end, int32_t sp), void *arg);

#endif
