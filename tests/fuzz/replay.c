/* Replay driver: runs a fuzz target's LLVMFuzzerTestOneInput() over every
 * file named on the command line or found in the directories named there
 * (not recursively; entries starting with '.' are skipped), in name order.
 * This is how CI runs the corpora without libFuzzer or clang.
 *
 * Each input is copied into a buffer of exactly its size, so a sanitizer
 * build catches reads past its end as libFuzzer would. A crash is the
 * failure; before each input its name goes to stderr so the log shows
 * which one. Exit status 0 once all ran, 1 when an argument cannot be read
 * or nothing at all ran (an empty or missing corpus is a broken test, not
 * a passing one).
 */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libFuzzer calls this once before the first input when a target has it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t done = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* malloc(0) may return NULL; the target still gets a valid pointer. */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		close(fd);
		return -1;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "replay: cannot read %s: %s\n", path,
				n < 0 ? strerror(errno) : "file shrank");
			free(buf);
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	close(fd);

	fprintf(stderr, "replay: %s (%zu bytes)\n", path, done);
	LLVMFuzzerTestOneInput(buf, done);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file in `dir`; returns the count or -1. */
static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int ran = 0;

	if (!d) {
		fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **grown;

			cap = cap ? 2 * cap : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown)
				goto err_nomem;
			names = grown;
		}
		names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
		if (!names[n])
			goto err_nomem;
		sprintf(names[n], "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(d);
	d = NULL;
	qsort(names, n, sizeof(*names), cmp_names);

	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(names[i], &st) == 0 && !S_ISREG(st.st_mode))
			continue;
		if (run_file(names[i]) < 0) {
			ran = -1;
			break;
		}
		ran++;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ran;

err_nomem:
	fprintf(stderr, "replay: %s: out of memory\n", dir);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (d)
		closedir(d);
	return -1;
}

int main(int argc, char **argv)
{
	long total = 0;

	if (argc < 2) {
		fprintf(stderr,
			"usage: %s FILE|DIR...\n"
			"Runs the fuzz target over each file, and each file in each "
			"directory.\n",
			argv[0]);
		return 1;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);

	for (int i = 1; i < argc; i++) {
		struct stat st;
		int ret;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: cannot read %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (S_ISDIR(st.st_mode))
			ret = run_dir(argv[i]);
		else
			ret = run_file(argv[i]) < 0 ? -1 : 1;
		if (ret < 0)
			return 1;
		total += ret;
	}
	printf("replay: %ld inputs ran\n", total);
	if (total == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return 0;
}
