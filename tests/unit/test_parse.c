/* Durations, sizes, times and integers as users type them, and the
 * formatters reading back to the same values. */
#include "core/util/parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/time.h"
#include "tests/unit/check.h"

static void duration_ok(const char *text, int64_t want)
{
	int64_t ns = -1;
	int ret = fr_parse_duration(text, &ns);

	CHECK(ret == 0 && ns == want, "duration \"%s\": ret %d, %" PRId64 " ns, want %" PRId64,
	      text, ret, ns, want);
}

static void duration_bad(const char *text, int want_err)
{
	int64_t ns = 12345;
	int ret = fr_parse_duration(text, &ns);

	CHECK(ret == want_err, "duration \"%s\": ret %d, want %d", text, ret, want_err);
	CHECK(ns == 12345, "duration \"%s\": output written on failure", text);
}

static void test_durations(void)
{
	duration_ok("500ms", 500000000LL);
	duration_ok("10s", 10 * FR_NS_PER_S);
	duration_ok("5m", 300000000000LL);
	duration_ok("1h", 3600000000000LL);
	duration_ok("1.5s", 1500000000LL);
	duration_ok("0s", 0);
	duration_ok("0.5ms", 500000LL);
	duration_ok("250us", 250000LL);
	duration_ok("7ns", 7);
	duration_ok("2d", 2 * 86400000000000LL);
	duration_ok("1.25h", 4500000000000LL);
	duration_ok("0.000000001s", 1);
	/* Digits beyond a nanosecond are truncated, not rounded. */
	duration_ok("1.9999999999s", 1999999999LL);
	/* The largest value: INT64_MAX ns. */
	duration_ok("9223372036854775807ns", INT64_MAX);
	duration_ok("9223372036.854775807s", INT64_MAX);

	/* Compound: the units from the largest down, each once. */
	duration_ok("1h30m", 5400000000000LL);
	duration_ok("2m30s", 150000000000LL);
	duration_ok("1d2h3m4s5ms", ((26 * 60 + 3) * 60 + 4) * FR_NS_PER_S + 5000000LL);
	duration_ok("1m30.5s", 90500000000LL);
	duration_ok("1s500ms", 1500000000LL);
	duration_bad("30m1h", -EINVAL);
	duration_bad("1m1m", -EINVAL);
	duration_bad("1.5m30s", -EINVAL);
	duration_bad("1h30", -EINVAL);
	duration_bad("1h 30m", -EINVAL);
	duration_bad("1h-30m", -EINVAL);
	duration_bad("106751d24h", -ERANGE);

	duration_bad("abc", -EINVAL);
	duration_bad("-5s", -EINVAL);
	duration_bad("+5s", -EINVAL);
	duration_bad("10", -EINVAL);
	duration_bad("10x", -EINVAL);
	duration_bad("", -EINVAL);
	duration_bad("5s junk", -EINVAL);
	duration_bad(" 5s", -EINVAL);
	duration_bad("5 s", -EINVAL);
	duration_bad("5S", -EINVAL);
	duration_bad("1.s", -EINVAL);
	duration_bad(".5s", -EINVAL);
	duration_bad("s", -EINVAL);
	duration_bad("1e3s", -EINVAL);
	duration_bad(NULL, -EINVAL);
	duration_bad("9223372036854775808ns", -ERANGE);
	duration_bad("9223372037s", -ERANGE);
	duration_bad("106752d", -ERANGE);
	duration_bad("99999999999999999999999s", -ERANGE);
	/* A huge number with a bad unit is a syntax error first. */
	duration_bad("99999999999999999999999x", -EINVAL);
}

static void size_ok(const char *text, uint64_t want)
{
	uint64_t b = 1;
	int ret = fr_parse_size(text, &b);

	CHECK(ret == 0 && b == want, "size \"%s\": ret %d, %" PRIu64 ", want %" PRIu64, text, ret,
	      b, want);
}

