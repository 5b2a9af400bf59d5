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

/* sources_memory.c: what an event every recorder records (memory's, the
 * black box's) counted (kept, lost), and its status row in *ev (stacks:
 * "none", "kernel+user"). Returns 0 when it was never set up (not
 * listed), else 1. */
void sources_always_count(struct fr_memory_source *m, uint64_t kept, uint64_t lost);
int sources_always_status(const struct fr_memory_source *m, uint32_t event, const char *stacks,
			  struct fr_ipc_event_status *ev);

#endif
