/* Incident triggers (see triggers.h for the contract).
 *
 * One thread owns the decisions. It sleeps in poll() on an eventfd (woken
 * by forwarded signals, reloads and stop) and, when some session has an
 * exit trigger, on the proc connector (recorder/procwatch.h); when some
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
 * Exit triggers must name a process after it is gone. The exit event
 * carries only pids and the wait status, so the engine keeps a table of
 * the processes that may be targets (pid -> command name, cgroup, uid),
 * seeded from /proc and kept current with the connector's fork, exec and
 * comm events; at exit it prefers what the zombie still shows in /proc.
 * The table holds at most 65536 processes, the oldest entry making room.
 *
 * CPU use is measured per session once a second: the whole machine from
 * /proc/stat (busy = all but idle and iowait), processes from
 * /proc/PID/stat (utime + stime, following each process by pid and start
 * time so exits and pid reuse do not make the sum jump), a cgroup from
 * its cpu.stat usage_usec. percent = CPU time / (wall time x CPUs) x 100.
 */
#include "recorder/triggers.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/parse.h"
#include "recorder/procwatch.h"
#include "recorder/proc.h"

#define NS_PER_S 1000000000LL
#define TICK_NS NS_PER_S
/* A run above the threshold counts as long enough when it misses `for`
 * by less than this: ticks are a second apart and never exact. */
#define TICK_SLACK_NS (TICK_NS / 10)
#define DEFAULT_WINDOW_NS (60 * NS_PER_S)
#define MAX_PENDING 256
#define MAX_SIGNAL 64
#define LOG_INTERVAL_NS (10 * NS_PER_S)
#define PT_MAX 65536
#define PT_BUCKETS 16384
#define COMM_LEN FR_PROC_COMM_LEN
/* Process cgroup paths as read; longer ones are cut (and then match
 * nothing they would not have matched whole, but for a cut exactly at a
 * configured path's end). */
#define CG_LEN 4096

/* A process whose uid could not be read: matches no uid target. (uid_t)-1
 * is no one's uid. */
#define UID_UNKNOWN UINT32_MAX

/* ---- process table: pid -> command name, cgroup, uid ------------------- */

struct pt_entry {
	uint32_t pid;
	int32_t hnext;        /* next in its bucket, or in the free list */
	int32_t older, newer; /* insertion order, for eviction */
	char comm[COMM_LEN];
	char *cgroup;         /* NULL: unknown */
	uint32_t uid;         /* real uid, or UID_UNKNOWN */
};

struct proc_table {
	struct pt_entry *e;
	uint32_t used, cap;
	int32_t *buckets; /* PT_BUCKETS heads; NULL until the first entry */
	int32_t free_head;
	int32_t oldest, newest;
};

static uint32_t pt_hash(uint32_t pid)
{
	return fr_hash_u32(pid) % PT_BUCKETS;
}

static void pt_init(struct proc_table *pt)
{
	memset(pt, 0, sizeof(*pt));
	pt->free_head = pt->oldest = pt->newest = -1;
}

static int32_t pt_find(const struct proc_table *pt, uint32_t pid)
{
	if (!pt->buckets)
		return -1;
	for (int32_t i = pt->buckets[pt_hash(pid)]; i >= 0; i = pt->e[i].hnext)
		if (pt->e[i].pid == pid)
			return i;
	return -1;
}

static void pt_unlink_age(struct proc_table *pt, int32_t i)
{
	struct pt_entry *x = &pt->e[i];

	if (x->older >= 0)
		pt->e[x->older].newer = x->newer;
	else
		pt->oldest = x->newer;
	if (x->newer >= 0)
		pt->e[x->newer].older = x->older;
	else
		pt->newest = x->older;
	x->older = x->newer = -1;
}

static void pt_link_newest(struct proc_table *pt, int32_t i)
{
	pt->e[i].older = pt->newest;
	pt->e[i].newer = -1;
	if (pt->newest >= 0)
		pt->e[pt->newest].newer = i;
	else
		pt->oldest = i;
	pt->newest = i;
}

static void pt_del(struct proc_table *pt, uint32_t pid)
{
	int32_t *link, i;

	if (!pt->buckets)
		return;
	for (link = &pt->buckets[pt_hash(pid)]; (i = *link) >= 0; link = &pt->e[i].hnext) {
		if (pt->e[i].pid != pid)
			continue;
		*link = pt->e[i].hnext;
		pt_unlink_age(pt, i);
		free(pt->e[i].cgroup);
		pt->e[i].cgroup = NULL;
		pt->e[i].hnext = pt->free_head;
		pt->free_head = i;
		pt->used--;
		return;
	}
}

