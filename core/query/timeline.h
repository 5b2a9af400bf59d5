/* Timelines: how much of one event each group of processes had, step by
 * step, over a window of the ring ("find the minute" before asking for a
 * profile of it). What `flightrec timeline`, `flightrec dump --timeline`,
 * the daemon's "timeline" request and the web page of `flightrec serve`
 * show; fleet queries produce the same JSON form from ClickHouse.
 *
 * VALUES. Every sample of the event in [start_ns, end_ns) is counted, none
 * is downsampled, so a step's value is exact for what the ring holds:
 *   - cpu: the sum of the samples' weights, sampled CPU nanoseconds (what
 *     attach's cpu column sums when it keeps every sample);
 *   - offcpu: wait nanoseconds. A wait is spread over the steps it lasted
 *     ([switch-in - weight, switch-in), clipped to the window), so one
 *     long sleep shows as the steps it covers, not as a spike at its end.
 *     A wait still going on at the window's end counts from the open-wait
 *     records (core/store/chunk.h, "open waits") of the last seal before
 *     the end, up to that seal; nothing after the end is read, so a
 *     window's answer does not change as the ring grows or merges. A
 *     step's value is then threads waiting x step;
 *   - rss: a gauge (core/query/timeline_memory.c): the largest RSS
 *     sampled in the step of any process of the group, bytes; a group's
 *     "total" is its peak, and "other" holds the largest of the rest;
 *   - memory-pressure, cpu-pressure, io-pressure: nanoseconds some task
 *     stalled on memory, a CPU or I/O in the step (a sum); their samples
 *     are the machine's, group "[machine]", listed even when 0;
 *   - throttled: nanoseconds the group's cgroups were throttled in the
 *     step (cpu.stat's throttled time, a sum); a sample's process is one
 *     of its cgroup's that ran, so --by cgroup names the cgroup;
 *   - oom: kills in the step (unit "count"), and "victims" lists them;
 *   - any other event: the sum of the samples' weights (the kernel's
 *     period each stands for), i.e. events counted, unit "count".
 * A sample is in step k when start_ns + k * step_ns <= time < start_ns +
 * (k + 1) * step_ns; the last step may reach past end_ns and holds only
 * samples before end_ns. steps = ceil((end_ns - start_ns) / step_ns).
 *
 * GROUPS (`by`):
 *   process    "COMM (PID)", COMM the process's command name at the
 *              sample's time ("[unknown]" when the ring does not know
 *              it): a group per (pid, comm), so a process that exec'd is
 *              one group before and one after; the group carries "pid"
 *   comm       the command name at the sample's time
 *   cgroup     the process's cgroup v2 path, "[unknown]" when not recorded
 *   label:KEY  the value of application label KEY on the sample
 *              (lib/flightrec/labels.h), "[none]" when it has none;
 *              label:cpu is the CPU number the sample was taken on
 * The `top` groups with the largest totals (ties: by name) are listed,
 * largest first; every other group's values are added into one last group
 * named "other" (present only when there were more than `top` groups).
 *
 * VISIBILITY: with has_uid only processes whose uid, as the chunk recorded
 * it, is `uid` are counted (the daemon sets it for a peer that is not
 * root, as for attach); "events" and "samples" then count only those.
 *
 * JSON FORM (fr_timeline_write_json; one object, keys in this order,
 * integers exact; the web page and fleet queries read exactly this):
 *
 *   {"version":1, "event":"cpu", "unit":"nanoseconds"|"count",
 *    "by":"process"|"comm"|"cgroup"|"label:KEY",
 *    "start_ns":N, "end_ns":N, "step_ns":N,  // Unix ns, CLOCK_REALTIME
 *    "ring":{"first_ns":N,"last_ns":N},      // the ring's whole span (0, 0:
 *                                            // empty), for a UI to offer
 *    "partial_from":K,                       // only when some step is:
 *                                            // steps K.. end after the
 *                                            // ring's newest data
 *    "events":["cpu","offcpu",...],          // events with samples in the
 *                                            // window's chunks, by id
 *    "samples":N,                            // samples counted
 *    "lost_total":N,                         // the sum of "lost"
 *    "lost":[N,...],                         // samples lost, per step
 *    "stalled":[false,true,...],             // ingest held up, per step
 *    "stalled_steps":N,                      // steps stalled
 *    "groups":[{"name":"nginx (1234)","pid":1234,"total":N,"values":[N,...]},
 *              ...,
 *              {"name":"other","total":N,"values":[...]}],
 *    "victims":[{"time_ns":N,"pid":N,"comm":"hog","cgroup":"/x",  // oom only:
 *                "rss":N},...],                 // the kills, first
 *    "victims_more":N,                          // FR_TIMELINE_VICTIMS_MAX;
 *                                               // the count past them
 *    "marks":[{"time_ns":N,"type":"crash","pid":N,"comm":"prog",
 *              "signal":"SIGSEGV"},...],        // whatever the event: the
 *    "marks_more":N}                            // window's crashes, OOM
 *                                               // kills, exits by a signal
 *
 * "marks" (and "marks_more") only when the window has some: the black
 * box's crashes, OOM kills ("type":"oom_kill", no "signal") and exits
 * ended by a signal ("type":"exit", with "sender":{"kind":"process",
 * "pid":N,"comm":"kill"} or {"kind":"kernel"} when its sender is known)
 * of the visible processes, in time
 * order, at most FR_TIMELINE_MARKS_MAX (the first read; marks_more counts
 * the rest), so that a chart can mark them at their time
 * (core/query/events.h lists them in full).
 *
 * "partial_from": the first step that ends after ring.last_ns, the
 * newest data the ring held when read: from it on the steps hold only
 * part of their time (a window ending now: the step still filling, which
 * the recorder adds to as it records; a ring that ends inside the
 * window: the steps after its end). Absent when every step is whole.
 *
 * "pid" only with by=process; "values" has exactly `steps` entries and
 * "total" is their sum. "lost" (always, `steps` entries, 0 when none):
 * the event's samples the recorder lost (the chunks' lost counters,
 * machine-wide: perf's lost records, off-CPU waits the eBPF program
 * dropped, chunks the writer could not take), placed in time by the
 * chunks' gaps (core/store/chunk.h, section 4): a loss is known to lie
 * between the start of the drain two before the one that counted it and
 * that one (a dropped chunk: its span), and is shared out over the steps of that span by
 * their overlap, the share outside the window not counted. A loss with
 * no known time (chunks of older recorders) goes in the step holding its
 * chunk's last sample, clamped to the window, as before. "stalled"
 * (always, `steps` booleans): true for a step that a stall of the
 * recorder's ingest (over FR_INGEST_STALL_NS, 3 s: no drain, so samples
 * of then may be missing) overlaps, from the chunks' gaps, so a dump of
 * a crashed ring says the same. A fleet query knows of neither: all 0
 * and false. Names are JSON strings
 * (escaped). start_ns and end_ns are the asked window rounded out to
 * multiples of step_ns (steps start at multiples of the step since the
 * epoch, so two timelines of one ring line up): the last step of a window
 * ending now ends in the future.
 *
 * SPEED: every sample of the window is decoded (no chunk summary: an
 * hour at 999 Hz on 2 CPUs is about 0.16 s of CPU, docs/performance.md).
 */
