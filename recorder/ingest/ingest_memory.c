/* The ingest thread's part of the memory events: OOM kills drained from
 * oom:mark_victim go into the ring, the log and the trigger engine; the
 * memory sampler's RSS and pressure samples go into the ring, and each
 * second's pressure to the trigger engine.
 *
 * The victim's name and cgroup come from the tracker (which keeps an
 * exited process for two seals, so the chunk sealed after the kill still
 * names it); the kernel's comm stands in when the tracker does not know
 * the process.
 */
#include "recorder/ingest/ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/log.h"
#include "recorder/sampling/sources.h"
#include "recorder/tracking/memsample.h"
#include "recorder/tracking/proc_table.h"
#include "recorder/tracking/tracker.h"
#include "recorder/triggers/triggers.h"

/* Samples of memory event `event` lost: into the open chunk's losses and
 * the counters of status, as on_lost counts the others'. */
static void lost_memory(struct fr_ingest *g, uint32_t event, uint64_t n)
{
	fr_sources_memory_count(g->sources, event, 0, n);
	fr_chunk_builder_count(g->builder, event, n, 0, 0);
	g->losses_pending = 1;
	__atomic_add_fetch(&g->lost, n, __ATOMIC_RELAXED);
}

/* Counts one memory sample kept (ret 0) or lost, as on_sample does. */
static void counted(struct fr_ingest *g, uint32_t event, int ret)
{
	if (ret != 0) {
		lost_memory(g, event, 1);
		return;
	}
	fr_sources_memory_count(g->sources, event, 1, 0);
	__atomic_add_fetch(&g->samples, 1, __ATOMIC_RELAXED);
}

/* The victim as the tracker knows it, the kernel's comm otherwise. */
static void victim_of(struct fr_ingest *g, const struct fr_sample *s, const char *comm,
		      struct fr_trigger_oom *v)
{
	const struct fr_chunk_meta_ops *ops = fr_tracker_ops(g->tracker);
	struct fr_proc_info pi;

	memset(v, 0, sizeof(*v));
	v->pid = s->pid;
	v->uid = FR_PROC_UID_UNKNOWN;
	v->rss = s->weight;
	v->time_ns = s->time_ns;
	snprintf(v->comm, sizeof(v->comm), "%s", comm);
	if (ops && ops->proc && ops->proc(ops->arg, s->pid, &pi) == 0) {
		v->uid = pi.uid;
		if (pi.comm && pi.comm[0])
			snprintf(v->comm, sizeof(v->comm), "%s", pi.comm);
		if (pi.cgroup)
			snprintf(v->cgroup, sizeof(v->cgroup), "%s", pi.cgroup);
	}
}

void fr_ingest_on_oom(void *arg, const struct fr_sample *s, const char *comm)
{
	struct fr_ingest *g = arg;
	struct fr_trigger_oom v;

	counted(g, FR_EVENT_OOM, fr_ingest_add(g, s));
	victim_of(g, s, comm, &v);
	if (v.rss)
		fr_log_warn("oom: killed pid %" PRIu32 " (%s) in cgroup %s, RSS %.1f MiB", v.pid,
			    v.comm[0] ? v.comm : "?", v.cgroup[0] ? v.cgroup : "?",
			    (double)v.rss / (1024.0 * 1024.0));
	else
		fr_log_warn("oom: killed pid %" PRIu32 " (%s) in cgroup %s, RSS not given by "
			    "this kernel",
			    v.pid, v.comm[0] ? v.comm : "?", v.cgroup[0] ? v.cgroup : "?");
	if (g->triggers)
		fr_triggers_oom(g->triggers, &v);
}

void fr_ingest_oom_lost(struct fr_ingest *g, uint64_t lost)
{
	lost_memory(g, FR_EVENT_OOM, lost);
	fr_log_warn("oom: %" PRIu64 " OOM kills lost (their ring was full)", lost);
}

static void on_memory_sample(void *arg, const struct fr_sample *s)
{
	struct fr_ingest *g = arg;
	int ret = fr_ingest_add(g, s);

	counted(g, s->event, ret);
	if (ret != 0)
		fr_memsample_lost(g->memsample, 1);
}

/* The events the pressure of each resource is recorded as, in the order
 * of enum fr_pressure_resource. */
