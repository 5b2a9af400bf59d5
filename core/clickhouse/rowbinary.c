/* ClickHouse RowBinary answers read row by row as they stream in (see
 * rowbinary.h). */
#include "core/clickhouse/rowbinary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int fr_rb_uint(struct fr_rb_cur *c, unsigned width, uint64_t *v)
{
	uint64_t x = 0;

	if ((size_t)(c->end - c->p) < width)
		return -EAGAIN;
	for (unsigned i = 0; i < width; i++)
		x |= (uint64_t)c->p[i] << (8 * i);
	c->p += width;
	*v = x;
	return 0;
}

int fr_rb_len(struct fr_rb_cur *c, uint64_t *n)
{
	uint64_t x = 0;

	for (unsigned shift = 0, i = 0;; shift += 7, i++) {
		if (i == 10)
			return -EBADMSG;
		if (c->p + i >= c->end)
			return -EAGAIN;
		x |= (uint64_t)(c->p[i] & 0x7f) << shift;
		if (!(c->p[i] & 0x80)) {
			c->p += i + 1;
			break;
		}
	}
	/* No answer of ours has a string or array of 2^32 or more. */
	if (x >= (1ULL << 32))
		return -EBADMSG;
	*n = x;
	return 0;
}

int fr_rb_str(struct fr_rb_cur *c, const char **s, size_t *len)
{
	struct fr_rb_cur save = *c;
	uint64_t n;
	int ret = fr_rb_len(c, &n);

	if (ret < 0)
		return ret;
	if ((uint64_t)(c->end - c->p) < n) {
		*c = save;
		return -EAGAIN;
	}
	*s = (const char *)c->p;
	*len = (size_t)n;
	c->p += n;
	return 0;
}

void fr_rb_stream_init(struct fr_rb_stream *s, fr_rb_row_fn row, void *arg, size_t max_row)
{
	memset(s, 0, sizeof(*s));
	s->row = row;
	s->arg = arg;
	s->max_row = max_row ? max_row : FR_RB_MAX_ROW;
}

/* Hands every complete row of [p, end) to the callback. Returns the bytes
 * used (the rest is an unfinished row) or -errno. */
static ssize_t rows(struct fr_rb_stream *s, const uint8_t *p, const uint8_t *end)
{
	const uint8_t *start = p;

	while (p < end) {
		struct fr_rb_cur c = {p, end};
		int ret = s->row(s->arg, &c);

		if (ret == -EAGAIN)
			break;
		if (ret < 0)
			return ret;
		/* A row reads at least one byte, or a bad callback would
		 * spin here. */
		if (c.p <= p)
			return -EBADMSG;
		p = c.p;
		s->rows++;
	}
	return p - start;
}

/* Keeps [p, p + n) as the unfinished row. */
static int keep(struct fr_rb_stream *s, const uint8_t *p, size_t n)
{
	/* Nothing left (the usual case): no buffer may exist yet, and
	 * memmove() wants one even for no bytes. */
	if (n == 0) {
		s->len = 0;
		return 0;
	}
	if (n > s->max_row)
		return -EFBIG;
	if (n > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		uint8_t *nb;

		while (cap < n)
			cap *= 2;
		nb = malloc(cap);
		if (!nb)
			return -ENOMEM;
		free(s->buf);
		s->buf = nb;
		s->cap = cap;
	}
	memmove(s->buf, p, n);
	s->len = n;
	return 0;
}

int fr_rb_stream_feed(void *arg, const void *data, size_t len)
{
	struct fr_rb_stream *s = arg;
	const uint8_t *d = data;
	ssize_t used;

	if (s->err)
		return s->err;
	if (s->len) {
		/* Complete the unfinished row with as few bytes as needed:
		 * append the piece (bounded), read, keep what is left. */
		uint8_t *joined;
		size_t n = s->len + len;

		if (n < len)
			return s->err = -EFBIG;
		joined = malloc(n);
		if (!joined)
			return s->err = -ENOMEM;
		memcpy(joined, s->buf, s->len);
		memcpy(joined + s->len, d, len);
		used = rows(s, joined, joined + n);
		if (used >= 0)
			s->err = keep(s, joined + used, n - (size_t)used);
		else
			s->err = (int)used;
		free(joined);
		return s->err;
	}
	used = rows(s, d, d + len);
	if (used < 0)
		return s->err = (int)used;
	return s->err = keep(s, d + used, len - (size_t)used);
}

int fr_rb_stream_end(struct fr_rb_stream *s)
{
	if (s->err)
		return s->err;
	return s->len ? -EBADMSG : 0;
}

void fr_rb_stream_free(struct fr_rb_stream *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
}