/* Inserts or updates `pid`; `cgroup` NULL or "" when unknown. Returns 0 or
 * -ENOMEM (the table is then unchanged). */
static int pt_put(struct proc_table *pt, uint32_t pid, const char *comm, const char *cgroup,
		  uint32_t uid)
{
	char *cg = NULL;
	int32_t i;

	if (cgroup && cgroup[0]) {
		cg = strdup(cgroup);
		if (!cg)
			return -ENOMEM;
	}
	if (!pt->buckets) {
		pt->buckets = malloc(PT_BUCKETS * sizeof(*pt->buckets));
		if (!pt->buckets)
			goto err_nomem;
		for (uint32_t b = 0; b < PT_BUCKETS; b++)
			pt->buckets[b] = -1;
	}
	i = pt_find(pt, pid);
	if (i >= 0) {
		pt_unlink_age(pt, i);
		free(pt->e[i].cgroup);
		goto fill;
	}
	if (pt->used >= PT_MAX)
		pt_del(pt, pt->e[pt->oldest].pid);
	if (pt->free_head < 0) {
		uint32_t cap = pt->cap ? pt->cap * 2 : 256;
		struct pt_entry *e;

		if (cap > PT_MAX)
			cap = PT_MAX;
		e = realloc(pt->e, cap * sizeof(*e));
		if (!e)
			goto err_nomem;
		pt->e = e;
		for (uint32_t k = cap; k-- > pt->cap;) {
			e[k].hnext = pt->free_head;
			e[k].cgroup = NULL;
			pt->free_head = (int32_t)k;
		}
		pt->cap = cap;
	}
	i = pt->free_head;
	pt->free_head = pt->e[i].hnext;
	pt->e[i].pid = pid;
	pt->e[i].hnext = pt->buckets[pt_hash(pid)];
	pt->buckets[pt_hash(pid)] = i;
	pt->used++;
fill:
	snprintf(pt->e[i].comm, sizeof(pt->e[i].comm), "%s", comm ? comm : "");
	pt->e[i].cgroup = cg;
	pt->e[i].uid = uid;
	pt_link_newest(pt, i);
	return 0;

err_nomem:
	free(cg);
	return -ENOMEM;
}

static void pt_fini(struct proc_table *pt)
{
	for (uint32_t i = 0; i < pt->cap; i++)
		free(pt->e[i].cgroup);
	free(pt->e);
	free(pt->buckets);
	pt_init(pt);
}

/* ---- engine state ------------------------------------------------------ */

struct trig_state {
	int fired;
	int64_t last_fire_mono;
	int64_t above_since; /* cpu_above: start of the run above; 0: none */
	double above_pct_ns; /* sum of percent x duration over the run */
	int64_t above_ns;
};

struct proc_sample {
	uint32_t pid;
	uint64_t start; /* clock ticks after boot */
	uint64_t ticks; /* utime + stime */
};

struct cpu_meter {
	int valid; /* a previous measurement exists */
	int warned;
	int64_t mono;
	uint64_t busy, total;   /* whole machine, /proc/stat ticks */
	uint64_t usage_us;      /* cgroup */
	uint64_t boot_ticks;    /* clock ticks after boot at `mono` */
	struct proc_sample *procs, *next;
	uint32_t nprocs, nnext, cap_procs, cap_next;
};

struct sess_state {
	struct trig_state trig[FR_CONFIG_MAX_TRIGGERS];
	struct cpu_meter meter;
	int64_t last_dump_ns;
	uint64_t suppressed;
};

struct pending {
	int64_t due_mono;
	struct fr_trigger_fire fire;
	struct fr_config_trigger trigger;
	char session[FR_CONFIG_NAME_MAX];
};

/* A dump by hand in progress, on its caller's stack. */
struct manual_run {
	const char *session;
	struct manual_run *next;
};

struct fr_triggers {
	pthread_t thread;
	pthread_mutex_t lock;     /* guards everything below but the atomics */
	pthread_mutex_t set_lock; /* one fr_triggers_set at a time */
	fr_trigger_dump_fn dump;
	void *arg;
	int evfd;
	int stop;                             /* atomic */
	uint32_t sigcount[MAX_SIGNAL + 1];    /* atomic: forwarded, not handled */

	struct fr_config_session *sessions;
	struct sess_state *state;
	uint32_t nsessions;
	int has_cpu, has_exit, track_cgroup;
	uint64_t gen;                  /* bumped by each configuration */
	struct fr_procwatch *watch_new; /* handed to the thread */
	struct pending *pending;
	uint32_t npending;
	struct manual_run *manual;     /* dumps by hand being written */

