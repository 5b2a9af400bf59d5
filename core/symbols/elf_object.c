/* Exported data objects of an ELF file, as addresses relative to one of
 * its mappings (core/symbols/elf_object.h). A user of libelf besides
 * elf_image.c: it needs the dynamic symbol table's objects, which the
 * symbolizer's images leave out (they keep functions). */
#include "core/symbols/elf_object.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int find_sym(Elf *e, const char *name, unsigned type, uint64_t min_size, uint64_t *vaddr)
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

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != type ||
			    sym.st_shndx == SHN_UNDEF || sym.st_size < min_size)
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
	ret = find_sym(e, name, STT_OBJECT, min_size, &vaddr);
	if (ret == 0)
		ret = load_delta(e, pgoff, &delta);
	if (ret == 0)
		*rel = (int64_t)(vaddr - (uint64_t)delta - pgoff);
	elf_end(e);
	return ret;
}

/* ---- an executable's thread-local, read from its file with pread ---- */

/* At most this many bytes of program headers, section headers, and of the
 * dynamic symbol table and its strings are read. */
#define TLS_HEADERS_MAX (1u << 20)
#define TLS_DYNSYM_MAX (32u << 20)

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	if (off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOEXEC;
		got += (size_t)n;
	}
	return 0;
}

/* Reads `count` entries of `size` bytes at `off` into a new buffer. */
static void *read_table(int fd, uint64_t off, uint64_t count, uint64_t size, uint64_t max, int *ret)
{
	void *buf;

	if (!count || count > max / size) {
		*ret = -ENOEXEC;
		return NULL;
	}
	buf = malloc(count * size);
	if (!buf) {
		*ret = -ENOMEM;
		return NULL;
	}
	*ret = pread_all(fd, buf, count * size, off);
	if (*ret < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The value of the defined STT_TLS symbol `name` of .dynsym. */
/* The offset of the dynamic relocation of symbol `index` of TLS type
 * (R_X86_64_TPOFF64 or R_X86_64_TLSDESC: *desc) among the sections `sh`,
 * in *r_offset. Returns 0, -ENOENT without one, or -errno. */
static int find_tls_reloc(int fd, const Elf64_Ehdr *eh, const Elf64_Shdr *sh, uint64_t index,
			  uint64_t *r_offset, int *desc)
{
	int ret = 0;

	for (unsigned i = 0; i < eh->e_shnum; i++) {
		Elf64_Rela *rel;
		uint64_t n;

		if (sh[i].sh_type != SHT_RELA || sh[i].sh_entsize != sizeof(Elf64_Rela))
			continue;
		n = sh[i].sh_size / sizeof(Elf64_Rela);
		if (!n)
			continue;
		rel = read_table(fd, sh[i].sh_offset, n, sizeof(*rel), TLS_DYNSYM_MAX, &ret);
		if (!rel)
			return ret;
		for (uint64_t k = 0; k < n; k++) {
			unsigned type = ELF64_R_TYPE(rel[k].r_info);

			if (ELF64_R_SYM(rel[k].r_info) != index ||
			    (type != R_X86_64_TPOFF64 && type != R_X86_64_TLSDESC))
				continue;
			*r_offset = rel[k].r_offset;
			*desc = type == R_X86_64_TLSDESC;
			free(rel);
			return 0;
		}
		free(rel);
	}
	return -ENOENT;
}

static int find_tls_sym(int fd, const Elf64_Ehdr *eh, const char *name, uint64_t min_size,
			uint64_t *value, uint64_t *index, uint64_t *r_offset, int *desc)
{
	Elf64_Shdr *sh = NULL;
	Elf64_Sym *syms = NULL;
	char *str = NULL;
	size_t nlen = strlen(name);
	int ret = -ENOENT;

	if (eh->e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	sh = read_table(fd, eh->e_shoff, eh->e_shnum, sizeof(*sh), TLS_HEADERS_MAX, &ret);
	if (!sh)
		return ret;
	ret = -ENOENT;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *ds = &sh[i], *ss;

		if (ds->sh_type != SHT_DYNSYM || ds->sh_entsize != sizeof(Elf64_Sym) ||
		    ds->sh_link >= eh->e_shnum)
			continue;
		ss = &sh[ds->sh_link];
		syms = read_table(fd, ds->sh_offset, ds->sh_size / sizeof(Elf64_Sym),
				  sizeof(Elf64_Sym), TLS_DYNSYM_MAX, &ret);
		str = syms ? read_table(fd, ss->sh_offset, ss->sh_size, 1, TLS_DYNSYM_MAX, &ret)
			   : NULL;
		if (!syms || !str)
			break;
		ret = -ENOENT;
		for (uint64_t k = 1; k < ds->sh_size / sizeof(Elf64_Sym); k++) {
			const Elf64_Sym *y = &syms[k];

			if (ELF64_ST_TYPE(y->st_info) != STT_TLS || y->st_shndx == SHN_UNDEF ||
			    y->st_size < min_size || y->st_name >= ss->sh_size ||
			    ss->sh_size - y->st_name <= nlen)
				continue;
			if (memcmp(str + y->st_name, name, nlen + 1) == 0) {
				*value = y->st_value;
				*index = k;
				ret = 0;
				break;
			}
		}
		break;
	}
	/* The dynamic relocation that has the loader write where the
	 * variable is: an initial-exec GOT slot (R_X86_64_TPOFF64: the offset
	 * from the thread pointer) or a TLS descriptor (R_X86_64_TLSDESC: its
	 * argument, the offset when the block is static). */
	if (ret == 0 && r_offset)
		ret = find_tls_reloc(fd, eh, sh, *index, r_offset, desc);
	free(syms);
	free(str);
	free(sh);
	return ret;
}

/* An x86-64 ELF file's header and program headers (to free), or NULL
 * with *ret. */
static Elf64_Phdr *read_headers(int fd, Elf64_Ehdr *eh, int *ret)
{
	*ret = pread_all(fd, eh, sizeof(*eh), 0);
	if (*ret < 0)
		return NULL;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr)) {
		*ret = -ENOEXEC;
		return NULL;
	}
	return read_table(fd, eh->e_phoff, eh->e_phnum, sizeof(Elf64_Phdr), TLS_HEADERS_MAX, ret);
}

