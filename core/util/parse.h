/* Parsing and formatting of the durations and sizes used everywhere
 * (command line, config, IPC). This is the one place that knows the units.
 *
 * Durations: terms of a non-negative decimal number and a unit (ns, us, ms,
 * s, m, h, d), the units from the largest down, each once, a fraction only
 * in the last term: "500ms", "1.5s", "2m30s", "1h30m". "0s" is a valid
 * duration; callers that need a positive one check for zero themselves.
 *
 * Time points as people type them on the command line (fr_parse_when):
 * "-10m" (that long before now), "13:05" or "13:05:00" (local time, today;
 * a clock time more than FR_PARSE_CLOCK_AHEAD_NS, 5 minutes, later than now
 * is yesterday's; one up to that far ahead is today's, a moment to come),
 * RFC 3339 with a zone
 * ("2026-11-24T13:05:00+01:00"), "@1732453500" or plain Unix seconds, and
 * "now".
 *
 * Sizes: a non-negative integer optionally followed by a unit: B, KiB, MiB,
 * GiB, TiB (powers of 1024; K, M, G, T and KB, MB, GB, TB are accepted as the
 * same powers of 1024, as users type them).
 */
#ifndef FR_CORE_PARSE_H
#define FR_CORE_PARSE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* Parses a duration into nanoseconds. Returns 0 on success, -EINVAL when the
 * text is not a duration (empty, no unit, unknown unit, negative, trailing
 * garbage), -ERANGE when it does not fit in int64 nanoseconds. */
int fr_parse_duration(const char *text, int64_t *ns);

/* Parses a size into bytes. Returns 0, -EINVAL or -ERANGE as above. */
int fr_parse_size(const char *text, uint64_t *bytes);

/* Parses a time point: RFC 3339 ("2026-11-22T13:05:00Z", with optional
 * fraction and numeric offset) or Unix seconds with optional fraction
 * ("1795000000.5"). Returns 0 and Unix nanoseconds, or -EINVAL. */
int fr_parse_time(const char *text, int64_t *unix_ns);

/* How far ahead of now a clock time ("13:05:00") may be and still be
 * today's: 5 minutes. */
#define FR_PARSE_CLOCK_AHEAD_NS (300 * 1000000000LL)

/* Parses a time point as people type it (see the top of this file),
 * relative to `now_ns` (Unix ns). Returns 0 and Unix nanoseconds, or
 * -EINVAL with, when it can say more than "not a time", a reason in `why`
 * (may be NULL; "" when there is none). */
int fr_parse_when(const char *text, int64_t now_ns, int64_t *unix_ns, char *why, size_t whylen);

/* Parses a decimal unsigned integer in [min, max]. Returns 0, -EINVAL
 * (not a number) or -ERANGE (outside the bounds). */
int fr_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* Parses a comma-separated list of process ids ("1234" or "1234,5678")
 * appending them to pids[*n] (capacity `cap`). Returns 0, -EINVAL when the
 * text is not such a list (empty, zero, over INT32_MAX, stray characters),
 * or -E2BIG when it holds more than fits. */
int fr_parse_pid_list(const char *text, uint32_t *pids, uint32_t cap, uint32_t *n);

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
static inline int fr_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The length of the valid UTF-8 sequence at s[0..left) (1 to 4), or 0 for
 * a byte that starts none: overlong forms, surrogates and code points past
 * U+10FFFF are not valid. A NUL-terminated string may pass SIZE_MAX (the
 * NUL ends any sequence). The one check the JSON writers and the HTTP
 * server share. */
size_t fr_utf8_len(const unsigned char *s, size_t left);

/* Writes `str` to `f` as a JSON string: quotes, backslashes and control
 * characters escaped; a byte that is not valid UTF-8 (names are what the
 * kernel or a program gave, any bytes) becomes U+FFFD, so every JSON
 * reader takes the text. */
void fr_json_fputs(FILE *f, const char *str);

/* A copy of text[0..len) in which every byte that does not start a valid
 * UTF-8 sequence (overlong forms, surrogates and code points past U+10FFFF
 * included) is replaced by U+FFFD, so that a browser's JSON.parse takes it:
 * function, thread and process names are whatever bytes a program chose,
 * and JSON's own syntax is ASCII. NUL-terminated, its length in *outlen;
 * NULL on ENOMEM. */
char *fr_utf8_clean(const char *text, size_t len, size_t *outlen);

/* Formats a duration for people, the one form every command prints:
 * rounded to a tenth below a minute ("19.8s", "1.5s", "500ms", "12.3us"),
 * whole seconds below an hour ("1m", "2m30s"), whole minutes above ("1h30m",
 * "2d3h"). fr_parse_duration reads it back; a caller that needs the exact
 * value back compares (config/ writes plain ns then). Returns buf. */
char *fr_format_duration(int64_t ns, char *buf, size_t len);

/* Formats a size with a binary unit ("256MiB", "1.5GiB"). Returns buf. */
char *fr_format_size(uint64_t bytes, char *buf, size_t len);

/* Formats a size for people, to one decimal in the largest binary unit it
 * reaches ("255.0MiB", "21.3KiB", "512B"). Not meant to be parsed back.
 * Returns buf. */
char *fr_format_size_human(uint64_t bytes, char *buf, size_t len);

/* Formats Unix nanoseconds as RFC 3339 UTC with milliseconds
 * ("2026-11-22T13:05:00.123Z"). Returns buf. */
char *fr_format_time(int64_t unix_ns, char *buf, size_t len);

#endif
