/* What the files reading ELF images share (elf_image.c and elf_plt.c):
 * the candidate symbols an image is built from, and the bounds every read
 * of a file other users control keeps to. */
#ifndef FR_CORE_ELF_INT_H
#define FR_CORE_ELF_INT_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/symbols/elf_image.h"

/* A symbol or string table larger than this is not read: libelf copies a
 * whole section into memory, and overlapping sparse sections of a file
 * under FR_ELF_MAX_SIZE could otherwise cost several times its size. The
 * largest real ones (a browser's .strtab) are a few tens of MiB. */
#define SECTION_MAX (256u << 20)

/* Candidate symbol while an image is being built; names still point into
 * libelf's section data. */
struct cand {
	uint64_t addr;
	uint64_t size;
	const char *name;
	unsigned bind;
};

struct cand_vec {
	struct cand *v;
	size_t n;
	size_t cap;
	char *plt_names; /* the names of the synthesized PLT symbols */
};

/* Whether [off, off + len) lies within a file of `fsize` bytes. */
static inline bool within_file(uint64_t off, uint64_t len, uint64_t fsize)
{
	return off <= fsize && len <= fsize - off;
}

/* Appends a candidate. Returns 0 or -ENOMEM. */
int elf_cand_push(struct cand_vec *cv, const struct cand *c);

/* Appends NAME@plt for every PLT stub of `elf` (x86-64) to `cv`; the names
 * are kept in cv->plt_names until the table is built, and the PLT's extent
 * is noted in `img`. Returns 0 or -ENOMEM. */
int elf_collect_plt(struct fr_elf_image *img, Elf *elf, uint64_t fsize, const GElf_Ehdr *eh,
		    struct cand_vec *cv);

/* An x86-64 ELF file's program headers whose bytes lie in the file, to
 * read its initialized data by link-time address (elf_segs.c). */
#define ELF_SEGS_MAX 256u
struct elf_segs {
	int fd;
	GElf_Phdr ph[ELF_SEGS_MAX];
	size_t nph;
};

/* Checks that `elf` (read from `fd`, of `fsize` bytes) is a 64-bit
 * little-endian x86-64 file, takes its segments into *s and its section
 * names' index into *shstrndx. Returns 0 or -ENOEXEC. */
int elf_segs_read(Elf *elf, int fd, uint64_t fsize, struct elf_segs *s, size_t *shstrndx);

/* Reads n bytes at link-time address addr from a PT_LOAD segment's file
 * bytes. Returns 0, -EFAULT (in none) or -EIO. */
int elf_segs_vread(const struct elf_segs *s, uint64_t addr, void *buf, size_t n);

struct fr_gopclntab;

/* The Go function table of `elf` (core/symbols/gopclntab.h), read from
 * `fd` (a file of `fsize` bytes) with the part of .rodata its inline
 * trees need; NULL when it has none, or it is broken or too large. */
struct fr_gopclntab *elf_go_read(Elf *elf, int fd, uint64_t fsize);

/* The file range of the part of .rodata a Go binary's inline trees lie
 * in (see elf_go.c), into *keep. Returns whether there is one. */
bool elf_go_keep(Elf *elf, int fd, uint64_t fsize, struct fr_elf_range *keep);

#endif
