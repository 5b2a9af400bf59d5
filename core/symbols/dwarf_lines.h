/* Source lines and inline frames of an ELF file's DWARF (.debug_line,
 * .debug_info): for an address, the innermost-first chain of (function,
 * file, line). The only part of flightrec that talks to libdw.
 *
 * It reads an ELF image already in private memory (never a path, never a
 * mapping of a file others control); what it returns points into that
 * memory and lives as long as the struct fr_dwarf_lines. Lookups are
 * serialized by a lock of their own, so one object may be shared by
 * threads (the parsed images of core/symbols/symbols.c are).
 */
#ifndef FR_CORE_DWARF_LINES_H
#define FR_CORE_DWARF_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Files larger than this are not read for lines: their functions keep
 * their names, without file and line. The whole file is copied into
 * memory for the image that names it (kept between profiles within the
 * symbolizer's bound, core/symbols/symbols.h), so this bounds what one file
 * costs in memory and read time, and keeps the read well inside the
 * file's 2 s deadline. */
#define FR_DWARF_MAX_SIZE (64ULL << 20)

/* Frames of one address at most (inline depth + 1); deeper chains keep
 * their innermost frames and the real function. */
#define FR_DWARF_MAX_FRAMES 16

struct fr_dwarf_lines;
struct Elf; /* libelf's Elf */

/* One frame: `function` NULL when DWARF does not name it (the caller's
 * symbol name serves), `file` NULL and `line` 0 when unknown. */
struct fr_dwarf_frame {
	const char *function;
	const char *file;
	uint32_t line;
};

/* Reads the DWARF of the ELF file of `size` bytes open on `fd` (the caller
 * opened it safely, read it as `elf` with libelf, and closes both): when
 * `elf` has a .debug_info and a .debug_line with contents and the file is
 * under FR_DWARF_MAX_SIZE, the whole file is read with pread into private
 * memory and kept. Returns the object, or NULL when there is no DWARF to
 * read, the file is too large or broken, or memory ran out (the caller
 * then names functions without lines). */
struct fr_dwarf_lines *fr_dwarf_lines_read(struct Elf *elf, int fd, uint64_t size);

/* Whether fr_dwarf_lines_read() would read the file of `size` bytes that
 * `elf` is: it has a .debug_info and a .debug_line with contents and is
 * under FR_DWARF_MAX_SIZE. */
bool fr_dwarf_lines_wanted(struct Elf *elf, uint64_t size);

/* The same on an ELF image in memory: takes ownership of the malloc'd
 * `data` of `size` bytes (freed on every path). For tests and fuzzing. */
struct fr_dwarf_lines *fr_dwarf_lines_new(void *data, size_t size);

/* The lines of a Go binary without DWARF, answered from its function
 * table (core/symbols/gopclntab.h), which the caller keeps until the
 * object is freed. NULL for NULL or when memory ran out. */
struct fr_gopclntab;
struct fr_dwarf_lines *fr_dwarf_lines_from_go(const struct fr_gopclntab *g);

/* Gives the DWARF lines `d` a Go function table (kept by the caller until
 * `d` is freed) that answers for the addresses its DWARF does not
 * describe: libdw finds no unit of Go's DWARF, which has no
 * .debug_aranges. Accepts NULL. */
void fr_dwarf_lines_set_go(struct fr_dwarf_lines *d, const struct fr_gopclntab *g);

/* What the object holds in memory, at most: the file's copy, the
 * sections libdw decompressed, the lookup cache at its largest, and an
 * estimate of libdw's parsed units and line tables (grown as addresses
 * are looked up), from the sizes of the sections they are parsed from.
 * 0 for NULL. */
size_t fr_dwarf_lines_bytes(const struct fr_dwarf_lines *d);

/* Frees the object, its memory and the image; accepts NULL. */
void fr_dwarf_lines_free(struct fr_dwarf_lines *d);

/* The frames at link-time address `vaddr`, innermost first, into `out`
 * (capacity `cap` >= 1): inlined functions first, the function they were
 * inlined into last. Returns how many (>= 1), or -ENOENT when DWARF does
 * not describe the address. */
int fr_dwarf_lines_lookup(struct fr_dwarf_lines *d, uint64_t vaddr, struct fr_dwarf_frame *out,
			  size_t cap);

#endif
