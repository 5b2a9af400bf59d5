/*
 * Little-endian fixed-width integers and base-128 varints: the two ways
 * every on-disk and on-wire format of the project spells a number (chunk
 * headers and bodies, the ring's superblocks and journal, pprof).
 *
 * One copy, so that a format's reader and its writer, and the fuzzers that
 * forge their input, cannot disagree on a byte.
 */
#ifndef FR_CORE_LE_H
#define FR_CORE_LE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

static inline void fr_put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void fr_put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void fr_put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t fr_get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t fr_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fr_get_le64(const unsigned char *p)
{
	return (uint64_t)fr_get_le32(p) | (uint64_t)fr_get_le32(p + 4) << 32;
}

/* Bytes the varint of `v` takes: 1 to 10. */
static inline unsigned fr_varint_len(uint64_t v)
{
	return 1 + (63 - (unsigned)__builtin_clzll(v | 1)) / 7;
}

/* Writes the varint of `v` at `p` (room for fr_varint_len(v) bytes);
 * returns the byte after it. */
static inline unsigned char *fr_varint_put(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/*
 * Reads a varint from *p, never past `end`, and advances *p. -EBADMSG if
 * it runs off the end or is longer than ten bytes, or if its tenth byte
 * holds more than bit 63 (so no two spellings overflow to one value).
 */
static inline int fr_varint_get(const unsigned char **p, const unsigned char *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -EBADMSG;
		unsigned char c = *(*p)++;

		if (shift == 63 && c > 1)
			return -EBADMSG;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* Signed values as varints: small magnitudes of either sign stay short. */
static inline uint64_t fr_zigzag(int64_t v)
{
	uint64_t u = (uint64_t)v;

	return (u << 1) ^ (0 - (u >> 63));
}

static inline int64_t fr_unzigzag(uint64_t u)
{
	return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

#endif
