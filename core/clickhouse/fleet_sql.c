/* SQL text for fleet queries: literals escaped, globs made LIKE patterns
 * (see fleet_sql.h for why values go into the text at all). */
#include "core/clickhouse/fleet_sql.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fr_sql_init(struct fr_sql *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max ? max : FR_SQL_MAX;
}

void fr_sql_free(struct fr_sql *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* Room for `n` more bytes and a NUL. Returns 0 or the text's error. */
static int reserve(struct fr_sql *s, size_t n)
{
	size_t cap = s->cap ? s->cap : 256;
	char *nb;

	if (s->err)
		return s->err;
	if (n > s->max || s->len + n > s->max) {
		s->err = -E2BIG;
		return s->err;
	}
	if (s->len + n + 1 <= s->cap)
		return 0;
	while (cap < s->len + n + 1)
		cap *= 2;
	nb = realloc(s->buf, cap);
	if (!nb) {
		s->err = -ENOMEM;
		return s->err;
	}
	s->buf = nb;
	s->cap = cap;
	return 0;
}

static void put(struct fr_sql *s, const char *p, size_t n)
{
	if (reserve(s, n) < 0)
		return;
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

void fr_sql_add(struct fr_sql *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(s, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

/* One byte of a value inside a literal. */
static void put_byte(struct fr_sql *s, unsigned char c)
{
	char esc[5];

	if (c == '\'' || c == '\\') {
		esc[0] = '\\';
		esc[1] = (char)c;
		put(s, esc, 2);
	} else if (c < 0x20 || c == 0x7f) {
		snprintf(esc, sizeof(esc), "\\x%02x", c);
		put(s, esc, 4);
	} else {
		put(s, (const char *)&c, 1);
	}
}

void fr_sql_strn(struct fr_sql *s, const char *v, size_t len)
{
	put(s, "'", 1);
	for (size_t i = 0; i < len; i++)
		put_byte(s, (unsigned char)v[i]);
	put(s, "'", 1);
}

void fr_sql_str(struct fr_sql *s, const char *v)
{
	fr_sql_strn(s, v, strlen(v));
}

void fr_sql_like_glob(struct fr_sql *s, const char *g)
{
	put(s, "'", 1);
	for (; *g; g++) {
		unsigned char c = (unsigned char)*g;

		if (c == '*') {
			put_byte(s, '%');
		} else if (c == '?') {
			put_byte(s, '_');
		} else if (c == '%' || c == '_' || c == '\\') {
			/* LIKE's own escape, itself escaped for the literal. */
			put_byte(s, '\\');
			put_byte(s, c);
		} else {
			put_byte(s, c);
		}
	}
	put(s, "'", 1);
}

int fr_sql_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return 1;
}
