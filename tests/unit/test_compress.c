/* zstd frames and gzip streams: round trips, and hostile input that must
 * come back as -EBADMSG rather than a crash. */
#include "core/util/compress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

/* Deterministic data that compresses, but not to nothing. */
static void fill(unsigned char *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (unsigned char)("flightrec sample stack "[x % 23] + (x >> 28 == 0));
	}
}

static void test_zstd(void)
{
	const size_t raw_len = 200000;
	unsigned char *raw = malloc(raw_len), *back = malloc(raw_len + 16);
	size_t cap = fr_zstd_bound(raw_len);
	unsigned char *frame = malloc(cap), *mangled = malloc(cap);
	struct fr_zstd *z = fr_zstd_new(3);
	ssize_t clen, ret;

	if (!raw || !back || !frame || !mangled || !z) {
		CHECK(0, "allocation");
		goto out;
	}
	fill(raw, raw_len, 1);

	clen = fr_zstd_compress(z, frame, cap, raw, raw_len);
	CHECK(clen > 0 && (size_t)clen < raw_len, "zstd compress returned %zd", clen);
	if (clen <= 0)
		goto out;
	ret = fr_zstd_decompress(back, raw_len, frame, (size_t)clen);
	CHECK(ret == (ssize_t)raw_len && memcmp(raw, back, raw_len) == 0,
	      "zstd round trip returned %zd", ret);

	/* The context is reused: a second, different frame. */
	fill(raw, raw_len, 2);
	clen = fr_zstd_compress(z, frame, cap, raw, raw_len);
	ret = clen > 0 ? fr_zstd_decompress(back, raw_len, frame, (size_t)clen) : clen;
	CHECK(ret == (ssize_t)raw_len && memcmp(raw, back, raw_len) == 0,
	      "zstd second round trip returned %zd", ret);

	/* Empty input is a valid frame of size zero. */
	ret = fr_zstd_compress(z, mangled, cap, raw, 0);
	CHECK(ret > 0, "zstd empty compress returned %zd", ret);
	if (ret > 0) {
		ret = fr_zstd_decompress(back, 0, mangled, (size_t)ret);
		CHECK(ret == 0, "zstd empty round trip returned %zd", ret);
	}

	CHECK(fr_zstd_compress(z, mangled, 8, raw, raw_len) == -ENOBUFS,
	      "zstd into a too small buffer is not -ENOBUFS");

	/* The expected size must match the frame exactly. */
	CHECK(fr_zstd_decompress(back, raw_len - 1, frame, (size_t)clen) == -EBADMSG,
	      "zstd with raw_len too small accepted");
	CHECK(fr_zstd_decompress(back, raw_len + 1, frame, (size_t)clen) == -EBADMSG,
	      "zstd with raw_len too large accepted");

	/* Truncated frames, at every length up to a few hundred bytes and
	 * then in larger steps. */
	for (size_t cut = 0; cut < (size_t)clen; cut += cut < 512 ? 1 : 97) {
		ret = fr_zstd_decompress(back, raw_len, frame, cut);
		CHECK(ret == -EBADMSG, "zstd truncated to %zu returned %zd", cut, ret);
	}

	/* Trailing bytes after the frame. */
	memcpy(mangled, frame, (size_t)clen);
	mangled[clen] = 0;
	CHECK(fr_zstd_decompress(back, raw_len, mangled, (size_t)clen + 1) == -EBADMSG,
	      "zstd with trailing garbage accepted");

	/* Corrupt single bytes everywhere: never a crash, and since the frame
	 * carries a checksum-free size check only, either -EBADMSG or
	 * exactly raw_len bytes. */
	for (ssize_t i = 0; i < clen; i += 1 + i / 64) {
		memcpy(mangled, frame, (size_t)clen);
		mangled[i] ^= 0x5a;
		ret = fr_zstd_decompress(back, raw_len, mangled, (size_t)clen);
		CHECK(ret == -EBADMSG || ret == (ssize_t)raw_len,
		      "zstd with byte %zd flipped returned %zd", i, ret);
	}
	/* A flipped magic number is always corrupt. */
	memcpy(mangled, frame, (size_t)clen);
	mangled[0] ^= 0xff;
	CHECK(fr_zstd_decompress(back, raw_len, mangled, (size_t)clen) == -EBADMSG,
	      "zstd with bad magic accepted");

	/* A skippable frame is not an empty chunk. */
	{
		static const unsigned char skippable[8] = {0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0};

		CHECK(fr_zstd_decompress(back, 0, skippable, sizeof(skippable)) == -EBADMSG,
		      "zstd skippable frame accepted as data");
	}

	/* Pure garbage. */
	fill(mangled, 4096, 99);
	CHECK(fr_zstd_decompress(back, raw_len, mangled, 4096) == -EBADMSG,
	      "zstd garbage accepted");
out:
	fr_zstd_free(z);
	fr_zstd_free(NULL);
	free(raw);
	free(back);
	free(frame);
	free(mangled);
}

struct sink {
	unsigned char *buf;
	size_t len;
	size_t cap;
	size_t calls;
	size_t largest;
	size_t fail_after; /* fail the call after this many; 0 never */
};

