/* Configuration: the JSON file of flightrecd, validated into a struct.
 *
 * Schema (every key optional; unknown keys are errors):
 *
 *   {
 *     "ring":    {"path": STRING, "size": SIZE, "segment": SIZE, "sync": DURATION|"off",
 *                 "max_age": DURATION},
 *     "socket":  STRING | {"path": STRING, "group": GROUP, "admin_group": GROUP},
 *     "dumps":   {"dir": STRING, "keep": 1..100000, "max_bytes": SIZE, "mode": OCTAL},
 *     "limits":  {"max_rate_hz": 1..100000, "max_clients": 1..1024,
 *                 "user_max_rate_hz": 1..max_rate_hz, "memory": SIZE >= 64MiB,
 *                 "query_memory": 1MiB <= SIZE <= memory,
 *                 "unwind_table_memory": 1MiB <= SIZE <= memory},
 *     "symbols": {"debug_dirs": [PATH...], "cache_dir": PATH, "cache_size": SIZE,
 *                 "cache_file_max": SIZE},
 *     "sessions": [ {"name": STRING,
 *                    "targets": {"pids": [PID...], "comm": [NAME...], "cgroup": PATH,
 *                                "uid": USER},
 *                    "users": [USER...],
 *                    "events": [ {"event": EVENT, "hz": 1..max_rate_hz | "period": N,
 *                                 "unwind": "dwarf"|"fp", "stack_copy": SIZE} ],
 *                    "triggers": [ TRIGGER ] } ]
 *
 *   GROUP is a group name or number, USER a user name or uid; a name that
 *   this machine does not know is an error (names are resolved once, when
 *   the file is read). "group": the socket is 0660 root:GROUP instead of
 *   0600, so the group's members reach the daemon without root; they see
 *   only their own processes. "admin_group": its members are treated like
 *   root. "user_max_rate_hz" (default 99, or max_rate_hz when lower) caps
 *   the rate such a user's `attach --follow` raises sampling to. A
 *   session's "users" may fire its dump by hand (`dump --session`); no one
 *   else but root and the admin group may. "targets.uid" selects the
 *   processes of that user (their real uid, as the tracker records it).
 *
 *   "dumps": "dir" defaults to NULL (the daemon's "dumps" beside the ring),
 *   "keep" to 50, "max_bytes" to none (0 inside; "0" written is refused),
 *   "mode" (of dump files, an octal string like "0640": read and write
 *   bits only, the owner's read and write always, nobody else's write) to
 *   "0600".
 *
 *   "symbols": where names come from besides the mapped files.
 *   "debug_dirs" (default ["/usr/lib/debug"], at most FR_CONFIG_MAX_DEBUG_DIRS
 *   absolute paths; [] for none) are searched in order for separate debug
 *   files, DIR/.build-id/xx/rest.debug and DIR/BINARY_DIR/LINK_NAME, at
 *   each query (a file installed later is used by the next one).
 *   "cache_dir" (default NULL: "symbols" beside the ring) is the on-disk
 *   symbol cache (recorder/tracking/symcache.h): a copy of each ELF file samples hit,
 *   named by build id, and the perf maps of JIT processes, so profiles
 *   name frames of binaries deleted or replaced since. "cache_size"
 *   (default 1GiB; "0B" turns the cache off) bounds it, least recently
 *   used first out; files over "cache_file_max" (default 256MiB, at most
 *   1GiB) are not copied.
 *
 *   TRIGGER: {"on": "signal", "signal": "USR1"|"USR2"|"SIGUSR1"|...,
 *             "window": DURATION, "after": DURATION, "cooldown": DURATION}
 *            {"on": "cpu_above", "percent": 1..100, "for": DURATION, ...}
 *            {"on": "exit", ...}
 *            {"on": "oom", ...}
 *            {"on": "pressure", "resource": "memory"|"cpu"|"io",
 *             "above": "some 10%"|"full 5%", "for": DURATION, ...}
 *   at most FR_CONFIG_MAX_TRIGGERS per session; a key of another kind
 *   ("percent" on a signal trigger) is an error. "window" (>= 1s) defaults
 *   to 60s, "after" to 0s, "cooldown" (>= 1s) to 60s; "for" (>= 1s) to
 *   10s; window + after is at most 1h. "signal" (required) is USR1, USR2,
 *   RTMIN, RTMIN+N or RTMAX-N, with or without "SIG", in any case; SIGHUP,
 *   SIGINT, SIGTERM, SIGPIPE, SIGCHLD (the daemon's own), SIGKILL, SIGSTOP
 *   and every other signal are refused, and so is a second signal trigger
 *   of one session on the same signal. "percent" is required. A session's
 *   "exit" trigger needs targets. A pressure trigger's "resource" and
 *   "above" are required; "above" is "some" or "full" (not for cpu
 *   without a cgroup target: the machine has no full CPU stall), one
 *   space, a share of 0.01..100 with at most two decimals, and "%"; its
 *   "for" defaults to 1s.
 *
 *   A session lists at most FR_LIMIT_EVENTS events, FR_LIMIT_SESSION_PIDS
 *   pids and FR_LIMIT_COMMS command names (core/util/limits.h): what its
 *   consumer and its dumps hold; more is refused, never cut.
 *
 *   EVENT is one of FR_EVENT_NAMES (core/store/sample.h). "offcpu" takes no "hz"
 *   (it records every context switch); other events default to 99 Hz.
 *   "period" (1..2^53, instead of "hz"; not for offcpu) is period mode: a
 *   sample every N events (N ns of CPU time for cpu), each weighing
 *   exactly N. When sessions ask one event by period and by rate, the
 *   smallest period wins and the rates are not used.
 *   "unwind" says how user stacks are walked: "dwarf" (the kernel copies
 *   "stack_copy" bytes of the user stack and the registers at each sample,
 *   and the recorder unwinds them with the binaries' CFI; frame pointers
 *   where a module has none; x86-64 only, elsewhere an error) or "fp" (the
 *   kernel's frame-pointer callchain only). Defaults: "dwarf" with
 *   "stack_copy" 8KiB (on x86-64), and for offcpu's "perf" mechanism "fp"
 *   (it would copy a stack at every context switch). "stack_copy"
 *   is 512B..64KiB-8, rounded up to a multiple of 8 (the kernel's limit),
 *   and only with "dwarf". When several sessions record one event, it is
 *   unwound with "dwarf" if any asks for it, with the largest stack_copy.
 *   offcpu takes "mechanism": "bpf" (default: an eBPF program measures
 *   every wait and takes stacks only for waits of at least "min_wait",
 *   default "1ms", 0..10s; shorter waits are counted exactly, added up
 *   per thread without a stack; with "dwarf" each long wait's user stack
 *   is copied where the thread returns to user space and unwound with
 *   CFI, a blocked thread's from its saved registers) or "perf"
 *   (sched_switch with a callchain at every switch, 5-10x the cost; a
 *   stack copy at every switch only with "unwind": "dwarf"; the one used
 *   when the eBPF program cannot load). When several sessions record
 *   offcpu, "perf" wins if any asks for it (with a stack copy only if one
 *   of those asks for "dwarf"), and the
 *   smallest "min_wait".
 *   "targets" (default: the whole machine) narrows what the session's
 *   profiles hold: pids, command names, a cgroup v2 path (and below).
 *   }
 *
 * Errors name the JSON path and what is accepted, e.g.
 *   "sessions[1].events[0].hz: must be 1..10000, got 0".
 * A config is applied whole or not at all.
 */
