/* Python frames spliced into the stacks of CPython processes
 * (recorder/tracking/pystacks.h). */
#include "recorder/tracking/pystacks.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/grow.h"
#include "core/util/htable.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "recorder/sampling/bpf_labels.h"

/* A thread's records kept waiting for their samples, at most (a drain
 * comes at least every second; a thread is sampled at most at the rate). */
#define THREAD_RECS 1024
/* Bytes of records kept in all, at most (past it new ones are dropped). */
#define RECS_BYTES_MAX (32u << 20)
/* A record older than its sample by more than this is not its. */
#define MATCH_NS (20 * FR_NS_PER_MS)
/* Records no sample took are dropped after this. */
#define STALE_NS (3 * FR_NS_PER_S)
/* Code objects handed to the namer per process, at most. */
#define CODES_MAX 65536u
/* A process's threads' stacks are swept for code objects this often. */
#define SWEEP_NS (30 * FR_NS_PER_S)
/* An instruction further into its code than this is not one. */
#define OFFSET_MAX (1u << 28)

struct py_proc {
	struct hnode node; /* first; by pid */
	uint32_t pid;
	uid_t uid;
	int64_t start_ns;
	bool read; /* in the eBPF map */
	struct fr_python_exe x;
	uint64_t bias;
	uint64_t eval[2][2]; /* the eval loop's ranges, runtime addresses */
	/* Code objects handed to the namer (open addressing, 0 empty), and
	 * those waiting for the next seal. */
	uint64_t *asked;
	uint32_t asked_cap, nasked;
	uint64_t *pending;
	size_t npending, pending_cap;
	int64_t swept; /* CLOCK_MONOTONIC of the last sweep asked; 0 none */
	/* Seen gone at a seal: forgotten at the next, after a drain has
	 * brought what it left in the buffers (its last waits' ends come
	 * just before its exit). */
	bool gone;
};

struct rec {
	int64_t time; /* CLOCK_MONOTONIC */
	uint16_t n, status;
	struct fr_bpf_py_frame f[];
};

/* A thread's records of one kind: a wait's frames are its wait's only,
 * a sample's its sample's (a thread sampled on a CPU just after a wait
 * would otherwise take the wait's record, older than its own, for its
 * own and leave the wait none). */
struct py_thread {
	struct hnode node; /* first; by key */
	uint64_t key;	   /* tid << 1 | (a wait's) */
	uint32_t tid, pid;
	/* A ring of records, oldest at head. */
	struct rec *recs[THREAD_RECS];
	uint32_t head, n;
};

struct fr_pystacks {
	struct fr_bpf_labels *bpf;
	void (*drain)(void *arg);
	void *drain_arg;
	int64_t drained_mono; /* the last drain asked by a sample */
	struct fr_pystacks_namer namer;
	struct htable procs, threads;
	uint64_t rec_bytes;
	pthread_mutex_t lock; /* the counts */
	struct fr_pystacks_counts c;
};

struct fr_pystacks *fr_pystacks_new(struct fr_bpf_labels *bpf, void (*drain)(void *arg),
				    void *drain_arg)
{
	struct fr_pystacks *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->bpf = bpf;
	ps->drain = drain;
	ps->drain_arg = drain_arg;
	pthread_mutex_init(&ps->lock, NULL);
	return ps;
}

static void proc_free(struct hnode *n)
{
	struct py_proc *p = (struct py_proc *)n;

	free(p->asked);
	free(p->pending);
	free(p);
}

/* rec_bytes is read by fr_pystacks_memory() from any thread. */
static void rec_drop(struct fr_pystacks *ps, struct rec *r)
{
	__atomic_sub_fetch(&ps->rec_bytes, sizeof(*r) + (uint64_t)r->n * sizeof(r->f[0]),
			   __ATOMIC_RELAXED);
	free(r);
}

static void thread_free_recs(struct fr_pystacks *ps, struct py_thread *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		rec_drop(ps, t->recs[(t->head + i) % THREAD_RECS]);
	t->n = 0;
}

static void node_free(struct hnode *n)
{
	free(n);
}

