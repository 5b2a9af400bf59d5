/* What the files of the trigger engine share: its state and the steps
 * one file calls in another.
 *
 *   triggers.c         the thread, the API, signals and firing: pending
 *                      dumps, cooldowns, writing what is due
 *   triggers_config.c  installing a configuration, carrying state over
 *   triggers_cpu.c     cpu_above: measuring CPU use, deciding a run above
 *   triggers_exit.c    exit: which processes the table (proc_table.c)
 *                      follows, and whether an exit fires
 *   triggers_oom.c     oom: the kills ingest hands over
 *   triggers_pressure.c pressure: the seconds ingest hands over, and
 *                      whether a run above the threshold fires
 *
 * Everything in struct fr_triggers but the atomics is guarded by its
 * lock; the functions below are called with it held.
 */
#ifndef FR_RECORDER_TRIGGERS_INT_H
#define FR_RECORDER_TRIGGERS_INT_H

#include <pthread.h>
#include <stdint.h>

#include "core/util/time.h"
#include "recorder/tracking/proc.h"
#include "recorder/tracking/proc_table.h"
#include "recorder/tracking/procwatch.h"
#include "recorder/triggers/triggers.h"

#define TICK_NS FR_NS_PER_S
/* A run above the threshold counts as long enough when it misses `for`
 * by less than this: ticks are a second apart and never exact. */
#define TICK_SLACK_NS (TICK_NS / 10)
#define DEFAULT_WINDOW_NS (60 * FR_NS_PER_S)
#define MAX_PENDING 256
#define MAX_SIGNAL 64
#define LOG_INTERVAL_NS (10 * FR_NS_PER_S)
#define CG_LEN FR_PROC_CGROUP_LEN
/* A process whose uid could not be read: matches no uid target. */
#define UID_UNKNOWN FR_PROC_UID_UNKNOWN
/* OOM kills waiting for the engine at most. */
#define OOM_QUEUE 32
/* Crashes waiting for the engine at most. */
#define CRASH_QUEUE 32
/* Seconds of pressure waiting for the engine at most. */
#define PSI_QUEUE 8

struct trig_state {
	int fired;
	int64_t last_fire_mono;
	int64_t above_since; /* cpu_above: start of the run above; 0: none */
	double above_pct_ns; /* sum of percent x duration over the run */
	int64_t above_ns;
	/* pressure: the sum of share x duration over the run, and its end */
	double psi_share_ns;
	int64_t psi_last_mono;
	/* pressure of a cgroup target: its file's last totals, at the
	 * machine's tick psi_base_mono (0: none yet), read at psi_read_mono
	 * (CLOCK_MONOTONIC), and whether a failed read was logged */
	int64_t psi_base_mono, psi_read_mono;
	uint64_t psi_some_base, psi_full_base;
	int psi_has_full, psi_warned;
};

struct proc_sample {
	uint32_t pid;
	uint64_t start; /* clock ticks after boot */
	uint64_t ticks; /* utime + stime */
};

struct cpu_meter {
	int valid; /* a previous measurement exists */
	int warned;
	int64_t mono;
	uint64_t busy, total; /* whole machine, /proc/stat ticks */
	uint64_t usage_us;    /* cgroup */
	uint64_t boot_ticks;  /* clock ticks after boot at `mono` */
	struct proc_sample *procs, *next;
	uint32_t nprocs, nnext, cap_procs, cap_next;
};

struct sess_state {
	struct trig_state trig[FR_CONFIG_MAX_TRIGGERS];
	struct cpu_meter meter;
	int64_t last_dump_ns;
	uint64_t suppressed;
};

struct pending {
	int64_t due_mono;
	struct fr_trigger_fire fire;
	struct fr_config_trigger trigger;
	char session[FR_CONFIG_NAME_MAX];
	int has_oom;
	struct fr_trigger_oom oom;
	int has_crash;
	struct fr_trigger_crash crash;
	int has_pressure;
	struct fr_trigger_pressure_hit pressure;
};

/* A dump by hand in progress, on its caller's stack. */
struct manual_run {
	const char *session;
	struct manual_run *next;
};

