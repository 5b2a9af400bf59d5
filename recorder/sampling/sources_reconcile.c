/* Rate composition and reconcile (see recorder/sampling/sources.h): what
 * the consumers want, composed per event, and the ingest thread bringing
 * the open sources to it (open, retune, close), draining a source's rings
 * before it closes or changes rate so every sample keeps the weight of
 * the rate it was taken at.
 */
#include "recorder/sampling/sources.h"
#include "recorder/sampling/sources_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"

/* What the consumers want: the events and, for each, the highest rate,
 * and how its stacks are unwound: with a stack copy if any consumer asks
 * for one (the largest asked), with frame pointers if all that say
 * anything say so, as the event's default when nobody says. */
struct wants {
	unsigned n;
	uint32_t event[FR_SOURCES_MAX];
	uint32_t hz[FR_SOURCES_MAX];
	uint64_t period[FR_SOURCES_MAX]; /* the smallest asked; 0: none */
	bool dwarf[FR_SOURCES_MAX], fp[FR_SOURCES_MAX];
	uint32_t stack_copy[FR_SOURCES_MAX];
	/* offcpu: perf if any consumer asks for it, with the largest stack
	 * copy those asking for perf ask (0: frame pointers; a copy at every
	 * switch only when asked with it), else bpf with the smallest
	 * min_wait asked (-1: nobody said). */
	bool perf[FR_SOURCES_MAX];
	uint32_t perf_copy[FR_SOURCES_MAX];
	int64_t min_wait[FR_SOURCES_MAX];
	/* wakeup and runqueue ride on offcpu's eBPF program: asked for, they
	 * want offcpu and these (FR_PERF_OFFCPU_WAKEUP, _RUNQUEUE). */
	uint32_t offcpu_extra;
	/* alloc or heap asked, and the smallest mean asked (0: none said). */
	bool alloc;
	uint64_t alloc_mean;
};

/* The stack copy event k of `w` is to be opened with (0: frame pointers). */
static uint32_t wanted_stack_copy(const struct wants *w, unsigned k)
{
	struct fr_config_event def = {.event = w->event[k]};

	if (w->dwarf[k])
		return w->stack_copy[k];
	if (w->fp[k])
		return 0;
	fr_config_event_defaults(&def);
	return def.stack_copy;
}

/* Adds what `c` wants to `w`. Under consumers_lock. */
static void want_consumer(struct wants *w, const struct fr_consumer *c)
{
	for (uint32_t e = 0; e < c->nevents; e++) {
		uint32_t event = c->events[e];
		bool extra = false; /* wakeup or runqueue: offcpu's own settings */
		unsigned i;

		if (c->follows_only && !fr_event_has_rate(event))
			continue;
		if (event == FR_EVENT_WAKEUP || event == FR_EVENT_RUNQUEUE) {
			w->offcpu_extra |= event == FR_EVENT_WAKEUP ? FR_PERF_OFFCPU_WAKEUP
								    : FR_PERF_OFFCPU_RUNQUEUE;
			event = FR_EVENT_OFFCPU;
			extra = true;
		}
		/* No perf source: alloc's mean goes to the processes' rings,
		 * the other memory events are always recorded. */
		if (fr_event_is_memory(c->events[e])) {
			if (c->events[e] != FR_EVENT_ALLOC && c->events[e] != FR_EVENT_HEAP)
				continue;
			w->alloc = true;
			if (c->mean[e] && (!w->alloc_mean || c->mean[e] < w->alloc_mean))
				w->alloc_mean = c->mean[e];
			continue;
		}
		for (i = 0; i < w->n && w->event[i] != event; i++)
			;
		if (i == w->n) {
			if (w->n == FR_SOURCES_MAX) {
				fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
						   "more than %d distinct events asked for; "
						   "%s is not recorded",
						   FR_SOURCES_MAX, c->name);
				continue;
			}
			w->event[w->n] = event;
			w->dwarf[w->n] = w->fp[w->n] = false;
			w->stack_copy[w->n] = 0;
			w->period[w->n] = 0;
			w->perf[w->n] = false;
			w->perf_copy[w->n] = 0;
			w->min_wait[w->n] = -1;
			w->hz[w->n++] = 0;
		}
		if (extra) {
			/* min_wait and the mechanism are offcpu's. */
		} else if (c->mechanism[e] == FR_CONFIG_OFFCPU_PERF + 1) {
			w->perf[i] = true;
			if (c->unwind[e] == FR_CONFIG_UNWIND_DWARF + 1 &&
			    c->stack_copy[e] > w->perf_copy[i])
				w->perf_copy[i] = c->stack_copy[e];
		} else if (c->mechanism[e] &&
			   (w->min_wait[i] < 0 || c->min_wait_ns[e] < w->min_wait[i]))
			w->min_wait[i] = c->min_wait_ns[e];
		if (c->hz[e] > w->hz[i])
			w->hz[i] = c->hz[e];
		if (c->period[e] && (!w->period[i] || c->period[e] < w->period[i]))
			w->period[i] = c->period[e];
		if (c->unwind[e] == FR_CONFIG_UNWIND_DWARF + 1) {
			w->dwarf[i] = true;
			if (c->stack_copy[e] > w->stack_copy[i])
				w->stack_copy[i] = c->stack_copy[e];
		} else if (c->unwind[e] == FR_CONFIG_UNWIND_FP + 1) {
			w->fp[i] = true;
		}
	}
}

