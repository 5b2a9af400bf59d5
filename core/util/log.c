/* Logging: one line per message on stderr, level checked by the callers'
 * macros (core/util/log.h), in one of four forms (enum fr_log_format): the
 * CLI's plain "flightrec: warning: ...", the daemon's timestamped text,
 * one JSON object per line, or the journal's "<N>" priority prefix. errno
 * is saved and restored so callers can log between a failing call and
 * returning -errno. Messages carry paths and names users control, so
 * control characters are escaped: a newline in a file name cannot forge a
 * log line. */
#include "core/util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/parse.h"
#include "core/util/time.h"

int fr_log_level = FR_LOG_INFO;
static const char *log_ident = "flightrec";
static enum fr_log_format log_format = FR_LOG_FORMAT_PLAIN;

/* The short names of the text and JSON forms ("warn", as syslog-style
 * tools filter on), and the CLI's words for a person. */
static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const char *const level_words[] = {"error", "warning", "info", "debug"};
/* syslog priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
static const int level_prio[] = {3, 4, 6, 7};

void fr_log_set_ident(const char *ident)
{
	log_ident = ident;
}

void fr_log_set_format(enum fr_log_format format)
{
	log_format = format;
}

enum fr_log_format fr_log_get_format(void)
{
	return log_format;
}

int fr_log_parse_format(const char *s, enum fr_log_format *format)
{
	if (strcmp(s, "text") == 0)
		*format = FR_LOG_FORMAT_TEXT;
	else if (strcmp(s, "json") == 0)
		*format = FR_LOG_FORMAT_JSON;
	else if (strcmp(s, "journal") == 0)
		*format = FR_LOG_FORMAT_JOURNAL;
	else
		return -1;
	return 0;
}

int fr_log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	/* systemd sets "DEV:INO" of the stream it connected; a child whose
	 * stderr was redirected elsewhere inherits the variable, so the
	 * descriptor must still be that stream. */
	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Appends to buf[*pos..len) as snprintf would, keeping *pos <= len - 1. */
static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos + 1 >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos = *pos + (size_t)n < len ? *pos + (size_t)n : len - 1;
}

/* Appends `s` escaped: as a JSON string's contents (control characters
 * as \u00XX, invalid UTF-8 as U+FFFD) or, for text, control characters
 * as \xXX. Stops early rather than cut an escape, leaving `reserve` bytes
 * for what must follow (a JSON line's closing members). */
static void put_escaped(char *buf, size_t len, size_t *pos, const char *s, int json, size_t reserve)
{
	const unsigned char *p = (const unsigned char *)s;
	char piece[8];

	while (*p) {
		size_t n = json ? fr_utf8_len(p, SIZE_MAX) : 1;
		int k;

		if (*p == '"' && json)
			k = snprintf(piece, sizeof(piece), "\\\"");
		else if (*p == '\\' && json)
			k = snprintf(piece, sizeof(piece), "\\\\");
		else if (*p < 0x20 || *p == 0x7f)
			k = snprintf(piece, sizeof(piece), json ? "\\u%04x" : "\\x%02x", *p);
		else if (n == 0)
			k = snprintf(piece, sizeof(piece), "\\ufffd");
		else
			k = snprintf(piece, sizeof(piece), "%.*s", (int)n, (const char *)p);
		if (*pos + (size_t)k + reserve + 1 > len)
			break;
		memcpy(buf + *pos, piece, (size_t)k);
		*pos += (size_t)k;
		buf[*pos] = '\0';
		p += n ? n : 1;
	}
}

