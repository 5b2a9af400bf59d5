/* Crash triggers: the crashes the ingest thread records reach the engine
 * through a small queue, and fire the sessions whose targets the crashed
 * process is of (any process for a session without targets), exactly as
 * OOM kills do (triggers_oom.c): the ingest thread never waits for the
 * engine, whose lock is held while it reads /proc.
 */
#include "recorder/triggers/triggers_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util/log.h"
#include "recorder/sampling/bpf_events.h"

void fr_triggers_crash(struct fr_triggers *t, const struct fr_trigger_crash *crash)
{
	int dropped = 0;

	if (!t || !crash)
		return;
	pthread_mutex_lock(&t->crash_lock);
	if (t->ncrash < CRASH_QUEUE)
		t->crash_queue[t->ncrash++] = *crash;
	else
		dropped = 1;
	pthread_mutex_unlock(&t->crash_lock);
	if (dropped) {
		uint64_t n = __atomic_add_fetch(&t->crash_dropped, 1, __ATOMIC_RELAXED);

		fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
				   "crash triggers: %u crashes are waiting already; pid %" PRIu32
				   " fires nothing (%" PRIu64 " so far)",
				   CRASH_QUEUE, crash->pid, n);
		return;
	}
	trig_wake(t);
}

/* The reason a dump gives: "pid 1234 (crash_prog) killed by SIGSEGV at
 * 0x10", or "... killed by signal 11" for a number with no name. */
static void crash_reason(const struct fr_trigger_crash *c, char *buf, size_t len)
{
	const char *name = fr_signal_name(c->signal);
	char sig[16], addr[32] = "";

	if (name)
		snprintf(sig, sizeof(sig), "%s", name);
	else
		snprintf(sig, sizeof(sig), "signal %d", c->signal);
	if (c->has_addr)
		snprintf(addr, sizeof(addr), " at 0x%" PRIx64, c->addr);
	snprintf(buf, len, "pid %" PRIu32 " (%s) killed by %s%s", c->pid,
		 c->comm[0] ? c->comm : "?", sig, addr);
}

/* Fires the crash triggers `c` matches. Called with the engine's lock. */
static void fire_crash(struct fr_triggers *t, const struct fr_trigger_crash *c)
{
	char reason[256];

	crash_reason(c, reason, sizeof(reason));
	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!trig_has_kind(s, FR_TRIGGER_CRASH) ||
		    (trig_has_targets(s) &&
		     !trig_targets_match(s, c->pid, c->comm, c->cgroup, c->uid)))
			continue;
		for (uint32_t ti = 0; ti < s->ntriggers; ti++) {
			struct pending *p;

			if (s->triggers[ti].kind != FR_TRIGGER_CRASH)
				continue;
			p = trig_fire(t, si, ti, reason, c->pid);
			if (p) {
				p->has_crash = 1;
				p->crash = *c;
			}
		}
	}
}

void trig_crash_handle(struct fr_triggers *t)
{
	struct fr_trigger_crash q[CRASH_QUEUE];
	uint32_t n;

	pthread_mutex_lock(&t->crash_lock);
	n = t->ncrash;
	memcpy(q, t->crash_queue, n * sizeof(q[0]));
	t->ncrash = 0;
	pthread_mutex_unlock(&t->crash_lock);
	for (uint32_t i = 0; i < n; i++)
		fire_crash(t, &q[i]);
}
