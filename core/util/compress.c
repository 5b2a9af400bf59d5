/* zstd frames for ring chunks and gzip streams for pprof output.
 *
 * Decompression trusts nothing it is given: the zstd frame header must
 * declare exactly the expected size and the decoder must produce exactly
 * that many bytes; gzip input is bounded by FR_GUNZIP_MAX. Either failure
 * is -EBADMSG, never a crash. The gzip writer keeps the first error it
 * sees (sink or zlib) and returns it from every later call, so a caller may
 * check only the final fr_gzip_finish().
 */
#include "core/util/compress.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

/* Size of the gzip output buffer, and so of the pieces given to the sink. */
#define GZIP_OUT_SIZE (256 * 1024)

/* Largest output fr_gunzip() accepts: a bound against decompression bombs. */
#define FR_GUNZIP_MAX (1ULL << 30)

struct fr_zstd {
	ZSTD_CCtx *cctx;
	int level;
};

size_t fr_zstd_bound(size_t raw_len)
{
	return ZSTD_compressBound(raw_len);
}

struct fr_zstd *fr_zstd_new(int level)
{
	struct fr_zstd *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->cctx = ZSTD_createCCtx();
	if (!z->cctx) {
		free(z);
		return NULL;
	}
	if (level < 1)
		level = 1;
	if (level > 19)
		level = 19;
	z->level = level;
	return z;
}

void fr_zstd_free(struct fr_zstd *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	free(z);
}

ssize_t fr_zstd_compress(struct fr_zstd *z, void *dst, size_t cap, const void *src, size_t len)
{
	size_t ret;

	/* ZSTD_compressCCtx() writes the content size into the frame header,
	 * which fr_zstd_decompress() checks. */
	ret = ZSTD_compressCCtx(z->cctx, dst, cap, src, len, z->level);
	if (ZSTD_isError(ret))
		return ZSTD_getErrorCode(ret) == ZSTD_error_dstSize_tooSmall ? -ENOBUFS : -EIO;
	if (ret > SSIZE_MAX)
		return -EIO;
	return (ssize_t)ret;
}

ssize_t fr_zstd_decompress(void *dst, size_t raw_len, const void *src, size_t len)
{
	unsigned long long declared;
	size_t ret;

	if (raw_len > SSIZE_MAX || len < 4)
		return -EBADMSG;
	/* A data frame: a skippable frame would otherwise pass for an empty
	 * chunk. The magic number is little-endian on the wire. */
	if (((const unsigned char *)src)[0] != (ZSTD_MAGICNUMBER & 0xff) ||
	    ((const unsigned char *)src)[1] != (ZSTD_MAGICNUMBER >> 8 & 0xff) ||
	    ((const unsigned char *)src)[2] != (ZSTD_MAGICNUMBER >> 16 & 0xff) ||
	    ((const unsigned char *)src)[3] != (ZSTD_MAGICNUMBER >> 24 & 0xff))
		return -EBADMSG;
	/* Exactly one frame, and nothing after it. */
	ret = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(ret) || ret != len)
		return -EBADMSG;
	declared = ZSTD_getFrameContentSize(src, len);
	if (declared == ZSTD_CONTENTSIZE_UNKNOWN || declared == ZSTD_CONTENTSIZE_ERROR ||
	    declared != raw_len)
		return -EBADMSG;
	/* ZSTD_decompress() allocates a context per call; a stack of DCtx
	 * would be cheaper but this keeps the function trivially thread-safe
	 * and chunks are large enough that the setup cost does not show. */
	ret = ZSTD_decompress(dst, raw_len, src, len);
	if (ZSTD_isError(ret) || ret != raw_len)
		return -EBADMSG;
	return (ssize_t)raw_len;
}

struct fr_gzip {
	z_stream zs;
	fr_write_fn sink;
	void *arg;
	int error;
	int finished;
	unsigned char out[GZIP_OUT_SIZE];
};

struct fr_gzip *fr_gzip_new(int level, fr_write_fn sink, void *arg)
{
	struct fr_gzip *g = malloc(sizeof(*g));

