/* Application labels joined to samples (recorder/applabels.h; the memory
 * layout read is lib/flightrec/labels_abi.h).
 *
 * Per process (struct al_proc): where its registry is, the registry and
 * thread table as read for the current seal, the change logs of the
 * threads that have samples in it, and a cache of label sets (sets never
 * change once published, so they are read once). Everything read from
 * the process goes through one deadline worker; a read that fails, lies
 * or misses its deadline marks the process unreadable for good.
 */
#include "recorder/applabels.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/query/elf_object.h"
#include "core/util/log.h"
#include "core/util/worker.h"
#include "flightrec/labels_abi.h"

#define BUCKETS 1024
#define MAX_PROCS 65536
#define SET_CACHE 256
/* A thread's snapshot per seal: its tids are bounded by the chunk's. */
#define MAX_THREADS_PER_SEAL 4096
/* A read that has not returned after this is left to its worker, and the
 * process is not read again until it has returned and some seals passed
 * (a busy machine can keep the worker off the CPUs that long; a process
 * whose memory never answers keeps its worker forever, and is never read
 * again). */
#define READ_DEADLINE_NS 250000000ll
#define STALL_BACKOFF_MAX 64
/* How often the logs of the threads sampled lately are read between
 * seals: a process that exits loses the labels of at most its last
 * POLL_NS of samples. */
#define POLL_NS 100000000ll
/* Seals without samples after which a process is forgotten. */
#define IDLE_SEALS 60

enum { P_NONE, P_READY, P_BAD };

struct al_thread {
	uint32_t tid, slot;
	uint64_t gen;	 /* the last seal that had samples of it */
	bool have;	 /* read at least once */
	bool bad;	 /* the log lied, or the slot was reused under us */
	int64_t until;	 /* monotonic time of the read: later samples are not known */
	uint64_t lo, hi; /* trusted changes [lo, hi) */
	struct fr_labels_entry_abi log[FR_LABELS_LOG_LEN];
};

/* The reads of a process still running on a worker, shared with the
 * jobs: a process forgotten meanwhile leaves it to its last job. */
struct inflight {
	int refs, calls;
};

struct al_proc {
	struct al_proc *next;
	uint32_t pid;
	int64_t start_ns;
	int state;
	bool gone;    /* exited: what was read last is all there is */
	bool stalled; /* a read missed its deadline: not read until resume_gen */
	uint64_t resume_gen;
	uint32_t backoff; /* seals to wait after the next stall */
	struct inflight *inflight;
	const char *why; /* P_BAD */
	uint64_t gen;	 /* the seal this state was refreshed for */
	uint32_t idle;
	uint64_t lib_start;
	uint64_t reg_addr;
	struct fr_labels_registry_abi reg;
	uint32_t *tids; /* [FR_LABELS_MAX_THREADS] while ready */
	struct al_thread **threads;
	uint32_t nthreads;
	/* [SET_CACHE], by id % SET_CACHE; each entry allocated when first
	 * filled (most processes use a few sets). */
	struct fr_labels_set_abi **cache;
	uint32_t *cache_id;
};

struct fr_applabels {
	struct fr_tracker *tracker;
	const struct fr_chunk_meta_ops *base;
	struct fr_chunk_meta_ops ops;
	int64_t clock_offset;
	uint64_t gen;
	int64_t last_poll;
	struct al_proc *buckets[BUCKETS];
	uint32_t nprocs;
	struct fr_worker *worker;
};

/* ---- reads from the process, on the worker ---- */

struct job {
	int pid;
	int ret;
	struct inflight *inflight;
	/* A read: up to three ranges, in turn, each its own system call. */
	unsigned nseg;
	struct {
		uint64_t addr;
		size_t len, off;
	} seg[3];
	/* A look-up of the registry in a mapped file: map_files/start-end. */
	bool resolve;
	uint64_t start, end, pgoff;
	int64_t rel;
	unsigned char buf[];
};

