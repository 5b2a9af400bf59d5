/* The reader of executables' headers with pread (core/symbols/
 * elf_object.c), on this test program: its sections, a read by link-time
 * address against the code in memory, and a thread-local of its own
 * (only in .symtab: the program exports nothing) found where the thread
 * pointer says it is; bytes that are no ELF file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/symbols/elf_object.h"
#include "tests/unit/check.h"

__thread long fr_test_tls[4] = {1, 2, 3, 4};
static __thread char fr_test_tls_before[40];

__attribute__((noinline, noclone)) int known_function(int x);
__attribute__((noinline, noclone)) int known_function(int x)
{
	return x * 7 + fr_test_tls_before[x & 31];
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr;
	return 1; /* the program comes first */
}

static void test_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct fr_elf_fd x;
	struct fr_elf_tls t;
	uint64_t bias = 0, tp;
	uint8_t code[16];
	int64_t off = 0;
	int ret;

	CHECK(fd >= 0 && fr_elf_fd_open(fd, &x) == 0, "this program's headers");
	if (fd < 0)
		return;
	CHECK(fr_elf_fd_section(&x, ".text") && fr_elf_fd_section(&x, ".symtab") &&
		      !fr_elf_fd_section(&x, ".go.buildinfo"),
	      "sections by name");
	dl_iterate_phdr(first_bias, &bias);
	ret = fr_elf_fd_vread(&x, (uint64_t)(uintptr_t)&known_function - bias, code, sizeof(code));
	CHECK(ret == 0 && memcmp(code, (const void *)(uintptr_t)&known_function, sizeof(code)) == 0,
	      "read by link-time address: %d", ret);
	CHECK(fr_elf_fd_vread(&x, UINT64_MAX - 4, code, 8) == -EFAULT, "read outside the loads");
	/* Only in .symtab: the dynamic symbols do not have it. */
	ret = fr_elf_fd_exec_tls(&x, "fr_test_tls", sizeof(fr_test_tls), false, &t);
	CHECK(ret == -ENOENT && t.segment && t.symtab, ".dynsym alone: %d", ret);
	CHECK(fr_elf_fd_exec_tls_offset(fd, "fr_test_tls", 8, &off) == -ENOENT,
	      "fr_elf_fd_exec_tls_offset searches .dynsym alone");
	ret = fr_elf_fd_exec_tls(&x, "fr_test_tls", sizeof(fr_test_tls), true, &t);
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	CHECK(ret == 0 && (uint64_t)(uintptr_t)fr_test_tls == tp + (uint64_t)t.off,
	      ".symtab: %d, offset %" PRId64 ", in memory %" PRId64, ret, t.off,
	      (int64_t)((uint64_t)(uintptr_t)fr_test_tls - tp));
	CHECK(fr_elf_fd_exec_tls(&x, "fr_test_tls", 64, true, &t) == -ENOENT,
	      "a thread-local smaller than asked for");
	CHECK(fr_elf_fd_exec_tls(&x, "fr_test_tls_nope", 8, true, &t) == -ENOENT,
	      "no such thread-local");
	fr_elf_fd_close(&x);
	close(fd);
}

static void test_not_elf(void)
{
	char path[] = "/tmp/fr-test-elf-object-XXXXXX";
	uint8_t junk[256];
	struct fr_elf_fd x;
	int fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	unlink(path);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 2654435761u >> 13);
	memcpy(junk, "\177ELF", 4);
	CHECK(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk), "write");
	CHECK(fr_elf_fd_open(fd, &x) == -ENOEXEC, "garbage after an ELF magic");
	CHECK(ftruncate(fd, 10) == 0 && fr_elf_fd_open(fd, &x) == -ENOEXEC, "cut short");
	close(fd);
}

int main(void)
{
	test_self();
	test_not_elf();
	return failures ? 1 : 0;
}