	if (!g)
		return NULL;
	memset(&g->zs, 0, sizeof(g->zs));
	g->sink = sink;
	g->arg = arg;
	g->error = 0;
	g->finished = 0;
	if (level < 1)
		level = 1;
	if (level > 9)
		level = 9;
	/* 15 + 16: largest window, gzip header and trailer instead of zlib's. */
	if (deflateInit2(&g->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return NULL;
	}
	g->zs.next_out = g->out;
	g->zs.avail_out = sizeof(g->out);
	return g;
}

/* Hands the buffered output to the sink and resets the buffer. */
static int drain(struct fr_gzip *g)
{
	size_t n = sizeof(g->out) - g->zs.avail_out;
	int ret;

	if (n > 0) {
		ret = g->sink(g->arg, g->out, n);
		if (ret < 0) {
			g->error = ret;
			return ret;
		}
	}
	g->zs.next_out = g->out;
	g->zs.avail_out = sizeof(g->out);
	return 0;
}

/* Runs deflate over the pending input with `flush` (Z_NO_FLUSH or
 * Z_FINISH), handing every full output buffer to the sink. Returns 0 or the
 * sticky error. */
static int pump(struct fr_gzip *g, int flush)
{
	int zret;

	for (;;) {
		zret = deflate(&g->zs, flush);
		if (zret == Z_STREAM_ERROR)
			return g->error = -EIO;
		if (zret == Z_STREAM_END)
			return drain(g);
		if (g->zs.avail_out == 0) {
			if (drain(g) < 0)
				return g->error;
			continue;
		}
		/* Room left over means deflate took all the input. */
		if (flush == Z_NO_FLUSH)
			return 0;
		/* Finishing with room to spare must make progress. */
		if (zret == Z_BUF_ERROR)
			return g->error = -EIO;
	}
}

int fr_gzip_write(struct fr_gzip *g, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (g->error)
		return g->error;
	if (g->finished)
		return -EINVAL;
	while (len > 0) {
		/* avail_in is a uInt; feed huge buffers in slices. */
		uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;

		g->zs.next_in = (unsigned char *)p;
		g->zs.avail_in = n;
		if (pump(g, Z_NO_FLUSH) < 0)
			return g->error;
		p += n;
		len -= n;
	}
	return 0;
}

int fr_gzip_finish(struct fr_gzip *g)
{
	if (g->error)
		return g->error;
	if (g->finished)
		return 0;
	g->zs.next_in = NULL;
	g->zs.avail_in = 0;
	if (pump(g, Z_FINISH) < 0)
		return g->error;
	g->finished = 1;
	return 0;
}

void fr_gzip_free(struct fr_gzip *g)
{
	if (!g)
		return;
	deflateEnd(&g->zs);
	free(g);
}

/* Doubles the output buffer of fr_gunzip up to FR_GUNZIP_MAX. Returns 0,
 * -EBADMSG when the output would pass it, or -ENOMEM. */
static int gunzip_grow(unsigned char **buf, size_t *cap)
{
	size_t c = *cap > FR_GUNZIP_MAX / 2 ? FR_GUNZIP_MAX : *cap * 2;
	unsigned char *grown;

	if (*cap >= FR_GUNZIP_MAX)
		return -EBADMSG;
	grown = realloc(*buf, c);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	*cap = c;
	return 0;
}

int fr_gunzip(const void *in, size_t len, void **out, size_t *out_len)
{
	const unsigned char *p = in, *end = p + len;
	unsigned char *buf = NULL;
	size_t cap, used = 0;
	z_stream zs;
	int zret, ret;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 32: the largest window, gzip or zlib header detected. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	/* Profiles compress about 4:1; start there to avoid most regrowth. */
	cap = len < FR_GUNZIP_MAX / 4 ? len * 4 : FR_GUNZIP_MAX;
	if (cap < 16384)
		cap = 16384;
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto err;
	}
	for (;;) {
		size_t in_left = (size_t)(end - p);
		size_t out_left = cap - used;
		uInt in_n = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
		uInt out_n = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;

		zs.next_in = (unsigned char *)p;
		zs.avail_in = in_n;
		zs.next_out = buf + used;
		zs.avail_out = out_n;
		zret = inflate(&zs, Z_NO_FLUSH);
		p += in_n - zs.avail_in;
		used += out_n - zs.avail_out;
		if (zret == Z_STREAM_END) {
			if (p == end)
				break;
			/* Concatenated members are one gzip file (RFC 1952);
			 * anything else after the first is rejected by
			 * the header check of the next. */
			if (inflateReset(&zs) != Z_OK) {
				ret = -EBADMSG;
				goto err;
			}
			continue;
		}
		if (zret == Z_MEM_ERROR) {
			ret = -ENOMEM;
			goto err;
		}
		if (zret != Z_OK && zret != Z_BUF_ERROR) {
			ret = -EBADMSG;
			goto err;
		}
		if (used == cap) {
			ret = gunzip_grow(&buf, &cap);
			if (ret < 0)
				goto err;
			continue;
		}
		/* Room to write, all input given, and no progress: the input
		 * ends before the stream does. */
		if (zret == Z_BUF_ERROR && p == end) {
			ret = -EBADMSG;
			goto err;
		}
	}
	inflateEnd(&zs);
	*out = buf;
	*out_len = used;
	return 0;
err:
	inflateEnd(&zs);
	free(buf);
	return ret;
}

uint32_t fr_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* zlib takes a uInt length. */
	while (len > 0) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}