	/* The thread's own. */
	struct fr_procwatch *watch;
	uint64_t seen_gen;
	struct proc_table procs;
	long clk_tck;
	const char *proc; /* "/proc" */
	char cgroot[512]; /* where cgroup2 is mounted */
};

/* Durations in log lines and reasons: whole seconds as seconds ("60s",
 * as people configure them), anything else as fr_format_duration. */
static char *fmt_dur(int64_t ns, char *buf, size_t len)
{
	if (ns > 0 && ns % NS_PER_S == 0)
		snprintf(buf, len, "%llds", (long long)(ns / NS_PER_S));
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

/* ---- targets ----------------------------------------------------------- */

static int has_targets(const struct fr_config_session *s)
{
	return s->npids || s->ncomms || s->cgroup[0] || s->has_uid;
}

static int has_kind(const struct fr_config_session *s, uint32_t kind)
{
	for (uint32_t i = 0; i < s->ntriggers; i++)
		if (s->triggers[i].kind == kind)
			return 1;
	return 0;
}

static int pid_listed(const struct fr_config_session *s, uint32_t pid)
{
	for (uint32_t i = 0; i < s->npids; i++)
		if (s->pids[i] == pid)
			return 1;
	return 0;
}

static int comm_listed(const struct fr_config_session *s, const char *comm)
{
	if (!comm || !comm[0])
		return 0;
	for (uint32_t i = 0; i < s->ncomms; i++)
		if (strcmp(s->comms[i], comm) == 0)
			return 1;
	return 0;
}

/* Whether a process is of the session's targets: of each kind given (pids,
 * comm, cgroup, uid), one of its values, as profiles select
 * (core/profile.h). The uid matters because anyone can name a process
 * anything: without it, another user's process called like the target
 * would fire the trigger. */
static int targets_match(const struct fr_config_session *s, uint32_t pid, const char *comm,
			 const char *cgroup, uint32_t uid)
{
	return (!s->npids || pid_listed(s, pid)) && (!s->ncomms || comm_listed(s, comm)) &&
	       (!s->cgroup[0] || fr_cgroup_within(cgroup, s->cgroup)) &&
	       (!s->has_uid || (uid != UID_UNKNOWN && uid == s->uid));
}

static int targets_equal(const struct fr_config_session *a, const struct fr_config_session *b)
{
	if (a->npids != b->npids || a->ncomms != b->ncomms || strcmp(a->cgroup, b->cgroup) != 0 ||
	    a->has_uid != b->has_uid || (a->has_uid && a->uid != b->uid))
		return 0;
	if (memcmp(a->pids, b->pids, a->npids * sizeof(a->pids[0])) != 0)
		return 0;
	for (uint32_t i = 0; i < a->ncomms; i++)
		if (strcmp(a->comms[i], b->comms[i]) != 0)
			return 0;
	return 1;
}

/* ---- /proc readers ----------------------------------------------------- */

/* The name of `pid` up to its first newline, as exit triggers match it. */
static int read_comm(const struct fr_triggers *t, uint32_t pid, char comm[COMM_LEN])
{
	int ret = fr_proc_read_comm(t->proc, pid, 0, comm, COMM_LEN);

	if (ret == 0)
		comm[strcspn(comm, "\n")] = '\0';
	return ret;
}

/* The real uid of `pid` (the first of /proc/PID/status "Uid:", as the
 * tracker records it), or UID_UNKNOWN. A zombie still shows it. */
static uint32_t read_uid(const struct fr_triggers *t, uint32_t pid)
{
	uint32_t uid;

	return fr_proc_read_uid(t->proc, pid, &uid) == 0 ? uid : UID_UNKNOWN;
}

static uint64_t boot_ticks(const struct fr_triggers *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * (uint64_t)t->clk_tck +
	       (uint64_t)ts.tv_nsec * (uint64_t)t->clk_tck / NS_PER_S;
}

/* ---- firing ------------------------------------------------------------ */

static int find_session(const struct fr_triggers *t, const char *name)
{
	for (uint32_t i = 0; i < t->nsessions; i++)
		if (strcmp(t->sessions[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int64_t window_of(const struct fr_config_trigger *tr)
{
	return tr->window_ns > 0 ? tr->window_ns : DEFAULT_WINDOW_NS;
}

/* Trigger `ti` of session `si` fired: queues its dump unless it is in its
 * cooldown. Called with the lock held. */
static void fire(struct fr_triggers *t, uint32_t si, uint32_t ti, const char *reason,
		 uint32_t pid)
{
	const struct fr_config_session *s = &t->sessions[si];
	const struct fr_config_trigger *tr = &s->triggers[ti];
	struct sess_state *ss = &t->state[si];
	struct trig_state *st = &ss->trig[ti];
	int64_t mono = fr_now_mono_ns(), real = fr_now_real_ns();
	int64_t window = window_of(tr), after = tr->after_ns > 0 ? tr->after_ns : 0;
	char w[32], a[32];
	struct pending *p;

	if (st->fired && mono - st->last_fire_mono < tr->cooldown_ns) {
		ss->suppressed++;
		fr_log_ratelimited(FR_LOG_INFO, LOG_INTERVAL_NS,
				   "session %s: %s fired (%s) within its cooldown of %s; no dump "
				   "(%" PRIu64 " suppressed so far)",
				   s->name, fr_config_trigger_kind(tr->kind), reason,
				   fmt_dur(tr->cooldown_ns, w, sizeof(w)), ss->suppressed);
		return;
	}
	st->fired = 1;
	st->last_fire_mono = mono;
	if (after)
		fr_log_info("session %s: %s fired (%s); dumping %s and the next %s", s->name,
			    fr_config_trigger_kind(tr->kind), reason, fmt_dur(window, w, sizeof(w)),
			    fmt_dur(after, a, sizeof(a)));
	else
		fr_log_info("session %s: %s fired (%s); dumping %s", s->name,
			    fr_config_trigger_kind(tr->kind),
			    reason, fmt_dur(window, w, sizeof(w)));
	if (t->npending >= MAX_PENDING) {
		fr_log_err("session %s: %u dumps are waiting already; this one is dropped",
			   s->name, t->npending);
		return;
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
}

static void record_dump(struct fr_triggers *t, const char *session, int64_t fire_ns)
{
	int si = find_session(t, session);

	if (si >= 0 && t->state[si].last_dump_ns < fire_ns)
		t->state[si].last_dump_ns = fire_ns;
}

/* Writes the dumps that are due, earliest first, without the lock. */
static void run_due(struct fr_triggers *t)
{
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		struct pending p;
		int64_t now = fr_now_mono_ns();
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
						fire(t, si, ti, name, 0);
				}
	}
}

/* ---- process exits ----------------------------------------------------- */

/* Whether a process may be some exit trigger's target. */
static int may_matter(const struct fr_triggers *t, uint32_t pid, const char *comm,
		      const char *cgroup, uint32_t uid)
{
	for (uint32_t si = 0; si < t->nsessions; si++)
		if (has_kind(&t->sessions[si], FR_TRIGGER_EXIT) &&
		    targets_match(&t->sessions[si], pid, comm, cgroup, uid))
			return 1;
	return 0;
}

/* Keeps process `pid` (called `comm`, in cgroup `cg`, of `uid`) in the
 * table when it may be some exit trigger's target, else forgets it. */
static void follow(struct fr_triggers *t, uint32_t pid, const char *comm, const char *cg,
		   uint32_t uid)
{
	if (!may_matter(t, pid, comm, cg, uid))
		pt_del(&t->procs, pid);
	else if (pt_put(&t->procs, pid, comm, cg, uid) < 0)
		fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
				   "exit triggers: out of memory; process %u (%s) is not followed",
				   pid, comm);
}

/* Learns what process `pid` is called and where it lives, from /proc or
 * (when it is gone already) from its parent's, and keeps it when it may
 * be a target. */
static void learn(struct fr_triggers *t, uint32_t pid, uint32_t parent)
{
	char comm[COMM_LEN] = "", cg[CG_LEN] = "";
	int32_t pi = parent ? pt_find(&t->procs, parent) : -1;
	uint32_t uid = read_uid(t, pid);

	if (uid == UID_UNKNOWN && parent)
		uid = pi >= 0 ? t->procs.e[pi].uid : read_uid(t, parent);
	if (read_comm(t, pid, comm) < 0 && parent) {
		if (pi >= 0)
			snprintf(comm, sizeof(comm), "%s", t->procs.e[pi].comm);
		else
			(void)read_comm(t, parent, comm);
	}
	if (t->track_cgroup && fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg)) < 0 && parent) {
		if (pi >= 0 && t->procs.e[pi].cgroup)
			snprintf(cg, sizeof(cg), "%s", t->procs.e[pi].cgroup);
		else
			(void)fr_proc_read_cgroup(t->proc, parent, cg, sizeof(cg));
	}
	follow(t, pid, comm, cg, uid);
}

static void on_fork(void *arg, uint32_t pid, uint32_t parent)
{
	struct fr_triggers *t = arg;
	int32_t pi = pt_find(&t->procs, parent);

	/* A child starts with its parent's name, cgroup and uid: copied from a
	 * parent that is followed, without reading /proc (forks are the
	 * busiest events). A parent not followed did not matter; its child
	 * is read in case the table missed the parent. */
	if (pi >= 0) {
		char comm[COMM_LEN], cg[CG_LEN] = "";

		memcpy(comm, t->procs.e[pi].comm, sizeof(comm));
		if (t->procs.e[pi].cgroup)
			snprintf(cg, sizeof(cg), "%s", t->procs.e[pi].cgroup);
		follow(t, pid, comm, cg, t->procs.e[pi].uid);
		return;
	}
	learn(t, pid, parent);
}

static void on_exec(void *arg, uint32_t pid)
{
	learn(arg, pid, 0);
}

static void on_comm(void *arg, uint32_t pid, const char *comm)
{
	struct fr_triggers *t = arg;
	int32_t i = pt_find(&t->procs, pid);
	char cg[CG_LEN] = "";
	/* A rename is the moment a process may start to look like a
	 * target, so its uid is read fresh rather than trusted from a
	 * fork long ago (a setuid since). */
	uint32_t uid = read_uid(t, pid);

	if (i >= 0 && t->procs.e[i].cgroup)
		snprintf(cg, sizeof(cg), "%s", t->procs.e[i].cgroup);
	else if (i < 0 && t->track_cgroup)
		(void)fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg));
	if (uid == UID_UNKNOWN && i >= 0)
		uid = t->procs.e[i].uid;
	follow(t, pid, comm, cg, uid);
}

