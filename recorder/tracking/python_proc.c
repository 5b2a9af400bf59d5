/* The interpreter object of a CPython process (python_proc.h), from
 * /proc/PID/maps: the first mapping at file offset 0 of a libpython3.*,
 * else the executable's (the first mapping) when named python*.
 */
#include "recorder/tracking/python_proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/symbols/elf_image.h"
#include "recorder/tracking/proc.h"

/* The candidate's path and its offset-0 mapping [*lo, *hi) from the
 * process's maps. Returns 0 or -errno (-ENOENT: none). */
static int candidate(uint32_t pid, char *best, size_t len, unsigned long long *lo,
		     unsigned long long *hi)
{
	char maps[64], line[4400], path[4096];
	unsigned long long a, b, off;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	if (!(f = fopen(maps, "re")))
		return -errno;
	best[0] = '\0';
	for (int first = 1; fgets(line, sizeof(line), f); first = 0) {
		int lib;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*u %4095s", &a, &b, &off, path) != 4 ||
		    off || path[0] != '/')
			continue;
		lib = strstr(path, "/libpython3.") != NULL;
		if (!first && !lib)
			continue;
		if (lib || (!best[0] && strncmp(strrchr(path, '/') + 1, "python", 6) == 0)) {
			snprintf(best, len, "%s", path);
			*lo = a;
			*hi = b;
		}
		if (lib)
			break;
	}
	fclose(f);
	return best[0] ? 0 : -ENOENT;
}

int fr_python_proc_find(uint32_t pid, struct fr_python_exe *x, uint64_t *bias, char *path,
			size_t pathlen)
{
	unsigned long long lo = 0, hi = 0;
	char best[4096];
	int fd, ret;

	memset(x, 0, sizeof(*x));
	*bias = 0;
	if (pathlen)
		path[0] = '\0';
	ret = candidate(pid, best, sizeof(best), &lo, &hi);
	if (ret < 0)
		return ret;
	if (pathlen)
		snprintf(path, pathlen, "%s", best);
	fd = fr_proc_open_mapped(pid, lo, hi, best, FR_ELF_MAX_SIZE, NULL);
	if (fd < 0)
		return fd;
	ret = fr_python_exe_read(fd, best, x);
	close(fd);
	*bias = x->pie ? lo : 0;
	return ret == -ENOEXEC ? -ENOENT : ret;
}