#ifndef FR_CONFIG_CONFIG_H
#define FR_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/limits.h"
#include "core/query/targets.h"
#include "core/util/time.h"

#define FR_CONFIG_MAX_SESSIONS 64
#define FR_CONFIG_NAME_MAX 64
#define FR_CONFIG_MAX_TRIGGERS 8
#define FR_CONFIG_PATH_MAX 4096
#define FR_CONFIG_MAX_USERS 16
#define FR_CONFIG_MAX_DEBUG_DIRS 8

/* What makes a session write a dump on its own. */
enum fr_trigger_kind {
	FR_TRIGGER_SIGNAL = 0, /* flightrecd receives `signal` */
	FR_TRIGGER_CPU_ABOVE,  /* CPU use of the session's targets (or the whole
				* machine when it has none) above `percent` of one
				* CPU x number of CPUs, for `for_ns` */
	FR_TRIGGER_EXIT,       /* a target process exits with a non-zero status
				* or dies of a signal */
	FR_TRIGGER_OOM,	       /* the OOM killer killed a process of the session's
				* targets (any process when it has none) */
	FR_TRIGGER_CRASH,      /* a process of the session's targets (any process
				* when it has none) died of a core-dumping signal */
	FR_TRIGGER_PRESSURE,   /* the machine's pressure (PSI) on `resource`, or
				* the cgroup target's own, above `above_bp` for
				* `for_ns` */
};

