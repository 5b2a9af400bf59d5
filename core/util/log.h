/* Logging for every flightrec component.
 *
 * The level is checked in the macro, before any argument is evaluated, so a
 * debug message on a hot path costs one compare when debug logging is off.
 * The line's form is the program's choice (fr_log_set_format): a CLI's
 * plain words, a daemon's RFC 3339 UTC timestamps and levels, JSON, or the
 * journal's priority prefix. errno is preserved across the call so a
 * caller may log and then return -errno.
 */
#ifndef FR_CORE_LOG_H
#define FR_CORE_LOG_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

enum fr_log_level {
	FR_LOG_ERR = 0,
	FR_LOG_WARN = 1,
	FR_LOG_INFO = 2,
	FR_LOG_DEBUG = 3,
};

/* Current threshold; messages above it are dropped. Default FR_LOG_INFO. */
extern int fr_log_level;

/* How lines look.
 *   PLAIN    "flightrec: warning: message" (a CLI's user; the default)
 *   TEXT     "2026-11-24T08:01:02.123Z warn flightrecd: message"
 *   JSON     {"ts":"2026-11-24T08:01:02.123Z","level":"warn","prog":"flightrecd",
 *             "pid":42,"msg":"message","src":"ingest.c:299"}
 *   JOURNAL  "<4>message": journald stamps time, program and pid itself and
 *            takes the priority from the syslog prefix.
 * PLAIN, TEXT and JOURNAL add " (file:line)" at debug level (-vv). */
enum fr_log_format {
	FR_LOG_FORMAT_PLAIN = 0,
	FR_LOG_FORMAT_TEXT,
	FR_LOG_FORMAT_JSON,
	FR_LOG_FORMAT_JOURNAL,
};

/* Writes one line to stderr in the format set. Use the macros below
 * rather than calling this directly. */
void fr_log_write(int level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Sets the program name used as the line prefix (default "flightrec"). The
 * string is borrowed and must outlive all logging. */
void fr_log_set_ident(const char *ident);

/* Sets and reads the line format (before threads start). */
void fr_log_set_format(enum fr_log_format format);
enum fr_log_format fr_log_get_format(void);

/* "text", "json" or "journal" into *format. Returns 0, or -1 for anything
 * else. */
int fr_log_parse_format(const char *s, enum fr_log_format *format);

/* Whether stderr is the journal's stream ($JOURNAL_STREAM names its
 * device and inode, and descriptor 2 is still that stream). */
int fr_log_stderr_is_journal(void);

/* Formats one line without its newline into `buf` (NUL-terminated) and
 * returns its length: `real_ns` is the Unix time, `src` "file:line" or
 * NULL. Control characters in `msg` are escaped, and a JSON line is valid
 * JSON even when the message is cut to fit (with `len` of 512 or more).
 * The work of fr_log_write(), apart for tests. */
size_t fr_log_format_line(char *buf, size_t len, enum fr_log_format format, int64_t real_ns,
			  int level, const char *ident, const char *src, const char *msg);

#define fr_log(lvl, ...)                                                      \
	do {                                                                  \
		if ((lvl) <= fr_log_level)                                    \
			fr_log_write((lvl), __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define fr_log_err(...) fr_log(FR_LOG_ERR, __VA_ARGS__)
#define fr_log_warn(...) fr_log(FR_LOG_WARN, __VA_ARGS__)
#define fr_log_info(...) fr_log(FR_LOG_INFO, __VA_ARGS__)
#define fr_log_debug(...) fr_log(FR_LOG_DEBUG, __VA_ARGS__)

/* Rate-limited variant for hot paths: at most one message per `interval_ns`
 * per call site; the number of suppressed messages is reported with the
 * next one that gets through. */
#define fr_log_ratelimited(lvl, interval_ns, ...)                                            \
	do {                                                                                 \
		static int64_t fr__last_;                                                    \
		static uint64_t fr__dropped_;                                                \
		if ((lvl) <= fr_log_level) {                                                 \
			if (fr_log_ratelimit_pass(&fr__last_, &fr__dropped_, (interval_ns))) \
				fr_log_write((lvl), __FILE__, __LINE__, __VA_ARGS__);        \
		}                                                                            \
	} while (0)

/* Helper for fr_log_ratelimited(); returns non-zero when the message may be
 * written, and then logs (and clears) the count of suppressed ones. */
int fr_log_ratelimit_pass(int64_t *last_ns, uint64_t *dropped, int64_t interval_ns);

/* Formats a one-line error for a caller-provided buffer (the `err, errlen`
 * parameters of functions that explain their failures); does nothing when
 * `err` is NULL or `errlen` 0. errno is preserved. */
void fr_set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The symbolic name of errno value `e` ("EPERM", "ENOENT": the name people
 * search for), or its description when it has none. */
const char *fr_errno_name(int e);

/* Monotonic and real-time clocks in nanoseconds. */
int64_t fr_now_mono_ns(void);
int64_t fr_now_real_ns(void);

struct timespec;

/* Sets *ts to `ns` from now on CLOCK_MONOTONIC: the deadline for a
 * pthread_cond_timedwait() on a condition variable of that clock. */
void fr_mono_deadline(struct timespec *ts, int64_t ns);

/* Initializes a condition variable whose timed waits use CLOCK_MONOTONIC
 * (so that setting the wall clock moves no deadline). Returns 0 or
 * -errno. */
int fr_mono_cond_init(pthread_cond_t *cond);

#endif
