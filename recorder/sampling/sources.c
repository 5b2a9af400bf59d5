/* The sources flightrecd records and the consumers that ask for them
 * (see recorder/sampling/sources.h): the table, the consumers, drain, and
 * what status shows of them (rate composition and reconcile are
 * sources_reconcile.c's).
 *
 * Invariants:
 * - Only the ingest thread changes the table, opens, retunes, drains and
 *   closes perf events; it does so under `lock` when request threads may
 *   read what changes.
 * - Every perf descriptor of an open source (and of the side band) is
 *   registered in the poller until just before it is closed.
 * - What a source's kernel rings hold is drained before the source closes
 *   or changes rate, so every sample is weighted by the rate it was
 *   taken at.
 */
#include "recorder/sampling/sources.h"
#include "recorder/sampling/sources_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/proto.h"
#include "recorder/sampling/bpf_events.h"

int fr_sources_init(struct fr_sources *s, struct fr_poller *poller,
		    const struct fr_perf_handler *handler)
{
	memset(s, 0, sizeof(*s));
	s->poller = poller;
	s->handler = handler;
	fr_mutex_init_pi(&s->lock);
	fr_mutex_init_pi(&s->consumers_lock);
	fr_mono_cond_init(&s->consumers_cond);
	s->labels_prog_fd = s->labels_map_fd = -1;
	s->py_procs_fd = s->py_threads_fd = -1;
	s->reconcile_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return s->reconcile_efd < 0 ? -errno : 0;
}

void fr_sources_fini(struct fr_sources *s)
{
	for (unsigned i = 0; i < s->n; i++)
		fr_perf_close(s->table[i].perf);
	fr_perf_close(s->sideband);
	fr_perf_close(s->oom);
	fr_bpf_events_close(s->blackbox);
	while (s->consumers) {
		struct fr_consumer *c = s->consumers;
		s->consumers = c->next;
		free(c);
	}
	if (s->reconcile_efd >= 0)
		close(s->reconcile_efd);
	pthread_cond_destroy(&s->consumers_cond);
	pthread_mutex_destroy(&s->consumers_lock);
	pthread_mutex_destroy(&s->lock);
}

/* Registers (or forgets) every CPU's descriptor of `perf` in the poller:
 * a ready perf ring only wakes the ingest thread, which drains them all. */
void sources_watch(struct fr_sources *s, struct fr_perf *perf, int on)
{
	for (unsigned i = 0; perf && i < fr_perf_nfds(perf); i++) {
		int ret = on ? fr_poller_add(s->poller, fr_perf_fd(perf, i), POLLIN, NULL, NULL)
			     : fr_poller_remove(s->poller, fr_perf_fd(perf, i));

		/* Unwatched, a ring is still drained at least every second. */
		if (ret < 0 && on)
			fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S,
					   "cannot poll a perf ring: %s; it is drained once a "
					   "second",
					   strerror(-ret));
	}
}

static void on_reconcile(int fd, short revents, void *arg)
{
	uint64_t n;

	(void)revents;
	if (read(fd, &n, sizeof(n)) == sizeof(n))
		fr_sources_reconcile(arg);
}

int fr_sources_listen(struct fr_sources *s)
{
	return fr_poller_add(s->poller, s->reconcile_efd, POLLIN, on_reconcile, s);
}

int fr_sources_open_sideband(struct fr_sources *s, char *err, size_t errlen)
{
	int ret = fr_perf_open_sideband(&s->sideband, err, errlen);

	if (ret == 0)
		sources_watch(s, s->sideband, 1);
	return ret;
}

void fr_sources_drain(struct fr_sources *s)
{
	if (s->before_drain)
		s->before_drain(s->before_drain_arg);
	s->draining = NULL;
	fr_perf_drain(s->sideband, s->handler, s->clock_offset);
	if (s->oom)
		fr_perf_drain(s->oom, s->handler, s->clock_offset);
	if (s->blackbox)
		fr_bpf_events_drain(s->blackbox, s->handler, s->clock_offset);
	for (unsigned i = 0; i < s->n; i++) {
		s->draining = &s->table[i];
		if (s->table[i].perf)
			fr_perf_drain(s->table[i].perf, s->handler, s->clock_offset);
	}
	s->draining = NULL;
}

