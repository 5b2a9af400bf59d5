/* Incident triggers (see triggers.h for the contract).
 *
 * One thread owns the decisions. It sleeps in poll() on an eventfd (woken
 * by forwarded signals, reloads and stop) and, when some session has an
 * exit trigger, on the proc connector (recorder/tracking/procwatch.h); when some
 * session has a cpu_above trigger it also wakes once a second to measure.
 * A trigger that fires and is not in its cooldown becomes a pending dump
 * due `after` later; due dumps are written one after another on this
 * thread, so a long `after` never holds back other triggers, and a slow
 * dump only delays what comes after it.
 *
 * Everything the engine knows (the sessions in force, per-trigger state,
 * pending dumps, per-session counters, the process table) is guarded by
 * one mutex, which is never held while the dump callback runs. Signals
 * are counted in atomics and the eventfd is written with write(2), so
 * fr_triggers_signal() is async-signal-safe.
 *
 * The engine reads time from the clock it was given (the machine's
 * monotonic and real-time clocks in the daemon), so a test can move time
 * itself; fr_triggers_sync() then tells it when the engine has acted on
 * what it was told.
 *
 * What cpu_above and exit triggers decide lives in triggers_cpu.c and
 * triggers_exit.c, the taking over of a configuration in
 * triggers_config.c; triggers_int.h is what they share.
 */
#include "recorder/triggers/triggers.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "recorder/triggers/triggers_int.h"

/* Durations in log lines and reasons: whole seconds as seconds ("60s",
 * as people configure them), anything else as fr_format_duration. */
char *trig_fmt_dur(int64_t ns, char *buf, size_t len)
{
	if (ns > 0 && ns % FR_NS_PER_S == 0)
		snprintf(buf, len, "%llds", (long long)(ns / FR_NS_PER_S));
	else
		fr_format_duration(ns, buf, len);
	return buf;
}

static void wake(struct fr_triggers *t)
{
	uint64_t one = 1;
	ssize_t n = write(t->evfd, &one, sizeof(one));

	(void)n; /* a full counter still wakes the thread */
}

void trig_wake(struct fr_triggers *t)
{
	wake(t);
}

/* ---- targets ----------------------------------------------------------- */

int trig_has_targets(const struct fr_config_session *s)
{
	return s->targets.npids || s->targets.ncomms || s->targets.cgroup[0] || s->targets.has_uid;
}

int trig_has_kind(const struct fr_config_session *s, uint32_t kind)
{
	for (uint32_t i = 0; i < s->ntriggers; i++)
		if (s->triggers[i].kind == kind)
			return 1;
	return 0;
}

static int pid_listed(const struct fr_config_session *s, uint32_t pid)
{
	for (uint32_t i = 0; i < s->targets.npids; i++)
		if (s->targets.pids[i] == pid)
			return 1;
	return 0;
}

static int comm_listed(const struct fr_config_session *s, const char *comm)
{
	if (!comm || !comm[0])
		return 0;
	for (uint32_t i = 0; i < s->targets.ncomms; i++)
		if (strcmp(s->targets.comms[i], comm) == 0)
			return 1;
	return 0;
}

/* Whether a process is of the session's targets: of each kind given (pids,
 * comm, cgroup, uid), one of its values, as profiles select
 * (core/query/profile.h). The uid matters because anyone can name a process
 * anything: without it, another user's process called like the target
 * would fire the trigger. */
int trig_targets_match(const struct fr_config_session *s, uint32_t pid, const char *comm,
		       const char *cgroup, uint32_t uid)
{
	return (!s->targets.npids || pid_listed(s, pid)) &&
	       (!s->targets.ncomms || comm_listed(s, comm)) &&
	       (!s->targets.cgroup[0] || fr_cgroup_within(cgroup, s->targets.cgroup)) &&
	       (!s->targets.has_uid || (uid != UID_UNKNOWN && uid == s->targets.uid));
}

