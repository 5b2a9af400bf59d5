/* The records of a process's allocation ring (lib/flightrec/alloc_abi.h),
 * bytes to a typed record. No process state: the bytes are another user's
 * (a copy taken out of the shared mapping), every length is checked
 * against the copy, so tests/fuzz/fuzz_alloc.c can feed it anything.
 */
#ifndef FR_RECORDER_ALLOC_REC_H
#define FR_RECORDER_ALLOC_REC_H

#include <stddef.h>
#include <stdint.h>

#include "flightrec/alloc_abi.h"
#include "recorder/bpf/labels_bpf.h"

/* The largest record the recorder takes: a sample with a labels record
 * (FR_BPF_LABELS_FR_MAX bytes, what the labels' checker reads) and the
 * largest stack copy. A longer record is bad. */
#define FR_ALLOC_REC_MAX                                                               \
	(sizeof(struct fr_alloc_rec_alloc_abi) + ((FR_BPF_LABELS_FR_MAX + 7u) & ~7u) + \
	 FR_ALLOC_STACK_COPY_MAX + 8u)
/* Sampled sizes above this are not believed (no allocation is that big). */
#define FR_ALLOC_SIZE_MAX (1ull << 48)

struct fr_alloc_rec {
	uint32_t kind; /* FR_ALLOC_REC_PAD, _ALLOC or _FREE */
	uint32_t len;  /* bytes of the record in the ring */
	int64_t time_ns;
	uint32_t tid; /* as the process says: to be checked */
	uint64_t addr;
	/* FR_ALLOC_REC_ALLOC only. */
	uint64_t size, mean;
	uint64_t ip, sp, bp;
	const uint8_t *labels; /* into the copy; NULL: none */
	uint32_t labels_len;
	const uint8_t *stack; /* into the copy */
	uint32_t stack_len;
};

/* The length of the record whose header (its first 16 bytes, `head`) is
 * at ring position `pos`, `room` bytes before the end of the data: 0 when
 * the record is not complete yet (its pos is another, or its length 0),
 * the length to copy
 * (a multiple of 8, at least the header, within room, and within
 * FR_ALLOC_REC_MAX but for a PAD record), or -EBADMSG. */
int64_t fr_alloc_rec_len(const void *head, uint64_t pos, uint64_t room);

/* Parses the copy `buf` of `len` bytes (the length fr_alloc_rec_len gave)
 * of the record at ring position `pos` into *out, whose pointers point
 * into buf. Returns 0, or -EBADMSG: the copy changed under the reader
 * (another pos or len), an unknown kind, a record too short for its
 * kind, labels or stack past its end, a labels record longer than
 * FR_BPF_LABELS_FR_MAX or with a size it does not hold, a stack copy over
 * FR_ALLOC_STACK_COPY_MAX, a size of 0 or over FR_ALLOC_SIZE_MAX, a mean
 * outside FR_ALLOC_MEAN_MIN..FR_ALLOC_MEAN_MAX, a time not positive. */
int fr_alloc_rec_parse(const void *buf, size_t len, uint64_t pos, struct fr_alloc_rec *out);

#endif
