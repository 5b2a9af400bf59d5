/* Window queries: build a pprof profile (or folded stacks) from the ring.
 *
 * A request names a time window [t0, t1) in Unix nanoseconds, the events
 * to profile, optional targets (pids, command names, a cgroup) and a
 * sampling rate. The chunks overlapping the window are read and decoded;
 * samples outside the window, of other events or of other targets are
 * dropped; the remaining ones are downsampled, each event on its own, by
 * a deterministic hash of each sample (so the same request gives the same
 * profile and the same bytes), identical (stack, labels) are aggregated,
 * addresses are symbolized, and the result is streamed as gzip'ed pprof,
 * or as folded stacks.
 *
 * DOWNSAMPLING: a rate-sampled event e is brought to target_e = the lowest
 * rate e was collected at in the window, or the wanted rate (event_hz[e],
 * else hz) if that is lower; a
 * sample collected at R > target_e is kept with probability target_e / R
 * and then counts R / target_e times its weight. offcpu (rate 0: every
 * switch is recorded) is never downsampled.
 *
 * PPROF: sample types are samples/count (kept samples of every event),
 * then one column per event in request order, named fr_event_format()
 * with unit fr_event_unit(): cpu/nanoseconds, offcpu/nanoseconds,
 * cycles/count, raw:0x1a2/count... The first event is the default sample
 * type and the period type. period: for cpu 1e9 / its rate in the profile
 * (each kept cpu sample counts exactly that); for offcpu 1 (its values
 * are measured nanoseconds, not sampled); for frequency-mode events, whose
 * kernel period varies, the mean value per kept sample, rounded (0 when
 * none was kept); a comment says so. A row is one (stack, pid, tid,
 * cgroup[, cpu]) with a value for each event, so a stack seen for two
 * events is one sample with two non-zero columns. Labels: pid, tid, comm,
 * thread, cpu (when asked), cgroup (when the sample has one); never the
 * parent. Comments give each event's rate, downsampling, and the
 * kernel's lost, throttled and truncated counts for it, and with
 * `children` how many descendants were included.
 *
 * KERNEL FRAMES carry the kernel's plain function name (so -focus and
 * regexes match them as written) and are told apart by their location's
 * mapping, FR_PROFILE_KERNEL_MAPPING, the name perf gives the kernel image:
 * every kernel location is on it. A kernel address kallsyms does not name
 * is named by itself ("0xffffffff81a2b3c4"), on that mapping; in a profile
 * limited to a uid it is "[unknown]" at address 0 (kernel addresses would
 * undo KASLR). Every location has a function and every mapping says
 * has_functions, so that no reader opens a mapping's path to name them.
 *
 * FOLDED STACKS (FR_PROFILE_FOLDED) are the collapsed-stack text that
 * flamegraph.pl, speedscope and inferno read: uncompressed, one line per
 * distinct stack, sorted bytewise,
 *
 *   COMM;USER_ROOT;...;USER_LEAF;KERNEL_OUTER_[k];...;KERNEL_LEAF_[k] COUNT\n
 *
 * COMM is the process's command name ("[unknown]" when not known), frames
 * are named as in the pprof output, kernel ones with the "_[k]" suffix of
 * `stackcollapse-perf.pl --kernel` (which `flamegraph.pl --colors=java`
 * paints as kernel code); a kernel address kallsyms does not name is
 * "0xADDR_[k]", or "[unknown]_[k]" in a profile limited to a uid. COUNT
 * is the number of kept samples of the FIRST event of the request (other
 * events are not counted; stacks seen only for them have no line). Threads and processes
 * with the same folded text share one line. A ';' or newline inside a name
 * is written as '_' so it cannot split a frame or a line.
 */
#ifndef FR_CORE_PROFILE_H
#define FR_CORE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/sample.h"
#include "core/util/compress.h"
#include "core/util/limits.h"
#include "core/query/targets.h"

struct fr_ring;
struct fr_symbols;

enum fr_profile_format {
	FR_PROFILE_PPROF = 0, /* gzip'ed pprof */
	FR_PROFILE_FOLDED,    /* folded stacks, plain text (see above) */
};

/* The pprof mapping of every kernel frame, and the suffix of a kernel
 * frame in folded stacks (see above). */
#define FR_PROFILE_KERNEL_MAPPING "[kernel.kallsyms]"

/* Whether kernel symbol `ksym` is a function of the recorder's own eBPF
 * programs ("bpf_prog_0123456789abcdef_tw_user_stack": the off-CPU
 * program's task work, run by a thread on its way back to user space
 * after a long wait, copying its user stack). Its CPU time is the
 * recorder's, spent on the thread whose stack it is on; the profile
 * names the frame for what it does, "[flightrec: copying its user stack
 * after a wait (offcpu)]", into buf, keeping `ksym` as the function's
 * system name. Returns 1 when it is, 0 when not. Programs are known by
 * name: another tool's program of the same name would be named so. */
int fr_profile_own_bpf(const char *ksym, char *buf, size_t len);
#define FR_PROFILE_KERNEL_SUFFIX "_[k]"

/* The accepted format names, for messages. */
#define FR_PROFILE_FORMAT_NAMES "pprof, folded"