static int sink_write(void *arg, const void *buf, size_t len)
{
	struct sink *s = arg;

	s->calls++;
	if (s->fail_after && s->calls > s->fail_after)
		return -ENOSPC;
	if (len > s->largest)
		s->largest = len;
	if (s->len + len > s->cap) {
		size_t cap = (s->len + len) * 2;
		unsigned char *grown = realloc(s->buf, cap);

		if (!grown)
			return -ENOMEM;
		s->buf = grown;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

/* Writes `raw` through a gzip stream in pieces of `step` bytes and checks
 * fr_gunzip() gives it back. */
static void gzip_round_trip(const unsigned char *raw, size_t len, size_t step, int level)
{
	struct sink s = {0};
	struct fr_gzip *g = fr_gzip_new(level, sink_write, &s);
	void *out = NULL;
	size_t out_len = 0;
	int ret = 0;

	CHECK(g, "fr_gzip_new");
	if (!g)
		return;
	for (size_t off = 0; off < len && ret == 0; off += step)
		ret = fr_gzip_write(g, raw + off, len - off < step ? len - off : step);
	CHECK(ret == 0, "gzip write returned %d", ret);
	ret = fr_gzip_finish(g);
	CHECK(ret == 0, "gzip finish returned %d", ret);
	CHECK(fr_gzip_finish(g) == 0, "second gzip finish failed");
	fr_gzip_free(g);
	CHECK(s.len > 18 && s.buf[0] == 0x1f && s.buf[1] == 0x8b, "output is not gzip");
	CHECK(s.largest <= 256 * 1024, "sink got a piece of %zu bytes", s.largest);

	ret = fr_gunzip(s.buf, s.len, &out, &out_len);
	CHECK(ret == 0, "gunzip of %zu bytes (step %zu) returned %d", len, step, ret);
	if (ret == 0)
		CHECK(out_len == len && memcmp(out, raw, len) == 0,
		      "gunzip gave %zu bytes, want %zu (step %zu)", out_len, len, step);
	free(out);
	free(s.buf);
}

static void test_gzip(void)
{
	const size_t big = 3 * 1024 * 1024 + 17;
	unsigned char *raw = malloc(big);

	if (!raw) {
		CHECK(0, "allocation");
		return;
	}
	fill(raw, big, 3);
	gzip_round_trip(raw, 0, 1, 6);
	gzip_round_trip(raw, 5000, 1, 6);
	gzip_round_trip(raw, 100000, 7, 1);
	gzip_round_trip(raw, big, 4093, 6);
	gzip_round_trip(raw, big, big, 9);

	/* Incompressible data larger than the sink's pieces. */
	for (size_t i = 0; i < big; i++)
		raw[i] = (unsigned char)(rand() >> 7);
	gzip_round_trip(raw, big, 1 << 20, 6);
	free(raw);
}

static void test_gzip_sink_error(void)
{
	const size_t len = 2 * 1024 * 1024;
	unsigned char *raw = malloc(len);
	struct sink s = {.fail_after = 1};
	struct fr_gzip *g;
	size_t calls;
	int ret = 0;

	if (!raw) {
		CHECK(0, "allocation");
		return;
	}
	for (size_t i = 0; i < len; i++)
		raw[i] = (unsigned char)(rand() >> 7);
	g = fr_gzip_new(6, sink_write, &s);
	CHECK(g, "fr_gzip_new");
	if (!g)
		goto out;
	for (size_t off = 0; off < len && ret == 0; off += 65536)
		ret = fr_gzip_write(g, raw + off, 65536);
	CHECK(ret == -ENOSPC, "sink error not returned by write: %d", ret);
	calls = s.calls;
	CHECK(fr_gzip_write(g, raw, 10) == -ENOSPC, "sink error not sticky in write");
	CHECK(fr_gzip_finish(g) == -ENOSPC, "sink error not sticky in finish");
	CHECK(s.calls == calls, "sink called again after its error");
	fr_gzip_free(g);
out:
	fr_gzip_free(NULL);
	free(raw);
	free(s.buf);
}

static void test_gunzip_bad(void)
{
	const size_t len = 300000;
	unsigned char *raw = malloc(len), *mangled = NULL;
	struct sink s = {0};
	struct fr_gzip *g = fr_gzip_new(6, sink_write, &s);
	void *out = NULL;
	size_t out_len = 0;
	int ret;

	if (!raw || !g) {
		CHECK(0, "allocation");
		goto out;
	}
	fill(raw, len, 4);
	CHECK(fr_gzip_write(g, raw, len) == 0 && fr_gzip_finish(g) == 0, "gzip");
	mangled = malloc(s.len + 16);
	if (!mangled)
		goto out;

	CHECK(fr_gunzip(raw, 0, &out, &out_len) == -EBADMSG, "empty input accepted");
	CHECK(fr_gunzip(raw, 1000, &out, &out_len) == -EBADMSG, "non-gzip input accepted");

	for (size_t cut = 0; cut < s.len; cut += cut < 64 ? 1 : 331) {
		out = NULL;
		ret = fr_gunzip(s.buf, cut, &out, &out_len);
		CHECK(ret == -EBADMSG, "gzip truncated to %zu of %zu returned %d", cut, s.len, ret);
		if (ret == 0)
			free(out);
	}
	/* The CRC in the trailer catches damage in the middle. */
	memcpy(mangled, s.buf, s.len);
	mangled[s.len / 2] ^= 0x10;
	out = NULL;
	ret = fr_gunzip(mangled, s.len, &out, &out_len);
	CHECK(ret == -EBADMSG, "corrupted gzip returned %d", ret);
	if (ret == 0)
		free(out);
	/* Garbage after the stream. */
	memcpy(mangled, s.buf, s.len);
	memcpy(mangled + s.len, "garbage!", 8);
	out = NULL;
	ret = fr_gunzip(mangled, s.len + 8, &out, &out_len);
	CHECK(ret == -EBADMSG, "gzip with trailing garbage returned %d", ret);
	if (ret == 0)
		free(out);
out:
	fr_gzip_free(g);
	free(raw);
	free(mangled);
	free(s.buf);
}

int main(void)
{
	srand(1);
	test_zstd();
	test_gzip();
	test_gzip_sink_error();
	test_gunzip_bad();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
