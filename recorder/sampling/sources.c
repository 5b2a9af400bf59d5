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
	s->reconcile_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return s->reconcile_efd < 0 ? -errno : 0;
}

void fr_sources_fini(struct fr_sources *s)
{
	for (unsigned i = 0; i < s->n; i++)
		fr_perf_close(s->table[i].perf);
	fr_perf_close(s->sideband);
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
	int state = 0;

	pthread_mutex_lock(&s->lock);
	src = fr_sources_find(s, event);
	if (src && src->perf) {
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
 * registers, malformed records. Returns 0 out of memory. */
static int add_unwind_json(cJSON *ev, const struct fr_source *src)
{
	static const char *const end_keys[FR_UNWIND_END_COUNT] = {
		[FR_UNWIND_DONE] = "done",     [FR_UNWIND_STACK_COPY] = "stack_copy",
		[FR_UNWIND_NO_CFI] = "no_cfi", [FR_UNWIND_PENDING] = "pending",
		[FR_UNWIND_BAD] = "bad",       [FR_UNWIND_MAX_DEPTH] = "max_depth",
	};
	struct fr_perf_unwind_stats st;
	cJSON *u, *ends;

	cJSON_AddStringToObject(ev, "unwind", src->stack_copy ? "dwarf" : "fp");
	if (!src->stack_copy)
		return 1;
	fr_ipc_add_int(ev, "stack_copy", src->stack_copy);
	fr_perf_unwind_stats(src->perf, &st);
	u = cJSON_AddObjectToObject(ev, "unwinding");
	ends = u ? cJSON_AddObjectToObject(u, "ends") : NULL;
	if (!ends)
		return 0;
	fr_ipc_add_int(u, "stacks", (int64_t)st.stacks);
	for (int e = 0; e < FR_UNWIND_END_COUNT; e++)
		fr_ipc_add_int(ends, end_keys[e], (int64_t)st.ends[e]);
	fr_ipc_add_int(u, "no_user_regs", (int64_t)st.no_regs);
	fr_ipc_add_int(u, "bad_records", (int64_t)st.bad_records);
	return 1;
}

/* An offcpu source's cost counters: what it did with the switches seen,
 * so that what recording every switch costs is visible. */
static void add_offcpu_json(cJSON *ev, const struct fr_source *src)
{
	struct fr_perf_offcpu_stats st;
	cJSON *o = cJSON_AddObjectToObject(ev, "offcpu");

	if (!o)
		return;
	fr_perf_offcpu_stats(src->perf, &st);
	fr_ipc_add_int(o, "switch_outs", (int64_t)st.switch_outs);
	fr_ipc_add_int(o, "switch_ins", (int64_t)st.switch_ins);
	fr_ipc_add_int(o, "samples", (int64_t)st.samples);
	fr_ipc_add_int(o, "evicted", (int64_t)st.evicted);
	fr_ipc_add_int(o, "waiting", st.waiting);
	fr_ipc_add_int(o, "capacity", st.capacity);
	cJSON_AddStringToObject(o, "mechanism",
				st.mechanism == FR_PERF_OFFCPU_BPF ? "bpf" : "perf");
	if (fr_perf_offcpu_fallback(src->perf))
		cJSON_AddStringToObject(o, "fallback", fr_perf_offcpu_fallback(src->perf));
	if (st.mechanism != FR_PERF_OFFCPU_BPF)
		return;
	fr_ipc_add_int(o, "min_wait_ns", (int64_t)st.min_wait_ns);
	cJSON_AddStringToObject(o, "user_stacks_by",
				st.user_stacks_by_task_work ? "task_work" : "sys_exit");
	fr_ipc_add_int(o, "long_waits", (int64_t)st.long_waits);
	fr_ipc_add_int(o, "user_stacks", (int64_t)st.user_stacks);
	fr_ipc_add_int(o, "no_user_stack", (int64_t)st.no_user);
	fr_ipc_add_int(o, "short_records", (int64_t)st.short_records);
	/* Waits lost (in the event's lost too), their time, and labels
	 * records dropped (waits kept without labels). */
	fr_ipc_add_int(o, "ringbuf_drops", (int64_t)st.drops);
	fr_ipc_add_int(o, "ringbuf_dropped_ns", (int64_t)st.dropped_ns);
	fr_ipc_add_int(o, "labels_dropped", (int64_t)st.label_drops);
	fr_ipc_add_int(o, "short_retries", (int64_t)st.short_retries);
	fr_ipc_add_int(o, "open_listed", (int64_t)st.open_listed);
	fr_ipc_add_int(o, "open_runnable", (int64_t)st.open_runnable);
	fr_ipc_add_int(o, "stack_walks", (int64_t)st.walks);
	fr_ipc_add_int(o, "stack_walks_dropped", (int64_t)st.walks_dropped);
	if (!st.stack_copy)
		return;
	fr_ipc_add_int(o, "stack_copies", (int64_t)st.copies);
	fr_ipc_add_int(o, "stack_copies_short", (int64_t)st.copies_short);
	fr_ipc_add_int(o, "stack_walk_copies_short", (int64_t)st.walk_copies_short);
}

/* One element of "events". */
static cJSON *source_json(const struct fr_source *src)
{
	cJSON *ev = cJSON_CreateObject();
	char name[FR_EVENT_NAME_MAX];

	if (!ev)
		return NULL;
	cJSON_AddStringToObject(ev, "event", fr_event_format(src->event, name, sizeof(name)));
	cJSON_AddStringToObject(ev, "unit", fr_event_unit(src->event));
	cJSON_AddStringToObject(ev, "state", src->perf ? "recording" : "failed");
	if (!src->perf)
		cJSON_AddStringToObject(ev, "error", src->error);
	fr_ipc_add_int(ev, "hz", src->perf ? __atomic_load_n(&src->hz, __ATOMIC_RELAXED) : 0);
	if (src->perf && src->period)
		fr_ipc_add_int(ev, "period",
			       (int64_t)__atomic_load_n(&src->period, __ATOMIC_RELAXED));
	cJSON_AddBoolToObject(ev, "every_switch", !fr_event_has_rate(src->event));
	fr_ipc_add_int(ev, "since_ns", src->since_ns);
	cJSON_AddStringToObject(ev, "stacks", "kernel+user");
	fr_ipc_add_int(ev, "samples", (int64_t)__atomic_load_n(&src->samples, __ATOMIC_RELAXED));
	fr_ipc_add_int(ev, "lost", (int64_t)__atomic_load_n(&src->lost, __ATOMIC_RELAXED));
	fr_ipc_add_int(ev, "throttled",
		       (int64_t)__atomic_load_n(&src->throttled, __ATOMIC_RELAXED));
	fr_ipc_add_int(ev, "truncated_stacks",
		       (int64_t)__atomic_load_n(&src->truncated, __ATOMIC_RELAXED));
	if (src->perf)
		add_unwind_json(ev, src); /* out of memory: the reply goes without it */
	if (src->perf && src->event == FR_EVENT_OFFCPU)
		add_offcpu_json(ev, src);
	else if (src->perf)
		fr_source_pmu_json(ev, src);
	return ev;
}

/* One element of "consumers". Another user's client is "a client", without
 * its uid, to a viewer who is not privileged: which processes of others
 * follow is not theirs to see. */
static cJSON *consumer_json(const struct fr_consumer *c, int privileged, uid_t viewer_uid)
{
	int hidden = !privileged && c->uid != (uid_t)-1 && c->uid != viewer_uid;
	char name[FR_EVENT_NAME_MAX];
	cJSON *o = cJSON_CreateObject(), *evs;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "name", hidden ? "a client" : c->name);
	if (c->uid != (uid_t)-1 && !hidden)
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
		if (c->period[e])
			fr_ipc_add_int(ev, "period", (int64_t)c->period[e]);
	}
	return o;
}

int fr_sources_add_json(struct fr_sources *s, cJSON *r, int privileged, uid_t viewer_uid)
{
	cJSON *events = cJSON_AddArrayToObject(r, "events");
	cJSON *consumers = cJSON_AddArrayToObject(r, "consumers");

	if (!events || !consumers)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->n; i++) {
		cJSON *ev = source_json(&s->table[i]);

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
	}
	pthread_mutex_unlock(&s->lock);

	pthread_mutex_lock(&s->consumers_lock);
	for (const struct fr_consumer *c = s->consumers; c; c = c->next) {
		cJSON *o = consumer_json(c, privileged, viewer_uid);

		if (!o)
			break;
		cJSON_AddItemToArray(consumers, o);
	}
	pthread_mutex_unlock(&s->consumers_lock);
	return 1;
}
