/* The one count of failed checks that a test built over a fixture library
 * shares with it (tests/unit/check.h, FR_TESTS_SHARED_FAILURES). */
int failures;
