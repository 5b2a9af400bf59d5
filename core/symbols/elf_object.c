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
/* Section names read, symbols read at a time, symbols of a table. */
#define SHSTRTAB_MAX (64u << 10)
#define SYMS_CHUNK 2048u
#define SYMS_MAX (8u << 20)

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

/* The offset of the dynamic relocation of symbol `index` of TLS type
 * (R_X86_64_TPOFF64 or R_X86_64_TLSDESC: *desc) among the sections of
 * `x`, in *r_offset. Returns 0, -ENOENT without one, or -errno. */
static int find_tls_reloc(const struct fr_elf_fd *x, uint64_t index, uint64_t *r_offset, int *desc)
{
	const Elf64_Shdr *sh = x->sh;
	int ret = 0;

	for (unsigned i = 0; i < x->eh.e_shnum; i++) {
		Elf64_Rela *rel;
		uint64_t n;

		if (sh[i].sh_type != SHT_RELA || sh[i].sh_entsize != sizeof(Elf64_Rela))
			continue;
		n = sh[i].sh_size / sizeof(Elf64_Rela);
		if (!n)
			continue;
		rel = read_table(x->fd, sh[i].sh_offset, n, sizeof(*rel), TLS_DYNSYM_MAX, &ret);
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

/* The defined STT_TLS symbol `name` of at least min_size bytes in the
 * symbol table `ds` (strings in `ss`): its value and index. The symbols
 * are read SYMS_CHUNK at a time, a name only when its type is TLS (a Go
 * program's .symtab may hold millions). Returns 0, -ENOENT or -errno. */
static int scan_tls(int fd, const Elf64_Shdr *ds, const Elf64_Shdr *ss, const char *name,
		    uint64_t min_size, uint64_t *value, uint64_t *index)
{
	uint64_t n = ds->sh_size / sizeof(Elf64_Sym);
	size_t nlen = strlen(name);
	Elf64_Sym *syms;
	char *buf;
	bool found = false;
	int ret = 0;

	if (n > SYMS_MAX || nlen > 255)
		return -ENOEXEC;
	syms = malloc(SYMS_CHUNK * sizeof(*syms));
	buf = malloc(nlen + 1);
	for (uint64_t at = 0; syms && buf && at < n && !found && ret == 0; at += SYMS_CHUNK) {
		size_t k = n - at < SYMS_CHUNK ? (size_t)(n - at) : SYMS_CHUNK;

		ret = pread_all(fd, syms, k * sizeof(*syms), ds->sh_offset + at * sizeof(*syms));
		for (size_t i = at ? 0 : 1; ret == 0 && !found && i < k; i++) {
			const Elf64_Sym *y = &syms[i];

			if (ELF64_ST_TYPE(y->st_info) != STT_TLS || y->st_shndx == SHN_UNDEF ||
			    y->st_size < min_size || y->st_name >= ss->sh_size ||
			    ss->sh_size - y->st_name <= nlen)
				continue;
			ret = pread_all(fd, buf, nlen + 1, ss->sh_offset + y->st_name);
			if (ret == 0 && memcmp(buf, name, nlen + 1) == 0) {
				*value = y->st_value;
				*index = at + i;
				found = true;
			}
		}
	}
	if (!syms || !buf)
		ret = -ENOMEM;
	else if (ret == 0 && !found)
		ret = -ENOENT;
	free(syms);
	free(buf);
	return ret;
}

/* The symbol `name` in the first symbol table of type `type`. */
static int find_tls_sym(const struct fr_elf_fd *x, unsigned type, const char *name,
			uint64_t min_size, uint64_t *value, uint64_t *index)
{
	for (unsigned i = 0; i < x->eh.e_shnum; i++) {
		const Elf64_Shdr *ds = &x->sh[i];

		if (ds->sh_type != type || ds->sh_entsize != sizeof(Elf64_Sym) ||
		    ds->sh_link >= x->eh.e_shnum)
			continue;
		return scan_tls(x->fd, ds, &x->sh[ds->sh_link], name, min_size, value, index);
	}
	return -ENOENT;
}

int fr_elf_fd_open(int fd, struct fr_elf_fd *x)
{
	const Elf64_Ehdr *eh = &x->eh;
	const Elf64_Shdr *ns;
	int ret;

	memset(x, 0, sizeof(*x));
	x->fd = fd;
	ret = pread_all(fd, &x->eh, sizeof(x->eh), 0);
	if (ret < 0)
		return ret;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
	    (eh->e_phnum && eh->e_phentsize != sizeof(Elf64_Phdr)) ||
	    (eh->e_shnum && eh->e_shentsize != sizeof(Elf64_Shdr)) ||
	    (eh->e_shnum && eh->e_shstrndx >= eh->e_shnum))
		return -ENOEXEC;
	if ((eh->e_phnum && !(x->ph = read_table(fd, eh->e_phoff, eh->e_phnum, sizeof(Elf64_Phdr),
						 TLS_HEADERS_MAX, &ret))) ||
	    (eh->e_shnum && !(x->sh = read_table(fd, eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr),
						 TLS_HEADERS_MAX, &ret))))
		goto fail;
	if (eh->e_shnum) {
		ns = &x->sh[eh->e_shstrndx];
		x->nlen = ns->sh_size < SHSTRTAB_MAX ? (size_t)ns->sh_size : SHSTRTAB_MAX;
		ret = -ENOMEM;
		if (!(x->names = calloc(1, x->nlen + 1)) ||
		    (ret = pread_all(fd, x->names, x->nlen, ns->sh_offset)) < 0)
			goto fail;
	}
	return 0;
fail:
	fr_elf_fd_close(x);
	return ret;
}

