/* Names and units of the sampled events. Ids are stored in chunks, so the
 * table is append-only. */
#include "core/sample.h"

#include <errno.h>
#include <string.h>

static const struct {
	const char *name;
	const char *unit;
} events[FR_EVENT_COUNT] = {
	[FR_EVENT_CPU] = {"cpu", "nanoseconds"},
	[FR_EVENT_CYCLES] = {"cycles", "count"},
	[FR_EVENT_INSTRUCTIONS] = {"instructions", "count"},
	[FR_EVENT_CACHE_REFERENCES] = {"cache-references", "count"},
	[FR_EVENT_CACHE_MISSES] = {"cache-misses", "count"},
	[FR_EVENT_BRANCH_INSTRUCTIONS] = {"branch-instructions", "count"},
	[FR_EVENT_BRANCH_MISSES] = {"branch-misses", "count"},
	[FR_EVENT_PAGE_FAULTS] = {"page-faults", "count"},
	[FR_EVENT_CONTEXT_SWITCHES] = {"context-switches", "count"},
	[FR_EVENT_CPU_MIGRATIONS] = {"cpu-migrations", "count"},
	[FR_EVENT_OFFCPU] = {"offcpu", "nanoseconds"},
	[FR_EVENT_RAW] = {"raw", "count"},
};

const char *fr_event_name(uint32_t event)
{
	return event < FR_EVENT_COUNT ? events[event].name : "unknown";
}

const char *fr_event_unit(uint32_t event)
{
	return event < FR_EVENT_COUNT ? events[event].unit : "count";
}

int fr_event_lookup(const char *name)
{
	for (int i = 0; i < FR_EVENT_COUNT; i++)
		if (strcmp(events[i].name, name) == 0)
			return i;
	return -ENOENT;
}
