/* The ring tests' part of the fixture: a temporary directory of rings,
 * chunks of random stacks covering a second each, and checks that every
 * chunk a ring indexes reads back. Linked from the same library as
 * fixture.h, whose CHECK() failure count it shares. */
#ifndef FR_TESTS_FIXTURE_RING_H
#define FR_TESTS_FIXTURE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/ring.h"

#define FR_TESTS_SHARED_FAILURES
#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/rng.h"

#define SEG (64 * 1024)
#define NSEG 8
/* The ring's bytes (superblock, segments), and the file with the
 * superblock's copy after them. */
#define RING_BYTES (4096 + NSEG * SEG)
#define RING_SIZE (RING_BYTES + 4096)
#define T0 1700000000000000000ll
#define SEC FR_NS_PER_S

/* The temporary directory of this run. */
extern char dir[256];

/* Seeds rng() and makes the directory. Returns 0, or -1 after saying why. */
int ring_dir_init(void);
/* Removes the directory, or keeps it and says where when a check of
 * `test` failed. Returns the test's exit status. */
int ring_dir_fini(const char *test);

void path_of(char *out, size_t len, const char *name);
/* A chunk covering [t, t + 1 s) of about `bytes` bytes (random stacks do
 * not compress); malloc'd, or NULL. */
void *make_chunk(int64_t t, size_t bytes, size_t *len);
int append_one(struct fr_ring *r, int64_t t, size_t bytes);
int same_refs(const struct fr_ring_ref *a, const struct fr_ring_ref *b, size_t n);
int all_refs(struct fr_ring *r, struct fr_ring_ref **refs, size_t *n);
/* Every ref in the index reads, verifies and decodes with its seq. */
void check_readable(struct fr_ring *r, const char *what);
/* A whole file, malloc'd, or NULL. */
unsigned char *slurp(const char *path, size_t *len);
void poke(const char *path, uint64_t off, const void *buf, size_t len);
void peek(const char *path, uint64_t off, void *buf, size_t len);
/* Opens a ring of RING_SIZE (a failed CHECK when it cannot), without
 * periodic syncs. */
struct fr_ring *open_ok(const char *path, unsigned flags);
/* Appends `n` chunks to a fresh ring and returns it closed, with its refs. */
void build_ring(const char *path, int n, struct fr_ring_ref **refs, size_t *nrefs);

#endif
