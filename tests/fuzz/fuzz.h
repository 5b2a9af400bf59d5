/* Shared by the fuzz targets, the replay driver and the seed generator.
 *
 * Each target defines LLVMFuzzerTestOneInput(). Built with
 * -fsanitize=fuzzer it runs under libFuzzer; linked with replay.c it runs
 * over a corpus directory, which is how CI exercises it. A target signals
 * a bug by crashing: sanitizer reports, or FUZZ_CHECK() failing on a
 * property the code under test promises (a decoded chunk whose ids point
 * outside its tables, a ring whose index is out of order, ...).
 */
#ifndef FR_TESTS_FUZZ_H
#define FR_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/util/le.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise is a crash, so that libFuzzer records the input. */
#define FUZZ_CHECK(cond, ...)                                                                    \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                     \
			abort();                                                                 \
		}                                                                                \
	} while (0)

/* Chunk header offsets (core/store/chunk.h, ON-DISK LAYOUT). */
#define FUZZ_CHUNK_OFF_VERSION 4
#define FUZZ_CHUNK_OFF_HEADER_LEN 6
#define FUZZ_CHUNK_OFF_SEQ 8
#define FUZZ_CHUNK_OFF_FIRST_NS 16
#define FUZZ_CHUNK_OFF_LAST_NS 24
#define FUZZ_CHUNK_OFF_NSAMPLES 32
#define FUZZ_CHUNK_OFF_RAW_LEN 36
#define FUZZ_CHUNK_OFF_COMP_LEN 40
#define FUZZ_CHUNK_OFF_FLAGS 44
#define FUZZ_CHUNK_OFF_CLOCK_OFFSET 48
#define FUZZ_CHUNK_OFF_PAYLOAD_CRC 56
#define FUZZ_CHUNK_OFF_HEADER_CRC 60

/* Superblock offsets (core/store/ring.h, FILE LAYOUT). */
#define FUZZ_SB_OFF_VERSION 16
#define FUZZ_SB_OFF_SB_LEN 20
#define FUZZ_SB_OFF_FILE_SIZE 24
#define FUZZ_SB_OFF_SEGMENT_SIZE 32
#define FUZZ_SB_OFF_NSEGMENTS 40
#define FUZZ_SB_OFF_CHUNK_VERSION 44
#define FUZZ_SB_OFF_CREATED_NS 48
#define FUZZ_SB_OFF_RING_ID 56
#define FUZZ_SB_OFF_JOURNAL 72 /* version 2 */
#define FUZZ_SB_OFF_CRC 80     /* version 2; version 1 has it at 72 */
#define FUZZ_SB_OFF_CRC_V1 72

/* Input modes of fuzz_chunk: the first byte, modulo FUZZ_CHUNK_MODES. */
enum {
	FUZZ_CHUNK_AS_IS = 0,	/* the rest is an encoded chunk, used unchanged */
	FUZZ_CHUNK_FIX_CRC = 1, /* the rest is a chunk; comp_len and crcs are fixed */
	FUZZ_CHUNK_BLOCK = 2,	/* u32 nsamples, i64 first_ns, i64 last_ns, then a
				 * raw block that the target compresses and frames */
	FUZZ_CHUNK_BUILD = 3,	/* records fed to the chunk builder (below) */
	FUZZ_CHUNK_MODES = 4,
};
#define FUZZ_CHUNK_BLOCK_PREFIX 20

/* FUZZ_CHUNK_BUILD records, back to back, little-endian:
 *   counters: u8 0xff, u32 event, u64 lost, u64 throttled, u64 truncated
 *   sample:   u8 nr_frames (< 0xff), u8 nr_kernel, i64 time_ns, u32 pid,
 *             u32 tid, u32 cpu, u32 event, u64 weight, u32 rate_hz, then
 *             nr_frames u64 addresses, leaf first */
#define FUZZ_BUILD_COUNTERS 0xff
#define FUZZ_BUILD_COUNTERS_LEN (1 + 4 + 3 * 8)
#define FUZZ_BUILD_SAMPLE_LEN (2 + 8 + 4 * 4 + 8 + 4)

/* fuzz_ring: the first byte holds a layout (bits 0-1; 3 is SPLIT too), a
 * segment count for the built-in superblock (bits 2-3: 2 + value, 3 meaning
 * 2), whether chunk and superblock crcs are fixed up (bit 4) and whether
 * the built-in superblock has a journal of two segments' size before the
 * segments (bit 5; the journal is then the first region filled). */
enum {
	FUZZ_RING_FILE = 0,   /* the rest is the whole ring file */
	FUZZ_RING_LINEAR = 1, /* a valid superblock; the rest fills the regions in order */
	FUZZ_RING_SPLIT = 2,  /* a valid superblock; the rest is cut into one equal
			      * part per region (journal, segments), each at its
			      * region's start */
};
#define FUZZ_RING_LAYOUT(b) ((b)&3)
#define FUZZ_RING_NSEG(b) (((b) >> 2 & 3) == 3 ? 2u : 2u + ((b) >> 2 & 3))
#define FUZZ_RING_FIX_CRC 0x10
#define FUZZ_RING_JOURNAL 0x20
#define FUZZ_RING_SEGMENT (64 * 1024)

#endif