size_t fr_log_format_line(char *buf, size_t len, enum fr_log_format format, int64_t real_ns,
			  int level, const char *ident, const char *src, const char *msg)
{
	char ts[80];
	struct tm tm;
	time_t sec = (time_t)(real_ns / FR_NS_PER_S);
	size_t pos = 0;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	level = level < 0 ? 0 : level > FR_LOG_DEBUG ? FR_LOG_DEBUG : level;
	gmtime_r(&sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (int)(real_ns / 1000000 % 1000));
	switch (format) {
	case FR_LOG_FORMAT_JSON:
		put(buf, len, &pos, "{\"ts\":\"%s\",\"level\":\"%s\",\"prog\":\"", ts,
		    level_names[level]);
		put_escaped(buf, len, &pos, ident, 1, 200);
		put(buf, len, &pos, "\",\"pid\":%d,\"msg\":\"", (int)getpid());
		put_escaped(buf, len, &pos, msg, 1, 160);
		put(buf, len, &pos, "\"");
		if (src) {
			put(buf, len, &pos, ",\"src\":\"");
			put_escaped(buf, len, &pos, src, 1, 4);
			put(buf, len, &pos, "\"");
		}
		put(buf, len, &pos, "}");
		break;
	case FR_LOG_FORMAT_JOURNAL:
		/* The journal stamps the time, the program and its pid itself,
		 * and takes the priority from the prefix. */
		put(buf, len, &pos, "<%d>", level_prio[level]);
		put_escaped(buf, len, &pos, msg, 0, 140);
		break;
	case FR_LOG_FORMAT_TEXT:
		put(buf, len, &pos, "%s %s %s: ", ts, level_names[level], ident);
		put_escaped(buf, len, &pos, msg, 0, 140);
		break;
	case FR_LOG_FORMAT_PLAIN:
	default:
		put(buf, len, &pos, "%s: %s: ", ident, level_words[level]);
		put_escaped(buf, len, &pos, msg, 0, 140);
		break;
	}
	if (src && format != FR_LOG_FORMAT_JSON)
		put(buf, len, &pos, " (%s)", src);
	return pos;
}

void fr_log_write(int level, const char *file, int line, const char *fmt, ...)
{
	int saved = errno;
	char msg[1024], src[128], out[4096];
	const char *base = strrchr(file, '/');
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Where in the source is for whoever debugs flightrec: always in
	 * JSON (a field a reader may ignore), in text only with -vv, never
	 * in a CLI's words to its user. */
	snprintf(src, sizeof(src), "%s:%d", base ? base + 1 : file, line);
	n = fr_log_format_line(out, sizeof(out) - 1, log_format, fr_now_real_ns(), level, log_ident,
			       log_format == FR_LOG_FORMAT_JSON || fr_log_level >= FR_LOG_DEBUG
				       ? src
				       : NULL,
			       msg);
	out[n++] = '\n';
	/* One write per line, so lines from several threads do not mix. */
	fwrite(out, 1, n, stderr);
	errno = saved;
}

int fr_log_ratelimit_pass(int64_t *last_ns, uint64_t *dropped, int64_t interval_ns)
{
	int64_t now = fr_now_mono_ns();

	if (*last_ns != 0 && now - *last_ns < interval_ns) {
		__atomic_add_fetch(dropped, 1, __ATOMIC_RELAXED);
		return 0;
	}
	*last_ns = now;
	uint64_t n = __atomic_exchange_n(dropped, 0, __ATOMIC_RELAXED);
	if (n)
		fr_log_write(FR_LOG_INFO, __FILE__, __LINE__, "%llu similar messages suppressed",
			     (unsigned long long)n);
	return 1;
}

const char *fr_errno_name(int e)
{
	const char *name = strerrorname_np(e);

	return name ? name : strerror(e);
}

void fr_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	errno = saved;
}

int64_t fr_now_mono_ns(void)
{
	return fr_clock_ns(CLOCK_MONOTONIC);
}

int64_t fr_now_real_ns(void)
{
	return fr_clock_ns(CLOCK_REALTIME);
}

void fr_mono_deadline(struct timespec *ts, int64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ns / FR_NS_PER_S;
	ts->tv_nsec += ns % FR_NS_PER_S;
	if (ts->tv_nsec >= FR_NS_PER_S) {
		ts->tv_sec++;
		ts->tv_nsec -= FR_NS_PER_S;
	}
}

int fr_mono_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int ret = pthread_condattr_init(&attr);

	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (ret == 0)
		ret = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return -ret;
}