/* The resources of a pressure trigger (the order of
 * recorder/tracking/memsample.h's enum fr_pressure_resource). */
#define FR_CONFIG_PRESSURE_MEMORY 0u
#define FR_CONFIG_PRESSURE_CPU 1u
#define FR_CONFIG_PRESSURE_IO 2u

struct fr_config_trigger {
	uint32_t kind;	  /* enum fr_trigger_kind */
	int signal;	  /* FR_TRIGGER_SIGNAL: SIGUSR1, SIGUSR2 or
			      * SIGRTMIN..SIGRTMAX; else 0 */
	uint32_t percent; /* FR_TRIGGER_CPU_ABOVE: 1..100 x 1 (of all CPUs); else 0 */
	int64_t for_ns;	  /* FR_TRIGGER_CPU_ABOVE, FR_TRIGGER_PRESSURE: how long,
			      * >= 1s; else 0 */
	/* FR_TRIGGER_PRESSURE: FR_CONFIG_PRESSURE_*; whether "full" (all
	 * non-idle tasks stalled) rather than "some" (at least one); the
	 * share of wall time, in hundredths of a percent (1..10000). */
	uint32_t resource, full, above_bp;
	int64_t window_ns;   /* the dump covers [fire - window, fire + after) */
	int64_t after_ns;    /* tail recorded after the trigger fired, >= 0 */
	int64_t cooldown_ns; /* no second dump of this trigger sooner than this */
};

/* How an event's user stacks are walked ("unwind"). */
enum fr_config_unwind {
	FR_CONFIG_UNWIND_FP = 0, /* the kernel's frame-pointer callchain */
	FR_CONFIG_UNWIND_DWARF,	 /* a stack copy unwound with CFI tables */
};

/* How offcpu is recorded ("mechanism"). */
enum fr_config_offcpu_mechanism {
	FR_CONFIG_OFFCPU_BPF = 0, /* an eBPF program, stacks for waits >= min_wait */
	FR_CONFIG_OFFCPU_PERF,	  /* sched_switch with a callchain at every switch */
};
/* "min_wait" default and bounds. */
#define FR_CONFIG_MIN_WAIT_DEFAULT 1000000LL
#define FR_CONFIG_MIN_WAIT_MAX (10 * FR_NS_PER_S)

/* alloc's "mean": the bytes between samples on average, default and
 * bounds (those of lib/flightrec/alloc_abi.h, FR_ALLOC_MEAN_*). */
#define FR_CONFIG_ALLOC_MEAN_DEFAULT (512u << 10)
#define FR_CONFIG_ALLOC_MEAN_MIN 1u
#define FR_CONFIG_ALLOC_MEAN_MAX (1u << 30)