/* ---- firing ------------------------------------------------------------ */

int trig_find_session(const struct fr_triggers *t, const char *name)
{
	for (uint32_t i = 0; i < t->nsessions; i++)
		if (strcmp(t->sessions[i].name, name) == 0)
			return (int)i;
	return -1;
}

int64_t trig_window_of(const struct fr_config_trigger *tr)
{
	return tr->window_ns > 0 ? tr->window_ns : DEFAULT_WINDOW_NS;
}

/* Trigger `ti` of session `si` fired: queues its dump unless it is in its
 * cooldown. Called with the lock held. */
struct pending *trig_fire(struct fr_triggers *t, uint32_t si, uint32_t ti, const char *reason,
			  uint32_t pid)
{
	const struct fr_config_session *s = &t->sessions[si];
	const struct fr_config_trigger *tr = &s->triggers[ti];
	struct sess_state *ss = &t->state[si];
	struct trig_state *st = &ss->trig[ti];
	int64_t mono = trig_mono(t), real = trig_real(t);
	int64_t window = trig_window_of(tr), after = tr->after_ns > 0 ? tr->after_ns : 0;
	char w[32], a[32];
	struct pending *p;

	if (st->fired && mono - st->last_fire_mono < tr->cooldown_ns) {
		ss->suppressed++;
		fr_log_ratelimited(FR_LOG_INFO, LOG_INTERVAL_NS,
				   "session %s: %s fired (%s) within its cooldown of %s; no dump "
				   "(%" PRIu64 " suppressed so far)",
				   s->name, fr_config_trigger_kind(tr->kind), reason,
				   trig_fmt_dur(tr->cooldown_ns, w, sizeof(w)), ss->suppressed);
		return NULL;
	}
	st->fired = 1;
	st->last_fire_mono = mono;
	if (after)
		fr_log_info("session %s: %s fired (%s); dumping %s and the next %s", s->name,
			    fr_config_trigger_kind(tr->kind), reason,
			    trig_fmt_dur(window, w, sizeof(w)), trig_fmt_dur(after, a, sizeof(a)));
	else
		fr_log_info("session %s: %s fired (%s); dumping %s", s->name,
			    fr_config_trigger_kind(tr->kind), reason,
			    trig_fmt_dur(window, w, sizeof(w)));
	if (t->npending >= MAX_PENDING) {
		fr_log_err("session %s: %u dumps are waiting already; this one is dropped", s->name,
			   t->npending);
		return NULL;
	}
	p = &t->pending[t->npending++];
	memset(p, 0, sizeof(*p));
	p->due_mono = mono + after;
	snprintf(p->session, sizeof(p->session), "%s", s->name);
	p->trigger = *tr;
	p->fire.session_index = si;
	p->fire.trigger_index = ti;
	p->fire.kind = fr_config_trigger_kind(tr->kind);
	snprintf(p->fire.reason, sizeof(p->fire.reason), "%s", reason);
	p->fire.fire_ns = real;
	p->fire.t0_ns = real - window;
	p->fire.t1_ns = real + after;
	p->fire.pid = pid;
	return p;
}

static void record_dump(struct fr_triggers *t, const char *session, int64_t fire_ns)
{
	int si = trig_find_session(t, session);

	if (si >= 0 && t->state[si].last_dump_ns < fire_ns)
		t->state[si].last_dump_ns = fire_ns;
}

