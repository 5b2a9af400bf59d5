/* What the parts of flightrecd share: recorder/daemon.c (start and stop,
 * the writer thread, ingest, consumers and rate composition) and
 * recorder/requests.c (what a client asks over the socket, and the dumps
 * the trigger engine asks for). Private to them.
 */
#ifndef FR_RECORDER_DAEMON_INT_H
#define FR_RECORDER_DAEMON_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "core/budget.h"
#include "core/chunk.h"
#include "core/profile.h"
#include "core/ring.h"
#include "ipc/server.h"
#include "recorder/daemon.h"
#include "recorder/perf.h"
#include "recorder/tracker.h"
#include "recorder/triggers.h"
#include "recorder/writer.h"

#define SEAL_INTERVAL_NS 1000000000LL
/* The ingest thread sleeps until the next seal is due (at most this long),
 * or until a perf ring is half full, a request or a signal arrives: an idle
 * recorder wakes about once a second, not ten times. */
#define POLL_MAX_MS 1000
#define FLUSH_TIMEOUT_MS 3000
/* The ingest loop wakes at least every POLL_MAX_MS; a gap between two
 * drains longer than this is a stall, counted and logged. */
#define STALL_NS 3000000000LL
#define RECONCILE_TIMEOUT_MS 3000
/* Distinct events recorded at once (each is one perf event per CPU). */
#define MAX_SOURCES 16
/* How long an attach waits for query memory before it is told to retry. */
#define QUERY_WAIT_NS (30LL * 1000000000LL)
/* A pipe or socket the client passed for the profile must take bytes at
 * least this often, and the whole profile within the total. */
#define OUTPUT_STALL_NS (15LL * 1000000000LL)
#define OUTPUT_TOTAL_NS (600LL * 1000000000LL)

/* One event being recorded: a perf source on every CPU, at the highest
 * rate any consumer asks for. The ingest thread opens, retunes and closes
 * sources and is the only one to touch `perf`; the table is changed under
 * src_lock so request threads can read it. */
struct source {
	uint32_t event;
	struct fr_perf *perf; /* NULL: could not be opened, see error */
	uint32_t hz;          /* the rate in force (0 for offcpu) */
	char error[256];      /* why it is not recording; "" when it is */
	int64_t since_ns;     /* Unix ns it started recording at this rate */
	/* Counters (atomics). */
	uint64_t samples, lost, throttled, truncated;
};

/* Someone who wants events at rates: a configured session, or a client
 * that holds a rate for as long as its connection lives (attach --follow).
 * The list is under consumers_lock; every change bumps consumers_gen and
 * pokes the ingest thread, which reconciles the sources with it. */
struct consumer {
	struct consumer *next;
	struct daemon *d;
	char name[96];
	int session; /* from the configuration: replaced on reload */
	uid_t uid;   /* a following client's; (uid_t)-1 for others */
	/* A user who is not privileged: follows events without a rate
	 * (offcpu) only while others record them; never keeps one open. */
	bool follows_only;
	uint32_t nevents;
	uint32_t events[FR_PROFILE_MAX_EVENTS];
	uint32_t hz[FR_PROFILE_MAX_EVENTS];
	int64_t since_ns;
};

struct daemon {
	const struct fr_daemon_options *opts;
	struct fr_ring *ring;
	struct fr_perf *sideband; /* MMAP2, COMM, FORK, EXIT for every profile */
	pthread_mutex_t src_lock;
	struct source sources[MAX_SOURCES];
	unsigned nsources;
	/* The source being drained (ingest thread): every record a drain
	 * delivers is its, so the sample path counts without a lookup. NULL
	 * while the side band drains. */
	struct source *draining;
	struct fr_perf_handler handler;
	struct fr_tracker *tracker;
	struct fr_chunk_builder *builder;
	struct fr_ipc_server *server;
	int flush_efd;
	int sig_fd;
	int reconcile_efd;

	pthread_mutex_t consumers_lock;
	pthread_cond_t consumers_cond; /* reconciled_gen advanced */
	struct consumer *consumers;
	uint64_t consumers_gen, reconciled_gen;

	struct fr_writer writer;

	int64_t last_seal_mono;
	/* What status shows of the ingest thread's progress (atomics): Unix
	 * ns of the last drain and seal, CLOCK_MONOTONIC ns of the last
	 * drain, stalls seen and flush barriers that timed out. */
	int64_t last_drain_real, last_seal_real, last_drain_mono;
	uint64_t stalls, flush_timeouts;
	int64_t clock_offset;
	int64_t start_real, start_mono;
	uint32_t ncpus;

	/* Settings a reload may change (atomics). */
	uint32_t max_rate_hz;
	uint32_t user_max_rate_hz;
	int64_t admin_gid;   /* -1: no admin group */
	/* What attach queries together may hold (limits.query_memory). */
	struct fr_budget query_budget;
	/* What uid-limited queries together may hold: a quarter of it. */
	struct fr_budget users_budget;
	int64_t reloaded_ns; /* Unix ns of the last successful reload, 0 if none */
	uint64_t reloads_rejected;
	/* The configuration in force (ingest thread only): opts->config until
	 * a reload replaces it with `owned_config`. */
	const struct fr_config *config;
	struct fr_config *owned_config;
	/* Guards the swap of `config` on reload, for the trigger thread's
	 * dumps, which read the session they dump. */
	pthread_mutex_t config_lock;
	struct fr_triggers *triggers;
	char *dumps_default_dir; /* next to the ring */
	/* What `sessions` requests answer: a JSON array rebuilt from the
	 * configuration in force at start and on each reload. */
	pthread_mutex_t sessions_lock;
	char *sessions_json;

	/* Counters read by status requests (atomics), all events together. */
	uint64_t samples, lost, chunks_sealed;
	uint32_t nprocs, nthreads;
};

/* What a profile that could not be flushed says, in a comment and to its
 * asker. */
#define FLUSH_NOTE                                                                          \
	"incomplete: the recorder did not store its last samples within 3 s (see "          \
	"flightrec status: ingest); the profile may end early"

/* recorder/daemon.c */
int daemon_flush_barrier(struct daemon *d);
struct source *daemon_find_source(struct daemon *d, uint32_t event);
int daemon_wait_reconciled(struct daemon *d, uint64_t gen);
uint64_t daemon_consumer_add(struct daemon *d, struct consumer *c);
void daemon_consumer_remove(struct daemon *d, struct consumer *c);
void daemon_consumer_release(void *hold);
int daemon_add_recording(struct daemon *d, cJSON *r);
cJSON *daemon_handle_sessions(struct daemon *d);

/* recorder/requests.c */
int daemon_dump(void *arg, const struct fr_trigger_fire *fire, char *out,
		       size_t outlen);
cJSON *daemon_handle_request(void *arg, const char *cmd, const cJSON *req, int fd,
			     struct fr_ipc_peer *peer);

#endif
