/* Small file helpers shared by the unit tests. */
#ifndef FR_TESTS_FILES_H
#define FR_TESTS_FILES_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

/* Writes `text` to `path` (created or truncated). Returns 0, or -1. */
static inline int test_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) == 0 ? ret : -1;
}

/* Copies file `from` to a new file `to` (which must not exist) with
 * `mode`. Returns 0, or -1 with errno set. */
static inline int test_copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, ret = -1;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0)
		goto done;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto done;
	ret = n == 0 ? 0 : -1;
done:
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

#endif