struct fr_source *fr_sources_find(struct fr_sources *s, uint32_t event)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->table[i].event == event)
			return &s->table[i];
	return NULL;
}

int fr_sources_state(struct fr_sources *s, uint32_t event, char *err, size_t errlen)
{
	struct fr_source *src;
	uint32_t extra = 0;
	int state = 0;

	/* Memory events open no perf source: alloc and heap come from the
	 * processes' rings while a consumer asks them, the others from the
	 * memory samplers, always. */
	if (fr_event_is_memory(event))
		return event == FR_EVENT_ALLOC || event == FR_EVENT_HEAP
			       ? fr_sources_alloc_mean(s) != 0
			       : 1;
	/* exec, exit and crash: the black box's program, always. */
	if (event >= FR_EVENT_EXEC && event <= FR_EVENT_CRASH) {
		if (s->blackbox)
			return 1;
		snprintf(err, errlen, "%s", s->blackbox_ev[event - FR_EVENT_EXEC].error);
		return err[0] ? -1 : 0;
	}
	/* wakeup and runqueue are recorded by offcpu's program when it was
	 * opened with them. */
	if (event == FR_EVENT_WAKEUP || event == FR_EVENT_RUNQUEUE)
		extra = event == FR_EVENT_WAKEUP ? FR_PERF_OFFCPU_WAKEUP : FR_PERF_OFFCPU_RUNQUEUE;
	pthread_mutex_lock(&s->lock);
	src = fr_sources_find(s, extra ? FR_EVENT_OFFCPU : event);
	if (src && src->perf && extra && !(src->offcpu_extra & extra)) {
		state = 0;
	} else if (src && src->perf) {
		state = 1;
	} else if (src) {
		snprintf(err, errlen, "%s", src->error);
		state = -1;
	}
	pthread_mutex_unlock(&s->lock);
	return state;
}

uint32_t fr_sources_hz(struct fr_sources *s, uint32_t event)
{
	struct fr_source *src;
	uint32_t hz = 0;

	pthread_mutex_lock(&s->lock);
	src = fr_sources_find(s, event);
	if (src)
		hz = src->hz;
	pthread_mutex_unlock(&s->lock);
	return hz;
}

uint64_t fr_sources_alloc_mean(const struct fr_sources *s)
{
	return __atomic_load_n(&s->alloc_mean, __ATOMIC_RELAXED);
}

uint64_t fr_sources_offcpu_labels_dropped(struct fr_sources *s)
{
	struct fr_perf_offcpu_stats st = {0};
	struct fr_source *src;

	pthread_mutex_lock(&s->lock);
	src = fr_sources_find(s, FR_EVENT_OFFCPU);
	if (src && src->perf)
		fr_perf_offcpu_stats(src->perf, &st);
	pthread_mutex_unlock(&s->lock);
	return st.mechanism == FR_PERF_OFFCPU_BPF ? st.label_drops : 0;
}

void fr_sources_enable(struct fr_sources *s, int on)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->table[i].perf)
			fr_perf_enable(s->table[i].perf, on);
}

const char *fr_sources_all_failed(struct fr_sources *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->table[i].perf)
			return NULL;
	return s->n ? s->table[0].error : NULL;
}

/* ---- consumers ---------------------------------------------------------- */

/* Asks the ingest thread to bring the sources in line with the consumers.
 * Returns the generation to wait for. Under consumers_lock. */
static uint64_t consumers_changed_locked(struct fr_sources *s)
{
	uint64_t one = 1, gen = ++s->consumers_gen;

	if (write(s->reconcile_efd, &one, sizeof(one)) < 0)
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "cannot wake the ingest thread: %s", strerror(errno));
	return gen;
}

int fr_sources_wait_reconciled(struct fr_sources *s, uint64_t gen)
{
	struct timespec deadline;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += FR_SOURCES_RECONCILE_TIMEOUT_MS / 1000;
	pthread_mutex_lock(&s->consumers_lock);
	while (s->reconciled_gen < gen && ret == 0)
		ret = pthread_cond_timedwait(&s->consumers_cond, &s->consumers_lock, &deadline);
	pthread_mutex_unlock(&s->consumers_lock);
	return ret == ETIMEDOUT ? -ETIMEDOUT : 0;
}

