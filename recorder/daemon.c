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
#include <limits.h>
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

#include "core/chunk.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/profile.h"
#include "core/ring.h"
#include "core/uring.h"
#include "fr_version.h"
#include "ipc/client.h"
#include "ipc/proto.h"
#include "ipc/server.h"
#include "recorder/perf.h"
#include "recorder/tracker.h"

#define SEAL_INTERVAL_NS 1000000000LL
#define POLL_MS 100
#define QUEUE_MAX_BYTES (64u << 20)
#define FLUSH_TIMEOUT_MS 3000

struct queue_item {
	struct queue_item *next;
	void *chunk; /* NULL for a pure barrier */
	size_t len;
	uint64_t barrier; /* non-zero: barrier generation completed after this item */
};

struct daemon {
	const struct fr_daemon_options *opts;
	struct fr_ring *ring;
	struct fr_perf *perf;
	struct fr_tracker *tracker;
	struct fr_chunk_builder *builder;
	struct fr_ipc_server *server;
	int flush_efd;
	int sig_fd;

	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue changed or barrier completed */
	struct queue_item *head, *tail;
	size_t queued_bytes;
	int writer_stop;
	uint64_t barrier_req;
	uint64_t barrier_done;

	int64_t last_seal_mono;
	int64_t clock_offset;
	int64_t start_real, start_mono;
	uint32_t ncpus;

	/* Settings a reload may change (atomics). */
	int64_t max_age_ns;
	uint32_t max_rate_hz;
	int64_t reloaded_ns; /* Unix ns of the last successful reload, 0 if none */
	uint64_t reloads_rejected;
	/* The configuration in force (ingest thread only): opts->config until
	 * a reload replaces it with `owned_config`. */
	const struct fr_config *config;
	struct fr_config *owned_config;
	/* What `sessions` requests answer: a JSON array rebuilt from the
	 * configuration in force at start and on each reload. */
	pthread_mutex_t sessions_lock;
	char *sessions_json;

	/* Counters read by status requests (atomics). */
	uint64_t samples, lost, throttled, truncated, chunks_sealed, chunks_dropped,
		write_errors;
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
	return ret == ETIMEDOUT ? -ETIMEDOUT : 0;
}

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
	fr_tracker_sealed(d->tracker);
	__atomic_store_n(&d->nprocs, fr_tracker_nprocs(d->tracker), __ATOMIC_RELAXED);
	__atomic_store_n(&d->nthreads, fr_tracker_nthreads(d->tracker), __ATOMIC_RELAXED);
	if (ret == 0 || barrier)
		enqueue(d, ret == 0 ? chunk : NULL, len, barrier);
}

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct daemon *d = arg;
	int ret = fr_chunk_builder_add(d->builder, s);

	if (ret == -ENOSPC) {
		seal(d, 0);
		ret = fr_chunk_builder_add(d->builder, s);
	}
	if (ret == 0)
		__atomic_add_fetch(&d->samples, 1, __ATOMIC_RELAXED);
	if (s->nr_frames == FR_MAX_FRAMES) {
		fr_chunk_builder_count(d->builder, s->event, 0, 0, 1);
		__atomic_add_fetch(&d->truncated, 1, __ATOMIC_RELAXED);
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

	fr_chunk_builder_count(d->builder, event, lost, 0, 0);
	__atomic_add_fetch(&d->lost, lost, __ATOMIC_RELAXED);
}

static void on_throttle(void *arg, uint32_t event)
{
	struct daemon *d = arg;

	fr_chunk_builder_count(d->builder, event, 0, 1, 0);
	__atomic_add_fetch(&d->throttled, 1, __ATOMIC_RELAXED);
}

/* Publishes the sessions of `cfg` for `sessions` requests. */
static void publish_sessions(struct daemon *d, const struct fr_config *cfg)
{
	cJSON *arr = cJSON_CreateArray();
	char *text;

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
			if (!ev)
				break;
			cJSON_AddStringToObject(ev, "event", fr_event_name(sess->events[e].event));
			fr_ipc_add_int(ev, "hz", sess->events[e].hz);
			cJSON_AddItemToArray(events, ev);
		}
		/* Targets and triggers are not configurable in this version:
		 * every session records the whole machine and dumps only on
		 * request (flightrec attach). */
		cJSON_AddStringToObject(o, "targets", "all processes");
		cJSON_AddArrayToObject(o, "triggers");
		cJSON_AddNullToObject(o, "last_dump_ns");
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
	cJSON_AddItemToObject(r, "sessions", list);
	cJSON_AddStringToObject(r, "config", d->opts->config_source);
	fr_ipc_add_int(r, "cpu_hz", fr_perf_hz(d->perf));
	cJSON_AddBoolToObject(r, "hz_from_command_line", d->opts->hz_fixed);
	return r;
}

