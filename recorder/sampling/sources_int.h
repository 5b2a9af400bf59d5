/* The sources' parts (recorder/sampling/sources.c, sources_reconcile.c,
 * sources_pmu.c): what they share. Private to them. */
#ifndef FR_RECORDER_SOURCES_INT_H
#define FR_RECORDER_SOURCES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/sampling/sources.h"

/* Registers (or forgets, on == 0) every CPU's descriptor of `perf` in the
 * poller; NULL perf does nothing. Failures are logged: the ring is then
 * drained once a second. */
void sources_watch(struct fr_sources *s, struct fr_perf *perf, int on);

/* "1ms of CPU time" (cpu periods are nanoseconds of it) or "1000 events"
 * into buf. Returns buf. */
const char *sources_period_text(uint32_t event, uint64_t period, char *buf, size_t len);

#endif