static void on_exit_event(void *arg, uint32_t pid, uint32_t tgid, uint32_t exit_code,
			  uint32_t exit_signal)
{
	struct fr_triggers *t = arg;
	int status = (int)exit_code;
	char comm[COMM_LEN] = "", cg[CG_LEN] = "", reason[256], what[64];
	uint32_t uid = UID_UNKNOWN;
	struct fr_proc_stat ps;
	int32_t i;

	(void)tgid;
	(void)exit_signal;
	if (status == 0) {
		pt_del(&t->procs, pid);
		return;
	}
	/* While the parent has not reaped it, the zombie still shows its name,
	 * cgroup and uid, fresher than the table (a move without exec, a
	 * setuid); a live process under that pid would be a new one. */
	if (fr_proc_read_stat(t->proc, pid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X')) {
		snprintf(comm, sizeof(comm), "%s", ps.comm);
		if (t->track_cgroup)
			(void)fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg));
		uid = read_uid(t, pid);
	}
	i = pt_find(&t->procs, pid);
	if (i >= 0) {
		if (!comm[0])
			snprintf(comm, sizeof(comm), "%s", t->procs.e[i].comm);
		if (!cg[0] && t->procs.e[i].cgroup)
			snprintf(cg, sizeof(cg), "%s", t->procs.e[i].cgroup);
		if (uid == UID_UNKNOWN)
			uid = t->procs.e[i].uid;
		pt_del(&t->procs, pid);
	}

	if (WIFSIGNALED(status)) {
		char sig[32];

		fr_config_signal_name(WTERMSIG(status), sig, sizeof(sig));
		snprintf(what, sizeof(what), "killed by %s%s", sig,
			 WCOREDUMP(status) ? " (core dumped)" : "");
	} else {
		snprintf(what, sizeof(what), "exited with status %d", WEXITSTATUS(status));
	}
	if (comm[0])
		snprintf(reason, sizeof(reason), "pid %u (%s) %s", pid, comm, what);
	else
		snprintf(reason, sizeof(reason), "pid %u %s", pid, what);

	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!has_kind(s, FR_TRIGGER_EXIT) || !targets_match(s, pid, comm, cg, uid))
			continue;
		for (uint32_t ti = 0; ti < s->ntriggers; ti++)
			if (s->triggers[ti].kind == FR_TRIGGER_EXIT)
				fire(t, si, ti, reason, pid);
	}
}

