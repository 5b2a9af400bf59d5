/* Application labels read at samples (recorder/tracking/applabels.h; the layouts
 * read are lib/flightrec/labels_abi.h and recorder/bpf/labels_bpf.h).
 *
 * Per process (struct al_proc): whether and where its threads keep their
 * labels, found once on a deadline worker. The eBPF program's copies come
 * in as observations (thread, time, set), kept for a few seconds, sorted
 * by thread and time when a seal asks; a cpu sample takes its own (the
 * first observation of its thread from just before it to JOIN_AFTER_NS
 * after it), else the last one at most JOIN_BEFORE_NS before it.
 */
#include "recorder/tracking/applabels.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/util/grow.h"
#include "core/util/htable.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"
#include "core/util/worker.h"
#include "flightrec/labels_abi.h"
#include "recorder/tracking/applabels_int.h"
#include "recorder/sampling/bpf_labels.h"
#include "recorder/tracking/golabels.h"
#include "recorder/tracking/labelsets.h"
#include "recorder/tracking/pystacks.h"

#define BUCKETS 1024
/* An id of ev_sets, not of sets. */
#define EVENT_SET_BIT 0x80000000u
_Static_assert((EVENT_SET_BIT & FR_LABELSETS_ID_BITS) == 0, "a bit ids never use");
#define MAX_PROCS 65536
/* Processes whose OTel key names are held (16 KiB each at most). */
#define KEYED_MAX 1024
/* A look-up that has not returned after this is left to its worker; the
 * process's samples say "read stalled". A deadline in wall time is missed
 * as well by a look-up a busy machine did not give the CPU to (another
 * user's storm of runnable threads) as by one a process holds back (a
 * library on a FUSE mount that never answers): the process is asked
 * again STALL_RETRIES times, 1, 4 then 16 s later, while few abandoned
 * workers are still stuck (a read a process holds back stays stuck; one
 * the machine was too busy for returns), and after that not again. */
#define READ_DEADLINE_NS 250000000ll
#define STALL_RETRIES 3
#define STALL_BACKOFF_NS FR_NS_PER_S
#define STALL_RETRY_STUCK_MAX (FR_WORKER_STUCK_MAX / 4)
/* Look-ups handed to the look-up thread and not answered yet. */
#define LOOKING_MAX 64
#define QUEUE 1024
/* Seals without samples after which a process is forgotten. */
#define IDLE_SEALS 60
/* A sample's copy is made in the same interrupt, a few microseconds
 * before its time is read or after it (since Linux 6.x the sample is
 * prepared before the program runs). On a virtual machine the vCPU can be
 * stopped in between: copies were seen 0.1 to 1.7 ms after their samples,
 * which a window of 100 us missed. The thread's next sample comes a
 * period after the CPU runs again, so the first copy from JOIN_OWN_NS
 * before the sample to JOIN_AFTER_NS after it is its own (fr_al_join); a
 * sample without one takes the last copy before it, at most
 * JOIN_BEFORE_NS old. */
#define JOIN_OWN_NS 100000ll
#define JOIN_AFTER_NS 3000000ll
#define JOIN_BEFORE_NS 1000000ll
/* Copies older than this at a seal can no longer meet a sample. */
#define OBS_KEEP_NS (3 * FR_NS_PER_S)
/* A process whose library was not set up yet (its constructor runs just
 * after the mapping the side band reports) is looked at again this much
 * later, at most RETRIES times. */
#define RETRY_NS 20000000ll
#define RETRIES 50

/* P_QUEUED: waiting for its turn (al->queue); P_LOOKING: with the
 * look-up thread. */
enum { P_NEW, P_QUEUED, P_LOOKING, P_READY, P_NONE, P_BAD };

struct al_proc {
	struct al_proc *next;
	uint32_t pid;
	int64_t start_ns;
	int state;
	const char *why; /* P_BAD */
	int64_t fr_off, otel_off;
	struct fr_go_runtime go; /* a Go program's (go.kind 0: none) */
	/* OTel attribute key names, and what tells them apart (0: none). */
	char **keys;
	uint32_t nkeys;
	uint64_t keys_id;
	uint64_t gen;
	int64_t retry_at; /* monotonic ns: not looked up before */
	uint32_t retries;
	uint32_t stalls; /* look-ups that missed their deadline */
	uint32_t idle;
};