uint64_t fr_consumer_add(struct fr_sources *s, struct fr_consumer *c)
{
	uint64_t gen;

	c->sources = s;
	c->since_ns = fr_now_real_ns();
	pthread_mutex_lock(&s->consumers_lock);
	c->next = s->consumers;
	s->consumers = c;
	gen = consumers_changed_locked(s);
	pthread_mutex_unlock(&s->consumers_lock);
	return gen;
}

void fr_consumer_remove(struct fr_sources *s, struct fr_consumer *c)
{
	pthread_mutex_lock(&s->consumers_lock);
	for (struct fr_consumer **pp = &s->consumers; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	consumers_changed_locked(s);
	pthread_mutex_unlock(&s->consumers_lock);
	free(c);
}

void fr_consumer_release(void *hold)
{
	struct fr_consumer *c = hold;

	fr_log_info("%s left; rates follow the remaining consumers", c->name);
	fr_consumer_remove(c->sources, c);
}

/* The consumer of one configured session. */
static struct fr_consumer *session_consumer(struct fr_sources *s,
					    const struct fr_config_session *sess, int hz_fixed,
					    uint32_t hz)
{
	struct fr_consumer *c = calloc(1, sizeof(*c));

	if (!c) {
		fr_log_err("out of memory; session %s is not recorded", sess->name);
		return NULL;
	}
	c->sources = s;
	c->session = 1;
	c->since_ns = fr_now_real_ns();
	snprintf(c->name, sizeof(c->name), "session %s", sess->name);
	c->uid = (uid_t)-1;
	for (uint32_t e = 0; e < sess->nevents && c->nevents < FR_LIMIT_EVENTS; e++) {
		c->events[c->nevents] = sess->events[e].event;
		c->hz[c->nevents] =
			sess->events[e].event == FR_EVENT_CPU && hz_fixed ? hz : sess->events[e].hz;
		c->unwind[c->nevents] = (uint8_t)(sess->events[e].unwind + 1);
		c->stack_copy[c->nevents] = sess->events[e].stack_copy;
		c->period[c->nevents] = sess->events[e].period;
		c->mechanism[c->nevents] = (uint8_t)(sess->events[e].mechanism + 1);
		c->min_wait_ns[c->nevents] = sess->events[e].min_wait_ns;
		c->mean[c->nevents] = sess->events[e].mean;
		c->nevents++;
	}
	return c;
}

void fr_sources_set_sessions(struct fr_sources *s, const struct fr_config *cfg, int hz_fixed,
			     uint32_t hz)
{
	struct fr_consumer *list = NULL;

	for (uint32_t i = 0; i < cfg->nsessions; i++) {
		struct fr_consumer *c = session_consumer(s, &cfg->sessions[i], hz_fixed, hz);

		if (!c)
			continue;
		c->next = list;
		list = c;
	}
	pthread_mutex_lock(&s->consumers_lock);
	for (struct fr_consumer **pp = &s->consumers; *pp;) {
		struct fr_consumer *c = *pp;
		if (c->session) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
	while (list) {
		struct fr_consumer *c = list;
		list = c->next;
		c->next = s->consumers;
		s->consumers = c;
	}
	consumers_changed_locked(s);
	pthread_mutex_unlock(&s->consumers_lock);
}

/* "1ms of CPU time" (cpu periods are nanoseconds of it) or "1000 events". */
const char *sources_period_text(uint32_t event, uint64_t period, char *buf, size_t len)
{
	if (event != FR_EVENT_CPU) {
		snprintf(buf, len, "%llu events", (unsigned long long)period);
		return buf;
	}
	fr_format_duration((int64_t)period, buf, len);
	snprintf(buf + strlen(buf), len - strlen(buf), " of CPU time");
	return buf;
}

/* ---- what status shows ------------------------------------------------- */

void fr_sources_describe(struct fr_sources *s, int failed, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < s->n && used < len; i++) {
		const struct fr_source *src = &s->table[i];
		char name[FR_EVENT_NAME_MAX], every[48];
		int k = 0;

		fr_event_format(src->event, name, sizeof(name));
		if (!src->perf && failed)
			k = snprintf(buf + used, len - used, "%s%s not recording", used ? ", " : "",
				     name);
		else if (src->perf && src->period)
			k = snprintf(buf + used, len - used, "%s%s every %s", used ? ", " : "",
				     name,
				     sources_period_text(src->event, src->period, every,
							 sizeof(every)));
		else if (src->perf && src->hz)
			k = snprintf(buf + used, len - used, "%s%s at %u Hz", used ? ", " : "",
				     name, src->hz);
		else if (src->perf)
			k = snprintf(buf + used, len - used, "%s%s at every context switch",
				     used ? ", " : "", name);
		used += k > 0 ? (size_t)k : 0;
	}
}

/* "unwind", "stack_copy" and, with a stack copy, "unwinding": how the
 * user stacks ended (enum fr_unwind_end), samples without user
 * registers, malformed records. */
static void unwind_status(struct fr_ipc_event_status *ev, const struct fr_source *src)
{
	struct fr_perf_unwind_stats st;
	struct fr_ipc_unwinding *u = &ev->unwinding;

	ev->has_unwind = 1;
	snprintf(ev->unwind, sizeof(ev->unwind), "%s", src->stack_copy ? "dwarf" : "fp");
	if (!src->stack_copy)
		return;
	ev->stack_copy = src->stack_copy;
	fr_perf_unwind_stats(src->perf, &st);
	u->stacks = st.stacks;
	u->done = st.ends[FR_UNWIND_DONE];
	u->stack_copy = st.ends[FR_UNWIND_STACK_COPY];
	u->no_cfi = st.ends[FR_UNWIND_NO_CFI];
	u->pending = st.ends[FR_UNWIND_PENDING];
	u->bad = st.ends[FR_UNWIND_BAD];
	u->max_depth = st.ends[FR_UNWIND_MAX_DEPTH];
	u->no_user_regs = st.no_regs;
	u->bad_records = st.bad_records;
}

/* An offcpu source's cost counters: what it did with the switches seen,
 * so that what recording every switch costs is visible. */
static void offcpu_status(struct fr_ipc_offcpu *o, const struct fr_source *src)
{
	struct fr_perf_offcpu_stats st;
	const char *fallback = fr_perf_offcpu_fallback(src->perf);

	fr_perf_offcpu_stats(src->perf, &st);
	o->switch_outs = st.switch_outs;
	o->switch_ins = st.switch_ins;
	o->samples = st.samples;
	o->evicted = st.evicted;
	o->waiting = st.waiting;
	o->capacity = st.capacity;
	snprintf(o->mechanism, sizeof(o->mechanism), "%s",
		 st.mechanism == FR_PERF_OFFCPU_BPF ? "bpf" : "perf");
	snprintf(o->fallback, sizeof(o->fallback), "%s", fallback ? fallback : "");
	if (st.mechanism != FR_PERF_OFFCPU_BPF)
		return;
	o->has_bpf = 1;
	o->min_wait_ns = st.min_wait_ns;
	snprintf(o->user_stacks_by, sizeof(o->user_stacks_by), "%s",
		 st.user_stacks_by_task_work ? "task_work" : "sys_exit");
	o->long_waits = st.long_waits;
	o->user_stacks = st.user_stacks;
	o->no_user_stack = st.no_user;
	o->short_records = st.short_records;
	/* Waits lost (in the event's lost too), their time, and labels
	 * records dropped (waits kept without labels). */
	o->ringbuf_drops = st.drops;
	o->ringbuf_dropped_ns = st.dropped_ns;
	o->labels_dropped = st.label_drops;
	o->short_retries = st.short_retries;
	o->open_listed = st.open_listed;
	o->open_runnable = st.open_runnable;
	o->stack_walks = st.walks;
	o->stack_walks_dropped = st.walks_dropped;
	o->has_wake = st.extra != 0;
	o->wakes = st.wakes;
	o->wakes_dropped = st.wake_drops;
	o->wakes_irq = st.wakes_irq;
	o->wakes_joined = st.wakes_joined;
	o->wakes_unlabelled = st.wakes_unjoined;
	o->runqueue_samples = st.rq_samples;
	o->runqueue_short = st.rq_short;
	if (!st.stack_copy)
		return;
	o->has_copies = 1;
	o->stack_copies = st.copies;
	o->stack_copies_short = st.copies_short;
	o->stack_walk_copies_short = st.walk_copies_short;
}

/* One element of "events". */
static void source_status(struct fr_ipc_event_status *ev, const struct fr_source *src)
{
	fr_event_format(src->event, ev->event, sizeof(ev->event));
	snprintf(ev->unit, sizeof(ev->unit), "%s", fr_event_unit(src->event));
	snprintf(ev->state, sizeof(ev->state), "%s", src->perf ? "recording" : "failed");
	if (!src->perf) {
		ev->has_error = 1;
		snprintf(ev->error, sizeof(ev->error), "%s", src->error);
	}
	ev->hz = src->perf ? __atomic_load_n(&src->hz, __ATOMIC_RELAXED) : 0;
	if (src->perf)
		ev->period = __atomic_load_n(&src->period, __ATOMIC_RELAXED);
	ev->every_switch = !fr_event_has_rate(src->event);
	ev->since_ns = src->since_ns;
	snprintf(ev->stacks, sizeof(ev->stacks), "kernel+user");
	ev->samples = __atomic_load_n(&src->samples, __ATOMIC_RELAXED);
	ev->lost = __atomic_load_n(&src->lost, __ATOMIC_RELAXED);
	ev->throttled = __atomic_load_n(&src->throttled, __ATOMIC_RELAXED);
	ev->truncated_stacks = __atomic_load_n(&src->truncated, __ATOMIC_RELAXED);
	if (!src->perf)
		return;
	unwind_status(ev, src);
	ev->has_offcpu = src->event == FR_EVENT_OFFCPU;
	ev->has_pmu = !ev->has_offcpu;
	if (ev->has_offcpu)
		offcpu_status(&ev->offcpu, src);
	else
		fr_source_pmu_status(&ev->pmu, src);
}

/* One element of "consumers". Another user's client is "a client", without
 * its uid, to a viewer who is not privileged: which processes of others
 * follow is not theirs to see. */
static void consumer_status(struct fr_ipc_consumer_status *o, const struct fr_consumer *c,
			    int privileged, uid_t viewer_uid)
{
	int hidden = !privileged && c->uid != (uid_t)-1 && c->uid != viewer_uid;

	snprintf(o->name, sizeof(o->name), "%s", hidden ? "a client" : c->name);
	o->has_uid = c->uid != (uid_t)-1 && !hidden;
	o->uid = o->has_uid ? c->uid : 0;
	o->since_ns = c->since_ns;
	for (uint32_t e = 0; e < c->nevents && e < FR_LIMIT_EVENTS; e++) {
		struct fr_ipc_event_rate *r = &o->events[o->nevents++];

		fr_event_format(c->events[e], r->event, sizeof(r->event));
		r->hz = c->hz[e];
		r->period = c->period[e];
	}
}

int fr_sources_status(struct fr_sources *s, struct fr_ipc_recording *out, int privileged,
		      uid_t viewer_uid)
{
	uint32_t n = 0;

	out->events = calloc(FR_SOURCES_MAX + FR_SOURCES_MEMORY_EVENTS + FR_SOURCES_BLACKBOX_EVENTS,
			     sizeof(*out->events));
	if (!out->events)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->n && i < FR_SOURCES_MAX; i++)
		source_status(&out->events[out->nevents++], &s->table[i]);
	pthread_mutex_unlock(&s->lock);
	out->nevents += fr_sources_memory_status(s, &out->events[out->nevents]);
	out->nevents += fr_sources_blackbox_status(s, &out->events[out->nevents]);

	/* Counted, then filled, under one hold of the lock: the list may
	 * change between two holds. */
	pthread_mutex_lock(&s->consumers_lock);
	for (const struct fr_consumer *c = s->consumers; c; c = c->next)
		n++;
	out->consumers = n ? calloc(n, sizeof(*out->consumers)) : NULL;
	for (const struct fr_consumer *c = s->consumers; out->consumers && c; c = c->next)
		consumer_status(&out->consumers[out->nconsumers++], c, privileged, viewer_uid);
	pthread_mutex_unlock(&s->consumers_lock);
	return n && !out->consumers ? -ENOMEM : 0;
}
