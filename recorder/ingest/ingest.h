/* The ingest thread's context: what it drains, decodes, seals and hands
 * on, and what it tells status. The daemon wires the borrowed parts
 * (recorder/daemon.c) before the loop runs; nothing here knows the rest of
 * the recorder.
 *
 * Only the ingest thread touches the perf rings, the tracker, the
 * application labels and the chunk builder; it never blocks on disk or
 * clients. The counters below are written by it and read by any thread
 * (atomics); the stall log is read under its lock.
 */
#ifndef FR_RECORDER_INGEST_H
#define FR_RECORDER_INGEST_H

#include <pthread.h>
#include <stdint.h>

#include "core/util/time.h"
#include "recorder/sampling/perf.h"
#include "recorder/sampling/poller.h"

/* The ingest loop wakes at least every second; a gap between two drains
 * longer than this is a stall, counted and logged. */
#define FR_INGEST_STALL_NS (3 * FR_NS_PER_S)
/* What the watcher saw the held-up ingest thread doing, at most. */
#define FR_INGEST_WHERE_MAX 128
/* Ingest stalls remembered for attach replies. */
#define FR_INGEST_STALL_LOG 16

struct fr_allocs;
struct fr_applabels;
struct fr_chunk_builder;
struct fr_cfi_table;
struct fr_memsample;
struct fr_sources;
struct fr_tracker;
struct fr_triggers;
struct fr_unwind_tables;
struct fr_writer;

struct fr_ingest {
	/* Wired by the daemon (borrowed). */
	struct fr_sources *sources; /* whose drains deliver to `handler` */
	struct fr_writer *writer;
	struct fr_chunk_builder *builder;
	struct fr_tracker *tracker;
	struct fr_applabels *applabels;
	struct fr_allocs *allocs;		/* NULL: allocation rings not read */
	struct fr_pystacks *pystacks;		/* NULL: none (no BPF) */
	struct fr_unwind_tables *unwind_tables; /* NULL: none */
	struct fr_triggers *triggers;		/* NULL: none; other signals go there */
	struct fr_memsample *memsample;		/* NULL: no RSS nor pressure samples */
	uint8_t psi_failed[3]; /* the pressure files status says fail (memory, cpu, io) */
	int sig_fd;	       /* SIGHUP, SIGINT, SIGTERM and the triggers' */
	int flush_efd;	       /* flush barriers asked */
	/* What SIGHUP does (the daemon's reload), with `reload_arg`. */
	void (*reload)(void *arg);
	void *reload_arg;

	/* A sample with its Python frames spliced in, and its stack. */
	struct fr_sample py_sample;
	uint64_t py_ips[FR_MAX_FRAMES];

	/* The thread's own: what it polls and the records' callbacks, whether
	 * it stops, the barrier to seal with after this wake-up's drain. */
	struct fr_poller poller;
	struct fr_perf_handler handler;
	int stopping;
	uint64_t barrier;
	int64_t last_seal_mono;	  /* the last periodic seal (with open waits), not a full chunk's */
	int64_t exec_seal_second; /* monotonic ns: the second exec_seals counts in */
	uint32_t exec_seals;	  /* seals at execs of sampled processes in it */
	int64_t unwind_wait_left; /* ns this second may still wait for tables */
	uint32_t unwind_pending_uid; /* whose process the last pending table was for */
	int64_t unwind_wait_second;  /* CLOCK_MONOTONIC ns that second began */
	/* The mappings whose tables the last frames used, for the frames to
	 * come (a stack goes back and forth between a few files). Valid for
	 * one drain: emptied whenever tables or mappings may change. */
	struct {
		uint32_t pid;
		uint64_t start, end, pgoff;
		const struct fr_cfi_table *table;
	} unwind_mru[4];
	unsigned unwind_mru_n, unwind_mru_next;
	/* The unwind tables' clock every 10 s of the last minute, and when
	 * the last was taken: tables no frame used for a minute go. */
	uint64_t tables_marks[6];
	uint64_t tables_nmarks;
	int64_t tables_mono;
	/* The watchdog of its SCHED_FIFO: its CPU time at the start of the
	 * current second, when that second started, when it may run at
	 * SCHED_FIFO again (0: now), whether it may at all. */
	int64_t rt_cpu0, rt_window0, rt_resume_at;
	int rt_allowed;
	/* Open-wait records stored at the last seal: while threads are
	 * blocked, a chunk is sealed every second even when nothing ran, so
	 * the ring keeps saying who is stuck. */
	uint32_t open_waits;
	/* Losses counted into the chunk being built since the last seal: such
	 * a chunk is sealed at the next second even without a sample, so a
	 * crash does not take the count with it. */
	int losses_pending;
	/* Unix ns of the two drains before the current one: samples lost
	 * now were taken since the earlier (the gaps of core/store/chunk.h,
	 * section 4; see lost_gap()). */
	int64_t prev_drain_real, prev2_drain_real;

