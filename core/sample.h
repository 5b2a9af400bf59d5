/* The sample model shared by the recorder (which produces samples) and the
 * chunk codec (which stores them).
 */
#ifndef FR_CORE_SAMPLE_H
#define FR_CORE_SAMPLE_H

#include <stdint.h>

/* Deepest call stack kept; deeper stacks are truncated at the root end and
 * counted as truncated. */
#define FR_MAX_FRAMES 127

/* Event identifiers as stored in chunks (one byte on disk is enough, the
 * column is a varint). The names and units are fixed by fr_event_name() and
 * fr_event_unit(); new events are appended, never renumbered. */
enum fr_event {
	FR_EVENT_CPU = 0,          /* software cpu-clock, weight in ns */
	FR_EVENT_CYCLES,
	FR_EVENT_INSTRUCTIONS,
	FR_EVENT_CACHE_REFERENCES,
	FR_EVENT_CACHE_MISSES,
	FR_EVENT_BRANCH_INSTRUCTIONS,
	FR_EVENT_BRANCH_MISSES,
	FR_EVENT_PAGE_FAULTS,
	FR_EVENT_CONTEXT_SWITCHES,
	FR_EVENT_CPU_MIGRATIONS,
	FR_EVENT_OFFCPU,           /* sched_switch, weight in wall ns */
	FR_EVENT_RAW,              /* raw PMU event */
	FR_EVENT_COUNT
};

/* One sample as the recorder hands it to the chunk builder. All pointers
 * are borrowed for the duration of the call that receives the sample. */
struct fr_sample {
	int64_t time_ns;       /* CLOCK_REALTIME, Unix nanoseconds */
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;
	uint32_t event;        /* enum fr_event */
	uint64_t weight;       /* in the event's unit (ns for cpu) */
	uint32_t rate_hz;      /* sampling rate this sample was collected at */
	uint16_t nr_kernel;    /* leading entries of ips[] that are kernel frames */
	uint16_t nr_frames;    /* entries in ips[], leaf first, <= FR_MAX_FRAMES */
	const uint64_t *ips;
};

/* Name ("cpu", "cycles", ...) and pprof unit ("nanoseconds", "count") of an
 * event id; "unknown" for ids out of range. */
const char *fr_event_name(uint32_t event);
const char *fr_event_unit(uint32_t event);

/* Looks an event up by name. Returns its id or -ENOENT. */
int fr_event_lookup(const char *name);

#endif
