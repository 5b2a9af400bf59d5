/* Shared by the unit tests: CHECK(cond, fmt, ...) reports the failed
 * condition with file and line and counts it; a test's main() returns
 * non-zero when `failures` is. A test over tests/unit/fixture.h shares one
 * count with the fixture. */
#ifndef FR_TESTS_CHECK_H
#define FR_TESTS_CHECK_H

#include <stdio.h>

#ifdef FR_TESTS_SHARED_FAILURES
/* Defined once, in fixture_check.c, for the tests built over a fixture. */
extern int failures;
#else
static int failures;
#endif

#define CHECK(cond, ...)                                                \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                   \
			fputc('\n', stderr);                            \
			failures++;                                     \
		}                                                       \
	} while (0)

#endif