void fr_pystacks_free(struct fr_pystacks *ps)
{
	if (!ps)
		return;
	for (size_t b = 0; b < ps->threads.nbuckets; b++)
		for (struct hnode *n = ps->threads.buckets[b]; n; n = n->next)
			thread_free_recs(ps, (struct py_thread *)n);
	fr_htable_fini(&ps->threads, node_free);
	fr_htable_fini(&ps->procs, proc_free);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
}

void fr_pystacks_set_namer(struct fr_pystacks *ps, const struct fr_pystacks_namer *n)
{
	ps->namer = *n;
}

static struct py_proc *proc_find(const struct fr_pystacks *ps, uint32_t pid)
{
	for (struct hnode *n = fr_htable_first(&ps->procs, pid); n; n = n->next)
		if (((struct py_proc *)n)->pid == pid)
			return (struct py_proc *)n;
	return NULL;
}

static uint64_t thread_key(uint32_t tid, bool wait)
{
	return (uint64_t)tid << 1 | wait;
}

static struct py_thread *thread_find(const struct fr_pystacks *ps, uint64_t key)
{
	for (struct hnode *n = fr_htable_first(&ps->threads, fr_mix64(key)); n; n = n->next)
		if (((struct py_thread *)n)->key == key)
			return (struct py_thread *)n;
	return NULL;
}

static void proc_forget(struct fr_pystacks *ps, struct py_proc *p)
{
	if (p->read) {
		fr_bpf_labels_py_forget(ps->bpf, p->pid);
		pthread_mutex_lock(&ps->lock);
		ps->c.procs--;
		pthread_mutex_unlock(&ps->lock);
	}
	fr_htable_remove(&ps->procs, &p->node);
	proc_free(&p->node);
}

/* ---- a process found ---- */

/* An offset of the layout as the program takes it: within `max`. */
static int off16(int32_t off, uint32_t max, uint16_t *out)
{
	if (off < 0) {
		*out = FR_BPF_PY_NONE;
		return 0;
	}
	if ((uint32_t)off > max)
		return -1;
	*out = (uint16_t)off;
	return 0;
}

/* The eBPF map's entry for the layout of x. Returns 0, or -ENOTSUP when
 * a field lies where the program does not read. */
static int bpf_proc(const struct fr_python_exe *x, uint64_t bias, struct fr_bpf_py_proc *v)
{
	const struct fr_py_layout *l = &x->layout;
	const uint32_t fmax = FR_BPF_PY_FRAME_READ - 8, smax = 0xfff0;
	int32_t fr[] = {l->fr_previous, l->fr_code, l->fr_instr, l->fr_is_entry, l->fr_owner};
	uint32_t len = 0;
	int bad = 0;

	memset(v, 0, sizeof(*v));
	v->runtime = x->runtime + bias;
	bad |= off16(l->rt_interp_head, smax, &v->rt_interp_head);
	bad |= off16(l->is_next, smax, &v->is_next);
	bad |= off16(l->is_threads_head, smax, &v->is_threads_head);
	bad |= off16(l->ts_next, smax, &v->ts_next);
	bad |= off16(l->ts_thread_id, smax, &v->ts_thread_id);
	bad |= off16(l->ts_frame, smax, &v->ts_frame);
	bad |= off16(l->ts_cframe, smax, &v->ts_cframe);
	bad |= off16(l->cf_frame, smax, &v->cf_frame);
	bad |= off16(l->fr_previous, fmax, &v->fr_previous);
	bad |= off16(l->fr_code, fmax, &v->fr_code);
	bad |= off16(l->fr_instr, fmax, &v->fr_instr);
	bad |= off16(l->fr_is_entry, fmax, &v->fr_is_entry);
	/* 3.11 keeps an owner too, but no frame of it is a shim */
	bad |= off16(l->fr_cstack_owner >= 0 ? l->fr_owner : -1, fmax, &v->fr_owner);
	for (size_t i = 0; i < sizeof(fr) / sizeof(fr[0]); i++)
		if (fr[i] >= 0 && (uint32_t)fr[i] + 8 > len)
			len = (uint32_t)fr[i] + 8;
	v->fr_len = (uint8_t)len;
	v->cstack_owner = (uint8_t)(l->fr_cstack_owner >= 0 ? l->fr_cstack_owner : 0);
	if (bad || v->rt_interp_head == FR_BPF_PY_NONE || v->is_threads_head == FR_BPF_PY_NONE ||
	    v->ts_next == FR_BPF_PY_NONE || v->ts_thread_id == FR_BPF_PY_NONE ||
	    v->fr_previous == FR_BPF_PY_NONE || v->fr_code == FR_BPF_PY_NONE ||
	    v->fr_instr == FR_BPF_PY_NONE ||
	    (v->ts_frame == FR_BPF_PY_NONE &&
	     (v->ts_cframe == FR_BPF_PY_NONE || v->cf_frame == FR_BPF_PY_NONE)))
		return -ENOTSUP;
	return 0;
}

