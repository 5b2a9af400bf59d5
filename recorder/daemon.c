/* flightrecd main loop, writer thread and request handlers.
 *
 * Invariants:
 * - Only the ingest thread touches the perf rings, the tracker and the
 *   chunk builder. Only the writer thread appends to the ring.
 * - Sealed chunks travel from ingest to writer through a FIFO; flush
 *   barriers travel through the same FIFO, so when the writer reaches a
 *   barrier every chunk sealed before it is in the ring.
 * - Request handlers read the ring (thread-safe queries) and never wait
 *   on the ingest thread except for a bounded flush barrier.
 */
#include "recorder/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/budget.h"
#include "core/chunk.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/profile.h"
#include "core/ring.h"
#include "core/uring.h"
#include "fr_version.h"
#include "ipc/client.h"
#include "ipc/proto.h"
#include "ipc/server.h"
#include "recorder/dumps.h"
#include "recorder/perf.h"
#include "recorder/tracker.h"
#include "recorder/triggers.h"

#define SEAL_INTERVAL_NS 1000000000LL
/* The ingest thread sleeps until the next seal is due (at most this long),
 * or until a perf ring is half full, a request or a signal arrives: an idle
 * recorder wakes about once a second, not ten times. */
#define POLL_MAX_MS 1000
#define QUEUE_MAX_BYTES (64u << 20)
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

struct queue_item {
	struct queue_item *next;
	void *chunk; /* NULL for a pure barrier */
	size_t len;
	uint64_t barrier; /* non-zero: barrier generation completed after this item */
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

	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue changed or barrier completed */
	struct queue_item *head, *tail;
	size_t queued_bytes;
	int writer_stop;
	uint64_t barrier_req;
	uint64_t barrier_done;

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
	int64_t max_age_ns;
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
	uint64_t samples, lost, chunks_sealed, chunks_dropped, write_errors;
	uint32_t nprocs, nthreads;
};

/* ---- writer thread ---------------------------------------------------- */

/* Queues a sealed chunk (or NULL) for the writer, followed by barrier
 * generation `barrier` when non-zero. Takes ownership of `chunk`. */
static void enqueue(struct daemon *d, void *chunk, size_t len, uint64_t barrier)
{
	struct queue_item *it = calloc(1, sizeof(*it));
	void *dropped = NULL;

	if (!it) {
		/* A lost barrier only makes its attach wait out its timeout. */
		free(chunk);
		__atomic_add_fetch(&d->chunks_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (chunk && d->queued_bytes + len > QUEUE_MAX_BYTES) {
		/* The disk is not keeping up: keep the daemon's memory bounded. */
		dropped = chunk;
		chunk = NULL;
	}
	if (chunk || barrier) {
		it->chunk = chunk;
		it->len = len;
		it->barrier = barrier;
		if (chunk)
			d->queued_bytes += len;
		if (d->tail)
			d->tail->next = it;
		else
			d->head = it;
		d->tail = it;
		it = NULL;
		pthread_cond_broadcast(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
	free(it);
	if (dropped) {
		__atomic_add_fetch(&d->chunks_dropped, 1, __ATOMIC_RELAXED);
		fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
				   "ring writes are falling behind; dropping a chunk");
		free(dropped);
	}
}

/* ring.max_age: forget and erase what is older. Writer thread only. */
static void expire(struct daemon *d)
{
	int64_t max_age = __atomic_load_n(&d->max_age_ns, __ATOMIC_RELAXED);
	int ret;

	if (max_age <= 0)
		return;
	ret = fr_ring_expire(d->ring, fr_now_real_ns() - max_age);

	if (ret < 0)
		fr_log_ratelimited(FR_LOG_ERR, 10000000000LL, "cannot erase expired data in %s: %s",
				   fr_ring_path(d->ring), strerror(-ret));
}

static void *writer_main(void *arg)
{
	struct daemon *d = arg;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct queue_item *it;

		while (!d->head && !d->writer_stop)
			pthread_cond_wait(&d->cond, &d->lock);
		if (!d->head)
			break;
		it = d->head;
		d->head = it->next;
		if (!d->head)
			d->tail = NULL;
		if (it->chunk)
			d->queued_bytes -= it->len;
		pthread_mutex_unlock(&d->lock);

		if (it->chunk) {
			int ret = fr_ring_append(d->ring, it->chunk, it->len);
			if (ret < 0) {
				__atomic_add_fetch(&d->write_errors, 1, __ATOMIC_RELAXED);
				fr_log_ratelimited(FR_LOG_ERR, 10000000000LL,
						   "cannot store a chunk in %s: %s",
						   fr_ring_path(d->ring), strerror(-ret));
			}
			free(it->chunk);
			expire(d);
		}

		pthread_mutex_lock(&d->lock);
		if (it->barrier > d->barrier_done) {
			d->barrier_done = it->barrier;
			pthread_cond_broadcast(&d->cond);
		}
		free(it);
	}
	pthread_mutex_unlock(&d->lock);
	fr_ring_sync(d->ring);
	return NULL;
}

/* Asks the ingest thread to seal and waits until the writer stored it.
 * Returns 0, or -ETIMEDOUT. */
static int flush_barrier(struct daemon *d)
{
	uint64_t one = 1, target;
	struct timespec deadline;
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	target = ++d->barrier_req;
	pthread_mutex_unlock(&d->lock);
	if (write(d->flush_efd, &one, sizeof(one)) < 0)
		return -errno;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += FLUSH_TIMEOUT_MS / 1000;
	pthread_mutex_lock(&d->lock);
	while (d->barrier_done < target && ret == 0)
		ret = pthread_cond_timedwait(&d->cond, &d->lock, &deadline);
	pthread_mutex_unlock(&d->lock);
	if (ret == ETIMEDOUT) {
		__atomic_add_fetch(&d->flush_timeouts, 1, __ATOMIC_RELAXED);
		return -ETIMEDOUT;
	}
	return 0;
}

/* What a profile that could not be flushed says, in a comment and to its
 * asker. */
#define FLUSH_NOTE                                                                          \
	"incomplete: the recorder did not store its last samples within 3 s (see "          \
	"flightrec status: ingest); the profile may end early"

/* ---- ingest ------------------------------------------------------------ */

static void seal(struct daemon *d, uint64_t barrier)
{
	void *chunk = NULL;
	size_t len = 0;
	int ret;

	ret = fr_chunk_builder_seal(d->builder, fr_tracker_ops(d->tracker), d->clock_offset,
				    &chunk, &len);
	if (ret < 0 && ret != -ENODATA)
		fr_log_ratelimited(FR_LOG_ERR, 10000000000LL, "cannot seal a chunk: %s",
				   strerror(-ret));
	if (ret == 0)
		__atomic_add_fetch(&d->chunks_sealed, 1, __ATOMIC_RELAXED);
	d->last_seal_mono = fr_now_mono_ns();
	__atomic_store_n(&d->last_seal_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_tracker_sealed(d->tracker);
	__atomic_store_n(&d->nprocs, fr_tracker_nprocs(d->tracker), __ATOMIC_RELAXED);
	__atomic_store_n(&d->nthreads, fr_tracker_nthreads(d->tracker), __ATOMIC_RELAXED);
	if (ret == 0 || barrier)
		enqueue(d, ret == 0 ? chunk : NULL, len, barrier);
}

/* The source of `event`, or NULL. Ingest thread (or under src_lock). */
static struct source *find_source(struct daemon *d, uint32_t event)
{
	for (unsigned i = 0; i < d->nsources; i++)
		if (d->sources[i].event == event)
			return &d->sources[i];
	return NULL;
}

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct daemon *d = arg;
	struct source *src = d->draining;
	int ret = fr_chunk_builder_add(d->builder, s);

	if (ret == -ENOSPC) {
		seal(d, 0);
		ret = fr_chunk_builder_add(d->builder, s);
	}
	if (ret == 0) {
		__atomic_add_fetch(&d->samples, 1, __ATOMIC_RELAXED);
		if (src)
			__atomic_add_fetch(&src->samples, 1, __ATOMIC_RELAXED);
	}
	if (s->nr_frames == FR_MAX_FRAMES) {
		fr_chunk_builder_count(d->builder, s->event, 0, 0, 1);
		if (src)
			__atomic_add_fetch(&src->truncated, 1, __ATOMIC_RELAXED);
	}
}

static void on_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec)
{
	fr_tracker_comm(((struct daemon *)arg)->tracker, pid, tid, comm, exec);
}

static void on_mmap(void *arg, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		    uint32_t prot, const char *path, const uint8_t *build_id, uint8_t build_id_len)
{
	fr_tracker_mmap(((struct daemon *)arg)->tracker, pid, start, len, pgoff, prot, path,
			build_id, build_id_len);
}

static void on_fork(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		    int64_t time_ns)
{
	fr_tracker_fork(((struct daemon *)arg)->tracker, pid, ppid, tid, ptid, time_ns);
}

static void on_exit_rec(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns)
{
	fr_tracker_exit(((struct daemon *)arg)->tracker, pid, tid, time_ns);
}

static void on_lost(void *arg, uint32_t event, uint64_t lost)
{
	struct daemon *d = arg;
	struct source *src = d->draining;

	if (!src) {
		/* The side band's records, not samples: some processes may go
		 * unnamed or unsymbolized, no sample is missing. */
		fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
				   "the side band lost %" PRIu64 " records (process names and "
				   "mappings); its rings are too small for this machine's churn",
				   lost);
		return;
	}
	fr_chunk_builder_count(d->builder, event, lost, 0, 0);
	__atomic_add_fetch(&d->lost, lost, __ATOMIC_RELAXED);
	__atomic_add_fetch(&src->lost, lost, __ATOMIC_RELAXED);
}

static void on_throttle(void *arg, uint32_t event)
{
	struct daemon *d = arg;
	struct source *src = d->draining;

	fr_chunk_builder_count(d->builder, event, 0, 1, 0);
	if (src)
		__atomic_add_fetch(&src->throttled, 1, __ATOMIC_RELAXED);
}

/* Drains the side band first (so samples find their process), then every
 * source. Ingest thread. */
