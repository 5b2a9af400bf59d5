/* CRC-32C (Castagnoli), as used by iSCSI, ext4 and btrfs, for chunk and
 * superblock checksums. Uses the SSE4.2 crc32 instruction when the CPU has
 * it, a slicing-by-8 table otherwise; both give identical results. */
#ifndef FR_CORE_CRC32C_H
#define FR_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over `len` bytes and returns the new value.
 * fr_crc32c(fr_crc32c(0, a, n), b, m) == fr_crc32c(0, a||b, n+m).
 * fr_crc32c(0, "123456789", 9) == 0xe3069283. */
uint32_t fr_crc32c(uint32_t crc, const void *buf, size_t len);

/* The same function computed with the portable table only, whatever the
 * CPU supports (for tests that compare the two paths). */
uint32_t fr_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
