/* What reading a Go program's goroutines from its memory needs from its
 * executable (recorder/tracking/goroutines.h): the Go release that built
 * it, where the runtime keeps its list of goroutines (runtime.allgs),
 * the names of its wait reasons (runtime.waitReasonStrings), the layout
 * of a goroutine (runtime.g) and the function table (.gopclntab) its
 * stacks are unwound and named with.
 *
 * The executable is another user's file, open at a descriptor: read with
 * libelf (pread, never a mapping) and bounded preads, every offset and
 * length checked against the file. A stripped program has neither
 * .symtab nor DWARF: the list is then found from the code of
 * runtime.allgadd (named by .gopclntab), whose instructions address it,
 * as a few candidates the reader checks against the process's memory;
 * the wait reasons from their table in .data, found by its first names;
 * the layout from a table per release.
 */
#ifndef FR_CORE_GO_EXE_H
#define FR_CORE_GO_EXE_H

#include <stddef.h>
#include <stdint.h>

struct fr_gopclntab;

/* The Go version in a .go.buildinfo section's bytes (sec, len), into out
 * (NUL-terminated, at most outlen - 1 bytes; "go1.N..." or "devel ...").
 * Go 1.18 on keeps it in the section ("\xff Go buildinf:", pointer size,
 * flags with bit 2, then a varint-length string); before, the section
 * holds a pointer to a string header, which `vread` reads from the
 * program's image (arg: its argument; returns 0 or -errno; may be NULL:
 * then such a section gives -ENOENT). Returns 0, -ENOENT (no version) or
 * -EPROTO (not a Go version string). */
int fr_go_buildinfo_version(const uint8_t *sec, size_t len,
			    int (*vread)(void *arg, uint64_t addr, void *buf, size_t n), void *arg,
			    char *out, size_t outlen);

/* The minor release of a "go1.N[.P][suffix]" version: N, or -EPROTO. */
int fr_go_minor(const char *version);

/* Where a goroutine's fields are, in bytes from the start of its runtime.g
 * (linux/amd64); -1: the release has no such field. */
struct fr_go_glayout {
	int32_t goid, status, waitsince, waitreason, gopc, startpc, parent;
	int32_t sched_sp, sched_pc, sched_bp, syscallsp, syscallpc, stack_lo, stack_hi;
	int32_t labels, m, m_procid, tracking_seq;
	uint8_t labels_kind; /* 1: a map (up to 1.23), 2: a slice of pairs */
	uint32_t size;	     /* bytes of a g that hold them all */
};

/* The layout of Go 1.minor from the table (releases checked against
 * their DWARF: see tests/integration/go_goroutines.sh). Returns 0 or
 * -ENOTSUP. */
int fr_go_glayout_table(uint32_t minor, struct fr_go_glayout *out);

/* The layout from the DWARF of the executable open at `fd` (read whole,
 * up to 64 MiB), every field inside a g's first 4 KiB. Returns 0 or
 * -ENOTSUP (no DWARF, too large, a field missing). */
int fr_go_glayout_dwarf(int fd, struct fr_go_glayout *out);

/* Most candidates for runtime.allgs a stripped program gives. */
#define FR_GO_ALLGS_CANDS 48
/* Most wait reasons read. */
#define FR_GO_WAIT_REASONS 96

struct fr_go_exe {
	char version[32];  /* "go1.19.8" */
	int minor;	   /* 19; 0 for a "devel" toolchain */
	int pie;	   /* position-independent: addresses move by the load bias */
	uint64_t lo_vaddr; /* the first loaded segment's address, page-aligned */
	/* runtime.allgs (a []*g), by its symbol; or, stripped, candidates. */
	uint64_t allgs;
	uint64_t cand[FR_GO_ALLGS_CANDS];
	unsigned ncand;
	/* Wait reasons by number; NULL entries unknown. */
	char *wait_reason[FR_GO_WAIT_REASONS];
	unsigned nwait;
	struct fr_go_glayout layout;
	int layout_from_dwarf;
	struct fr_gopclntab *tab; /* functions, lines, inlined calls, pcsp */
};

/* Reads what is above from the executable open at `fd` (a regular file,
 * at most FR_ELF_MAX_SIZE bytes). Returns 0 with *out filled (free it
 * with fr_go_exe_fini()), -ENOENT (not a Go program), -ENOEXEC (not an
 * x86-64 ELF file, or no function table), -ENOTSUP (a release whose
 * layout is known neither from the table nor from the program's DWARF:
 * out->version says which), -EADDRNOTAVAIL (the list of goroutines not
 * found), -ENOMEM or a read's -errno. */
int fr_go_exe_read(int fd, struct fr_go_exe *out);

/* Frees what *x holds; accepts a zeroed one. */
void fr_go_exe_fini(struct fr_go_exe *x);

/* Addresses a function's code takes RIP-relative operands of, found
 * without decoding instructions: every 4 bytes read as the displacement
 * of an instruction ending there, kept when the address falls in [lo,
 * hi) and is 8-aligned, with the two words before it (an operand may
 * address a slice's length or capacity). `code` holds `len` bytes at
 * `addr`. Appends to cand (up to cap, no repeats); returns how many it
 * holds. Exposed for its fuzz test. */
unsigned fr_go_rip_targets(const uint8_t *code, size_t len, uint64_t addr, uint64_t lo, uint64_t hi,
			   uint64_t *cand, unsigned n, unsigned cap);

#endif
