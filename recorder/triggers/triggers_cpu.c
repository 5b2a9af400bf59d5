/* cpu_above triggers: CPU use measured per session once a second, the
 * whole machine from /proc/stat (busy = all but idle and iowait),
 * processes from /proc/PID/stat (utime + stime, following each process
 * by pid and start time so exits and pid reuse do not make the sum
 * jump), a cgroup from its cpu.stat usage_usec. percent = CPU time /
 * (wall time x CPUs) x 100. A trigger fires when the use stayed above
 * its threshold for its `for`. Runs on the engine's thread with its lock
 * held.
 */
#include "recorder/triggers/triggers_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util/grow.h"
#include "core/util/log.h"
#include "core/util/time.h"

static uint64_t boot_ticks(const struct fr_triggers *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * (uint64_t)t->clk_tck +
	       (uint64_t)ts.tv_nsec * (uint64_t)t->clk_tck / FR_NS_PER_S;
}

static int add_sample(struct cpu_meter *m, uint32_t pid, const struct fr_proc_stat *ps)
{
	if (FR_GROW(m->next, &m->cap_next, m->nnext + 1, 64) < 0)
		return -ENOMEM;
	m->next[m->nnext++] =
		(struct proc_sample){.pid = pid, .start = ps->start, .ticks = ps->ticks};
	return 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct proc_sample *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* CPU ticks the processes of `m->next` used since `m->procs` was taken:
 * a process seen both times by its increase, one started since by all it
 * used, one that only now became a target (an exec) by nothing. */
static uint64_t procs_delta(const struct cpu_meter *m)
{
	uint64_t sum = 0;
	uint32_t i = 0;

	for (uint32_t j = 0; j < m->nnext; j++) {
		const struct proc_sample *c = &m->next[j];

		while (i < m->nprocs && m->procs[i].pid < c->pid)
			i++;
		if (i < m->nprocs && m->procs[i].pid == c->pid && m->procs[i].start == c->start) {
			if (c->ticks > m->procs[i].ticks)
				sum += c->ticks - m->procs[i].ticks;
		} else if (c->start >= m->boot_ticks) {
			sum += c->ticks;
		}
	}
	return sum;
}

static int is_proc_session(const struct fr_config_session *s)
{
	return trig_has_kind(s, FR_TRIGGER_CPU_ABOVE) &&
	       (s->targets.npids || s->targets.ncomms || s->targets.has_uid);
}

/* Adds process `pid` to the measurement of every session whose targets
 * it is of (a session with a cgroup besides pids or comm counts only its
 * processes in the cgroup). */
static void sample_process(struct fr_triggers *t, uint32_t pid, const struct fr_proc_stat *ps)
{
	char cg[CG_LEN];
	int cg_state = 0; /* 0 not read, 1 read, -1 unknown */
	uint32_t uid = UID_UNKNOWN;
	int uid_read = 0;

	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!is_proc_session(s))
			continue;
		if (s->targets.cgroup[0] && cg_state == 0)
			cg_state = fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg)) == 0 ? 1 : -1;
		if (s->targets.has_uid && !uid_read) {
			if (fr_proc_read_uid(t->proc, pid, &uid) < 0)
				uid = UID_UNKNOWN;
			uid_read = 1;
		}
		if (!trig_targets_match(s, pid, ps->comm, cg_state == 1 ? cg : NULL, uid))
			continue;
		if (add_sample(&t->state[si].meter, pid, ps) < 0)
			fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
					   "session %s: out of memory measuring CPU use", s->name);
	}
}

static void cpu_evaluate(struct fr_triggers *t, uint32_t si, double pct, int64_t start, int64_t end)
{
	const struct fr_config_session *s = &t->sessions[si];

	for (uint32_t ti = 0; ti < s->ntriggers; ti++) {
		const struct fr_config_trigger *tr = &s->triggers[ti];
		struct trig_state *st = &t->state[si].trig[ti];
		char reason[128], dur[32];

		if (tr->kind != FR_TRIGGER_CPU_ABOVE)
			continue;
		if (pct < 0 || pct < (double)tr->percent) {
			st->above_since = 0;
			continue;
		}
		if (!st->above_since) {
			st->above_since = start;
			st->above_pct_ns = 0;
			st->above_ns = 0;
		}
		st->above_pct_ns += pct * (double)(end - start);
		st->above_ns += end - start;
		if (end - st->above_since + TICK_SLACK_NS < tr->for_ns)
			continue;
		snprintf(reason, sizeof(reason), "cpu %.0f%% >= %u%% for %s",
			 st->above_ns > 0 ? st->above_pct_ns / (double)st->above_ns : pct,
			 tr->percent, trig_fmt_dur(tr->for_ns, dur, sizeof(dur)));
		/* A new run must last `for` again before the next fire. */
		st->above_since = 0;
		trig_fire(t, si, ti, reason, 0);
	}
}

/* Measures process `pid` for the sessions it is a target of. */
static void sample_pid(void *arg, uint32_t pid)
{
	struct fr_triggers *t = arg;
	struct fr_proc_stat ps;

	if (fr_proc_read_stat(t->proc, pid, &ps) == 0)
		sample_process(t, pid, &ps);
}

/* The whole machine's counters, read once for every session measuring it. */
struct machine_use {
	int ok;
	uint64_t busy, total;
};

/* Starts a measurement: clears what each session's processes used and
 * reads the machine's counters when a session measures the machine. */