/* "stack_copy" bounds and default, in bytes. The kernel takes at most
 * 64 KiB - 8 (the record's size is 16 bits) in multiples of 8. */
#define FR_CONFIG_STACK_COPY_MIN 512u
#define FR_CONFIG_STACK_COPY_MAX (65536u - 8u)
#define FR_CONFIG_STACK_COPY_DEFAULT 8192u

/* Whether this build can unwind with CFI (x86-64 only). */
#if defined(__x86_64__)
#define FR_CONFIG_HAS_DWARF 1
#else
#define FR_CONFIG_HAS_DWARF 0
#endif

struct fr_config_event {
	uint32_t event;	     /* event id (core/store/sample.h) */
	uint32_t hz;	     /* 0 for events without a rate (offcpu) and in
			      * period mode */
	uint32_t unwind;     /* enum fr_config_unwind */
	uint32_t stack_copy; /* bytes, a multiple of 8; 0 with FR_CONFIG_UNWIND_FP */
	uint64_t period;     /* > 0: period mode, a sample every `period`
			      * events (ns for cpu), hz 0 */
	/* offcpu only: enum fr_config_offcpu_mechanism, and the shortest
	 * wait the eBPF mechanism takes stacks for (ns). */
	uint32_t mechanism;
	int64_t min_wait_ns;
	/* alloc only: the sampling mean in bytes ("mean"). */
	uint64_t mean;
};

struct fr_config_session {
	char name[FR_CONFIG_NAME_MAX];
	/* "targets": at most FR_LIMIT_SESSION_PIDS pids; children unused
	 * (0); has_uid when targets.uid is given. */
	struct fr_targets targets;
	uint32_t nusers; /* users besides root and the admin group who may
			    * dump the session by hand */
	uint32_t users[FR_CONFIG_MAX_USERS];
	uint32_t ntriggers;
	struct fr_config_trigger triggers[FR_CONFIG_MAX_TRIGGERS];
	uint32_t nevents;
	struct fr_config_event events[FR_LIMIT_EVENTS];
};

/* "symbols" (see above). */
struct fr_config_symbols {
	uint32_t ndebug_dirs;
	char *debug_dirs[FR_CONFIG_MAX_DEBUG_DIRS]; /* absolute, in search order */
	char *cache_dir;			    /* NULL: "symbols" beside the ring */
	uint64_t cache_size;			    /* 0: no cache */
	uint64_t cache_file_max;		    /* larger files are not cached */
};

/* "export": {"clickhouse": {...}} (config/config_export.c,
 * docs/clickhouse.md): where and what the exporter thread ships. */
struct fr_config_export {
	int enabled;	     /* the block is there */
	char *url;	     /* http[s]://HOST:PORT, no path */
	char *database;	     /* default "flightrec" */
	char *user;	     /* NULL: ClickHouse's default user */
	char *password_file; /* NULL: no password */
	char *ca_file;	     /* NULL: the system's CAs verify an https server */
	int64_t batch_ns;    /* the interval of a batch, whole seconds */
	uint32_t nevents;
	uint32_t events[FR_LIMIT_EVENTS];
	uint32_t hz; /* the export rate */
	char *host;  /* NULL: this machine's host name */
};

