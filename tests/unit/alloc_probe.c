/* A program that does not link libflightrec, for test_alloc: "preload"
 * (run with LD_PRELOAD of the library) checks that the library sampled
 * C++ new and delete (alloc_probe_new.cc) into a ring of this process,
 * then executes itself ("after"), whose new image must have a ring of its
 * own and no other; "never" (no preload) checks that nothing is there. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/alloc_reader.h"

void *probe_new(unsigned long n);
void probe_delete(void *p);

/* A recorder on the machine claimed the ring first: test_alloc runs the
 * probe again. */
#define BUSY 75

static struct rd_rec recs[4096];

static int fail(const char *what)
{
	fprintf(stderr, "alloc_probe: %s\n", what);
	return 1;
}

static int preload(char *self)
{
	struct rd rd;
	void *p;
	size_t k;
	int seen_new = 0, seen_delete = 0;
	char id[32];

	switch (rd_open(&rd)) {
	case 0: break;
	case -2: return BUSY;
	default: return fail("no ring under LD_PRELOAD");
	}
	rd_drain(&rd, recs, 4096);
	p = probe_new(7777);
	probe_delete(p);
	k = rd_drain(&rd, recs, 4096);
	for (size_t j = 0; j < k; j++) {
		seen_new |= recs[j].kind == FR_ALLOC_REC_ALLOC && recs[j].addr == (uintptr_t)p &&
			    recs[j].size == 7777;
		seen_delete |= recs[j].kind == FR_ALLOC_REC_FREE && recs[j].addr == (uintptr_t)p;
	}
	if (rd.h->reader_pid != (uint32_t)getpid())
		return BUSY; /* a recorder took the ring over */
	if (!seen_new || !seen_delete)
		return fail("new or delete not seen");
	snprintf(id, sizeof(id), "%" PRIx64, rd.reg->ring_id);
	execl(self, self, "after", id, (char *)NULL);
	return fail("exec");
}

static int after(const char *id)
{
	const struct fr_alloc_registry_abi *reg = rd_registry();
	struct rd rd;
	char now[32];
	void *p;

	if (!reg || reg->state != FR_ALLOC_STATE_ON)
		return fail("no library after exec");
	snprintf(now, sizeof(now), "%" PRIx64, reg->ring_id);
	if (!strcmp(now, id))
		return fail("the same ring after exec");
	if (rd_ring_fds() != 1)
		return fail("not exactly one ring after exec");
	switch (rd_open(&rd)) {
	case 0: break;
	case -2: return BUSY;
	default: return fail("no ring after exec");
	}
	p = malloc(100);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	if (rd.h->sampled < 1)
		return fail("no sample after exec");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "preload"))
		return preload(argv[0]);
	if (argc == 3 && !strcmp(argv[1], "after"))
		return after(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "never")) {
		void *p = probe_new(7777);

		probe_delete(p);
		if (rd_registry() || rd_ring_fds())
			return fail("a ring without the library");
		return 0;
	}
	return 2;
}
