/* Pressure triggers: the machine's pressure (PSI) on memory, CPU or I/O,
 * a second at a time, as the memory sampler reads it for the ring
 * (recorder/tracking/memsample.h). Each second gives, per resource, the
 * ns in which some task ("some") and every non-idle task ("full") stalled
 * on it; its share of the second is what a trigger compares with its
 * threshold. PSI's own averages (avg10, avg60) lag by ten seconds and
 * more: the totals' deltas say at once.
 *
 * A run starts at the first second at or above the threshold and ends at
 * the first below it, or a second the file could not be read; a run that
 * lasted `for` fires (the share in the reason is its average) and starts
 * over, so a pressure that stays fires again after `for` once the cooldown
 * allows.
 *
 * A session whose targets name a cgroup looks at that cgroup's own
 * pressure (cgroup v2: ROOT/CGROUP/RESOURCE.pressure, the same two lines),
 * read by the engine at each of the machine's seconds, with a baseline
 * per trigger; a file that cannot be read (a cgroup gone, a machine
 * without cgroup v2 or PSI) is logged once and ends the run, never
 * replaced by the machine's pressure. Its other targets (pids, comm, uid)
 * do not filter the machine's.
 *
 * The seconds reach the engine through a small queue under the OOM
 * kills' lock, as kills do: the ingest thread never waits for the engine.
 */
#include "recorder/triggers/triggers_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util/log.h"
#include "recorder/tracking/proc_mem.h"

_Static_assert(FR_CONFIG_PRESSURE_MEMORY == FR_PRESSURE_MEMORY &&
		       FR_CONFIG_PRESSURE_CPU == FR_PRESSURE_CPU &&
		       FR_CONFIG_PRESSURE_IO == FR_PRESSURE_IO,
	       "the configuration's pressure resources are the sampler's");

void fr_triggers_pressure(struct fr_triggers *t, const struct fr_pressure_tick *tick)
{
	int dropped = 0;

	/* Without a pressure trigger the engine is not woken each second. */
	if (!t || !tick || !__atomic_load_n(&t->has_pressure, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&t->oom_lock);
	if (t->npsi < PSI_QUEUE)
		t->psi_queue[t->npsi++] = *tick;
	else
		dropped = 1;
	pthread_mutex_unlock(&t->oom_lock);
	if (dropped) {
		uint64_t n = __atomic_add_fetch(&t->psi_dropped, 1, __ATOMIC_RELAXED);

		fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
				   "pressure triggers: %u seconds are waiting already; one is "
				   "dropped (%" PRIu64 " so far)",
				   PSI_QUEUE, n);
		return;
	}
	trig_wake(t);
}

/* The share of `tick`'s second, in percent, that trigger `tr` looks at;
 * -1 when the second does not say (the file was not read, or has no
 * "full" line). */
static double tick_share(const struct fr_pressure_tick *tick, const struct fr_config_trigger *tr)
{
	uint32_t r = tr->resource;
	uint64_t ns;

	if (r >= FR_PRESSURE_RESOURCES || !tick->valid[r] || tick->interval_ns <= 0 ||
	    (tr->full && !tick->has_full[r]))
		return -1;
	ns = tr->full ? tick->full_ns[r] : tick->some_ns[r];
	/* A stall counted a little past the second's edge: at most all of it. */
	return ns >= (uint64_t)tick->interval_ns ? 100.0
						 : (double)ns * 100.0 / (double)tick->interval_ns;
}

/* The second of `tick` for the cgroup of session `s`'s trigger `tr`, into
 * *out: its own file read now, against the totals of the last read. Runs
 * follow the machine's ticks; the share is the stall over the time
 * between the two reads (CLOCK_MONOTONIC when read), so seconds queued
 * behind a slow pass (at most PSI_QUEUE, read one after another) do not
 * count the stall of all of them in the first. */