static void size_bad(const char *text, int want_err)
{
	uint64_t b = 12345;
	int ret = fr_parse_size(text, &b);

	CHECK(ret == want_err, "size \"%s\": ret %d, want %d", text, ret, want_err);
	CHECK(b == 12345, "size \"%s\": output written on failure", text);
}

static void test_sizes(void)
{
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("512B", 512);
	size_ok("1KiB", 1024);
	size_ok("256MiB", 256ULL << 20);
	size_ok("2GiB", 2ULL << 30);
	size_ok("3TiB", 3ULL << 40);
	size_ok("1K", 1024);
	size_ok("64M", 64ULL << 20);
	size_ok("1G", 1ULL << 30);
	size_ok("1T", 1ULL << 40);
	size_ok("8KB", 8192);
	size_ok("100MB", 100ULL << 20);
	size_ok("1GB", 1ULL << 30);
	size_ok("1TB", 1ULL << 40);
	size_ok("256mb", 256ULL << 20);
	size_ok("1.5GiB", 3ULL << 29);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("16777215TiB", 16777215ULL << 40);

	size_bad("", -EINVAL);
	size_bad("abc", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("10XB", -EINVAL);
	size_bad("10 MiB", -EINVAL);
	size_bad("10MiB ", -EINVAL);
	size_bad("1.5", -EINVAL);
	size_bad("1.5B", -EINVAL);
	size_bad("MiB", -EINVAL);
	size_bad(NULL, -EINVAL);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("16777216TiB", -ERANGE);
}

static void time_ok(const char *text, int64_t want)
{
	int64_t ns = -1;
	int ret = fr_parse_time(text, &ns);

	CHECK(ret == 0 && ns == want, "time \"%s\": ret %d, %" PRId64 ", want %" PRId64, text, ret,
	      ns, want);
}

static void time_bad(const char *text)
{
	int64_t ns = 12345;
	int ret = fr_parse_time(text, &ns);

	CHECK(ret == -EINVAL, "time \"%s\": ret %d, want -EINVAL", text, ret);
	CHECK(ns == 12345, "time \"%s\": output written on failure", text);
}

static void test_times(void)
{
	const int64_t s = FR_NS_PER_S;
	/* 2026-11-22T13:05:00Z, from `date -u -d 2026-11-22T13:05:00Z +%s`. */
	const int64_t t0 = 1795352700LL * s;

	time_ok("1970-01-01T00:00:00Z", 0);
	time_ok("2026-11-22T13:05:00Z", t0);
	time_ok("2026-11-22t13:05:00z", t0);
	time_ok("2026-11-22 13:05:00Z", t0);
	time_ok("2026-11-22T13:05:00.5Z", t0 + s / 2);
	time_ok("2026-11-22T13:05:00.123456789Z", t0 + 123456789);
	time_ok("2026-11-22T13:05:00.1234567891Z", t0 + 123456789);
	time_ok("2026-11-22T15:05:00+02:00", t0);
	time_ok("2026-11-22T07:35:00-05:30", t0);
	time_ok("2024-02-29T00:00:00Z", 1709164800LL * s);
	time_ok("1969-12-31T23:59:59Z", -s);
	time_ok("0", 0);
	time_ok("1795352700", t0);
	time_ok("1795352700.25", t0 + s / 4);

	time_bad("");
	time_bad("yesterday");
	time_bad("2026-11-22");
	time_bad("2026-11-22T13:05:00");
	time_bad("2026-11-22T13:05:00ZZ");
	time_bad("2026-11-22T13:05:00+0200");
	time_bad("2026-13-01T00:00:00Z");
	time_bad("2026-02-29T00:00:00Z");
	time_bad("2026-11-22T24:00:00Z");
	time_bad("2026-11-22T13:05:00.Z");
	time_bad("-5");
	time_bad("1795352700.");
	time_bad("1795352700s");
	time_bad("9999-01-01T00:00:00Z");
	time_bad("99999999999");
	time_bad(NULL);
}

static void test_u64(void)
{
	uint64_t v = 0;

	CHECK(fr_parse_u64("42", 0, 100, &v) == 0 && v == 42, "u64 42");
	CHECK(fr_parse_u64("0", 0, 0, &v) == 0 && v == 0, "u64 0");
	CHECK(fr_parse_u64("18446744073709551615", 0, UINT64_MAX, &v) == 0 && v == UINT64_MAX,
	      "u64 max");
	CHECK(fr_parse_u64("18446744073709551616", 0, UINT64_MAX, &v) == -ERANGE, "u64 overflow");
	CHECK(fr_parse_u64("101", 0, 100, &v) == -ERANGE, "u64 above max");
	CHECK(fr_parse_u64("4", 5, 100, &v) == -ERANGE, "u64 below min");
	CHECK(fr_parse_u64("", 0, 100, &v) == -EINVAL, "u64 empty");
	CHECK(fr_parse_u64("-1", 0, 100, &v) == -EINVAL, "u64 negative");
	CHECK(fr_parse_u64("12a", 0, 100, &v) == -EINVAL, "u64 junk");
	CHECK(fr_parse_u64(" 1", 0, 100, &v) == -EINVAL, "u64 space");
	CHECK(fr_parse_u64("0x10", 0, 100, &v) == -EINVAL, "u64 hex");
}

/* The human form: `want`, read back within the rounding of its last unit
 * (`exact`: to the nanosecond). */
static void format_duration_is(int64_t ns, const char *want, int exact)
{
	char buf[64];
	int64_t back = -1;

	fr_format_duration(ns, buf, sizeof(buf));
	CHECK(strcmp(buf, want) == 0, "format_duration(%" PRId64 ") = \"%s\", want \"%s\"", ns, buf,
	      want);
	if (ns >= 0 && exact)
		CHECK(fr_parse_duration(buf, &back) == 0 && back == ns,
		      "duration \"%s\" reads back as %" PRId64 ", want %" PRId64, buf, back, ns);
	else if (ns >= 0)
		CHECK(fr_parse_duration(buf, &back) == 0, "duration \"%s\" does not read back",
		      buf);
}

static void format_size_is(uint64_t bytes, const char *want)
{
	char buf[64];
	uint64_t back = 1;

	fr_format_size(bytes, buf, sizeof(buf));
	CHECK(strcmp(buf, want) == 0, "format_size(%" PRIu64 ") = \"%s\", want \"%s\"", bytes, buf,
	      want);
	CHECK(fr_parse_size(buf, &back) == 0 && back == bytes,
	      "size \"%s\" reads back as %" PRIu64 ", want %" PRIu64, buf, back, bytes);
}

static void format_time_is(int64_t ns, const char *want)
{
	char buf[64];
	int64_t back = -1;

	fr_format_time(ns, buf, sizeof(buf));
	CHECK(strcmp(buf, want) == 0, "format_time(%" PRId64 ") = \"%s\", want \"%s\"", ns, buf,
	      want);
	CHECK(fr_parse_time(buf, &back) == 0 && back == ns - ((ns % 1000000 + 1000000) % 1000000),
	      "time \"%s\" reads back as %" PRId64, buf, back);
}

static void test_formatters(void)
{
	char small[4];

	format_duration_is(0, "0s", 1);
	format_duration_is(1500000000LL, "1.5s", 1);
	format_duration_is(60000000000LL, "1m", 1);
	format_duration_is(90000000000LL, "1m30s", 1);
	format_duration_is(150000000000LL, "2m30s", 1);
	format_duration_is(3600000000000LL, "1h", 1);
	format_duration_is(5400000000000LL, "1h30m", 1);
	format_duration_is(86400000000000LL, "1d", 1);
	format_duration_is(97200000000000LL, "1d3h", 1);
	format_duration_is(1, "1ns", 1);
	format_duration_is(999, "999ns", 1);
	format_duration_is(1001, "1us", 0);
	format_duration_is(1500, "1.5us", 1);
	format_duration_is(250000, "250us", 1);
	format_duration_is(999960, "1ms", 0);
	format_duration_is(500000000LL, "500ms", 1);
	format_duration_is(12345678LL, "12.3ms", 0);
	/* The profile's span: never "19834562047ns". */
	format_duration_is(19834562047LL, "19.8s", 0);
	format_duration_is(30633684736LL, "30.6s", 0);
	format_duration_is(59960000000LL, "1m", 0);
	format_duration_is(3599600000000LL, "1h", 0);
	format_duration_is(5405000000000LL, "1h30m", 0);
	format_duration_is(INT64_MAX, "106751d23h47m", 0);
	format_duration_is(-5000000000LL, "-5s", 1);

	format_size_is(0, "0B");
	format_size_is(1000, "1000B");
	format_size_is(1024, "1KiB");
	format_size_is(1025, "1025B");
	format_size_is(256ULL << 20, "256MiB");
	format_size_is(3ULL << 29, "1.5GiB");
	format_size_is(5ULL << 28, "1.25GiB");
	format_size_is((1ULL << 30) + 1, "1073741825B");
	format_size_is(2ULL << 40, "2TiB");
	format_size_is(UINT64_MAX, "18446744073709551615B");

	format_time_is(0, "1970-01-01T00:00:00.000Z");
	format_time_is(1795352700123456789LL, "2026-11-22T13:05:00.123Z");
	format_time_is(-1, "1969-12-31T23:59:59.999Z");

	/* Truncation keeps the buffer a terminated string. */
	fr_format_size(256ULL << 20, small, sizeof(small));
	CHECK(strcmp(small, "256") == 0, "truncated format: \"%s\"", small);
}

static void test_pid_lists(void)
{
	uint32_t pids[3], n = 0;

	CHECK(fr_parse_pid_list("1234", pids, 3, &n) == 0 && n == 1 && pids[0] == 1234, "one pid");
	CHECK(fr_parse_pid_list("5,6", pids, 3, &n) == 0 && n == 3 && pids[1] == 5 && pids[2] == 6,
	      "a list appends");
	CHECK(fr_parse_pid_list("7", pids, 3, &n) == -E2BIG, "over capacity");
	n = 0;
	CHECK(fr_parse_pid_list("", pids, 3, &n) == -EINVAL, "empty");
	CHECK(fr_parse_pid_list("0", pids, 3, &n) == -EINVAL, "pid 0");
	CHECK(fr_parse_pid_list("12x", pids, 3, &n) == -EINVAL, "trailing junk");
	CHECK(fr_parse_pid_list("1,", pids, 3, &n) == -EINVAL, "trailing comma");
	CHECK(fr_parse_pid_list("-1", pids, 3, &n) == -EINVAL, "negative");
	CHECK(fr_parse_pid_list("2147483648", pids, 3, &n) == -EINVAL, "over INT32_MAX");
}

static void test_human_sizes(void)
{
	static const struct {
		uint64_t bytes;
		const char *want;
	} cases[] = {
		{0, "0B"},	    {1023, "1023B"},	     {1024, "1.0KiB"},
		{21811, "21.3KiB"}, {267390976, "255.0MiB"}, {3ull << 30, "3.0GiB"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fr_format_size_human(cases[i].bytes, buf, sizeof(buf));
		if (strcmp(buf, cases[i].want) != 0) {
			fprintf(stderr, "fr_format_size_human(%llu) = \"%s\", want \"%s\"\n",
				(unsigned long long)cases[i].bytes, buf, cases[i].want);
			failures++;
		}
	}
}

/* fr_parse_when at a fixed `now` in zone `tz`. */
static void when_ok(const char *tz, const char *text, int64_t now, int64_t want)
{
	int64_t t = -1;
	char why[128];
	int ret;

	setenv("TZ", tz, 1);
	tzset();
	ret = fr_parse_when(text, now, &t, why, sizeof(why));
	CHECK(ret == 0 && t == want, "when \"%s\" (TZ %s): ret %d (%s), %" PRId64 ", want %" PRId64,
	      text, tz, ret, why, t, want);
}

static void when_bad(const char *text, int64_t now, const char *want_why)
{
	int64_t t = 12345;
	char why[128];
	int ret = fr_parse_when(text, now, &t, why, sizeof(why));

	CHECK(ret == -EINVAL && t == 12345, "when \"%s\": ret %d, %" PRId64, text, ret, t);
	CHECK(strcmp(why, want_why) == 0, "when \"%s\": why \"%s\", want \"%s\"", text, why,
	      want_why);
}

static void test_when(void)
{
	/* 2026-11-24T13:30:00Z */
	const int64_t now = 1795527000 * FR_NS_PER_S, s = FR_NS_PER_S;

	when_ok("UTC", "now", now, now);
	when_ok("UTC", "-10m", now, now - 600 * s);
	when_ok("UTC", "-1h30m", now, now - 5400 * s);
	when_ok("UTC", "-500ms", now, now - s / 2);
	when_ok("UTC", "@1732453500", now, 1732453500LL * s);
	when_ok("UTC", "@1732453500.5", now, 1732453500LL * s + s / 2);
	when_ok("UTC", "1732453500", now, 1732453500LL * s);
	when_ok("UTC", "2026-11-24T13:05:00+01:00", now, now - 5100 * s);
	when_ok("UTC", "2026-11-24T13:05:00Z", now, now - 1500 * s);
	/* Clock times: local, today... */
	when_ok("UTC", "13:05", now, now - 1500 * s);
	when_ok("UTC", "13:05:00", now, now - 1500 * s);
	when_ok("UTC", "13:05:00.25", now, now - 1500 * s + s / 4);
	when_ok("UTC", "13:05:00.123456789", now, now - 1500 * s + 123456789);
	when_ok("UTC", "13:30:00", now, now);
	when_ok("CET-1", "14:05:00", now, now - 1500 * s);
	when_ok("EST5", "08:05", now, now - 1500 * s);
	/* ...also a moment ahead (up to 5 minutes): a --to one second in
	 * the future is not yesterday's... */
	when_ok("UTC", "13:30:01", now, now + s);
	when_ok("CET-1", "14:31", now, now + 60 * s);
	when_ok("UTC", "13:35:00", now, now + 300 * s);
	/* ...or yesterday's when later than that. */
	when_ok("UTC", "13:35:01", now, now + 301 * s - 86400 * s);
	when_ok("UTC", "23:59", now, now + (10 * 3600 + 29 * 60) * s - 86400 * s);
	when_ok("CET-1", "14:36", now, now + 360 * s - 86400 * s);
	setenv("TZ", "UTC", 1);
	tzset();

	when_bad("13:61", now, "minutes go from 00 to 59");
	when_bad("24:00", now, "hours go from 00 to 23");
	when_bad("13:05:60", now, "seconds go from 00 to 59");
	when_bad("1:05", now, "");
	when_bad("13:05:00.", now, "");
	when_bad("13:5", now, "");
	when_bad("13:05:", now, "");
	when_bad("13:05x", now, "");
	when_bad("-10", now, "not a duration after '-'");
	when_bad("-10x", now, "not a duration after '-'");
	when_bad("--10m", now, "not a duration after '-'");
	when_bad("-100000d", now, "reaches before 1970");
	when_bad("@", now, "");
	when_bad("@-5", now, "");
	when_bad("@12:00", now, "");
	when_bad("yesterday", now, "");
	when_bad("", now, "");
	when_bad("2026-11-24T13:05:00", now, "");
}

int main(void)
{
	test_when();
	test_human_sizes();
	test_pid_lists();
	test_durations();
	test_sizes();
	test_times();
	test_u64();
	test_formatters();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
