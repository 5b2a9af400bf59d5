/* Allocates from three sites for alloc_record.sh (alloc_labelled), run under
 * LD_PRELOAD=libflightrec.so: 64-byte and 64 KiB blocks allocated and
 * freed at once, and 4 KiB blocks kept (never freed) until it exits; the
 * thread labelled site=loop through the preloaded library's
 * fr_labels_set (looked up, not linked).
 * Usage: alloc_sites SECONDS; prints "ready" when it starts allocating.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEEP 16384

static void *keep[KEEP];

__attribute__((noinline)) static void *site_small(void)
{
	return malloc(64);
}

__attribute__((noinline)) static void *site_big(void)
{
	return malloc(65536);
}

__attribute__((noinline)) static void *site_kept(void)
{
	return malloc(4096);
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 5);
	int (*set)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "fr_labels_set");
	unsigned n = 0;

	if (set)
		set("site", "loop");

	printf("ready\n");
	fflush(stdout);
	while (time(NULL) < end) {
		for (int i = 0; i < 200; i++) {
			char *a = site_small(), *b = site_big();

			if (!a || !b)
				return 1;
			memset(a, 1, 64);
			b[0] = 1;
			free(a);
			free(b);
		}
		if (n < KEEP) {
			keep[n] = site_kept();
			if (keep[n])
				memset(keep[n], 2, 64);
			n++;
		}
		usleep(1000);
	}
	return 0;
}
