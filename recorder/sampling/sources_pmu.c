/* What the sources say of the PMU's doing (see recorder/sampling/sources.h): each
 * sampling source's "pmu" object in status, and the comment attaches and
 * dumps add to their profiles. Apart from sources.c so that the hardware
 * counters' reporting reads in one place. */
#include "recorder/sampling/sources.h"

#include <stdio.h>
#include <string.h>

/* A sampling source's "pmu": the precise_ip level asked for and accepted
 * (hardware events), and how much of the time its counter really counted:
 * "multiplexed" when the PMU shared it with other events, whose samples
 * were then scaled up by enabled/running ("scaled_samples"). */
void fr_source_pmu_status(struct fr_ipc_pmu *out, const struct fr_source *src)
{
	struct fr_perf_pmu_stats st;

	fr_perf_pmu_stats(src->perf, &st);
	memset(out, 0, sizeof(*out));
	if (fr_event_is_hardware(src->event)) {
		out->has_precise = 1;
		out->precise_ip_asked = (uint64_t)st.precise_asked;
		out->precise_ip = (uint64_t)st.precise_ip;
	}
	out->enabled_ns = st.enabled_ns;
	out->running_ns = st.running_ns;
	out->multiplexed = st.running_ns < st.enabled_ns;
	out->scaled_samples = st.scaled_samples;
	out->time_reads_failed = st.reads_failed;
}

/* One event's part of fr_sources_pmu_note(); returns what it wrote. */
static int pmu_note_one(const struct fr_source *src, char *buf, size_t len, int first)
{
	struct fr_perf_pmu_stats st;
	char name[FR_EVENT_NAME_MAX];
	int k = 0, n;

	fr_perf_pmu_stats(src->perf, &st);
	fr_event_format(src->event, name, sizeof(name));
	if (fr_event_is_hardware(src->event)) {
		n = snprintf(buf, len, "%s%s: precise_ip %u of %u asked%s", first ? "" : "; ", name,
			     st.precise_ip, st.precise_asked,
			     st.precise_ip ? ", the leaf frame is the sampled instruction"
					   : ", the leaf frame may skid past it");
		k = n > 0 && (size_t)n < len ? n : 0;
		first = 0;
	}
	if (st.running_ns < st.enabled_ns) {
		n = snprintf(buf + k, len - (size_t)k,
			     "%s%s: multiplexed, counted %.1f%% of the time; weights scaled up by "
			     "enabled/running",
			     first ? "" : "; ", name,
			     100.0 * (double)st.running_ns / (double)st.enabled_ns);
		k += n > 0 && (size_t)n < len - (size_t)k ? n : 0;
	}
	return k;
}

void fr_sources_pmu_note(struct fr_sources *s, const uint32_t *events, uint32_t n, char *buf,
			 size_t len)
{
	static const uint32_t cpu = FR_EVENT_CPU;
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (n == 0) {
		events = &cpu;
		n = 1;
	}
	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < n && used + 1 < len; i++) {
		const struct fr_source *src = fr_sources_find(s, events[i]);

		if (src && src->perf && fr_event_has_rate(src->event))
			used += (size_t)pmu_note_one(src, buf + used, len - used, used == 0);
	}
	pthread_mutex_unlock(&s->lock);
}
