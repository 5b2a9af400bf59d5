/* SQL text for fleet queries (tools/fleet/fleet*.c), built so that nothing a
 * user types can leave the literal it was put in.
 *
 * ClickHouse 18.16 has no query parameters over HTTP, so values go into
 * the text: every value is a single-quoted string literal in which the
 * quote, the backslash and every byte below 0x20 or 0x7f are escaped
 * (\', \\, \xHH), and names (a database) are limited to [A-Za-z0-9_]. A
 * host glob (`*` any run of bytes, `?` one byte) becomes a LIKE pattern
 * with `%`, `_` and `\` of the glob escaped, so they match themselves.
 * The fleet commands also send readonly=1, so even a flaw here could not
 * change the store.
 */
#ifndef FR_CORE_FLEET_SQL_H
#define FR_CORE_FLEET_SQL_H

#include <stdarg.h>
#include <stddef.h>

/* Longest query text built, in bytes (filters are bounded by the CLI). */
#define FR_SQL_MAX (1 << 20)

/* A growing query text. After the first failure (-ENOMEM, or -E2BIG past
 * `max` bytes) every append is ignored and `err` keeps the failure. */
struct fr_sql {
	char *buf; /* NUL-terminated, NULL before the first append */
	size_t len, cap, max;
	int err;
};

/* An empty text of at most `max` bytes (0: FR_SQL_MAX). */
void fr_sql_init(struct fr_sql *s, size_t max);

void fr_sql_free(struct fr_sql *s);

/* Appends trusted text (the query's own words, numbers), printf-style. */
void fr_sql_add(struct fr_sql *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends `v` as a quoted string literal. */
void fr_sql_str(struct fr_sql *s, const char *v);

/* Appends `len` bytes of `v` as a quoted string literal. */
void fr_sql_strn(struct fr_sql *s, const char *v, size_t len);

/* Appends glob `g` as a quoted LIKE pattern (`*` -> `%`, `?` -> `_`). */
void fr_sql_like_glob(struct fr_sql *s, const char *g);

/* Whether `name` may be used as a database or table name: 1..64 bytes of
 * [A-Za-z0-9_], not starting with a digit. */
int fr_sql_name_ok(const char *name);

#endif