static void tick_begin(struct fr_triggers *t, int *need_scan, struct machine_use *mu)
{
	int need_machine = 0;

	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!trig_has_kind(s, FR_TRIGGER_CPU_ABOVE))
			continue;
		t->state[si].meter.nnext = 0;
		if (!trig_has_targets(s))
			need_machine = 1;
		/* Processes by name or by owner: only a scan finds them. */
		if (s->targets.ncomms || (s->targets.has_uid && !s->targets.npids))
			*need_scan = 1;
	}
	if (need_machine) {
		int ret = fr_proc_read_machine(t->proc, &mu->busy, &mu->total);

		mu->ok = ret == 0;
		if (ret < 0)
			fr_log_ratelimited(FR_LOG_WARN, 60 * FR_NS_PER_S,
					   "cpu_above: cannot read /proc/stat: %s", strerror(-ret));
	}
}

/* Samples the processes of every session measuring processes: all of
 * /proc when one selects by name or owner, else the pids listed. */
static void tick_sample(struct fr_triggers *t, int need_scan)
{
	if (need_scan) {
		(void)fr_proc_each_pid(t->proc, sample_pid, t);
		return;
	}
	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!is_proc_session(s))
			continue;
		for (uint32_t k = 0; k < s->targets.npids; k++) {
			struct fr_proc_stat ps;

			if (fr_proc_read_stat(t->proc, s->targets.pids[k], &ps) == 0)
				sample_process(t, s->targets.pids[k], &ps);
		}
	}
}

/* Adds to *cpu_ns what the cgroup of session `s` used since the last
 * tick, from its own counter. Returns 0, or -1 when it cannot be read
 * (logged once until it can be read again). */
static int cgroup_use(const struct fr_triggers *t, const struct fr_config_session *s,
		      struct cpu_meter *m, double *cpu_ns)
{
	uint64_t usec = 0;
	int ret = fr_proc_read_cgroup_usage(t->cgroot, s->targets.cgroup, &usec);

	if (ret < 0) {
		if (!m->warned)
			fr_log_warn("session %s: cannot read the CPU use of "
				    "cgroup %s (%s%s/cpu.stat: %s); its cpu_above "
				    "triggers wait until it can be read",
				    s->name, s->targets.cgroup, t->cgroot, s->targets.cgroup,
				    strerror(-ret));
		m->warned = 1;
		return -1;
	}
	m->warned = 0;
	if (m->valid && usec >= m->usage_us)
		*cpu_ns += (double)(usec - m->usage_us) * 1000.0;
	m->usage_us = usec;
	return 0;
}

/* CPU ns the processes sampled this tick used since the last one; this
 * tick's samples become the ones the next tick compares with. */
static double procs_use(const struct fr_triggers *t, struct cpu_meter *m)
{
	struct proc_sample *swap_p = m->procs;
	uint32_t swap_cap = m->cap_procs;
	double cpu_ns = 0;

	if (m->nnext > 1)
		qsort(m->next, m->nnext, sizeof(*m->next), cmp_sample);
	if (m->valid)
		cpu_ns = (double)procs_delta(m) * (double)FR_NS_PER_S / (double)t->clk_tck;
	m->procs = m->next;
	m->nprocs = m->nnext;
	m->cap_procs = m->cap_next;
	m->next = swap_p;
	m->cap_next = swap_cap;
	m->nnext = 0;
	return cpu_ns;
}

/* The CPU use of session `si` since the last tick in percent of the
 * machine, or -1 when unknown; *ok is cleared when a counter could not
 * be read. */
static double session_use(struct fr_triggers *t, uint32_t si, const struct machine_use *mu,
			  int64_t now, long ncpu, int *ok)
{
	const struct fr_config_session *s = &t->sessions[si];
	struct cpu_meter *m = &t->state[si].meter;
	int64_t wall = now - m->mono;
	double pct = -1, cpu_ns = 0;

	if (!trig_has_targets(s)) {
		*ok = mu->ok;
		if (*ok && m->valid && mu->total > m->total)
			pct = (double)(mu->busy - m->busy) / (double)(mu->total - m->total) * 100.0;
		m->busy = mu->busy;
		m->total = mu->total;
		return pct;
	}
	/* A cgroup alone is measured by its own counter; with pids or comm
	 * it selects among their processes. */
	if (s->targets.cgroup[0] && !is_proc_session(s) && cgroup_use(t, s, m, &cpu_ns) < 0)
		*ok = 0;
	if (is_proc_session(s))
		cpu_ns += procs_use(t, m);
	if (*ok && m->valid && wall > 0)
		pct = cpu_ns / ((double)wall * (double)ncpu) * 100.0;
	return pct;
}

void trig_cpu_tick(struct fr_triggers *t)
{
	int64_t now = trig_mono(t);
	uint64_t bt = boot_ticks(t);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct machine_use mu = {0};
	int need_scan = 0;

	if (ncpu < 1)
		ncpu = 1;
	tick_begin(t, &need_scan, &mu);
	tick_sample(t, need_scan);
	for (uint32_t si = 0; si < t->nsessions; si++) {
		struct cpu_meter *m = &t->state[si].meter;
		double pct;
		int ok = 1;

		if (!trig_has_kind(&t->sessions[si], FR_TRIGGER_CPU_ABOVE))
			continue;
		pct = session_use(t, si, &mu, now, ncpu, &ok);
		if (pct >= 0)
			cpu_evaluate(t, si, pct, m->mono, now);
		else if (!ok)
			cpu_evaluate(t, si, -1, m->mono, now);
		m->valid = ok;
		m->mono = now;
		m->boot_ticks = bt;
	}
}
