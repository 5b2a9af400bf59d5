/* Exported data objects of an ELF file, as addresses relative to one of
 * its mappings (core/query/elf_object.h). A user of libelf besides
 * elf_image.c: it needs the dynamic symbol table's objects, which the
 * symbolizer's images leave out (they keep functions). */
#include "core/query/elf_object.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

/* The (vaddr - offset) of the loaded segment that holds file offset
 * `pgoff` (a mapping's, page aligned). */
static int load_delta(Elf *e, uint64_t pgoff, int64_t *delta)
{
	size_t n;

	if (elf_getphdrnum(e, &n) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < n && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if ((ph.p_offset & ~(uint64_t)0xfff) <= pgoff &&
		    pgoff < ph.p_offset + ph.p_filesz) {
			*delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			return 0;
		}
	}
	return -ENOENT;
}

static int find_object(Elf *e, const char *name, uint64_t min_size, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 1; i < n; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
			    sym.st_size < min_size)
				continue;
			s = elf_strptr(e, sh.sh_link, sym.st_name);
			if (s && strcmp(s, name) == 0) {
				*vaddr = sym.st_value;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int fr_elf_object_rel(const void *buf, size_t size, const char *name, uint64_t min_size,
		      uint64_t pgoff, int64_t *rel)
{
	Elf *e;
	uint64_t vaddr = 0;
	int64_t delta = 0;
	int ret;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* libelf reads the image in place; it never writes to it. */
	e = elf_memory((char *)buf, size);
	if (!e)
		return -ENOMEM;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	ret = find_object(e, name, min_size, &vaddr);
	if (ret == 0)
		ret = load_delta(e, pgoff, &delta);
	if (ret == 0)
		*rel = (int64_t)(vaddr - (uint64_t)delta - pgoff);
	elf_end(e);
	return ret;
}