struct fr_applabels {
	struct fr_tracker *tracker;
	const struct fr_chunk_meta_ops *base;
	struct fr_chunk_meta_ops ops;
	int64_t clock_offset;
	uint64_t gen;
	struct al_proc *buckets[BUCKETS];
	uint32_t nprocs;
	uint32_t nkeyed; /* processes holding OTel key names */
	/* Go programs whose labels could not be read (a release whose layout
	 * is not known, a stripped cgo binary), since the start. */
	uint64_t go_skipped;
	struct fr_worker *worker;
	struct fr_bpf_labels *bpf;
	struct fr_pystacks *py; /* with bpf */
	char error[256];
	struct fr_labelsets *sets;
	/* The black-box events' fields (fr_applabels_plus_event): their ids
	 * carry EVENT_SET_BIT. */
	struct fr_labelsets *ev_sets;
	struct fr_allocs *allocs; /* NULL: allocation rings are not read */
	struct fr_al_obs *obs;
	size_t nobs, cap;
	bool sorted;
	uint32_t queue[QUEUE];
	unsigned qn;
	/* The look-up thread: jobs in, results out (under lk), and the
	 * eventfd that wakes the ingest thread for them. The ingest thread
	 * never waits for a look-up: a file or memory a user holds back
	 * holds up only this thread (and it, a worker, for READ_DEADLINE_NS). */
	pthread_t looker;
	bool looker_started, stop;
	pthread_mutex_t lk;
	pthread_cond_t lk_cond;
	struct fr_al_lookup *in[LOOKING_MAX], *out[LOOKING_MAX];
	unsigned nin, nout, looking;
	int efd;
};

/* ---- processes ---- */

static struct al_proc *proc_find(struct fr_applabels *al, uint32_t pid)
{
	struct al_proc *p;

	for (p = al->buckets[pid % BUCKETS]; p && p->pid != pid; p = p->next)
		;
	return p;
}

static struct al_proc *proc_add(struct fr_applabels *al, uint32_t pid)
{
	struct al_proc **b = &al->buckets[pid % BUCKETS], *p;

	if (al->nprocs >= MAX_PROCS || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->pid = pid;
	p->next = *b;
	*b = p;
	al->nprocs++;
	return p;
}

static void proc_free_keys(struct fr_applabels *al, struct al_proc *p)
{
	if (p->keys)
		al->nkeyed--;
	for (uint32_t i = 0; p->keys && i < p->nkeys; i++)
		free(p->keys[i]);
	free(p->keys);
	p->keys = NULL;
	p->nkeys = 0;
	p->keys_id = 0;
}

/* Forgets what was found of p: the program stops reading it. */
static void proc_reset(struct fr_applabels *al, struct al_proc *p)
{
	proc_free_keys(al, p);
	if (p->state == P_READY && al->bpf)
		fr_bpf_labels_forget(al->bpf, p->pid);
	p->state = P_NEW;
	p->fr_off = p->otel_off = 0;
	memset(&p->go, 0, sizeof(p->go));
	p->why = NULL;
	p->stalls = 0;
}

static void enqueue(struct fr_applabels *al, struct al_proc *p)
{
	if (p->state != P_NEW || al->qn == QUEUE || !al->bpf)
		return;
	p->state = P_QUEUED;
	al->queue[al->qn++] = p->pid;
}

/* Hands p's look-up to the look-up thread. Returns 0, or -EAGAIN when
 * it has enough to do (p waits for the next wake-up). */
static int submit(struct fr_applabels *al, struct al_proc *p)
{
	struct fr_tracker_map m;
	struct fr_al_lookup *j;

	if (al->looking == LOOKING_MAX)
		return -EAGAIN;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -EAGAIN;
	j->pid = p->pid;
	j->start_ns = p->start_ns;
	if (fr_tracker_find_map_named(al->tracker, p->pid, "libflightrec.so", &m) == 0) {
		j->lib = true;
		j->start = m.start;
		j->end = m.end;
		j->pgoff = m.pgoff;
	}
	pthread_mutex_lock(&al->lk);
	al->in[al->nin++] = j;
	pthread_cond_signal(&al->lk_cond);
	pthread_mutex_unlock(&al->lk);
	al->looking++;
	p->state = P_LOOKING;
	return 0;
}

/* A Go program's runtime, when its labels can be read; counted and said
 * once when they cannot. */
static void apply_go(struct fr_applabels *al, struct al_proc *p, const struct fr_al_lookup *j)
{
	if (j->ret_go == 0) {
		p->go = j->go;
		return;
	}
	if (j->ret_go != -ENOTSUP && j->ret_go != -EADDRNOTAVAIL)
		return; /* not a Go program (or not one whose file could be read) */
	al->go_skipped++;
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S, "Go labels of pid %u not read: %s",
			   p->pid,
			   j->ret_go == -ENOTSUP ? "a Go release whose runtime layout is not known"
						 : "linked by the system linker and stripped");
}