static void seed_one(void *arg, uint32_t pid)
{
	learn(arg, pid, 0);
}

/* Fills the process table from /proc (start and reloads). */
static void seed_procs(struct fr_triggers *t)
{
	int ret = fr_proc_each_pid(t->proc, seed_one, t);

	if (ret < 0)
		fr_log_warn("exit triggers: cannot list %s: %s", t->proc, strerror(-ret));
}

/* ---- CPU use ----------------------------------------------------------- */

static int add_sample(struct cpu_meter *m, uint32_t pid, const struct fr_proc_stat *ps)
{
	if (m->nnext == m->cap_next) {
		uint32_t cap = m->cap_next ? m->cap_next * 2 : 64;
		struct proc_sample *n = realloc(m->next, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->next = n;
		m->cap_next = cap;
	}
	m->next[m->nnext++] = (struct proc_sample){.pid = pid, .start = ps->start,
						   .ticks = ps->ticks};
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
	return has_kind(s, FR_TRIGGER_CPU_ABOVE) && (s->npids || s->ncomms || s->has_uid);
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
		if (s->cgroup[0] && cg_state == 0)
			cg_state = fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg)) == 0 ? 1 : -1;
		if (s->has_uid && !uid_read) {
			uid = read_uid(t, pid);
			uid_read = 1;
		}
		if (!targets_match(s, pid, ps->comm, cg_state == 1 ? cg : NULL, uid))
			continue;
		if (add_sample(&t->state[si].meter, pid, ps) < 0)
			fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
					   "session %s: out of memory measuring CPU use", s->name);
	}
}

