/* The chunk tests' part of the fixture: a fake process tracker (pids 100,
 * 200 and 300 with their mappings), random samples over it, and the
 * comparison of a decoded chunk with what went in, field by field and frame
 * by frame. Linked from the same library as fixture.h, whose CHECK()
 * failure count it shares. */
#ifndef FR_TESTS_FIXTURE_CHUNK_H
#define FR_TESTS_FIXTURE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/chunk.h"
#include "core/store/sample.h"

#define FR_TESTS_SHARED_FAILURES
#include "tests/unit/check.h"
#include "tests/unit/rng.h"

/* ---- fake process tracker ---- */

#define KERNEL_BASE 0xffffffff81000000ull

struct fake_map {
	uint32_t pid;
	uint64_t start, end, pgoff;
	const char *path;
	uint8_t build_id_len;
};

#define NFAKE_MAPS 5
extern const struct fake_map fake_maps[NFAKE_MAPS];
/* Mapping lookups the builder made through fake_ops. */
extern int nmapping_calls;
extern const struct fr_chunk_meta_ops fake_ops;

int fake_proc(void *arg, uint32_t pid, struct fr_proc_info *out);
int fake_thread(void *arg, uint32_t tid, struct fr_thread_info *out);
int fake_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out);
/* The fake mapping of `addr` in `pid`, or NULL. */
const struct fake_map *fake_find(uint32_t pid, uint64_t addr);

/* ---- sample generation ---- */

#define NSAMPLES 3000
#define BASE_NS 1700000000000000000ll

/* A sample with its own copy of the frames. */
struct stored {
	struct fr_sample s;
	uint64_t ips[FR_MAX_FRAMES];
};

void user_frame(uint32_t pid, uint64_t *out);
/* Sample `i` of a stream shaped like the recorder's; `prev` (or NULL) is
 * the one before it, whose stack it sometimes shares. */
void make_sample(struct stored *st, int i, const struct stored *prev);

/* ---- checks ---- */

/* Sorted copies of the input and of the decoded samples (with the decoded
 * index in `tid` of a parallel array), so that samples can be compared
 * whatever order the chunk returns them in. */
struct pairing {
	struct stored *in, *out;
	uint32_t *index; /* out[i] is decoded sample index[i] */
};

/* String `id` of a decoded chunk. */
const char *str(const struct fr_chunk *c, uint32_t id);
int cmp_stored(const void *a, const void *b);
int pair_samples(const struct fr_chunk *c, const struct stored *in, uint32_t n, struct pairing *pr);
void pairing_fini(struct pairing *pr);
/* Every decoded sample and its metadata equal what went in. */
void check_decoded(const struct fr_chunk *c, const struct stored *unsorted, uint32_t n,
		   int64_t clock_offset);
/* Invariants a successfully decoded chunk must hold. */
void check_invariants(const struct fr_chunk *c);

/* ---- raw chunk bytes ---- */

void put_le32(unsigned char *p, uint32_t v);
uint32_t get_le32(const unsigned char *p);
/* Recomputes the header's own checksum after an edit. */
void fix_header_crc(unsigned char *p);
/* Wraps a raw block into a chunk with valid checksums, so the block
 * decoder itself is exercised. `tmpl` provides the other header fields. */
unsigned char *wrap_block(const unsigned char *tmpl, const void *raw, size_t raw_len,
			  uint32_t nsamples, size_t *out_len);

#endif