/* A look-up no worker could run: every worker is held by a read that
 * never returned. A process never read is asked again in a moment, a few
 * times; one whose read stalled keeps saying so, and is asked again as a
 * stalled one is. Never "no labels", which it was not found to have. */
static void not_looked_at(struct fr_applabels *al, struct al_proc *p)
{
	if (!p->stalls && ++p->retries < RETRIES) {
		p->state = P_NEW;
		p->retry_at = fr_now_mono_ns() + RETRY_NS;
		enqueue(al, p);
		return;
	}
	p->state = P_BAD;
	if (!p->why)
		p->why = "unreadable: too many reads stuck";
	p->retry_at = fr_now_mono_ns() + STALL_BACKOFF_NS;
}

/* The allocation ring a look-up mapped (or why not): handed to the
 * allocation samples, or refused. Returns true when p is to be looked
 * up again in a moment (a ring not made yet, a child's inherited ring
 * before its own is made). */
static bool apply_alloc(struct fr_applabels *al, struct al_proc *p, struct fr_al_lookup *j)
{
	bool again = p->retries + 1 < RETRIES;
	int ret = j->ret_alloc;

	if (!al->allocs || !j->lib)
		return false;
	if (ret == 0) {
		ret = fr_allocs_adopt(al->allocs, &j->alloc);
		j->alloc_why = ret == -ENOSPC  ? "too many rings mapped"
			       : ret == -EBUSY ? "its ring is read by another recorder"
					       : "its ring is another process's";
	}
	if (ret == -EAGAIN && again)
		return true;
	if (ret < 0 && ret != -ENOENT && ret != -ESRCH)
		fr_allocs_refused(al->allocs, p->pid,
				  ret == -EAGAIN && !j->alloc_why ? "its ring never became ready"
								  : j->alloc_why);
	return false;
}

