/* Consistency checks of the chunk fuzz target (fuzz_chunk_check.c). */
#ifndef FR_TESTS_FUZZ_CHUNK_CHECK_H
#define FR_TESTS_FUZZ_CHUNK_CHECK_H

#include "core/store/chunk.h"

/* A decoded chunk agrees with its parsed header and with itself: every
 * id inside its table, every table sorted, every lookup finding what the
 * tables hold. Aborts (FUZZ_CHECK) otherwise. */
void fuzz_check_chunk(const struct fr_chunk *c, const struct fr_chunk_header *h);

#endif
