/* Fuzz target for the ELF readers that the root daemon points at files
 * other users control (core/symbols/symbols.h): the build id reader and the
 * symbol loader, over a file that changes underneath them.
 *
 * Input: byte 0 says after how many of libelf's reads the file is cut (0:
 * never), byte 1 to what part of its length (x/256), bytes 2..5 an offset
 * to look up; the rest is the file. It is written to a temporary file and
 * read through the public entry points. libelf's pread() is interposed
 * here (an executable's definition is what libelf's PLT finds): at the
 * chosen read the file is truncated under the reader, as a user does to
 * their own library while the daemon reads it.
 *
 * Promises: no crash (SIGBUS included: nothing reads the file through a
 * mapping), no memory error; results are a length in 1..cap or -errno,
 * and a name handed back is a string.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/symbols/symbols.h"

static int cut_fd = -1;
static unsigned reads, cut_after;
static off_t cut_to;

/* Named with asm labels: with _FILE_OFFSET_BITS=64 the headers rename
 * pread to pread64, and libelf calls pread. */
ssize_t fuzz_pread(int fd, void *buf, size_t n, off_t off) __asm__("pread");
ssize_t fuzz_pread64(int fd, void *buf, size_t n, off_t off) __asm__("pread64");

ssize_t fuzz_pread64(int fd, void *buf, size_t n, off_t off)
{
	return fuzz_pread(fd, buf, n, off);
}

ssize_t fuzz_pread(int fd, void *buf, size_t n, off_t off)
{
	if (cut_fd >= 0 && cut_after && ++reads == cut_after && ftruncate(cut_fd, cut_to) < 0)
		abort();
	return syscall(SYS_pread64, fd, buf, n, off);
}

static void reset(int fd, const uint8_t *data, size_t size)
{
	FUZZ_CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size,
		   "cannot write the input: %s", strerror(errno));
	reads = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/fr-fuzz-elf-XXXXXX";
	static const uint8_t other_id[20] = {1, 2, 3};
	uint8_t id[FR_BUILD_ID_MAX + 4];
	struct fr_symbols *s;
	const char *name = NULL;
	uint64_t elf_addr = 0, addr;
	int fd, rfd, ret;

	if (size < 6)
		return 0;
	cut_after = data[0];
	addr = (uint64_t)data[2] | (uint64_t)data[3] << 8 | (uint64_t)data[4] << 16 |
	       (uint64_t)data[5] << 24;
	data += 6;
	size -= 6;
	cut_to = (off_t)(size * (size_t)data[-5] / 256);
	fd = mkstemp(path);
	FUZZ_CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	cut_fd = fd;

	reset(fd, data, size);
	rfd = open(path, O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(rfd >= 0, "open: %s", strerror(errno));
	ret = fr_elf_build_id_fd(rfd, id, FR_BUILD_ID_MAX);
	close(rfd);
	FUZZ_CHECK(ret < 0 ? ret > -4096 : ret >= 1 && ret <= FR_BUILD_ID_MAX, "build id length %d",
		   ret);

	/* A new cache each time: every look-up parses the file again. */
	for (int round = 0; round < 2; round++) {
		reset(fd, data, size);
		s = fr_symbols_new("/nonexistent/flightrec/kallsyms");
		FUZZ_CHECK(s, "fr_symbols_new");
		ret = fr_symbols_user(s, NULL, path, round ? other_id : NULL, round ? 20 : 0,
				      0x10000, 0, 0x10000 + addr % (size + 1), &name, &elf_addr);
		FUZZ_CHECK(ret <= 0 && ret > -4096, "fr_symbols_user = %d", ret);
		if (ret == 0)
			FUZZ_CHECK(name && strlen(name) < (1u << 20), "no name");
		ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x10000, 0x1000, 0x10000 + addr,
				      &name, NULL);
		FUZZ_CHECK(ret <= 0 && ret > -4096, "fr_symbols_user = %d", ret);
		fr_symbols_free(s);
	}
	cut_fd = -1;
	close(fd);
	unlink(path);
	return 0;
}