static void drain_all(struct daemon *d)
{
	int64_t now = fr_now_mono_ns(), last = d->last_drain_mono;

	/* Nothing the ingest thread does should take this long; if it did,
	 * samples may have been lost in full perf rings, and status says
	 * so. */
	if (last && now - last > STALL_NS) {
		__atomic_add_fetch(&d->stalls, 1, __ATOMIC_RELAXED);
		fr_log_warn("the ingest thread was held up for %lld ms",
			    (long long)((now - last) / 1000000));
	}
	__atomic_store_n(&d->last_drain_mono, now, __ATOMIC_RELAXED);
	__atomic_store_n(&d->last_drain_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	d->draining = NULL;
	fr_perf_drain(d->sideband, &d->handler, d->clock_offset);
	for (unsigned i = 0; i < d->nsources; i++) {
		d->draining = &d->sources[i];
		if (d->sources[i].perf)
			fr_perf_drain(d->sources[i].perf, &d->handler, d->clock_offset);
	}
	d->draining = NULL;
}

/* ---- consumers and rate composition ------------------------------------ */

/* Asks the ingest thread to bring the sources in line with the consumers.
 * Returns the generation to wait for. Takes consumers_lock. */
static uint64_t consumers_changed_locked(struct daemon *d)
{
	uint64_t one = 1, gen = ++d->consumers_gen;

	if (write(d->reconcile_efd, &one, sizeof(one)) < 0)
		fr_log_ratelimited(FR_LOG_WARN, 10000000000LL, "cannot wake the ingest thread: %s",
				   strerror(errno));
	return gen;
}

/* Waits until the sources reflect consumers generation `gen`. Returns 0 or
 * -ETIMEDOUT. */
static int wait_reconciled(struct daemon *d, uint64_t gen)
{
	struct timespec deadline;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += RECONCILE_TIMEOUT_MS / 1000;
	pthread_mutex_lock(&d->consumers_lock);
	while (d->reconciled_gen < gen && ret == 0)
		ret = pthread_cond_timedwait(&d->consumers_cond, &d->consumers_lock, &deadline);
	pthread_mutex_unlock(&d->consumers_lock);
	return ret == ETIMEDOUT ? -ETIMEDOUT : 0;
}

/* Adds `c` (owned by the list from now on) and returns the generation to
 * wait for. */
static uint64_t consumer_add(struct daemon *d, struct consumer *c)
{
	uint64_t gen;

	c->d = d;
	c->since_ns = fr_now_real_ns();
	pthread_mutex_lock(&d->consumers_lock);
	c->next = d->consumers;
	d->consumers = c;
	gen = consumers_changed_locked(d);
	pthread_mutex_unlock(&d->consumers_lock);
	return gen;
}

/* Unlinks and frees `c`; the sources follow without waiting. */
static void consumer_remove(struct daemon *d, struct consumer *c)
{
	pthread_mutex_lock(&d->consumers_lock);
	for (struct consumer **pp = &d->consumers; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	consumers_changed_locked(d);
	pthread_mutex_unlock(&d->consumers_lock);
	free(c);
}

/* A client's connection ended: its rates go with it. */
static void consumer_release(void *hold)
{
	struct consumer *c = hold;

	fr_log_info("%s left; rates follow the remaining consumers", c->name);
	consumer_remove(c->d, c);
}

/* The session consumers of `cfg` (replacing the previous ones). With
 * --hz, the command line sets the rate of cpu in every session. */
static void set_session_consumers(struct daemon *d, const struct fr_config *cfg)
{
	struct consumer *list = NULL;

	for (uint32_t i = 0; i < cfg->nsessions; i++) {
		const struct fr_config_session *sess = &cfg->sessions[i];
		struct consumer *c = calloc(1, sizeof(*c));

		if (!c) {
			fr_log_err("out of memory; session %s is not recorded", sess->name);
			continue;
		}
		c->d = d;
		c->session = 1;
		c->since_ns = fr_now_real_ns();
		snprintf(c->name, sizeof(c->name), "session %s", sess->name);
		c->uid = (uid_t)-1;
		for (uint32_t e = 0; e < sess->nevents && c->nevents < FR_PROFILE_MAX_EVENTS; e++) {
			c->events[c->nevents] = sess->events[e].event;
			c->hz[c->nevents] = sess->events[e].event == FR_EVENT_CPU && d->opts->hz_fixed
						    ? d->opts->hz
						    : sess->events[e].hz;
			c->nevents++;
		}
		c->next = list;
		list = c;
	}
	pthread_mutex_lock(&d->consumers_lock);
	for (struct consumer **pp = &d->consumers; *pp;) {
		struct consumer *c = *pp;
		if (c->session) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
	while (list) {
		struct consumer *c = list;
		list = c->next;
		c->next = d->consumers;
		d->consumers = c;
	}
	consumers_changed_locked(d);
	pthread_mutex_unlock(&d->consumers_lock);
}

/* What the consumers want: the events and, for each, the highest rate. */
struct wants {
	unsigned n;
	uint32_t event[MAX_SOURCES];
	uint32_t hz[MAX_SOURCES];
};

static void collect_wants(struct daemon *d, struct wants *w, uint64_t *gen)
{
	w->n = 0;
	pthread_mutex_lock(&d->consumers_lock);
	*gen = d->consumers_gen;
	for (const struct consumer *c = d->consumers; c; c = c->next) {
		for (uint32_t e = 0; e < c->nevents; e++) {
			unsigned i;

			if (c->follows_only && !fr_event_has_rate(c->events[e]))
				continue;
			for (i = 0; i < w->n && w->event[i] != c->events[e]; i++)
				;
			if (i == w->n) {
				if (w->n == MAX_SOURCES) {
					fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
							   "more than %d distinct events asked for; "
							   "%s is not recorded", MAX_SOURCES, c->name);
					continue;
				}
				w->event[w->n] = c->events[e];
				w->hz[w->n++] = 0;
			}
			if (c->hz[e] > w->hz[i])
				w->hz[i] = c->hz[e];
		}
	}
	pthread_mutex_unlock(&d->consumers_lock);
}

/* Opens, retunes and closes sources so that each event any consumer wants
 * runs at the highest rate any of them wants, and nothing else runs.
 * Ingest thread. Returns 1 when the set of descriptors changed. */
static int reconcile(struct daemon *d)
{
	struct wants w;
	uint64_t gen;
	int changed = 0, drained = 0;
	char name[FR_EVENT_NAME_MAX];

	collect_wants(d, &w, &gen);

	/* Sources nobody wants any more. */
	for (unsigned i = 0; i < d->nsources;) {
		struct source *src = &d->sources[i];
		unsigned k;

		for (k = 0; k < w.n && w.event[k] != src->event; k++)
			;
		if (k < w.n) {
			i++;
			continue;
		}
		if (src->perf) {
			if (!drained++)
				drain_all(d);
			fr_log_info("%s: no consumer asks for it any more; stopped",
				    fr_event_format(src->event, name, sizeof(name)));
		}
		pthread_mutex_lock(&d->src_lock);
		fr_perf_close(src->perf);
		memmove(src, src + 1, (d->nsources - i - 1) * sizeof(*src));
		d->nsources--;
		pthread_mutex_unlock(&d->src_lock);
		changed = 1;
	}

	for (unsigned k = 0; k < w.n; k++) {
		struct source *src = find_source(d, w.event[k]);
		uint32_t hz = fr_event_has_rate(w.event[k]) ? w.hz[k] : 0;

		fr_event_format(w.event[k], name, sizeof(name));
		if (!src) {
			pthread_mutex_lock(&d->src_lock);
			src = &d->sources[d->nsources++];
			memset(src, 0, sizeof(*src));
			src->event = w.event[k];
			pthread_mutex_unlock(&d->src_lock);
		}
		if (!src->perf) {
			struct fr_perf_config cfg = {.event = w.event[k], .hz = hz ? hz : 1};
			struct fr_perf *perf = NULL;
			char err[256];
			int ret = fr_perf_open(&perf, &cfg, err, sizeof(err));

			if (ret == 0)
				ret = fr_perf_enable(perf, 1);
			pthread_mutex_lock(&d->src_lock);
			if (ret < 0) {
				if (strcmp(src->error, err) != 0)
					fr_log_err("%s; recording the other events", err);
				snprintf(src->error, sizeof(src->error), "%s",
					 err[0] ? err : strerror(-ret));
				fr_perf_close(perf);
			} else {
				src->perf = perf;
				src->error[0] = '\0';
				src->hz = hz;
				src->since_ns = fr_now_real_ns();
				changed = 1;
				if (hz)
					fr_log_info("%s: recording at %u Hz", name, hz);
				else
					fr_log_info("%s: recording every context switch", name);
			}
			pthread_mutex_unlock(&d->src_lock);
		} else if (hz && hz != src->hz) {
			/* What the kernel holds was collected at the old rate:
			 * take it first, so every sample is weighted by it. */
			int ret;

			if (!drained++)
				drain_all(d);
			ret = fr_perf_set_hz(src->perf, hz);
			if (ret < 0) {
				fr_log_err("%s: cannot change the rate to %u Hz (%s); it stays %u Hz",
					   name, hz, strerror(-ret), src->hz);
			} else {
				fr_log_info("%s: rate %u Hz -> %u Hz", name, src->hz, hz);
				__atomic_store_n(&src->hz, hz, __ATOMIC_RELAXED);
				src->since_ns = fr_now_real_ns();
			}
		}
	}

	pthread_mutex_lock(&d->consumers_lock);
	if (gen > d->reconciled_gen)
		d->reconciled_gen = gen;
	pthread_cond_broadcast(&d->consumers_cond);
	pthread_mutex_unlock(&d->consumers_lock);
	return changed;
}

/* "all processes", or e.g. "pid 12,13; comm postgres; cgroup /a/b". */
static const char *describe_targets(const struct fr_config_session *sess, char *buf, size_t len)
{
	size_t used = 0;
	int k;

	buf[0] = '\0';
	for (uint32_t i = 0; i < sess->npids && used < len; i++) {
		k = snprintf(buf + used, len - used, "%s%u", i ? "," : "pid ", sess->pids[i]);
		used += k > 0 ? (size_t)k : 0;
	}
	for (uint32_t i = 0; i < sess->ncomms && used < len; i++) {
		k = snprintf(buf + used, len - used, "%s%s", i ? "," : used ? "; comm " : "comm ",
			     sess->comms[i]);
		used += k > 0 ? (size_t)k : 0;
	}
	if (sess->cgroup[0] && used < len) {
		k = snprintf(buf + used, len - used, "%scgroup %s", used ? "; " : "", sess->cgroup);
		used += k > 0 ? (size_t)k : 0;
	}
	if (sess->has_uid && used < len)
		snprintf(buf + used, len - used, "%suid %u", used ? "; " : "", sess->uid);
	return buf[0] ? buf : "all processes";
}

/* Publishes the sessions of `cfg` for `sessions` requests. */
static void publish_sessions(struct daemon *d, const struct fr_config *cfg)
{
	cJSON *arr = cJSON_CreateArray(), *triggers;
	char *text, targets[512];

	for (uint32_t i = 0; arr && i < cfg->nsessions; i++) {
		const struct fr_config_session *sess = &cfg->sessions[i];
		cJSON *o = cJSON_CreateObject(), *events;

		if (!o)
			break;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "name", sess->name);
		events = cJSON_AddArrayToObject(o, "events");
		for (uint32_t e = 0; events && e < sess->nevents; e++) {
			cJSON *ev = cJSON_CreateObject();
			char name[FR_EVENT_NAME_MAX];
			uint32_t hz = sess->events[e].hz;

			if (!ev)
				break;
			cJSON_AddStringToObject(ev, "event", fr_event_format(sess->events[e].event,
									     name, sizeof(name)));
			if (sess->events[e].event == FR_EVENT_CPU && d->opts->hz_fixed)
				hz = d->opts->hz;
			fr_ipc_add_int(ev, "hz", hz);
			cJSON_AddItemToArray(events, ev);
		}
		cJSON_AddStringToObject(o, "targets", describe_targets(sess, targets,
								       sizeof(targets)));
		triggers = cJSON_AddArrayToObject(o, "triggers");
		for (uint32_t t = 0; triggers && t < sess->ntriggers; t++) {
			const struct fr_config_trigger *tr = &sess->triggers[t];
			cJSON *to = cJSON_CreateObject();

			if (!to)
				break;
			cJSON_AddItemToArray(triggers, to);
			cJSON_AddStringToObject(to, "on", fr_config_trigger_kind(tr->kind));
			if (tr->kind == FR_TRIGGER_SIGNAL) {
				char sig[32];

				cJSON_AddStringToObject(to, "signal",
							fr_config_signal_name(tr->signal, sig,
									      sizeof(sig)));
			}
			if (tr->kind == FR_TRIGGER_CPU_ABOVE) {
				fr_ipc_add_int(to, "percent", tr->percent);
				fr_ipc_add_int(to, "for_ns", tr->for_ns);
			}
			fr_ipc_add_int(to, "window_ns", tr->window_ns);
			fr_ipc_add_int(to, "after_ns", tr->after_ns);
			fr_ipc_add_int(to, "cooldown_ns", tr->cooldown_ns);
		}
	}
	text = arr ? cJSON_PrintUnformatted(arr) : NULL;
	cJSON_Delete(arr);
	if (!text)
		return; /* out of memory: keep answering with the previous list */
	pthread_mutex_lock(&d->sessions_lock);
	free(d->sessions_json);
	d->sessions_json = text;
	pthread_mutex_unlock(&d->sessions_lock);
}

/* Adds "events" (what is recorded, at which rate, with its counters, or
 * why it is not) and "consumers" (who asks for what) to a reply. Returns 0
 * on allocation failure. */
static int add_recording(struct daemon *d, cJSON *r)
{
	cJSON *events = cJSON_AddArrayToObject(r, "events");
	cJSON *consumers = cJSON_AddArrayToObject(r, "consumers");
	char name[FR_EVENT_NAME_MAX];

	if (!events || !consumers)
		return 0;
	pthread_mutex_lock(&d->src_lock);
	for (unsigned i = 0; i < d->nsources; i++) {
		const struct source *src = &d->sources[i];
		cJSON *ev = cJSON_CreateObject();

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
		cJSON_AddStringToObject(ev, "event", fr_event_format(src->event, name, sizeof(name)));
		cJSON_AddStringToObject(ev, "unit", fr_event_unit(src->event));
		cJSON_AddStringToObject(ev, "state", src->perf ? "recording" : "failed");
		if (!src->perf)
			cJSON_AddStringToObject(ev, "error", src->error);
		fr_ipc_add_int(ev, "hz", src->perf ? __atomic_load_n(&src->hz, __ATOMIC_RELAXED) : 0);
		cJSON_AddBoolToObject(ev, "every_switch", !fr_event_has_rate(src->event));
		fr_ipc_add_int(ev, "since_ns", src->since_ns);
		cJSON_AddStringToObject(ev, "stacks", "kernel+user");
		fr_ipc_add_int(ev, "samples", (int64_t)__atomic_load_n(&src->samples, __ATOMIC_RELAXED));
		fr_ipc_add_int(ev, "lost", (int64_t)__atomic_load_n(&src->lost, __ATOMIC_RELAXED));
		fr_ipc_add_int(ev, "throttled",
			       (int64_t)__atomic_load_n(&src->throttled, __ATOMIC_RELAXED));
		fr_ipc_add_int(ev, "truncated_stacks",
			       (int64_t)__atomic_load_n(&src->truncated, __ATOMIC_RELAXED));
	}
	pthread_mutex_unlock(&d->src_lock);

	pthread_mutex_lock(&d->consumers_lock);
	for (const struct consumer *c = d->consumers; c; c = c->next) {
		cJSON *o = cJSON_CreateObject(), *evs;

		if (!o)
			break;
		cJSON_AddItemToArray(consumers, o);
		cJSON_AddStringToObject(o, "name", c->name);
		if (c->uid != (uid_t)-1)
			fr_ipc_add_int(o, "uid", c->uid);
		fr_ipc_add_int(o, "since_ns", c->since_ns);
		evs = cJSON_AddArrayToObject(o, "events");
		for (uint32_t e = 0; evs && e < c->nevents; e++) {
			cJSON *ev = cJSON_CreateObject();
			if (!ev)
				break;
			cJSON_AddItemToArray(evs, ev);
			cJSON_AddStringToObject(ev, "event",
						fr_event_format(c->events[e], name, sizeof(name)));
			fr_ipc_add_int(ev, "hz", c->hz[e]);
		}
	}
	pthread_mutex_unlock(&d->consumers_lock);
	return 1;
}

static cJSON *handle_sessions(struct daemon *d)
{
	cJSON *r = fr_ipc_ok(), *list = NULL;

	if (!r)
		return NULL;
	pthread_mutex_lock(&d->sessions_lock);
	if (d->sessions_json)
		list = cJSON_Parse(d->sessions_json);
	pthread_mutex_unlock(&d->sessions_lock);
	if (!list) {
		cJSON_Delete(r);
		return fr_ipc_error("sessions: out of memory");
	}
	{
		const cJSON *sess;
		uint32_t i = 0;

		/* The list is the configuration in force, in order: the
		 * engine's session i is the list's i. */
		cJSON_ArrayForEach(sess, list) {
			int64_t last = d->triggers ? fr_triggers_last_dump(d->triggers, i) : 0;
			uint64_t sup = d->triggers ? fr_triggers_suppressed(d->triggers, i) : 0;

			if (last)
				fr_ipc_add_int((cJSON *)sess, "last_dump_ns", last);
			else
				cJSON_AddNullToObject((cJSON *)sess, "last_dump_ns");
			fr_ipc_add_int((cJSON *)sess, "suppressed", (int64_t)sup);
			i++;
		}
	}
	cJSON_AddItemToObject(r, "sessions", list);
	cJSON_AddStringToObject(r, "config", d->opts->config_source);
	{
		struct source *cpu;
		uint32_t hz = 0;

		pthread_mutex_lock(&d->src_lock);
		cpu = find_source(d, FR_EVENT_CPU);
		if (cpu && cpu->perf)
			hz = cpu->hz;
		pthread_mutex_unlock(&d->src_lock);
		fr_ipc_add_int(r, "cpu_hz", hz);
	}
	if (!add_recording(d, r)) {
		cJSON_Delete(r);
		return NULL;
	}
	cJSON_AddBoolToObject(r, "hz_from_command_line", d->opts->hz_fixed);
	return r;
}

static int differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* "cpu at 99 Hz, offcpu at every context switch": the sources and their
 * rates, with those that failed ("cycles not recording") when `failed`.
 * Ingest thread. */
static void describe_sources(struct daemon *d, int failed, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < d->nsources && used < len; i++) {
		const struct source *src = &d->sources[i];
		char name[FR_EVENT_NAME_MAX];
		int k = 0;

		fr_event_format(src->event, name, sizeof(name));
		if (!src->perf && failed)
			k = snprintf(buf + used, len - used, "%s%s not recording", used ? ", " : "",
				     name);
		else if (src->perf && src->hz)
			k = snprintf(buf + used, len - used, "%s%s at %u Hz", used ? ", " : "", name,
				     src->hz);
		else if (src->perf)
			k = snprintf(buf + used, len - used, "%s%s at every context switch",
				     used ? ", " : "", name);
		used += k > 0 ? (size_t)k : 0;
	}
}