/* Writes the dumps that are due, earliest first, without the lock. */
static void run_due(struct fr_triggers *t)
{
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		struct pending p;
		int64_t now = trig_mono(t);
		int best = -1, ret;

		pthread_mutex_lock(&t->lock);
		for (uint32_t i = 0; i < t->npending; i++)
			if (t->pending[i].due_mono <= now &&
			    (best < 0 || t->pending[i].due_mono < t->pending[best].due_mono))
				best = (int)i;
		if (best < 0) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
		p = t->pending[best];
		memmove(&t->pending[best], &t->pending[best + 1],
			(t->npending - (uint32_t)best - 1) * sizeof(p));
		t->npending--;
		pthread_mutex_unlock(&t->lock);

		p.fire.session = p.session;
		p.fire.trigger = &p.trigger;
		p.fire.oom = p.has_oom ? &p.oom : NULL;
		p.fire.crash = p.has_crash ? &p.crash : NULL;
		p.fire.pressure = p.has_pressure ? &p.pressure : NULL;
		ret = t->dump(t->arg, &p.fire, NULL, 0);

		if (ret == 0) {
			pthread_mutex_lock(&t->lock);
			record_dump(t, p.session, p.fire.fire_ns);
			pthread_mutex_unlock(&t->lock);
		}
	}
}

/* ---- signals ----------------------------------------------------------- */

static void handle_signals(struct fr_triggers *t)
{
	for (int signo = 1; signo <= MAX_SIGNAL; signo++) {
		uint32_t n = __atomic_exchange_n(&t->sigcount[signo], 0, __ATOMIC_ACQ_REL);
		char name[32];

		if (!n)
			continue;
		fr_config_signal_name(signo, name, sizeof(name));
		while (n--)
			for (uint32_t si = 0; si < t->nsessions; si++)
				for (uint32_t ti = 0; ti < t->sessions[si].ntriggers; ti++) {
					const struct fr_config_trigger *tr =
						&t->sessions[si].triggers[ti];

					if (tr->kind == FR_TRIGGER_SIGNAL && tr->signal == signo)
						trig_fire(t, si, ti, name, 0);
				}
	}
}

/* ---- the thread -------------------------------------------------------- */

/* Takes over a new configuration: the exit watcher it needs, and a
 * process table rebuilt for its targets. Called with the lock held. */
static void adopt(struct fr_triggers *t)
{
	if (t->watch_new) {
		fr_procwatch_close(t->watch);
		t->watch = t->watch_new;
		t->watch_new = NULL;
	}
	if (!t->has_exit && t->watch) {
		fr_procwatch_close(t->watch);
		t->watch = NULL;
	}
	fr_proc_table_fini(&t->procs);
	if (t->watch)
		trig_seed_procs(t);
	t->seen_gen = t->gen;
}

/* Handles what arrived since the last pass: a new configuration,
 * signals, process events, and the CPU measurement when `*next_tick` has
 * come. Returns -ECANCELED once the engine is stopping. Called with the
 * lock held. */
static int engine_pass(struct fr_triggers *t, struct fr_procwatch_handler *h, int watch_ready,
		       int64_t *next_tick)
{
	int64_t now;

	if (t->seen_gen != t->gen)
		adopt(t);
	if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
		return -ECANCELED;
	handle_signals(t);
	trig_oom_handle(t);
	trig_crash_handle(t);
	trig_pressure_handle(t);
	if (t->watch && watch_ready) {
		int ret = fr_procwatch_read_events(t->watch, h);

		if (ret < 0)
			fr_log_ratelimited(FR_LOG_ERR, LOG_INTERVAL_NS,
					   "exit triggers: reading the proc connector "
					   "failed: %s",
					   strerror(-ret));
	}
	now = trig_mono(t);
	if (t->has_cpu && now >= *next_tick) {
		trig_cpu_tick(t);
		*next_tick = (*next_tick ? *next_tick : now) + TICK_NS;
		if (*next_tick <= now)
			*next_tick = now + TICK_NS;
	}
	return 0;
}

/* Sleeps until the next tick, the next due dump, a wake-up or a process
 * event. Returns whether the exit watcher has events to read. */