static void cpu_evaluate(struct fr_triggers *t, uint32_t si, double pct, int64_t start,
			 int64_t end)
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
			 tr->percent, fmt_dur(tr->for_ns, dur, sizeof(dur)));
		/* A new run must last `for` again before the next fire. */
		st->above_since = 0;
		fire(t, si, ti, reason, 0);
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

/* One measurement of every session with a cpu_above trigger. */
static void cpu_tick(struct fr_triggers *t)
{
	int64_t now = fr_now_mono_ns();
	uint64_t bt = boot_ticks(t), busy = 0, total = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int need_machine = 0, need_scan = 0, machine_ok = 0;

	if (ncpu < 1)
		ncpu = 1;
	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!has_kind(s, FR_TRIGGER_CPU_ABOVE))
			continue;
		t->state[si].meter.nnext = 0;
		if (!has_targets(s))
			need_machine = 1;
		/* Processes by name or by owner: only a scan finds them. */
		if (s->ncomms || (s->has_uid && !s->npids))
			need_scan = 1;
	}
	if (need_machine) {
		int ret = fr_proc_read_machine(t->proc, &busy, &total);

		machine_ok = ret == 0;
		if (ret < 0)
			fr_log_ratelimited(FR_LOG_WARN, 60 * NS_PER_S,
					   "cpu_above: cannot read /proc/stat: %s", strerror(-ret));
	}
	if (need_scan) {
		(void)fr_proc_each_pid(t->proc, sample_pid, t);
	} else {
		for (uint32_t si = 0; si < t->nsessions; si++) {
			const struct fr_config_session *s = &t->sessions[si];

			if (!is_proc_session(s))
				continue;
			for (uint32_t k = 0; k < s->npids; k++) {
				struct fr_proc_stat ps;

				if (fr_proc_read_stat(t->proc, s->pids[k], &ps) == 0)
					sample_process(t, s->pids[k], &ps);
			}
		}
	}

	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];
		struct cpu_meter *m = &t->state[si].meter;
		int64_t wall = now - m->mono;
		double pct = -1, cpu_ns = 0;
		int ok = 1;

		if (!has_kind(s, FR_TRIGGER_CPU_ABOVE))
			continue;
		if (!has_targets(s)) {
			ok = machine_ok;
			if (ok && m->valid && total > m->total)
				pct = (double)(busy - m->busy) / (double)(total - m->total) * 100.0;
			m->busy = busy;
			m->total = total;
		} else {
			/* A cgroup alone is measured by its own counter; with
			 * pids or comm it selects among their processes. */
			if (s->cgroup[0] && !is_proc_session(s)) {
				uint64_t usec = 0;
				int ret = fr_proc_read_cgroup_usage(t->cgroot, s->cgroup, &usec);

				if (ret < 0) {
					if (!m->warned)
						fr_log_warn("session %s: cannot read the CPU use of "
							    "cgroup %s (%s%s/cpu.stat: %s); its cpu_above "
							    "triggers wait until it can be read",
							    s->name, s->cgroup, t->cgroot, s->cgroup,
							    strerror(-ret));
					m->warned = 1;
					ok = 0;
				} else {
					m->warned = 0;
					if (m->valid && usec >= m->usage_us)
						cpu_ns += (double)(usec - m->usage_us) * 1000.0;
					m->usage_us = usec;
				}
			}
			if (is_proc_session(s)) {
				struct proc_sample *swap_p = m->procs;
				uint32_t swap_cap = m->cap_procs;

				if (m->nnext > 1)
					qsort(m->next, m->nnext, sizeof(*m->next), cmp_sample);
				if (m->valid)
					cpu_ns += (double)procs_delta(m) * (double)NS_PER_S /
						  (double)t->clk_tck;
				m->procs = m->next;
				m->nprocs = m->nnext;
				m->cap_procs = m->cap_next;
				m->next = swap_p;
				m->cap_next = swap_cap;
				m->nnext = 0;
			}
			if (ok && m->valid && wall > 0)
				pct = cpu_ns / ((double)wall * (double)ncpu) * 100.0;
		}
		if (pct >= 0)
			cpu_evaluate(t, si, pct, m->mono, now);
		else if (!ok)
			cpu_evaluate(t, si, -1, m->mono, now);
		m->valid = ok;
		m->mono = now;
		m->boot_ticks = bt;
	}
}

