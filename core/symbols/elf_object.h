/* Where an exported data object of a mapped ELF file is in a process: for
 * the recorder's application labels, whose root (fr_labels_registry) is
 * found by name in libflightrec.so's dynamic symbol table. The file is
 * another user's: it is read into memory by the caller (bounded) and
 * parsed with every offset checked by libelf.
 */
#ifndef FR_CORE_ELF_OBJECT_H
#define FR_CORE_ELF_OBJECT_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Files larger than this are not looked into. */
#define FR_ELF_OBJECT_FILE_MAX (16u << 20)

/* For the ELF image of `size` bytes at `buf`, mapped in a process at some
 * address `start` from file offset `pgoff`: the object `name` (a defined
 * STT_OBJECT of .dynsym) of at least `min_size` bytes is at start + *rel.
 * Returns 0, -ENOENT (no such object, or pgoff in no loaded segment),
 * -ENOEXEC (not ELF) or -ENOMEM. */
int fr_elf_object_rel(const void *buf, size_t size, const char *name, uint64_t min_size,
		      uint64_t pgoff, int64_t *rel);

/* An x86-64 ELF file open at `fd` (another user's), its headers read
 * with pread, each table bounded (1 MiB of program or section headers,
 * 64 KiB of section names), never the whole file: for the readers of
 * executables that need a section or a thread-local, not the symbolizer's
 * image. */
struct fr_elf_fd {
	int fd;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph; /* eh.e_phnum */
	Elf64_Shdr *sh; /* eh.e_shnum */
	char *names;	/* section names, nlen bytes and a NUL */
	size_t nlen;
};

/* Reads the headers of the file open at `fd` into *x (release with
 * fr_elf_fd_close(); the descriptor stays the caller's). Returns 0,
 * -ENOEXEC (not a 64-bit little-endian x86-64 ELF file, or headers that
 * make no sense), -ENOMEM or a read's -errno (*x is then released). */
int fr_elf_fd_open(int fd, struct fr_elf_fd *x);
void fr_elf_fd_close(struct fr_elf_fd *x);

/* The header of the section named `name`, or NULL. Its offset and size
 * are the file's word: check them before reading. */
const Elf64_Shdr *fr_elf_fd_section(const struct fr_elf_fd *x, const char *name);

/* Reads n bytes at link-time address `addr` from the file bytes of the
 * PT_LOAD segment holding all of them (`arg` a struct fr_elf_fd). Returns
 * 0, -EFAULT (no segment holds them) or a read's -errno. */
int fr_elf_fd_vread(void *arg, uint64_t addr, void *buf, size_t n);

/* An executable's thread-local: what its TLS segment is, and where the
 * variable is from the thread pointer. */
struct fr_elf_tls {
	int64_t off;	       /* negative; set when found */
	uint64_t memsz, align; /* the TLS segment's */
	bool segment;	       /* the file has a TLS segment */
	bool symtab;	       /* the file has a .symtab */
};

/* Where, from the thread pointer, each thread of a process whose
 * executable is `x` keeps the thread-local `name` (a defined STT_TLS
 * symbol of .dynsym, or, when `symtab`, of .symtab, of at least min_size
 * bytes; .symtab is read 2,048 symbols at a time, at most 8 Mi of them);
 * see fr_elf_fd_exec_tls_offset(). Fills *t as far as it got. Returns 0
 * with t->off, -ENOENT (no TLS segment, or no such symbol), -ENOEXEC,
 * -ENOMEM or a read's -errno. */
int fr_elf_fd_exec_tls(const struct fr_elf_fd *x, const char *name, uint64_t min_size, bool symtab,
		       struct fr_elf_tls *t);

/* Where, from the thread pointer, each thread of a process whose
 * executable is the file open at `fd` keeps the thread-local `name` (a
 * defined STT_TLS symbol of .dynsym, of at least min_size bytes): the
 * executable's TLS block is the first below the thread pointer (x86-64,
 * glibc), so the offset is the same in every thread and known from the
 * file. Reads the headers and the dynamic symbols with pread, each
 * bounded, never the whole file. Returns 0 with *off (negative), -ENOENT
 * (no TLS segment, or no such symbol), -ENOEXEC (not an x86-64 ELF file,
 * or tables that make no sense), -ENOMEM or a read's -errno. Shared
 * libraries' blocks are placed at run time and are not found this way. */
int fr_elf_fd_exec_tls_offset(int fd, const char *name, uint64_t min_size, int64_t *off);

/* For a shared library open at `fd`, mapped in a process at some address
 * `start` from file offset `pgoff`, that defines the thread-local `name`
 * (a defined STT_TLS symbol of .dynsym of at least min_size bytes): the
 * loader writes where it is into a GOT slot at start + *rel, either the
 * offset from the thread pointer (initial-exec, R_X86_64_TPOFF64; *desc
 * 0) or a TLS descriptor whose second word is that offset when the block
 * is static (R_X86_64_TLSDESC; *desc 1). Reads as
 * fr_elf_fd_exec_tls_offset does. Returns 0, -ENOENT (no TLS segment, no
 * such symbol, or no such relocation: general-dynamic access is not
 * read), -ENOEXEC, -ENOMEM or a read's -errno. */
int fr_elf_fd_dso_tls_slot(int fd, const char *name, uint64_t min_size, uint64_t pgoff,
			   int64_t *rel, int *desc);

#endif
