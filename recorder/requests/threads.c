/* flightrec threads: every thread of the asked processes, now, with its
 * state, what it waits in, how long, and a stack, built without stopping
 * or signalling anyone (no ptrace).
 *
 * Where each field comes from:
 *  - state, CPU time, name, wchan and the system call: /proc/PID/task/TID
 *    (recorder/tracking/proc_threads.h), read on the request's connection thread;
 *    /proc's R is both on a CPU and waiting for one: a thread the open-wait
 *    records list as runnable (FR_EVENT_OFFCPU_RUNNABLE) is "runnable",
 *    with the time since it left the CPU and the stack where it did;
 *  - how long a thread that is not running has waited: now minus when it
 *    left the CPU, from the open-wait records (core/store/chunk.h "OPEN
 *    WAITS") of the seal the request's flush barrier forced, read from
 *    the ring right after it. So the ingest thread's pairing table is
 *    never touched: the ring is the snapshot, as of a few milliseconds
 *    before the answer (a thread that woke and blocked again in between
 *    is counted from its earlier wait);
 *  - the stack: a profile of the last THREADS_WINDOW_NS of the ring for
 *    the same processes, events offcpu and cpu, built by the query code
 *    (core/query/profile.h). A thread that is not running gets its
 *    off-CPU row with the most time (for a thread still blocked, the open
 *    waits put its whole wait in the window on the stack where it
 *    blocked); a running thread (or one with no off-CPU row) its cpu row
 *    with the most samples;
 *  - the creator (the thread that created it): from the thread tables of
 *    the same last chunks (core/store/chunk.h, section 2), which hold the
 *    threads that ran or were blocked then (with offcpu recorded, every
 *    blocked thread is, through its open-wait record); unknown for a
 *    thread created before the recorder started, or absent from them.
 *
 * The answer is a gzip'ed pprof written into the regular file the client
 * passed: one sample per thread, values threads/count and
 * waiting/nanoseconds, labels pid, tid, thread, state, wait, syscall,
 * wchan, waiting_ns, cpu_ns, creator, stack ("blocked", "runnable",
 * "on-cpu" or absent).
 *
 * Bounds: at most THREADS_MAX threads are listed; each costs three small
 * reads of /proc, and the profile is one query of the window for the
 * target processes under the query memory budget.
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/query/profile_value.h"
#include "core/query/thread_sample.h"
#include "core/query/threads_at.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/fs.h"
#include "core/util/grow.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "fr_version.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "recorder/tracking/proc_threads.h"
#include "recorder/requests/threads.h"
#include "recorder/requests/threads_python.h"
#include "recorder/requests/peer.h"

#define THREADS_PROC "/proc"

struct thr {
	uint32_t pid;
	struct fr_proc_thread t;
	ssize_t off, cpu; /* best offcpu and cpu rows of the profile, or -1 */
	int64_t off_ns, cpu_n;
	int64_t out_ns;	  /* left the CPU then (Unix ns), by the latest records; 0: not */
	int runnable;	  /* the latest records say it is in the run queue */
	uint32_t creator; /* the thread that created it, by the ring's chunks; 0: unknown */
	int hidden;	  /* the asker may not read its process (fr_proc_may_read()) */
	char *python;	  /* its Python stack now (threads_python.h), or NULL */
};

struct listing {
	const struct fr_targets *targets;
	int has_uid;
	uint32_t uid, gid; /* with has_uid: the asker's, from its credentials */
	uint32_t *pids;
	size_t npids, pids_cap;
	struct thr *thr;
	size_t n, cap;
	uint32_t pid;	/* the process being listed */
	int pid_hidden; /* the asker may not read it */
	size_t nhidden; /* processes listed with their state only */
	int full;	/* THREADS_MAX reached */
};

/* Whether process `pid` is one of the targets (and the asker's). */
static int wanted(const struct listing *l, uint32_t pid)
{
	const struct fr_targets *t = l->targets;
	uint32_t uid;
	int ok = !t->npids;

	for (uint32_t i = 0; i < t->npids && !ok; i++)
		ok = t->pids[i] == pid;
	ok = ok && fr_proc_matches(THREADS_PROC, pid, t);
	if (ok && l->has_uid)
		ok = fr_proc_read_uid(THREADS_PROC, pid, &uid) == 0 && uid == l->uid;
	return ok;
}