static void job_read(struct job *j)
{
	for (unsigned i = 0; i < j->nseg; i++) {
		struct iovec local = {j->buf + j->seg[i].off, j->seg[i].len};
		struct iovec remote = {(void *)(uintptr_t)j->seg[i].addr, j->seg[i].len};
		ssize_t n = process_vm_readv(j->pid, &local, 1, &remote, 1, 0);

		if (n != (ssize_t)j->seg[i].len) {
			j->ret = n < 0 ? -errno : -EFAULT;
			return;
		}
	}
	j->ret = 0;
}

static void job_resolve(struct job *j)
{
	char path[96];
	struct stat st;
	unsigned char *img = NULL;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", j->pid,
		 (unsigned long long)j->start, (unsigned long long)j->end);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		j->ret = -errno;
		return;
	}
	j->ret = -EFBIG;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > FR_ELF_OBJECT_FILE_MAX || !(img = malloc((size_t)st.st_size)))
		goto out;
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, img + got, (size_t)st.st_size - got, (off_t)got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	j->ret = fr_elf_object_rel(img, got, FR_LABELS_REGISTRY_SYMBOL,
				   sizeof(struct fr_labels_registry_abi), j->pgoff, &j->rel);
out:
	free(img);
	close(fd);
}

static void job_run(void *arg)
{
	struct job *j = arg;

	if (j->resolve)
		job_resolve(j);
	else
		job_read(j);
}

static struct job *job_new(uint32_t pid, size_t bytes)
{
	struct job *j = calloc(1, sizeof(*j) + bytes);

	if (j)
		j->pid = (int)pid;
	return j;
}

static void job_add(struct job *j, uint64_t addr, size_t len, size_t off)
{
	j->seg[j->nseg].addr = addr;
	j->seg[j->nseg].len = len;
	j->seg[j->nseg].off = off;
	j->nseg++;
}

static void inflight_done(struct inflight *f)
{
	__atomic_sub_fetch(&f->calls, 1, __ATOMIC_RELEASE);
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(f);
}

/* An abandoned job, once its call returned (on its worker). */
static void job_drop(void *arg)
{
	struct job *j = arg;

	if (j->inflight)
		inflight_done(j->inflight);
	free(j);
}

/* Runs j on the worker for process p. Returns j's result; on -ETIMEDOUT
 * the abandoned worker owns j (and frees it), else the caller does. */
static int job_call(struct fr_applabels *al, struct al_proc *p, struct job *j)
{
	int ret;

	j->inflight = p->inflight;
	if (j->inflight) {
		__atomic_add_fetch(&j->inflight->refs, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&j->inflight->calls, 1, __ATOMIC_RELAXED);
	}
	ret = fr_worker_call(&al->worker, job_run, job_drop, j, READ_DEADLINE_NS);
	if (ret == -ETIMEDOUT)
		return ret;
	if (j->inflight)
		inflight_done(j->inflight);
	j->inflight = NULL;
	return ret < 0 ? ret : j->ret;
}

/* ---- processes ---- */

/* A read missed its deadline: the process waits some seals (twice as many
 * each time) and for the read to return. */
static void proc_stall(struct al_proc *p)
{
	p->stalled = true;
	p->backoff = p->backoff ? p->backoff : 1;
	p->resume_gen = p->gen + p->backoff;
	if (p->backoff < STALL_BACKOFF_MAX)
		p->backoff *= 2;
	fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
			   "application labels of pid %u: a read took longer than %lld ms; "
			   "not read for %u seals",
			   p->pid, READ_DEADLINE_NS / 1000000, p->backoff / 2 ? p->backoff / 2 : 1);
}

static void proc_mark_bad(struct al_proc *p, const char *why, int err)
{
	if (err == -ETIMEDOUT)
		return proc_stall(p);
	p->state = P_BAD;
	p->why = why;
	fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
			   "application labels of pid %u not read: %s (%s)", p->pid, why,
			   strerror(err < 0 ? -err : EINVAL));
}

