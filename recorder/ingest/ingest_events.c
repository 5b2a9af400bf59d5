/* The ingest thread's part of the black box: the exec, exit and crash
 * samples its program sends (recorder/sampling/bpf_events.h) go into the
 * ring; a crash into the log and the trigger engine too.
 *
 * The crashed process's uid and cgroup, for the triggers' targets, come
 * from the tracker: the process is alive at the signal's delivery (its
 * exit follows), so it is known when it was ever seen.
 */
#include "recorder/ingest/ingest.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/log.h"
#include "recorder/sampling/bpf_events.h"
#include "recorder/sampling/sources.h"
#include "recorder/tracking/proc_table.h"
#include "recorder/tracking/tracker.h"
#include "recorder/triggers/triggers.h"

void fr_ingest_events_start(struct fr_ingest *g)
{
	fr_sources_open_blackbox(g->sources);
}

void fr_ingest_blackbox_lost(struct fr_ingest *g, uint32_t event, uint64_t lost)
{
	fr_sources_blackbox_count(g->sources, event, 0, lost);
	fr_chunk_builder_count(g->builder, event, lost, 0, 0);
	g->losses_pending = 1;
	__atomic_add_fetch(&g->lost, lost, __ATOMIC_RELAXED);
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
			   "blackbox: %" PRIu64 " %s records lost (the eBPF ring buffer was full)",
			   lost, fr_event_name(event));
}

/* The crash as the triggers see it: the tracker's uid and cgroup. */
static void crash_of(struct fr_ingest *g, const struct fr_sample *s, const struct fr_bpf_event *ev,
		     struct fr_trigger_crash *c)
{
	const struct fr_chunk_meta_ops *ops = fr_tracker_ops(g->tracker);
	struct fr_proc_info pi;

	memset(c, 0, sizeof(*c));
	c->pid = ev->pid;
	c->tid = ev->tid;
	c->uid = FR_PROC_UID_UNKNOWN;
	c->signal = ev->signal;
	c->code = ev->code;
	c->has_addr = ev->has_addr;
	c->addr = ev->addr;
	c->time_ns = s->time_ns;
	snprintf(c->comm, sizeof(c->comm), "%.*s", (int)sizeof(c->comm) - 1, ev->comm);
	if (ops && ops->proc && ops->proc(ops->arg, ev->pid, &pi) == 0) {
		c->uid = pi.uid;
		if (pi.cgroup)
			snprintf(c->cgroup, sizeof(c->cgroup), "%s", pi.cgroup);
	}
}

void fr_ingest_on_blackbox(void *arg, const struct fr_sample *s, const struct fr_bpf_event *ev)
{
	struct fr_ingest *g = arg;
	struct fr_trigger_crash c;
	const char *sig, *code;
	int ret = fr_ingest_add(g, s);

	if (ret != 0) {
		fr_ingest_blackbox_lost(g, s->event, 1);
	} else {
		fr_sources_blackbox_count(g->sources, s->event, 1, 0);
		__atomic_add_fetch(&g->samples, 1, __ATOMIC_RELAXED);
	}
	if (s->event != FR_EVENT_CRASH)
		return;
	crash_of(g, s, ev, &c);
	sig = fr_signal_name(ev->signal);
	code = fr_si_code_name(ev->signal, ev->code);
	/* A process that crashes in a loop says so once a second. */
	if (ev->has_addr)
		fr_log_ratelimited(FR_LOG_WARN, FR_NS_PER_S,
				   "crash: pid %" PRIu32 " (%s) thread %" PRIu32
				   " killed by %s (%s) at 0x%" PRIx64,
				   ev->pid, ev->comm, ev->tid, sig ? sig : "?", code ? code : "?",
				   ev->addr);
	else
		fr_log_ratelimited(FR_LOG_WARN, FR_NS_PER_S,
				   "crash: pid %" PRIu32 " (%s) thread %" PRIu32
				   " killed by %s (%s)",
				   ev->pid, ev->comm, ev->tid, sig ? sig : "?", code ? code : "?");
	if (g->triggers)
		fr_triggers_crash(g->triggers, &c);
}
