/* A program whose static function only its .symtab names, for
 * test_symbols_debuglink.c: built, its symbols moved to a debug file and
 * stripped (tests/meson.build). DL_VARIANT makes another build of it. */
#include <stdio.h>

#ifndef DL_VARIANT
#define DL_VARIANT 1
#endif

static volatile int sink;

__attribute__((noinline)) static void fr_debuglink_marker(int n)
{
	for (int i = 0; i < n; i++)
		sink += i * DL_VARIANT;
}

int main(int argc, char **argv)
{
	(void)argv;
	fr_debuglink_marker(argc);
	printf("%d\n", sink);
	return 0;
}
