/* ELF files other users may control, read safely: their GNU build id, and
 * their function symbols and load segments as an image that answers "which
 * function holds this address". The only part of flightrec that talks to
 * libelf; the caching, the deadlines and the choice of file are the
 * symbolizer's (core/symbols/symbols.h).
 */
#ifndef FR_CORE_ELF_IMAGE_H
#define FR_CORE_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FR_ELF_BUILD_ID_MAX 64

/* ELF files larger than this are not read (a sparse file of a terabyte
 * costs its owner nothing and the reader everything). */
#define FR_ELF_MAX_SIZE (1ULL << 30)

/* Reads the GNU build id note of the ELF file open on `fd` into `out`
 * (capacity `cap`), with pread (never a mapping of the file, which its
 * owner could truncate under the reader). Returns its length, -ENOENT when
 * the file has none, -ENOSPC when `cap` is too small, -ENOEXEC for
 * something that is not a regular ELF file, or -errno. */
int fr_elf_build_id_fd(int fd, uint8_t *out, size_t cap);

/* The same for a trusted path (tests, the CLI): follows symbolic links,
 * but never blocks opening a FIFO. */
int fr_elf_build_id(const char *path, uint8_t *out, size_t cap);

/* A byte range [off, off + len) of a file. */
struct fr_elf_range {
	uint64_t off, len;
};

/* The byte ranges of the ELF file of `size` bytes open on `fd` that
 * naming its addresses reads: all of it but the contents of its code and
 * data sections (.text, .rodata, .data and the like), which no symbol
 * table, PLT stub, note or DWARF look-up needs. Headers, notes, symbol and
 * string tables, relocations, the PLT, unwind and debug sections stay,
 * and a Go binary's function table with the end of .rodata its inline
 * trees lie in (core/symbols/elf_go.c), so a copy holding only these ranges (zeros elsewhere, at the same
 * offsets) names every address as the file does. Sorted, not
 * overlapping. Returns 0 with *out (free() it) and *n, -ENOEXEC for a file
 * that is not ELF, -EBADMSG for a corrupt one, or -ENOMEM. */
int fr_elf_symbol_ranges(int fd, uint64_t size, struct fr_elf_range **out, size_t *n);

/* The Go function table (core/symbols/gopclntab.h) of the ELF image of
 * `size` bytes in private memory `image` (kept by the caller; the table
 * copies what it needs), without its inline trees: the functions' stack
 * pointer offsets, for unwinding a Go binary that has no CFI. NULL when
 * it has none (free with fr_gopclntab_free()). */
struct fr_gopclntab;
struct fr_gopclntab *fr_elf_go_table(const void *image, size_t size);

/* Formats a build id as lowercase hex into buf (2*len+1 bytes). */
char *fr_build_id_hex(const uint8_t *id, size_t len, char *buf);

struct fr_elf_sym;
struct fr_elf_load;
struct fr_elf_arena;
struct fr_dwarf_lines;

/* A parsed file: zeroed before fr_elf_image_load(), fr_elf_image_fini()
 * after. For fr_elf_debug_load(), the caller fills build_id, build_id_len
 * and arm, and sets debug_missing. */