/* What a look-up found for p. */
static void apply(struct fr_applabels *al, struct al_proc *p, struct fr_al_lookup *j)
{
	p->state = P_NONE;
	if (j->stalled) {
		p->state = P_BAD;
		p->why = "unreadable: read stalled";
		p->stalls++;
		p->retry_at = fr_now_mono_ns() + (STALL_BACKOFF_NS << (2 * (p->stalls - 1)));
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "application labels of pid %u: a look-up took longer than %lld "
				   "ms; not read%s",
				   p->pid, READ_DEADLINE_NS / 1000000,
				   p->stalls <= STALL_RETRIES ? " (asked again later)" : "");
		return;
	}
	if (j->no_worker) {
		not_looked_at(al, p);
		return;
	}
	p->why = NULL;
	if (al->py) {
		struct fr_proc_info pi = {0};

		if (al->base->proc)
			al->base->proc(al->base->arg, p->pid, &pi);
		fr_pystacks_found(al->py, p->pid, j->start_ns, (uid_t)pi.uid, j->ret_py, &j->py,
				  j->py_bias, j->py_path);
	}
	if (apply_alloc(al, p, j) || (j->lib && j->ret_lib == -EAGAIN)) {
		/* Not set up yet: again in a moment, a few times. */
		p->state = P_NEW;
		p->retry_at = fr_now_mono_ns() + RETRY_NS;
		if (++p->retries < RETRIES)
			enqueue(al, p);
		return;
	}
	if (j->lib && j->ret_lib < 0 && j->ret_lib != -ESRCH && j->ret_lib != -ENOENT) {
		p->state = P_BAD;
		p->why = j->ret_lib == -EPROTO ? "unreadable: not a registry this recorder reads"
					       : "unreadable: no registry in the library";
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "application labels of pid %u not read: %s (%s)", p->pid, p->why,
				   strerror(-j->ret_lib));
		return;
	}
	if (j->ret_lib == 0)
		p->fr_off = j->fr_off;
	if (j->ret_exe == 0)
		p->otel_off = j->otel_off;
	/* Key names take up to 16 KiB a process: held for KEYED_MAX at most
	 * (the others' attributes read otel.attr.N). */
	if (j->nkeys && !p->keys && al->nkeyed < KEYED_MAX &&
	    (p->keys = calloc(j->nkeys, sizeof(*p->keys)))) {
		uint64_t id = FR_FNV_OFFSET;

		al->nkeyed++;
		/* Each name with its NUL: "ab","c" is not "a","bc". */
		for (uint32_t i = 0; i < j->nkeys; i++) {
			p->keys[i] = strdup(j->keys[i]);
			id = fr_fnv1a(id, j->keys[i], strlen(j->keys[i]) + 1);
		}
		p->nkeys = j->nkeys;
		p->keys_id = id ? id : 1;
	}
	apply_go(al, p, j);
	if (p->fr_off || p->otel_off || p->go.kind) {
		struct fr_bpf_label_proc v = {
			.fr_off = p->fr_off,
			.otel_off = p->otel_off,
			.go_tls = p->go.tls,
			.go_m = p->go.m,
			.go_curg = p->go.curg,
			.go_labels = p->go.labels,
			.go_kind = p->go.kind,
		};

		p->state = fr_bpf_labels_set(al->bpf, p->pid, &v) == 0 ? P_READY : P_NEW;
	}
}

/* The look-up thread: each job on a deadline worker, in turn. */
static void *looker(void *arg)
{
	struct fr_applabels *al = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&al->lk);
	while (!al->stop) {
		struct fr_al_lookup *j, *res;
		uint32_t pid;
		int64_t start_ns;
		int ret;

		if (!al->nin) {
			pthread_cond_wait(&al->lk_cond, &al->lk);
			continue;
		}
		j = al->in[0];
		memmove(al->in, al->in + 1, --al->nin * sizeof(*al->in));
		pthread_mutex_unlock(&al->lk);
		pid = j->pid;
		start_ns = j->start_ns;
		ret = fr_worker_call(&al->worker, fr_al_lookup_run, fr_al_lookup_drop, j,
				     READ_DEADLINE_NS);
		res = j;
		if (ret == -ETIMEDOUT) {
			/* The abandoned worker owns (and frees) j: the result is a
			 * new one. */
			res = calloc(1, sizeof(*res));
			if (res) {
				res->pid = pid;
				res->start_ns = start_ns;
				res->stalled = true;
			}
		} else if (ret < 0) {
			/* No worker to be had: not looked at (which is not "it
			 * has none"). */
			j->no_worker = true;
		}
		pthread_mutex_lock(&al->lk);
		if (res)
			al->out[al->nout++] = res;
		if (write(al->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
					   "application labels: cannot wake the recorder: %s",
					   strerror(errno));
	}
	pthread_mutex_unlock(&al->lk);
	return NULL;
}