static void proc_clear_threads(struct al_proc *p)
{
	for (uint32_t i = 0; i < p->nthreads; i++)
		free(p->threads[i]);
	p->nthreads = 0;
}

static void proc_reset(struct al_proc *p)
{
	proc_clear_threads(p);
	free(p->tids);
	for (uint32_t i = 0; p->cache && i < SET_CACHE; i++)
		free(p->cache[i]);
	free(p->cache);
	free(p->cache_id);
	p->tids = NULL;
	p->cache = NULL;
	p->cache_id = NULL;
	p->state = P_NONE;
	p->gone = false;
	p->lib_start = 0;
	p->reg_addr = 0;
}

/* The registry's fixed limits are this build's: version 1 has no others. */
static bool reg_valid(const struct fr_labels_registry_abi *r)
{
	return r->magic == FR_LABELS_ABI_MAGIC && r->version == FR_LABELS_ABI_VERSION &&
	       r->size == sizeof(*r) && r->max_keys == FR_LABELS_MAX_KEYS &&
	       r->key_max == FR_LABELS_KEY_MAX && r->value_max == FR_LABELS_VALUE_MAX &&
	       r->max_sets == FR_LABELS_MAX_SETS && r->max_threads == FR_LABELS_MAX_THREADS &&
	       r->log_len == FR_LABELS_LOG_LEN && r->nsets <= FR_LABELS_MAX_SETS;
}

/* Finds the registry in the mapped libflightrec.so m. */
static void proc_resolve(struct fr_applabels *al, struct al_proc *p, const struct fr_tracker_map *m)
{
	struct job *j = job_new(p->pid, 0);
	int ret;

	proc_reset(p);
	p->lib_start = m->start;
	if (!j)
		return;
	j->resolve = true;
	j->start = m->start;
	j->end = m->end;
	j->pgoff = m->pgoff;
	ret = job_call(al, p, j);
	if (ret == -ETIMEDOUT) {
		p->lib_start = 0; /* looked up again once resumed */
		return proc_stall(p);
	}
	if (ret == 0) {
		p->reg_addr = m->start + (uint64_t)j->rel;
		p->tids = malloc(FR_LABELS_MAX_THREADS * sizeof(*p->tids));
		p->cache = calloc(SET_CACHE, sizeof(*p->cache));
		p->cache_id = calloc(SET_CACHE, sizeof(*p->cache_id));
		p->threads = p->threads ? p->threads
					: malloc(MAX_THREADS_PER_SEAL * sizeof(*p->threads));
		if (p->tids && p->cache && p->cache_id && p->threads)
			p->state = P_READY;
		else
			proc_reset(p);
	} else {
		proc_mark_bad(p, "unreadable: no registry in the library", ret);
	}
	free(j);
}

/* Reads the registry and the thread table for this seal. */
static void proc_read(struct fr_applabels *al, struct al_proc *p)
{
	size_t tids_len = FR_LABELS_MAX_THREADS * sizeof(*p->tids);
	struct job *j = job_new(p->pid, sizeof(p->reg) + tids_len);
	int ret;

	if (!j)
		return proc_mark_bad(p, "unreadable: recorder out of memory", -ENOMEM);
	job_add(j, p->reg_addr, sizeof(p->reg), 0);
	ret = job_call(al, p, j);
	if (ret == 0) {
		memcpy(&p->reg, j->buf, sizeof(p->reg));
		if (!reg_valid(&p->reg)) {
			free(j);
			return proc_mark_bad(p, "unreadable: bad registry", -EBADMSG);
		}
		/* Loaded but not set up yet: no labels so far. */
		if (!p->reg.tids || !p->reg.threads || !p->reg.sets) {
			memset(p->tids, 0, tids_len);
			free(j);
			return;
		}
		j->nseg = 0;
		job_add(j, p->reg.tids, tids_len, sizeof(p->reg));
		ret = job_call(al, p, j);
	}
	if (ret == 0)
		memcpy(p->tids, j->buf + sizeof(p->reg), tids_len);
	else if (ret == -ESRCH)
		p->gone = true;
	else
		proc_mark_bad(p, "unreadable: registry", ret);
	if (ret != -ETIMEDOUT)
		free(j);
}