struct fr_elf_image {
	uint8_t build_id[FR_ELF_BUILD_ID_MAX];
	size_t build_id_len; /* 0: none */
	uint64_t *addrs;     /* sorted, unique; syms parallel */
	struct fr_elf_sym *syms;
	size_t nsyms;
	struct fr_elf_load *loads;
	size_t nloads;
	struct fr_elf_arena *arenas; /* the names, newest first */
	bool arm;		     /* Thumb bit in symbol values */
	/* The PLT's sections (.plt, .plt.sec, .plt.got): [plt_start, plt_end),
	 * empty when the file has none or they were not read. */
	uint64_t plt_start, plt_end;
	/* No .symtab or no DWARF, and a build id or .gnu_debuglink to find a
	 * separate debug file by: the symbolizer looks for one in its debug
	 * directories, under a process's root, and where .gnu_debuglink says
	 * (core/symbols/debuglink.h). Cleared in a debug image once found. */
	bool debug_missing;
	/* .gnu_debuglink: the debug file's name ("" for none) and CRC-32. */
	char debuglink[256];
	uint32_t debuglink_crc;
	/* Source lines and inline frames (core/symbols/dwarf_lines.h) of the
	 * file, else of its debug file; NULL: none. */
	struct fr_dwarf_lines *dwarf;
	/* A Go binary's function table (core/symbols/gopclntab.h): it names
	 * the functions of a file without .symtab (go_names), and gives the
	 * lines of one without DWARF, or that its DWARF does not describe
	 * (through `dwarf`). NULL: none. */
	struct fr_gopclntab *go;
	bool go_names;
};

/* Fills `img` from the ELF file of `size` bytes open on `fd` (the caller
 * opened it safely and closes it): build id, load segments, the function
 * symbols of .symtab and .dynsym, a symbol NAME@plt for each PLT stub
 * (x86-64) that jumps to NAME, its DWARF lines (a Go binary's function
 * table for what .symtab or DWARF lack), and debug_missing when a
 * separate debug file would name more (no file is opened here). Returns
 * 0, or the error to keep for the file (-ENOEXEC not ELF, -EBADMSG
 * corrupt), or -ENOMEM. */
int fr_elf_image_load(struct fr_elf_image *img, int fd, uint64_t size);

/* Fills `dbg` with the .symtab (and DWARF) of the debug file for
 * dbg->build_id, `dir`/.build-id/xx/yyyy.debug ("/usr/lib/debug" and the
 * like) under `root` (a process's root: "/proc/PID/root"; NULL: "/"),
 * opened with fr_open_untrusted(); clears dbg->debug_missing when there
 * is one. Returns 0 (also when there is none) or -ENOMEM. */
int fr_elf_debug_load(struct fr_elf_image *dbg, const char *root, const char *dir);

/* Fills `dbg` with the .symtab of the debug file of `size` bytes open on
 * `fd` (the caller opened it safely and closes it), unless that file has a
 * build id other than dbg->build_id (-ESTALE); clears dbg->debug_missing.
 * Returns 0, -ENOEXEC or -EBADMSG for a file that is no ELF file, or
 * -ENOMEM. */
int fr_elf_debug_load_fd(struct fr_elf_image *dbg, int fd, uint64_t size);

/* The same on the file's `size` bytes in private memory `data`
 * (malloc'd; taken, and kept for the debug file's DWARF or freed): for a
 * file its reader had to read whole anyway (a CRC-32 over it), so it is
 * read once. */
int fr_elf_debug_load_mem(struct fr_elf_image *dbg, void *data, uint64_t size);

/* Frees what an image holds (names included); the image is zeroed. */
void fr_elf_image_fini(struct fr_elf_image *img);

/* The bytes the image holds in memory (fr_dwarf_lines_bytes() of its
 * DWARF included), for the bound on the images kept. */
size_t fr_elf_image_bytes(const struct fr_elf_image *img);

/* File offset -> link-time virtual address, through the PT_LOAD covering
 * it. Returns 0 or -ENOENT. */
int fr_elf_image_translate(const struct fr_elf_image *img, uint64_t off, uint64_t *vaddr);

/* The function covering link-time address `vaddr`: 0 and its name (owned
 * by the image), or -ENOENT. A symbol with a size covers only its bytes;
 * one without extends to the next symbol, but not into the PLT. */
int fr_elf_image_lookup(const struct fr_elf_image *img, uint64_t vaddr, const char **name);

/* Whether `vaddr` lies in the image's PLT, which only the file itself
 * names (a debug file's copy of it has no contents). */
bool fr_elf_image_in_plt(const struct fr_elf_image *img, uint64_t vaddr);

#endif
