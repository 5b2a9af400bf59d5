/* Installing a configuration in the trigger engine: the sessions in
 * force, and what carries over from those of the configuration before
 * (counters, cooldowns, CPU measurements, pending dumps). Called with the
 * engine's lock held.
 */
#include "recorder/triggers/triggers_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"

static int targets_equal(const struct fr_config_session *a, const struct fr_config_session *b)
{
	if (a->targets.npids != b->targets.npids || a->targets.ncomms != b->targets.ncomms ||
	    strcmp(a->targets.cgroup, b->targets.cgroup) != 0 ||
	    a->targets.has_uid != b->targets.has_uid ||
	    (a->targets.has_uid && a->targets.uid != b->targets.uid))
		return 0;
	if (memcmp(a->targets.pids, b->targets.pids,
		   a->targets.npids * sizeof(a->targets.pids[0])) != 0)
		return 0;
	for (uint32_t i = 0; i < a->targets.ncomms; i++)
		if (strcmp(a->targets.comms[i], b->targets.comms[i]) != 0)
			return 0;
	return 1;
}

void trig_meter_free(struct cpu_meter *m)
{
	free(m->procs);
	free(m->next);
	memset(m, 0, sizeof(*m));
}

int trig_config_has_exit(const struct fr_config *cfg)
{
	uint32_t n = cfg->nsessions < FR_CONFIG_MAX_SESSIONS ? cfg->nsessions
							     : FR_CONFIG_MAX_SESSIONS;

	for (uint32_t i = 0; i < n; i++) {
		const struct fr_config_session *s = &cfg->sessions[i];
		uint32_t nt = s->ntriggers < FR_CONFIG_MAX_TRIGGERS ? s->ntriggers
								    : FR_CONFIG_MAX_TRIGGERS;

		for (uint32_t k = 0; k < nt; k++)
			if (s->triggers[k].kind == FR_TRIGGER_EXIT)
				return 1;
	}
	return 0;
}

/* A copy of configured session `src` with its strings terminated and
 * its counts within the arrays, whatever the caller filled in. */
static void copy_session(struct fr_config_session *s, const struct fr_config_session *src)
{
	*s = *src;
	s->name[sizeof(s->name) - 1] = '\0';
	s->targets.cgroup[sizeof(s->targets.cgroup) - 1] = '\0';
	if (s->ntriggers > FR_CONFIG_MAX_TRIGGERS)
		s->ntriggers = FR_CONFIG_MAX_TRIGGERS;
	if (s->targets.npids > FR_LIMIT_SESSION_PIDS)
		s->targets.npids = FR_LIMIT_SESSION_PIDS;
	if (s->targets.ncomms > FR_LIMIT_COMMS)
		s->targets.ncomms = FR_LIMIT_COMMS;
	for (uint32_t k = 0; k < s->targets.ncomms; k++)
		s->targets.comms[k][FR_LIMIT_COMM_LEN - 1] = '\0';
}

/* Carries into `st`, the state of new session `s`, what belongs to it of
 * `ost`, the state of old session `os` of the same name (see
 * trig_apply). The CPU measurement moves: `ost` no longer has it. */
static void carry_over(struct sess_state *st, const struct fr_config_session *s,
		       struct sess_state *ost, const struct fr_config_session *os)
{
	st->last_dump_ns = ost->last_dump_ns;
	st->suppressed = ost->suppressed;
	for (uint32_t k = 0; k < s->ntriggers && k < os->ntriggers; k++) {
		const struct fr_config_trigger *a = &s->triggers[k], *b = &os->triggers[k];

		if (a->kind != b->kind)
			continue;
		st->trig[k].fired = ost->trig[k].fired;
		st->trig[k].last_fire_mono = ost->trig[k].last_fire_mono;
		if (a->kind == FR_TRIGGER_CPU_ABOVE && a->percent == b->percent &&
		    targets_equal(s, os)) {
			st->trig[k].above_since = ost->trig[k].above_since;
			st->trig[k].above_pct_ns = ost->trig[k].above_pct_ns;
			st->trig[k].above_ns = ost->trig[k].above_ns;
		}
	}
	if (trig_has_kind(s, FR_TRIGGER_CPU_ABOVE) && trig_has_kind(os, FR_TRIGGER_CPU_ABOVE) &&
	    targets_equal(s, os)) {
		st->meter = ost->meter;
		memset(&ost->meter, 0, sizeof(ost->meter));
	}
}

/* Moves each pending dump to its session's index among the `n` new
 * `sessions`, dropping (and logging) those of sessions removed. */
static void move_pending(struct fr_triggers *t, const struct fr_config_session *sessions,
			 uint32_t n)
{
	uint32_t kept = 0;

	for (uint32_t p = 0; p < t->npending; p++) {
		struct pending *pd = &t->pending[p];
		int si = -1;

		for (uint32_t i = 0; i < n; i++)
			if (strcmp(sessions[i].name, pd->session) == 0)
				si = (int)i;
		if (si < 0) {
			fr_log_warn("session %s: removed by the reload; its pending dump (%s: %s) "
				    "is dropped",
				    pd->session, pd->fire.kind, pd->fire.reason);
			continue;
		}
		pd->fire.session_index = (uint32_t)si;
		t->pending[kept++] = *pd;
	}
	t->npending = kept;
}

/* Installs the sessions of `cfg`, carrying over what belongs to sessions
 * and triggers that stay: per session (by name) its counters and, when
 * its targets are the same, its CPU measurement; per trigger (same session
 * name, same index, same kind) its cooldown, and for cpu_above with the
 * same threshold its run above it. Pending dumps follow their session to
 * its new index; those of removed sessions are dropped. Called with the
 * lock held. Returns 0 or -ENOMEM (nothing changed). */
int trig_apply(struct fr_triggers *t, const struct fr_config *cfg)
{
	uint32_t n = cfg->nsessions < FR_CONFIG_MAX_SESSIONS ? cfg->nsessions
							     : FR_CONFIG_MAX_SESSIONS;
	struct fr_config_session *sessions = calloc(n ? n : 1, sizeof(*sessions));
	struct sess_state *state = calloc(n ? n : 1, sizeof(*state));
	int has_pressure;

	if (!sessions || !state) {
		free(sessions);
		free(state);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		int old;

		copy_session(&sessions[i], &cfg->sessions[i]);
		old = trig_find_session(t, sessions[i].name);
		if (old >= 0)
			carry_over(&state[i], &sessions[i], &t->state[old], &t->sessions[old]);
	}
	move_pending(t, sessions, n);

	for (uint32_t i = 0; i < t->nsessions; i++)
		trig_meter_free(&t->state[i].meter);
	free(t->sessions);
	free(t->state);
	t->sessions = sessions;
	t->state = state;
	t->nsessions = n;
	t->has_cpu = t->has_exit = t->track_cgroup = 0;
	has_pressure = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (trig_has_kind(&sessions[i], FR_TRIGGER_CPU_ABOVE))
			t->has_cpu = 1;
		if (trig_has_kind(&sessions[i], FR_TRIGGER_PRESSURE))
			has_pressure = 1;
		if (trig_has_kind(&sessions[i], FR_TRIGGER_EXIT)) {
			t->has_exit = 1;
			if (sessions[i].targets.cgroup[0])
				t->track_cgroup = 1;
		}
	}
	__atomic_store_n(&t->has_pressure, has_pressure, __ATOMIC_RELEASE);
	t->gen++;
	return 0;
}
