/* An ELF file's loaded segments, read by address (core/symbols/elf_int.h):
 * what the readers of Go and Python executables (go_exe.c, python_exe.c)
 * take their initialized data with. */
#include <errno.h>

#include "core/symbols/elf_int.h"
#include "core/util/fs.h"

int elf_segs_read(Elf *elf, int fd, uint64_t fsize, struct elf_segs *s, size_t *shstrndx)
{
	GElf_Ehdr eh;
	size_t n;

	s->fd = fd;
	s->nph = 0;
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &n) != 0 || n > ELF_SEGS_MAX ||
	    elf_getshdrstrndx(elf, shstrndx) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(elf, (int)i, &s->ph[s->nph]) &&
		    within_file(s->ph[s->nph].p_offset, s->ph[s->nph].p_filesz, fsize))
			s->nph++;
	return 0;
}

int elf_segs_vread(const struct elf_segs *s, uint64_t addr, void *buf, size_t n)
{
	for (size_t i = 0; i < s->nph; i++) {
		const GElf_Phdr *p = &s->ph[i];

		if (p->p_type != PT_LOAD || addr < p->p_vaddr || addr - p->p_vaddr >= p->p_filesz ||
		    p->p_filesz - (addr - p->p_vaddr) < n)
			continue;
		return fr_pread_full(s->fd, buf, n, p->p_offset + (addr - p->p_vaddr)) == (ssize_t)n
			       ? 0
			       : -EIO;
	}
	return -EFAULT;
}