static int engine_wait(struct fr_triggers *t, int64_t next_tick)
{
	struct pollfd pfd[2];
	nfds_t nfds = 1;
	int64_t now, wake_at = INT64_MAX;
	int timeout = -1;

	pthread_mutex_lock(&t->lock);
	now = trig_mono(t);
	if (t->has_cpu)
		wake_at = next_tick;
	for (uint32_t i = 0; i < t->npending; i++)
		if (t->pending[i].due_mono < wake_at)
			wake_at = t->pending[i].due_mono;
	pfd[0] = (struct pollfd){.fd = t->evfd, .events = POLLIN};
	if (t->watch)
		pfd[nfds++] = (struct pollfd){.fd = fr_procwatch_fd(t->watch), .events = POLLIN};
	pthread_mutex_unlock(&t->lock);

	if (wake_at != INT64_MAX) {
		int64_t ms = wake_at > now ? (wake_at - now + 999999) / 1000000 : 0;

		timeout = ms > 60000 ? 60000 : (int)ms;
	}
	if (poll(pfd, nfds, timeout) < 0 && errno != EINTR) {
		fr_log_ratelimited(FR_LOG_ERR, LOG_INTERVAL_NS, "triggers: poll: %s",
				   strerror(errno));
		usleep(100000);
	}
	if (pfd[0].revents & POLLIN) {
		uint64_t v;
		ssize_t r = read(t->evfd, &v, sizeof(v));

		(void)r;
	}
	return nfds > 1 && (pfd[1].revents & (POLLIN | POLLERR));
}

static void *engine_main(void *arg)
{
	struct fr_triggers *t = arg;
	struct fr_procwatch_handler h;
	int64_t next_tick = 0;
	int watch_ready = 0;

	trig_exit_handlers(t, &h);
	for (;;) {
		uint64_t sync_req;
		int ret;

		pthread_mutex_lock(&t->lock);
		/* Read first: what was asked before this is handled below. */
		sync_req = t->sync_req;
		ret = engine_pass(t, &h, watch_ready, &next_tick);
		pthread_mutex_unlock(&t->lock);
		if (ret < 0)
			break;

		run_due(t);

		pthread_mutex_lock(&t->lock);
		t->sync_done = sync_req;
		pthread_cond_broadcast(&t->synced);
		pthread_mutex_unlock(&t->lock);

		watch_ready = engine_wait(t, next_tick);
	}
	pthread_mutex_lock(&t->lock);
	t->sync_done = UINT64_MAX;
	pthread_cond_broadcast(&t->synced);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ---- API --------------------------------------------------------------- */

static void engine_free(struct fr_triggers *t)
{
	for (uint32_t i = 0; i < t->nsessions; i++)
		trig_meter_free(&t->state[i].meter);
	free(t->sessions);
	free(t->state);
	free(t->pending);
	fr_proc_table_fini(&t->procs);
	fr_procwatch_close(t->watch);
	fr_procwatch_close(t->watch_new);
	if (t->evfd >= 0)
		close(t->evfd);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->set_lock);
	pthread_mutex_destroy(&t->oom_lock);
	pthread_mutex_destroy(&t->crash_lock);
	pthread_cond_destroy(&t->synced);
	free(t);
}

/* Opens the exit watcher; logs and returns NULL when it cannot. */
static struct fr_procwatch *open_watch(void)
{
	struct fr_procwatch *w = NULL;
	char err[256];

	if (fr_procwatch_open(&w, err, sizeof(err)) < 0) {
		fr_log_err("exit triggers will not fire: %s", err);
		return NULL;
	}
	return w;
}

static int64_t machine_mono(void *ctx)
{
	(void)ctx;
	return fr_now_mono_ns();
}

static int64_t machine_real(void *ctx)
{
	(void)ctx;
	return fr_now_real_ns();
}

int fr_triggers_start(struct fr_triggers **out, const struct fr_config *cfg,
		      fr_trigger_dump_fn dump, void *arg, char *err, size_t errlen)
{
	return fr_triggers_start_clock(out, cfg, NULL, dump, arg, err, errlen);
}

