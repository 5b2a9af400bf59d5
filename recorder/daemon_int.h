/* The daemon as the aggregate of its wings' contexts, and what the files
 * at the top (recorder/daemon.c: start-up and shutdown; recorder/reload.c;
 * recorder/memory.c) and the requests (recorder/requests/) share. The
 * ingest thread, the writer, the exporter and the peer rights have
 * contexts of their own (recorder/ingest/ingest.h, writer.h,
 * recorder/export/export_ch.h, recorder/requests/peer.h) and do not see
 * this file. Private to the recorder.
 */
#ifndef FR_RECORDER_DAEMON_INT_H
#define FR_RECORDER_DAEMON_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "core/util/budget.h"
#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/util/time.h"
#include "ipc/dispatch.h"
#include "ipc/server.h"
#include "recorder/options.h"

struct fr_cursors;
struct fr_peers;

#include "recorder/export/export_ch.h"
#include "recorder/ingest/ingest.h"
#include "recorder/sampling/allocs.h"
#include "recorder/sampling/perf.h"
#include "recorder/sampling/poller.h"
#include "recorder/sampling/sources.h"
#include "recorder/tracking/applabels.h"
#include "recorder/tracking/tracker.h"
#include "recorder/tracking/unwind_tables.h"
#include "recorder/triggers/triggers.h"
#include "recorder/ingest/writer.h"

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
	struct fr_tracker *tracker;
	struct fr_allocs *allocs;		/* allocation rings, the ingest thread's */
	struct fr_applabels *applabels;		/* the ingest thread's, like the tracker */
	struct fr_symcache *symcache;		/* NULL: off (symbols.cache_size 0) */
	char *symcache_dir;			/* where queries look; NULL: off */
	struct fr_unwind_tables *unwind_tables; /* the CFI tables samples unwind with */
	struct fr_ipc_server *server;
	struct fr_ipc_dispatch dispatch; /* what the server answers with */

	/* The ingest thread's context (recorder/ingest/ingest.h). */
	struct fr_ingest ingest;
	/* The writer thread's nice value once raised (or not: then the
	 * process's), for status (atomic). */
	int32_t writer_nice;
	int64_t start_real, start_mono;
	uint32_t ncpus;

	/* Settings a reload may change (atomics). */
	uint32_t max_rate_hz;
	uint32_t user_max_rate_hz;
	/* Who may do what (recorder/requests/peer.h). */
	struct fr_peers *peers;
	/* What queries and timelines together may hold: under the ceiling
	 * limits.memory, at most limits.query_memory when set. */
	struct fr_budget query_budget;
	/* What uid-limited queries together may hold: a quarter of it. */
	struct fr_budget users_budget;
	int64_t reloaded_ns; /* Unix ns of the last successful reload, 0 if none */
	uint64_t reloads_rejected;
	/* `flightrec reload` (recorder/requests/requests_ctl.c): reloads begun and
	 * ended (recorder/reload.c) and the last one's outcome, under
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
	/* The ClickHouse exporter's context (recorder/export/export_ch.h). */
	struct fr_export export;
	/* What `sessions` requests answer: the sessions rebuilt from the
	 * configuration in force at start and on each reload. */
	pthread_mutex_t sessions_lock;
	struct fr_ipc_session *sessions;
	uint32_t nsessions;

	/* The memory ceiling (recorder/memory.c). */
	struct daemon_memory {
		uint64_t limit;	      /* limits.memory (atomic) */
		int query_set;	      /* limits.query_memory is set (atomic) */
		uint64_t timelines;   /* bytes timelines have reserved now (atomic) */
		uint32_t active;      /* queries and timelines running (atomic) */
		int64_t trimmed_mono; /* the last malloc_trim (atomic) */
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

/* recorder/reload.c */
/* Reloads the configuration file and puts in force what can change while
 * recording, or rejects it whole (logged); the outcome is posted for the
 * requests waiting on it (daemon_reload_end()). Ingest thread. */
void daemon_reload(struct daemon *d);

/* recorder/requests/requests_attach.c */
/* What the recorder records now, for messages: "cpu at 99 Hz, offcpu at
 * every context switch" ("nothing" when no source records). */
void daemon_recording(struct daemon *d, char *buf, size_t len);
/* Fills what an attach reply says of its profile's span, the ring's, a
 * stall within the window and the targets that matched nothing. */
struct fr_ipc_attach_reply;
void daemon_attach_explain(struct daemon *d, const struct fr_profile_request *preq,
			   const struct fr_profile_result *res, struct fr_ipc_attach_reply *r);

/* recorder/requests/status.c */
/* Publishes the sessions of `cfg` for `sessions` requests. */
void daemon_publish_sessions(struct daemon *d, const struct fr_config *cfg);
/* The replies to status and sessions (ipc/dispatch.h handlers; `arg` is
 * the daemon), built for the call's peer. */
int daemon_handle_status(void *arg, struct fr_ipc_call *call, struct fr_ipc_status_reply *r);
int daemon_handle_sessions(void *arg, struct fr_ipc_call *call, struct fr_ipc_sessions_reply *r);

/* recorder/requests/requests_ctl.c */
/* Sets up and releases what reload requests share. */
int daemon_ctl_init(struct daemon *d);
void daemon_ctl_fini(struct daemon *d);
/* Where reload requests wait: daemon_reload() brackets each reload, begin
 * returns its number, end posts its outcome (0 or -errno, and why). */
uint64_t daemon_reload_begin(struct daemon *d);
void daemon_reload_end(struct daemon *d, uint64_t seq, int ret, const char *why);
/* flightrec reload, flightrec dump --session and flightrec trigger (one
 * owner for who may fire a session and what the reply says). */
/* (ipc/dispatch.h handlers; `arg` is the daemon.) */
int daemon_handle_reload(void *arg, struct fr_ipc_call *call, struct fr_ipc_reload_reply *r);
int daemon_handle_dump(void *arg, struct fr_ipc_call *call, const struct fr_ipc_dump_req *q,
		       struct fr_ipc_dump_reply *r);
int daemon_handle_trigger(void *arg, struct fr_ipc_call *call, const struct fr_ipc_trigger_req *q,
			  struct fr_ipc_dump_reply *r);

/* recorder/memory.c */
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
/* The "memory" part of a status reply. */
void daemon_memory_status(struct daemon *d, struct fr_ipc_status_memory *out);

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
/* Refuses `call` (`cmd`) when the query memory stays taken; returns
 * -EBUSY. */
int daemon_query_busy(struct daemon *d, struct fr_ipc_call *call, const char *cmd);

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
void daemon_symbol_paths_fini(struct daemon_symbol_paths *sp);

/* recorder/requests/requests.c */
int daemon_dump(void *arg, const struct fr_trigger_fire *fire, char *out, size_t outlen);
/* The requests the daemon answers (ipc/dispatch.h; `arg`: the daemon). */
extern const struct fr_ipc_handlers daemon_handlers;

#endif
