/* CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78).
 *
 * Two implementations give bit-identical results: the SSE4.2 crc32
 * instruction, chosen at run time when the CPU has it, and a portable
 * slicing-by-8 table that processes eight bytes per step. The value passed
 * in and returned is the finished crc (pre- and post-inverted), so calls
 * chain: crc(crc(0, a), b) == crc(0, a || b).
 */
#include "core/store/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82f63b78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = crc_table[0][i];

		for (int t = 1; t < 8; t++) {
			c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_table[t][i] = c;
		}
	}
}

static uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

uint32_t fr_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;

	pthread_once(&crc_table_once, crc_table_init);

	/* Align to 8 bytes so the wide loads below are aligned. */
	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t v = load_le64(p) ^ c;

		c = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
		    crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
		    crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
		    crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][(v >> 56) & 0xff];
		p += 8;
		len -= 8;
	}
	while (len > 0) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	return ~c;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
							    size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		uint32_t v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32si((uint32_t)c, v);
		p += 4;
		len -= 4;
	}
	while (len > 0) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	return ~(uint32_t)c;
}

static int have_hw = -1;

uint32_t fr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	int hw = __atomic_load_n(&have_hw, __ATOMIC_RELAXED);

	if (hw < 0) {
		__builtin_cpu_init();
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&have_hw, hw, __ATOMIC_RELAXED);
	}
	if (hw)
		return crc32c_hw(crc, buf, len);
	return fr_crc32c_sw(crc, buf, len);
}

#else

uint32_t fr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return fr_crc32c_sw(crc, buf, len);
}

#endif