/* Takes the look-ups' results. */
static void collect(struct fr_applabels *al)
{
	struct fr_al_lookup *done[LOOKING_MAX];
	unsigned n;
	uint64_t count;

	if (read(al->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&al->lk);
	n = al->nout;
	memcpy(done, al->out, n * sizeof(*done));
	al->nout = 0;
	pthread_mutex_unlock(&al->lk);
	for (unsigned i = 0; i < n; i++) {
		struct al_proc *p = proc_find(al, done[i]->pid);

		al->looking--;
		/* A look-up asked before the process's start time was known
		 * (its mapping was drained before its fork) is of this one,
		 * as the start time found since says (al_app_labels). */
		if (p && p->state == P_LOOKING &&
		    (done[i]->start_ns == p->start_ns || !done[i]->start_ns))
			apply(al, p, done[i]);
		else if (p && p->state == P_LOOKING)
			p->state = P_NEW; /* a new process under the pid: again */
		fr_allocs_found_release(&done[i]->alloc);
		free(done[i]);
	}
}

/* ---- observations ---- */

static void observe(struct fr_applabels *al, uint32_t tid, int64_t time, uint32_t set)
{
	if (FR_GROW(al->obs, &al->cap, al->nobs + 1, 1024) < 0)
		return;
	al->obs[al->nobs++] = (struct fr_al_obs){.tid = tid, .set = set, .time = time};
	al->sorted = false;
}

uint32_t fr_applabels_intern(struct fr_applabels *al, const struct fr_bpf_labels_rec *r)
{
	struct al_proc *p = proc_find(al, r->pid);

	uint8_t go[sizeof(struct fr_labels_record_abi)];
	size_t go_len;

	/* A copy of a process read no more (it exec'd since) is not its. */
	if (!p || p->state != P_READY)
		return 0;
	/* A goroutine's pprof labels join the library's record (a Go
	 * program seldom has one). */
	go_len = p->go.kind ? fr_go_labels_record(r, go, sizeof(go)) : 0;
	return fr_labelsets_intern(al->sets, go_len ? go : r->fr, go_len ? go_len : r->fr_len,
				   r->otel, r->otel_len, (const char *const *)p->keys, p->nkeys,
				   p->keys_id);
}

uint32_t fr_applabels_plus(struct fr_applabels *al, uint32_t base, const struct fr_app_label *extra,
			   uint32_t n)
{
	return fr_labelsets_plus(al->sets, base, extra, n);
}

uint32_t fr_applabels_plus_event(struct fr_applabels *al, uint32_t base,
				 const struct fr_app_label *extra, uint32_t n)
{
	struct fr_app_label pairs[FR_CHUNK_APP_PAIRS];
	int nb = base ? fr_labelsets_pairs(al->sets, base, pairs) : 0;
	uint32_t id;

	id = fr_labelsets_plus_pairs(al->ev_sets, pairs, (uint32_t)nb, extra, n);
	return id ? id | EVENT_SET_BIT : 0;
}

static void on_copy(void *arg, const struct fr_bpf_labels_rec *r)
{
	struct fr_applabels *al = arg;

	if (r->kind != FR_BPF_LABELS_SAMPLE)
		return;
	observe(al, r->tid, (int64_t)r->time + al->clock_offset, fr_applabels_intern(al, r));
}

static void on_py(void *arg, const struct fr_bpf_py_rec *r, size_t size)
{
	struct fr_applabels *al = arg;

	if (al->py)
		fr_pystacks_record(al->py, r, size);
}

/* A sample's Python frames not drained yet: the ring buffer now. */
static void py_drain(void *arg)
{
	struct fr_applabels *al = arg;

	fr_bpf_labels_drain(al->bpf, on_copy, on_py, al);
}

static int by_tid_time(const void *a, const void *b)
{
	const struct fr_al_obs *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

uint32_t fr_al_join(const struct fr_al_obs *obs, size_t nobs, uint32_t tid, int64_t t)
{
	size_t lo = 0, hi = nobs;

	/* The first entry at or after (tid, t - JOIN_OWN_NS). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct fr_al_obs *o = &obs[mid];

		if (o->tid < tid || (o->tid == tid && o->time < t - JOIN_OWN_NS))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nobs && obs[lo].tid == tid && obs[lo].time <= t + JOIN_AFTER_NS)
		return obs[lo].set;
	if (lo == 0 || obs[lo - 1].tid != tid || obs[lo - 1].time < t - JOIN_BEFORE_NS)
		return 0;
	return obs[lo - 1].set;
}

/* fr_al_join over the process's observations, sorted first. */
static uint32_t joined(struct fr_applabels *al, uint32_t tid, int64_t t)
{
	if (!al->sorted) {
		qsort(al->obs, al->nobs, sizeof(*al->obs), by_tid_time);
		al->sorted = true;
	}
	return fr_al_join(al->obs, al->nobs, tid, t);
}

/* ---- the tracker's ops, forwarded, and the labels ---- */

static int al_app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			 struct fr_app_label *out)
{
	struct fr_applabels *al = arg;
	struct fr_proc_info pi = {0};
	struct al_proc *p;

	if (ref & EVENT_SET_BIT)
		return fr_labelsets_pairs(al->ev_sets, ref & FR_LABELSETS_ID_BITS, out);
	if (ref)
		return fr_labelsets_pairs(al->sets, ref, out);
	p = proc_find(al, pid);
	if (!p && !(p = proc_add(al, pid)))
		return 0;
	if (p->gen != al->gen) {
		p->gen = al->gen;
		p->idle = 0;
		/* A new process under the same pid starts over (one found by
		 * its mapping has no start time yet: it is this one). */
		if (al->base->proc && al->base->proc(al->base->arg, pid, &pi) == 0 &&
		    pi.start_ns != p->start_ns) {
			if (p->start_ns)
				proc_reset(al, p);
			p->start_ns = pi.start_ns;
		}
		if (p->state == P_BAD && p->stalls && p->stalls <= STALL_RETRIES &&
		    p->retry_at <= fr_now_mono_ns() && fr_worker_stuck() < STALL_RETRY_STUCK_MAX) {
			p->state = P_NEW;
			p->retries = 0;
		}
		if (p->state == P_NEW && p->retries < RETRIES)
			enqueue(al, p);
	}
	/* Until a look-up asked again after a stall finds them, "read
	 * stalled" stands. */
	if (p->state == P_BAD || (p->stalls && p->why && p->state != P_READY)) {
		out[0] = (struct fr_app_label){.key = "flightrec.labels", .value = p->why};
		return 1;
	}
	if (p->state != P_READY)
		return 0;
	return fr_labelsets_pairs(al->sets, joined(al, tid, time_ns), out);
}

static int w_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	const struct fr_applabels *al = arg;

	return al->base->proc ? al->base->proc(al->base->arg, pid, out) : -ENOENT;
}

static int w_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	const struct fr_applabels *al = arg;

	return al->base->thread ? al->base->thread(al->base->arg, tid, out) : -ENOENT;
}