int fr_triggers_start_clock(struct fr_triggers **out, const struct fr_config *cfg,
			    const struct fr_trigger_clock *clock, fr_trigger_dump_fn dump,
			    void *arg, char *err, size_t errlen)
{
	struct fr_triggers *t;
	sigset_t all, old;
	int ret;

	if (out)
		*out = NULL;
	if (!out || !cfg || !dump) {
		fr_set_err(err, errlen, "triggers: no configuration or dump callback");
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		fr_set_err(err, errlen, "triggers: out of memory");
		return -ENOMEM;
	}
	fr_mutex_init_pi(&t->lock);
	fr_mutex_init_pi(&t->set_lock);
	fr_mutex_init_pi(&t->oom_lock);
	fr_mutex_init_pi(&t->crash_lock);
	pthread_cond_init(&t->synced, NULL);
	fr_proc_table_init(&t->procs);
	if (clock && clock->mono_ns && clock->real_ns)
		t->clock = *clock;
	else
		t->clock =
			(struct fr_trigger_clock){.mono_ns = machine_mono, .real_ns = machine_real};
	t->dump = dump;
	t->arg = arg;
	t->clk_tck = sysconf(_SC_CLK_TCK);
	if (t->clk_tck <= 0)
		t->clk_tck = 100;
	t->proc = "/proc";
	fr_proc_cgroup_root(t->proc, t->cgroot, sizeof(t->cgroot));
	t->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->evfd < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "triggers: cannot create an eventfd: %s", strerror(-ret));
		goto err_free;
	}
	t->pending = calloc(MAX_PENDING, sizeof(*t->pending));
	if (!t->pending || trig_apply(t, cfg) < 0) {
		ret = -ENOMEM;
		fr_set_err(err, errlen, "triggers: out of memory");
		goto err_free;
	}
	if (t->has_exit)
		t->watch_new = open_watch();

	/* Signals are the daemon's: its thread must never receive one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&t->thread, NULL, engine_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0) {
		fr_set_err(err, errlen, "triggers: cannot start the thread: %s", strerror(-ret));
		goto err_free;
	}
	pthread_setname_np(t->thread, "fr-triggers");
	*out = t;
	return 0;

err_free:
	engine_free(t);
	return ret;
}

int fr_triggers_set(struct fr_triggers *t, const struct fr_config *cfg)
{
	struct fr_procwatch *w = NULL;
	int need, have, ret;

	if (!t || !cfg)
		return -EINVAL;
	need = trig_config_has_exit(cfg);
	pthread_mutex_lock(&t->set_lock);
	pthread_mutex_lock(&t->lock);
	have = t->watch || t->watch_new; /* both change only under the lock */
	pthread_mutex_unlock(&t->lock);
	/* Opening waits for the kernel's answer: not under the lock. */
	if (need && !have)
		w = open_watch();

	pthread_mutex_lock(&t->lock);
	ret = trig_apply(t, cfg);
	if (ret < 0) {
		pthread_mutex_unlock(&t->lock);
		fr_procwatch_close(w);
		goto out;
	}
	if (w) {
		fr_procwatch_close(t->watch_new);
		t->watch_new = w;
	}
	if (!need) {
		fr_procwatch_close(t->watch_new);
		t->watch_new = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	wake(t);
out:
	pthread_mutex_unlock(&t->set_lock);
	return ret;
}

