/* Shared by the files of the perf_events test program (perf_events.c,
 * perf_offcpu.c, perf_hardware.c, perf_period.c): its parts, the clocks, and draining or
 * loading the CPU for a while. CHECK() failures of all files are counted
 * together, in perf_events.c. */
#ifndef FR_TESTS_PERF_TEST_H
#define FR_TESTS_PERF_TEST_H

#include <stdint.h>

#include "recorder/sampling/perf.h"

#define FR_TESTS_SHARED_FAILURES
#include "tests/unit/check.h"

#define SKIP 77
#define NS_PER_MS 1000000LL

int64_t mono_ns(void);
int64_t real_ns(void);
uint32_t gettid_u32(void);

/* Drains `p` whenever one of its rings wakes us, for `ms` milliseconds. */
void drain_for(struct fr_perf *p, const struct fr_perf_handler *h, int ms);

/* Keeps this thread on its CPU for `ms` milliseconds. */
void spin_ms(int ms);

/* The parts, one meson test each: 0 pass, 1 fail, SKIP. */
int test_offcpu(void);
int test_hardware(void);
int test_pmu(void);
int test_retune(void);
int test_sideband(void);
int test_period(void);

#endif
