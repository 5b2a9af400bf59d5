/* Logging: one line per message on stderr, level checked by the callers'
 * macros (core/util/log.h). errno is saved and restored so callers can log
 * between a failing call and returning -errno. */
#include "core/util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int fr_log_level = FR_LOG_INFO;
static const char *log_ident = "flightrec";

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void fr_log_set_ident(const char *ident)
{
	log_ident = ident;
}

void fr_log_write(int level, const char *file, int line, const char *fmt, ...)
{
	int saved = errno;
	char msg[1024];
	va_list ap;
	const char *base = strrchr(file, '/');

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level < 0)
		level = 0;
	if (level > FR_LOG_DEBUG)
		level = FR_LOG_DEBUG;
	/* One fprintf per line, so lines from several threads do not mix. */
	fprintf(stderr, "%s: [%s:%d] %s: %s\n", log_ident, base ? base + 1 : file, line,
		level_names[level], msg);
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

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t fr_now_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

int64_t fr_now_real_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}

void fr_mono_deadline(struct timespec *ts, int64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ns / 1000000000LL;
	ts->tv_nsec += ns % 1000000000LL;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
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