/* ---- configuration ----------------------------------------------------- */

static void meter_free(struct cpu_meter *m)
{
	free(m->procs);
	free(m->next);
	memset(m, 0, sizeof(*m));
}

static int config_has_exit(const struct fr_config *cfg)
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

/* Installs the sessions of `cfg`, carrying over what belongs to sessions
 * and triggers that stay: per session (by name) its counters and, when
 * its targets are the same, its CPU measurement; per trigger (same session
 * name, same index, same kind) its cooldown, and for cpu_above with the
 * same threshold its run above it. Pending dumps follow their session to
 * its new index; those of removed sessions are dropped. Called with the
 * lock held. Returns 0 or -ENOMEM (nothing changed). */
static int apply(struct fr_triggers *t, const struct fr_config *cfg)
{
	uint32_t n = cfg->nsessions < FR_CONFIG_MAX_SESSIONS ? cfg->nsessions
							       : FR_CONFIG_MAX_SESSIONS;
	struct fr_config_session *sessions = calloc(n ? n : 1, sizeof(*sessions));
	struct sess_state *state = calloc(n ? n : 1, sizeof(*state));
	uint32_t kept = 0;

	if (!sessions || !state) {
		free(sessions);
		free(state);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct fr_config_session *s = &sessions[i];
		int old;

		*s = cfg->sessions[i];
		s->name[sizeof(s->name) - 1] = '\0';
		s->cgroup[sizeof(s->cgroup) - 1] = '\0';
		if (s->ntriggers > FR_CONFIG_MAX_TRIGGERS)
			s->ntriggers = FR_CONFIG_MAX_TRIGGERS;
		if (s->npids > FR_CONFIG_MAX_TARGETS)
			s->npids = FR_CONFIG_MAX_TARGETS;
		if (s->ncomms > FR_CONFIG_MAX_COMMS)
			s->ncomms = FR_CONFIG_MAX_COMMS;
		for (uint32_t k = 0; k < s->ncomms; k++)
			s->comms[k][FR_CONFIG_COMM_MAX - 1] = '\0';

		old = find_session(t, s->name);
		if (old < 0)
			continue;
		{
			const struct fr_config_session *os = &t->sessions[old];
			struct sess_state *ost = &t->state[old];

			state[i].last_dump_ns = ost->last_dump_ns;
			state[i].suppressed = ost->suppressed;
			for (uint32_t k = 0; k < s->ntriggers && k < os->ntriggers; k++) {
				const struct fr_config_trigger *a = &s->triggers[k], *b = &os->triggers[k];

				if (a->kind != b->kind)
					continue;
				state[i].trig[k].fired = ost->trig[k].fired;
				state[i].trig[k].last_fire_mono = ost->trig[k].last_fire_mono;
				if (a->kind == FR_TRIGGER_CPU_ABOVE && a->percent == b->percent &&
				    targets_equal(s, os)) {
					state[i].trig[k].above_since = ost->trig[k].above_since;
					state[i].trig[k].above_pct_ns = ost->trig[k].above_pct_ns;
					state[i].trig[k].above_ns = ost->trig[k].above_ns;
				}
			}
			if (has_kind(s, FR_TRIGGER_CPU_ABOVE) && has_kind(os, FR_TRIGGER_CPU_ABOVE) &&
			    targets_equal(s, os)) {
				state[i].meter = ost->meter;
				memset(&ost->meter, 0, sizeof(ost->meter));
			}
		}
	}

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

	for (uint32_t i = 0; i < t->nsessions; i++)
		meter_free(&t->state[i].meter);
	free(t->sessions);
	free(t->state);
	t->sessions = sessions;
	t->state = state;
	t->nsessions = n;
	t->has_cpu = t->has_exit = t->track_cgroup = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (has_kind(&sessions[i], FR_TRIGGER_CPU_ABOVE))
			t->has_cpu = 1;
		if (has_kind(&sessions[i], FR_TRIGGER_EXIT)) {
			t->has_exit = 1;
			if (sessions[i].cgroup[0])
				t->track_cgroup = 1;
		}
	}
	t->gen++;
	return 0;
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
	pt_fini(&t->procs);
	if (t->watch)
		seed_procs(t);
	t->seen_gen = t->gen;
}