/* SIGHUP: reloads the configuration file and applies what can change
 * while recording. Ingest thread. */
static void reload(struct daemon *d)
{
	const struct fr_daemon_options *o = d->opts;
	const struct fr_config *old = d->config;
	struct fr_config *n;
	char err[1024], sync[32], age[32], rates[256];
	int ret;

	if (!o->config_path) {
		fr_log_info("SIGHUP: running the embedded default; there is no configuration "
			    "file to reload");
		return;
	}
	n = calloc(1, sizeof(*n));
	ret = n ? fr_config_load(n, o->config_path, err, sizeof(err)) : -ENOMEM;
	if (ret < 0) {
		fr_log_err("reload rejected; the running configuration stays: %s",
			   n ? err : "out of memory");
		__atomic_add_fetch(&d->reloads_rejected, 1, __ATOMIC_RELAXED);
		free(n);
		return;
	}
	if (differs(n->ring_path, old->ring_path) || n->ring_size != old->ring_size ||
	    n->segment_size != old->segment_size || differs(n->socket_path, old->socket_path) ||
	    n->max_clients != old->max_clients || n->has_socket_group != old->has_socket_group ||
	    n->socket_gid != old->socket_gid)
		fr_log_warn("reload: ring.path, ring.size, ring.segment, socket, socket.group and "
			    "limits.max_clients take effect at the next start");

	set_session_consumers(d, n);
	reconcile(d);
	fr_ring_set_sync_interval(d->ring, n->sync_ns);
	__atomic_store_n(&d->max_age_ns, n->max_age_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&d->max_rate_hz, n->max_rate_hz, __ATOMIC_RELAXED);
	__atomic_store_n(&d->user_max_rate_hz, n->user_max_rate_hz, __ATOMIC_RELAXED);
	__atomic_store_n(&d->admin_gid, n->has_admin_group ? (int64_t)n->admin_gid : -1,
			 __ATOMIC_RELAXED);
	fr_budget_set_limit(&d->query_budget, n->query_memory);
	fr_budget_set_limit(&d->users_budget, n->query_memory / 4);
	pthread_mutex_lock(&d->config_lock);
	if (d->owned_config) {
		fr_config_fini(d->owned_config);
		free(d->owned_config);
	}
	d->owned_config = n;
	d->config = n;
	pthread_mutex_unlock(&d->config_lock);
	if (d->triggers && fr_triggers_set(d->triggers, n) < 0)
		fr_log_err("reload: the new triggers could not be set; the old ones stay");
	publish_sessions(d, n);
	__atomic_store_n(&d->reloaded_ns, fr_now_real_ns(), __ATOMIC_RELAXED);
	describe_sources(d, 1, rates, sizeof(rates));
	fr_log_info("reloaded %s: %s%s, ring.sync %s, ring.max_age %s, limits.max_rate_hz %u",
		    o->config_path, rates[0] ? rates : "no events",
		    o->hz_fixed ? " (cpu rate from --hz)" : "",
		    n->sync_ns < 0 ? "off" : fr_format_duration(n->sync_ns, sync, sizeof(sync)),
		    n->max_age_ns > 0 ? fr_format_duration(n->max_age_ns, age, sizeof(age)) : "none",
		    n->max_rate_hz);
}

