/* Incident triggers: decide when a session writes a dump on its own.
 *
 * The engine watches, for every trigger of every configured session:
 *   signal     the daemon forwards the signals it receives
 *              (fr_triggers_signal); a session's signal trigger fires when
 *              its signal arrives.
 *   cpu_above  every second, the CPU use of the session's targets (all
 *              processes when it has none): pids from /proc/PID/stat,
 *              command names or a uid by scanning /proc (only those in
 *              the cgroup when one is given too), a cgroup alone from its cpu.stat
 *              usage_usec; the whole machine from /proc/stat.
 *              Fires when the use stayed above `percent` of the machine's
 *              CPUs (100 = every CPU busy) for `for_ns`.
 *   exit       a process exits with a non-zero status or dies of a signal
 *              (netlink proc connector, PROC_EVENT_EXIT with exit code and
 *              signal); fires when the process is one of the session's
 *              targets (of each kind given, pids, comm, cgroup and uid,
 *              one of its values, as profiles select; the configuration
 *              refuses an exit trigger on a session without targets). The
 *              uid is the process's real uid as its zombie shows it, so a
 *              user cannot fire another's trigger by naming a process
 *              like its target.
 *   oom        the OOM killer killed a process (fr_triggers_oom, from the
 *              ingest thread, which records the kill); fires when the
 *              victim is one of the session's targets as for exit, or for
 *              any victim when the session has none.
 *   crash      a process died of a core-dumping signal (fr_triggers_crash,
 *              from the ingest thread, which records the crash); fires as
 *              oom: for a process of the session's targets, or any
 *              process when the session has none.
 *   pressure   every second, the machine's pressure (PSI) on memory, CPU
 *              or I/O: the share of the second in which some task ("some")
 *              or every non-idle task ("full") stalled on the resource,
 *              from the "total" deltas the memory sampler records
 *              (fr_triggers_pressure, from the ingest thread); fires when
 *              the share stayed at or above the threshold for `for_ns`.
 *              A session whose targets name a cgroup watches that
 *              cgroup's own pressure instead (cgroup v2's
 *              RESOURCE.pressure, read at each of those seconds); its
 *              other targets do not filter the machine's.
 * A trigger that fired does not fire again before its cooldown has passed
 * (a fire inside the cooldown is counted as suppressed and logged, rate
 * limited). When a trigger fires, the engine waits `after_ns`, then calls
 * the dump callback with the window [fire - window_ns, fire + after_ns).
 *
 * The engine runs its own thread; the callback runs on it (a slow dump
 * delays only later triggers). fr_triggers_set() replaces the sessions
 * (a reload) without losing cooldowns of triggers that did not change.
 */
#ifndef FR_RECORDER_TRIGGERS_H
#define FR_RECORDER_TRIGGERS_H

#include <stdint.h>

#include "config/config.h"
#include "core/util/limits.h"
#include "recorder/tracking/memsample.h"

struct fr_triggers;

/* A process the OOM killer killed, as the recorder saw it (ingest). */
struct fr_trigger_oom {
	uint32_t pid;
	uint32_t uid; /* FR_PROC_UID_UNKNOWN when not known */
	char comm[FR_LIMIT_COMM_LEN];
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* cgroup v2 path, "" when not known */
	uint64_t rss;			  /* bytes at the kill (0: not given) */
	int64_t time_ns;		  /* Unix ns of the kill */
};

/* A process a fatal signal killed (a crash: recorder/sampling/bpf_events.h),
 * as the recorder saw it (ingest). */
struct fr_trigger_crash {
	uint32_t pid, tid;
	uint32_t uid; /* FR_PROC_UID_UNKNOWN when not known */
	char comm[FR_LIMIT_COMM_LEN];
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* cgroup v2 path, "" when not known */
	int signal;			  /* SIGSEGV, ... */
	int code;			  /* si_code */
	int has_addr;			  /* addr is the fault address */
	uint64_t addr;
	int64_t time_ns; /* Unix ns of the signal's delivery */
};

/* What fired a pressure trigger. */
struct fr_trigger_pressure_hit {
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* the cgroup's own pressure; "": the machine's */
	uint32_t resource;		  /* enum fr_pressure_resource */
	uint32_t full;			  /* 1: "full", 0: "some" */
	double share;			  /* percent of wall time stalled over the run */
	double above;			  /* the trigger's threshold, percent */
};

/* What fired, for the dump callback and the sidecar. */
struct fr_trigger_fire {
	const char *session;	/* session name */
	uint32_t session_index; /* index in the configuration in force */
	uint32_t trigger_index; /* index in the session's triggers */
	const struct fr_config_trigger *trigger;
	const char *kind;				/* "signal", "cpu_above", "exit" */
	char reason[256];				/* e.g. "SIGUSR1", "cpu 93% >= 90% for 10s",
				       * "pid 1234 (postgres) exited with status 3",
				       * "pid 1234 (postgres) killed by SIGSEGV" */
	int64_t fire_ns;				/* Unix ns the trigger fired */
	int64_t t0_ns, t1_ns;				/* the window to dump */
	uint32_t pid;					/* exit, oom: the process that exited or was
			       * killed; else 0 */
	const struct fr_trigger_oom *oom;		/* oom: the victim; else NULL */
	const struct fr_trigger_crash *crash;		/* crash: the process; else NULL */
	const struct fr_trigger_pressure_hit *pressure; /* pressure: what fired; else NULL */
};

