/* The black box's events every recorder records whatever its consumers
 * ask (see recorder/sampling/sources.h): exec, exit and crash, from one
 * eBPF program (recorder/sampling/bpf_events.h). This file loads it and
 * keeps what status says of them, as sources_memory.c does for oom.
 */
#include "recorder/sampling/sources.h"
#include "recorder/sampling/sources_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/time.h"
#include "recorder/sampling/bpf_events.h"

static struct fr_memory_source *blackbox_of(struct fr_sources *s, uint32_t event)
{
	if (event < FR_EVENT_EXEC || event >= FR_EVENT_EXEC + FR_SOURCES_BLACKBOX_EVENTS)
		return NULL;
	return &s->blackbox_ev[event - FR_EVENT_EXEC];
}

static void set_state(struct fr_sources *s, const char *error)
{
	for (uint32_t i = 0; i < FR_SOURCES_BLACKBOX_EVENTS; i++) {
		struct fr_memory_source *m = &s->blackbox_ev[i];

		m->recording = !error;
		snprintf(m->error, sizeof(m->error), "%s", error ? error : "");
		m->since_ns = fr_now_real_ns();
	}
}

int fr_sources_open_blackbox(struct fr_sources *s)
{
	const char *env = getenv("FLIGHTREC_BLACKBOX");
	char err[256];
	int ret;

	if (env && strcmp(env, "off") == 0) {
		fr_log_info("exec, exit and crash are not recorded (FLIGHTREC_BLACKBOX=off)");
		set_state(s, "off (FLIGHTREC_BLACKBOX=off)");
		return -ECANCELED;
	}
	ret = fr_bpf_events_open(&s->blackbox, s->labels_map_fd, err, sizeof(err));
	if (ret == 0) {
		ret = fr_poller_add(s->poller, fr_bpf_events_fd(s->blackbox), POLLIN, NULL, NULL);
		/* Unwatched, the ring buffer is still drained every second. */
		if (ret < 0)
			fr_log_warn("blackbox: cannot poll the eBPF ring buffer (%s); it is "
				    "drained once a second",
				    strerror(-ret));
		ret = 0;
	}
	if (ret < 0)
		fr_log_warn("blackbox: %s; exec, exit and crash are not recorded, everything "
			    "else is",
			    err);
	set_state(s, ret < 0 ? err : NULL);
	return ret;
}

void fr_sources_blackbox_count(struct fr_sources *s, uint32_t event, uint64_t kept, uint64_t lost)
{
	struct fr_memory_source *m = blackbox_of(s, event);

	if (m)
		sources_always_count(m, kept, lost);
}

uint32_t fr_sources_blackbox_status(struct fr_sources *s, struct fr_ipc_event_status *out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < FR_SOURCES_BLACKBOX_EVENTS; i++) {
		uint32_t e = FR_EVENT_EXEC + i;
		const struct fr_memory_source *m = &s->blackbox_ev[i];

		n += (uint32_t)sources_always_status(m, e,
						     e == FR_EVENT_CRASH ? "kernel+user" : "none",
						     &out[n]);
	}
	return n;
}