/* The descriptors the ingest thread polls: every CPU of the side band and
 * of each open source, then flush, signal and reconcile. Returns the
 * number, or -ENOMEM. */
static int build_pollfds(struct daemon *d, struct pollfd **pfds)
{
	unsigned n = fr_perf_nfds(d->sideband) + 3, k = 0;
	struct pollfd *p;

	for (unsigned i = 0; i < d->nsources; i++)
		if (d->sources[i].perf)
			n += fr_perf_nfds(d->sources[i].perf);
	p = calloc(n, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (unsigned i = 0; i < fr_perf_nfds(d->sideband); i++)
		p[k++] = (struct pollfd){.fd = fr_perf_fd(d->sideband, i), .events = POLLIN};
	for (unsigned s = 0; s < d->nsources; s++)
		for (unsigned i = 0; d->sources[s].perf && i < fr_perf_nfds(d->sources[s].perf); i++)
			p[k++] = (struct pollfd){.fd = fr_perf_fd(d->sources[s].perf, i),
						 .events = POLLIN};
	p[k++] = (struct pollfd){.fd = d->flush_efd, .events = POLLIN};
	p[k++] = (struct pollfd){.fd = d->sig_fd, .events = POLLIN};
	p[k++] = (struct pollfd){.fd = d->reconcile_efd, .events = POLLIN};
	free(*pfds);
	*pfds = p;
	return (int)k;
}

static int ingest_loop(struct daemon *d)
{
	struct pollfd *pfds = NULL;
	int npfds = build_pollfds(d, &pfds), stop = 0;

	if (npfds < 0)
		return npfds;
	d->last_seal_mono = fr_now_mono_ns();

	while (!stop) {
		struct pollfd *flush = &pfds[npfds - 3], *sig = &pfds[npfds - 2],
			      *rec = &pfds[npfds - 1];
		uint64_t barrier = 0, n;
		int rebuild = 0;

		int64_t now = fr_now_mono_ns(), due = SEAL_INTERVAL_NS - (now - d->last_seal_mono);
		int timeout;

		if (due <= 0 && fr_chunk_builder_samples(d->builder) == 0) {
			/* Nothing to seal: the next chunk's second starts now. */
			d->last_seal_mono = now;
			due = SEAL_INTERVAL_NS;
		}
		timeout = due <= 0 ? 0 : (int)(due / 1000000) + 1;

		if (timeout > POLL_MAX_MS)
			timeout = POLL_MAX_MS;
		if (poll(pfds, (nfds_t)npfds, timeout) < 0 && errno != EINTR) {
			fr_log_err("poll: %s", strerror(errno));
			break;
		}
		d->clock_offset = fr_perf_clock_offset();
		if (sig->revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					reload(d);
					rebuild = 1;
				} else if (si.ssi_signo != SIGINT && si.ssi_signo != SIGTERM) {
					if (d->triggers)
						fr_triggers_signal(d->triggers,
								   (int)si.ssi_signo);
				} else {
					fr_log_info("received %s; storing the open chunk and exiting",
						    strsignal((int)si.ssi_signo));
					stop = 1;
				}
			}
		}
		if ((rec->revents & POLLIN) && read(d->reconcile_efd, &n, sizeof(n)) == sizeof(n))
			rebuild |= reconcile(d);
		if ((flush->revents & POLLIN) && read(d->flush_efd, &n, sizeof(n)) == sizeof(n)) {
			pthread_mutex_lock(&d->lock);
			barrier = d->barrier_req;
			pthread_mutex_unlock(&d->lock);
		}
		drain_all(d);
		if (barrier || stop ||
		    (fr_chunk_builder_samples(d->builder) > 0 &&
		     fr_now_mono_ns() - d->last_seal_mono >= SEAL_INTERVAL_NS))
			seal(d, barrier);
		if (rebuild) {
			int k = build_pollfds(d, &pfds);
			if (k < 0) {
				fr_log_err("out of memory rebuilding the poll set; stopping");
				seal(d, 0);
				break;
			}
			npfds = k;
		}
	}
	free(pfds);
	return 0;
}

/* ---- requests ---------------------------------------------------------- */

/* "ingest": whether the ingest thread keeps up, and the build id reader
 * beside it. `stalled` is true while the last drain is older than a
 * stall; a reader busy for seconds is reading a file that does not
 * answer (recording goes on without that build id). */
