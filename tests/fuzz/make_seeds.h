/* Shared by the files of make_seeds (make_seeds.c, make_seeds_chunk.c,
 * make_seeds_ring.c, make_seeds_ipc.c): one pseudo-random generator whose
 * sequence every seed kind draws from in turn, so the corpora stay
 * byte-identical only as long as main() calls the kinds in the same order;
 * writing seed files; and the typical chunk that ring seeds are made of. */
#ifndef FR_TESTS_FUZZ_MAKE_SEEDS_H
#define FR_TESTS_FUZZ_MAKE_SEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util/time.h"

#define T0 1700000000000000000ll
#define MS 1000000ll
#define SEC FR_NS_PER_S

/* The next number of the fixed xorshift sequence. */
uint64_t rng(void);

/* Prints "make_seeds: what: strerror(err)" and exits with 1. */
void die(const char *what, int err);

/* Removes the seed-* files of one target directory, creating it if needed. */
void clean_dir(const char *target);

/* Writes CORPUS/target/seed-name: the mode byte (when >= 0), then data. */
void write_seed(const char *target, const char *name, int mode, const void *data, size_t len);

/* A typical encoded chunk of `nsamples` samples at time t (malloc'd, its
 * length in *len): a few processes, shared stack roots, kernel frames on
 * some stacks; instruction pointers drawn from rng() when random_ips. */
void *chunk_typical(int64_t t, uint32_t nsamples, bool random_ips, size_t *len);

void make_chunk_seeds(void);
void make_ring_seeds(void);
void make_ipc_seeds(void);
void make_pprof_seeds(void);
void make_labelsets_seeds(void);
void make_gopclntab_seeds(void);
void make_goroutines_seeds(void);
void make_python_seeds(void);
void make_pycodes_seeds(void);

#endif