/* Writes the dump of `fire` and, when `path` is not NULL, its file name
 * into `path` (`pathlen` bytes). Returns 0 or -errno, having logged why
 * (the engine only records successes); on failure `path`, when not NULL,
 * gets that one-line reason instead. */
typedef int (*fr_trigger_dump_fn)(void *arg, const struct fr_trigger_fire *fire, char *path,
				  size_t pathlen);

/* The engine's clocks: `mono_ns` (CLOCK_MONOTONIC in the daemon) times
 * cooldowns, `after` and CPU measurements; `real_ns` (CLOCK_REALTIME) is
 * the fire time and the dump window. Both are called on the engine's
 * thread and by fr_triggers_manual() with `ctx`; a clock given to the
 * engine must outlive it. */
struct fr_trigger_clock {
	int64_t (*mono_ns)(void *ctx);
	int64_t (*real_ns)(void *ctx);
	void *ctx;
};

/* Creates the engine for the sessions of `cfg` (copied) and starts its
 * thread, on the machine's clocks (as fr_triggers_start_clock() with a
 * NULL clock). The exit watcher is opened only when some session has an exit
 * trigger; if it cannot be opened (not root), the error is logged and the
 * exit triggers do not fire. Returns 0, or -errno with a message in `err`. */
int fr_triggers_start(struct fr_triggers **out, const struct fr_config *cfg,
		      fr_trigger_dump_fn dump, void *arg, char *err, size_t errlen);

/* As fr_triggers_start(), on `clock` (NULL: the machine's monotonic and
 * real-time clocks). With a clock of its own, a caller moves time itself
 * and calls fr_triggers_sync() for the engine to act on it. */
int fr_triggers_start_clock(struct fr_triggers **out, const struct fr_config *cfg,
			    const struct fr_trigger_clock *clock, fr_trigger_dump_fn dump,
			    void *arg, char *err, size_t errlen);

/* Wakes the engine and returns once its thread has handled everything it
 * was told before the call (signals, configurations) and written the
 * dumps due by the engine's clock at that moment. Must not be called from
 * the dump callback. */
void fr_triggers_sync(struct fr_triggers *t);

/* Replaces the sessions and triggers (configuration reload). */
int fr_triggers_set(struct fr_triggers *t, const struct fr_config *cfg);

/* The OOM killer killed `victim` (copied): fires the oom triggers it
 * matches. Never waits for the engine: the kill goes into a small queue
 * under a lock of its own (a full queue drops it, logged), and the engine
 * is woken. Any thread. */
void fr_triggers_oom(struct fr_triggers *t, const struct fr_trigger_oom *victim);

/* A process crashed (`crash`, copied): fires the crash triggers it
 * matches, as fr_triggers_oom (a queue of its own; never waits). Any
 * thread. */
void fr_triggers_crash(struct fr_triggers *t, const struct fr_trigger_crash *crash);
/* A second's pressure (copied): fires the pressure triggers it keeps above
 * their threshold long enough. Never waits for the engine, as
 * fr_triggers_oom (a full queue drops the tick, counted). Any thread. */
void fr_triggers_pressure(struct fr_triggers *t, const struct fr_pressure_tick *tick);

/* The daemon received `signo`: fires every signal trigger on it. */
void fr_triggers_signal(struct fr_triggers *t, int signo);

/* Fires session `name` by hand ("flightrec dump --session NAME"), with
 * `window_ns` (0: the window of its first trigger, or 60 s when it has
 * none), ignoring cooldowns. Synchronous: the dump callback runs on the
 * caller's thread, and this returns its result. Before any callback:
 * -ENOENT when no session has that name, -EBUSY while another dump of the
 * session by hand is being written (both leave `path` empty). `fire` is
 * filled, and `path` (when not NULL) names the dump written or says why it
 * failed. */
int fr_triggers_manual(struct fr_triggers *t, const char *name, int64_t window_ns,
		       struct fr_trigger_fire *fire, char *path, size_t pathlen);
/* fr_triggers_manual() with the dump's reason (`flightrec trigger
 * --reason`); NULL or "" is "requested by hand". */
int fr_triggers_manual_reason(struct fr_triggers *t, const char *name, int64_t window_ns,
			      const char *reason, struct fr_trigger_fire *fire, char *path,
			      size_t pathlen);

/* Unix ns of the last dump of session `index` (0: none), and the number of
 * fires suppressed by cooldowns, for `sessions` replies. */
int64_t fr_triggers_last_dump(struct fr_triggers *t, uint32_t index);
uint64_t fr_triggers_suppressed(struct fr_triggers *t, uint32_t index);

/* Stops the thread (a dump in progress completes) and frees; accepts NULL. */
void fr_triggers_stop(struct fr_triggers *t);

#endif
