/* A deterministic xorshift shared by the tests' fixture: every run sees the
 * same "random" data. Implemented in fixture_chunk.c. */
#ifndef FR_TESTS_RNG_H
#define FR_TESTS_RNG_H

#include <stdint.h>

uint64_t rng(void);
/* Restarts the sequence; a test program calls it once, before its tests. */
void rng_seed(uint64_t seed);

#endif
