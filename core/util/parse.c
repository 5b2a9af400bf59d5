/* Durations, sizes and time points as people type them.
 *
 * Every parser here is strict: the whole text must be consumed, there is
 * no leading or trailing whitespace, no sign, and a number that does not fit
 * is -ERANGE rather than a silently wrapped value. Fractions are computed
 * with 128-bit intermediates so "1.5s" is exactly 1500000000 ns and nothing
 * depends on floating point rounding. Sizes are formatted to read back to
 * the same value; durations are formatted for people (rounded, "19.8s",
 * "1h30m"), and the parser reads that form back.
 */
#include "core/util/parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/util/time.h"

__extension__ typedef unsigned __int128 u128;

/* Digits after the point beyond this are validated but ignored: 10^-18 of
 * the largest unit (a day, or a TiB) is far below one nanosecond or byte. */
#define MAX_FRAC_DIGITS 18

struct decimal {
	uint64_t whole;
	uint64_t frac;	   /* fraction digits as an integer */
	uint64_t frac_den; /* 10^(number of kept fraction digits); 1 if none */
	int has_point;
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads "<digits>" after a decimal point into d->frac / d->frac_den and
 * advances *pos. Returns -EINVAL when there is no digit. */
static int read_fraction(const char **pos, struct decimal *d)
{
	const char *s = *pos;
	int kept = 0;

	if (!is_digit(*s))
		return -EINVAL;
	d->has_point = 1;
	for (; is_digit(*s); s++) {
		if (kept == MAX_FRAC_DIGITS)
			continue;
		d->frac = d->frac * 10 + (uint64_t)(*s - '0');
		d->frac_den *= 10;
		kept++;
	}
	*pos = s;
	return 0;
}

/* Reads "<digits>[.<digits>]" from *pos and advances it. Returns 0,
 * -EINVAL when there is no number (or a point with no digit after it),
 * -ERANGE when the integer part does not fit in 64 bits. */
static int read_decimal(const char **pos, struct decimal *d)
{
	const char *s = *pos;
	int overflow = 0;

	memset(d, 0, sizeof(*d));
	d->frac_den = 1;
	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned digit = (unsigned)(*s - '0');

		if (d->whole > (UINT64_MAX - digit) / 10)
			overflow = 1;
		else
			d->whole = d->whole * 10 + digit;
	}
	if (*s == '.') {
		s++;
		if (read_fraction(&s, d) < 0)
			return -EINVAL;
	}
	*pos = s;
	return overflow ? -ERANGE : 0;
}