static void collect_wants(struct fr_sources *s, struct wants *w, uint64_t *gen)
{
	w->n = 0;
	w->offcpu_extra = 0;
	w->alloc = false;
	w->alloc_mean = 0;
	pthread_mutex_lock(&s->consumers_lock);
	*gen = s->consumers_gen;
	for (const struct fr_consumer *c = s->consumers; c; c = c->next)
		want_consumer(w, c);
	pthread_mutex_unlock(&s->consumers_lock);
}

/* Closes the sources nobody wants any more. Returns 1 if any closed. */
static int drop_unwanted(struct fr_sources *s, const struct wants *w, int *drained)
{
	char name[FR_EVENT_NAME_MAX];
	int changed = 0;

	for (unsigned i = 0; i < s->n;) {
		struct fr_source *src = &s->table[i];
		unsigned k;

		for (k = 0; k < w->n && w->event[k] != src->event; k++)
			;
		if (k < w->n) {
			i++;
			continue;
		}
		if (src->perf) {
			if (!(*drained)++)
				fr_sources_drain(s);
			fr_log_info("%s: no consumer asks for it any more; stopped",
				    fr_event_format(src->event, name, sizeof(name)));
		}
		sources_watch(s, src->perf, 0);
		pthread_mutex_lock(&s->lock);
		fr_perf_close(src->perf);
		memmove(src, src + 1, (s->n - i - 1) * sizeof(*src));
		s->n--;
		pthread_mutex_unlock(&s->lock);
		changed = 1;
	}
	return changed;
}

/* "user stacks by frame pointers" or "user stacks unwound from 8192-byte
 * copies", for logs. */
static const char *unwind_text(uint32_t stack_copy)
{
	static __thread char buf[64];

	if (!stack_copy)
		return "user stacks by frame pointers";
	snprintf(buf, sizeof(buf), "user stacks unwound from %u-byte copies", stack_copy);
	return buf;
}

/* Opens the perf event of `src` at `hz` (0: every context switch). On
 * failure the source stays in the table with the reason. Returns 1 if it
 * opened. */
