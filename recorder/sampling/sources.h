/* What flightrecd records: the side band and one source per event, at the
 * highest rate any consumer asks for.
 *
 * A consumer is someone who wants events at rates: a configured session,
 * or a client that holds a rate for as long as its connection lives
 * (attach --follow). Every change to the consumers bumps a generation and
 * pokes the ingest thread, which reconciles the sources with them
 * (fr_sources_reconcile()) and advances the reconciled generation that
 * request threads wait for.
 *
 * Locks: `lock` guards the table (the ingest thread changes it, request
 * threads read it); `consumers_lock` guards the consumer list and the
 * generations. Neither is held while the other is taken. Only the ingest
 * thread opens, retunes, drains and closes perf events.
 */
#ifndef FR_RECORDER_SOURCES_H
#define FR_RECORDER_SOURCES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "core/query/profile.h"
#include "ipc/msg_status.h"
#include "recorder/sampling/perf.h"
#include "recorder/sampling/poller.h"

/* Distinct events recorded at once (each is one perf event per CPU). */
#define FR_SOURCES_MAX 16
#define FR_SOURCES_RECONCILE_TIMEOUT_MS 3000

/* One event being recorded: a perf source on every CPU. */
struct fr_source {
	uint32_t event;
	struct fr_perf *perf; /* NULL: could not be opened, see error */
	uint32_t hz;	      /* the rate in force (0 for offcpu and period mode) */
	uint64_t period;      /* period mode: the period in force; else 0 */
	uint32_t stack_copy;  /* bytes of user stack copied (0: frame pointers) */
	/* offcpu: the mechanism asked for (FR_PERF_OFFCPU_*; the source may
	 * have fallen back, see fr_perf_offcpu_fallback) and min_wait. */
	uint32_t mechanism;
	uint64_t min_wait_ns;
	uint32_t offcpu_extra; /* FR_PERF_OFFCPU_WAKEUP | _RUNQUEUE asked */
	char error[256];       /* why it is not recording; "" when it is */
	int64_t since_ns;      /* Unix ns it started recording at this rate */
	/* Counters (atomics). */
	uint64_t samples, lost, throttled, truncated;
};

struct fr_consumer {
	struct fr_consumer *next;
	struct fr_sources *sources;
	char name[96];
	int session; /* from the configuration: replaced on reload */
	uid_t uid;   /* a following client's; (uid_t)-1 for others */
	/* A user who is not privileged: follows events without a rate
	 * (offcpu) only while others record them; never keeps one open. */
	bool follows_only;
	uint32_t nevents;
	uint32_t events[FR_LIMIT_EVENTS];
	uint32_t hz[FR_LIMIT_EVENTS];
	/* > 0: period mode (a session's "period"), which wins over rates:
	 * the smallest period any consumer asks is used. */
	uint64_t period[FR_LIMIT_EVENTS];
	/* How it wants the stacks of each event unwound: 0 no opinion (a
	 * client: the event's default unless a session says), else
	 * FR_CONFIG_UNWIND_* + 1, with the stack copy for dwarf. */
	uint8_t unwind[FR_LIMIT_EVENTS];
	uint32_t stack_copy[FR_LIMIT_EVENTS];
	/* offcpu: 0 no opinion (a client), else FR_CONFIG_OFFCPU_* + 1 with
	 * its min_wait. */
	uint8_t mechanism[FR_LIMIT_EVENTS];
	int64_t min_wait_ns[FR_LIMIT_EVENTS];
	/* alloc: the sampling mean in bytes (0: no opinion). */
	uint64_t mean[FR_LIMIT_EVENTS];
	int64_t since_ns;
};

/* The events recorded whatever consumers ask (sources_memory.c). */
#define FR_SOURCES_MEMORY_EVENTS 6
/* The black box's events, recorded whatever consumers ask
 * (sources_blackbox.c): exec, exit and crash. */
#define FR_SOURCES_BLACKBOX_EVENTS 3

struct fr_bpf_events;