static int w_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	const struct fr_applabels *al = arg;

	return al->base->mapping ? al->base->mapping(al->base->arg, pid, addr, out) : -ENOENT;
}

struct fr_applabels *fr_applabels_new(struct fr_tracker *t)
{
	struct fr_applabels *al = calloc(1, sizeof(*al));
	int ret;

	if (!al)
		return NULL;
	al->tracker = t;
	al->base = fr_tracker_ops(t);
	al->gen = 1;
	al->sets = fr_labelsets_new();
	al->ev_sets = fr_labelsets_new();
	if (!al->sets || !al->ev_sets) {
		fr_labelsets_free(al->sets);
		fr_labelsets_free(al->ev_sets);
		free(al);
		return NULL;
	}
	al->efd = -1;
	fr_mutex_init_pi(&al->lk);
	pthread_cond_init(&al->lk_cond, NULL);
	ret = fr_bpf_labels_open(&al->bpf, al->error, sizeof(al->error));
	if (ret < 0) {
		al->bpf = NULL;
		fr_log_warn("%s; samples carry no application labels", al->error);
	} else {
		al->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ret = al->efd < 0 ? -errno : -pthread_create(&al->looker, NULL, looker, al);
		if (ret < 0) {
			snprintf(al->error, sizeof(al->error),
				 "application labels: cannot start the look-up thread (%s)",
				 strerror(-ret));
			fr_log_warn("%s; samples carry no application labels", al->error);
			fr_bpf_labels_close(al->bpf);
			al->bpf = NULL;
		} else {
			al->looker_started = true;
			pthread_setname_np(al->looker, "fr-labels");
			/* FLIGHTREC_PYTHON=off: native stacks only (to
			 * compare, or to rule the Python frames out) */
			const char *py = getenv("FLIGHTREC_PYTHON");

			if (!py || strcmp(py, "off") != 0)
				al->py = fr_pystacks_new(al->bpf, py_drain, al);
		}
	}
	al->ops = (struct fr_chunk_meta_ops){
		.proc = w_proc,
		.thread = w_thread,
		.mapping = w_mapping,
		.app_labels = al_app_labels,
		.arg = al,
	};
	return al;
}