void fr_elf_fd_close(struct fr_elf_fd *x)
{
	free(x->ph);
	free(x->sh);
	free(x->names);
	x->ph = NULL;
	x->sh = NULL;
	x->names = NULL;
}

const Elf64_Shdr *fr_elf_fd_section(const struct fr_elf_fd *x, const char *name)
{
	for (unsigned i = 0; i < x->eh.e_shnum; i++)
		if (x->sh[i].sh_name < x->nlen && strcmp(x->names + x->sh[i].sh_name, name) == 0)
			return &x->sh[i];
	return NULL;
}

int fr_elf_fd_vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	const struct fr_elf_fd *x = arg;

	for (unsigned i = 0; i < x->eh.e_phnum; i++) {
		const Elf64_Phdr *p = &x->ph[i];

		if (p->p_type != PT_LOAD || addr < p->p_vaddr || addr - p->p_vaddr >= p->p_filesz ||
		    p->p_filesz - (addr - p->p_vaddr) < n)
			continue;
		return pread_all(x->fd, buf, n, p->p_offset + (addr - p->p_vaddr));
	}
	return -EFAULT;
}

int fr_elf_fd_exec_tls(const struct fr_elf_fd *x, const char *name, uint64_t min_size, bool symtab,
		       struct fr_elf_tls *t)
{
	uint64_t value = 0, first = 0, block, pad, index = 0;
	int ret;

	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < x->eh.e_shnum; i++)
		t->symtab |= x->sh[i].sh_type == SHT_SYMTAB;
	for (unsigned i = 0; i < x->eh.e_phnum && !t->segment; i++) {
		if (x->ph[i].p_type != PT_TLS)
			continue;
		t->align = x->ph[i].p_align ? x->ph[i].p_align : 1;
		t->memsz = x->ph[i].p_memsz;
		first = x->ph[i].p_vaddr & (t->align - 1);
		t->segment = true;
	}
	/* Most executables have no thread-locals of their own. */
	if (!t->segment)
		return -ENOENT;
	if (t->align & (t->align - 1) || t->align > 4096 || t->memsz > (1u << 30))
		return -ENOEXEC;
	ret = find_tls_sym(x, SHT_DYNSYM, name, min_size, &value, &index);
	if (ret == -ENOENT && symtab)
		ret = find_tls_sym(x, SHT_SYMTAB, name, min_size, &value, &index);
	if (ret < 0)
		return ret;
	if (value > t->memsz || t->memsz - value < min_size)
		return -ENOEXEC;
	/* glibc (TLS_TCB_AT_TP, x86-64): the executable's block is the first
	 * below the thread pointer, at l_tls_offset = roundup(memsz - f,
	 * align) + f, f = -(p_vaddr mod align) mod align (elf/dl-tls.c,
	 * _dl_determine_tlsoffset). */
	pad = (t->align - first) & (t->align - 1);
	if (t->memsz < pad)
		return -ENOEXEC;
	block = ((t->memsz - pad + t->align - 1) & ~(t->align - 1)) + pad;
	t->off = (int64_t)value - (int64_t)block;
	return 0;
}

int fr_elf_fd_exec_tls_offset(int fd, const char *name, uint64_t min_size, int64_t *off)
{
	struct fr_elf_fd x;
	struct fr_elf_tls t;
	int ret = fr_elf_fd_open(fd, &x);

	if (ret < 0)
		return ret;
	ret = fr_elf_fd_exec_tls(&x, name, min_size, false, &t);
	fr_elf_fd_close(&x);
	if (ret == 0)
		*off = t.off;
	return ret;
}

int fr_elf_fd_dso_tls_slot(int fd, const char *name, uint64_t min_size, uint64_t pgoff,
			   int64_t *rel, int *desc)
{
	uint64_t value = 0, index = 0, r_offset = 0;
	int64_t delta = 0;
	bool tls = false, load = false;
	struct fr_elf_fd x;
	int ret = fr_elf_fd_open(fd, &x);

	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < x.eh.e_phnum; i++) {
		const Elf64_Phdr *p = &x.ph[i];

		if (p->p_type == PT_TLS)
			tls = true;
		if (p->p_type == PT_LOAD && !load && (p->p_offset & ~(uint64_t)0xfff) <= pgoff &&
		    pgoff < p->p_offset + p->p_filesz) {
			delta = (int64_t)(p->p_vaddr - p->p_offset);
			load = true;
		}
	}
	ret = x.eh.e_type != ET_DYN ? -ENOEXEC : !tls || !load ? -ENOENT : 0;
	if (ret == 0)
		ret = find_tls_sym(&x, SHT_DYNSYM, name, min_size, &value, &index);
	/* The dynamic relocation that has the loader write where the
	 * variable is: an initial-exec GOT slot (R_X86_64_TPOFF64: the offset
	 * from the thread pointer) or a TLS descriptor (R_X86_64_TLSDESC: its
	 * argument, the offset when the block is static). */
	if (ret == 0)
		ret = find_tls_reloc(&x, index, &r_offset, desc);
	fr_elf_fd_close(&x);
	if (ret == 0)
		*rel = (int64_t)(r_offset - (uint64_t)delta - pgoff);
	return ret;
}