static int add_ingest(struct daemon *d, cJSON *r, int64_t now)
{
	cJSON *o = cJSON_AddObjectToObject(r, "ingest");
	int64_t last = __atomic_load_n(&d->last_drain_mono, __ATOMIC_RELAXED), busy = 0;
	uint32_t pending = 0;

	if (!o)
		return 0;
	fr_ipc_add_int(o, "last_drain_ns", __atomic_load_n(&d->last_drain_real, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "last_seal_ns", __atomic_load_n(&d->last_seal_real, __ATOMIC_RELAXED));
	cJSON_AddBoolToObject(o, "stalled", last && now - last > STALL_NS);
	fr_ipc_add_int(o, "stalls", (int64_t)__atomic_load_n(&d->stalls, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "flush_timeouts",
		       (int64_t)__atomic_load_n(&d->flush_timeouts, __ATOMIC_RELAXED));
	fr_tracker_file_state(d->tracker, &pending, &busy);
	fr_ipc_add_int(o, "build_id_reads_pending", pending);
	fr_ipc_add_int(o, "build_id_read_busy_ns", busy ? now - busy : 0);
	return 1;
}

/* Whether `peer` may see and do everything: root, the daemon's own user
 * (a private instance) and members of the admin group. Anyone else came
 * in through the socket's group and sees only its own processes. */
static int peer_privileged(struct daemon *d, const struct fr_ipc_peer *peer)
{
	int64_t admin = __atomic_load_n(&d->admin_gid, __ATOMIC_RELAXED);

	return peer->uid == 0 || peer->uid == geteuid() ||
	       (admin >= 0 && fr_ipc_peer_in_group(peer, (gid_t)admin));
}

static cJSON *handle_status(struct daemon *d)
{
	cJSON *r = fr_ipc_ok();
	int64_t now = fr_now_mono_ns();

	if (!r)
		return NULL;
	cJSON_AddStringToObject(r, "version", FR_VERSION);
	fr_ipc_add_int(r, "pid", getpid());
	fr_ipc_add_int(r, "started_ns", (int64_t)d->start_real);
	fr_ipc_add_int(r, "uptime_ns", (int64_t)(now - d->start_mono));
	cJSON_AddStringToObject(r, "config", d->opts->config_source);
	fr_ipc_add_int(r, "reloaded_ns", __atomic_load_n(&d->reloaded_ns, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "reloads_rejected",
		       (int64_t)__atomic_load_n(&d->reloads_rejected, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "cpus", d->ncpus);
	fr_ipc_add_int(r, "query_memory", (int64_t)fr_budget_limit(&d->query_budget));
	fr_ipc_add_int(r, "query_memory_used", (int64_t)fr_budget_used(&d->query_budget));
	fr_ipc_add_int(r, "samples", (int64_t)__atomic_load_n(&d->samples, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "samples_lost", (int64_t)__atomic_load_n(&d->lost, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "chunks_sealed", (int64_t)__atomic_load_n(&d->chunks_sealed, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "chunks_dropped", (int64_t)__atomic_load_n(&d->chunks_dropped, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "write_errors", (int64_t)__atomic_load_n(&d->write_errors, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "processes", __atomic_load_n(&d->nprocs, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "threads", __atomic_load_n(&d->nthreads, __ATOMIC_RELAXED));
	if (!add_ingest(d, r, now)) {
		cJSON_Delete(r);
		return NULL;
	}
	if (!add_recording(d, r)) {
		cJSON_Delete(r);
		return NULL;
	}
	{
		struct fr_ring_stats st;
		cJSON *ring;

		fr_ring_get_stats(d->ring, &st);
		ring = fr_ipc_ring_json(fr_ring_path(d->ring), &st);
		if (!ring) {
			cJSON_Delete(r);
			return NULL;
		}
		cJSON_AddItemToObject(r, "ring", ring);
	}
	return r;
}

/* Reads an integer member; returns 1 if present and valid, 0 if absent,
 * -1 (with an error response built) if present and not an integer. */
static int get_int(const cJSON *req, const char *cmd, const char *key, int64_t min, int64_t max,
		   int64_t *out, cJSON **error)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble) {
		*error = fr_ipc_error("%s: \"%s\" must be an integer", cmd, key);
		return -1;
	}
	if (v->valuedouble < (double)min || v->valuedouble > (double)max) {
		*error = fr_ipc_error("%s: \"%s\" must be %lld..%lld, got %.0f", cmd, key,
				      (long long)min, (long long)max, v->valuedouble);
		return -1;
	}
	*out = (int64_t)v->valuedouble;
	return 1;
}

/* Reads "events" (an array of event names; absent: cpu) into ids.
 * Returns the count, or -1 with an error response built. */
static int get_events(const cJSON *req, const char *cmd, uint32_t *ids, cJSON **error)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(req, "events"), *e;
	int n = 0;

	if (!events || cJSON_IsNull(events)) {
		ids[0] = FR_EVENT_CPU;
		return 1;
	}
	if (!cJSON_IsArray(events) || cJSON_GetArraySize(events) == 0) {
		*error = fr_ipc_error("%s: \"events\" must be a non-empty array of event names", cmd);
		return -1;
	}
	cJSON_ArrayForEach(e, events) {
		int64_t id = cJSON_IsString(e) ? fr_event_lookup(e->valuestring) : -ENOENT;

		if (id < 0) {
			*error = fr_ipc_error("%s: unknown event %s%s%s (accepted: " FR_EVENT_NAMES ")",
					      cmd, cJSON_IsString(e) ? "\"" : "",
					      cJSON_IsString(e) ? e->valuestring : "(not a string)",
					      cJSON_IsString(e) ? "\"" : "");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (ids[i] == (uint32_t)id) {
				*error = fr_ipc_error("%s: event \"%s\" is listed twice", cmd,
						      e->valuestring);
				return -1;
			}
		}
		if (n == FR_PROFILE_MAX_EVENTS) {
			*error = fr_ipc_error("%s: at most %d events per request", cmd,
					      FR_PROFILE_MAX_EVENTS);
			return -1;
		}
		ids[n++] = (uint32_t)id;
	}
	return n;
}

/* Reads the targets of a request ("pids", "comm", "cgroup") into `preq`.
 * Returns 0, or -1 with an error response built. */
static int get_targets(const cJSON *req, const char *cmd, struct fr_profile_request *preq,
		       cJSON **error)
{
	const cJSON *pids = cJSON_GetObjectItemCaseSensitive(req, "pids"), *p;
	const cJSON *comm = cJSON_GetObjectItemCaseSensitive(req, "comm");
	const cJSON *cgroup = cJSON_GetObjectItemCaseSensitive(req, "cgroup");
	const cJSON *children = cJSON_GetObjectItemCaseSensitive(req, "children");

	if (pids && !cJSON_IsNull(pids)) {
		if (!cJSON_IsArray(pids)) {
			*error = fr_ipc_error("%s: \"pids\" must be an array of process ids", cmd);
			return -1;
		}
		cJSON_ArrayForEach(p, pids) {
			if (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > INT32_MAX ||
			    p->valuedouble != (double)(int64_t)p->valuedouble) {
				*error = fr_ipc_error("%s: \"pids\" must hold positive process ids",
						      cmd);
				return -1;
			}
			if (preq->npids == FR_PROFILE_MAX_PIDS) {
				*error = fr_ipc_error("%s: at most %d pids per request", cmd,
						      FR_PROFILE_MAX_PIDS);
				return -1;
			}
			preq->pids[preq->npids++] = (uint32_t)p->valuedouble;
		}
	}
	if (comm && !cJSON_IsNull(comm)) {
		if (!cJSON_IsArray(comm)) {
			*error = fr_ipc_error("%s: \"comm\" must be an array of command names", cmd);
			return -1;
		}
		cJSON_ArrayForEach(p, comm) {
			if (!cJSON_IsString(p) || !p->valuestring[0] ||
			    strlen(p->valuestring) >= FR_PROFILE_COMM_MAX) {
				*error = fr_ipc_error("%s: \"comm\" must hold command names of 1..%d "
						      "characters (as the kernel keeps them)", cmd,
						      FR_PROFILE_COMM_MAX - 1);
				return -1;
			}
			if (preq->ncomms == FR_PROFILE_MAX_COMMS) {
				*error = fr_ipc_error("%s: at most %d command names per request", cmd,
						      FR_PROFILE_MAX_COMMS);
				return -1;
			}
			snprintf(preq->comms[preq->ncomms++], FR_PROFILE_COMM_MAX, "%s",
				 p->valuestring);
		}
	}
	if (children && !cJSON_IsNull(children)) {
		if (!cJSON_IsBool(children)) {
			*error = fr_ipc_error("%s: \"children\" must be true or false", cmd);
			return -1;
		}
		preq->children = cJSON_IsTrue(children);
		if (preq->children && !preq->npids) {
			*error = fr_ipc_error("%s: \"children\" goes with \"pids\"", cmd);
			return -1;
		}
	}
	if (cgroup && !cJSON_IsNull(cgroup)) {
		if (!cJSON_IsString(cgroup) || cgroup->valuestring[0] != '/' ||
		    strlen(cgroup->valuestring) >= FR_PROFILE_CGROUP_MAX) {
			*error = fr_ipc_error("%s: \"cgroup\" must be a cgroup v2 path like "
					      "\"/system.slice/nginx.service\" (at most %d characters)",
					      cmd, FR_PROFILE_CGROUP_MAX - 1);
			return -1;
		}
		snprintf(preq->cgroup, sizeof(preq->cgroup), "%s", cgroup->valuestring);
	}
	return 0;
}

/* For a window query: every event must be recordable. An event that is
 * being recorded is fine; one whose source failed is refused with the
 * reason; one nobody records is tried (opened and closed again) so that
 * the user learns at once whether it could be, and gets a warning that
 * the ring holds only what earlier consumers recorded of it. Returns 0, or
 * -1 with an error response built. */
static int check_events(struct daemon *d, const uint32_t *ids, int n, const char *cmd,
			int privileged, char *warn, size_t warnlen, cJSON **error)
{
	char name[FR_EVENT_NAME_MAX];

	for (int i = 0; i < n; i++) {
		struct source *src;
		struct consumer *probe;
		char failed[256] = "";
		int recording = 0;

		pthread_mutex_lock(&d->src_lock);
		src = find_source(d, ids[i]);
		if (src && src->perf)
			recording = 1;
		else if (src)
			snprintf(failed, sizeof(failed), "%s", src->error);
		pthread_mutex_unlock(&d->src_lock);
		if (recording)
			continue;
		/* The probe opens the event for a moment, machine-wide: offcpu
		 * records every context switch. Only a privileged asker may. */
		if (!failed[0] && privileged) {
			probe = calloc(1, sizeof(*probe));
			if (!probe) {
				*error = fr_ipc_error("%s: out of memory", cmd);
				return -1;
			}
			snprintf(probe->name, sizeof(probe->name), "%s check of %s", cmd,
				 fr_event_format(ids[i], name, sizeof(name)));
			probe->uid = (uid_t)-1;
			probe->nevents = 1;
			probe->events[0] = ids[i];
			probe->hz[0] = fr_event_has_rate(ids[i]) ? 1 : 0;
			wait_reconciled(d, consumer_add(d, probe));
			pthread_mutex_lock(&d->src_lock);
			src = find_source(d, ids[i]);
			if (src && !src->perf)
				snprintf(failed, sizeof(failed), "%s", src->error);
			pthread_mutex_unlock(&d->src_lock);
			consumer_remove(d, probe);
		}
		if (failed[0]) {
			*error = fr_ipc_error("%s", failed);
			return -1;
		}
		if (!warn[0] && privileged)
			snprintf(warn, warnlen,
				 "%s is not being recorded (no session or client asks for it); the "
				 "profile holds only what the ring has of it. `flightrec attach "
				 "--follow --event %s` records it from now on",
				 fr_event_format(ids[i], name, sizeof(name)), name);
		else if (!warn[0])
			snprintf(warn, warnlen,
				 "%s is not being recorded (no session or client asks for it); the "
				 "profile holds only what the ring has of it",
				 fr_event_format(ids[i], name, sizeof(name)));
	}
	return 0;
}

/* Reserves what the query `preq` may take from the query budget, waiting
 * up to QUERY_WAIT_NS, and caps its decoded-chunk cache to the share the
 * cache has of it. Returns the bytes reserved or -EBUSY. */
static int64_t reserve_query(struct daemon *d, struct fr_profile_request *preq)
{
	int64_t want = fr_profile_estimate(d->ring, preq), ask, got, users = 0;

	if (want < 0)
		want = 0;
	/* Profiles limited to one user's processes (users who are not
	 * privileged) hold together at most a quarter of the budget: each
	 * estimate counts every sample of the window, and such users must
	 * not hold root's queries off. What they keep of their own samples
	 * is smaller; their decoded-chunk caches shrink to fit. */
	ask = want;
	if (preq->has_uid) {
		users = fr_budget_acquire(&d->users_budget, (uint64_t)want, QUERY_WAIT_NS);
		if (users < 0)
			return users;
		ask = users;
	}
	got = fr_budget_acquire(&d->query_budget, (uint64_t)ask, QUERY_WAIT_NS);
	if (got < 0) {
		if (preq->has_uid)
			fr_budget_release(&d->users_budget, (uint64_t)users);
		return got;
	}
	fr_log_debug("attach: reserved %lld bytes of query memory (estimated %lld)",
		     (long long)got, (long long)want);
	/* A reservation cut to the budget holds the decoded-chunk cache to
	 * a third of what it got; the rest is for aggregation. */
	if (got < want)
		preq->cache_bytes = (size_t)(got / 3) + 1;
	return got;
}

/* Gives back what reserve_query() took, and the memory behind it: a heavy
 * query leaves its arena's free memory mapped, so the daemon's RSS would
 * not return to its idle size. */
static void release_query(struct daemon *d, int has_uid, int64_t reserved)
{
	if (!reserved)
		return;
	fr_budget_release(&d->query_budget, (uint64_t)reserved);
	if (has_uid)
		fr_budget_release(&d->users_budget, (uint64_t)reserved);
	malloc_trim(0);
}

static cJSON *handle_attach(struct daemon *d, const cJSON *req, int fd, struct fr_ipc_peer *peer)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	int64_t reserved = 0;
	struct fr_profile_request preq;
	struct fr_profile_result res;
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = NULL;
	cJSON *resp = NULL, *warnings, *events;
	const cJSON *format;
	int64_t window = 0, from = 0, to = 0, hz = 0, now;
	int has_window, has_from, has_to, flags, ret, n;
	char err[512], buf[64], warn[512] = "", name[FR_EVENT_NAME_MAX];

	memset(&preq, 0, sizeof(preq));
	if (fd < 0)
		return fr_ipc_error("attach needs the output file passed with the request");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		resp = fr_ipc_error("attach: the output descriptor is not open for writing");
		goto out;
	}
	if ((has_window = get_int(req, "attach", "window_ns", 1, INT64_MAX, &window, &resp)) < 0 ||
	    (has_from = get_int(req, "attach", "from_ns", 0, INT64_MAX, &from, &resp)) < 0 ||
	    (has_to = get_int(req, "attach", "to_ns", 0, INT64_MAX, &to, &resp)) < 0 ||
	    get_int(req, "attach", "hz", 0, INT32_MAX, &hz, &resp) < 0)
		goto out;
	if (hz > max_rate) {
		resp = fr_ipc_error("attach: a rate of %lld Hz is above this recorder's limit of "
				    "%u Hz (limits.max_rate_hz)", (long long)hz, max_rate);
		goto out;
	}
	now = fr_now_real_ns();
	if (has_window) {
		preq.t1 = now;
		preq.t0 = now - window;
	} else if (has_from) {
		preq.t0 = from;
		preq.t1 = has_to ? to : now;
		if (preq.t1 <= preq.t0) {
			resp = fr_ipc_error("attach: the window ends (%s) before it starts",
					    fr_format_time(preq.t1, buf, sizeof(buf)));
			goto out;
		}
	} else {
		resp = fr_ipc_error("attach needs \"window_ns\" or \"from_ns\"");
		goto out;
	}
	if (get_targets(req, "attach", &preq, &resp) < 0)
		goto out;
	n = get_events(req, "attach", preq.events, &resp);
	if (n < 0)
		goto out;
	preq.nevents = (uint32_t)n;
	if (check_events(d, preq.events, n, "attach", peer_privileged(d, peer), warn, sizeof(warn),
			 &resp) < 0)
		goto out;
	format = cJSON_GetObjectItemCaseSensitive(req, "format");
	if (format && !cJSON_IsNull(format)) {
		int f = cJSON_IsString(format) ? fr_profile_format_parse(format->valuestring)
					       : -EINVAL;
		if (f < 0) {
			resp = fr_ipc_error("attach: \"format\" must be one of: "
					    FR_PROFILE_FORMAT_NAMES);
			goto out;
		}
		preq.format = (enum fr_profile_format)f;
	}
	preq.hz = (uint32_t)hz;
	preq.version = FR_VERSION;
	/* From the credentials, never from the request: a user sees the
	 * processes it ran, whatever it asks for. */
	if (!peer_privileged(d, peer)) {
		preq.has_uid = 1;
		preq.uid = (uint32_t)peer->uid;
	}

	/* Samples up to the request must be in the ring before reading it. */
	ret = flush_barrier(d);
	if (ret < 0) {
		fr_log_warn("flush before attach timed out; the last second may be missing");
		preq.note = FLUSH_NOTE;
	}

	reserved = reserve_query(d, &preq);
	if (reserved < 0) {
		reserved = 0;
		resp = fr_ipc_error("attach: busy: other queries hold the daemon's query memory "
				    "(limits.query_memory, %s) for over %lld s; retry later",
				    fr_format_size(fr_budget_limit(&d->query_budget), buf, sizeof(buf)),
				    (long long)(QUERY_WAIT_NS / 1000000000LL));
		goto out;
	}
	/* Work for a client that hung up stops at the next chunk. */
	preq.stop = fr_ipc_peer_gone;
	preq.stop_arg = peer;

	w = malloc(sizeof(*w));
	ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;
	if (ret < 0) {
		resp = fr_ipc_error("attach: cannot set up the output: %s", strerror(-ret));
		goto out;
	}
	fr_uring_writer_init(w, uring, fd);
	fr_uring_writer_limit(w, OUTPUT_STALL_NS, OUTPUT_TOTAL_NS, peer->sock);
	err[0] = '\0';
	ret = fr_profile_write(d->ring, &preq, fr_uring_writer_write, w, &res, err, sizeof(err));
	if (ret == 0)
		ret = fr_uring_writer_flush(w);
	if (ret == -ETIMEDOUT) {
		resp = fr_ipc_error("attach: the output took no bytes for %lld s (or the whole "
				    "profile not within %lld s): is anything reading it? Gave up",
				    (long long)(OUTPUT_STALL_NS / 1000000000LL),
				    (long long)(OUTPUT_TOTAL_NS / 1000000000LL));
		goto out;
	}
	if (ret == -EOPNOTSUPP) {
		resp = fr_ipc_error("attach: the output is a device that takes no non-blocking "
				    "writes; write to a file or a pipe (| cat)");
		goto out;
	}
	if (ret < 0) {
		resp = fr_ipc_error("attach: %s", err[0] ? err : strerror(-ret));
		goto out;
	}
	resp = fr_ipc_ok();
	if (!resp)
		goto out;
	fr_ipc_add_int(resp, "samples", (int64_t)res.samples_kept);
	fr_ipc_add_int(resp, "samples_in_window", (int64_t)res.samples_seen);
	fr_ipc_add_int(resp, "stacks", (int64_t)res.stacks);
	fr_ipc_add_int(resp, "bytes", (int64_t)w->written);
	fr_ipc_add_int(resp, "hz", res.hz);
	fr_ipc_add_int(resp, "lost", (int64_t)res.lost);
	fr_ipc_add_int(resp, "t0_ns", (int64_t)preq.t0);
	fr_ipc_add_int(resp, "t1_ns", (int64_t)preq.t1);
	fr_ipc_add_int(resp, "covered_t0_ns", (int64_t)res.covered_t0);
	events = cJSON_AddArrayToObject(resp, "events");
	for (uint32_t e = 0; events && e < res.nevents; e++) {
		const struct fr_profile_event_result *er = &res.events[e];
		cJSON *ev = cJSON_CreateObject();

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
		cJSON_AddStringToObject(ev, "event", fr_event_format(er->event, name, sizeof(name)));
		fr_ipc_add_int(ev, "hz", er->hz);
		fr_ipc_add_int(ev, "samples", (int64_t)er->samples_kept);
		fr_ipc_add_int(ev, "samples_in_window", (int64_t)er->samples_seen);
		fr_ipc_add_int(ev, "lost", (int64_t)er->lost);
		fr_ipc_add_int(ev, "throttled", (int64_t)er->throttled);
		fr_ipc_add_int(ev, "truncated", (int64_t)er->truncated);
	}
	if (preq.note)
		cJSON_AddStringToObject(resp, "incomplete", preq.note);
	warnings = cJSON_AddArrayToObject(resp, "warnings");
	if (warnings && warn[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(warn));
	if (warnings && res.warning[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(res.warning));
	if (warnings && preq.has_uid) {
		snprintf(warn, sizeof(warn), "the profile holds only your own processes (uid %u); "
			 "root and members of socket.admin_group see the whole machine", preq.uid);
		cJSON_AddItemToArray(warnings, cJSON_CreateString(warn));
	}
out:
	fr_uring_close(uring);
	free(w);
	close(fd);
	release_query(d, preq.has_uid, reserved);
	return resp;
}

/* ---- dumps ------------------------------------------------------------- */

/* The trigger engine's callback: writes the window of `fire` for the
 * session's events and targets into the dumps directory. Runs on the
 * trigger thread (or a manual dump's connection thread). */
static int daemon_dump(void *arg, const struct fr_trigger_fire *fire, char *out,
		       size_t outlen)
{
	struct daemon *d = arg;
	struct fr_profile_request *preq = calloc(1, sizeof(*preq));
	struct fr_dump_request dr = {0};
	const struct fr_config_session *sess = NULL;
	char path[4096], err[512], dir[4096];
	uint32_t keep, mode;
	uint64_t max_bytes;
	int64_t reserved;
	int ret;

	if (!preq) {
		fr_log_err("dump of session %s (%s) failed: out of memory", fire->session,
			   fire->kind);
		if (out)
			snprintf(out, outlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&d->config_lock);
	for (uint32_t i = 0; i < d->config->nsessions; i++)
		if (strcmp(d->config->sessions[i].name, fire->session) == 0)
			sess = &d->config->sessions[i];
	if (sess) {
		for (uint32_t e = 0; e < sess->nevents && e < FR_PROFILE_MAX_EVENTS; e++)
			preq->events[preq->nevents++] = sess->events[e].event;
		for (uint32_t i = 0; i < sess->npids && i < FR_PROFILE_MAX_PIDS; i++)
			preq->pids[preq->npids++] = sess->pids[i];
		for (uint32_t i = 0; i < sess->ncomms && i < FR_PROFILE_MAX_COMMS; i++)
			snprintf(preq->comms[preq->ncomms++], FR_PROFILE_COMM_MAX, "%s",
				 sess->comms[i]);
		snprintf(preq->cgroup, sizeof(preq->cgroup), "%s", sess->cgroup);
		preq->has_uid = sess->has_uid;
		preq->uid = sess->uid;
	}
	snprintf(dir, sizeof(dir), "%s",
		 d->config->dumps_dir ? d->config->dumps_dir : d->dumps_default_dir);
	keep = d->config->dumps_keep;
	max_bytes = d->config->dumps_max_bytes;
	mode = d->config->dumps_mode;
	pthread_mutex_unlock(&d->config_lock);
	if (!sess) {
		free(preq);
		fr_log_warn("dump of session %s: the session is gone (reloaded)", fire->session);
		if (out)
			snprintf(out, outlen, "the session is gone (reloaded)");
		return -ENOENT;
	}
	preq->t0 = fire->t0_ns;
	preq->t1 = fire->t1_ns;
	preq->version = FR_VERSION;

	/* Samples up to the end of the window must be in the ring. */
	if (flush_barrier(d) < 0) {
		fr_log_warn("flush before a dump timed out; the last second may be missing");
		preq->note = FLUSH_NOTE;
	}
	/* Dumps share the query memory. A manual dump (a client's request)
	 * is refused busy, as an attach is; a trigger's dump is written
	 * anyway rather than lost: sessions and cooldowns bound those. */
	reserved = reserve_query(d, preq);
	if (reserved < 0) {
		reserved = 0;
		if (strcmp(fire->kind, "manual") == 0) {
			free(preq);
			fr_log_warn("manual dump of session %s refused: query memory busy",
				    fire->session);
			return -EAGAIN;
		}
		fr_log_warn("dump of session %s (%s): the query memory is busy; writing it anyway",
			    fire->session, fire->kind);
	}
	dr.dir = dir;
	dr.keep = keep;
	dr.max_bytes = max_bytes;
	dr.mode = (mode_t)mode;
	dr.session = fire->session;
	dr.trigger = fire->kind;
	dr.reason = fire->reason;
	dr.fire_ns = fire->fire_ns;
	dr.window_ns = fire->trigger ? fire->trigger->window_ns : fire->t1_ns - fire->t0_ns;
	dr.after_ns = fire->trigger ? fire->trigger->after_ns : 0;
	dr.pid = fire->pid;
	dr.profile = preq;
	ret = fr_dumps_write(d->ring, &dr, path, sizeof(path), err, sizeof(err));
	release_query(d, preq->has_uid, reserved);
	free(preq);
	if (ret < 0) {
		fr_log_err("dump of session %s (%s) failed: %s", fire->session, fire->kind, err);
		if (out)
			snprintf(out, outlen, "%s", err);
		return ret;
	}
	fr_log_info("session %s: %s dump written to %s", fire->session, fire->kind, path);
	if (out)
		snprintf(out, outlen, "%s", path);
	return 0;
}

/* Whether a user who is not privileged is among the session's "users". */
static int may_dump(struct daemon *d, const char *session, uid_t uid)
{
	int ok = 0;

	pthread_mutex_lock(&d->config_lock);
	for (uint32_t i = 0; i < d->config->nsessions; i++) {
		const struct fr_config_session *sess = &d->config->sessions[i];

		if (strcmp(sess->name, session) != 0)
			continue;
		for (uint32_t k = 0; k < sess->nusers; k++)
			if (sess->users[k] == (uint32_t)uid)
				ok = 1;
	}
	pthread_mutex_unlock(&d->config_lock);
	return ok;
}

/* flightrec dump --session NAME: fires the session by hand. A dump holds
 * whatever the session targets, of every user, and costs the daemon a
 * write; so only root, the admin group and the session's "users" may. */
static cJSON *handle_dump(struct daemon *d, const cJSON *req, const struct fr_ipc_peer *peer)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "session");
	struct fr_trigger_fire fire;
	char path[4096] = "";
	cJSON *resp = NULL;
	int64_t window = 0;
	int ret;

	if (!cJSON_IsString(name) || !name->valuestring[0])
		return fr_ipc_error("dump: \"session\" must name a session");
	if (get_int(req, "dump", "window_ns", 1000000000LL, 3600000000000LL, &window, &resp) < 0)
		return resp;
	if (!peer_privileged(d, peer) && !may_dump(d, name->valuestring, peer->uid)) {
		fr_log_info("refused a dump of session %s to uid %u (pid %d): not among its users",
			    name->valuestring, (unsigned)peer->uid, (int)peer->pid);
		return fr_ipc_error("dump: uid %u may not dump session \"%s\": only root, the "
				    "admin group (socket.admin_group) and the session's \"users\" "
				    "may", (unsigned)peer->uid, name->valuestring);
	}
	if (!d->triggers)
		return fr_ipc_error("dump: this recorder runs without triggers (see its log)");
	memset(&fire, 0, sizeof(fire));
	ret = fr_triggers_manual(d->triggers, name->valuestring, window, &fire, path,
				 sizeof(path));
	/* Only the engine's own refusals leave `path` empty; a failed dump
	 * says why there, whatever its errno (a rename's ENOENT is no
	 * missing session). */
	if (ret == -ENOENT && !path[0])
		return fr_ipc_error("dump: no session named \"%s\" (see flightrec sessions)",
				    name->valuestring);
	if (ret == -EBUSY && !path[0])
		return fr_ipc_error("dump of session %s refused: busy, a dump of it requested by "
				    "hand is being written; try again when it is done",
				    name->valuestring);
	if (ret == -EAGAIN && !path[0]) {
		char size[32];

		return fr_ipc_error("dump: busy: other queries hold the daemon's query memory "
				    "(limits.query_memory, %s) for over %lld s; retry later",
				    fr_format_size(fr_budget_limit(&d->query_budget), size,
						   sizeof(size)),
				    (long long)(QUERY_WAIT_NS / 1000000000LL));
	}
	if (ret < 0)
		return fr_ipc_error("dump of session %s failed: %s", name->valuestring,
				    path[0] ? path : strerror(-ret));
	resp = fr_ipc_ok();
	if (!resp)
		return NULL;
	cJSON_AddStringToObject(resp, "path", path);
	fr_ipc_add_int(resp, "t0_ns", fire.t0_ns);
	fr_ipc_add_int(resp, "t1_ns", fire.t1_ns);
	return resp;
}

/* A client asks for events at a rate for as long as its connection
 * lives (attach --follow): the sources are raised to it at once and fall
 * back when the connection ends. Answers when the rates are in force, with
 * "start_ns", from when on the data is at these rates. */
/* The rate a follower gets for its rated events: what it asked (99 Hz
 * when it did not, within limits.max_rate_hz), at most
 * limits.user_max_rate_hz for a user who is not privileged: raising rates
 * costs every process on the machine, so such a user is capped and told so
 * in `capped`, not refused (it still gets a profile). */
static uint32_t consume_rate(struct daemon *d, int64_t hz, int privileged, char *capped,
			     size_t cappedlen)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	uint32_t user_max = __atomic_load_n(&d->user_max_rate_hz, __ATOMIC_RELAXED);
	uint32_t rate = hz ? (uint32_t)hz : max_rate < 99 ? max_rate : 99;

	if (privileged || rate <= user_max)
		return rate;
	snprintf(capped, cappedlen,
		 "%u Hz is above the limit for users (limits.user_max_rate_hz); recording at %u Hz",
		 rate, user_max);
	return user_max;
}

/* An event without a rate (offcpu: every context switch) has no limit to
 * cap: a user who is not privileged may follow it while something else
 * records it, never start it for the whole machine (collect_wants() does
 * not count such a follower for it). Returns 0, or -1 with `failed` set
 * when the user asks for one that is not recorded now. */
static int check_follow_only(struct daemon *d, const struct consumer *c, char *failed,
			     size_t failedlen)
{
	char name[FR_EVENT_NAME_MAX];

	for (uint32_t i = 0; i < c->nevents; i++) {
		struct source *src;
		int recording;

		if (fr_event_has_rate(c->events[i]))
			continue;
		pthread_mutex_lock(&d->src_lock);
		src = find_source(d, c->events[i]);
		recording = src && src->perf;
		pthread_mutex_unlock(&d->src_lock);
		if (!recording) {
			snprintf(failed, failedlen,
				 "consume: %s is not being recorded, and it records every context "
				 "switch of the machine; only root and members of socket.admin_group "
				 "may start it",
				 fr_event_format(c->events[i], name, sizeof(name)));
			return -1;
		}
	}
	return 0;
}

/* The answer to a consume that holds its rates from `start` on. */
static cJSON *consume_reply(struct daemon *d, const struct consumer *c, int64_t start,
			    const char *capped)
{
	char name[FR_EVENT_NAME_MAX];
	cJSON *resp = fr_ipc_ok(), *events, *warnings;

	if (!resp)
		return NULL;
	warnings = cJSON_AddArrayToObject(resp, "warnings");
	if (warnings && capped[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(capped));
	fr_ipc_add_int(resp, "start_ns", start);
	events = cJSON_AddArrayToObject(resp, "events");
	pthread_mutex_lock(&d->src_lock);
	for (uint32_t i = 0; events && i < c->nevents; i++) {
		struct source *src = find_source(d, c->events[i]);
		cJSON *ev = cJSON_CreateObject();

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
		cJSON_AddStringToObject(ev, "event", fr_event_format(c->events[i], name, sizeof(name)));
		fr_ipc_add_int(ev, "hz", c->hz[i]);
		fr_ipc_add_int(ev, "recording_hz", src ? src->hz : 0);
	}
	pthread_mutex_unlock(&d->src_lock);
	return resp;
}

static cJSON *handle_consume(struct daemon *d, const cJSON *req, struct fr_ipc_peer *peer)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED), rate;
	int privileged = peer_privileged(d, peer);
	char failed[512] = "", name[FR_EVENT_NAME_MAX], capped[256] = "";
	struct consumer *c;
	cJSON *resp = NULL;
	int64_t hz = 0, start;
	int n;

	if (peer->hold)
		return fr_ipc_error("consume: this connection already holds rates; open another "
				    "connection for more");
	if (get_int(req, "consume", "hz", 0, INT32_MAX, &hz, &resp) < 0)
		return resp;
	if (hz > max_rate)
		return fr_ipc_error("consume: a rate of %lld Hz is above this recorder's limit of "
				    "%u Hz (limits.max_rate_hz)", (long long)hz, max_rate);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	n = get_events(req, "consume", c->events, &resp);
	if (n < 0) {
		free(c);
		return resp;
	}
	c->nevents = (uint32_t)n;
	c->follows_only = !privileged;
	if (!privileged && check_follow_only(d, c, failed, sizeof(failed)) < 0) {
		free(c);
		return fr_ipc_error("%s", failed);
	}
	rate = consume_rate(d, hz, privileged, capped, sizeof(capped));
	for (int i = 0; i < n; i++)
		c->hz[i] = fr_event_has_rate(c->events[i]) ? rate : 0;
	snprintf(c->name, sizeof(c->name), "client pid %d", (int)peer->pid);
	c->uid = peer->uid;
	if (wait_reconciled(d, consumer_add(d, c)) < 0) {
		consumer_remove(d, c);
		return fr_ipc_error("consume: the recorder did not apply the rates in time");
	}
	/* Rates take effect at the next sample of each CPU; a window that
	 * starts now has them throughout. */
	start = fr_now_real_ns();
	pthread_mutex_lock(&d->src_lock);
	for (int i = 0; i < n; i++) {
		struct source *src = find_source(d, c->events[i]);
		if (src && !src->perf && !failed[0])
			snprintf(failed, sizeof(failed), "%s", src->error);
	}
	pthread_mutex_unlock(&d->src_lock);
	if (failed[0]) {
		consumer_remove(d, c);
		return fr_ipc_error("%s", failed);
	}
	peer->hold = c;
	peer->release = consumer_release;
	fr_log_info("%s (uid %u) asks for %s%s at %lld Hz%s%s", c->name, (unsigned)peer->uid,
		    fr_event_format(c->events[0], name, sizeof(name)), n > 1 ? " and more" : "",
		    (long long)c->hz[0], capped[0] ? ": " : "", capped);
	return consume_reply(d, c, start, capped);
}

/* What status tells a user who is not privileged: the same numbers, but
 * not which processes of others follow (a consumer is "a client" unless
 * it is the asker's own) nor where the configuration file is. */
static cJSON *status_for(struct daemon *d, cJSON *r, const struct fr_ipc_peer *peer)
{
	cJSON *c;

	if (!r || peer_privileged(d, peer))
		return r;
	cJSON_DeleteItemFromObjectCaseSensitive(r, "config");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "consumers")) {
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(c, "uid");

		/* Integers of a reply are raw text (fr_ipc_add_int()). */
		if (uid && !(cJSON_IsRaw(uid) &&
			     strtoull(uid->valuestring, NULL, 10) == (unsigned long long)peer->uid)) {
			cJSON_ReplaceItemInObjectCaseSensitive(c, "name",
							       cJSON_CreateString("a client"));
			cJSON_DeleteItemFromObjectCaseSensitive(c, "uid");
		}
	}
	return r;
}

static cJSON *handle_request(void *arg, const char *cmd, const cJSON *req, int fd,
			     struct fr_ipc_peer *peer)
{
	struct daemon *d = arg;

	if (strcmp(cmd, "attach") == 0)
		return handle_attach(d, req, fd, peer);
	if (fd >= 0)
		close(fd);
	if (strcmp(cmd, "status") == 0)
		return status_for(d, handle_status(d), peer);
	if (strcmp(cmd, "sessions") == 0)
		return status_for(d, handle_sessions(d), peer);
	if (strcmp(cmd, "consume") == 0)
		return handle_consume(d, req, peer);
	if (strcmp(cmd, "dump") == 0)
		return handle_dump(d, req, peer);
	return fr_ipc_error("unknown request \"%s\" (this recorder answers: attach, consume, "
			    "dump, status, sessions)", cmd);
}

/* ---- start and stop ---------------------------------------------------- */

static void print_banner(struct daemon *d)
{
	const struct fr_daemon_options *o = d->opts;
	struct fr_ring_stats st;
	char size[32], seg[32], t0[64];
	char *client_default = fr_ipc_client_socket_path();

	char events[512];

	describe_sources(d, 0, events, sizeof(events));
	fr_ring_get_stats(d->ring, &st);
	printf("flightrecd %s: recording %s on %u CPUs (kernel+user stacks)\n", FR_VERSION,
	       events[0] ? events : "no events", d->ncpus);
	for (unsigned i = 0; i < d->nsources; i++)
		if (!d->sources[i].perf)
			printf("  not recording: %s\n", d->sources[i].error);
	printf("  config: %s\n", o->config_source);
	printf("  ring:   %s (%s, %s segments", fr_ring_path(d->ring),
	       fr_format_size_human(st.file_size, size, sizeof(size)),
	       fr_format_size_human(st.segment_size, seg, sizeof(seg)));
	if (st.chunks)
		printf("; %llu samples kept since %s", (unsigned long long)st.samples,
		       fr_format_time(st.oldest_ns, t0, sizeof(t0)));
	printf(")\n");
	printf("  socket: %s\n", o->socket_path);
	printf("Try, from another terminal:\n");
	if (client_default && strcmp(client_default, o->socket_path) == 0)
		printf("  flightrec attach --window 60s -o incident.pb.gz\n");
	else
		printf("  flightrec attach --socket %s --window 60s -o incident.pb.gz\n",
		       o->socket_path);
	printf("  go tool pprof -top incident.pb.gz\n");
	fflush(stdout);
	free(client_default);
}

int fr_daemon_run(const struct fr_daemon_options *opts)
{
	const struct fr_config *cfg = opts->config;
	struct daemon *d;
	sigset_t mask;
	char err[1024];
	int ret, status = 1, n;
	size_t max_raw;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "flightrecd: out of memory\n");
		return 1;
	}
	d->opts = opts;
	d->config = opts->config;
	d->handler = (struct fr_perf_handler){
		.sample = on_sample,
		.comm = on_comm,
		.mmap = on_mmap,
		.fork = on_fork,
		.exit = on_exit_rec,
		.lost = on_lost,
		.throttle = on_throttle,
		.arg = d,
	};
	pthread_mutex_init(&d->sessions_lock, NULL);
	publish_sessions(d, opts->config);
	d->flush_efd = d->sig_fd = d->reconcile_efd = -1;
	pthread_mutex_init(&d->config_lock, NULL);
	fr_budget_init(&d->query_budget, opts->config->query_memory);
	fr_budget_init(&d->users_budget, opts->config->query_memory / 4);
	pthread_mutex_init(&d->src_lock, NULL);
	pthread_mutex_init(&d->consumers_lock, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&d->consumers_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	d->start_real = fr_now_real_ns();
	d->start_mono = fr_now_mono_ns();
	pthread_mutex_init(&d->lock, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&d->cond, &ca);
		pthread_condattr_destroy(&ca);
	}

	/* Every thread inherits this mask; signals are read from sig_fd. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	/* Every signal a trigger may name, also those a later reload may
	 * name: blocked here, before any thread starts, they can only arrive
	 * through sig_fd (never kill a thread that did not block them). */
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	d->flush_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->reconcile_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->sig_fd < 0 || d->flush_efd < 0 || d->reconcile_efd < 0) {
		fprintf(stderr, "flightrecd: cannot create event descriptors: %s\n",
			strerror(errno));
		goto out;
	}

	/* The socket first: if a live recorder answers there, it owns the
	 * ring too, and we must not touch either. */
	ret = fr_ipc_server_open(&d->server, opts->socket_path, cfg->max_clients, handle_request,
				 d, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		goto out;
	}
	if (cfg->has_socket_group) {
		ret = fr_ipc_server_share(d->server, (gid_t)cfg->socket_gid, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "flightrecd: %s\n", err);
			goto out;
		}
	}

	ret = fr_mkdir_parent(opts->ring_path, 0700, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		goto out;
	}
	err[0] = '\0';
	ret = fr_ring_open(&d->ring, opts->ring_path, cfg->ring_size, cfg->segment_size,
			   FR_RING_CREATE | FR_RING_JOURNAL, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err[0] ? err : strerror(-ret));
		goto out;
	}
	if (err[0])
		fr_log_warn("%s", err);
	fr_ring_set_sync_interval(d->ring, cfg->sync_ns);
	d->max_age_ns = cfg->max_age_ns;
	d->max_rate_hz = cfg->max_rate_hz;
	d->user_max_rate_hz = cfg->user_max_rate_hz;
	d->admin_gid = cfg->has_admin_group ? (int64_t)cfg->admin_gid : -1;
	expire(d); /* before the writer thread exists, so no race */

	d->tracker = fr_tracker_new();
	if (!d->tracker) {
		fprintf(stderr, "flightrecd: out of memory\n");
		goto out;
	}
	n = fr_tracker_scan(d->tracker, "/proc");
	if (n < 0)
		fr_log_warn("cannot scan /proc: %s; processes are learned as they run",
			    strerror(-n));

	ret = fr_perf_open_sideband(&d->sideband, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		goto out;
	}
	d->ncpus = fr_perf_nfds(d->sideband);
	/* The sessions' events: each that cannot be opened is reported and
	 * the others record; with none at all there is nothing to run. */
	set_session_consumers(d, cfg);
	reconcile(d);
	{
		unsigned open = 0;

		for (unsigned i = 0; i < d->nsources; i++)
			open += d->sources[i].perf != NULL;
		if (d->nsources && !open) {
			fprintf(stderr, "flightrecd: %s\n", d->sources[0].error);
			goto out;
		}
	}

	/* A chunk holds at most ~1 s of samples on every CPU (with room for
	 * bursts) and must fit comfortably in a segment. */
	max_raw = fr_ring_max_chunk(d->ring) / 2;
	if (max_raw > (1u << 20))
		max_raw = 1u << 20;
	d->builder = fr_chunk_builder_new(65536, max_raw);
	if (!d->builder) {
		fprintf(stderr, "flightrecd: out of memory\n");
		goto out;
	}
	{
		struct fr_ring_stats st;

		/* The journal's chunks are compressed again when merged. */
		fr_ring_get_stats(d->ring, &st);
		if (st.journal_size)
			fr_chunk_builder_set_level(d->builder, 1);
	}

	ret = pthread_create(&d->writer, NULL, writer_main, d);
	if (ret) {
		fprintf(stderr, "flightrecd: cannot start the writer thread: %s\n", strerror(ret));
		goto out;
	}
	/* Triggers before the socket: a manual dump is then never told that
	 * this recorder runs without them. */
	{
		char *slash;

		d->dumps_default_dir = malloc(strlen(opts->ring_path) + 8);
		if (d->dumps_default_dir) {
			strcpy(d->dumps_default_dir, opts->ring_path);
			slash = strrchr(d->dumps_default_dir, '/');
			strcpy(slash ? slash + 1 : d->dumps_default_dir, "dumps");
		}
		ret = d->dumps_default_dir ? fr_triggers_start(&d->triggers, cfg, daemon_dump, d,
							       err, sizeof(err))
					   : -ENOMEM;
		if (ret < 0)
			fr_log_err("triggers are off: %s", ret == -ENOMEM ? "out of memory" : err);
	}
	ret = fr_ipc_server_start(d->server);
	if (ret < 0) {
		fprintf(stderr, "flightrecd: cannot start the socket thread: %s\n", strerror(-ret));
		goto out_writer;
	}
	ret = fr_perf_enable(d->sideband, 1);
	if (ret < 0) {
		fprintf(stderr, "flightrecd: cannot enable the side band: %s\n", strerror(-ret));
		goto out_writer;
	}
	print_banner(d);

	ret = ingest_loop(d);
	for (unsigned i = 0; i < d->nsources; i++)
		if (d->sources[i].perf)
			fr_perf_enable(d->sources[i].perf, 0);
	status = ret < 0 ? 1 : 0;