static int open_source(struct fr_sources *s, struct fr_source *src, uint32_t hz, uint64_t period,
		       uint32_t stack_copy, const char *name)
{
	struct fr_perf_config cfg = {.event = src->event,
				     .hz = hz ? hz : 1,
				     .stack_copy = stack_copy,
				     .period = period,
				     .offcpu_mechanism = src->mechanism,
				     .min_wait_ns = src->min_wait_ns,
				     .offcpu_extra = src->offcpu_extra,
				     .labels_prog_fd = s->labels_prog_fd,
				     .labels_map_fd = s->labels_map_fd,
				     .py_procs_fd = s->py_procs_fd,
				     .py_threads_fd = s->py_threads_fd};
	struct fr_perf *perf = NULL;
	char err[256], every[48];
	int ret = fr_perf_open(&perf, &cfg, err, sizeof(err));

	if (ret == 0)
		ret = fr_perf_enable(perf, 1);
	pthread_mutex_lock(&s->lock);
	if (ret < 0) {
		if (strcmp(src->error, err) != 0)
			fr_log_err("%s; recording the other events", err);
		snprintf(src->error, sizeof(src->error), "%s", err[0] ? err : strerror(-ret));
		fr_perf_close(perf);
	} else {
		src->perf = perf;
		src->error[0] = '\0';
		src->hz = period ? 0 : hz;
		src->period = period;
		src->stack_copy = stack_copy;
		src->since_ns = fr_now_real_ns();
		if (period)
			fr_log_info("%s: recording a sample every %s, %s", name,
				    sources_period_text(src->event, period, every, sizeof(every)),
				    unwind_text(stack_copy));
		else if (hz)
			fr_log_info("%s: recording at %u Hz, %s", name, hz,
				    unwind_text(stack_copy));
		else if (src->event == FR_EVENT_OFFCPU && !fr_perf_offcpu_fallback(perf) &&
			 src->mechanism == FR_PERF_OFFCPU_BPF)
			fr_log_info("%s: recording every wait with eBPF, stacks of waits of "
				    "%s or more, %s",
				    name,
				    fr_format_duration((int64_t)src->min_wait_ns, every,
						       sizeof(every)),
				    unwind_text(stack_copy));
		else
			fr_log_info("%s: recording every context switch, %s", name,
				    unwind_text(stack_copy));
	}
	pthread_mutex_unlock(&s->lock);
	if (ret < 0)
		return 0;
	sources_watch(s, perf, 1);
	return 1;
}

/* Closes an open source whose stack copy changed, or whose rings are too
 * small for its copies at a higher rate, after draining what its rings
 * hold; open_source() opens it again. */
static void close_for_reopen(struct fr_sources *s, struct fr_source *src, const char *name,
			     int *drained)
{
	if (!(*drained)++)
		fr_sources_drain(s);
	fr_log_info("%s: reopening (was at %u Hz, %s)", name, src->hz,
		    unwind_text(src->stack_copy));
	sources_watch(s, src->perf, 0);
	pthread_mutex_lock(&s->lock);
	fr_perf_close(src->perf);
	src->perf = NULL;
	pthread_mutex_unlock(&s->lock);
}

/* Changes the rate of an open source to `hz`. */
static void retune(struct fr_sources *s, struct fr_source *src, uint32_t hz, const char *name,
		   int *drained)
{
	int ret;

	/* What the kernel holds was collected at the old rate: take it
	 * first, so every sample is weighted by it. */
	if (!(*drained)++)
		fr_sources_drain(s);
	ret = fr_perf_set_hz(src->perf, hz);
	if (ret < 0) {
		fr_log_err("%s: cannot change the rate to %u Hz (%s); it stays %u Hz", name, hz,
			   strerror(-ret), src->hz);
	} else {
		fr_log_info("%s: rate %u Hz -> %u Hz", name, src->hz, hz);
		__atomic_store_n(&src->hz, hz, __ATOMIC_RELAXED);
		src->since_ns = fr_now_real_ns();
	}
}

