/* flightrecd: start and stop, the writer thread, ingest, consumers and
 * rate composition (requests: recorder/requests.c).
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
#include "recorder/writer.h"
#include "recorder/daemon_int.h"

/* Asks the ingest thread to seal and waits until the writer stored it.
 * Returns 0, or -ETIMEDOUT. */
int daemon_flush_barrier(struct daemon *d)
{
	uint64_t one = 1, target = fr_writer_barrier_ask(&d->writer);

	if (write(d->flush_efd, &one, sizeof(one)) < 0)
		return -errno;
	if (fr_writer_barrier_wait(&d->writer, target, FLUSH_TIMEOUT_MS) < 0) {
		__atomic_add_fetch(&d->flush_timeouts, 1, __ATOMIC_RELAXED);
		return -ETIMEDOUT;
	}
	return 0;
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
	__atomic_store_n(&d->last_seal_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_tracker_sealed(d->tracker);
	__atomic_store_n(&d->nprocs, fr_tracker_nprocs(d->tracker), __ATOMIC_RELAXED);
	__atomic_store_n(&d->nthreads, fr_tracker_nthreads(d->tracker), __ATOMIC_RELAXED);
	if (ret == 0 || barrier)
		fr_writer_enqueue(&d->writer, ret == 0 ? chunk : NULL, len, barrier);
}

/* The source of `event`, or NULL. Ingest thread (or under src_lock). */
struct source *daemon_find_source(struct daemon *d, uint32_t event)
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
int daemon_wait_reconciled(struct daemon *d, uint64_t gen)
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
uint64_t daemon_consumer_add(struct daemon *d, struct consumer *c)
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
void daemon_consumer_remove(struct daemon *d, struct consumer *c)
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
void daemon_consumer_release(void *hold)
{
	struct consumer *c = hold;

	fr_log_info("%s left; rates follow the remaining consumers", c->name);
	daemon_consumer_remove(c->d, c);
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
		struct source *src = daemon_find_source(d, w.event[k]);
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
int daemon_add_recording(struct daemon *d, cJSON *r)
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

cJSON *daemon_handle_sessions(struct daemon *d)
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
		cpu = daemon_find_source(d, FR_EVENT_CPU);
		if (cpu && cpu->perf)
			hz = cpu->hz;
		pthread_mutex_unlock(&d->src_lock);
		fr_ipc_add_int(r, "cpu_hz", hz);
	}
	if (!daemon_add_recording(d, r)) {
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
	__atomic_store_n(&d->writer.max_age_ns, n->max_age_ns, __ATOMIC_RELAXED);
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
			barrier = fr_writer_barrier_asked(&d->writer);
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

/* Allocates the daemon's state, its locks and what other threads read. */
static struct daemon *daemon_new(const struct fr_daemon_options *opts)
{
	struct daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
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
	fr_mono_cond_init(&d->consumers_cond);
	d->start_real = fr_now_real_ns();
	d->start_mono = fr_now_mono_ns();
	fr_writer_init(&d->writer, opts->config->max_age_ns);
	d->max_rate_hz = opts->config->max_rate_hz;
	d->user_max_rate_hz = opts->config->user_max_rate_hz;
	d->admin_gid = opts->config->has_admin_group ? (int64_t)opts->config->admin_gid : -1;
	return d;
}

/* Blocks the signals the daemon reads from sig_fd, in every thread to
 * come, and makes its event descriptors. Returns 0 or -1 after saying
 * why. */
static int daemon_signals(struct daemon *d)
{
	sigset_t mask;

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
		return -1;
	}
	return 0;
}

/* The socket, then the ring. The socket first: if a live recorder answers
 * there, it owns the ring too, and neither may be touched. Returns 0 or
 * -1 after saying why. */
static int daemon_open_files(struct daemon *d)
{
	const struct fr_daemon_options *opts = d->opts;
	const struct fr_config *cfg = opts->config;
	char err[1024] = "";
	int ret;

	ret = fr_ipc_server_open(&d->server, opts->socket_path, cfg->max_clients,
				 daemon_handle_request, d, err, sizeof(err));
	if (ret == 0 && cfg->has_socket_group)
		ret = fr_ipc_server_share(d->server, (gid_t)cfg->socket_gid, err, sizeof(err));
	if (ret == 0)
		ret = fr_mkdir_parent(opts->ring_path, 0700, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		return -1;
	}
	ret = fr_ring_open(&d->ring, opts->ring_path, cfg->ring_size, cfg->segment_size,
			   FR_RING_CREATE | FR_RING_JOURNAL, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err[0] ? err : strerror(-ret));
		return -1;
	}
	if (err[0])
		fr_log_warn("%s", err);
	fr_ring_set_sync_interval(d->ring, cfg->sync_ns);
	return 0;
}