out_writer:
	/* Stop answering before the ring goes away, then let the writer
	 * store everything queued. */
	fr_ipc_server_close(d->server);
	d->server = NULL;
	/* After the socket: a manual dump runs on a connection's thread and
	 * locks the trigger engine, so the engine goes only when no
	 * connection is left. A dump in progress finishes while the writer
	 * still runs. */
	fr_triggers_stop(d->triggers);
	d->triggers = NULL;
	pthread_mutex_lock(&d->lock);
	d->writer_stop = 1;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->writer, NULL);
	if (status == 0)
		fr_log_info("stopped; the ring %s is complete", fr_ring_path(d->ring));
out:
	fr_ipc_server_close(d->server);
	for (unsigned i = 0; i < d->nsources; i++)
		fr_perf_close(d->sources[i].perf);
	fr_perf_close(d->sideband);
	while (d->consumers) {
		struct consumer *c = d->consumers;
		d->consumers = c->next;
		free(c);
	}
	if (d->reconcile_efd >= 0)
		close(d->reconcile_efd);
	pthread_cond_destroy(&d->consumers_cond);
	pthread_mutex_destroy(&d->consumers_lock);
	pthread_mutex_destroy(&d->src_lock);
	fr_chunk_builder_free(d->builder);
	fr_tracker_free(d->tracker);
	fr_ring_close(d->ring);
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	if (d->flush_efd >= 0)
		close(d->flush_efd);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	if (d->owned_config) {
		fr_config_fini(d->owned_config);
		free(d->owned_config);
	}
	pthread_mutex_destroy(&d->sessions_lock);
	pthread_mutex_destroy(&d->config_lock);
	fr_budget_destroy(&d->query_budget);
	fr_budget_destroy(&d->users_budget);
	free(d->dumps_default_dir);
	free(d->sessions_json);
	free(d);
	return status;
}