struct fr_sources {
	pthread_mutex_t lock;
	struct fr_source table[FR_SOURCES_MAX];
	unsigned n;
	struct fr_perf *sideband; /* MMAP2, COMM, FORK, EXIT for every profile */
	/* The memory events recorded whatever the consumers ask
	 * (sources_memory.c): oom, rss, memory-pressure, throttled,
	 * cpu-pressure and io-pressure, in
	 * that order. `oom` is oom:mark_victim's source (NULL when it did
	 * not open: memory[0].error says why). */
	struct fr_perf *oom;
	struct fr_memory_source {
		int recording;		/* set before the ingest loop runs */
		char error[256];	/* why not, when not */
		int64_t since_ns;	/* Unix ns */
		uint64_t samples, lost; /* atomics */
	} memory[FR_SOURCES_MEMORY_EVENTS];
	/* The black box's program (NULL when it did not load or is off:
	 * blackbox[].error says why) and its events' status: exec, exit,
	 * crash, in that order. */
	struct fr_bpf_events *blackbox;
	struct fr_memory_source blackbox_ev[FR_SOURCES_BLACKBOX_EVENTS];
	/* throttled's reads of cpu.stat (the numbers atomics; the source
	 * set before the ingest loop runs). */
	struct fr_ipc_cgroups cgroups;
	/* The source being drained (ingest thread): every record a drain
	 * delivers is its, so the sample path counts without a lookup. NULL
	 * while the side band drains. */
	struct fr_source *draining;
	/* What drains deliver records to, and the clock offset they use
	 * (ingest thread). `before_drain` runs before every drain. */
	const struct fr_perf_handler *handler;
	int64_t clock_offset;
	void (*before_drain)(void *arg);
	void *before_drain_arg;
	struct fr_poller *poller; /* the ingest thread's; perf fds are registered in it */
	/* Application labels (recorder/tracking/applabels.h): the program attached to
	 * every rate-sampled source, and the process map the off-CPU
	 * program shares; -1 without them. */
	int labels_prog_fd, labels_map_fd;
	int py_procs_fd, py_threads_fd; /* its Python maps, shared the same way */
	int reconcile_efd;
	/* Allocation samples come from no source of this table but the
	 * processes' rings (recorder/sampling/allocs.h): the smallest mean
	 * any consumer of alloc or heap asks, 0 when none does (atomic). */
	uint64_t alloc_mean;

	pthread_mutex_t consumers_lock;
	pthread_cond_t consumers_cond; /* reconciled_gen advanced */
	struct fr_consumer *consumers;
	uint64_t consumers_gen, reconciled_gen;
};

/* Initializes `s`: drains go to `handler` (borrowed), perf descriptors are
 * registered in `poller` (borrowed). Returns 0 or -errno; pair with
 * fr_sources_fini() either way. */
int fr_sources_init(struct fr_sources *s, struct fr_poller *poller,
		    const struct fr_perf_handler *handler);

/* Closes every source and the side band, frees the consumers. */
void fr_sources_fini(struct fr_sources *s);

/* Registers the descriptor that wakes the ingest thread to reconcile, in
 * the poller. Returns 0 or -errno. */
int fr_sources_listen(struct fr_sources *s);

/* Opens the side band on every CPU and registers it. Returns 0, or
 * -errno with `err` set. */
int fr_sources_open_sideband(struct fr_sources *s, char *err, size_t errlen);

/* Opens the OOM kills' source on every CPU, registers and enables it
 * (sources_memory.c). On failure logs why once (a warning: everything
 * else records on) and keeps it for status. Returns 0 or -errno. */
int fr_sources_open_oom(struct fr_sources *s);

/* Notes that `event` (oom, rss, memory-pressure, throttled, cpu-pressure
 * or io-pressure) records, or why not (`error` not NULL). Before the
 * ingest loop runs, and on the ingest thread when a pressure file fails
 * or reads again. */
void fr_sources_memory_state(struct fr_sources *s, uint32_t event, const char *error);

/* Where throttled reads cpu.stat ("cgroup v1 at ..."). Before the
 * ingest loop runs. */
void fr_sources_throttle_source(struct fr_sources *s, const char *source);

/* What throttled's reads did so far (cgroups remembered now, reads,
 * failures, skipped), for status. Any thread. */
void fr_sources_throttle_counts(struct fr_sources *s, uint64_t watched, uint64_t reads,
				uint64_t failures, uint64_t skipped);

/* Counts a sample of memory event `event` kept (`lost` 0) or lost. Any
 * thread. */
void fr_sources_memory_count(struct fr_sources *s, uint32_t event, uint64_t kept, uint64_t lost);

/* Fills `out` (room for FR_SOURCES_MEMORY_EVENTS) with the memory events' status; returns how
 * many. */
uint32_t fr_sources_memory_status(struct fr_sources *s, struct fr_ipc_event_status *out);

/* Loads the black box's program (recorder/sampling/bpf_events.h),
 * registers its ring buffer in the poller: exec, exit and crash are
 * recorded from now on, unless FLIGHTREC_BLACKBOX=off. On failure logs
 * why once (a warning: everything else records on) and keeps it for
 * status. After labels_map_fd is set. Returns 0 or -errno. */
int fr_sources_open_blackbox(struct fr_sources *s);