static int differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* SIGHUP: reloads the configuration file and applies what can change
 * while recording. Ingest thread. */
static void reload(struct daemon *d, const struct fr_perf_handler *handler)
{
	const struct fr_daemon_options *o = d->opts;
	const struct fr_config *old = d->config;
	struct fr_config *n;
	char err[1024], sync[32], age[32];
	uint32_t hz, was = fr_perf_hz(d->perf);
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
	    n->max_clients != old->max_clients)
		fr_log_warn("reload: ring.path, ring.size, ring.segment, socket and "
			    "limits.max_clients take effect at the next start");

	hz = o->hz_fixed ? was : fr_config_max_hz(n, FR_EVENT_CPU);
	if (!hz)
		hz = 99;
	if (hz != was) {
		/* What the kernel holds was collected at the old rate: take it
		 * first, so every sample is weighted by the rate it had. */
		fr_perf_drain(d->perf, handler, d->clock_offset);
		ret = fr_perf_set_hz(d->perf, hz);
		if (ret < 0) {
			fr_log_err("reload: cannot change the rate to %u Hz (%s); it stays %u Hz", hz,
				   strerror(-ret), was);
			hz = was;
		}
	}
	fr_ring_set_sync_interval(d->ring, n->sync_ns);
	__atomic_store_n(&d->max_age_ns, n->max_age_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&d->max_rate_hz, n->max_rate_hz, __ATOMIC_RELAXED);
	if (d->owned_config) {
		fr_config_fini(d->owned_config);
		free(d->owned_config);
	}
	d->owned_config = n;
	d->config = n;
	publish_sessions(d, n);
	__atomic_store_n(&d->reloaded_ns, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_log_info("reloaded %s: cpu at %u Hz%s, ring.sync %s, ring.max_age %s, "
		    "limits.max_rate_hz %u", o->config_path, hz,
		    o->hz_fixed ? " (--hz)" : "",
		    n->sync_ns < 0 ? "off" : fr_format_duration(n->sync_ns, sync, sizeof(sync)),
		    n->max_age_ns > 0 ? fr_format_duration(n->max_age_ns, age, sizeof(age)) : "none",
		    n->max_rate_hz);
}

static int ingest_loop(struct daemon *d)
{
	const struct fr_perf_handler handler = {
		.sample = on_sample,
		.comm = on_comm,
		.mmap = on_mmap,
		.fork = on_fork,
		.exit = on_exit_rec,
		.lost = on_lost,
		.throttle = on_throttle,
		.arg = d,
	};
	unsigned nperf = fr_perf_nfds(d->perf);
	struct pollfd *pfds = calloc(nperf + 2, sizeof(*pfds));
	int stop = 0;

	if (!pfds)
		return -ENOMEM;
	for (unsigned i = 0; i < nperf; i++)
		pfds[i] = (struct pollfd){.fd = fr_perf_fd(d->perf, i), .events = POLLIN};
	pfds[nperf] = (struct pollfd){.fd = d->flush_efd, .events = POLLIN};
	pfds[nperf + 1] = (struct pollfd){.fd = d->sig_fd, .events = POLLIN};
	d->last_seal_mono = fr_now_mono_ns();

	while (!stop) {
		uint64_t barrier = 0;

		if (poll(pfds, nperf + 2, POLL_MS) < 0 && errno != EINTR) {
			fr_log_err("poll: %s", strerror(errno));
			break;
		}
		if (pfds[nperf + 1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					reload(d, &handler);
				} else {
					fr_log_info("received %s; storing the open chunk and exiting",
						    strsignal((int)si.ssi_signo));
					stop = 1;
				}
			}
		}
		if (pfds[nperf].revents & POLLIN) {
			uint64_t n;
			if (read(d->flush_efd, &n, sizeof(n)) == sizeof(n)) {
				pthread_mutex_lock(&d->lock);
				barrier = d->barrier_req;
				pthread_mutex_unlock(&d->lock);
			}
		}
		d->clock_offset = fr_perf_clock_offset();
		fr_perf_drain(d->perf, &handler, d->clock_offset);
		if (barrier || stop ||
		    (fr_chunk_builder_samples(d->builder) > 0 &&
		     fr_now_mono_ns() - d->last_seal_mono >= SEAL_INTERVAL_NS))
			seal(d, barrier);
	}
	free(pfds);
	return 0;
}