/* Changes the period of an open period-mode source to `period`. */
static void retune_period(struct fr_sources *s, struct fr_source *src, uint64_t period,
			  const char *name, int *drained)
{
	int ret;

	/* What the kernel holds was taken at the old period. */
	if (!(*drained)++)
		fr_sources_drain(s);
	ret = fr_perf_set_period(src->perf, period);
	if (ret < 0) {
		fr_log_err("%s: cannot change the period to %llu (%s); it stays %llu", name,
			   (unsigned long long)period, strerror(-ret),
			   (unsigned long long)src->period);
		return;
	}
	fr_log_info("%s: period %llu -> %llu", name, (unsigned long long)src->period,
		    (unsigned long long)period);
	__atomic_store_n(&src->period, period, __ATOMIC_RELAXED);
	src->since_ns = fr_now_real_ns();
}

int fr_sources_reconcile(struct fr_sources *s)
{
	struct wants w;
	uint64_t gen;
	int changed, drained = 0;
	char name[FR_EVENT_NAME_MAX];

	collect_wants(s, &w, &gen);
	__atomic_store_n(&s->alloc_mean,
			 w.alloc ? (w.alloc_mean ? w.alloc_mean : FR_CONFIG_ALLOC_MEAN_DEFAULT) : 0,
			 __ATOMIC_RELAXED);
	changed = drop_unwanted(s, &w, &drained);
	for (unsigned k = 0; k < w.n; k++) {
		struct fr_source *src = fr_sources_find(s, w.event[k]);
		uint32_t hz = fr_event_has_rate(w.event[k]) ? w.hz[k] : 0;
		uint64_t period = fr_event_has_rate(w.event[k]) ? w.period[k] : 0;
		uint32_t mech = w.event[k] == FR_EVENT_OFFCPU && !w.perf[k] ? FR_PERF_OFFCPU_BPF
									    : FR_PERF_OFFCPU_PERF;
		uint32_t stack_copy = w.event[k] == FR_EVENT_OFFCPU && w.perf[k]
					      ? w.perf_copy[k]
					      : wanted_stack_copy(&w, k);
		uint64_t min_wait = w.min_wait[k] >= 0 ? (uint64_t)w.min_wait[k]
						       : FR_CONFIG_MIN_WAIT_DEFAULT;
		uint32_t extra = w.event[k] == FR_EVENT_OFFCPU ? w.offcpu_extra : 0;

		fr_event_format(w.event[k], name, sizeof(name));
		if (!src) {
			pthread_mutex_lock(&s->lock);
			src = &s->table[s->n++];
			memset(src, 0, sizeof(*src));
			src->event = w.event[k];
			pthread_mutex_unlock(&s->lock);
		}
		/* A mode (period or frequency) is fixed at open. */
		if (src->perf &&
		    (stack_copy != src->stack_copy || !period != !src->period ||
		     mech != src->mechanism ||
		     (mech == FR_PERF_OFFCPU_BPF && min_wait != src->min_wait_ns) ||
		     extra != src->offcpu_extra ||
		     (!period && hz > src->hz && fr_perf_rings_too_small(src->perf, hz)))) {
			close_for_reopen(s, src, name, &drained);
			changed = 1;
		}
		src->mechanism = mech;
		src->min_wait_ns = min_wait;
		src->offcpu_extra = extra;
		if (extra && mech != FR_PERF_OFFCPU_BPF)
			fr_log_ratelimited(
				FR_LOG_ERR, 10 * FR_NS_PER_S,
				"wakeup and runqueue need the eBPF off-CPU mechanism; a "
				"consumer asks offcpu's perf one, so they are not recorded");
		if (!src->perf)
			changed |= open_source(s, src, hz, period, stack_copy, name);
		else if (period && period != src->period)
			retune_period(s, src, period, name, &drained);
		else if (!period && hz && hz != src->hz)
			retune(s, src, hz, name, &drained);
	}

	pthread_mutex_lock(&s->consumers_lock);
	if (gen > s->reconciled_gen)
		s->reconciled_gen = gen;
	pthread_cond_broadcast(&s->consumers_cond);
	pthread_mutex_unlock(&s->consumers_lock);
	return changed;
}