#ifndef FR_CORE_TIMELINE_H
#define FR_CORE_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#include "core/query/targets.h"
#include "core/store/sample.h"
#include "core/util/limits.h"

struct fr_ring;

#define FR_TIMELINE_VERSION 1
/* Groups listed by default, and at most. */
#define FR_TIMELINE_TOP_DEFAULT 8
#define FR_TIMELINE_TOP_MAX 32
/* Steps in one timeline at most (a step is widened to fit). */
#define FR_TIMELINE_STEPS_MAX 4000
/* OOM kills listed with their victims at most (the rest are counted). */
#define FR_TIMELINE_VICTIMS_MAX 64
/* Marks (crashes, OOM kills, exits by a signal) listed at most. */
#define FR_TIMELINE_MARKS_MAX 256
/* Distinct events listed at most. */
#define FR_TIMELINE_EVENTS_MAX 32
/* Longest group name, with its NUL (a cgroup path is the longest). */
#define FR_TIMELINE_NAME_MAX FR_LIMIT_CGROUP_LEN

enum fr_timeline_by {
	FR_TIMELINE_BY_PROCESS = 0,
	FR_TIMELINE_BY_COMM,
	FR_TIMELINE_BY_CGROUP,
	FR_TIMELINE_BY_LABEL,
};