/* Maps a format name ("pprof", "folded") to its enum fr_profile_format.
 * Returns the format, or -EINVAL for any other name. */
int fr_profile_format_parse(const char *name);

/* Targets (`targets`, core/query/targets.h): a sample is in the profile when it
 * is in the window, of one of the events, and (for each of pids, comms and
 * cgroup that is given) of one
 * of the pids, of a process whose command name is one of comms, and of a
 * process in the cgroup (its "cgroup" label, a cgroup v2 path, is the
 * given path or below it). Kinds combine with AND, values of one kind with
 * OR. comms match the process's command name exactly (the kernel keeps 15
 * characters, so a longer name matches nothing and is refused). cgroup
 * "/a/b" takes "/a/b" and "/a/b/c" but not "/a/bc" (a trailing '/' is
 * ignored); "/" takes every sample that has a cgroup label. Samples of
 * chunks without cgroup labels match only when no cgroup is given.
 *
 * With `children` and pids, the pids are first extended with every
 * process descended from them, transitively: the (pid, parent) pairs of
 * all the window's chunks ("ppid" labels: of each process's samples, and
 * of the sets chunks keep for ancestors without samples) are walked down
 * from the given pids, so a child that only ran between two seals, or a
 * grandchild whose parent was never sampled, is in. FR_LIMIT_PIDS
 * bounds the request, not the extension. Chunks of recorders that did not
 * store parents add no descendants. comms and cgroup still apply to the
 * extended set, and the rates are those of the extended targets. The
 * profile says "--children: N descendant processes of PID[,PID] included"
 * in a comment, N counting every descendant found in the window.
 *
 * With `has_uid`, only processes whose (real) uid, as the chunk recorded
 * it, is `uid`; a process the chunk does not describe matches nothing.
 * The daemon sets it from the asker's credentials for users who are not
 * root (never from what the request says), and from a session's
 * targets.uid; the profile says so in a comment. */
struct fr_profile_request {
	int64_t t0, t1;			  /* window, Unix ns */
	uint32_t nevents;		  /* 0: cpu only */
	uint32_t events[FR_LIMIT_EVENTS]; /* distinct ids; value columns in this order */
	struct fr_targets targets;
	uint32_t hz; /* wanted rate of every rate-sampled event; 0: as collected */
	/* Wanted rate of events[e] (of cpu when nevents is 0), in place of
	 * hz; 0: hz. A consumer asking cpu at 99 and page-faults at 19. */
	uint32_t event_hz[FR_LIMIT_EVENTS];
	const char *version;  /* recorder version for the comment */
	const char *kallsyms; /* NULL: /proc/kallsyms */
	/* Where names come from besides the mapped files
	 * (fr_symbols_set_paths(), core/symbols/symbols.h): the recorder's
	 * symbol cache (NULL: none) and the debug directories (NULL:
	 * /usr/lib/debug; with ndebug_dirs 0 none). */
	const char *symbol_cache;
	const char *const *debug_dirs;
	uint32_t ndebug_dirs;
	int cpu_label; /* add a "cpu" label to samples (pprof only) */
	/* With event heap: inuse_* is the growth of the heap from t0 to t1
	 * (allocations minus frees between), not what is in use at t1. */
	int heap_diff;
	enum fr_profile_format format;
	const char *note;     /* non-NULL: one more comment, e.g. why the
			       * profile may end early */
	const char *pmu_note; /* non-NULL: one more comment, what the PMU did
			       * (precise_ip level, multiplexing) */
	/* Decoded chunks kept between the two passes (the rest are decoded
	 * again); 0: FR_PROFILE_CACHE_DEFAULT. A caller under a memory
	 * budget passes what it reserved. */
	size_t cache_bytes;
	/* Non-NULL: asked before each chunk is read; non-zero ends the query
	 * with -ECANCELED (e.g. the client that asked hung up). */
	int (*stop)(void *arg);
	void *stop_arg;
};

#define FR_PROFILE_CACHE_DEFAULT ((size_t)128 << 20)

/* What a profile says about one of its events. */
struct fr_profile_event_result {
	uint32_t event;
	uint32_t hz;		     /* rate of this event in the profile; 0 offcpu */
	uint32_t min_rate, max_rate; /* collection rates seen in the window */
	uint64_t samples_seen;	     /* in the window and target */
	uint64_t samples_kept;	     /* after downsampling */
	/* What the kernel lost and throttled in the chunks of the window,
	 * machine-wide (of every process, not only the targets'); kept
	 * samples whose stack was cut at FR_MAX_FRAMES frames. */
	uint64_t lost, throttled, truncated;
	/* The samples of the event in the window, machine-wide: what `lost`
	 * is a share of (lost / (recorded + lost)). `lost` is the window's
	 * share of the losses the chunks place in time (their gaps), and the
	 * whole of those they do not. */
	uint64_t recorded;
	/* Kept samples whose user stack ends in a marker frame
	 * (core/store/sample.h), by reason: unwinding stopped early. */
	uint64_t unwind_stopped[FR_FRAME_MARK_COUNT];
	int64_t first_ns, last_ns; /* times of the first and last kept sample; 0: none */
};