static void *engine_main(void *arg)
{
	struct fr_triggers *t = arg;
	struct fr_procwatch_handler h = {
		.exit = on_exit_event,
		.fork = on_fork,
		.exec = on_exec,
		.comm = on_comm,
		.arg = t,
	};
	int64_t next_tick = 0;
	int watch_ready = 0;

	for (;;) {
		struct pollfd pfd[2];
		nfds_t nfds = 1;
		int64_t now, wake_at = INT64_MAX;
		int timeout = -1;

		pthread_mutex_lock(&t->lock);
		if (t->seen_gen != t->gen)
			adopt(t);
		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&t->lock);
			break;
		}
		handle_signals(t);
		if (t->watch && watch_ready) {
			int ret = fr_procwatch_read_events(t->watch, &h);

			if (ret < 0)
				fr_log_ratelimited(FR_LOG_ERR, LOG_INTERVAL_NS,
						   "exit triggers: reading the proc connector "
						   "failed: %s",
						   strerror(-ret));
		}
		now = fr_now_mono_ns();
		if (t->has_cpu && now >= next_tick) {
			cpu_tick(t);
			next_tick = (next_tick ? next_tick : now) + TICK_NS;
			if (next_tick <= now)
				next_tick = now + TICK_NS;
		}
		pthread_mutex_unlock(&t->lock);

		run_due(t);

		pthread_mutex_lock(&t->lock);
		now = fr_now_mono_ns();
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
		watch_ready = nfds > 1 && (pfd[1].revents & (POLLIN | POLLERR));
	}
	return NULL;
}

/* ---- API --------------------------------------------------------------- */

static void engine_free(struct fr_triggers *t)
{
	for (uint32_t i = 0; i < t->nsessions; i++)
		meter_free(&t->state[i].meter);
	free(t->sessions);
	free(t->state);
	free(t->pending);
	pt_fini(&t->procs);
	fr_procwatch_close(t->watch);
	fr_procwatch_close(t->watch_new);
	if (t->evfd >= 0)
		close(t->evfd);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->set_lock);
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

int fr_triggers_start(struct fr_triggers **out, const struct fr_config *cfg,
		      fr_trigger_dump_fn dump, void *arg, char *err, size_t errlen)
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
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->set_lock, NULL);
	pt_init(&t->procs);
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
	if (!t->pending || apply(t, cfg) < 0) {
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
	need = config_has_exit(cfg);
	pthread_mutex_lock(&t->set_lock);
	pthread_mutex_lock(&t->lock);
	have = t->watch || t->watch_new; /* both change only under the lock */
	pthread_mutex_unlock(&t->lock);
	/* Opening waits for the kernel's answer: not under the lock. */
	if (need && !have)
		w = open_watch();

	pthread_mutex_lock(&t->lock);
	ret = apply(t, cfg);
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
	si = find_session(t, name);
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
		window_ns = s->ntriggers ? window_of(&s->triggers[0]) : DEFAULT_WINDOW_NS;
	fire->session_index = (uint32_t)si;
	snprintf(fire->reason, sizeof(fire->reason), "requested by hand");
	fire->fire_ns = fr_now_real_ns();
	fire->t0_ns = fire->fire_ns - window_ns;
	fire->t1_ns = fire->fire_ns;
	pthread_mutex_unlock(&t->lock);

	fr_log_info("session %s: dump requested by hand; dumping %s", name,
		    fmt_dur(window_ns, w, sizeof(w)));
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
		int64_t left = t->pending[i].due_mono - fr_now_mono_ns();
		char a[32];

		/* In whole milliseconds, which read better than nanoseconds. */
		left = left > 0 ? (left + 999999) / 1000000 * 1000000 : 0;
		fr_log_warn("session %s: the dump for %s (%s), due in %s, is dropped: the "
			    "recorder is stopping",
			    t->pending[i].session, t->pending[i].fire.kind, t->pending[i].fire.reason,
			    fmt_dur(left, a, sizeof(a)));
	}
	engine_free(t);
}