void fr_applabels_set_allocs(struct fr_applabels *al, struct fr_allocs *allocs)
{
	al->allocs = allocs;
}

const char *fr_applabels_error(const struct fr_applabels *al)
{
	return al->bpf ? NULL : al->error;
}

int fr_applabels_prog_fd(const struct fr_applabels *al)
{
	return al && al->bpf ? fr_bpf_labels_prog_fd(al->bpf) : -1;
}

int fr_applabels_map_fd(const struct fr_applabels *al)
{
	return al && al->bpf ? fr_bpf_labels_map_fd(al->bpf) : -1;
}

void fr_applabels_py_map_fds(const struct fr_applabels *al, int *procs, int *threads)
{
	*procs = al && al->bpf ? fr_bpf_labels_py_map_fd(al->bpf) : -1;
	*threads = al && al->bpf ? fr_bpf_labels_py_threads_fd(al->bpf) : -1;
}

int fr_applabels_fd(const struct fr_applabels *al)
{
	return al && al->bpf ? fr_bpf_labels_fd(al->bpf) : -1;
}

int fr_applabels_lookup_fd(const struct fr_applabels *al)
{
	return al && al->bpf ? al->efd : -1;
}

const struct fr_chunk_meta_ops *fr_applabels_ops(struct fr_applabels *al, int64_t clock_offset)
{
	/* The copies made up to the seal, for its samples. */
	al->clock_offset = clock_offset;
	if (al->bpf)
		fr_bpf_labels_drain(al->bpf, on_copy, on_py, al);
	return &al->ops;
}

void fr_applabels_poll(struct fr_applabels *al, int64_t clock_offset)
{
	unsigned i, n;
	int64_t now;

	if (!al->bpf)
		return;
	al->clock_offset = clock_offset;
	fr_bpf_labels_drain(al->bpf, on_copy, on_py, al);
	collect(al);
	now = fr_now_mono_ns();
	n = al->qn;
	al->qn = 0;
	/* Entries not due yet, or that the look-up thread has no room for,
	 * stay. */
	for (i = 0; i < n; i++) {
		struct al_proc *p = proc_find(al, al->queue[i]);

		if (!p || p->state != P_QUEUED)
			continue;
		if (p->retry_at > now || submit(al, p) < 0)
			al->queue[al->qn++] = p->pid;
	}
}

int fr_applabels_timeout_ms(const struct fr_applabels *al)
{
	int64_t now = fr_now_mono_ns(), first = INT64_MAX;

	/* A look-up due while the look-up thread has no room waits for it to
	 * answer one (its eventfd wakes the ingest thread): were it "due
	 * now", the ingest thread would spin on poll until the look-up
	 * thread, at normal priority on a loaded machine, got round to it. */
	if (al->looking >= LOOKING_MAX)
		return -1;
	for (unsigned i = 0; i < al->qn; i++) {
		const struct al_proc *p = proc_find((struct fr_applabels *)al, al->queue[i]);

		if (p && p->state == P_QUEUED && p->retry_at < first)
			first = p->retry_at;
	}
	if (first == INT64_MAX)
		return -1;
	return first <= now ? 0 : (int)((first - now) / 1000000) + 1;
}

void fr_applabels_mapped(struct fr_applabels *al, uint32_t pid, const char *path)
{
	const char *base = strrchr(path, '/');
	struct al_proc *p;

	base = base ? base + 1 : path;
	if (strncmp(base, "libflightrec.so", 15) != 0)
		return;
	p = proc_find(al, pid);
	if (!p && !(p = proc_add(al, pid)))
		return;
	if (p->state == P_READY && p->fr_off)
		return;
	if (p->state != P_QUEUED && p->state != P_LOOKING && p->state != P_BAD)
		proc_reset(al, p);
	/* At once (its constructor may not have run yet: then again). */
	p->retries = 0;
	p->retry_at = 0;
	enqueue(al, p);
}

