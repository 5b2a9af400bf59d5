/* The only file that talks to zstd and zlib.
 *
 * zstd compresses ring chunks (one frame per chunk); zlib writes the gzip
 * container of pprof profiles as a stream, so a large profile is never held
 * in memory in full.
 */
#ifndef FR_CORE_COMPRESS_H
#define FR_CORE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Upper bound of the compressed size of `raw_len` bytes. */
size_t fr_zstd_bound(size_t raw_len);

struct fr_zstd;

/* Creates a compression context at `level` (1..19; 3 is a good default).
 * Returns NULL on allocation failure. Free with fr_zstd_free(). */
struct fr_zstd *fr_zstd_new(int level);

/* Frees a context; accepts NULL. */
void fr_zstd_free(struct fr_zstd *z);

/* Compresses `src` into `dst` as one zstd frame. Returns the compressed
 * length, -ENOBUFS when `cap` is too small, -EIO on another zstd error. */
ssize_t fr_zstd_compress(struct fr_zstd *z, void *dst, size_t cap, const void *src, size_t len);

/* Decompresses one zstd frame whose decompressed size must be exactly
 * `raw_len` into `dst` (capacity >= raw_len). Returns raw_len, or -EBADMSG
 * when the frame is corrupt or its size differs. Thread-safe. */
ssize_t fr_zstd_decompress(void *dst, size_t raw_len, const void *src, size_t len);

/* Output callback of the gzip stream: consume `len` bytes, return 0 or
 * -errno (which aborts the stream and is returned by later calls). */
typedef int (*fr_write_fn)(void *arg, const void *buf, size_t len);

struct fr_gzip;

/* Starts a gzip stream at `level` (1..9; 6 is zlib's default) that hands
 * compressed output to `sink` in pieces of up to 256 KiB. Returns NULL on
 * allocation failure. */
struct fr_gzip *fr_gzip_new(int level, fr_write_fn sink, void *arg);

/* Compresses `len` bytes into the stream. Returns 0 or the first -errno the
 * sink (or zlib, as -EIO) reported; after an error every call returns it. */
int fr_gzip_write(struct fr_gzip *g, const void *buf, size_t len);

/* Flushes the stream and writes the gzip trailer. Returns 0 or -errno. */
int fr_gzip_finish(struct fr_gzip *g);

/* Frees a stream, finished or not; accepts NULL. */
void fr_gzip_free(struct fr_gzip *g);

/* Decompresses a whole gzip buffer (used by tests and by tools reading
 * profiles). On success returns 0 and a malloc'd buffer the caller frees;
 * -EBADMSG when the input is not valid gzip, -ENOMEM. */
int fr_gunzip(const void *in, size_t len, void **out, size_t *out_len);

/* The CRC-32 (ISO-HDLC, zlib's and .gnu_debuglink's) of `len` bytes,
 * continuing `crc` (0 to start). */
uint32_t fr_crc32(uint32_t crc, const void *buf, size_t len);

#endif
