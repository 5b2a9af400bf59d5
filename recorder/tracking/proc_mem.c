/* /proc's memory files (proc_mem.h). */
#include "recorder/tracking/proc_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* An unsigned decimal at buf[*at..len), moved past; -EPROTO when there
 * are no digits or it overflows. */
static int take_u64(const char *buf, size_t len, size_t *at, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = *at;

	if (i >= len || buf[i] < '0' || buf[i] > '9')
		return -EPROTO;
	for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
		unsigned d = (unsigned)(buf[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EPROTO;
		v = v * 10 + d;
	}
	*at = i;
	*out = v;
	return 0;
}

int fr_statm_parse(const char *buf, size_t len, uint64_t *pages)
{
	size_t at = 0;
	uint64_t size, resident;

	if (take_u64(buf, len, &at, &size) < 0 || at >= len || buf[at] != ' ')
		return -EPROTO;
	at++;
	if (take_u64(buf, len, &at, &resident) < 0 ||
	    (at < len && buf[at] != ' ' && buf[at] != '\n'))
		return -EPROTO;
	*pages = resident;
	return 0;
}

int fr_pressure_parse_some(const char *buf, size_t len, uint64_t *us)
{
	static const char key[] = " total=";
	size_t at;

	if (len < 5 || memcmp(buf, "some ", 5) != 0)
		return -EPROTO;
	/* total= of the first line only. */
	for (at = 4; at + sizeof(key) - 1 <= len && buf[at] != '\n'; at++) {
		if (memcmp(buf + at, key, sizeof(key) - 1) == 0) {
			at += sizeof(key) - 1;
			if (take_u64(buf, len, &at, us) < 0 ||
			    (at < len && buf[at] != '\n' && buf[at] != ' '))
				return -EPROTO;
			return 0;
		}
	}
	return -EPROTO;
}

/* The total= of the line at buf[at..len) that starts with `kind` ("some "
 * or "full "): -EPROTO when it has none. */
static int line_total(const char *buf, size_t len, size_t at, const char *kind, uint64_t *us)
{
	static const char key[] = " total=";

	if (len - at < 5 || memcmp(buf + at, kind, 5) != 0)
		return -EPROTO;
	for (at += 4; at + sizeof(key) - 1 <= len && buf[at] != '\n'; at++) {
		if (memcmp(buf + at, key, sizeof(key) - 1) == 0) {
			at += sizeof(key) - 1;
			if (take_u64(buf, len, &at, us) < 0 ||
			    (at < len && buf[at] != '\n' && buf[at] != ' '))
				return -EPROTO;
			return 0;
		}
	}
	return -EPROTO;
}

int fr_pressure_parse(const char *buf, size_t len, uint64_t *some_us, uint64_t *full_us,
		      int *has_full)
{
	size_t at = 0;
	int ret = line_total(buf, len, 0, "some ", some_us);

	*full_us = 0;
	*has_full = 0;
	if (ret < 0)
		return ret;
	while (at < len && buf[at] != '\n')
		at++;
	if (at + 1 >= len)
		return 0;
	ret = line_total(buf, len, at + 1, "full ", full_us);
	if (ret < 0)
		return ret;
	*has_full = 1;
	return 0;
}

/* One read of at most `len` bytes of `path`, never through a symlink.
 * Returns the length or -errno. */
static ssize_t read_once(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

int fr_proc_read_rss(const char *proc, uint32_t pid, uint64_t *bytes)
{
	char path[160], buf[192];
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pages;
	ssize_t n;
	int ret;

	snprintf(path, sizeof(path), "%s/%u/statm", proc, pid);
	n = read_once(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ESRCH ? -ENOENT : (int)n;
	ret = fr_statm_parse(buf, (size_t)n, &pages);
	if (ret < 0)
		return ret;
	page = page > 0 ? page : 4096;
	*bytes = pages > UINT64_MAX / (uint64_t)page ? UINT64_MAX : pages * (uint64_t)page;
	return 0;
}

int fr_proc_read_mem_pressure(const char *proc, uint64_t *ns)
{
	char path[160], buf[256];
	uint64_t us;
	ssize_t n;
	int ret;

	snprintf(path, sizeof(path), "%s/pressure/memory", proc);
	n = read_once(path, buf, sizeof(buf));
	if (n < 0)
		return n == -EOPNOTSUPP ? -ENOENT : (int)n;
	ret = fr_pressure_parse_some(buf, (size_t)n, &us);
	if (ret < 0)
		return ret;
	*ns = us > UINT64_MAX / 1000 ? UINT64_MAX : us * 1000;
	return 0;
}

int fr_pressure_read_file(const char *path, uint64_t *some_ns, uint64_t *full_ns, int *has_full)
{
	char buf[256];
	uint64_t some, full;
	ssize_t n = read_once(path, buf, sizeof(buf));
	int ret;

	if (n < 0)
		return n == -EOPNOTSUPP ? -ENOENT : (int)n;
	ret = fr_pressure_parse(buf, (size_t)n, &some, &full, has_full);
	if (ret < 0)
		return ret;
	*some_ns = some > UINT64_MAX / 1000 ? UINT64_MAX : some * 1000;
	*full_ns = full > UINT64_MAX / 1000 ? UINT64_MAX : full * 1000;
	return 0;
}

int fr_proc_read_pressure(const char *proc, const char *resource, uint64_t *some_ns,
			  uint64_t *full_ns, int *has_full)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/pressure/%s", proc, resource);
	return fr_pressure_read_file(path, some_ns, full_ns, has_full);
}