static void add_tid(void *arg, uint32_t tid)
{
	struct listing *l = arg;
	struct thr *th;

	if (FR_GROW(l->thr, &l->cap, l->n + 1, 64) < 0)
		return;
	th = &l->thr[l->n];
	/* Gone since the directory was listed: not a thread any more. */
	if (fr_proc_read_thread(THREADS_PROC, l->pid, tid, &th->t) < 0)
		return;
	th->pid = l->pid;
	th->off = th->cpu = -1;
	th->off_ns = th->cpu_n = th->out_ns = 0;
	th->runnable = 0;
	th->creator = 0;
	th->hidden = l->pid_hidden;
	th->python = NULL;
	l->n++;
}

/* A process whose /proc files the kernel hides from the asker (another
 * user's credentials in it, set-user-ID, or not dumpable: ptrace rules)
 * is listed as ps shows it, with what its threads wait in and their
 * stacks left out. Judged before its threads are read and again after,
 * so an exec of a set-user-ID program in between hides what was read. */
static int hide_unreadable(struct listing *l, size_t from)
{
	if (!l->has_uid ||
	    (!l->pid_hidden && fr_proc_may_read(THREADS_PROC, l->pid, l->uid, l->gid)))
		return 0;
	for (size_t i = from; i < l->n; i++) {
		l->thr[i].hidden = 1;
		l->thr[i].t.wchan[0] = '\0';
		l->thr[i].t.syscall = FR_PROC_SYSCALL_UNKNOWN;
	}
	l->nhidden++;
	return 1;
}

static void add_pid(void *arg, uint32_t pid)
{
	struct listing *l = arg;
	size_t before = l->n;

	if (l->n >= THREADS_MAX) {
		l->full = 1;
		return;
	}
	if (!wanted(l, pid))
		return;
	l->pid = pid;
	l->pid_hidden = l->has_uid && !fr_proc_may_read(THREADS_PROC, pid, l->uid, l->gid);
	if (fr_proc_each_tid(THREADS_PROC, pid, (uint32_t)(THREADS_MAX - l->n), add_tid, l) < 0 ||
	    l->n == before)
		return;
	/* The bound may cut this process's list: say so. */
	if (l->n >= THREADS_MAX)
		l->full = 1;
	/* Counted apart, and left out of the profile of the stacks. */
	if (hide_unreadable(l, before))
		return;
	if (FR_GROW(l->pids, &l->pids_cap, l->npids + 1, 16) < 0)
		return;
	l->pids[l->npids++] = pid;
}

static int by_tid(const void *a, const void *b)
{
	const struct thr *x = a, *y = b;

	return x->t.tid < y->t.tid ? -1 : x->t.tid > y->t.tid;
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct thr *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return by_tid(a, b);
}

/* Lists the threads of the targets from /proc, sorted by tid. */
static void list_threads(struct listing *l)
{
	const struct fr_targets *t = l->targets;

	if (t->npids)
		for (uint32_t i = 0; i < t->npids; i++)
			add_pid(l, t->pids[i]);
	else
		fr_proc_each_pid(THREADS_PROC, add_pid, l);
	if (l->n)
		qsort(l->thr, l->n, sizeof(*l->thr), by_tid);
}

/* Gives each listed thread its best offcpu and cpu rows of `p`. */
static void match_rows(struct listing *l, const struct fr_profile *p)
{
	int coff = fr_profile_event_column(p, FR_EVENT_OFFCPU);
	int ccpu = fr_profile_event_column(p, FR_EVENT_CPU);
	struct fr_profile_sample s;

	for (size_t i = 0; i < fr_profile_nsamples(p); i++) {
		struct thr key, *th;
		int64_t v;

		fr_profile_sample(p, i, &s);
		key.t.tid = s.tid;
		th = bsearch(&key, l->thr, l->n, sizeof(*l->thr), by_tid);
		/* A tid of the window may since be another process's. */
		if (!th || th->pid != s.pid || th->hidden)
			continue;
		v = coff >= 0 ? s.values[coff] : 0;
		if (v > th->off_ns) {
			th->off_ns = v;
			th->off = (ssize_t)i;
		}
		v = ccpu >= 0 ? s.values[ccpu] : 0;
		if (v > th->cpu_n) {
			th->cpu_n = v;
			th->cpu = (ssize_t)i;
		}
	}
}

