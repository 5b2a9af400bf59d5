/* The black box's events of a window of the ring: crashes, OOM kills,
 * execs, exits (one record per occurrence) and the machine's pressure and
 * cgroups' throttling (series, once a second), as core/store/sample.h
 * stores them (fr_event_is_blackbox()). What `flightrec events`, `flightrec
 * dump --ring FILE --events`, the daemon's "events" request and the
 * timeline's marks read; triggers' dumps can write the same list.
 *
 * COLLECTING (fr_events_collect): every chunk overlapping [t0, t1) is
 * read and decoded; each black-box sample in the window, of one of the
 * asked types, of a visible and targeted process, becomes one event, its
 * fields read back from the sample's application labels (the keys of
 * sample.h: path, ppid, old_pid; exit_code, signal, core, cpu_ns; signal,
 * code, addr), its weight giving what the contract puts there (an OOM
 * kill's RSS, an exit's lifetime, a series' nanoseconds), the rest of the
 * labels kept as the process's own. A crash's stack is named as profiles
 * name theirs (kernel frames from kallsyms, user frames from the mapped
 * files' symbols and DWARF lines, the symbol cache's copies), innermost
 * first. The list is sorted by time (then pid, tid, type), at most
 * FR_EVENTS_MAX occurrences and FR_EVENTS_SERIES_MAX seconds of series
 * (the first read; the rest counted in `more`).
 *
 * TARGETS: pids, comms and cgroup choose processes as a profile's do
 * (core/query/targets.h). The machine's own series (pid 0: memory, cpu
 * and io pressure) belong to no process: they are listed when no target is
 * given, or when `types` names them. VISIBILITY: with has_uid only
 * processes whose uid, as the chunk recorded it, is `uid` (the daemon sets
 * it for a peer that is not privileged, as for attach); the machine's
 * series are everyone's; kernel frames of a crash keep their names but
 * not their addresses.
 *
 * WRITING (fr_events_write): text, one line per event,
 *
 *   2026-11-30T09:01:02.345Z crash           pid 1234 (crash_prog) tid 1234 SIGSEGV SEGV_MAPERR at 0x10
 *       crash_site (crash.c:12)
 *       main (crash.c:30)
 *   2026-11-30T09:01:03.000Z exit            pid 99 (sh) exit_code 3 after 1.2s, cpu 400ms
 *   2026-11-30T09:01:04.000Z oom_kill        pid 77 (hog) rss 64.0MiB cgroup /oom
 *   2026-11-30T09:01:05.000Z exec            pid 99 (sh) /bin/sh ppid 1
 *
 * and the series summed up in one line each (per type, and per cgroup for
 * throttled) unless FR_EVENTS_SERIES asks for every second:
 *
 *   2026-11-30T09:00:00.000Z memory-pressure [machine] 60 s to 09:00:59.000Z: stalled 1.2s in all (2.0%), most 300ms in the second to 09:00:41.000Z (--type memory-pressure lists each second)
 *
 * or JSON lines (FR_EVENTS_JSON): one object per event and per line, every
 * second of a series included, keys in this order, those without a value
 * left out:
 *
 *   {"time":"2026-11-30T09:01:02.345Z","time_ns":N,"type":"crash",
 *    "pid":N,"tid":N,"comm":"crash_prog","cgroup":"/user.slice/...",
 *    "signal":"SIGSEGV","code":"SEGV_MAPERR","addr":"0x10",     // crash
 *    "exit_code":N,"core":true,"cpu_ns":N,"lifetime_ns":N,     // exit
 *    "path":"/bin/sh","ppid":N,"old_pid":N,                    // exec
 *    "rss":N,                                                  // oom_kill, bytes
 *    "stall_ns":N,                                             // pressure, throttled
 *    "stack":[{"function":"crash_site","file":"/src/crash.c","line":12},...],
 *    "labels":{"key":"value",...}}
 *
 * "time" is RFC 3339 UTC with milliseconds, "time_ns" exact;
 * type is "crash", "oom_kill", "exec", "exit", "memory-pressure",
 * "cpu-pressure", "io-pressure" or "throttled"; the stack innermost first,
 * "file" and "line" null where unknown, kernel frames with "kernel":true;
 * "labels" only when the process had application labels.
 */
#ifndef FR_CORE_EVENTS_H
#define FR_CORE_EVENTS_H

#include <stdint.h>
#include <stdio.h>

#include "core/query/targets.h"
#include "core/store/sample.h"

