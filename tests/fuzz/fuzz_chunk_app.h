/* Application label checks of the chunk fuzz target (fuzz_chunk_app.c). */
#ifndef FR_TESTS_FUZZ_CHUNK_APP_H
#define FR_TESTS_FUZZ_CHUNK_APP_H

#include <stdint.h>

#include "core/store/chunk.h"

/* Sets, pairs and each sample's set within their tables. */
void fuzz_check_app_sets(const struct fr_chunk *c);

/* An order-free digest of each sample's (time, tid, labels). */
uint64_t fuzz_app_digest(const struct fr_chunk *c);

/* The builder mode's app_labels op (a pure function of tid and time),
 * and the check that a sealed chunk carries what it gave. */
int fuzz_build_app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			  struct fr_app_label *out);
void fuzz_check_built_app(const struct fr_chunk *c);

#endif
