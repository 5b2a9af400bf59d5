/* What the parts of flightrecd share: recorder/daemon.c (start-up and
 * shutdown), recorder/ingest/ingest.c (the ingest thread), recorder/requests/requests.c
 * (what a client asks over the socket, and the dumps the trigger engine
 * asks for) and recorder/requests/status.c (status and sessions replies). The
 * writer and the sources are objects of their own (recorder/ingest/writer.h,
 * recorder/sampling/sources.h). Private to them.
 */
#ifndef FR_RECORDER_DAEMON_INT_H
#define FR_RECORDER_DAEMON_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "core/util/budget.h"
#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/util/time.h"
#include "ipc/server.h"
#include "recorder/daemon.h"
#include "recorder/sampling/perf.h"
#include "recorder/requests/cursors.h"
#include "recorder/sampling/poller.h"
#include "recorder/sampling/sources.h"
#include "recorder/tracking/applabels.h"
#include "recorder/tracking/tracker.h"
#include "recorder/tracking/unwind_tables.h"
#include "recorder/triggers/triggers.h"
#include "recorder/ingest/writer.h"

#define SEAL_INTERVAL_NS FR_NS_PER_S
/* The ingest thread sleeps until the next seal is due (at most this long),
 * or until a perf ring is half full, a request or a signal arrives: an idle
 * recorder wakes about once a second, not ten times. */
#define POLL_MAX_MS 1000
#define FLUSH_TIMEOUT_MS 3000
/* The ingest loop wakes at least every POLL_MAX_MS; a gap between two
 * drains longer than this is a stall, counted and logged. */
#define STALL_NS (3 * FR_NS_PER_S)
/* Ingest stalls remembered for attach replies. */
#define DAEMON_STALL_LOG 16
/* How long an attach waits for query memory before it is told to retry. */
#define QUERY_WAIT_NS (30 * FR_NS_PER_S)
/* A pipe or socket the client passed for the profile must take bytes at
 * least this often, and the whole profile within the total. */
#define OUTPUT_STALL_NS (15 * FR_NS_PER_S)
#define OUTPUT_TOTAL_NS (600 * FR_NS_PER_S)

struct daemon {
	const struct fr_daemon_options *opts;
	struct fr_ring *ring;
	struct fr_sources sources;
	struct fr_writer writer;
	struct fr_perf_handler handler; /* the ingest callbacks, for the sources' drains */
	struct fr_tracker *tracker;
	struct fr_applabels *applabels;		/* the ingest thread's, like the tracker */
	struct fr_symcache *symcache;		/* NULL: off (symbols.cache_size 0) */
	char *symcache_dir;			/* where queries look; NULL: off */
	struct fr_unwind_tables *unwind_tables; /* the CFI tables samples unwind with */
	struct fr_chunk_builder *builder;
	struct fr_ipc_server *server;
	int flush_efd;
	int sig_fd;

	/* The ingest thread's own (ingest.c): what it polls, whether it
	 * stops, the barrier to seal with after this wake-up's drain. */
	struct fr_poller poller;
	int stopping;
	uint64_t barrier;
	int64_t last_seal_mono;	  /* the last periodic seal (with open waits), not a full chunk's */
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
	/* What status shows of the ingest thread's progress (atomics): Unix
	 * ns of the last drain and seal, CLOCK_MONOTONIC ns of the last
	 * drain, stalls seen and flush barriers that timed out. */
	int64_t last_drain_real, last_seal_real, last_drain_mono;
	uint64_t stalls, flush_timeouts;
	int64_t longest_stall_ns; /* the longest gap between drains counted a stall */
	/* The ingest and writer threads' nice values once raised (or not:
	 * then the process's), whether the ingest thread runs at SCHED_FIFO
	 * and the times its watchdog took it off, for status (atomics). */
	int32_t ingest_nice, writer_nice, ingest_realtime;
	uint64_t realtime_drops;
	/* The ingest thread's watchdog (recorder/ingest/ingest.c): its CPU time at
	 * the start of the current second, when that second started, when
	 * it may run at SCHED_FIFO again (0: now), whether it may at all. */
	int64_t rt_cpu0, rt_window0, rt_resume_at;
	int rt_allowed;
	/* The last ingest stalls, Unix ns of the drain before and after each
	 * (recorder/requests/requests_attach.c; the ingest thread notes them, attach
	 * replies name the one within their window). */
	pthread_mutex_t stall_lock;
	struct daemon_stall {
		int64_t t0, t1;
	} stall_log[DAEMON_STALL_LOG];
	uint32_t stall_next;
	int64_t start_real, start_mono;
	uint32_t ncpus;

