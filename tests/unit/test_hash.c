/* The tree's hashes (core/util/hash.h) against published FNV-1a vectors,
 * so a key hashed before the copies became one still hashes the same:
 * the export batch ids and the raw event ids are stored. */
#include "core/util/hash.h"

#include <string.h>

#include "tests/unit/check.h"

static uint64_t fnv64(const char *s)
{
	return fr_fnv1a(FR_FNV_OFFSET, s, strlen(s));
}

static uint32_t fnv32(const char *s)
{
	return fr_fnv1a_32(FR_FNV32_OFFSET, s, strlen(s));
}

static void test_fnv_vectors(void)
{
	CHECK(fnv64("") == 0xcbf29ce484222325ull, "fnv64 empty");
	CHECK(fnv64("a") == 0xaf63dc4c8601ec8cull, "fnv64(a) %llx", (unsigned long long)fnv64("a"));
	CHECK(fnv64("foobar") == 0x85944171f73967e8ull, "fnv64(foobar) %llx",
	      (unsigned long long)fnv64("foobar"));
	CHECK(fnv32("") == 0x811c9dc5u, "fnv32 empty");
	CHECK(fnv32("a") == 0xe40c292cu, "fnv32(a) %x", fnv32("a"));
	CHECK(fnv32("foobar") == 0xbf9cf968u, "fnv32(foobar) %x", fnv32("foobar"));
}

/* Hashing in two parts is hashing the whole; a step is one byte. */
static void test_fnv_parts(void)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, "foo", 3);

	CHECK(fr_fnv1a(h, "bar", 3) == fnv64("foobar"), "continued hash differs");
	h = FR_FNV_OFFSET;
	for (const char *s = "foobar"; *s; s++)
		h = fr_fnv1a_step(h, (unsigned char)*s);
	CHECK(h == fnv64("foobar"), "byte steps differ from the whole");
	CHECK(fr_fnv1a_step(FR_FNV_OFFSET, 0x100) != fr_fnv1a_step(FR_FNV_OFFSET, 0),
	      "a wide separator hashes as a zero byte");
}

/* splitmix64's finalizer: 0 stays 0, known value for 1, and a bit flip
 * changes about half the output bits. */
static void test_mix64(void)
{
	int flips = 0;

	CHECK(fr_mix64(0) == 0, "mix64(0) %llx", (unsigned long long)fr_mix64(0));
	CHECK(fr_mix64(1) == 0x5692161d100b05e5ull, "mix64(1) %llx",
	      (unsigned long long)fr_mix64(1));
	for (int b = 0; b < 64; b++)
		flips += __builtin_popcountll(fr_mix64(12345) ^ fr_mix64(12345 ^ (1ull << b)));
	CHECK(flips > 64 * 24 && flips < 64 * 40, "avalanche: %d bits of %d flip", flips, 64 * 64);
	CHECK(fr_hash_u32(0) == 0 && fr_hash_u32(1) != 1, "hash_u32");
}

int main(void)
{
	test_fnv_vectors();
	test_fnv_parts();
	test_mix64();
	return failures != 0;
}