static const uint32_t psi_events[FR_PRESSURE_RESOURCES] = {FR_EVENT_MEM_PRESSURE,
							   FR_EVENT_CPU_PRESSURE,
							   FR_EVENT_IO_PRESSURE};

/* What status says of each pressure event, when a file began or ceased to
 * be readable. */
static void pressure_states(struct fr_ingest *g)
{
	for (uint32_t r = 0; r < FR_PRESSURE_RESOURCES; r++) {
		char err[320];
		int failed = fr_memsample_pressure_error(g->memsample, r, err, sizeof(err));

		if (failed == g->psi_failed[r])
			continue;
		g->psi_failed[r] = (uint8_t)failed;
		fr_sources_memory_state(g->sources, psi_events[r], failed ? err : NULL);
	}
}

void fr_ingest_memory_take(struct fr_ingest *g)
{
	struct fr_memsample_stats st;
	struct fr_pressure_tick tick;
	uint32_t n = fr_memsample_take(g->memsample, on_memory_sample, g);

	if (fr_memsample_take_pressure(g->memsample, &tick) && g->triggers)
		fr_triggers_pressure(g->triggers, &tick);
	if (g->memsample)
		pressure_states(g);
	if (n == 0)
		return;
	/* Once a second or so: the sampler delivers once a tick. */
	fr_memsample_stats(g->memsample, &st);
	fr_sources_throttle_counts(g->sources, st.cgroups, st.throttle_reads, st.throttle_failures,
				   st.throttle_skipped);
}

/* Whether throttling is sampled: FLIGHTREC_THROTTLE_SAMPLES=off stops it
 * alone; FLIGHTREC_MEMORY_SAMPLES=off stops the sampler and so it too. */
static unsigned throttle_flags(char *why, size_t len)
{
	const char *env = getenv("FLIGHTREC_THROTTLE_SAMPLES");

	if (env && strcmp(env, "off") == 0) {
		fr_log_info("throttled samples are off (FLIGHTREC_THROTTLE_SAMPLES=off)");
		snprintf(why, len, "off (FLIGHTREC_THROTTLE_SAMPLES=off)");
		return 0;
	}
	return FR_MEMSAMPLE_THROTTLE;
}

void fr_ingest_memory_start(struct fr_ingest *g)
{
	const char *env = getenv("FLIGHTREC_MEMORY_SAMPLES");
	char err[256], throttle[256] = "";
	unsigned flags = throttle_flags(throttle, sizeof(throttle));
	int ret;

	fr_sources_open_oom(g->sources);
	if (env && strcmp(env, "off") == 0) {
		fr_log_info("RSS, pressure and throttled samples are off "
			    "(FLIGHTREC_MEMORY_SAMPLES=off)");
		snprintf(err, sizeof(err), "off (FLIGHTREC_MEMORY_SAMPLES=off)");
		ret = -ECANCELED;
	} else {
		ret = fr_memsample_start(&g->memsample, "/proc", flags, err, sizeof(err));
		if (ret < 0)
			fr_log_warn("RSS and pressure are not sampled: %s", err);
	}
	if (ret < 0)
		snprintf(throttle, sizeof(throttle), "%s", err);
	else if (flags && fr_memsample_throttle_error(g->memsample)[0])
		snprintf(throttle, sizeof(throttle), "%s",
			 fr_memsample_throttle_error(g->memsample));
	else if (flags) {
		fr_log_info("throttled: reading cpu.stat of %s",
			    fr_memsample_throttle_where(g->memsample));
		fr_sources_throttle_source(g->sources, fr_memsample_throttle_where(g->memsample));
	}
	fr_sources_memory_state(g->sources, FR_EVENT_RSS, ret < 0 ? err : NULL);
	for (uint32_t r = 0; r < FR_PRESSURE_RESOURCES; r++)
		fr_sources_memory_state(g->sources, psi_events[r], ret < 0 ? err : NULL);
	memset(g->psi_failed, 0, sizeof(g->psi_failed));
	fr_sources_memory_state(g->sources, FR_EVENT_THROTTLED, throttle[0] ? throttle : NULL);
}

void fr_ingest_memory_stop(struct fr_ingest *g)
{
	fr_memsample_stop(g->memsample);
	g->memsample = NULL;
}
