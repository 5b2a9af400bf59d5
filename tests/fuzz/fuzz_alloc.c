/* Fuzz target for the allocation ring's records (recorder/sampling/alloc_rec.h):
 * the bytes a process with libflightrec writes into the ring the recorder
 * maps, which it controls entirely.
 *
 * Input: the ring's data, read as the recorder's drain reads it: from
 * position 0, each record's length from its header at the position, the
 * record copied out and parsed, then the next; a record not complete or
 * malformed ends the walk (the drain goes on at head).
 *
 * Promises: no crash, no memory error; a length is a multiple of 8 of at
 * least a header, within the room to the end and, but for a PAD record,
 * within FR_ALLOC_REC_MAX; a parsed sample's labels and stack lie inside
 * its copy, its labels record at most FR_BPF_LABELS_FR_MAX bytes holding
 * the pairs it claims, its stack at most FR_ALLOC_STACK_COPY_MAX, its
 * size and mean within bounds.
 */
#include "tests/fuzz/fuzz.h"

#include <string.h>

#include "flightrec/labels_abi.h"
#include "recorder/sampling/alloc_rec.h"

static _Alignas(8) uint8_t copy[FR_ALLOC_REC_MAX];

static void check_alloc(const struct fr_alloc_rec *r, size_t len)
{
	const uint8_t *end = copy + len;

	FUZZ_CHECK(r->stack >= copy && r->stack + r->stack_len <= end, "stack inside");
	FUZZ_CHECK(r->stack_len <= FR_ALLOC_STACK_COPY_MAX, "stack bound");
	FUZZ_CHECK(r->size > 0 && r->size <= FR_ALLOC_SIZE_MAX, "size %llu",
		   (unsigned long long)r->size);
	FUZZ_CHECK(r->mean >= FR_ALLOC_MEAN_MIN && r->mean <= FR_ALLOC_MEAN_MAX, "mean");
	if (r->labels) {
		struct fr_labels_record_abi h;

		FUZZ_CHECK(r->labels >= copy && r->labels + r->labels_len <= end, "labels inside");
		FUZZ_CHECK(r->labels_len <= FR_BPF_LABELS_FR_MAX, "labels bound");
		memcpy(&h, r->labels, 8);
		FUZZ_CHECK((size_t)h.size + 8 <= r->labels_len, "labels' pairs inside");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t pos = 0;
	/* The data of a ring: what a walk from 0 may read, 8-aligned. */
	size = size & ~(size_t)7;
	while (pos + 16 <= size) {
		struct fr_alloc_rec r;
		int64_t len = fr_alloc_rec_len(data + pos, pos, size - pos);

		if (len <= 0)
			break;
		FUZZ_CHECK(len % 8 == 0 && len >= 16 && (uint64_t)len <= size - pos, "length %lld",
			   (long long)len);
		if ((uint64_t)len > sizeof(copy)) {
			FUZZ_CHECK(((const struct fr_alloc_rec_abi *)(const void *)(data + pos))
						   ->kind == FR_ALLOC_REC_PAD,
				   "only a pad is longer than a record");
			pos += (uint64_t)len;
			continue;
		}
		memcpy(copy, data + pos, (size_t)len);
		if (fr_alloc_rec_parse(copy, (size_t)len, pos, &r) == 0) {
			FUZZ_CHECK(r.len == len, "parsed length");
			if (r.kind == FR_ALLOC_REC_ALLOC)
				check_alloc(&r, (size_t)len);
			else
				FUZZ_CHECK(r.kind == FR_ALLOC_REC_FREE ||
						   r.kind == FR_ALLOC_REC_PAD,
					   "kind %u", r.kind);
		}
		pos += (uint64_t)len;
	}
	return 0;
}
