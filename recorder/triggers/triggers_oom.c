/* OOM triggers: the kills the ingest thread records reach the engine
 * through a small queue, and fire the sessions whose targets the victim
 * is of (any victim for a session without targets).
 *
 * The ingest thread must never wait for the engine, whose lock is held
 * while it reads /proc for exit triggers: the queue has a lock of its
 * own, held only to copy a victim in or the queue out, and the engine is
 * woken through its eventfd.
 */
#include "recorder/triggers/triggers_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util/log.h"

void fr_triggers_oom(struct fr_triggers *t, const struct fr_trigger_oom *victim)
{
	int dropped = 0;

	if (!t || !victim)
		return;
	pthread_mutex_lock(&t->oom_lock);
	if (t->noom < OOM_QUEUE)
		t->oom_queue[t->noom++] = *victim;
	else
		dropped = 1;
	pthread_mutex_unlock(&t->oom_lock);
	if (dropped) {
		uint64_t n = __atomic_add_fetch(&t->oom_dropped, 1, __ATOMIC_RELAXED);

		fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
				   "oom triggers: %u kills are waiting already; pid %" PRIu32
				   " fires nothing (%" PRIu64 " so far)",
				   OOM_QUEUE, victim->pid, n);
		return;
	}
	trig_wake(t);
}

/* The reason a dump gives: "pid 1234 (hog) killed by the OOM killer in
 * cgroup /x, RSS 63.9 MiB". */
static void oom_reason(const struct fr_trigger_oom *v, char *buf, size_t len)
{
	char rss[48] = "";

	if (v->rss)
		snprintf(rss, sizeof(rss), ", RSS %.1f MiB", (double)v->rss / (1024.0 * 1024.0));
	snprintf(buf, len, "pid %" PRIu32 " (%s) killed by the OOM killer%s%s%s", v->pid,
		 v->comm[0] ? v->comm : "?", v->cgroup[0] ? " in cgroup " : "", v->cgroup, rss);
}

/* Fires the oom triggers `v` matches. Called with the engine's lock. */
static void fire_victim(struct fr_triggers *t, const struct fr_trigger_oom *v)
{
	char reason[256];

	oom_reason(v, reason, sizeof(reason));
	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!trig_has_kind(s, FR_TRIGGER_OOM) ||
		    (trig_has_targets(s) &&
		     !trig_targets_match(s, v->pid, v->comm, v->cgroup, v->uid)))
			continue;
		for (uint32_t ti = 0; ti < s->ntriggers; ti++) {
			struct pending *p;

			if (s->triggers[ti].kind != FR_TRIGGER_OOM)
				continue;
			p = trig_fire(t, si, ti, reason, v->pid);
			if (p) {
				p->has_oom = 1;
				p->oom = *v;
			}
		}
	}
}

void trig_oom_handle(struct fr_triggers *t)
{
	struct fr_trigger_oom q[OOM_QUEUE];
	uint32_t n;

	pthread_mutex_lock(&t->oom_lock);
	n = t->noom;
	memcpy(q, t->oom_queue, n * sizeof(q[0]));
	t->noom = 0;
	pthread_mutex_unlock(&t->oom_lock);
	for (uint32_t i = 0; i < n; i++)
		fire_victim(t, &q[i]);
}