/* The process's state for this seal: refreshed on its first sample. */
static struct al_proc *proc_get(struct fr_applabels *al, uint32_t pid)
{
	struct al_proc **b = &al->buckets[pid % BUCKETS], *p;
	struct fr_proc_info pi = {0};
	struct fr_tracker_map m;
	bool mapped;

	for (p = *b; p && p->pid != pid; p = p->next)
		;
	if (p && p->gen == al->gen)
		return p;
	if (!p) {
		if (al->nprocs >= MAX_PROCS || !(p = calloc(1, sizeof(*p))))
			return NULL;
		p->inflight = calloc(1, sizeof(*p->inflight));
		if (!p->inflight) {
			free(p);
			return NULL;
		}
		p->inflight->refs = 1;
		p->pid = pid;
		p->next = *b;
		*b = p;
		al->nprocs++;
	}
	p->gen = al->gen;
	p->idle = 0;
	/* A stalled process is read again once its reads returned and its
	 * seals of waiting passed. */
	if (p->stalled && p->gen >= p->resume_gen &&
	    __atomic_load_n(&p->inflight->calls, __ATOMIC_ACQUIRE) == 0)
		p->stalled = false;
	if (p->stalled)
		return p;
	/* A new process under the same pid starts over. */
	if (al->base->proc && al->base->proc(al->base->arg, pid, &pi) == 0 &&
	    pi.start_ns != p->start_ns) {
		proc_reset(p);
		p->start_ns = pi.start_ns;
	}
	mapped = fr_tracker_find_map_named(al->tracker, pid, "libflightrec.so", &m) == 0;
	if (!mapped) {
		/* Unmapped, or the process exited: samples before that keep
		 * what the last reads found. */
		if (p->state == P_READY)
			p->gone = true;
		return p;
	}
	if (m.start != p->lib_start)
		proc_resolve(al, p, &m);
	if (p->state == P_READY && !p->gone && !p->stalled)
		proc_read(al, p);
	return p;
}

/* ---- threads ---- */

/* Reads thread slot i's log: head, log, head again (see the ABI). */
static const struct fr_labels_set_abi *set_get(struct fr_applabels *al, struct al_proc *p,
					       uint32_t id);

/* Checks a log just read (h1 and h2 the heads before and after it) and
 * makes it t's snapshot, trusted for samples up to `until`. */
static void thread_take(struct al_thread *t, const struct fr_labels_thread_abi *h1,
			const struct fr_labels_thread_abi *h2, const void *log, int64_t until)
{
	uint64_t lo, hi;

	memcpy(t->log, log, sizeof(t->log));
	t->have = true;
	t->bad = true;
	t->until = until;
	/* Another thread took the slot, or the head went back: nothing in
	 * the log can be trusted for this tid. */
	if (h1->tid != t->tid || h2->tid != t->tid || h2->head < h1->head)
		return;
	hi = h1->head;
	lo = hi > FR_LABELS_LOG_LEN ? hi - FR_LABELS_LOG_LEN : 0;
	if (h2->head + 1 > FR_LABELS_LOG_LEN && h2->head + 1 - FR_LABELS_LOG_LEN > lo)
		lo = h2->head + 1 - FR_LABELS_LOG_LEN;
	if (lo > hi)
		lo = hi;
	/* Each trusted change has its number; times never go back. */
	for (uint64_t k = lo, first = lo; k < hi; k++) {
		const struct fr_labels_entry_abi *e = &t->log[k % FR_LABELS_LOG_LEN];

		if (e->seq != (uint32_t)(k + 1))
			first = lo = k + 1;
		else if (k > first && e->time_ns < t->log[(k - 1) % FR_LABELS_LOG_LEN].time_ns)
			return;
	}
	t->lo = lo;
	t->hi = hi;
	t->bad = false;
}