void fr_triggers_sync(struct fr_triggers *t)
{
	uint64_t ticket;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	ticket = ++t->sync_req;
	pthread_mutex_unlock(&t->lock);
	wake(t);
	pthread_mutex_lock(&t->lock);
	while (t->sync_done < ticket)
		pthread_cond_wait(&t->synced, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

void fr_triggers_signal(struct fr_triggers *t, int signo)
{
	if (!t || signo < 1 || signo > MAX_SIGNAL)
		return;
	__atomic_add_fetch(&t->sigcount[signo], 1, __ATOMIC_ACQ_REL);
	wake(t);
}

int fr_triggers_manual(struct fr_triggers *t, const char *name, int64_t window_ns,
		       struct fr_trigger_fire *fire, char *path, size_t pathlen)
{
	return fr_triggers_manual_reason(t, name, window_ns, NULL, fire, path, pathlen);
}

int fr_triggers_manual_reason(struct fr_triggers *t, const char *name, int64_t window_ns,
			      const char *reason, struct fr_trigger_fire *fire, char *path,
			      size_t pathlen)
{
	const struct fr_config_session *s;
	struct manual_run run = {.session = name}, **pp;
	char w[32];
	int si, ret;

	if (path && pathlen)
		path[0] = '\0';
	if (!fire)
		return -EINVAL;
	memset(fire, 0, sizeof(*fire));
	if (!t || !name)
		return -EINVAL;
	fire->session = name;
	fire->kind = "manual";
	pthread_mutex_lock(&t->lock);
	si = trig_find_session(t, name);
	if (si < 0) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	/* One dump by hand per session at a time: requests arriving together
	 * would otherwise each build the same profile at once (a client could
	 * ask max_clients times), and the one being written already answers
	 * them. */
	for (struct manual_run *r = t->manual; r; r = r->next)
		if (strcmp(r->session, name) == 0) {
			pthread_mutex_unlock(&t->lock);
			return -EBUSY;
		}
	run.next = t->manual;
	t->manual = &run;
	s = &t->sessions[si];
	if (window_ns <= 0)
		window_ns = s->ntriggers ? trig_window_of(&s->triggers[0]) : DEFAULT_WINDOW_NS;
	fire->session_index = (uint32_t)si;
	snprintf(fire->reason, sizeof(fire->reason), "%s",
		 reason && reason[0] ? reason : "requested by hand");
	fire->fire_ns = trig_real(t);
	fire->t0_ns = fire->fire_ns - window_ns;
	fire->t1_ns = fire->fire_ns;
	pthread_mutex_unlock(&t->lock);

	fr_log_info("session %s: dump requested by hand (%s); dumping %s", name, fire->reason,
		    trig_fmt_dur(window_ns, w, sizeof(w)));
	ret = t->dump(t->arg, fire, path, pathlen);

	pthread_mutex_lock(&t->lock);
	for (pp = &t->manual; *pp; pp = &(*pp)->next)
		if (*pp == &run) {
			*pp = run.next;
			break;
		}
	if (ret == 0)
		record_dump(t, name, fire->fire_ns);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int64_t fr_triggers_last_dump(struct fr_triggers *t, uint32_t index)
{
	int64_t v = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	if (index < t->nsessions)
		v = t->state[index].last_dump_ns;
	pthread_mutex_unlock(&t->lock);
	return v;
}

uint64_t fr_triggers_suppressed(struct fr_triggers *t, uint32_t index)
{
	uint64_t v = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	if (index < t->nsessions)
		v = t->state[index].suppressed;
	pthread_mutex_unlock(&t->lock);
	return v;
}

void fr_triggers_stop(struct fr_triggers *t)
{
	if (!t)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	wake(t);
	pthread_join(t->thread, NULL);
	for (uint32_t i = 0; i < t->npending; i++) {
		int64_t left = t->pending[i].due_mono - trig_mono(t);
		char a[32];

		/* In whole milliseconds, which read better than nanoseconds. */
		left = left > 0 ? (left + 999999) / 1000000 * 1000000 : 0;
		fr_log_warn("session %s: the dump for %s (%s), due in %s, is dropped: the "
			    "recorder is stopping",
			    t->pending[i].session, t->pending[i].fire.kind,
			    t->pending[i].fire.reason, trig_fmt_dur(left, a, sizeof(a)));
	}
	engine_free(t);
}