struct fr_config {
	char *ring_path; /* NULL: the default state directory */
	uint64_t ring_size;
	uint64_t segment_size;
	int64_t sync_ns;      /* < 0: never fdatasync */
	int64_t max_age_ns;   /* > 0: samples older than this are dropped */
	char *socket_path;    /* NULL: fr_ipc_default_socket(), ipc/paths.h */
	int has_socket_group; /* socket 0660 root:socket_gid; else 0600 */
	uint32_t socket_gid;
	int has_admin_group; /* members of admin_gid are treated like root */
	uint32_t admin_gid;
	uint32_t max_rate_hz;
	uint32_t user_max_rate_hz; /* what a user who is not an admin may raise rates to */
	uint32_t max_clients;
	uint64_t memory;       /* limits.memory: the daemon's caches and queries together */
	uint64_t query_memory; /* 0: what the ceiling leaves; else at most this for queries */
	uint64_t unwind_table_memory; /* 0: 3/8 of memory; else what CFI tables may take */
	char *dumps_dir;	      /* NULL: the default state directory's "dumps" */
	uint32_t dumps_keep;	      /* dumps kept, oldest removed first */
	uint64_t dumps_max_bytes;     /* 0: no limit; else bytes of dumps kept */
	uint32_t dumps_mode;	      /* of dump files: 0600 unless configured */
	struct fr_config_symbols symbols;
	struct fr_config_export export;
	uint32_t nsessions;
	struct fr_config_session sessions[FR_CONFIG_MAX_SESSIONS];
};

/* The embedded default configuration, as JSON text. */
extern const char fr_config_default_json[];

/* Parses and validates `len` bytes of JSON into `cfg` (initialized here;
 * release with fr_config_fini). Returns 0, or -EINVAL with
 * "PATH: reason" in `err` (cfg is then left empty). `source` names the
 * input in messages ("/etc/flightrec.json"). */
int fr_config_parse(struct fr_config *cfg, const char *json, size_t len, const char *source,
		    char *err, size_t errlen);

/* Reads and parses a file. Returns 0, -errno when it cannot be read, or
 * -EINVAL with the message in `err`. */
int fr_config_load(struct fr_config *cfg, const char *path, char *err, size_t errlen);

/* Loads the embedded default. Returns 0 (or -ENOMEM). */
int fr_config_default(struct fr_config *cfg);

/* The highest rate any session asks for `event`; 0 when none does. */
uint32_t fr_config_max_hz(const struct fr_config *cfg, uint32_t event);

/* Sets ev->unwind and ev->stack_copy to the defaults of ev->event: dwarf
 * with FR_CONFIG_STACK_COPY_DEFAULT for rate-sampled events where this
 * build can unwind with CFI, fp otherwise. */
void fr_config_event_defaults(struct fr_config_event *ev);

/* "signal", "cpu_above", "exit" for an enum fr_trigger_kind ("unknown"
 * out of range). */
const char *fr_config_trigger_kind(uint32_t kind);

/* A pressure trigger's resource ("memory", "cpu", "io"; "unknown" out of
 * range), and its "above" as the configuration writes it ("some 10%",
 * "full 2.5%") into `buf`, returned. */
const char *fr_config_pressure_resource(uint32_t resource);
char *fr_config_pressure_above(const struct fr_config_trigger *t, char *buf, size_t len);

/* The name a signal is printed with everywhere: "SIGUSR1", "SIGSEGV",
 * "SIGRTMIN+3" ("signal N" for a number that names none). Returns buf. */
char *fr_config_signal_name(int signo, char *buf, size_t len);

/* Frees what `cfg` owns; the struct can be parsed into again. */
void fr_config_fini(struct fr_config *cfg);

/* Serializes the effective configuration as JSON (malloc'd string). */
char *fr_config_to_json(const struct fr_config *cfg);

/* One setting that differs (config/config_diff.c): its JSON path
 * ("ring.sync", "sessions[db].events[0].hz"), and its value before and
 * after as JSON text cut to 95 bytes ("(none)" when absent); or, for a
 * whole named entry, `before` NULL and `after` "removed" or "added". */
typedef void (*fr_config_change_fn)(void *arg, const char *path, const char *before,
				    const char *after);

/* Calls `change` for each setting that differs between two texts of
 * fr_config_to_json(), in their order. Returns 0, or -ENOMEM when either
 * cannot be parsed (out of memory, or NULL). */
int fr_config_diff(const char *before, const char *after, fr_config_change_fn change, void *arg);

#endif