	/* For status (atomics): all events together, the processes and
	 * threads known, those whose application labels are read and those
	 * no longer read (their memory lied or stalled); Unix ns of the last
	 * drain and seal, CLOCK_MONOTONIC ns of the last drain, stalls seen,
	 * the longest, flush barriers that timed out; the thread's nice
	 * value, whether it runs at SCHED_FIFO and the times its watchdog
	 * took it off. */
	uint64_t samples, lost, chunks_sealed;
	uint32_t nprocs, nthreads;
	uint32_t labelled_procs, unreadable_procs;
	/* Go programs whose pprof labels are read, and those that could not
	 * be (since the start). */
	uint32_t go_procs;
	uint64_t go_skipped;
	int64_t last_drain_real, last_seal_real, last_drain_mono;
	uint64_t stalls, flush_timeouts;
	int64_t longest_stall_ns;
	int32_t nice, realtime;
	uint64_t realtime_drops;

	/* The last stalls, Unix ns of the drain before and after each. */
	pthread_mutex_t stall_lock;
	struct fr_ingest_stall {
		int64_t t0, t1;
	} stall_log[FR_INGEST_STALL_LOG];
	uint32_t stall_next;
	/* Where the watcher (ingest_watch.c) saw the ingest thread while it
	 * was held up since the drain at where_drain (CLOCK_MONOTONIC):
	 * first and latest; under stall_lock. */
	int64_t where_drain;
	char where_first[FR_INGEST_WHERE_MAX], where_last[FR_INGEST_WHERE_MAX];
	/* The watcher thread: the ingest thread's tid, its lock, condition
	 * and stop flag. */
	pid_t tid;
	pthread_t watch_thread;
	pthread_mutex_t watch_lock;
	pthread_cond_t watch_cond;
	int watch_stop, watching;
};

/* Sets up `g` and makes it the receiver of `sources`' drains: the sources
 * are initialized on its poller with its record callbacks. The borrowed
 * parts are wired afterwards. Pair with fr_ingest_fini(), after the
 * sources are. */
void fr_ingest_init(struct fr_ingest *g, struct fr_sources *sources);
void fr_ingest_fini(struct fr_ingest *g);

/* Runs the ingest thread until SIGINT or SIGTERM (the open chunk sealed
 * and queued). Returns 0, or -ENOMEM when it cannot poll. */
int fr_ingest_loop(struct fr_ingest *g);

/* Asks the ingest thread to seal and waits until the writer stored it.
 * Any thread. Returns 0, or -ETIMEDOUT (counted) or -errno. */
int fr_ingest_flush(struct fr_ingest *g);

/* Adds `s` to the chunk being built, sealing a full one first. Returns
 * 0 or fr_chunk_builder_add's -errno. Ingest thread. */
int fr_ingest_add(struct fr_ingest *g, const struct fr_sample *s);

/* recorder/ingest/ingest_memory.c: an OOM kill drained (the handler's
 * `oom`): into the ring, the log and the trigger engine. */
void fr_ingest_on_oom(void *arg, const struct fr_sample *s, const char *comm);

/* recorder/ingest/ingest_memory.c: opens the OOM kills' source and starts
 * the memory sampler (unless FLIGHTREC_MEMORY_SAMPLES=off), each said in
 * the log and status when it cannot; stop frees the sampler. Before and
 * after the loop. */
void fr_ingest_memory_start(struct fr_ingest *g);
void fr_ingest_memory_stop(struct fr_ingest *g);

/* recorder/ingest/ingest_memory.c: the OOM kills' ring lost `lost`
 * records: counted as the event's losses and logged. */
void fr_ingest_oom_lost(struct fr_ingest *g, uint64_t lost);

/* recorder/ingest/ingest_events.c: loads the black box's program (exec,
 * exit, crash; fr_sources_open_blackbox), said in the log and status
 * when it cannot. Before the loop. */
void fr_ingest_events_start(struct fr_ingest *g);

/* recorder/ingest/ingest_events.c: an event of the black box drained (the
 * handler's `blackbox`): into the ring; a crash into the log and the
 * trigger engine too. */
struct fr_bpf_event;
void fr_ingest_on_blackbox(void *arg, const struct fr_sample *s, const struct fr_bpf_event *ev);

/* recorder/ingest/ingest_events.c: the black box's program had no room
 * for `lost` records of `event`: counted as the event's losses. */
void fr_ingest_blackbox_lost(struct fr_ingest *g, uint32_t event, uint64_t lost);

/* recorder/ingest/ingest_memory.c: the RSS and pressure samples the memory
 * sampler read since the last wake-up, into the chunk being built. */
void fr_ingest_memory_take(struct fr_ingest *g);

/* The unwind tables may have dropped tables (a new budget): the next
 * frames look them up again. Ingest thread. */
void fr_ingest_tables_changed(struct fr_ingest *g);

/* Starts the thread that, once a second, looks at where the ingest thread
 * (the caller) is while it is held up over FR_INGEST_STALL_NS (its state,
 * wait channel and system call in /proc/self/task), for the stall's log
 * line. Returns 0 or -errno (then the log says less). */
int fr_ingest_watch_start(struct fr_ingest *g);
void fr_ingest_watch_stop(struct fr_ingest *g);
/* " (seen state D in vm_mmap_pgoff, system call 9)" of the stall since the
 * drain at `last_drain_mono`, "" when the watcher did not see it. */
void fr_ingest_stall_where(struct fr_ingest *g, int64_t last_drain_mono, char *out, size_t len);

/* The longest stall noted overlapping [t0, t1), clipped to it, in *s0 and
 * *s1. Returns 1, or 0 when there is none. Any thread. */
int fr_ingest_stall_within(struct fr_ingest *g, int64_t t0, int64_t t1, int64_t *s0, int64_t *s1);

#endif
