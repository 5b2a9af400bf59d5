/* A program whose calls into libc go through PLT stubs, for
 * test_symbols_plt.c: built twice, with and without IBT, so both the
 * .plt-only layout and the .plt + .plt.sec layout are read. Run, it sorts
 * and copies its arguments; the test only reads the file. */
#include <stdlib.h>
#include <string.h>

static int by_length(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? -1 : la > lb;
}

int main(int argc, char **argv)
{
	char buf[256];
	size_t len;

	qsort(argv, (size_t)argc, sizeof(*argv), by_length);
	len = strlen(argv[argc - 1]);
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, argv[argc - 1], len);
	buf[len] = '\0';
	return (int)strlen(buf) & 1;
}