static void refused(struct fr_pystacks *ps, uint32_t pid, int64_t start_ns, uid_t uid,
		    const char *version, const char *path, const char *why)
{
	char msg[180];

	snprintf(msg, sizeof(msg), "%s%s%s", why, path && path[0] ? " in " : "", path ? path : "");
	pthread_mutex_lock(&ps->lock);
	ps->c.refused++;
	snprintf(ps->c.last_problem, sizeof(ps->c.last_problem), "pid %u: %s", pid, msg);
	pthread_mutex_unlock(&ps->lock);
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
			   "Python frames of pid %u (CPython %s) not read: %s", pid,
			   version && version[0] ? version : "?", msg);
	if (ps->namer.status)
		ps->namer.status(ps->namer.arg, pid, start_ns, uid, version, msg);
}

void fr_pystacks_found(struct fr_pystacks *ps, uint32_t pid, int64_t start_ns, uid_t uid, int ret,
		       const struct fr_python_exe *x, uint64_t bias, const char *path)
{
	struct py_proc *p = proc_find(ps, pid);
	struct fr_bpf_py_proc v;
	char why[96];

	if (!ps->bpf)
		return;
	if (p && p->start_ns == start_ns)
		return; /* looked up again (for its labels): known */
	/* Another process under the pid now: the old one's layout goes */
	if (p)
		proc_forget(ps, p);
	if (ret == -ENOENT)
		return;
	if (ret < 0 || bpf_proc(x, bias, &v) < 0) {
		if (ret == -ENOTSUP || ret == 0)
			snprintf(why, sizeof(why), "release %s not supported (3.10 to 3.13 are)",
				 x->version[0] ? x->version : "not known");
		else
			snprintf(why, sizeof(why), "interpreter not readable (%s)", strerror(-ret));
		refused(ps, pid, start_ns, uid, x->version, path, why);
		return;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return;
	p->pid = pid;
	p->uid = uid;
	p->start_ns = start_ns;
	p->x = *x;
	p->bias = bias;
	for (int k = 0; k < 2; k++)
		if (x->eval[k][1]) {
			p->eval[k][0] = x->eval[k][0] + bias;
			p->eval[k][1] = x->eval[k][1] + bias;
		}
	p->node.hash = pid;
	if (fr_htable_insert(&ps->procs, &p->node) < 0) {
		proc_free(&p->node);
		return;
	}
	if (!p->eval[0][1]) {
		refused(ps, pid, start_ns, uid, x->version, path,
			"no _PyEval_EvalFrameDefault symbol");
		return;
	}
	p->read = fr_bpf_labels_py_set(ps->bpf, pid, &v) == 0;
	if (!p->read)
		return;
	pthread_mutex_lock(&ps->lock);
	ps->c.procs++;
	pthread_mutex_unlock(&ps->lock);
	fr_log_info("Python frames of pid %u read (CPython %s, %s)", pid, x->version, path);
	if (ps->namer.status)
		ps->namer.status(ps->namer.arg, pid, start_ns, uid, x->version, NULL);
}

void fr_pystacks_exec(struct fr_pystacks *ps, uint32_t pid)
{
	struct py_proc *p = proc_find(ps, pid);

	if (p)
		proc_forget(ps, p);
}

/* ---- records ---- */

void fr_pystacks_record(struct fr_pystacks *ps, const struct fr_bpf_py_rec *r, size_t size)
{
	uint64_t key = thread_key(r->tid, r->kind == FR_BPF_PY_WAIT);
	struct py_thread *t = thread_find(ps, key);
	uint32_t n = r->n, i;
	struct rec *c;
	size_t bytes;

	if (n > FR_BPF_PY_DEPTH || size < FR_BPF_PY_REC_HEAD + (size_t)n * sizeof(r->f[0]))
		return;
	bytes = sizeof(*c) + (size_t)n * sizeof(c->f[0]);
	if (__atomic_load_n(&ps->rec_bytes, __ATOMIC_RELAXED) + bytes > RECS_BYTES_MAX)
		goto unused;
	if (!t) {
		if (!(t = calloc(1, sizeof(*t))))
			goto unused;
		t->tid = r->tid;
		t->key = key;
		t->node.hash = fr_mix64(key);
		if (fr_htable_insert(&ps->threads, &t->node) < 0) {
			free(t);
			goto unused;
		}
	}
	t->pid = r->pid;
	if (t->n == THREAD_RECS) {
		rec_drop(ps, t->recs[t->head]);
		t->head = (t->head + 1) % THREAD_RECS;
		t->n--;
		__atomic_add_fetch(&ps->c.unused, 1, __ATOMIC_RELAXED);
	}
	if (!(c = malloc(bytes)))
		goto unused;
	c->time = (int64_t)r->time;
	c->n = (uint16_t)n;
	c->status = r->status;
	memcpy(c->f, r->f, (size_t)n * sizeof(c->f[0]));
	__atomic_add_fetch(&ps->rec_bytes, bytes, __ATOMIC_RELAXED);
	/* In time order: an open wait's record is stamped with its seal's
	 * time, which may be after the end of the wait whose record comes
	 * next (the thread woke before the listing, its task work ran
	 * after); ahead of it, that record would never be reached. */
	i = t->n;
	while (i > 0 && t->recs[(t->head + i - 1) % THREAD_RECS]->time > c->time) {
		t->recs[(t->head + i) % THREAD_RECS] = t->recs[(t->head + i - 1) % THREAD_RECS];
		i--;
	}
	t->recs[(t->head + i) % THREAD_RECS] = c;
	t->n++;
	return;
unused:
	__atomic_add_fetch(&ps->c.unused, 1, __ATOMIC_RELAXED);
}

/* The record of thread t's sample at CLOCK_MONOTONIC `mono`: the last
 * one sent at most MATCH_NS before it, those before it dropped; the
 * caller frees it. NULL when none. */
static struct rec *take(struct fr_pystacks *ps, struct py_thread *t, int64_t mono)
{
	struct rec *hit = NULL;

	while (t->n && t->recs[t->head]->time <= mono) {
		struct rec *r = t->recs[t->head];

		t->head = (t->head + 1) % THREAD_RECS;
		t->n--;
		if (hit) {
			rec_drop(ps, hit);
			__atomic_add_fetch(&ps->c.unused, 1, __ATOMIC_RELAXED);
		}
		hit = r;
	}
	if (hit && hit->time < mono - MATCH_NS) {
		rec_drop(ps, hit);
		__atomic_add_fetch(&ps->c.unused, 1, __ATOMIC_RELAXED);
		hit = NULL;
	}
	return hit;
}

static struct rec *match(struct fr_pystacks *ps, uint32_t tid, bool wait, int64_t mono)
{
	struct py_thread *t = thread_find(ps, thread_key(tid, wait));
	struct rec *r = t ? take(ps, t, mono) : NULL;

	/* Not drained yet: the record was sent before the sample, so one
	 * drain now brings it (a wait's came before it in its own ring
	 * buffer). */
	if (!r && !wait && ps->drained_mono < mono && ps->drain) {
		ps->drained_mono = fr_now_mono_ns();
		ps->drain(ps->drain_arg);
		t = thread_find(ps, thread_key(tid, wait));
		r = t ? take(ps, t, mono) : NULL;
	}
	return r;
}

/* ---- the splice ---- */

static bool in_eval(const struct py_proc *p, uint64_t a)
{
	return (a >= p->eval[0][0] && a < p->eval[0][1]) ||
	       (a >= p->eval[1][0] && a < p->eval[1][1]);
}

/* The byte offset into its code of the instruction frame f is at. */
static uint32_t frame_offset(const struct py_proc *p, const struct fr_bpf_py_frame *f,
			     uint64_t code)
{
	const struct fr_py_layout *l = &p->x.layout;
	uint64_t start;

	if (l->instr_is_lasti) {
		int32_t lasti = (int32_t)(uint32_t)f->instr;

		return lasti >= 0 && (uint32_t)lasti < OFFSET_MAX / 2 ? (uint32_t)lasti * 2
								      : FR_FRAME_PY_NO_OFFSET;
	}
	start = code + (uint64_t)l->co_code_adaptive;
	if (l->co_code_adaptive < 0 || f->instr < start || f->instr - start >= OFFSET_MAX)
		return FR_FRAME_PY_NO_OFFSET;
	return (uint32_t)(f->instr - start);
}

/* Hands code to the namer at the next seal, once per process. */
static void ask(struct py_proc *p, uint64_t code)
{
	uint32_t i;

	if (!code || p->nasked >= CODES_MAX)
		return;
	if ((p->nasked + 1) * 2 > p->asked_cap) {
		uint32_t cap = p->asked_cap ? p->asked_cap * 2 : 256;
		uint64_t *a = calloc(cap, sizeof(*a));

		if (!a)
			return;
		for (uint32_t k = 0; k < p->asked_cap; k++)
			for (i = (uint32_t)fr_mix64(p->asked[k]) & (cap - 1); p->asked[k];
			     i = (i + 1) & (cap - 1))
				if (!a[i]) {
					a[i] = p->asked[k];
					break;
				}
		free(p->asked);
		p->asked = a;
		p->asked_cap = cap;
	}
	for (i = (uint32_t)fr_mix64(code) & (p->asked_cap - 1); p->asked[i];
	     i = (i + 1) & (p->asked_cap - 1))
		if (p->asked[i] == code)
			return;
	if (FR_GROW(p->pending, &p->pending_cap, p->npending + 1, 64) < 0)
		return;
	p->asked[i] = code;
	p->nasked++;
	p->pending[p->npending++] = code;
}

/* Appends the frames of group g (r->f from *at to its entry frame) to
 * ips at *n. */
static void put_group(struct py_proc *p, const struct rec *r, uint32_t *at, uint64_t *ips,
		      uint32_t *n, uint64_t *added)
{
	bool every = p->x.layout.fr_is_entry < 0 && p->x.layout.fr_cstack_owner < 0;

	while (*at < r->n) {
		const struct fr_bpf_py_frame *f = &r->f[(*at)++];
		uint64_t code = f->code & ~7ull;

		if (*n < FR_MAX_FRAMES && code) {
			ips[(*n)++] = FR_FRAME_PY(code, frame_offset(p, f, code));
			ask(p, code);
			(*added)++;
		}
		/* 3.10 runs each frame in a call of its own */
		if (every || (f->code & FR_BPF_PY_ENTRY))
			break;
	}
}

int fr_pystacks_splice(struct fr_pystacks *ps, const struct fr_sample *s, int64_t clock_offset,
		       struct fr_sample *out, uint64_t *ips)
{
	struct py_proc *p = ps->procs.count ? proc_find(ps, s->pid) : NULL;
	uint32_t at = 0, n = 0, j, end = s->nr_frames;
	uint64_t added = 0;
	struct rec *r;

	if (!p || !p->read || s->nr_frames > FR_MAX_FRAMES)
		return 0;
	/* A stack the eval loop is not on (a C thread, a short waits' total)
	 * has nothing to replace: its thread's records wait for another. One
	 * cut short before it (its unwind table not built yet) gets its
	 * Python frames as its roots. */
	for (j = s->nr_kernel; j < s->nr_frames && !in_eval(p, j ? s->ips[j] - 1 : s->ips[j]); j++)
		;
	if (j == s->nr_frames &&
	    !(s->nr_frames > s->nr_kernel && FR_FRAME_IS_MARK(s->ips[s->nr_frames - 1])))
		return 0;
	r = match(ps, s->tid, s->event == FR_EVENT_OFFCPU || FR_EVENT_IS_OPEN_WAIT(s->event),
		  s->time_ns - clock_offset);
	if (!r) {
		__atomic_add_fetch(&ps->c.missed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (!r->n) {
		rec_drop(ps, r);
		return 0;
	}
	/* A marker frame as root stays the root. */
	if (end > s->nr_kernel && FR_FRAME_IS_MARK(s->ips[end - 1]))
		end--;
	for (j = 0; j < end && n < FR_MAX_FRAMES; j++) {
		uint64_t a = s->ips[j];

		if (j >= s->nr_kernel && at < r->n && in_eval(p, j ? a - 1 : a))
			put_group(p, r, &at, ips, &n, &added);
		else
			ips[n++] = a;
	}
	/* The native stack ended first (cut short): the rest are its roots. */
	while (at < r->n && n < FR_MAX_FRAMES)
		put_group(p, r, &at, ips, &n, &added);
	for (; j < s->nr_frames && n < FR_MAX_FRAMES; j++)
		ips[n++] = s->ips[j];
	rec_drop(ps, r);
	if (!added)
		return 0;
	*out = *s;
	out->ips = ips;
	out->nr_frames = (uint16_t)n;
	__atomic_add_fetch(&ps->c.spliced, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ps->c.frames, added, __ATOMIC_RELAXED);
	return 1;
}

/* ---- upkeep ---- */

void fr_pystacks_sealed(struct fr_pystacks *ps)
{
	int64_t now = fr_now_mono_ns(), old = now - STALE_NS;
	struct py_proc **gone = NULL;
	size_t ngone = 0, gone_cap = 0;

	for (size_t b = 0; b < ps->threads.nbuckets; b++) {
		struct hnode *nd = ps->threads.buckets[b];

		while (nd) {
			struct py_thread *t = (struct py_thread *)nd;

			nd = nd->next;
			while (t->n && t->recs[t->head]->time < old) {
				rec_drop(ps, t->recs[t->head]);
				t->head = (t->head + 1) % THREAD_RECS;
				t->n--;
				__atomic_add_fetch(&ps->c.unused, 1, __ATOMIC_RELAXED);
			}
			if (!t->n) {
				fr_htable_remove(&ps->threads, &t->node);
				free(t);
			}
		}
	}
	for (size_t b = 0; b < ps->procs.nbuckets; b++)
		for (struct hnode *nd = ps->procs.buckets[b]; nd; nd = nd->next) {
			struct py_proc *p = (struct py_proc *)nd;

			bool sweep = p->read && (!p->swept || now - p->swept > SWEEP_NS);

			if ((p->npending || sweep) && ps->namer.codes &&
			    ps->namer.codes(ps->namer.arg, p->pid, p->start_ns, p->uid, &p->x,
					    p->bias, p->pending, p->npending, sweep) == 0) {
				p->npending = 0;
				if (sweep)
					p->swept = now;
			}
			/* Forgotten a seal after it was seen gone: the samples
			 * and waits it left in the buffers (drained before the
			 * next seal) still get their Python frames. */
			if (p->gone) {
				if (FR_GROW(gone, &gone_cap, ngone + 1, 16) == 0)
					gone[ngone++] = p;
			} else if (kill((pid_t)p->pid, 0) < 0 && errno == ESRCH) {
				p->gone = true;
			}
		}
	for (size_t i = 0; i < ngone; i++)
		proc_forget(ps, gone[i]);
	free(gone);
}

void fr_pystacks_counts(const struct fr_pystacks *ps, struct fr_pystacks_counts *out)
{
	pthread_mutex_lock((pthread_mutex_t *)&ps->lock);
	*out = ps->c;
	pthread_mutex_unlock((pthread_mutex_t *)&ps->lock);
	out->spliced = __atomic_load_n(&ps->c.spliced, __ATOMIC_RELAXED);
	out->frames = __atomic_load_n(&ps->c.frames, __ATOMIC_RELAXED);
	out->missed = __atomic_load_n(&ps->c.missed, __ATOMIC_RELAXED);
	out->unused = __atomic_load_n(&ps->c.unused, __ATOMIC_RELAXED);
	if (ps->bpf)
		fr_bpf_labels_py_counts(ps->bpf, &out->bpf);
}

uint64_t fr_pystacks_memory(const struct fr_pystacks *ps)
{
	if (!ps)
		return 0;
	return __atomic_load_n(&ps->rec_bytes, __ATOMIC_RELAXED) +
	       (ps->procs.count + ps->threads.count) * 64;
}