struct fr_timeline_request {
	int64_t t0, t1;	 /* window [t0, t1), Unix ns */
	int64_t step_ns; /* 0: fr_timeline_default_step(t1 - t0) */
	uint32_t event;	 /* enum fr_event or a raw id */
	enum fr_timeline_by by;
	char label_key[FR_LIMIT_LABEL_LEN]; /* by == FR_TIMELINE_BY_LABEL */
	uint32_t top;			    /* 0: FR_TIMELINE_TOP_DEFAULT */
	int has_uid;			    /* only processes of `uid` */
	uint32_t uid;
	/* Non-NULL: only the processes of these pids and command names
	 * (targets->pids, ->comms; a comm as the process was named at the
	 * sample's time; the other kinds are not read); the machine's own
	 * samples (pid 0: pressure) are kept. */
	const struct fr_targets *targets;
	/* Non-NULL: asked before each chunk; non-zero ends with -ECANCELED. */
	int (*stop)(void *arg);
	void *stop_arg;
	/* > 0: the computation ends with -E2BIG rather than hold more than
	 * this (the chunk being read and its decoded form, groups, cells,
	 * waits and the answer's values; see fr_timeline_estimate), unless
	 * `grow` (non-NULL) grants more: asked for a new bound of at least
	 * `need` bytes, it returns that bound or -E2BIG. */
	uint64_t max_bytes;
	int64_t (*grow)(void *arg, uint64_t need);
	void *grow_arg;
};

struct fr_timeline_group {
	char name[FR_TIMELINE_NAME_MAX];
	uint32_t pid; /* by process; 0 for "other" */
	int other;    /* the "other" group */
	uint64_t total;
	uint64_t *values; /* nsteps */
};

/* A process the OOM killer killed (an oom timeline's "victims"). */
struct fr_timeline_victim {
	int64_t time_ns;
	uint32_t pid;
	char comm[FR_LIMIT_COMM_LEN];	  /* "[unknown]" when the ring has none */
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* "" when not recorded */
	uint64_t rss;			  /* bytes */
};

/* A crash, an OOM kill or an exit by a signal, marked at its time. */
struct fr_timeline_mark {
	int64_t time_ns;
	uint32_t event; /* FR_EVENT_CRASH, FR_EVENT_OOM or FR_EVENT_EXIT */
	uint32_t pid;
	char comm[FR_LIMIT_COMM_LEN]; /* "[unknown]" when the ring has none */
	char signal[16];	      /* "SIGSEGV"; "" for a kill */
	/* An exit by a signal: who sent it ("kernel", or the process
	 * sender_pid named sender_comm); "" when not known. */
	char sender[8];
	uint32_t sender_pid;
	char sender_comm[17];
};

