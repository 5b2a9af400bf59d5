/* The memory sampler: once a second, the resident set of the processes
 * that ran (had samples) in the last two seconds or that the recorder watches
 * (processes with allocation rings), and the machine's memory, CPU and
 * I/O pressure, as FR_EVENT_RSS, FR_EVENT_MEM_PRESSURE,
 * FR_EVENT_CPU_PRESSURE and FR_EVENT_IO_PRESSURE samples
 * (core/store/sample.h); the "some" and "full" stall time of each second
 * also go to the pressure triggers (fr_memsample_take_pressure);
 * with FR_MEMSAMPLE_THROTTLE also the CPU throttling of those processes'
 * cgroups (cgcpu.h) as FR_EVENT_THROTTLED samples.
 *
 * /proc is read on a thread of its own (fr-memsample, normal priority):
 * a read of /proc/PID/statm can wait on the process's memory map, and the
 * ingest thread must never wait on /proc. The ingest thread notes the
 * pids it sees (fr_memsample_note_pid, no lock), and at its wake-ups
 * takes the samples read since (fr_memsample_take), handing over the
 * pids it noted every 100 ms (a process that ran is read at the next
 * tick); the two share a queue under a priority-inheritance lock held
 * only to copy or swap fixed arrays.
 *
 * Bounds: at most FR_MEMSAMPLE_MAX_PIDS statm reads a second (more
 * processes take turns; those left out are counted as skipped), a
 * second's reads stop after FR_MEMSAMPLE_BUDGET_NS, at most
 * FR_MEMSAMPLE_QUEUE samples wait for the ingest thread (the rest are
 * dropped and counted), a fixed memory footprint allocated at start.
 */
#ifndef FR_RECORDER_MEMSAMPLE_H
#define FR_RECORDER_MEMSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/sample.h"

#define FR_MEMSAMPLE_MAX_PIDS 512
#define FR_MEMSAMPLE_WATCH_MAX 512
#define FR_MEMSAMPLE_QUEUE 2048
#define FR_MEMSAMPLE_BUDGET_NS (200LL * 1000 * 1000)

/* The resources of PSI, in the order of fr_pressure_tick's arrays. */
enum fr_pressure_resource {
	FR_PRESSURE_MEMORY = 0,
	FR_PRESSURE_CPU,
	FR_PRESSURE_IO,
	FR_PRESSURE_RESOURCES
};

/* "memory", "cpu", "io" ("unknown" out of range). */
const char *fr_pressure_resource_name(uint32_t resource);

/* One tick's pressure: for each resource read at this tick and the one
 * before (valid), the ns in between during which some task (some_ns) and
 * all non-idle tasks (full_ns, when has_full) stalled on it. */
struct fr_pressure_tick {
	int64_t time_ns;     /* Unix ns of the read */
	int64_t mono_ns;     /* CLOCK_MONOTONIC of the read */
	int64_t interval_ns; /* since the tick before */
	uint8_t valid[FR_PRESSURE_RESOURCES], has_full[FR_PRESSURE_RESOURCES];
	uint64_t some_ns[FR_PRESSURE_RESOURCES], full_ns[FR_PRESSURE_RESOURCES];
};

struct fr_memsample;

/* What the sampler did since it started (relaxed atomics). */
struct fr_memsample_stats {
	uint64_t rss_samples, pressure_samples; /* pressure: of all three */
	uint64_t gone;				/* processes that ended before their read, or
			   * without memory (kernel threads, zombies) */
	uint64_t skipped;			/* reads left out: over the bound or the budget */
	uint64_t dropped;			/* samples the queue had no room for */
	uint64_t busy_ns;			/* the thread's time reading (CLOCK_MONOTONIC) */
	uint64_t ticks;
	/* Throttling (cgcpu.h; 0 without it): cgroups remembered, cpu.stat
	 * reads, reads that failed or were refused, pids or cgroups left out
	 * (bounds, budget, a full table), samples. */
	uint64_t cgroups, throttle_reads, throttle_failures, throttle_skipped, throttled_samples;
};

/* fr_memsample_start's flags: sample cgroup CPU throttling too. */
#define FR_MEMSAMPLE_THROTTLE 1u

/* Starts the sampler's thread on `proc` ("/proc"). The pressure files
 * are tried at each tick; a kernel without PSI leaves them out (said once
 * in the log for each). With FR_MEMSAMPLE_THROTTLE in `flags` throttling is sampled
 * when a cgroup hierarchy has the cpu controller (else
 * fr_memsample_throttle_error says why; the rest samples on). Returns 0,
 * or -errno with a message in `err`. */
int fr_memsample_start(struct fr_memsample **out, const char *proc, unsigned flags, char *err,
		       size_t errlen);

/* Stops the thread and frees; accepts NULL. */
void fr_memsample_stop(struct fr_memsample *m);

/* Ingest thread: process `pid` had a sample; its RSS is read within the
 * next two seconds. Never blocks, never allocates. */
void fr_memsample_note_pid(struct fr_memsample *m, uint32_t pid);

/* Any thread: the processes to read every second whether they ran or not
 * (e.g. those with allocation rings), replacing the previous list; at
 * most FR_MEMSAMPLE_WATCH_MAX are kept. */
void fr_memsample_watch_pids(struct fr_memsample *m, const uint32_t *pids, uint32_t n);

/* Ingest thread: calls `fn` for each sample read since the last call, in
 * the order read, and hands over the pids noted when a second has passed
 * since the last hand-over. Returns the samples delivered. */
uint32_t fr_memsample_take(struct fr_memsample *m, void (*fn)(void *arg, const struct fr_sample *s),
			   void *arg);

/* Counts a sample `fn` could not keep (no chunk took it). Ingest thread. */
void fr_memsample_lost(struct fr_memsample *m, uint32_t n);

void fr_memsample_stats(const struct fr_memsample *m, struct fr_memsample_stats *out);

/* Ingest thread: the pressure of the last tick into *out, when a tick
 * read some since the last call (returns 1; else 0). Never blocks on a
 * read of /proc. */
int fr_memsample_take_pressure(struct fr_memsample *m, struct fr_pressure_tick *out);

/* Whether the last read of the memory pressure file failed (the log said
 * why). Any thread. */
int fr_memsample_pressure_failed(const struct fr_memsample *m);

/* The same for `resource` (enum fr_pressure_resource), with why into
 * `err` (`errlen` bytes) when it failed. Any thread. */
int fr_memsample_pressure_error(struct fr_memsample *m, uint32_t resource, char *err,
				size_t errlen);

/* Why throttling is not sampled ("" when it is or was not asked for),
 * and where it is read from otherwise ("cgroup v1 at ..."). Set at start,
 * any thread after. */
const char *fr_memsample_throttle_error(const struct fr_memsample *m);
const char *fr_memsample_throttle_where(const struct fr_memsample *m);

#endif