/* whole * unit + frac * unit / frac_den (truncated), or -ERANGE above max. */
static int scale_decimal(const struct decimal *d, uint64_t unit, uint64_t max, uint64_t *out)
{
	u128 v = (u128)d->whole * unit + (u128)d->frac * unit / d->frac_den;

	if (v > max)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

struct unit {
	const char *name;
	uint64_t factor;
};

static const struct unit duration_units[] = {
	{"ns", 1ULL},
	{"us", FR_NS_PER_US},
	{"ms", FR_NS_PER_MS},
	{"s", FR_NS_PER_S},
	{"m", 60 * FR_NS_PER_S},
	{"h", 3600 * FR_NS_PER_S},
	{"d", 86400 * FR_NS_PER_S},
};

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define TIB (1ULL << 40)

static const struct unit size_units[] = {
	{"B", 1},   {"KiB", KIB}, {"MiB", MIB}, {"GiB", GIB}, {"TiB", TIB}, {"K", KIB},	 {"M", MIB},
	{"G", GIB}, {"T", TIB},	  {"KB", KIB},	{"MB", MIB},  {"GB", GIB},  {"TB", TIB},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The unit at *pos (two-letter units first, so "5ms" is not 5m then "s"),
 * advancing past it; -1 when there is none. */
static int read_duration_unit(const char **pos)
{
	size_t best = 0;
	int found = -1;

	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++) {
		size_t n = strlen(duration_units[i].name);

		if (n > best && strncmp(*pos, duration_units[i].name, n) == 0) {
			best = n;
			found = (int)i;
		}
	}
	*pos += best;
	return found;
}

int fr_parse_duration(const char *text, int64_t *ns)
{
	const char *s = text;
	uint64_t total = 0;
	int last_unit = (int)ARRAY_SIZE(duration_units), range = 0;

	if (!text || !*text)
		return -EINVAL;
	/* Terms like "1h30m": each a number and a unit, units from the
	 * largest down, each once; only the last may have a fraction. */
	while (*s) {
		struct decimal d;
		uint64_t v;
		int ret = read_decimal(&s, &d), unit;

		if (ret == -EINVAL)
			return ret;
		unit = read_duration_unit(&s);
		/* A well-formed number with a bad unit is -EINVAL, not -ERANGE. */
		if (unit < 0 || unit >= last_unit || (d.has_point && *s))
			return -EINVAL;
		last_unit = unit;
		if (ret < 0 || scale_decimal(&d, duration_units[unit].factor, INT64_MAX, &v) < 0 ||
		    total + v > INT64_MAX)
			range = 1;
		else
			total += v;
	}
	if (range)
		return -ERANGE;
	*ns = (int64_t)total;
	return 0;
}

int fr_parse_size(const char *text, uint64_t *bytes)
{
	const char *s = text;
	struct decimal d;
	uint64_t factor = 1;
	size_t i;
	int ret;

	if (!text)
		return -EINVAL;
	ret = read_decimal(&s, &d);
	if (ret == -EINVAL)
		return ret;
	if (*s) {
		/* Units are matched without regard to case: "256mb", "1g". */
		for (i = 0; i < ARRAY_SIZE(size_units); i++) {
			if (strcasecmp(s, size_units[i].name) == 0)
				break;
		}
		if (i == ARRAY_SIZE(size_units))
			return -EINVAL;
		factor = size_units[i].factor;
	}
	/* A fraction of a byte is meaningless; "1.5GiB" is fine. */
	if (d.has_point && factor == 1)
		return -EINVAL;
	if (ret < 0)
		return ret;
	return scale_decimal(&d, factor, UINT64_MAX, bytes);
}

int fr_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *s = text;
	uint64_t v = 0;
	int overflow = 0;

	if (!text || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned digit = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - digit) / 10)
			overflow = 1;
		else
			v = v * 10 + digit;
	}
	if (*s)
		return -EINVAL;
	if (overflow || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Reads exactly `n` digits as a number; -1 if any is missing. */
static int read_fixed(const char **pos, int n)
{
	const char *s = *pos;
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*pos = s + n;
	return v;
}

static int expect(const char **pos, char c)
{
	if (**pos != c)
		return 0;
	(*pos)++;
	return 1;
}

static int is_leap(int year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int days_in_month(int year, int month)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

/* Seconds plus nanoseconds to Unix nanoseconds, or -EINVAL when the point
 * lies outside what int64 nanoseconds can hold (years 1678..2262). */
static int to_unix_ns(int64_t sec, int64_t nsec, int64_t *unix_ns)
{
	int64_t v;

	if (__builtin_mul_overflow(sec, FR_NS_PER_S, &v) || __builtin_add_overflow(v, nsec, &v))
		return -EINVAL;
	*unix_ns = v;
	return 0;
}

/* Fraction digits as nanoseconds; digits past the ninth are truncated. */
static int64_t frac_to_ns(const struct decimal *d)
{
	return (int64_t)((u128)d->frac * FR_NS_PER_S / d->frac_den);
}

static int parse_rfc3339(const char *s, int64_t *unix_ns)
{
	struct tm tm;
	struct decimal frac = {.frac_den = 1};
	int year, mon, day, hour, min, sec;
	int64_t offset = 0;
	time_t t;

	year = read_fixed(&s, 4);
	if (year < 0 || !expect(&s, '-'))
		return -EINVAL;
	mon = read_fixed(&s, 2);
	if (mon < 1 || mon > 12 || !expect(&s, '-'))
		return -EINVAL;
	day = read_fixed(&s, 2);
	if (day < 1 || day > days_in_month(year, mon))
		return -EINVAL;
	/* RFC 3339 allows 't' and, by note, a space for readability. */
	if (!expect(&s, 'T') && !expect(&s, 't') && !expect(&s, ' '))
		return -EINVAL;
	hour = read_fixed(&s, 2);
	if (hour < 0 || hour > 23 || !expect(&s, ':'))
		return -EINVAL;
	min = read_fixed(&s, 2);
	if (min < 0 || min > 59 || !expect(&s, ':'))
		return -EINVAL;
	/* 60 is a leap second; timegm() folds it into the next minute. */
	sec = read_fixed(&s, 2);
	if (sec < 0 || sec > 60)
		return -EINVAL;
	if (expect(&s, '.') && read_fraction(&s, &frac) < 0)
		return -EINVAL;
	if (expect(&s, 'Z') || expect(&s, 'z')) {
		offset = 0;
	} else if (*s == '+' || *s == '-') {
		int sign = *s == '-' ? -1 : 1;
		int oh, om;

		s++;
		oh = read_fixed(&s, 2);
		if (oh < 0 || oh > 23 || !expect(&s, ':'))
			return -EINVAL;
		om = read_fixed(&s, 2);
		if (om < 0 || om > 59)
			return -EINVAL;
		offset = sign * (oh * 3600 + om * 60);
	} else {
		return -EINVAL;
	}
	if (*s)
		return -EINVAL;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	t = timegm(&tm);
	return to_unix_ns((int64_t)t - offset, frac_to_ns(&frac), unix_ns);
}

int fr_parse_time(const char *text, int64_t *unix_ns)
{
	const char *s = text;
	struct decimal d;

	if (!text)
		return -EINVAL;
	/* Digits with an optional fraction are Unix seconds; anything else
	 * must be RFC 3339. */
	if (read_decimal(&s, &d) == 0 && *s == '\0') {
		if (d.whole > INT64_MAX)
			return -EINVAL;
		return to_unix_ns((int64_t)d.whole, frac_to_ns(&d), unix_ns);
	}
	return parse_rfc3339(text, unix_ns);
}

/* "13:05", "13:05:00" or "13:05:00.25": today's (or, when more than
 * FR_PARSE_CLOCK_AHEAD_NS later than `now_ns`, yesterday's) local time.
 * Returns 0, or -EINVAL with `why`. */
static int parse_clock(const char *s, int64_t now_ns, int64_t *unix_ns, char *why, size_t whylen)
{
	struct decimal frac = {.frac_den = 1};
	time_t now = (time_t)(now_ns / FR_NS_PER_S), t;
	int hour, min, sec = 0;
	struct tm tm;

	hour = read_fixed(&s, 2);
	if (hour < 0 || !expect(&s, ':'))
		return -EINVAL;
	min = read_fixed(&s, 2);
	if (min < 0)
		return -EINVAL;
	if (expect(&s, ':')) {
		sec = read_fixed(&s, 2);
		if (sec < 0 || (expect(&s, '.') && read_fraction(&s, &frac) < 0))
			return -EINVAL;
	}
	if (*s)
		return -EINVAL;
	if (hour > 23 || min > 59 || sec > 59) {
		snprintf(why, whylen, "%s",
			 hour > 23  ? "hours go from 00 to 23"
			 : min > 59 ? "minutes go from 00 to 59"
				    : "seconds go from 00 to 59");
		return -EINVAL;
	}
	if (!localtime_r(&now, &tm))
		return -EINVAL;
	for (int back = 0; back < 2; back++) {
		struct tm day = tm;

		day.tm_mday -= back;
		day.tm_hour = hour;
		day.tm_min = min;
		day.tm_sec = sec;
		day.tm_isdst = -1; /* whatever the zone says on that day */
		t = mktime(&day);
		if (t == (time_t)-1 || to_unix_ns((int64_t)t, frac_to_ns(&frac), unix_ns) < 0)
			return -EINVAL;
		/* A clock time still to come today is yesterday's, unless it is
		 * only moments ahead: a --to typed as the clock reads now, a
		 * clock a little ahead of this machine's. */
		if (*unix_ns <= now_ns + FR_PARSE_CLOCK_AHEAD_NS)
			return 0;
	}
	return 0;
}

int fr_parse_when(const char *text, int64_t now_ns, int64_t *unix_ns, char *why, size_t whylen)
{
	int64_t v;
	int ret;

	if (why && whylen)
		why[0] = '\0';
	else
		whylen = 0;
	if (!text || !*text)
		return -EINVAL;
	if (strcmp(text, "now") == 0) {
		*unix_ns = now_ns;
		return 0;
	}
	if (text[0] == '-') {
		ret = fr_parse_duration(text + 1, &v);
		if (ret < 0 || v > now_ns) {
			snprintf(why, whylen, "%s",
				 ret == -EINVAL ? "not a duration after '-'"
						: "reaches before 1970");
			return -EINVAL;
		}
		*unix_ns = now_ns - v;
		return 0;
	}
	/* "@1732453500": Unix seconds, as date(1) takes them. */
	if (text[0] == '@') {
		if (!is_digit(text[1]) || fr_parse_time(text + 1, &v) < 0)
			return -EINVAL;
		*unix_ns = v;
		return 0;
	}
	/* "HH:..." is a clock time; RFC 3339 starts with a 4-digit year. */
	if (strlen(text) > 2 && text[2] == ':')
		return parse_clock(text, now_ns, unix_ns, why, whylen);
	return fr_parse_time(text, unix_ns);
}

/* `tenths` of `unit` with one decimal, the decimal only when not 0. */
static void one_decimal(char *buf, size_t len, const char *sign, uint64_t tenths, const char *unit)
{
	if (tenths % 10)
		snprintf(buf, len, "%s%" PRIu64 ".%" PRIu64 "%s", sign, tenths / 10, tenths % 10,
			 unit);
	else
		snprintf(buf, len, "%s%" PRIu64 "%s", sign, tenths / 10, unit);
}

char *fr_format_duration(int64_t ns, char *buf, size_t len)
{
	/* Magnitude as unsigned so INT64_MIN has one. */
	uint64_t mag = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns, sec, tenths;
	const char *sign = ns < 0 ? "-" : "";
	size_t used = 0;

	if (mag == 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	if (mag < 1000) {
		snprintf(buf, len, "%s%" PRIu64 "ns", sign, mag);
		return buf;
	}
	/* Below a second: microseconds or milliseconds, to one decimal
	 * (rounded, so 999.96us is "1ms"). */
	tenths = (mag + 50) / 100;
	if (tenths < 10000) {
		one_decimal(buf, len, sign, tenths, "us");
		return buf;
	}
	tenths = (mag + 50000) / 100000;
	if (tenths < 10000) {
		one_decimal(buf, len, sign, tenths, "ms");
		return buf;
	}
	tenths = (mag + 50000000) / 100000000;
	if (tenths < 600) {
		one_decimal(buf, len, sign, tenths, "s");
		return buf;
	}
	/* A minute or more: whole seconds; an hour or more: whole minutes. */
	sec = (mag + FR_NS_PER_S / 2) / FR_NS_PER_S;
	if (sec >= 3600)
		sec = (sec + 30) / 60 * 60;
	used = (size_t)snprintf(buf, len, "%s", sign);
	if (sec >= 86400 && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%" PRIu64 "d", sec / 86400);
	if (sec % 86400 >= 3600 && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%" PRIu64 "h",
					 sec % 86400 / 3600);
	if (sec % 3600 >= 60 && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%" PRIu64 "m", sec % 3600 / 60);
	if (sec % 60 && used < len)
		snprintf(buf + used, len - used, "%" PRIu64 "s", sec % 60);
	return buf;
}

char *fr_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const struct unit units[] = {
		{"B", 1}, {"KiB", KIB}, {"MiB", MIB}, {"GiB", GIB}, {"TiB", TIB},
	};
	size_t i = ARRAY_SIZE(units) - 1;
	uint64_t whole, cents;

	/* The largest unit in which the value is exact with at most two
	 * decimals, so the text reads back to the same number of bytes. */
	for (; i > 0; i--) {
		if (bytes >= units[i].factor &&
		    (bytes % units[i].factor) * 100 % units[i].factor == 0)
			break;
	}
	whole = bytes / units[i].factor;
	cents = (bytes % units[i].factor) * 100 / units[i].factor;
	if (cents == 0)
		snprintf(buf, len, "%" PRIu64 "%s", whole, units[i].name);
	else if (cents % 10 == 0)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%s", whole, cents / 10, units[i].name);
	else
		snprintf(buf, len, "%" PRIu64 ".%02" PRIu64 "%s", whole, cents, units[i].name);
	return buf;
}

char *fr_format_time(int64_t unix_ns, char *buf, size_t len)
{
	/* Floor division, so times before 1970 keep a positive fraction. */
	int64_t sec = unix_ns / FR_NS_PER_S;
	int64_t rem = unix_ns % FR_NS_PER_S;
	time_t t;
	struct tm tm;

	if (rem < 0) {
		rem += FR_NS_PER_S;
		sec--;
	}
	t = (time_t)sec;
	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "invalid-time");
		return buf;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(rem / 1000000));
	return buf;
}

char *fr_format_size_human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%lluB", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f%s", v, units[u]);
	return buf;
}