struct fr_profile_result {
	uint32_t nevents; /* == the request's (1 when it named none) */
	struct fr_profile_event_result events[FR_LIMIT_EVENTS];
	uint64_t chunks;	   /* chunks read */
	uint64_t chunks_skipped;   /* damaged or overwritten while reading */
	uint64_t samples_seen;	   /* in the window and target */
	uint64_t samples_kept;	   /* after downsampling */
	uint64_t stacks;	   /* distinct pprof samples (folded: lines) written */
	uint64_t lost;		   /* records the kernel lost in the window (all events) */
	uint32_t hz;		   /* rate of the first event of the profile */
	int64_t covered_t0;	   /* first time the ring has data for */
	int64_t first_ns, last_ns; /* the profile's span: its first and last kept
				    * sample (every event); 0 when none */
	uint64_t bytes;		   /* bytes written */
	char warning[512];	   /* non-empty: say this to the user */
	/* The longest stall of the recorder's ingest in the window, as its
	 * chunks say (clipped to the window; 0, 0: none). */
	int64_t stall_t0, stall_t1;
};

/* What building the profile for `req` may take in memory, in bytes, from
 * the chunks of its window (their decoded size, as kept between passes
 * within req->cache_bytes; the tables aggregation builds, by their
 * samples; a fixed part for symbols): for reserving it against a budget
 * before the query. An estimate, on the safe side when most stacks
 * differ; a window of few distinct stacks takes less. Returns >= 0 or
 * -errno. */
int64_t fr_profile_estimate(struct fr_ring *ring, const struct fr_profile_request *req);

/* Builds the profile for `req` from `ring` and writes it to `sink` in
 * req->format.
 * Returns 0 and fills `res`, or -errno with a one-line message in `err`:
 * -EINVAL (nothing written) for more than FR_LIMIT_EVENTS events, an
 * event named twice or unknown, too many pids or comms, a comm of 16
 * characters or more, a cgroup that is not an absolute path of at most
 * FR_LIMIT_CGROUP_LEN - 1 characters; -ENOMEM; the ring's or the sink's
 * -errno. */
int fr_profile_write(struct fr_ring *ring, const struct fr_profile_request *req, fr_write_fn sink,
		     void *sink_arg, struct fr_profile_result *res, char *err, size_t errlen);

/* Pass 1 of fr_profile_write() alone, nothing written: fills
 * res->samples_seen (and the events' counts and rates) for `req`, and
 * with `procs` (may be NULL) the number of processes with samples of the
 * request's events in its window, of its uid when it has one, whatever
 * its other targets. For saying why a profile came out empty: which of
 * its targets alone matches nothing. Returns 0 or -errno with a message
 * in `err`, as fr_profile_write(). */
int fr_profile_count(struct fr_ring *ring, const struct fr_profile_request *req,
		     struct fr_profile_result *res, uint64_t *procs, char *err, size_t errlen);

/* The kinds of target fr_profile_empty_targets() names. */
#define FR_TARGET_PID 1u
#define FR_TARGET_COMM 2u
#define FR_TARGET_CGROUP 4u
#define FR_TARGET_LABEL 8u     /* labels and label_key */
#define FR_TARGET_COMBINED 16u /* each kind matches alone, not all together */

/* For a request whose profile has no sample: sets *empty to the kinds of
 * its targets that alone (with its events, window and uid) match no
 * sample, or FR_TARGET_COMBINED when each does; *procs to the processes
 * with samples of its events in the window that its uid may see. Reads
 * the window once per kind given, and once more. Returns 0 or -errno
 * with a message in `err`. */
int fr_profile_empty_targets(struct fr_ring *ring, const struct fr_profile_request *req,
			     uint32_t *empty, uint64_t *procs, char *err, size_t errlen);

/* Bounds on the output of fr_profile_write_fd(), as
 * fr_uring_writer_limit() applies them: when `fd` is not a regular file,
 * -ETIMEDOUT once its reader took no byte for `stall_ns` or the whole
 * profile is not out within `total_ns`; -ECONNRESET once `hangup_fd` (a
 * socket, borrowed; -1 for none) hangs up. */
struct fr_profile_limits {
	int64_t stall_ns;
	int64_t total_ns;
	int hangup_fd;
};

/* fr_profile_write() into `fd` (borrowed) through an io_uring writer of
 * its own, flushed at the end; with `limits` (NULL: none) bounded so. Sets
 * *written to the bytes handed to the kernel, also on failure. Returns 0
 * or -errno: those of fr_profile_write() with its message in `err`;
 * -ENOMEM or io_uring's -errno, "cannot set up the output: ..." in `err`;
 * or the output's -errno (-ETIMEDOUT, -ECONNRESET, -EOPNOTSUPP for a
 * device that takes no non-blocking writes, ...), where `err` may be left
 * empty for the caller to name the output. */
int fr_profile_write_fd(struct fr_ring *ring, const struct fr_profile_request *req, int fd,
			const struct fr_profile_limits *limits, struct fr_profile_result *res,
			uint64_t *written, char *err, size_t errlen);

#endif
