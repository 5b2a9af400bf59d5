/* The cap on the files recorder/tracking/unwind_tables.c knows at once, built here
 * with FR_UNWIND_TABLES_MAX_ENTRIES 4: a fifth file makes it forget the
 * failed ones (asked about again, they are tried again) and the mappings
 * linked to a build id, and when the four it knows all have tables, a
 * fifth gets none and is not even asked for. */
#include "recorder/tracking/unwind_tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/symbols/elf_image.h"
#include "tests/unit/check.h"

_Static_assert(FR_UNWIND_TABLES_MAX_ENTRIES == 4, "built with a cap of 4");

/* The executable mapping that holds `addr` or, when `addr` is 0, whose
 * path holds `name`, keyed by inode. */
static int exec_map(uint64_t addr, const char *name, struct fr_tracker_map *m, char *path,
		    size_t len)
{
	char line[4608];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &at) < 7 ||
		    perms[2] != 'x' || (addr && (addr < start || addr >= end)) ||
		    (!addr && (!at || !strstr(line + at, name))))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, len, "%s", line + at);
		*m = (struct fr_tracker_map){.start = start,
					     .end = end,
					     .pgoff = off,
					     .path = path,
					     .path_id = path,
					     .inode = FR_TRACKER_INODE_MMAP2,
					     .dev = makedev(maj, min),
					     .ino = ino};
		found = 1;
	}
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

static int self_map(struct fr_tracker_map *m, char *path, size_t len)
{
	return exec_map((uint64_t)(uintptr_t)&self_map, NULL, m, path, len);
}

/* The mapping of `name`, keyed by its build id (in `bid`); "[vdso]" by
 * its name. */
static int bid_map(const char *name, struct fr_tracker_map *m, char *path, uint8_t *bid)
{
	int n;

	if (exec_map(0, name, m, path, 4096) < 0)
		return -1;
	if (strcmp(name, "[vdso]") == 0)
		return 0;
	n = fr_elf_build_id(path, bid, FR_ELF_BUILD_ID_MAX);
	if (n <= 0 || n > FR_BUILD_ID_MAX)
		return -1;
	m->build_id = bid;
	m->build_id_len = (uint8_t)n;
	return 0;
}

/* The look-up of `m` with inode generation `gen` (a key of its own),
 * after its build when one was asked for. */
static const struct fr_cfi_table *ask(struct fr_unwind_tables *u, const struct fr_tracker_map *m,
				      uint64_t gen, int *miss)
{
	struct fr_tracker_map k = *m;
	uint64_t vaddr;

	k.ino_generation = gen;
	fr_unwind_tables_find(u, (uint32_t)getpid(), &k, m->start, &vaddr, miss);
	fr_unwind_tables_settle(u, 20000);
	return fr_unwind_tables_find(u, (uint32_t)getpid(), &k, m->start, &vaddr, miss);
}

int main(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	struct fr_unwind_tables_stats st;
	struct fr_tracker_map m, bad;
	char path[4096];
	int miss;

	if (!u || self_map(&m, path, sizeof(path)) < 0) {
		fprintf(stderr, "no tables or no mapping of this test\n");
		return 1;
	}
	/* Four files that fail (an inode the mapped file does not have). */
	bad = m;
	bad.ino = m.ino + 1;
	for (uint64_t g = 0; g < 4; g++)
		CHECK(!ask(u, &bad, g, &miss) && miss == FR_UNWIND_MISS_NOCFI,
		      "failure %u: miss %d", (unsigned)g, miss);
	/* A fifth: the failures are forgotten, it is built. */
	CHECK(ask(u, &m, 100, &miss) != NULL, "the fifth file got no table (miss %d)", miss);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.failed == 4 && st.built == 1, "failed %llu built %llu",
	      (unsigned long long)st.failed, (unsigned long long)st.built);
	/* A forgotten failure is tried again. */
	CHECK(!ask(u, &bad, 0, &miss) && miss == FR_UNWIND_MISS_NOCFI, "retry: miss %d", miss);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.failed == 5, "the forgotten failure was not tried again: %llu failures",
	      (unsigned long long)st.failed);
	/* Four files with tables (this test's, libc, the dynamic loader and
	 * the vDSO, by build id: another generation of this test's inode would
	 * only be linked to its build id): a fifth gets none, and no build. */
	for (unsigned i = 0; i < 3; i++) {
		static const char *const names[] = {"/libc.so", "/ld-linux", "[vdso]"};
		struct fr_tracker_map o;
		char opath[4096];
		uint8_t bid[FR_ELF_BUILD_ID_MAX];

		if (bid_map(names[i], &o, opath, bid) < 0) {
			printf("no mapping of %s with a build id; skipped\n", names[i]);
			fr_unwind_tables_free(u);
			return 77;
		}
		CHECK(ask(u, &o, 0, &miss) != NULL, "%s: no table (miss %d)", opath, miss);
	}
	CHECK(!ask(u, &m, 200, &miss) && miss == FR_UNWIND_MISS_PENDING,
	      "past the cap: a table or miss %d", miss);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.built == 4 && st.pending == 0, "built %llu pending %llu",
	      (unsigned long long)st.built, (unsigned long long)st.pending);
	fr_unwind_tables_free(u);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("unwind_tables_cap: all checks passed\n");
	return 0;
}
