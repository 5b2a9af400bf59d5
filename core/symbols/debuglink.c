/* .gnu_debuglink debug files (see core/symbols/debuglink.h). The paths are
 * those gdb searches, with the configured debug directories as its global
 * ones; a candidate with a build id other than the binary's is passed
 * over before it is read whole, and the file is checked whole against
 * the CRC the binary carries, so a stale debug file beside a rebuilt
 * binary names nothing.
 */
#include "core/symbols/debuglink.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/dwarf_lines.h"
#include "core/util/compress.h"
#include "core/util/fs.h"

#define CRC_CHUNK (256u << 10)

void fr_debuglink_parse(struct fr_elf_image *img, const void *sec, size_t len, bool msb)
{
	const char *name = sec;
	size_t name_len = strnlen(name, len), crc_at;
	uint32_t crc;

	img->debuglink[0] = '\0';
	if (!name_len || name_len >= sizeof(img->debuglink) || name_len == len ||
	    memchr(name, '/', name_len) || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return;
	crc_at = (name_len + 4) & ~(size_t)3;
	if (crc_at + 4 > len)
		return;
	memcpy(&crc, name + crc_at, 4);
	if (msb != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		crc = __builtin_bswap32(crc);
	img->debuglink_crc = crc;
	memcpy(img->debuglink, name, name_len + 1);
}

/* The CRC-32 of the `size` bytes of the file open on `fd`. Returns 0 or
 * -errno (-EIO for a file shorter than `size`). */
static int file_crc(int fd, uint64_t size, uint32_t *crc)
{
	char *buf = malloc(CRC_CHUNK);
	uint64_t off = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	*crc = 0;
	while (off < size) {
		size_t want = size - off < CRC_CHUNK ? (size_t)(size - off) : CRC_CHUNK;
		ssize_t n = fr_pread_full(fd, buf, want, off);

		if (n < 0 || (size_t)n < want) {
			ret = n < 0 ? (int)n : -EIO;
			break;
		}
		*crc = fr_crc32(*crc, buf, want);
		off += want;
	}
	free(buf);
	return ret;
}

/* Checks and loads the debug file of `size` bytes open on `fd`. A
 * candidate is read whole for its CRC; the file read for the CRC is the
 * one parsed, from memory, so it is read once, and only after its build
 * id (a few small reads) says it may be the binary's. */
static int check_and_load(struct fr_elf_image *dbg, int fd, uint64_t size)
{
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	uint32_t crc;
	void *data;
	int ret;

	if (dbg->build_id_len) {
		ret = fr_elf_build_id_fd(fd, bid, sizeof(bid));
		if (ret > 0 && ((size_t)ret != dbg->build_id_len ||
				memcmp(bid, dbg->build_id, dbg->build_id_len) != 0))
			return -ESTALE;
	}
	/* Beyond what DWARF is read for, the file is not kept in memory:
	 * its CRC in chunks, its symbols through libelf. */
	if (size > FR_DWARF_MAX_SIZE) {
		ret = file_crc(fd, size, &crc);
		if (ret == 0 && crc != dbg->debuglink_crc)
			ret = -EBADMSG;
		return ret == 0 ? fr_elf_debug_load_fd(dbg, fd, size) : ret;
	}
	data = malloc(size ? (size_t)size : 1);
	if (!data)
		return -ENOMEM;
	/* A file that shrinks while it is read is not used. */
	if (fr_pread_full(fd, data, (size_t)size, 0) != (ssize_t)size) {
		free(data);
		return -EIO;
	}
	if (fr_crc32(0, data, (size_t)size) != dbg->debuglink_crc) {
		free(data);
		return -EBADMSG;
	}
	return fr_elf_debug_load_mem(dbg, data, size);
}

/* Tries the debug file at `path` under `root`. Returns 0 when it was used
 * (or -ENOMEM), another -errno when it was not. */
static int try_file(struct fr_elf_image *dbg, const char *root, const char *path)
{
	struct stat st;
	int fd, ret;

	fd = fr_open_untrusted(root, path, FR_ELF_MAX_SIZE, &st);
	if (fd < 0)
		return fd;
	ret = check_and_load(dbg, fd, (uint64_t)st.st_size);
	close(fd);
	if (ret == 0 && dbg->debug_missing)
		ret = -ENOENT;
	return ret;
}

int fr_debuglink_load(struct fr_elf_image *dbg, const char *root, const char *file,
		      const char *const *dirs, size_t ndirs)
{
	const char *slash = strrchr(file, '/');
	int dir_len;
	char path[4096];

	if (!dbg->debuglink[0] || file[0] != '/' || !slash)
		return 0;
	/* The directory with its trailing '/'. */
	dir_len = (int)(slash - file + 1);
	/* Beside the binary, in its .debug/, then under each debug dir. */
	for (size_t i = 0; i < 2 + ndirs; i++) {
		int n = i == 0	 ? snprintf(path, sizeof(path), "%.*s%s", dir_len, file,
					    dbg->debuglink)
			: i == 1 ? snprintf(path, sizeof(path), "%.*s.debug/%s", dir_len, file,
					    dbg->debuglink)
				 : snprintf(path, sizeof(path), "%s%.*s%s", dirs[i - 2], dir_len,
					    file, dbg->debuglink);

		/* The binary itself is not its own debug file. */
		if (n < 0 || (size_t)n >= sizeof(path) || strcmp(path, file) == 0)
			continue;
		if (try_file(dbg, root, path) == -ENOMEM)
			return -ENOMEM;
		if (!dbg->debug_missing)
			return 0;
	}
	return 0;
}