struct fr_triggers {
	pthread_t thread;
	pthread_mutex_t lock;	  /* guards everything below but the atomics */
	pthread_mutex_t set_lock; /* one fr_triggers_set at a time */
	pthread_cond_t synced;	  /* sync_done moved */
	struct fr_trigger_clock clock;
	fr_trigger_dump_fn dump;
	void *arg;
	int evfd;
	int stop; /* atomic */
	/* OOM kills handed over by ingest, under their own lock (never held
	 * while anything else is), and those dropped for want of room. */
	pthread_mutex_t oom_lock;
	struct fr_trigger_oom oom_queue[OOM_QUEUE];
	uint32_t noom;
	uint64_t oom_dropped;
	/* Crashes handed over by ingest, the same way. */
	pthread_mutex_t crash_lock;
	struct fr_trigger_crash crash_queue[CRASH_QUEUE];
	uint32_t ncrash;
	uint64_t crash_dropped;
	/* Seconds of pressure handed over by ingest, under oom_lock too. */
	struct fr_pressure_tick psi_queue[PSI_QUEUE];
	uint32_t npsi;
	uint64_t psi_dropped;
	uint32_t sigcount[MAX_SIGNAL + 1]; /* atomic: forwarded, not handled */

	struct fr_config_session *sessions;
	struct sess_state *state;
	uint32_t nsessions;
	int has_cpu, has_exit, track_cgroup;
	int has_pressure;		/* atomic: some session has a pressure trigger */
	uint64_t gen;			/* bumped by each configuration */
	struct fr_procwatch *watch_new; /* handed to the thread */
	struct pending *pending;
	uint32_t npending;
	struct manual_run *manual; /* dumps by hand being written */
	uint64_t sync_req;	   /* fr_triggers_sync() calls so far */
	uint64_t sync_done;	   /* those the thread has caught up with */

	/* The thread's own. */
	struct fr_procwatch *watch;
	uint64_t seen_gen;
	struct fr_proc_table procs;
	long clk_tck;
	const char *proc; /* "/proc" */
	char cgroot[512]; /* where cgroup2 is mounted */
};

static inline int64_t trig_mono(const struct fr_triggers *t)
{
	return t->clock.mono_ns(t->clock.ctx);
}

static inline int64_t trig_real(const struct fr_triggers *t)
{
	return t->clock.real_ns(t->clock.ctx);
}

/* triggers.c */
void trig_wake(struct fr_triggers *t);
char *trig_fmt_dur(int64_t ns, char *buf, size_t len);
int trig_has_targets(const struct fr_config_session *s);
int trig_has_kind(const struct fr_config_session *s, uint32_t kind);
int trig_targets_match(const struct fr_config_session *s, uint32_t pid, const char *comm,
		       const char *cgroup, uint32_t uid);
int trig_find_session(const struct fr_triggers *t, const char *name);
int64_t trig_window_of(const struct fr_config_trigger *tr);
/* Trigger `ti` of session `si` fired: queues its dump unless it is in its
 * cooldown. */
struct pending *trig_fire(struct fr_triggers *t, uint32_t si, uint32_t ti, const char *reason,
			  uint32_t pid);

/* triggers_config.c */
int trig_config_has_exit(const struct fr_config *cfg);
/* Installs the sessions of `cfg` (see the function). Returns 0 or -ENOMEM. */
int trig_apply(struct fr_triggers *t, const struct fr_config *cfg);
void trig_meter_free(struct cpu_meter *m);

/* triggers_cpu.c: one measurement of every session with a cpu_above
 * trigger, firing those that stayed above long enough. */
void trig_cpu_tick(struct fr_triggers *t);

/* triggers_oom.c: the OOM kills queued since the last pass, fired. */
void trig_oom_handle(struct fr_triggers *t);

/* triggers_crash.c: the crashes queued since the last pass, fired. */
void trig_crash_handle(struct fr_triggers *t);
/* triggers_pressure.c: the seconds of pressure queued since the last
 * pass, each run above its threshold long enough fired. */
void trig_pressure_handle(struct fr_triggers *t);

/* triggers_exit.c */
/* Fills the process table from /proc (start and reloads). */
void trig_seed_procs(struct fr_triggers *t);
/* The exit watcher's callbacks, for `t`. */
void trig_exit_handlers(struct fr_triggers *t, struct fr_procwatch_handler *h);

#endif