	/* Settings a reload may change (atomics). */
	uint32_t max_rate_hz;
	uint32_t user_max_rate_hz;
	int64_t admin_gid; /* -1: no admin group */
	/* What queries and timelines together may hold: under the ceiling
	 * limits.memory, at most limits.query_memory when set. */
	struct fr_budget query_budget;
	/* What uid-limited queries together may hold: a quarter of it. */
	struct fr_budget users_budget;
	int64_t reloaded_ns; /* Unix ns of the last successful reload, 0 if none */
	uint64_t reloads_rejected;
	/* `flightrec reload` (recorder/requests/requests_ctl.c): reloads begun and
	 * ended by the ingest thread and the last one's outcome, under
	 * reload_lock; reload_cond wakes the requests waiting for one. */
	pthread_mutex_t reload_lock;
	pthread_cond_t reload_cond;
	uint64_t reload_begun, reload_ended;
	int reload_ret;
	char reload_why[1024];
	/* The configuration in force (ingest thread only): opts->config until
	 * a reload replaces it with `owned_config`. */
	const struct fr_config *config;
	struct fr_config *owned_config;
	/* Guards the swap of `config` on reload, for the trigger thread's
	 * dumps, which read the session they dump. */
	pthread_mutex_t config_lock;
	struct fr_triggers *triggers;
	char *dumps_default_dir; /* next to the ring */
	/* attach --since-last's named cursors, RING.cursors; NULL: none
	 * (out of memory at start). */
	struct fr_cursors *cursors;
	/* The ClickHouse exporter (recorder/export/export_ch.c); NULL: none. */
	struct fr_exporter *exporter;
	/* What `sessions` requests answer: a JSON array rebuilt from the
	 * configuration in force at start and on each reload. */
	pthread_mutex_t sessions_lock;
	char *sessions_json;

	/* Counters read by status requests (atomics), all events together. */
	uint64_t samples, lost, chunks_sealed;
	uint32_t nprocs, nthreads;
	/* Processes whose application labels are read, and those the
	 * recorder stopped reading (their memory lied or stalled). */
	uint32_t labelled_procs, unreadable_procs;
	/* Open-wait records stored at the last seal (ingest thread): while
	 * threads are blocked, a chunk is sealed every second even when
	 * nothing ran, so the ring keeps saying who is stuck. */
	uint32_t open_waits;
	/* Losses counted into the chunk being built since the last seal
	 * (ingest thread): such a chunk is sealed at the next second even
	 * without a sample, so a crash does not take the count with it. */
	int losses_pending;

	/* The memory ceiling (recorder/ingest/memory.c). */
	struct daemon_memory {
		uint64_t limit;	      /* limits.memory (atomic) */
		int query_set;	      /* limits.query_memory is set (atomic) */
		uint64_t timelines;   /* bytes timelines have reserved now (atomic) */
		uint32_t active;      /* queries and timelines running (atomic) */
		int64_t trimmed_mono; /* the last malloc_trim (atomic) */
		/* The ingest thread's: the unwind tables' clock every 10 s of
		 * the last minute, and when the last was taken. */
		uint64_t marks[6];
		uint64_t nmarks;
		int64_t tables_mono;
		/* The housekeeping thread. */
		pthread_t thread;
		pthread_mutex_t lock;
		pthread_cond_t cond;
		bool started, stop;
	} mem;
};

/* What a profile that could not be flushed says, in a comment and to its
 * asker. */
#define FLUSH_NOTE                                                                 \
	"incomplete: the recorder did not store its last samples within 3 s (see " \
	"flightrec status: ingest); the profile may end early"

/* recorder/ingest/ingest.c */
/* Sets the record callbacks the sources' drains deliver to. */
void daemon_ingest_init(struct daemon *d);
/* Runs the ingest thread until SIGINT or SIGTERM (the open chunk sealed
 * and queued). Returns 0, or -ENOMEM when it cannot poll. */
int daemon_ingest_loop(struct daemon *d);
/* Asks the ingest thread to seal and waits until the writer stored it.
 * Returns 0, or -ETIMEDOUT. */
int daemon_flush_barrier(struct daemon *d);

/* recorder/requests/requests_attach.c */
/* Notes an ingest stall from Unix ns t0 (the drain before) to t1. */
void daemon_stall_note(struct daemon *d, int64_t t0, int64_t t1);
/* Fills what an attach reply says of its profile's span, the ring's, a
 * stall within the window and the targets that matched nothing. */
struct fr_ipc_attach_reply;
void daemon_attach_explain(struct daemon *d, const struct fr_profile_request *preq,
			   const struct fr_profile_result *res, struct fr_ipc_attach_reply *r);

/* recorder/requests/status.c */
/* Publishes the sessions of `cfg` for `sessions` requests. */
void daemon_publish_sessions(struct daemon *d, const struct fr_config *cfg);
/* The replies to status and sessions, built for `viewer`. NULL when out
 * of memory. */
cJSON *daemon_handle_status(struct daemon *d, const struct fr_ipc_peer *viewer);
cJSON *daemon_handle_sessions(struct daemon *d, const struct fr_ipc_peer *viewer);