/* The tracker, the side band, the sessions' sources and the chunk
 * builder. Returns 0 or -1 after saying why. */
static int daemon_open_recording(struct daemon *d)
{
	char err[1024];
	struct fr_ring_stats st;
	unsigned open = 0;
	size_t max_raw;
	int ret, n;

	d->tracker = fr_tracker_new();
	if (!d->tracker) {
		fprintf(stderr, "flightrecd: out of memory\n");
		return -1;
	}
	n = fr_tracker_scan(d->tracker, "/proc");
	if (n < 0)
		fr_log_warn("cannot scan /proc: %s; processes are learned as they run",
			    strerror(-n));
	ret = fr_perf_open_sideband(&d->sideband, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		return -1;
	}
	d->ncpus = fr_perf_nfds(d->sideband);
	/* The sessions' events: each that cannot be opened is reported and
	 * the others record; with none at all there is nothing to run. */
	set_session_consumers(d, d->opts->config);
	reconcile(d);
	for (unsigned i = 0; i < d->nsources; i++)
		open += d->sources[i].perf != NULL;
	if (d->nsources && !open) {
		fprintf(stderr, "flightrecd: %s\n", d->sources[0].error);
		return -1;
	}
	/* A chunk holds at most ~1 s of samples on every CPU (with room for
	 * bursts) and must fit comfortably in a segment. */
	max_raw = fr_ring_max_chunk(d->ring) / 2;
	if (max_raw > (1u << 20))
		max_raw = 1u << 20;
	d->builder = fr_chunk_builder_new(65536, max_raw);
	if (!d->builder) {
		fprintf(stderr, "flightrecd: out of memory\n");
		return -1;
	}
	/* The journal's chunks are compressed again when merged. */
	fr_ring_get_stats(d->ring, &st);
	if (st.journal_size)
		fr_chunk_builder_set_level(d->builder, 1);
	return 0;
}

/* The trigger engine, writing dumps beside the ring unless configured
 * otherwise. Without it the daemon records all the same. */
static void daemon_start_triggers(struct daemon *d)
{
	const char *ring_path = d->opts->ring_path;
	char err[1024], *slash;
	int ret = -ENOMEM;

	d->dumps_default_dir = malloc(strlen(ring_path) + 8);
	if (d->dumps_default_dir) {
		strcpy(d->dumps_default_dir, ring_path);
		slash = strrchr(d->dumps_default_dir, '/');
		strcpy(slash ? slash + 1 : d->dumps_default_dir, "dumps");
		ret = fr_triggers_start(&d->triggers, d->opts->config, daemon_dump, d, err,
					sizeof(err));
	}
	if (ret < 0)
		fr_log_err("triggers are off: %s", ret == -ENOMEM ? "out of memory" : err);
}

/* Stops answering before the ring goes away, then lets the writer store
 * everything queued. */
static void daemon_stop(struct daemon *d)
{
	fr_ipc_server_close(d->server);
	d->server = NULL;
	/* After the socket: a manual dump runs on a connection's thread and
	 * locks the trigger engine, so the engine goes only when no
	 * connection is left. A dump in progress finishes while the writer
	 * still runs. */
	fr_triggers_stop(d->triggers);
	d->triggers = NULL;
	fr_writer_stop(&d->writer);
}

static void daemon_free(struct daemon *d)
{
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
	fr_writer_fini(&d->writer);
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
}

int fr_daemon_run(const struct fr_daemon_options *opts)
{
	struct daemon *d = daemon_new(opts);
	int ret, status = 1;

	if (!d) {
		fprintf(stderr, "flightrecd: out of memory\n");
		return 1;
	}
	if (daemon_signals(d) < 0 || daemon_open_files(d) < 0 || daemon_open_recording(d) < 0)
		goto out;
	ret = fr_writer_start(&d->writer, d->ring);
	if (ret < 0) {
		fprintf(stderr, "flightrecd: cannot start the writer thread: %s\n", strerror(-ret));
		goto out;
	}
	/* Triggers before the socket: a manual dump is then never told that
	 * this recorder runs without them. */
	daemon_start_triggers(d);
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
	daemon_stop(d);
	if (status == 0)
		fr_log_info("stopped; the ring %s is complete", fr_ring_path(d->ring));
out:
	daemon_free(d);
	return status;
}