int fr_elf_fd_exec_tls_offset(int fd, const char *name, uint64_t min_size, int64_t *off)
{
	uint64_t value = 0, memsz = 0, align = 1, first = 0, block, pad, index = 0;
	Elf64_Phdr *ph;
	Elf64_Ehdr eh;
	bool tls = false;
	int ret;

	ph = read_headers(fd, &eh, &ret);
	if (!ph)
		return ret;
	for (unsigned i = 0; i < eh.e_phnum && !tls; i++) {
		if (ph[i].p_type != PT_TLS)
			continue;
		align = ph[i].p_align ? ph[i].p_align : 1;
		memsz = ph[i].p_memsz;
		first = ph[i].p_vaddr & (align - 1);
		tls = true;
	}
	free(ph);
	/* Most executables have no thread-locals of their own. */
	if (!tls)
		return -ENOENT;
	if (align & (align - 1) || align > 4096 || memsz > (1u << 30))
		return -ENOEXEC;
	ret = find_tls_sym(fd, &eh, name, min_size, &value, &index, NULL, NULL);
	if (ret < 0)
		return ret;
	if (value > memsz || memsz - value < min_size)
		return -ENOEXEC;
	/* glibc (TLS_TCB_AT_TP, x86-64): the executable's block is the first
	 * below the thread pointer, at l_tls_offset = roundup(memsz - f,
	 * align) + f, f = -(p_vaddr mod align) mod align (elf/dl-tls.c,
	 * _dl_determine_tlsoffset). */
	pad = (align - first) & (align - 1);
	if (memsz < pad)
		return -ENOEXEC;
	block = ((memsz - pad + align - 1) & ~(align - 1)) + pad;
	*off = (int64_t)value - (int64_t)block;
	return 0;
}

int fr_elf_fd_dso_tls_slot(int fd, const char *name, uint64_t min_size, uint64_t pgoff,
			   int64_t *rel, int *desc)
{
	uint64_t value = 0, index = 0, r_offset = 0;
	int64_t delta = 0;
	bool tls = false, load = false;
	Elf64_Phdr *ph;
	Elf64_Ehdr eh;
	int ret;

	ph = read_headers(fd, &eh, &ret);
	if (ph && eh.e_type != ET_DYN) {
		free(ph);
		return -ENOEXEC;
	}
	if (!ph)
		return ret;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_TLS)
			tls = true;
		if (ph[i].p_type == PT_LOAD && !load &&
		    (ph[i].p_offset & ~(uint64_t)0xfff) <= pgoff &&
		    pgoff < ph[i].p_offset + ph[i].p_filesz) {
			delta = (int64_t)(ph[i].p_vaddr - ph[i].p_offset);
			load = true;
		}
	}
	free(ph);
	if (!tls)
		return -ENOENT;
	if (!load)
		return -ENOENT;
	ret = find_tls_sym(fd, &eh, name, min_size, &value, &index, &r_offset, desc);
	if (ret < 0)
		return ret;
	*rel = (int64_t)(r_offset - (uint64_t)delta - pgoff);
	return 0;
}