/* Reads thread slot t->slot's log: head, log, head again (see the ABI).
 * A process that has exited keeps the snapshot of the last read. */
static void thread_read(struct fr_applabels *al, struct al_proc *p, struct al_thread *t)
{
	size_t hdr = offsetof(struct fr_labels_thread_abi, log), loglen = sizeof(t->log);
	struct job *j = job_new(p->pid, 2 * hdr + loglen);
	struct fr_labels_thread_abi h1, h2;
	uint64_t addr = p->reg.threads + (uint64_t)t->slot * sizeof(struct fr_labels_thread_abi);
	int64_t until = fr_now_mono_ns();
	int ret;

	if (!j)
		return;
	job_add(j, addr, hdr, 0);
	job_add(j, addr + hdr, loglen, hdr);
	job_add(j, addr, hdr, hdr + loglen);
	ret = job_call(al, p, j);
	if (ret == -ESRCH) {
		p->gone = true;
	} else if (ret < 0) {
		t->have = true;
		t->bad = true;
		proc_mark_bad(p, "unreadable: thread log", ret);
	} else {
		uint64_t old_hi = t->have && !t->bad ? t->hi : 0;

		memcpy(&h1, j->buf, hdr);
		memcpy(&h2, j->buf + hdr + loglen, hdr);
		thread_take(t, &h1, &h2, j->buf + hdr, until);
		/* The sets of the new changes, while the process is there to
		 * read them from: it may exit before the seal needs them. */
		for (uint64_t k = old_hi > t->lo ? old_hi : t->lo; !t->bad && k < t->hi; k++)
			if (t->log[k % FR_LABELS_LOG_LEN].set < FR_LABELS_SET_DROPPED &&
			    p->state == P_READY && !p->gone && !p->stalled)
				set_get(al, p, t->log[k % FR_LABELS_LOG_LEN].set);
	}
	if (ret != -ETIMEDOUT)
		free(j);
}

/* The snapshot of `tid` for this seal, read once per seal while the
 * process lives; NULL when the thread has no slot (it never set labels)
 * or, with *why, when nothing could be read. */
static struct al_thread *thread_get(struct fr_applabels *al, struct al_proc *p, uint32_t tid,
				    const char **why)
{
	struct al_thread *t = NULL;
	uint32_t slot = UINT32_MAX;

	for (uint32_t i = 0; i < p->nthreads && !t; i++)
		if (p->threads[i]->tid == tid)
			t = p->threads[i];
	if (!t) {
		for (uint32_t i = 0; i < FR_LABELS_MAX_THREADS; i++)
			if (p->tids[i] == tid)
				slot = i;
		if (slot == UINT32_MAX && p->gone) {
			*why = "exited before read";
			return NULL;
		}
		if (slot == UINT32_MAX)
			return NULL;
		if (p->nthreads >= MAX_THREADS_PER_SEAL || !(t = calloc(1, sizeof(*t)))) {
			*why = "unreadable: recorder limit";
			return NULL;
		}
		t->tid = tid;
		t->slot = slot;
		p->threads[p->nthreads++] = t;
	}
	if (t->gen != al->gen && !p->gone && !p->stalled && p->state == P_READY)
		thread_read(al, p, t);
	t->gen = al->gen;
	if (!t->have) {
		*why = "exited before read";
		return NULL;
	}
	return t;
}

/* ---- sets ---- */

static bool set_valid(const struct fr_labels_set_abi *s)
{
	if (s->ready != 1 || s->npairs > FR_LABELS_MAX_KEYS)
		return false;
	for (uint32_t k = 0; k < s->npairs; k++)
		if (!memchr(s->pairs[k].key, 0, FR_LABELS_KEY_MAX) ||
		    !memchr(s->pairs[k].value, 0, FR_LABELS_VALUE_MAX))
			return false;
	return true;
}

