/* Shared by the symbolization tests that resolve this process's own code:
 * a marker function the look-ups must name, and the mapping that holds an
 * address, read from /proc/self/maps. Each test executable includes this
 * header once. */
#ifndef FR_TESTS_SYMBOLS_SELF_H
#define FR_TESTS_SYMBOLS_SELF_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static volatile int marker_sink;

__attribute__((noinline, used)) static void fr_test_marker_fn(void)
{
	for (int i = 0; i < 16; i++)
		marker_sink += i * 3;
}

struct mapping {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	char path[4096];
};

static inline int find_mapping(uint64_t addr, struct mapping *m)
{
	char line[4352];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		int n = 0;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &n) < 3 || !n)
			continue;
		if (addr < start || addr >= end)
			continue;
		m->start = start;
		m->end = end;
		m->pgoff = off;
		snprintf(m->path, sizeof(m->path), "%s", line + n);
		m->path[strcspn(m->path, "\n")] = '\0';
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

#endif