static void cgroup_second(struct fr_triggers *t, const struct fr_config_session *s,
			  const struct fr_config_trigger *tr, struct trig_state *st,
			  const struct fr_pressure_tick *tick, struct fr_pressure_tick *out)
{
	const char *cg = s->targets.cgroup, *res = fr_pressure_resource_name(tr->resource);
	char path[FR_LIMIT_CGROUP_LEN + 600];
	uint64_t some, full;
	int64_t read_mono;
	int has_full, ret;

	memset(out, 0, sizeof(*out));
	out->time_ns = tick->time_ns;
	out->mono_ns = tick->mono_ns;
	snprintf(path, sizeof(path), "%s%s%s/%s.pressure", t->cgroot, cg[0] == '/' ? "" : "/", cg,
		 res);
	ret = t->cgroot[0] ? fr_pressure_read_file(path, &some, &full, &has_full) : -ENOENT;
	if (ret < 0) {
		if (!st->psi_warned)
			fr_log_warn("session %s: cannot read the %s pressure of cgroup %s (%s: %s); "
				    "its pressure triggers wait until it can be read",
				    s->name, res, cg, t->cgroot[0] ? path : "no cgroup2 mount",
				    strerror(-ret));
		st->psi_warned = 1;
		st->psi_base_mono = 0;
		return;
	}
	if (st->psi_warned)
		fr_log_info("session %s: the %s pressure of cgroup %s is read again", s->name, res,
			    cg);
	st->psi_warned = 0;
	read_mono = fr_now_mono_ns();
	if (st->psi_base_mono && some >= st->psi_some_base && full >= st->psi_full_base &&
	    has_full == st->psi_has_full && tick->mono_ns > st->psi_base_mono &&
	    read_mono > st->psi_read_mono) {
		/* The stall between the reads, as a share of that time, given
		 * over the tick's interval. */
		double scale = (double)(tick->mono_ns - st->psi_base_mono) /
			       (double)(read_mono - st->psi_read_mono);

		out->interval_ns = tick->mono_ns - st->psi_base_mono;
		out->valid[tr->resource] = 1;
		out->has_full[tr->resource] = (uint8_t)has_full;
		out->some_ns[tr->resource] = (uint64_t)((double)(some - st->psi_some_base) * scale);
		out->full_ns[tr->resource] = (uint64_t)((double)(full - st->psi_full_base) * scale);
	}
	st->psi_base_mono = tick->mono_ns;
	st->psi_read_mono = read_mono;
	st->psi_some_base = some;
	st->psi_full_base = full;
	st->psi_has_full = has_full;
}

/* One second for trigger `ti` of session `si`. Called with the lock. */
static void evaluate(struct fr_triggers *t, uint32_t si, uint32_t ti,
		     const struct fr_pressure_tick *machine)
{
	const struct fr_config_session *s = &t->sessions[si];
	const struct fr_config_trigger *tr = &s->triggers[ti];
	struct trig_state *st = &t->state[si].trig[ti];
	struct fr_pressure_tick own;
	const struct fr_pressure_tick *tick = machine;
	double share, above = (double)tr->above_bp / 100.0, avg;
	int64_t start;
	char reason[FR_LIMIT_CGROUP_LEN + 192], dur[32], thr[32];
	struct pending *p;

	if (s->targets.cgroup[0]) {
		cgroup_second(t, s, tr, st, machine, &own);
		tick = &own;
	}
	share = tick_share(tick, tr);
	start = tick->mono_ns - tick->interval_ns;

	if (share < 0 || share < above) {
		st->above_since = 0;
		return;
	}
	/* A run goes on only from the second just before. */
	if (!st->above_since || st->psi_last_mono != start) {
		st->above_since = start;
		st->psi_share_ns = 0;
		st->above_ns = 0;
	}
	st->psi_share_ns += share * (double)tick->interval_ns;
	st->above_ns += tick->interval_ns;
	st->psi_last_mono = tick->mono_ns;
	if (tick->mono_ns - st->above_since + TICK_SLACK_NS < tr->for_ns)
		return;
	avg = st->above_ns > 0 ? st->psi_share_ns / (double)st->above_ns : share;
	snprintf(reason, sizeof(reason), "%s pressure %s %.1f%% >= %s for %s%s%s",
		 fr_pressure_resource_name(tr->resource), tr->full ? "full" : "some", avg,
		 fr_config_pressure_above(tr, thr, sizeof(thr)) + 5,
		 trig_fmt_dur(tr->for_ns, dur, sizeof(dur)),
		 s->targets.cgroup[0] ? " in cgroup " : "", s->targets.cgroup);
	/* A new run must last `for` again before the next fire. */
	st->above_since = 0;
	p = trig_fire(t, si, ti, reason, 0);
	if (p) {
		p->has_pressure = 1;
		p->pressure = (struct fr_trigger_pressure_hit){
			.resource = tr->resource,
			.full = tr->full,
			.share = avg,
			.above = above,
		};
		snprintf(p->pressure.cgroup, sizeof(p->pressure.cgroup), "%s", s->targets.cgroup);
	}
}

void trig_pressure_handle(struct fr_triggers *t)
{
	struct fr_pressure_tick q[PSI_QUEUE];
	uint32_t n;

	pthread_mutex_lock(&t->oom_lock);
	n = t->npsi;
	memcpy(q, t->psi_queue, n * sizeof(q[0]));
	t->npsi = 0;
	pthread_mutex_unlock(&t->oom_lock);
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t si = 0; si < t->nsessions; si++) {
			const struct fr_config_session *s = &t->sessions[si];

			for (uint32_t ti = 0; ti < s->ntriggers; ti++)
				if (s->triggers[ti].kind == FR_TRIGGER_PRESSURE)
					evaluate(t, si, ti, &q[i]);
		}
}