/* ---- requests ---------------------------------------------------------- */

static cJSON *handle_status(struct daemon *d)
{
	cJSON *r = fr_ipc_ok(), *events, *ev;
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
	fr_ipc_add_int(r, "samples", (int64_t)__atomic_load_n(&d->samples, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "samples_lost", (int64_t)__atomic_load_n(&d->lost, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "chunks_sealed", (int64_t)__atomic_load_n(&d->chunks_sealed, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "chunks_dropped", (int64_t)__atomic_load_n(&d->chunks_dropped, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "write_errors", (int64_t)__atomic_load_n(&d->write_errors, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "processes", __atomic_load_n(&d->nprocs, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "threads", __atomic_load_n(&d->nthreads, __ATOMIC_RELAXED));
	events = cJSON_AddArrayToObject(r, "events");
	ev = cJSON_CreateObject();
	if (events && ev) {
		cJSON_AddStringToObject(ev, "event", "cpu");
		fr_ipc_add_int(ev, "hz", fr_perf_hz(d->perf));
		cJSON_AddStringToObject(ev, "stacks", "kernel+user");
		fr_ipc_add_int(ev, "samples", (int64_t)__atomic_load_n(&d->samples, __ATOMIC_RELAXED));
		fr_ipc_add_int(ev, "lost", (int64_t)__atomic_load_n(&d->lost, __ATOMIC_RELAXED));
		fr_ipc_add_int(ev, "throttled", (int64_t)__atomic_load_n(&d->throttled, __ATOMIC_RELAXED));
		fr_ipc_add_int(ev, "truncated_stacks", (int64_t)__atomic_load_n(&d->truncated, __ATOMIC_RELAXED));
		cJSON_AddItemToArray(events, ev);
	} else {
		cJSON_Delete(ev);
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
static int get_int(const cJSON *req, const char *key, int64_t min, int64_t max, int64_t *out,
		   cJSON **error)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble) {
		*error = fr_ipc_error("attach: \"%s\" must be an integer", key);
		return -1;
	}
	if (v->valuedouble < (double)min || v->valuedouble > (double)max) {
		*error = fr_ipc_error("attach: \"%s\" must be %lld..%lld, got %.0f", key,
				      (long long)min, (long long)max, v->valuedouble);
		return -1;
	}
	*out = (int64_t)v->valuedouble;
	return 1;
}

static cJSON *handle_attach(struct daemon *d, const cJSON *req, int fd)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	struct fr_profile_request preq;
	struct fr_profile_result res;
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = NULL;
	cJSON *resp = NULL, *warnings;
	const cJSON *pids, *format;
	int64_t window = 0, from = 0, to = 0, hz = 0, now;
	int has_window, has_from, has_to, flags, ret;
	char err[512], buf[64];

	memset(&preq, 0, sizeof(preq));
	if (fd < 0)
		return fr_ipc_error("attach needs the output file passed with the request");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		resp = fr_ipc_error("attach: the output descriptor is not open for writing");
		goto out;
	}
	if ((has_window = get_int(req, "window_ns", 1, INT64_MAX, &window, &resp)) < 0 ||
	    (has_from = get_int(req, "from_ns", 0, INT64_MAX, &from, &resp)) < 0 ||
	    (has_to = get_int(req, "to_ns", 0, INT64_MAX, &to, &resp)) < 0 ||
	    get_int(req, "hz", 0, INT32_MAX, &hz, &resp) < 0)
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
	pids = cJSON_GetObjectItemCaseSensitive(req, "pids");
	if (pids && !cJSON_IsNull(pids)) {
		const cJSON *p;
		if (!cJSON_IsArray(pids)) {
			resp = fr_ipc_error("attach: \"pids\" must be an array of process ids");
			goto out;
		}
		cJSON_ArrayForEach(p, pids) {
			if (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > INT32_MAX ||
			    p->valuedouble != (double)(int64_t)p->valuedouble) {
				resp = fr_ipc_error("attach: \"pids\" must hold positive process ids");
				goto out;
			}
			if (preq.npids == FR_PROFILE_MAX_PIDS) {
				resp = fr_ipc_error("attach: at most %d pids per request",
						    FR_PROFILE_MAX_PIDS);
				goto out;
			}
			preq.pids[preq.npids++] = (uint32_t)p->valuedouble;
		}
	}
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

	/* Samples up to the request must be in the ring before reading it. */
	ret = flush_barrier(d);
	if (ret < 0)
		fr_log_warn("flush before attach timed out; the last second may be missing");

	w = malloc(sizeof(*w));
	ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;
	if (ret < 0) {
		resp = fr_ipc_error("attach: cannot set up the output: %s", strerror(-ret));
		goto out;
	}
	fr_uring_writer_init(w, uring, fd);
	err[0] = '\0';
	ret = fr_profile_write(d->ring, &preq, fr_uring_writer_write, w, &res, err, sizeof(err));
	if (ret == 0)
		ret = fr_uring_writer_flush(w);
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
	warnings = cJSON_AddArrayToObject(resp, "warnings");
	if (warnings && res.warning[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(res.warning));
out:
	fr_uring_close(uring);
	free(w);
	close(fd);
	return resp;
}

static cJSON *handle_request(void *arg, const char *cmd, const cJSON *req, int fd,
			     const struct fr_ipc_peer *peer)
{
	struct daemon *d = arg;

	if (strcmp(cmd, "attach") == 0)
		return handle_attach(d, req, fd);
	if (fd >= 0)
		close(fd);
	if (strcmp(cmd, "status") == 0)
		return handle_status(d);
	if (strcmp(cmd, "sessions") == 0)
		return handle_sessions(d);
	return fr_ipc_error("unknown request \"%s\" (this recorder answers: attach, status, "
			    "sessions)", cmd);
}

/* ---- start and stop ---------------------------------------------------- */

static int mkdir_parents(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void print_banner(struct daemon *d)
{
	const struct fr_daemon_options *o = d->opts;
	struct fr_ring_stats st;
	char size[32], seg[32], t0[64];
	char *client_default = fr_ipc_client_socket_path();

	fr_ring_get_stats(d->ring, &st);
	printf("flightrecd %s: recording cpu at %u Hz on %u CPUs (kernel+user stacks)\n",
	       FR_VERSION, fr_perf_hz(d->perf), d->ncpus);
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
	struct fr_perf_config pcfg = {.event = FR_EVENT_CPU, .hz = opts->hz, .sideband = 1};
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
	pthread_mutex_init(&d->sessions_lock, NULL);
	publish_sessions(d, opts->config);
	d->flush_efd = d->sig_fd = -1;
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
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	d->flush_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->sig_fd < 0 || d->flush_efd < 0) {
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

	ret = mkdir_parents(opts->ring_path, 0700);
	if (ret < 0) {
		fprintf(stderr, "flightrecd: cannot create the directory of %s: %s\n",
			opts->ring_path, strerror(-ret));
		goto out;
	}
	err[0] = '\0';
	ret = fr_ring_open(&d->ring, opts->ring_path, cfg->ring_size, cfg->segment_size,
			   FR_RING_CREATE, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err[0] ? err : strerror(-ret));
		goto out;
	}
	if (err[0])
		fr_log_warn("%s", err);
	fr_ring_set_sync_interval(d->ring, cfg->sync_ns);
	d->max_age_ns = cfg->max_age_ns;
	d->max_rate_hz = cfg->max_rate_hz;
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

	ret = fr_perf_open(&d->perf, &pcfg, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		goto out;
	}
	d->ncpus = fr_perf_nfds(d->perf);

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

	ret = pthread_create(&d->writer, NULL, writer_main, d);
	if (ret) {
		fprintf(stderr, "flightrecd: cannot start the writer thread: %s\n", strerror(ret));
		goto out;
	}
	ret = fr_ipc_server_start(d->server);
	if (ret < 0) {
		fprintf(stderr, "flightrecd: cannot start the socket thread: %s\n", strerror(-ret));
		goto out_writer;
	}
	ret = fr_perf_enable(d->perf, 1);
	if (ret < 0) {
		fprintf(stderr, "flightrecd: cannot enable sampling: %s\n", strerror(-ret));
		goto out_writer;
	}
	print_banner(d);

	ret = ingest_loop(d);
	fr_perf_enable(d->perf, 0);
	status = ret < 0 ? 1 : 0;

out_writer:
	/* Stop answering before the ring goes away, then let the writer
	 * store everything queued. */
	fr_ipc_server_close(d->server);
	d->server = NULL;
	pthread_mutex_lock(&d->lock);
	d->writer_stop = 1;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->writer, NULL);
	if (status == 0)
		fr_log_info("stopped; the ring %s is complete", fr_ring_path(d->ring));
out:
	fr_ipc_server_close(d->server);
	fr_perf_close(d->perf);
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
	free(d->sessions_json);
	free(d);
	return status;
}
