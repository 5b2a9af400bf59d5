/* The allocation ring's record parser alone (recorder/sampling/alloc_rec.c):
 * well-formed records of each kind, then every way a process could lie in
 * one: another position, lengths not multiples of 8, too short for the
 * kind, past the room, labels and stack past the end or over their
 * bounds, a labels record claiming more than was copied, sizes and means
 * out of bounds. */
#include "recorder/sampling/alloc_rec.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/check.h"

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static _Alignas(8) uint8_t buf[FR_ALLOC_REC_MAX + 64];

/* A sample at `pos` with `labels` bytes of a labels record (its size
 * field consistent) and `stack` bytes of stack; returns its length. */
static uint32_t make_alloc(uint64_t pos, uint32_t labels, uint32_t stack)
{
	struct fr_alloc_rec_alloc_abi a = {
		.h = {.pos = pos, .kind = FR_ALLOC_REC_ALLOC},
		.time_ns = 1000,
		.tid = 7,
		.addr = 0x1000,
		.size = 64,
		.mean = 512 << 10,
		.ip = 0x401000,
		.sp = 0x7ff000,
		.bp = 0x7ff100,
		.labels_len = labels,
		.stack_len = stack,
	};
	uint32_t len = (uint32_t)sizeof(a) + ((labels + 7) & ~7u) + stack;

	len = (len + 15) & ~15u;
	a.h.len = len;
	memset(buf, 0xab, sizeof(buf));
	memcpy(buf, &a, sizeof(a));
	if (labels) {
		uint16_t size = (uint16_t)(labels - 8);

		memcpy(buf + sizeof(a) + 6, &size, sizeof(size));
	}
	return len;
}

static void good(void)
{
	struct fr_alloc_rec r;
	_Alignas(8) uint8_t fb[48] = {0};
	struct fr_alloc_rec_free_abi f = {.h = {.pos = 32, .kind = FR_ALLOC_REC_FREE, .len = 48},
					  .time_ns = 5,
					  .tid = 9,
					  .addr = 0x2000};
	struct fr_alloc_rec_abi pad = {.pos = 4096, .kind = FR_ALLOC_REC_PAD, .len = 65536};
	uint32_t len = make_alloc(64, 24, 1000);

	CHECK(fr_alloc_rec_len(buf, 64, 1 << 20) == len, "length of a sample");
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == 0, "a sample parses");
	CHECK(r.kind == FR_ALLOC_REC_ALLOC && r.size == 64 && r.mean == 512 << 10 && r.tid == 7 &&
		      r.addr == 0x1000 && r.ip == 0x401000,
	      "the sample's fields");
	CHECK(r.labels == buf + sizeof(struct fr_alloc_rec_alloc_abi) && r.labels_len == 24,
	      "its labels");
	CHECK(r.stack == r.labels + 24 && r.stack_len == 1000, "its stack after the labels");
	len = make_alloc(64, 0, 0);
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == 0 && !r.labels && r.stack_len == 0,
	      "a sample without labels or stack");
	memcpy(fb, &f, sizeof(f));
	CHECK(fr_alloc_rec_len(fb, 32, 48) == 48, "a free fits its room exactly");
	CHECK(fr_alloc_rec_len(fb, 32, 40) == -EBADMSG, "a free past its room");
	CHECK(fr_alloc_rec_parse(fb, 48, 32, &r) == 0 && r.kind == FR_ALLOC_REC_FREE &&
		      r.addr == 0x2000 && r.tid == 9 && r.time_ns == 5,
	      "a free");
	/* A PAD record may be as long as the room left, beyond a record's
	 * bound. */
	CHECK(fr_alloc_rec_len(&pad, 4096, 65536) == 65536, "a pad to the end");
	CHECK(fr_alloc_rec_parse(&pad, sizeof(pad), 4096, &r) == -EBADMSG,
	      "a pad parsed from a short copy is not its length");
}

static void lengths(void)
{
	struct fr_alloc_rec_abi h = {.pos = 8, .kind = FR_ALLOC_REC_ALLOC, .len = 64};

	CHECK(fr_alloc_rec_len(&h, 16, 4096) == 0, "another position: not complete");
	h.len = 0;
	CHECK(fr_alloc_rec_len(&h, 8, 4096) == 0, "length 0: not written yet");
	h.len = 60;
	CHECK(fr_alloc_rec_len(&h, 8, 4096) == -EBADMSG, "not a multiple of 8");
	h.len = 8;
	CHECK(fr_alloc_rec_len(&h, 8, 4096) == -EBADMSG, "shorter than a header");
	h.len = 4104;
	CHECK(fr_alloc_rec_len(&h, 8, 4096) == -EBADMSG, "past the room");
	h.len = (uint32_t)FR_ALLOC_REC_MAX + 8;
	CHECK(fr_alloc_rec_len(&h, 8, 1 << 20) == -EBADMSG, "over the largest record");
	h.len = 0xfffffff8u;
	CHECK(fr_alloc_rec_len(&h, 8, UINT64_MAX) == -EBADMSG, "a huge length");
}

static void lies(void)
{
	struct fr_alloc_rec r;
	struct fr_alloc_rec_alloc_abi *a = (void *)buf;
	uint32_t len;

	len = make_alloc(64, 24, 1000);
	CHECK(fr_alloc_rec_parse(buf, len, 72, &r) == -EBADMSG, "the copy's position changed");
	CHECK(fr_alloc_rec_parse(buf, len - 16, 64, &r) == -EBADMSG, "the copy's length changed");
	a->h.kind = 9;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "unknown kind");
	a->h.kind = FR_ALLOC_REC_ALLOC;
	a->stack_len = 2000;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "stack past the end");
	a->stack_len = 1000;
	a->labels_len = FR_BPF_LABELS_FR_MAX + 8;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "labels over their bound");
	a->labels_len = 4;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "labels shorter than a header");
	a->labels_len = 24;
	memcpy(buf + sizeof(*a) + 6, &(uint16_t){17}, 2);
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "labels claiming more pairs");
	memcpy(buf + sizeof(*a) + 6, &(uint16_t){16}, 2);
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == 0, "back to well-formed");
	a->size = 0;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "size 0");
	a->size = FR_ALLOC_SIZE_MAX + 1;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "size over the bound");
	a->size = 64;
	a->mean = 0;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "mean 0");
	a->mean = (uint64_t)FR_ALLOC_MEAN_MAX + 1;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "mean over the bound");
	a->mean = 4096;
	a->time_ns = -1;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "time not positive");
	a->time_ns = 1;
	a->stack_len = FR_ALLOC_STACK_COPY_MAX + 8;
	CHECK(fr_alloc_rec_parse(buf, len, 64, &r) == -EBADMSG, "stack over its bound");
	CHECK(fr_alloc_rec_parse(buf, 24, 64, &r) == -EBADMSG, "a sample too short");
	a->h.kind = FR_ALLOC_REC_FREE;
	a->h.len = 24;
	CHECK(fr_alloc_rec_parse(buf, 24, 64, &r) == -EBADMSG, "a free too short");
}

int main(void)
{
	good();
	lengths();
	lies();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures != 0;
}
