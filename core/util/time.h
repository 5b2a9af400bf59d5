/* Units of time and the conversions every part of the tree makes: one
 * definition of nanoseconds per second so that a duration reads the same in
 * the recorder, the store, the config and the CLI. Header only, no state. */
#ifndef FR_CORE_UTIL_TIME_H
#define FR_CORE_UTIL_TIME_H

#include <stdint.h>
#include <time.h>

/* int64_t, as every duration and timestamp in the tree: a product or
 * quotient with one keeps that type (and its printf format). */
#define FR_NS_PER_S ((int64_t)1000000000)
#define FR_NS_PER_MS ((int64_t)1000000)
#define FR_NS_PER_US ((int64_t)1000)
#define FR_US_PER_S ((int64_t)1000000)
#define FR_MS_PER_S ((int64_t)1000)

/* Nanoseconds in *ts (no overflow check: a clock reading fits until 2262). */
static inline int64_t fr_ns_from_timespec(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * FR_NS_PER_S + ts->tv_nsec;
}

/* The timespec for ns >= 0 nanoseconds. */
static inline struct timespec fr_timespec_from_ns(int64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / FR_NS_PER_S),
			      .tv_nsec = (long)(ns % FR_NS_PER_S)};

	return ts;
}

/* Now on clock id, in nanoseconds (0 if the clock cannot be read). */
static inline int64_t fr_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return fr_ns_from_timespec(&ts);
}

#endif