void fr_applabels_exec(struct fr_applabels *al, uint32_t pid)
{
	struct al_proc *p = proc_find(al, pid);

	if (p && p->state != P_QUEUED && p->state != P_LOOKING)
		proc_reset(al, p);
	if (al->py)
		fr_pystacks_exec(al->py, pid);
}

struct fr_pystacks *fr_applabels_pystacks(struct fr_applabels *al)
{
	return al ? al->py : NULL;
}

void fr_applabels_sealed(struct fr_applabels *al)
{
	int64_t oldest = 0;
	size_t n = 0;

	al->gen++;
	if (al->py)
		fr_pystacks_sealed(al->py);
	fr_labelsets_sealed(al->sets);
	fr_labelsets_sealed(al->ev_sets);
	for (size_t i = 0; i < al->nobs; i++)
		if (al->obs[i].time > oldest)
			oldest = al->obs[i].time;
	oldest -= OBS_KEEP_NS;
	for (size_t i = 0; i < al->nobs; i++)
		if (al->obs[i].time >= oldest)
			al->obs[n++] = al->obs[i];
	al->nobs = n;
	for (uint32_t b = 0; b < BUCKETS; b++) {
		for (struct al_proc **pp = &al->buckets[b], *p; (p = *pp);) {
			if (++p->idle > IDLE_SEALS && p->state != P_QUEUED &&
			    p->state != P_LOOKING) {
				proc_reset(al, p);
				*pp = p->next;
				free(p);
				al->nprocs--;
			} else {
				pp = &p->next;
			}
		}
	}
}

void fr_applabels_bpf_counts(const struct fr_applabels *al, struct fr_bpf_labels_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (al->bpf)
		fr_bpf_labels_counts(al->bpf, out);
}

uint64_t fr_applabels_memory(const struct fr_applabels *al)
{
	return al && al->sets ? fr_labelsets_bytes(al->sets) + fr_labelsets_bytes(al->ev_sets) +
					fr_pystacks_memory(al->py)
			      : 0;
}

void fr_applabels_go_counts(const struct fr_applabels *al, uint32_t *go, uint64_t *skipped)
{
	*go = 0;
	*skipped = al->go_skipped;
	for (uint32_t b = 0; b < BUCKETS; b++)
		for (const struct al_proc *p = al->buckets[b]; p; p = p->next)
			*go += p->state == P_READY && p->go.kind;
}

void fr_applabels_counts(const struct fr_applabels *al, uint32_t *labelled, uint32_t *unreadable)
{
	*labelled = *unreadable = 0;
	for (uint32_t b = 0; b < BUCKETS; b++) {
		for (const struct al_proc *p = al->buckets[b]; p; p = p->next) {
			*labelled += p->state == P_READY;
			*unreadable += p->state == P_BAD;
		}
	}
}

void fr_applabels_free(struct fr_applabels *al)
{
	if (!al)
		return;
	if (al->looker_started) {
		/* A look-up in progress ends within its deadline. */
		pthread_mutex_lock(&al->lk);
		al->stop = true;
		pthread_cond_signal(&al->lk_cond);
		pthread_mutex_unlock(&al->lk);
		pthread_join(al->looker, NULL);
	}
	for (unsigned i = 0; i < al->nin; i++)
		free(al->in[i]);
	for (unsigned i = 0; i < al->nout; i++)
		free(al->out[i]);
	if (al->efd >= 0)
		close(al->efd);
	pthread_mutex_destroy(&al->lk);
	pthread_cond_destroy(&al->lk_cond);
	for (uint32_t b = 0; b < BUCKETS; b++) {
		while (al->buckets[b]) {
			struct al_proc *p = al->buckets[b];

			al->buckets[b] = p->next;
			proc_free_keys(al, p);
			free(p);
		}
	}
	fr_worker_free(al->worker);
	fr_pystacks_free(al->py);
	fr_bpf_labels_close(al->bpf);
	fr_labelsets_free(al->sets);
	fr_labelsets_free(al->ev_sets);
	free(al->obs);
	free(al);
}
