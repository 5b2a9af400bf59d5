/* CRC-32C: known vectors (RFC 3720 B.4), chaining, and the instruction
 * path against the table path on random buffers of every alignment. */
#include "core/store/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

static void check_vector(const void *buf, size_t len, uint32_t want, const char *name)
{
	uint32_t hw = fr_crc32c(0, buf, len);
	uint32_t sw = fr_crc32c_sw(0, buf, len);

	CHECK(hw == want, "%s: fr_crc32c = %08x, want %08x", name, hw, want);
	CHECK(sw == want, "%s: fr_crc32c_sw = %08x, want %08x", name, sw, want);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

int main(void)
{
	unsigned char buf[32];

	check_vector("123456789", 9, 0xe3069283u, "123456789");
	check_vector("", 0, 0, "empty");
	memset(buf, 0, sizeof(buf));
	check_vector(buf, 32, 0x8a9136aau, "32 zeroes");
	memset(buf, 0xff, sizeof(buf));
	check_vector(buf, 32, 0x62a8ab43u, "32 x 0xff");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	check_vector(buf, 32, 0x46dd794eu, "ascending");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	check_vector(buf, 32, 0x113fdb5cu, "descending");

	/* Chaining at every split point. */
	for (size_t k = 0; k <= 9; k++) {
		uint32_t c = fr_crc32c(fr_crc32c(0, "123456789", k), &"123456789"[k], 9 - k);
		uint32_t s = fr_crc32c_sw(fr_crc32c_sw(0, "123456789", k), &"123456789"[k], 9 - k);

		CHECK(c == 0xe3069283u, "chained at %zu: %08x", k, c);
		CHECK(s == 0xe3069283u, "chained (sw) at %zu: %08x", k, s);
	}

	/* Random buffers, lengths and alignments: both paths agree, and
	 * chaining across a random split matches one pass. */
	enum { BIG = 70000 };
	unsigned char *big = malloc(BIG + 16);

	if (!big) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < BIG + 16; i++)
		big[i] = (unsigned char)rng();
	for (int iter = 0; iter < 2000; iter++) {
		size_t off = rng() % 16;
		size_t len = iter < 1000 ? rng() % 300 : rng() % BIG;
		uint32_t seed = (uint32_t)rng();
		uint32_t a = fr_crc32c(seed, big + off, len);
		uint32_t b = fr_crc32c_sw(seed, big + off, len);
		size_t cut = len ? rng() % (len + 1) : 0;
		uint32_t c = fr_crc32c(fr_crc32c(seed, big + off, cut), big + off + cut, len - cut);

		CHECK(a == b, "hw %08x != sw %08x (off %zu len %zu)", a, b, off, len);
		CHECK(a == c, "chained %08x != %08x (len %zu cut %zu)", c, a, len, cut);
		if (failures > 10)
			break;
	}
	/* A single flipped bit changes the crc. */
	uint32_t base = fr_crc32c(0, big, 4096);

	for (int bit = 0; bit < 4096 * 8; bit += 97) {
		big[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		CHECK(fr_crc32c(0, big, 4096) != base, "bit %d flip undetected", bit);
		big[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	free(big);

	if (failures) {
		fprintf(stderr, "test_crc32c: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
