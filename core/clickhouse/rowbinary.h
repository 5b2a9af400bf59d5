/* ClickHouse's RowBinary answer format, read as it streams in.
 *
 * A fleet query's answer is rows of fixed-width little-endian integers,
 * strings (a LEB128 length, then the bytes) and arrays (a LEB128 count,
 * then the elements). The bytes come from the HTTP client in pieces of
 * any size; the stream keeps only the unfinished row between pieces and
 * hands each complete row to a callback, so memory is one row, however
 * many rows the answer has. The callback reads the row with the fr_rb_*
 * readers, which fail with -EAGAIN when the row continues past the bytes
 * received so far (the stream then waits for more and calls again from
 * the row's start) and -EBADMSG on a length no row may have. Everything
 * in an answer is untrusted: lengths are checked against the bytes there
 * and against `max_row`.
 */
#ifndef FR_CORE_ROWBINARY_H
#define FR_CORE_ROWBINARY_H

#include <stddef.h>
#include <stdint.h>

/* Largest row buffered by default (a stack of 127 frames of long names
 * fits many times). */
#define FR_RB_MAX_ROW (4u << 20)

/* A read position in a row's bytes. */
struct fr_rb_cur {
	const uint8_t *p, *end;
};

/* An unsigned integer of `width` bytes (1, 2, 4 or 8). Returns 0, -EAGAIN. */
int fr_rb_uint(struct fr_rb_cur *c, unsigned width, uint64_t *v);

/* A LEB128 length (string or array). Returns 0, -EAGAIN or -EBADMSG. */
int fr_rb_len(struct fr_rb_cur *c, uint64_t *n);

/* A string: *s points into the row (not NUL-terminated), valid during the
 * callback. Returns 0, -EAGAIN or -EBADMSG. */
int fr_rb_str(struct fr_rb_cur *c, const char **s, size_t *len);

/* Called with each complete row: reads it from `c` and returns 0, -EAGAIN
 * when it ran out of bytes, or another -errno that ends the stream. */
typedef int (*fr_rb_row_fn)(void *arg, struct fr_rb_cur *c);

struct fr_rb_stream {
	fr_rb_row_fn row;
	void *arg;
	size_t max_row;
	uint8_t *buf; /* the unfinished row */
	size_t len, cap;
	uint64_t rows;
	int err;
};

/* A stream handing rows to `row`; max_row 0: FR_RB_MAX_ROW. */
void fr_rb_stream_init(struct fr_rb_stream *s, fr_rb_row_fn row, void *arg, size_t max_row);

/* Takes `len` more bytes of the answer (an fr_write_fn: `arg` is the
 * stream). Returns 0 or the first error: the callback's, -EFBIG for a row
 * over max_row, -ENOMEM. */
int fr_rb_stream_feed(void *arg, const void *data, size_t len);

/* The answer ended: returns 0, the first error, or -EBADMSG when it ended
 * inside a row. */
int fr_rb_stream_end(struct fr_rb_stream *s);

void fr_rb_stream_free(struct fr_rb_stream *s);

#endif