static const struct fr_labels_set_abi *set_get(struct fr_applabels *al, struct al_proc *p,
					       uint32_t id)
{
	uint32_t c = id % SET_CACHE;
	struct job *j;
	int ret;

	if (p->cache_id[c] == id)
		return p->cache[c];
	if (p->stalled)
		return NULL;
	if (!p->cache[c])
		p->cache[c] = malloc(sizeof(*p->cache[c]));
	if (!p->cache[c] || id == 0 || id > FR_LABELS_MAX_SETS ||
	    !(j = job_new(p->pid, sizeof(*p->cache[c]))))
		return NULL;
	job_add(j, p->reg.sets + (uint64_t)(id - 1) * sizeof(*p->cache[c]), sizeof(*p->cache[c]),
		0);
	ret = job_call(al, p, j);
	if (ret == 0) {
		memcpy(p->cache[c], j->buf, sizeof(*p->cache[c]));
		p->cache_id[c] = set_valid(p->cache[c]) ? id : 0;
	} else if (ret == -ESRCH) {
		p->gone = true;
	} else {
		proc_mark_bad(p, "unreadable: label set", ret);
	}
	if (ret != -ETIMEDOUT)
		free(j);
	return p->cache_id[c] == id ? p->cache[c] : NULL;
}

/* ---- the join ---- */

static const char *const drop_reason[FR_LABELS_DROP_COUNT] = {
	[FR_LABELS_DROP_TOO_MANY_KEYS] = "dropped: too many keys",
	[FR_LABELS_DROP_KEY_TOO_LONG] = "dropped: key too long",
	[FR_LABELS_DROP_VALUE_TOO_LONG] = "dropped: value too long",
	[FR_LABELS_DROP_TOO_MANY_SETS] = "dropped: too many sets",
	[FR_LABELS_DROP_RESERVED_KEY] = "dropped: reserved key",
	[FR_LABELS_DROP_TOO_MANY_THREADS] = "dropped: too many threads",
	[FR_LABELS_DROP_BAD_ARGUMENT] = "dropped: bad argument",
};

static int reason(struct fr_app_label *out, const char *why)
{
	out[0].key = FR_APP_REASON_KEY;
	out[0].value = why;
	return 1;
}

/* The recorder's own label names: a set that carries one (a library
 * that does not check, or a lying process) loses that pair. */
static bool reserved(const char *key)
{
	static const char *const ours[] = {"pid",    "tid",  "comm", "thread",
					   "cgroup", "ppid", "cpu",  "event"};

	if (!*key || strncmp(key, "flightrec.", 10) == 0)
		return true;
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (strcmp(key, ours[i]) == 0)
			return true;
	return false;
}

/* The set id in force on t at monotonic time `mono`, or NULL with *why. */
static int64_t join(const struct al_thread *t, int64_t mono, const char **why)
{
	uint64_t lo = t->lo, hi = t->hi;

	if (t->bad) {
		*why = "unreadable: thread log";
		return -1;
	}
	if (mono > t->until) {
		*why = "exited before read";
		return -1;
	}
	/* The last change at or before mono. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (t->log[mid % FR_LABELS_LOG_LEN].time_ns <= mono)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->lo) {
		if (t->lo == 0)
			return 0; /* before the thread's first change */
		*why = "log wrapped";
		return -1;
	}
	return t->log[(lo - 1) % FR_LABELS_LOG_LEN].set;
}

