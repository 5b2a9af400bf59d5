/* The log line formats (core/util/log.c): the daemon's RFC 3339 UTC
 * timestamp with milliseconds and level, the CLI's plain words without a
 * source position, JSON that parses whatever the message holds (quotes,
 * control characters, invalid UTF-8, a message cut to fit), the journal's
 * priority prefix, and the parsing of --log-format. */
#include "core/util/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tests/unit/check.h"

/* 2026-11-24T08:01:02.123456789Z */
static const int64_t T0 = 1795507262123456789LL;

static void test_text(void)
{
	char buf[512];
	size_t n = fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_TEXT, T0, FR_LOG_WARN,
				      "flightrecd", NULL, "the ingest thread was held up");

	CHECK(strcmp(buf, "2026-11-24T08:01:02.123Z warn flightrecd: the ingest thread was held "
			  "up") == 0,
	      "text: \"%s\"", buf);
	CHECK(n == strlen(buf), "text: length %zu, want %zu", n, strlen(buf));
	/* Milliseconds are truncated, not rounded: .999999 stays in its second. */
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_TEXT, 1795507262999999999LL, FR_LOG_ERR,
			   "x", NULL, "m");
	CHECK(strcmp(buf, "2026-11-24T08:01:02.999Z error x: m") == 0, "rounding: \"%s\"", buf);
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_TEXT, T0, FR_LOG_DEBUG, "x",
			   "ingest.c:12", "m");
	CHECK(strcmp(buf, "2026-11-24T08:01:02.123Z debug x: m (ingest.c:12)") == 0,
	      "text with source: \"%s\"", buf);
	/* A newline in a name a user chose cannot start a forged line. */
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_TEXT, T0, FR_LOG_INFO, "x", NULL,
			   "comm a\n2026-11-24T00:00:00.000Z error x: forged");
	CHECK(strchr(buf, '\n') == NULL && strstr(buf, "comm a\\x0a2026") != NULL,
	      "newline not escaped: \"%s\"", buf);
}

static void test_plain(void)
{
	char buf[512];

	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_PLAIN, T0, FR_LOG_WARN, "flightrec",
			   NULL, "no samples");
	CHECK(strcmp(buf, "flightrec: warning: no samples") == 0, "plain: \"%s\"", buf);
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_PLAIN, T0, FR_LOG_ERR, "flightrec", NULL,
			   "gone");
	CHECK(strcmp(buf, "flightrec: error: gone") == 0, "plain error: \"%s\"", buf);
}

static void test_journal(void)
{
	char buf[512];

	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_JOURNAL, T0, FR_LOG_WARN, "flightrecd",
			   NULL, "stalled");
	CHECK(strcmp(buf, "<4>stalled") == 0, "journal warn: \"%s\"", buf);
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_JOURNAL, T0, FR_LOG_ERR, "flightrecd",
			   NULL, "e");
	CHECK(strcmp(buf, "<3>e") == 0, "journal error: \"%s\"", buf);
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_JOURNAL, T0, FR_LOG_INFO, "flightrecd",
			   NULL, "i");
	CHECK(strcmp(buf, "<6>i") == 0, "journal info: \"%s\"", buf);
}

/* Parses a JSON line and checks its members; returns the message. */
static char *json_msg(const char *line, const char *want_level)
{
	cJSON *o = cJSON_Parse(line);
	const cJSON *ts, *level, *prog, *msg, *pid;
	char *ret = NULL;

	CHECK(o != NULL, "not JSON: %s", line);
	if (!o)
		return NULL;
	ts = cJSON_GetObjectItemCaseSensitive(o, "ts");
	level = cJSON_GetObjectItemCaseSensitive(o, "level");
	prog = cJSON_GetObjectItemCaseSensitive(o, "prog");
	msg = cJSON_GetObjectItemCaseSensitive(o, "msg");
	pid = cJSON_GetObjectItemCaseSensitive(o, "pid");
	CHECK(cJSON_IsString(ts) && strcmp(ts->valuestring, "2026-11-24T08:01:02.123Z") == 0,
	      "json ts: %s", line);
	CHECK(cJSON_IsString(level) && strcmp(level->valuestring, want_level) == 0,
	      "json level: %s", line);
	CHECK(cJSON_IsString(prog) && strcmp(prog->valuestring, "flightrecd") == 0, "json prog: %s",
	      line);
	CHECK(cJSON_IsNumber(pid) && pid->valueint > 0, "json pid: %s", line);
	CHECK(cJSON_IsString(msg), "json msg: %s", line);
	if (cJSON_IsString(msg))
		ret = strdup(msg->valuestring);
	cJSON_Delete(o);
	return ret;
}

static void test_json(void)
{
	char buf[4096], big[3000];
	char *m;

	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_JSON, T0, FR_LOG_INFO, "flightrecd",
			   "requests.c:7", "dump of \"a\\b\" written\tto /x");
	m = json_msg(buf, "info");
	CHECK(m && strcmp(m, "dump of \"a\\b\" written\tto /x") == 0, "json round trip: %s", buf);
	free(m);
	CHECK(strstr(buf, "\"src\":\"requests.c:7\"") != NULL, "json src: %s", buf);

	/* Invalid UTF-8 (a file name's bytes) becomes U+FFFD; valid stays. */
	fr_log_format_line(buf, sizeof(buf), FR_LOG_FORMAT_JSON, T0, FR_LOG_WARN, "flightrecd",
			   NULL, "f\xff\xc3\xa9\xed\xa0\x80");
	m = json_msg(buf, "warn");
	CHECK(m && strcmp(m, "f\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") == 0,
	      "json utf-8: %s", buf);
	free(m);
	CHECK(strstr(buf, "\"src\"") == NULL, "json src without one: %s", buf);

	/* A message of quotes longer than the line is cut on an escape's
	 * boundary and the object still closes. */
	memset(big, '"', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fr_log_format_line(buf, 600, FR_LOG_FORMAT_JSON, T0, FR_LOG_ERR, "flightrecd", "log.c:1",
			   big);
	m = json_msg(buf, "error");
	CHECK(m && strlen(m) > 100 && strspn(m, "\"") == strlen(m), "json cut: %s", buf);
	free(m);
	CHECK(strlen(buf) < 600, "json cut: %zu bytes", strlen(buf));
}

static void test_parse_format(void)
{
	enum fr_log_format f = FR_LOG_FORMAT_PLAIN;

	CHECK(fr_log_parse_format("json", &f) == 0 && f == FR_LOG_FORMAT_JSON, "json");
	CHECK(fr_log_parse_format("text", &f) == 0 && f == FR_LOG_FORMAT_TEXT, "text");
	CHECK(fr_log_parse_format("journal", &f) == 0 && f == FR_LOG_FORMAT_JOURNAL, "journal");
	CHECK(fr_log_parse_format("JSON", &f) < 0 && fr_log_parse_format("", &f) < 0,
	      "bad formats accepted");
}

int main(void)
{
	test_text();
	test_plain();
	test_journal();
	test_json();
	test_parse_format();
	return failures != 0;
}