/* Counts samples of black box event `event` kept and lost. Any thread. */
void fr_sources_blackbox_count(struct fr_sources *s, uint32_t event, uint64_t kept, uint64_t lost);

/* Fills `out` (room for FR_SOURCES_BLACKBOX_EVENTS) with the black box
 * events' status; returns how many. */
uint32_t fr_sources_blackbox_status(struct fr_sources *s, struct fr_ipc_event_status *out);

/* Drains the side band first (so samples find their process), then the
 * OOM kills' source and every other source. Ingest thread. */
void fr_sources_drain(struct fr_sources *s);

/* Opens, retunes and closes sources so that each event any consumer wants
 * runs at the highest rate any of them wants, and nothing else runs.
 * Ingest thread. Returns 1 when the set of descriptors changed. */
int fr_sources_reconcile(struct fr_sources *s);

/* Enables or disables every open source. Ingest thread. */
void fr_sources_enable(struct fr_sources *s, int on);

/* The first source's error when sources exist and none records, else
 * NULL. Ingest thread. */
const char *fr_sources_all_failed(struct fr_sources *s);

/* The source of `event`, or NULL. Ingest thread, or under `lock`. */
struct fr_source *fr_sources_find(struct fr_sources *s, uint32_t event);

/* What the PMU does to the `n` events (n 0: cpu) as they record now, for
 * a profile's comment: each hardware event's precise_ip level ("cycles:
 * precise_ip 2 of 3 asked, the leaf frame is the sampled instruction")
 * and each multiplexed one ("instructions: multiplexed, counted 48.0% of
 * the time; weights scaled up by enabled/running"), joined by "; ";
 * "" when there is nothing to say. */
void fr_sources_pmu_note(struct fr_sources *s, const uint32_t *events, uint32_t n, char *buf,
			 size_t len);

/* Fills the "pmu" part of open sampling source `src`'s status
 * (recorder/sampling/sources_pmu.c): precise_ip asked and accepted
 * (hardware events), enabled_ns, running_ns, multiplexed, scaled_samples,
 * and time_reads_failed when some were. Under the sources' lock. */
void fr_source_pmu_status(struct fr_ipc_pmu *out, const struct fr_source *src);

/* Whether `event` records: 1 yes, 0 no source asks for it, -1 its source
 * failed (the reason in `err`). Takes `lock`. */
int fr_sources_state(struct fr_sources *s, uint32_t event, char *err, size_t errlen);

/* The rate `event` records at (0: none, or every context switch). Takes
 * `lock`. */
uint32_t fr_sources_hz(struct fr_sources *s, uint32_t event);

/* The allocation sampling mean consumers ask (bytes; 0: none asks alloc
 * or heap). Any thread. */
uint64_t fr_sources_alloc_mean(const struct fr_sources *s);

/* The labels records of off-CPU waits the eBPF program had no room for
 * (their waits kept without labels); 0 without that mechanism.
 * Thread-safe. */
uint64_t fr_sources_offcpu_labels_dropped(struct fr_sources *s);

/* "cpu at 99 Hz, offcpu at every context switch": the sources and their
 * rates, with those that failed ("cycles not recording") when `failed`.
 * Ingest thread. */
void fr_sources_describe(struct fr_sources *s, int failed, char *buf, size_t len);

/* Fills "events" (what is recorded, at which rate, with its counters, or
 * why it is not) and "consumers" (who asks for what) of a reply for a
 * viewer; `out` owns the arrays (fr_ipc_status_reply_fini()). A viewer
 * who is not `privileged` sees other users' clients as "a client",
 * without their uid. Returns 0 or -ENOMEM. */
int fr_sources_status(struct fr_sources *s, struct fr_ipc_recording *out, int privileged,
		      uid_t viewer_uid);

/* The session consumers of `cfg` (replacing the previous ones). With
 * `hz_fixed`, `hz` is the rate of cpu in every session. */
void fr_sources_set_sessions(struct fr_sources *s, const struct fr_config *cfg, int hz_fixed,
			     uint32_t hz);

/* Adds `c` (owned by the list from now on) and returns the generation to
 * wait for. */
uint64_t fr_consumer_add(struct fr_sources *s, struct fr_consumer *c);

/* Unlinks and frees `c`; the sources follow without waiting. */
void fr_consumer_remove(struct fr_sources *s, struct fr_consumer *c);

/* A client's connection ended: its rates (a struct fr_consumer) go with
 * it. The IPC server's release callback. */
void fr_consumer_release(void *hold);

/* Waits until the sources reflect consumers generation `gen`. Returns 0 or
 * -ETIMEDOUT. */
int fr_sources_wait_reconciled(struct fr_sources *s, uint64_t gen);

#endif