static int al_app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			 struct fr_app_label *out)
{
	struct fr_applabels *al = arg;
	const struct fr_labels_set_abi *s;
	struct al_proc *p;
	struct al_thread *t;
	const char *why = NULL;
	int64_t id;
	int n = 0;

	if (ref)
		return 0;
	p = proc_get(al, pid);
	if (p && p->stalled)
		return reason(out, "unreadable: read stalled");
	if (!p || p->state == P_NONE)
		return 0;
	if (p->state == P_BAD)
		return reason(out, p->why);
	t = thread_get(al, p, tid, &why);
	if (p->stalled)
		return reason(out, "unreadable: read stalled");
	if (p->state == P_BAD)
		return reason(out, p->why);
	if (!t)
		return why ? reason(out, why) : 0;
	id = join(t, time_ns - al->clock_offset, &why);
	if (id < 0)
		return reason(out, why);
	if (id == 0)
		return 0;
	if (id >= FR_LABELS_SET_DROPPED) {
		uint32_t r = (uint32_t)id - FR_LABELS_SET_DROPPED;

		return reason(out, r < FR_LABELS_DROP_COUNT && drop_reason[r] ? drop_reason[r]
									      : "dropped");
	}
	s = set_get(al, p, (uint32_t)id);
	if (!s)
		return reason(out, p->stalled	       ? "unreadable: read stalled"
				   : p->state == P_BAD ? p->why
				   : p->gone	       ? "exited before read"
						       : "unreadable: label set");
	for (uint32_t k = 0; k < s->npairs && n < FR_CHUNK_APP_PAIRS; k++) {
		if (reserved(s->pairs[k].key))
			continue;
		out[n].key = s->pairs[k].key;
		out[n].value = s->pairs[k].value;
		n++;
	}
	return n;
}

/* ---- the tracker's ops, forwarded ---- */

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

	if (!al)
		return NULL;
	al->tracker = t;
	al->base = fr_tracker_ops(t);
	al->gen = 1;
	al->ops = (struct fr_chunk_meta_ops){
		.proc = w_proc,
		.thread = w_thread,
		.mapping = w_mapping,
		.app_labels = al_app_labels,
		.arg = al,
	};
	return al;
}

const struct fr_chunk_meta_ops *fr_applabels_ops(struct fr_applabels *al, int64_t clock_offset)
{
	al->clock_offset = clock_offset;
	return &al->ops;
}

static void proc_free(struct al_proc *p)
{
	proc_reset(p);
	if (__atomic_sub_fetch(&p->inflight->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(p->inflight);
	free(p->threads);
	free(p);
}

/* Forgets the snapshots of threads without samples in the last seal. */
static void proc_trim_threads(struct al_proc *p, uint64_t gen)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nthreads; i++) {
		if (p->threads[i]->gen + 1 >= gen)
			p->threads[n++] = p->threads[i];
		else
			free(p->threads[i]);
	}
	p->nthreads = n;
}

void fr_applabels_poll(struct fr_applabels *al)
{
	int64_t now = fr_now_mono_ns();

	if (now - al->last_poll < POLL_NS)
		return;
	al->last_poll = now;
	for (uint32_t b = 0; b < BUCKETS; b++)
		for (struct al_proc *p = al->buckets[b]; p; p = p->next)
			for (uint32_t i = 0;
			     p->state == P_READY && !p->gone && !p->stalled && i < p->nthreads; i++)
				thread_read(al, p, p->threads[i]);
}

void fr_applabels_sealed(struct fr_applabels *al)
{
	al->gen++;
	for (uint32_t b = 0; b < BUCKETS; b++) {
		for (struct al_proc **pp = &al->buckets[b], *p; (p = *pp);) {
			proc_trim_threads(p, al->gen);
			if (++p->idle > IDLE_SEALS) {
				*pp = p->next;
				proc_free(p);
				al->nprocs--;
			} else {
				pp = &p->next;
			}
		}
	}
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
	for (uint32_t b = 0; b < BUCKETS; b++) {
		while (al->buckets[b]) {
			struct al_proc *p = al->buckets[b];

			al->buckets[b] = p->next;
			proc_free(p);
		}
	}
	fr_worker_free(al->worker);
	free(al);
}
