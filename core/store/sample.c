/* Names and units of the sampled events. Ids are stored in chunks, so the
 * table is append-only. */
#include "core/store/sample.h"

#include <errno.h>
#include <stdio.h>
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
	[FR_EVENT_ALLOC] = {"alloc", "bytes"},
	[FR_EVENT_HEAP] = {"heap", "bytes"},
	[FR_EVENT_OOM] = {"oom", "bytes"},
	[FR_EVENT_RSS] = {"rss", "bytes"},
	[FR_EVENT_MEM_PRESSURE] = {"memory-pressure", "nanoseconds"},
	[FR_EVENT_WAKEUP] = {"wakeup", "nanoseconds"},
	[FR_EVENT_RUNQUEUE] = {"runqueue", "nanoseconds"},
	[FR_EVENT_THROTTLED] = {"throttled", "nanoseconds"},
	[FR_EVENT_EXEC] = {"exec", "count"},
	[FR_EVENT_EXIT] = {"exit", "nanoseconds"},
	[FR_EVENT_CRASH] = {"crash", "count"},
	[FR_EVENT_CPU_PRESSURE] = {"cpu-pressure", "nanoseconds"},
	[FR_EVENT_IO_PRESSURE] = {"io-pressure", "nanoseconds"},
};

const char *fr_event_name(uint32_t event)
{
	if (FR_EVENT_IS_RAW(event) || FR_EVENT_IS_RAWX(event))
		return "raw";
	if (FR_EVENT_IS_OPEN_WAIT(event))
		return "offcpu-open";
	if (event == FR_EVENT_ALLOC_FREE)
		return "alloc-free";
	if (event == FR_EVENT_HEAP_LIVE)
		return "heap-live";
	return event < FR_EVENT_COUNT ? events[event].name : "unknown";
}

const char *fr_event_unit(uint32_t event)
{
	if (FR_EVENT_IS_RAW(event) || FR_EVENT_IS_RAWX(event))
		return "count";
	if (FR_EVENT_IS_OPEN_WAIT(event))
		return "nanoseconds";
	if (event == FR_EVENT_ALLOC_FREE || event == FR_EVENT_HEAP_LIVE)
		return "bytes";
	return event < FR_EVENT_COUNT ? events[event].unit : "count";
}

char *fr_event_format(uint32_t event, char *buf, size_t len)
{
	if (FR_EVENT_IS_RAW(event) || FR_EVENT_IS_RAWX(event))
		fr_event_raw_format(event, buf, len);
	else
		snprintf(buf, len, "%s", fr_event_name(event));
	return buf;
}

int64_t fr_event_lookup(const char *name)
{
	if (strncmp(name, "raw:", 4) == 0)
		return fr_event_raw_lookup(name);
	for (int i = 0; i < FR_EVENT_COUNT; i++)
		if (i != FR_EVENT_RAW && strcmp(events[i].name, name) == 0)
			return i;
	return -ENOENT;
}

int fr_event_has_rate(uint32_t event)
{
	return event != FR_EVENT_OFFCPU && !FR_EVENT_IS_OPEN_WAIT(event) &&
	       event != FR_EVENT_WAKEUP && event != FR_EVENT_RUNQUEUE &&
	       !fr_event_is_memory(event) && event != FR_EVENT_ALLOC_FREE &&
	       event != FR_EVENT_HEAP_LIVE && event != FR_EVENT_THROTTLED &&
	       !fr_event_is_blackbox(event);
}

int fr_event_is_memory(uint32_t event)
{
	return event >= FR_EVENT_ALLOC && event <= FR_EVENT_MEM_PRESSURE;
}

int fr_event_is_series(uint32_t event)
{
	return (event >= FR_EVENT_OOM && event <= FR_EVENT_MEM_PRESSURE) ||
	       event == FR_EVENT_THROTTLED ||
	       (event >= FR_EVENT_EXEC && event <= FR_EVENT_IO_PRESSURE);
}

int fr_event_is_blackbox(uint32_t event)
{
	return event == FR_EVENT_OOM || event == FR_EVENT_MEM_PRESSURE ||
	       event == FR_EVENT_THROTTLED ||
	       (event >= FR_EVENT_EXEC && event <= FR_EVENT_IO_PRESSURE);
}

int fr_event_is_hardware(uint32_t event)
{
	return FR_EVENT_IS_RAW(event) || FR_EVENT_IS_RAWX(event) ||
	       (event >= FR_EVENT_CYCLES && event <= FR_EVENT_BRANCH_MISSES);
}

const char *fr_frame_mark_name(unsigned reason)
{
	static const char *const names[FR_FRAME_MARK_COUNT] = {
		[FR_FRAME_MARK_STACK_COPY] = "stack copy too small",
		[FR_FRAME_MARK_NO_CFI] = "no unwind info",
		[FR_FRAME_MARK_PENDING] = "unwind table not ready",
		[FR_FRAME_MARK_BAD] = "bad unwind data",
		[FR_FRAME_MARK_MAX_DEPTH] = "too many frames",
	};

	return reason > 0 && reason < FR_FRAME_MARK_COUNT ? names[reason] : "unknown";
}

const char *fr_frame_note_name(unsigned note)
{
	static const char *const names[FR_FRAME_NOTE_COUNT] = {
		[FR_FRAME_NOTE_SHORT_WAITS] = "[off-CPU waits under min_wait]",
		[FR_FRAME_NOTE_NO_USER] = "[user stack not captured: not in a system call]",
		[FR_FRAME_NOTE_WAKE_TIMER] = "[timer]",
		[FR_FRAME_NOTE_WAKE_IO] = "[I/O completion]",
		[FR_FRAME_NOTE_WAKE_NET] = "[network]",
		[FR_FRAME_NOTE_WAKE_IRQ] = "[hardware interrupt]",
		[FR_FRAME_NOTE_WAKE_SOFTIRQ] = "[softirq]",
		[FR_FRAME_NOTE_WAKER_ELSEWHERE] = "[waker in another process]",
	};

	return note > 0 && note < FR_FRAME_NOTE_COUNT ? names[note] : "[unknown note]";
}