struct fr_ring;
struct fr_chunk;
struct fr_symbols;

/* Events listed at most (the rest are counted): occurrences (crash,
 * oom, exec, exit) and seconds of the series (pressure, throttled), each
 * bounded apart, so that a long window's series never push a crash out;
 * crash stacks named at most (later ones keep their addresses). */
#define FR_EVENTS_MAX 100000
#define FR_EVENTS_SERIES_MAX 100000
#define FR_EVENTS_STACKS_MAX 256

/* The accepted --type names, for messages. */
#define FR_EVENTS_TYPES                                                         \
	"crash, oom_kill (or oom), exec, exit, memory-pressure, cpu-pressure, " \
	"io-pressure, pressure (the three), throttled"

struct fr_events_request {
	int64_t t0, t1;	 /* window [t0, t1), Unix ns */
	uint64_t types;	 /* 1ull << event of the types listed; 0: all */
	int types_named; /* `types` was asked for by name */
	struct fr_targets targets;
	/* Naming stacks (as struct fr_profile_request): symbolize 0 leaves
	 * the addresses. */
	int symbolize;
	const char *kallsyms; /* NULL: /proc/kallsyms */
	const char *symbol_cache;
	const char *const *debug_dirs;
	uint32_t ndebug_dirs;
	/* Non-NULL: asked before each chunk; non-zero ends with -ECANCELED. */
	int (*stop)(void *arg);
	void *stop_arg;
};

struct fr_events_label {
	char *key, *value;
};

struct fr_events_frame {
	uint64_t addr;	/* 0 for a kernel frame of a uid-limited list */
	char *function; /* NULL: not named */
	char *file;	/* NULL: not known */
	uint32_t line;	/* 0: not known */
	int kernel;
};

struct fr_events_item {
	int64_t time_ns;
	uint32_t event; /* enum fr_event */
	uint32_t pid, tid;
	uint64_t weight;
	char comm[FR_LIMIT_COMM_LEN]; /* "" when not known, or pid 0 */
	char *cgroup;		      /* NULL when not recorded */
	/* Every application label of the sample: the event's fields and the
	 * process's own. */
	uint32_t nlabels;
	struct fr_events_label *labels;
	uint32_t nframes; /* innermost first */
	struct fr_events_frame *frames;
};

struct fr_events {
	int64_t t0, t1;
	size_t n, cap;
	size_t nseries; /* of the n, seconds of a series */
	struct fr_events_item *items;
	uint64_t more; /* past the bound */
	size_t max;    /* of each kind listed at most; 0: the bounds above */
	/* Chunks read, and skipped as damaged or overwritten meanwhile. */
	uint64_t chunks, chunks_skipped;
	int uid_limited;
	uint32_t stacks_named; /* crash stacks met (named up to the bound) */
};

/* The type name of a black-box event ("oom_kill" for oom, else
 * fr_event_name()). */
const char *fr_events_type_name(uint32_t event);

/* Parses a comma-separated --type list into *types (1ull << event each).
 * Returns 0, or -EINVAL with `err` naming the unknown type and the
 * accepted ones. */
int fr_events_parse_types(const char *list, uint64_t *types, char *err, size_t errlen);

/* Collects the events of `req` from `ring` (above). Returns 0 and a list
 * the caller frees with fr_events_free(), or -errno with a one-line
 * message in `err`: -EINVAL (an empty window), -ECANCELED, -ENOMEM, the
 * ring's -errno. */
int fr_events_collect(struct fr_ring *ring, const struct fr_events_request *req,
		      struct fr_events **out, char *err, size_t errlen);

/* Adds the events of one decoded chunk to `e` (as fr_events_collect()
 * does for each chunk it reads), for callers holding chunks already.
 * Returns 0 or -ENOMEM. Call fr_events_sort() after the last. */
int fr_events_add_chunk(struct fr_events *e, const struct fr_events_request *req,
			const struct fr_chunk *c, struct fr_symbols *syms);
void fr_events_sort(struct fr_events *e);

void fr_events_free(struct fr_events *e);

/* The value of label `key` of an event, NULL when it has none. */
const char *fr_events_label(const struct fr_events_item *it, const char *key);

/* How fr_events_write() writes. */
enum {
	FR_EVENTS_JSON = 1,   /* JSON lines, not text */
	FR_EVENTS_SERIES = 2, /* text: every second of the series */
};

/* Writes the list as `flags` say (above). Returns 0 or -EIO. */
int fr_events_write(FILE *f, const struct fr_events *e, int flags);

#endif