int fr_parse_pid_list(const char *text, uint32_t *pids, uint32_t cap, uint32_t *n)
{
	const char *p = text;

	if (!*p)
		return -EINVAL;
	while (*p) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v == 0 || v > INT32_MAX)
			return -EINVAL;
		if (*n == cap)
			return -E2BIG;
		pids[(*n)++] = (uint32_t)v;
		if (*end == ',' && end[1])
			p = end + 1;
		else if (*end == '\0')
			p = end;
		else
			return -EINVAL;
	}
	return 0;
}

size_t fr_utf8_len(const unsigned char *s, size_t left)
{
	size_t n = s[0] < 0x80			 ? 1
		   : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
		   : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		   : s[0] >= 0xf0 && s[0] < 0xf5 ? 4
						 : 0;

	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong three- and four-byte forms, surrogates, past U+10FFFF. */
	if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
	    (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
		return 0;
	return n;
}

char *fr_utf8_clean(const char *text, size_t len, size_t *outlen)
{
	const unsigned char *s = (const unsigned char *)text;
	char *out = malloc(len * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = fr_utf8_len(s + i, len - i);

		if (n) {
			memcpy(o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	*outlen = (size_t)(o - out);
	return out;
}

void fr_json_fputs(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = fr_utf8_len(s, SIZE_MAX);

		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\u%04x", *s);
		else if (n == 0)
			fputs("\\ufffd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
	fputc('"', f);
}