struct fr_timeline {
	uint32_t event;
	enum fr_timeline_by by;
	char label_key[FR_LIMIT_LABEL_LEN];
	int64_t start_ns, end_ns, step_ns;
	uint32_t nsteps;
	int64_t ring_first_ns, ring_last_ns;
	uint32_t nevents; /* sorted by id */
	uint32_t events[FR_TIMELINE_EVENTS_MAX];
	uint64_t samples;
	/* Samples of the event lost (the `lost` counters of the window's
	 * chunks: machine-wide, whatever the groups and the viewer), placed
	 * by the chunks' gaps ("lost" above); lost_steps has nsteps entries
	 * (NULL only in a timeline not computed here: none lost). */
	uint64_t lost;
	uint64_t *lost_steps;
	/* Per step, 1 when a stall of the ingest overlaps it (NULL: none). */
	uint8_t *stalled_steps;
	uint32_t ngroups; /* the top groups, largest first, then "other" */
	struct fr_timeline_group *groups;
	/* oom: FR_TIMELINE_VICTIMS_MAX of the window's kills (the first read;
	 * put in time order when written), and how many more (victims is
	 * NULL when none). */
	uint32_t nvictims;
	uint64_t victims_more;
	struct fr_timeline_victim *victims;
	/* The window's marks, FR_TIMELINE_MARKS_MAX at most (the first read;
	 * put in time order when written), and how many more. */
	uint32_t nmarks;
	uint64_t marks_more;
	struct fr_timeline_mark *marks;
	/* Chunks read, and skipped as damaged or overwritten meanwhile (not
	 * in the JSON form). */
	uint64_t chunks, chunks_skipped;
};

/* The step a window of `window_ns` gets by default: window / 60 rounded
 * up to a human unit (1, 2, 5, 10, 15, 30 s; 1, 2, 5, 10, 15, 30 min; 1,
 * 2, 6, 12 h; 1 day), at least 1 s. */
int64_t fr_timeline_default_step(int64_t window_ns);

/* The one parser of a --by value ("process", "comm", "cgroup",
 * "label:KEY"), for the timeline and for top: the grouping into *by and,
 * for a label, *key pointing into `s` (NULL otherwise; a key of any
 * length, each user bounds it as it needs). Returns 0 or -EINVAL. */
int fr_group_by_parse(const char *s, enum fr_timeline_by *by, const char **key);

/* fr_group_by_parse() into `req`, a key of at most FR_LIMIT_LABEL_LEN - 1
 * bytes. Returns 0 or -EINVAL. */
int fr_timeline_parse_by(const char *s, struct fr_timeline_request *req);

/* The --by value of a timeline or request ("label:KEY" into buf). */
const char *fr_timeline_by_name(enum fr_timeline_by by, const char *label_key, char *buf,
				size_t len);

/* What computing `req` over `ring` may hold, in bytes, to reserve before
 * it runs: the largest chunk of the window read and decoded, the cells
 * (at most one per sample, and assumed at most 512 groups a step) and the
 * answer's values, plus 2 MiB. An estimate, not a bound: set max_bytes
 * for one. Returns the bytes or -errno (a bad request: 0). */
int64_t fr_timeline_estimate(struct fr_ring *ring, const struct fr_timeline_request *req);

/* Computes the timeline of `req` from `ring`. Returns 0 and a timeline the
 * caller frees with fr_timeline_free(), or -errno with a one-line message
 * in `err`: -EINVAL for an empty window, a step below 1 ms, an unknown
 * event or a bad label key; -ECANCELED; -ENOMEM; -E2BIG when it would
 * hold more than req->max_bytes (and `grow` granted no more); the ring's
 * -errno. */
int fr_timeline_compute(struct fr_ring *ring, const struct fr_timeline_request *req,
			struct fr_timeline **out, char *err, size_t errlen);

void fr_timeline_free(struct fr_timeline *t);

/* Writes the JSON form (above) and a newline. Returns 0 or -EIO. */
int fr_timeline_write_json(FILE *f, const struct fr_timeline *t);

/* The first step of `t` that ends after the ring's newest data
 * ("partial_from"), or t->nsteps when every step is whole. */
uint32_t fr_timeline_partial_from(const struct fr_timeline *t);

#endif