/* recorder/requests/requests_ctl.c */
/* Sets up and releases what reload requests share. */
int daemon_ctl_init(struct daemon *d);
void daemon_ctl_fini(struct daemon *d);
/* The ingest thread brackets each reload: begin returns its number, end
 * publishes its outcome (0 or -errno, and why) to waiting requests. */
uint64_t daemon_reload_begin(struct daemon *d);
void daemon_reload_end(struct daemon *d, uint64_t seq, int ret, const char *why);
/* flightrec reload, flightrec dump --session and flightrec trigger (one
 * owner for who may fire a session and what the reply says). */
cJSON *daemon_handle_reload(struct daemon *d, const struct fr_ipc_peer *peer);
cJSON *daemon_handle_dump(struct daemon *d, const cJSON *req, const struct fr_ipc_peer *peer);
cJSON *daemon_handle_trigger(struct daemon *d, const cJSON *req, const struct fr_ipc_peer *peer);

/* recorder/ingest/memory.c */
/* Sets up the query budgets under limits.memory of `cfg` and the symbol
 * images' share. Returns 0 or -errno. */
int daemon_memory_init(struct daemon *d, const struct fr_config *cfg);
/* Starts and stops the thread that gives idle memory back. */
void daemon_memory_start(struct daemon *d);
void daemon_memory_stop(struct daemon *d);
void daemon_memory_fini(struct daemon *d);
/* The unwind tables' budget: limits.unwind_table_memory, else their
 * share of limits.memory. */
uint64_t daemon_memory_tables_share(const struct fr_config *cfg);
/* A reload's limits (ingest thread). */
void daemon_memory_reload(struct daemon *d, const struct fr_config *cfg);
/* Tells the query budget what the caches hold now. */
void daemon_memory_refresh(struct daemon *d);
/* A query or timeline starts, and ends: the end gives freed memory back
 * to the system (at once when nothing else runs, else at most once a
 * second). */
void daemon_memory_begin(struct daemon *d);
void daemon_memory_end(struct daemon *d);
/* Once per drain (ingest thread): every 10 s, drops the unwind tables
 * no frame used in the last minute. */
void daemon_memory_drained(struct daemon *d, int64_t now);
/* The "memory" object of a status reply. Returns 0 out of memory. */
int daemon_memory_status(struct daemon *d, cJSON *r);

/* recorder/requests/querymem.c */
/* Reserves `want` bytes of the query memory (cut to what there is room
 * for), waiting up to QUERY_WAIT_NS; `has_uid`: for a user who is not
 * privileged, within the users' quarter. Returns the bytes reserved (give
 * them back with daemon_memory_release(), which also trims) or -EBUSY. */
int64_t daemon_memory_reserve(struct daemon *d, int has_uid, uint64_t want);
void daemon_memory_release(struct daemon *d, int has_uid, int64_t reserved);
/* Adds exactly `more` bytes to a reservation when there is room now,
 * without waiting. Returns 0 or -EBUSY. */
int daemon_memory_grow(struct daemon *d, int has_uid, uint64_t more);
/* Reserves what the query `preq` may take from the query memory, waiting
 * up to QUERY_WAIT_NS, and caps its decoded-chunk cache to the share it
 * got. Returns the bytes reserved (give them back with
 * daemon_query_release()) or -EBUSY. */
int64_t daemon_query_reserve(struct daemon *d, struct fr_profile_request *preq);
void daemon_query_release(struct daemon *d, int has_uid, int64_t reserved);
/* The error reply of `cmd` when the query memory stays taken. */
cJSON *daemon_query_busy(struct daemon *d, const char *cmd);

/* recorder/requests/requests.c */
/* The symbol paths of a query (fr_profile_request.symbol_cache,
 * debug_dirs), copied from the configuration in force. */
struct daemon_symbol_paths {
	uint32_t n;
	char *dirs[FR_CONFIG_MAX_DEBUG_DIRS];
};
/* Points `preq` at the daemon's symbol cache and at the debug directories
 * of the configuration in force, copied into `sp` (release with
 * daemon_symbol_paths_fini() after the query). Returns 0 or -ENOMEM. */
int daemon_symbol_paths(struct daemon *d, struct fr_profile_request *preq,
			struct daemon_symbol_paths *sp);
/* Whether `uid` is among the "users" of session `session` (who may dump
 * it without being privileged). */
int daemon_may_dump(struct daemon *d, const char *session, uid_t uid);
void daemon_symbol_paths_fini(struct daemon_symbol_paths *sp);
/* Whether `peer` may see and do everything: root, the daemon's own user
 * and members of the admin group. */
int daemon_peer_privileged(struct daemon *d, const struct fr_ipc_peer *peer);
int daemon_dump(void *arg, const struct fr_trigger_fire *fire, char *out, size_t outlen);
cJSON *daemon_handle_request(void *arg, const char *cmd, const cJSON *req, int fd,
			     struct fr_ipc_peer *peer);

#endif