/* Builds the profile of the window for the listed processes, as a value
 * into *out. Returns 0 or -errno (-EBUSY: no query memory). */
static int window_profile(struct daemon *d, struct listing *l, struct fr_profile **out, char *err,
			  size_t errlen)
{
	struct fr_profile_request *preq = calloc(1, sizeof(*preq));
	struct daemon_symbol_paths sp = {0};
	struct fr_profile_result *res = calloc(1, sizeof(*res));
	int64_t reserved = -1;
	int ret = -ENOMEM;

	*out = NULL;
	if (!preq || !res)
		goto out;
	preq->t1 = fr_now_real_ns();
	preq->t0 = preq->t1 - THREADS_WINDOW_NS;
	preq->nevents = 2;
	preq->events[0] = FR_EVENT_OFFCPU;
	preq->events[1] = FR_EVENT_CPU;
	preq->version = FR_VERSION;
	preq->targets = *l->targets;
	if (l->npids <= FR_LIMIT_PIDS) {
		/* Exactly the processes listed (whose stacks the asker may
		 * see): no comm or cgroup to check again. */
		memset(&preq->targets, 0, sizeof(preq->targets));
		memcpy(preq->targets.pids, l->pids, l->npids * sizeof(*l->pids));
		preq->targets.npids = (uint32_t)l->npids;
	}
	preq->targets.has_uid = l->has_uid;
	preq->targets.uid = l->uid;
	reserved = daemon_query_reserve(d, preq);
	if (reserved < 0) {
		ret = -EBUSY;
		goto out;
	}
	if (daemon_symbol_paths(d, preq, &sp) < 0)
		goto out;
	ret = fr_profile_build(d->ring, preq, out, res, err, errlen);
out:
	if (reserved >= 0)
		daemon_query_release(d, preq->targets.has_uid, reserved);
	daemon_symbol_paths_fini(&sp);
	free(res);
	free(preq);
	return ret;
}

/* How far back the latest open-wait records are looked for: the seal the
 * request's flush barrier forced wrote them, or (offcpu not recorded, a
 * barrier that timed out) the periodic one of the last second. */
#define OPEN_LOOK_NS (3 * FR_NS_PER_S)

/* Records the open waits of `c` of the latest seal seen so far (*asof). */
static void open_records(struct listing *l, const struct fr_chunk *c, int64_t *asof)
{
	for (uint32_t k = 0; k < c->nsamples; k++) {
		struct thr key, *th;

		if (!FR_EVENT_IS_OPEN_WAIT(c->event[k]) || c->time_ns[k] < *asof)
			continue;
		if (c->time_ns[k] > *asof) {
			/* A later seal: what older ones said no longer holds. */
			for (size_t i = 0; i < l->n; i++) {
				l->thr[i].out_ns = 0;
				l->thr[i].runnable = 0;
			}
			*asof = c->time_ns[k];
		}
		key.t.tid = c->tid[k];
		th = bsearch(&key, l->thr, l->n, sizeof(*l->thr), by_tid);
		if (th && th->pid == c->pid[k] && !th->hidden) {
			th->out_ns = c->time_ns[k] - (int64_t)c->weight[k];
			th->runnable = c->event[k] == FR_EVENT_OFFCPU_RUNNABLE;
		}
	}
}

/* The creator of each listed thread the chunk's thread table knows one
 * of (core/store/chunk.h, section 2). */
static void note_creators(struct listing *l, const struct fr_chunk *c)
{
	for (uint32_t k = 0; k < c->nthreads; k++) {
		struct thr key, *th;

		if (!c->threads[k].creator)
			continue;
		key.t.tid = c->threads[k].tid;
		th = bsearch(&key, l->thr, l->n, sizeof(*l->thr), by_tid);
		if (th && th->pid == c->threads[k].pid && !th->hidden)
			th->creator = c->threads[k].creator;
	}
}

/* When each listed thread that was switched out at the latest seal left
 * the CPU, from the open-wait records (core/store/chunk.h "OPEN WAITS")
 * of the ring's last chunks: the ingest thread's table as of that seal,
 * without touching it. */
