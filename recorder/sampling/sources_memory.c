/* The memory events every recorder records whatever its consumers ask
 * (see recorder/sampling/sources.h): OOM kills from oom:mark_victim, and
 * the RSS, memory, CPU and I/O pressure and throttled samples the memory
 * sampler (recorder/tracking/memsample.h) hands to the ingest thread. This
 * file opens the first and keeps what status says of all six.
 */
#include "recorder/sampling/sources.h"
#include "recorder/sampling/sources_int.h"

#include <stdio.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/time.h"

/* The events, in the order of memory[] and of status. */
static const uint32_t memory_events[FR_SOURCES_MEMORY_EVENTS] = {FR_EVENT_OOM,
								 FR_EVENT_RSS,
								 FR_EVENT_MEM_PRESSURE,
								 FR_EVENT_THROTTLED,
								 FR_EVENT_CPU_PRESSURE,
								 FR_EVENT_IO_PRESSURE};

static struct fr_memory_source *memory_of(struct fr_sources *s, uint32_t event)
{
	for (uint32_t i = 0; i < sizeof(memory_events) / sizeof(memory_events[0]); i++)
		if (memory_events[i] == event)
			return &s->memory[i];
	return NULL;
}

void fr_sources_memory_state(struct fr_sources *s, uint32_t event, const char *error)
{
	struct fr_memory_source *m = memory_of(s, event);

	if (!m)
		return;
	/* Under the lock: the pressure events change state while status
	 * reads it (a PSI file that fails later, or reads again). */
	pthread_mutex_lock(&s->lock);
	m->recording = !error;
	snprintf(m->error, sizeof(m->error), "%s", error ? error : "");
	m->since_ns = fr_now_real_ns();
	pthread_mutex_unlock(&s->lock);
}

void fr_sources_memory_count(struct fr_sources *s, uint32_t event, uint64_t kept, uint64_t lost)
{
	struct fr_memory_source *m = memory_of(s, event);

	if (m)
		sources_always_count(m, kept, lost);
}

void sources_always_count(struct fr_memory_source *m, uint64_t kept, uint64_t lost)
{
	if (kept)
		__atomic_add_fetch(&m->samples, kept, __ATOMIC_RELAXED);
	if (lost)
		__atomic_add_fetch(&m->lost, lost, __ATOMIC_RELAXED);
}

int sources_always_status(const struct fr_memory_source *m, uint32_t event, const char *stacks,
			  struct fr_ipc_event_status *ev)
{
	/* Never set up (a recorder that does not record it): not listed. */
	if (!m->recording && !m->error[0])
		return 0;
	fr_event_format(event, ev->event, sizeof(ev->event));
	snprintf(ev->unit, sizeof(ev->unit), "%s", fr_event_unit(event));
	snprintf(ev->state, sizeof(ev->state), "%s", m->recording ? "recording" : "failed");
	if (!m->recording) {
		ev->has_error = 1;
		snprintf(ev->error, sizeof(ev->error), "%s", m->error);
	}
	ev->every_switch = 1;
	ev->since_ns = m->since_ns;
	snprintf(ev->stacks, sizeof(ev->stacks), "%s", stacks);
	ev->samples = __atomic_load_n(&m->samples, __ATOMIC_RELAXED);
	ev->lost = __atomic_load_n(&m->lost, __ATOMIC_RELAXED);
	return 1;
}

void fr_sources_throttle_source(struct fr_sources *s, const char *source)
{
	snprintf(s->cgroups.source, sizeof(s->cgroups.source), "%s", source);
}

void fr_sources_throttle_counts(struct fr_sources *s, uint64_t watched, uint64_t reads,
				uint64_t failures, uint64_t skipped)
{
	__atomic_store_n(&s->cgroups.watched, watched, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cgroups.reads, reads, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cgroups.failures, failures, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cgroups.skipped, skipped, __ATOMIC_RELAXED);
}

/* The throttled event's "cgroups" while it records. */
static void throttle_status(struct fr_sources *s, struct fr_ipc_event_status *ev)
{
	struct fr_ipc_cgroups *c = &ev->cgroups;

	ev->has_cgroups = 1;
	snprintf(c->source, sizeof(c->source), "%s", s->cgroups.source);
	c->watched = __atomic_load_n(&s->cgroups.watched, __ATOMIC_RELAXED);
	c->reads = __atomic_load_n(&s->cgroups.reads, __ATOMIC_RELAXED);
	c->failures = __atomic_load_n(&s->cgroups.failures, __ATOMIC_RELAXED);
	c->skipped = __atomic_load_n(&s->cgroups.skipped, __ATOMIC_RELAXED);
}

int fr_sources_open_oom(struct fr_sources *s)
{
	char err[256];
	int ret = fr_perf_open_oom(&s->oom, err, sizeof(err));

	if (ret == 0) {
		sources_watch(s, s->oom, 1);
		ret = fr_perf_enable(s->oom, 1);
		if (ret < 0) {
			snprintf(err, sizeof(err), "oom: cannot enable oom:mark_victim: %s",
				 strerror(-ret));
			sources_watch(s, s->oom, 0);
			fr_perf_close(s->oom);
			s->oom = NULL;
		}
	}
	if (ret < 0)
		fr_log_warn("%s; OOM kills are not recorded, everything else is", err);
	fr_sources_memory_state(s, FR_EVENT_OOM, ret < 0 ? err : NULL);
	return ret;
}

uint32_t fr_sources_memory_status(struct fr_sources *s, struct fr_ipc_event_status *out)
{
	uint32_t n = 0;

	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < sizeof(memory_events) / sizeof(memory_events[0]); i++) {
		uint32_t e = memory_events[i];
		const struct fr_memory_source *m = memory_of(s, e);
		struct fr_ipc_event_status *ev = &out[n];

		if (!sources_always_status(m, e, "none", ev))
			continue;
		n++;
		if (e == FR_EVENT_THROTTLED && m->recording)
			throttle_status(s, ev);
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}