static void open_waits(struct daemon *d, struct listing *l, int64_t now)
{
	struct fr_ring_ref *refs = NULL;
	int64_t asof = 0;
	size_t n = 0;

	if (fr_ring_query(d->ring, now - OPEN_LOOK_NS, now + 1, &refs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		if (fr_ring_read(d->ring, &refs[i], &buf) == 0 &&
		    fr_chunk_decode(buf, refs[i].len, &c) == 0) {
			open_records(l, c, &asof);
			note_creators(l, c);
		}
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
}

/* What a thread waits in, as a word: its system call by name, else the
 * kernel function it sleeps in; "" for a running or runnable thread (its
 * state says it waits for a CPU) or none known. */
static void wait_word(const struct fr_proc_thread *t, char *buf, size_t len)
{
	const char *name = t->syscall >= 0 ? fr_proc_syscall_name(t->syscall) : NULL;

	buf[0] = '\0';
	if (t->state == 'R')
		return;
	if (name)
		snprintf(buf, len, "%s", name);
	else if (t->syscall >= 0)
		snprintf(buf, len, "syscall %lld", (long long)t->syscall);
	else if (t->wchan[0])
		snprintf(buf, len, "%s", t->wchan);
}

/* A thread of a process the asker may not read: what ps shows of it. */
static void emit_hidden(struct fr_thread_answer *a, const struct thr *th, long tick_ns)
{
	const struct fr_proc_thread *t = &th->t;
	struct fr_thread_sample s = {
		.pid = th->pid,
		.tid = t->tid,
		.thread = t->name,
		.state = fr_proc_state_name(t->state),
		.extra = {{.key = "cpu_ns", .num = (int64_t)t->ticks * tick_ns}},
		.nextra = 1,
		.row = -1,
	};

	fr_thread_answer_add(a, &s);
}

static void emit_thread(struct fr_thread_answer *a, const struct thr *th, long tick_ns, int64_t now)
{
	const struct fr_proc_thread *t = &th->t;
	/* /proc's R is running or runnable: the recorder's last seal found a
	 * runnable one off the CPU, in the run queue (and it has not run
	 * since, or it would not be listed). */
	int runnable = t->state == 'R' && th->runnable && th->out_ns > 0 && th->out_ns <= now;
	/* A running thread shows where it runs; any other where it blocked
	 * (a runnable one where it was preempted or woke). */
	int blocked = (t->state != 'R' || runnable) && th->off >= 0;
	struct fr_thread_sample s = {
		.pid = th->pid,
		.tid = t->tid,
		.thread = t->name,
		.state = runnable ? "runnable" : fr_proc_state_name(t->state),
		.extra = {{.key = "cpu_ns", .num = (int64_t)t->ticks * tick_ns}},
		.nextra = 1,
		.waiting = (t->state != 'R' || runnable) && th->out_ns > 0 && th->out_ns <= now,
		.waiting_ns = now - th->out_ns,
		.creator = th->creator,
		.row = blocked ? th->off : th->cpu,
		.stack = runnable  ? "runnable"
			 : blocked ? "blocked"
				   : "on-cpu",
	};
	char wait[64], sys[32] = "";

	wait_word(t, wait, sizeof(wait));
	if (t->syscall >= 0)
		snprintf(sys, sizeof(sys), "%lld", (long long)t->syscall);
	if (wait[0])
		s.extra[s.nextra++] = (struct fr_profile_label){.key = "wait", .str = wait};
	if (sys[0])
		s.extra[s.nextra++] = (struct fr_profile_label){.key = "syscall", .str = sys};
	if (t->wchan[0] && t->state != 'R')
		s.extra[s.nextra++] = (struct fr_profile_label){.key = "wchan", .str = t->wchan};
	if (th->python)
		s.extra[s.nextra++] = (struct fr_profile_label){.key = "python", .str = th->python};
	fr_thread_answer_add(a, &s);
}

/* Writes the answer into `fd`: one sample per listed thread, its stack
 * from `p` (NULL: none). Returns 0 or -errno; *bytes is the size
 * written. */
static int write_answer(struct listing *l, const struct fr_profile *p, int fd, int64_t now,
			uint64_t *bytes)
{
	struct fr_thread_answer *a;
	long tick = sysconf(_SC_CLK_TCK);
	char line[160];
	int ret = -ENOMEM;

	snprintf(line, sizeof(line),
		 "flightrec threads: state from /proc now; waiting from the recorder's open waits; "
		 "stacks from the last %lld s of the ring",
		 (long long)(THREADS_WINDOW_NS / FR_NS_PER_S));
	a = fr_thread_answer_new(fd, p, now, THREADS_WINDOW_NS, line);
	if (!a)
		goto out;
	qsort(l->thr, l->n, sizeof(*l->thr), by_pid_tid);
	for (size_t i = 0; i < l->n; i++) {
		long tick_ns = tick > 0 ? (long)(FR_NS_PER_S / tick) : 10000000L;

		if (l->thr[i].hidden)
			emit_hidden(a, &l->thr[i], tick_ns);
		else
			emit_thread(a, &l->thr[i], tick_ns, now);
	}
	ret = fr_thread_answer_finish(a);
out:
	*bytes = 0;
	if (ret == 0) {
		struct stat st;

		if (fstat(fd, &st) == 0)
			*bytes = (uint64_t)st.st_size;
	}
	fr_thread_answer_free(a);
	return ret;
}

/* The answer's warnings: whose threads, what is missing. */
static void warn(struct daemon *d, const struct listing *l, struct fr_ipc_threads_reply *r)
{
	char line[256];

	if (fr_sources_state(&d->sources, FR_EVENT_OFFCPU, line, sizeof(line)) <= 0)
		fr_ipc_warn(r->warnings, &r->nwarnings,
			    "offcpu is not being recorded: blocked threads have no stack where they "
			    "blocked and no waiting time");
	if (l->full) {
		snprintf(line, sizeof(line), "only the first %d threads are listed", THREADS_MAX);
		fr_ipc_warn(r->warnings, &r->nwarnings, line);
	}
	if (l->has_uid) {
		snprintf(line, sizeof(line),
			 "only your own processes (uid %u) are listed; root and members of "
			 "socket.admin_group see the whole machine",
			 l->uid);
		fr_ipc_warn(r->warnings, &r->nwarnings, line);
	}
	if (l->nhidden) {
		snprintf(line, sizeof(line),
			 "%zu of your processes run%s with other credentials (set-user-ID, or not "
			 "dumpable): as /proc shows them to you, only their state is listed, no "
			 "wait or stack",
			 l->nhidden, l->nhidden == 1 ? "s" : "");
		fr_ipc_warn(r->warnings, &r->nwarnings, line);
	}
}

/* The threads at q->at_ns, from the ring alone (core/query/threads_at.h),
 * written into `fd`: the processes of q's targets (pids, command names and
 * cgroup as the ring's chunks had them then) the asker may see, by the uid
 * the ring's chunks give them. Returns 0 with `r` filled, or -errno with
 * `call` refused. */
static int threads_at(struct daemon *d, const struct fr_ipc_threads_req *q, int fd,
		      const struct listing *l, struct fr_ipc_call *call,
		      struct fr_ipc_threads_reply *r)
{
	struct fr_profile_request *preq = calloc(1, sizeof(*preq));
	struct daemon_symbol_paths sp = {0};
	int64_t reserved = -1;
	char err[512] = "";
	struct stat st;
	size_t n = 0, nprocs = 0, nhidden = 0;
	int ret = 0;

	if (!preq)
		return fr_ipc_refuse(call, "threads: out of memory");
	preq->version = FR_VERSION;
	preq->targets = q->targets;
	preq->targets.has_uid = l->has_uid;
	preq->targets.uid = l->uid;
	preq->t1 = q->at_ns + 1;
	preq->t0 = q->at_ns - FR_THREADS_AT_STACK_NS;
	preq->nevents = 2;
	preq->events[0] = FR_EVENT_OFFCPU;
	preq->events[1] = FR_EVENT_CPU;
	reserved = daemon_query_reserve(d, preq);
	if (reserved < 0) {
		ret = daemon_query_busy(d, call, "threads");
		goto out;
	}
	if (daemon_symbol_paths(d, preq, &sp) < 0 ||
	    (l->has_uid ? daemon_threads_at_hide(d, preq, q->at_ns, fd, l->uid, l->gid, &n, &nprocs,
						 &nhidden, err, sizeof(err))
			: fr_threads_at_write(d->ring, preq, q->at_ns, fd, &n, &nprocs, err,
					      sizeof(err))) < 0) {
		ret = fr_ipc_refuse(call, "threads: %s", err[0] ? err : "cannot write the answer");
		goto out;
	}
	r->processes = nprocs;
	r->threads = n;
	r->bytes = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	fr_ipc_warn(r->warnings, &r->nwarnings,
		    "from the ring alone: the kernel's exact state is not recorded; blocked and "
		    "running are what the samples say");
	if (l->has_uid)
		fr_ipc_warnf(r->warnings, &r->nwarnings,
			     "only your own processes (uid %u) are listed; root and members of "
			     "socket.admin_group see the whole machine",
			     l->uid);
	if (nhidden)
		fr_ipc_warnf(r->warnings, &r->nwarnings,
			     "%zu of your processes ran with other credentials (set-user-ID or "
			     "set-group-ID, or not dumpable): as /proc shows them to you, only "
			     "their state is listed, no wait or stack",
			     nhidden);
out:
	if (reserved >= 0)
		daemon_query_release(d, preq->targets.has_uid, reserved);
	daemon_symbol_paths_fini(&sp);
	free(preq);
	return ret;
}

/* The threads of the listing now, written into `fd`. Returns 0 or -errno
 * with `call` refused. */
/* The Python stack each thread of the listed CPython processes runs now:
 * the rows sorted by pid and tid (as the answer lists them), each Python
 * thread's found by bisection. */
static void python_stacks(struct listing *l)
{
	qsort(l->thr, l->n, sizeof(*l->thr), by_pid_tid);
	for (size_t p = 0; p < l->npids; p++) {
		struct threads_python *tp = threads_python_read(l->pids[p]);

		for (uint32_t k = 0; tp && !tp->err && k < tp->n; k++) {
			struct thr key = {.pid = l->pids[p], .t = {.tid = tp->t[k].tid}}, *row;

			row = bsearch(&key, l->thr, l->n, sizeof(*l->thr), by_pid_tid);
			if (row && !row->python)
				row->python = strdup(tp->t[k].stack);
		}
		free(tp);
	}
}

static int threads_now(struct daemon *d, struct listing *l, int fd, struct fr_ipc_call *call,
		       struct fr_ipc_threads_reply *r)
{
	struct fr_profile *pd = NULL;
	int64_t now = fr_now_real_ns();
	char err[512] = "";
	int ret = 0;

	list_threads(l);
	python_stacks(l);
	if (l->npids) {
		/* Waits and samples up to now must be in the ring. */
		if (fr_ingest_flush(&d->ingest) < 0)
			fr_log_warn(
				"flush before threads timed out; the last second may be missing");
		/* Right after the barrier, its seal's records are the latest
		 * and still true: a thread asleep then may have woken since. */
		now = fr_now_real_ns();
		open_waits(d, l, now);
		ret = window_profile(d, l, &pd, err, sizeof(err));
		if (ret == -EBUSY) {
			ret = daemon_query_busy(d, call, "threads");
			goto out;
		}
		if (ret < 0)
			fr_ipc_warn(r->warnings, &r->nwarnings,
				    "no stacks: the ring could not be read");
		else
			match_rows(l, pd);
	}
	ret = 0;
	if (write_answer(l, pd, fd, now, &r->bytes) < 0) {
		ret = fr_ipc_refuse(call, "threads: cannot write the answer");
		goto out;
	}
	r->processes = l->npids + l->nhidden;
	r->threads = l->n;
	warn(d, l, r);
out:
	fr_profile_free(pd);
	return ret;
}

int daemon_handle_threads(void *arg, struct fr_ipc_call *call, const struct fr_ipc_threads_req *q,
			  struct fr_ipc_threads_reply *r)
{
	struct daemon *d = arg;
	struct listing l = {0};
	int fd = call->fd, ret;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY) {
		ret = fr_ipc_refuse(call, "threads needs a regular file open for writing passed "
					  "with the request");
		goto out;
	}
	l.targets = &q->targets;
	/* From the credentials, never from the request. */
	if (!fr_peer_privileged(d->peers, call->peer)) {
		l.has_uid = 1;
		l.uid = (uint32_t)call->peer->uid;
		l.gid = (uint32_t)call->peer->gid;
	}
	ret = q->at_ns ? threads_at(d, q, fd, &l, call, r) : threads_now(d, &l, fd, call, r);
out:
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < l.n; i++)
		free(l.thr[i].python);
	free(l.thr);
	free(l.pids);
	return ret;
}
