/* flightrec goroutines: every goroutine of a Go process, read from its
 * memory now (recorder/tracking/goroutines.h), answered as a pprof
 * (recorder/requests/goroutines.h; written by goroutines_write.c).
 *
 * Who may ask: as threads, a peer that is not privileged only for a
 * process of its own that it could read itself (dumpable, no other
 * credentials: fr_proc_may_read()), judged before the read and again
 * after it, so an exec of a set-user-ID program in between is refused.
 *
 * The read runs on a worker thread of its own within
 * GOROUTINES_DEADLINE_NS (core/util/worker.h): the executable may sit on
 * a mount that never answers, and the process's memory on one too (a
 * FUSE mapping, userfaultfd). Its memory comes from the query memory
 * (recorder/requests/querymem.c): what it got bounds what is listed.
 *
 * How long a goroutine has waited: Go keeps no start of a wait that a
 * reader could use (g.waitsince is set only when a garbage collection
 * finds the goroutine blocked), so the recorder remembers, per process,
 * where each waiting goroutine waited when it last looked (its state,
 * wait reason, saved pc and sp: struct grec's fp) and since when; the
 * time given is from the earlier of that and the runtime's waitsince, a
 * lower bound ("waited": "at least").
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/gopclntab.h"
#include "core/util/grow.h"
#include "core/util/hash.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "core/util/vmread.h"
#include "core/util/worker.h"
#include "ipc/msg_goroutines.h"
#include "recorder/requests/goroutines.h"
#include "recorder/requests/goroutines_int.h"
#include "recorder/requests/peer.h"
#include "recorder/tracking/golabels.h"
#include "recorder/tracking/proc.h"
#include "recorder/tracking/proc_threads.h"

#define GOROUTINES_DEADLINE_NS (20 * FR_NS_PER_S)
/* What a request asks of the query memory. */
#define GOROUTINES_MEMORY (96ull << 20)
/* Processes whose waits are remembered. */
#define WAITS_PIDS 16

/* ---- the read, on the worker ---- */

static int vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	return fr_proc_vm_read(*(uint32_t *)arg, addr, buf, n);
}

static int vreadv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	return fr_proc_vm_readv(*(uint32_t *)arg, n, addr, len, buf);
}

static size_t held(const struct glisting *l)
{
	return l->gcap * sizeof(*l->g) + l->pcs_cap * sizeof(*l->pcs) + l->labs_cap;
}

/* The outermost function at pc and the innermost frame's file and line
 * (for a `go` statement inlined, the function it is in), remembered. */
static const struct gname *name_at(struct glisting *l, uint64_t pc)
{
	struct gname *n = &l->names[(pc * 0x9e3779b97f4a7c15ull) >> 56];
	struct fr_dwarf_frame f[16];
	int k;

	if (n->pc == pc && pc)
		return n;
	memset(n, 0, sizeof(*n));
	n->pc = pc;
	if (pc && (k = fr_gopclntab_lookup(l->x.tab, pc, f, 16)) > 0)
		*n = (struct gname){.pc = pc,
				    .fn = f[k - 1].function,
				    .file = f[0].file,
				    .line = f[0].line};
	return n;
}

/* The names a goroutine is shown with, and whether it is the runtime's
 * own: started in runtime.* other than runtime.main. */
static void name(struct glisting *l, struct grec *r)
{
	const struct gname *n = name_at(l, r->startpc);

	r->start = n->fn;
	r->system = n->fn && strncmp(n->fn, "runtime.", 8) == 0 &&
		    strcmp(n->fn, "runtime.main") != 0;
	/* The first goroutine's `go` statement is the runtime's start. */
	if (r->goid == 1 || !r->gopc)
		return;
	n = name_at(l, r->gopc - 1);
	r->created_by = n->fn;
	r->created_file = n->file;
	r->created_line = n->line;
}

/* Keeps g: its fields, its pcs and labels in the arenas. */
static int keep(void *arg, const struct fr_goroutine *g)
{
	struct glisting *l = arg;
	size_t lab = 0;
	struct grec *r;

	for (uint32_t i = 0; i < g->nlabels; i++)
		lab += strlen(g->labels[i].k) + strlen(g->labels[i].v) + 2;
	if (FR_GROW(l->g, &l->gcap, l->n + 1, 1024) < 0 ||
	    FR_GROW(l->pcs, &l->pcs_cap, l->npcs + g->npc, 8192) < 0 ||
	    FR_GROW(l->labs, &l->labs_cap, l->nlabs + lab + 1, 4096) < 0 || held(l) > l->cap) {
		l->full = 1;
		return -ECANCELED;
	}
	r = &l->g[l->n++];
	*r = (struct grec){.goid = g->goid,
			   .parent = g->parent,
			   .gopc = g->gopc,
			   .startpc = g->startpc,
			   .status = g->status,
			   .waitreason = g->waitreason,
			   .tid = g->tid,
			   .npc = g->npc,
			   .nlabels = g->nlabels,
			   .pc_at = l->npcs,
			   .lab_at = l->nlabs,
			   .stack = g->stack,
			   .labels_more = g->labels_more};
	/* Where it waits; a goroutine that ran and waits again at the same
	 * place has another tracking sequence (Go counts its every stop). */
	uint64_t fp[] = {g->status, g->waitreason, g->sched_pc, g->sched_sp,
			 (uint64_t)(int64_t)g->tracking_seq};
	r->fp = fr_fnv1a(FR_FNV_OFFSET, fp, sizeof(fp));
	if (g->status == FR_G_WAITING && g->waitsince > 0 && g->waitsince < l->now_mono)
		r->waiting_ns = l->now_mono - g->waitsince;
	name(l, r);
	memcpy(l->pcs + l->npcs, g->pc, g->npc * sizeof(*g->pc));
	l->npcs += g->npc;
	for (uint32_t i = 0; i < g->nlabels; i++) {
		size_t k = strlen(g->labels[i].k) + 1, v = strlen(g->labels[i].v) + 1;

		memcpy(l->labs + l->nlabs, g->labels[i].k, k);
		memcpy(l->labs + l->nlabs + k, g->labels[i].v, v);
		l->nlabs += k + v;
	}
	return 0;
}

/* The load bias of a position-independent executable: where the mapping
 * of its first page is, less its link-time address. */
static uint64_t bias_of(const struct glisting *l, const struct stat *st)
{
	char path[64], line[4608];
	uint64_t start, end, off, ino, bias = 0;
	FILE *f;

	if (!l->x.pie)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", l->pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %lx %*s %lu", &start, &end, &off, &ino) == 4 &&
		    ino == st->st_ino && off == 0) {
			bias = start - l->x.lo_vaddr;
			break;
		}
	fclose(f);
	return bias;
}

static void read_run(void *arg)
{
	struct glisting *l = arg;
	char path[64];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/exe", l->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		l->err = fd < 0 && errno == ENOENT ? -ESRCH : -ENOEXEC;
		goto out;
	}
	n = readlink(path, l->exe, sizeof(l->exe) - 1);
	l->exe[n > 0 ? n : 0] = '\0';
	if ((l->err = fr_go_exe_read(fd, &l->x)) < 0)
		goto out;
	fr_proc_read_uid("/proc", l->pid, &l->uid);
	l->bias = bias_of(l, &st);
	l->now_mono = fr_now_mono_ns();
	l->err = fr_goroutines_read(&l->x, l->bias, &(struct fr_go_mem){vread, vreadv, &l->pid},
				    GOROUTINES_MAX, keep, l, &l->st);
out:
	if (fd >= 0)
		close(fd);
}

static void listing_free(struct glisting *l)
{
	if (!l)
		return;
	fr_go_exe_fini(&l->x);
	free(l->g);
	free(l->pcs);
	free(l->labs);
	free(l);
}

static void read_drop(void *arg)
{
	listing_free(arg);
}

/* ---- how long they waited ---- */

struct seen {
	uint64_t goid, fp;
	int64_t first;
};

static struct {
	pthread_mutex_t lock;
	struct {
		uint32_t pid;
		uint64_t start; /* the process's start: a pid reused is another */
		int64_t used;
		struct seen *v;
		size_t n;
	} p[WAITS_PIDS];
} waits = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int by_goid(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	return x->goid < y->goid ? -1 : x->goid > y->goid;
}

/* The slot of (pid, start): its own, else the least recently used. */
static size_t wait_slot(uint32_t pid, uint64_t start)
{
	size_t best = 0;

	for (size_t i = 0; i < WAITS_PIDS; i++) {
		if (waits.p[i].pid == pid && waits.p[i].start == start)
			return i;
		if (waits.p[i].used < waits.p[best].used)
			best = i;
	}
	free(waits.p[best].v);
	waits.p[best].v = NULL;
	waits.p[best].n = 0;
	waits.p[best].pid = pid;
	waits.p[best].start = start;
	return best;
}

/* Sets each waiting goroutine's time from when it was first seen in the
 * same wait, and remembers this look for the next. */
static void waited(struct glisting *l)
{
	struct fr_proc_stat ps;
	struct seen *now = calloc(l->n ? l->n : 1, sizeof(*now));
	size_t s, k = 0;

	if (!now || fr_proc_read_stat("/proc", l->pid, &ps) < 0) {
		free(now);
		return;
	}
	pthread_mutex_lock(&waits.lock);
	s = wait_slot(l->pid, ps.start);
	for (size_t i = 0; i < l->n; i++) {
		struct grec *g = &l->g[i];
		struct seen key = {.goid = g->goid}, *was;
		int64_t first = l->now_mono;

		if (g->status != FR_G_WAITING && g->status != FR_G_SYSCALL)
			continue;
		was = bsearch(&key, waits.p[s].v, waits.p[s].n, sizeof(key), by_goid);
		if (was && was->fp == g->fp && was->first < first)
			first = was->first;
		if (l->now_mono - first > g->waiting_ns)
			g->waiting_ns = l->now_mono - first;
		if (g->waiting_ns)
			first = l->now_mono - g->waiting_ns;
		now[k++] = (struct seen){g->goid, g->fp, first};
	}
	qsort(now, k, sizeof(*now), by_goid);
	free(waits.p[s].v);
	waits.p[s].v = now;
	waits.p[s].n = k;
	waits.p[s].used = l->now_mono;
	pthread_mutex_unlock(&waits.lock);
}

/* ---- the request ---- */

static int refuse_read(struct fr_ipc_call *call, const struct glisting *l)
{
	switch (l->err) {
	case -ESRCH: return fr_ipc_refuse(call, "goroutines: no process %u", l->pid);
	case -ENOENT:
		return fr_ipc_refuse(call, "goroutines: process %u is not a Go program", l->pid);
	case -ENOTSUP:
		return fr_ipc_refuse(call,
				     "goroutines: process %u was built by %s, whose runtime layout "
				     "this recorder does not know, without the DWARF that would "
				     "give it (a build without -ldflags=-w has it)",
				     l->pid, l->x.version[0] ? l->x.version : "an unknown Go");
	case -ENOEXEC:
		return fr_ipc_refuse(call,
				     "goroutines: process %u is not a Go program this recorder reads "
				     "(%s%s: no x86-64 ELF executable with a Go function table)",
				     l->pid, l->x.version[0] ? "it says " : "",
				     l->x.version[0] ? l->x.version : "not ELF");
	case -EADDRNOTAVAIL:
		return fr_ipc_refuse(call,
				     "goroutines: the runtime's list of goroutines was not found "
				     "in process %u (%s)",
				     l->pid, l->x.version);
	default:
		return fr_ipc_refuse(call, "goroutines: cannot read process %u: %s", l->pid,
				     strerror(-l->err));
	}
}

/* Whether a peer that is not privileged may read pid. */
static int may(const struct fr_ipc_peer *peer, uint32_t pid)
{
	uint32_t uid;

	return fr_proc_read_uid("/proc", pid, &uid) == 0 && uid == (uint32_t)peer->uid &&
	       fr_proc_may_read("/proc", pid, (uint32_t)peer->uid, (uint32_t)peer->gid);
}

static int answer(struct glisting *l, int fd, int has_uid, struct fr_ipc_call *call,
		  struct fr_ipc_goroutines_reply *r)
{
	if (l->err < 0 && l->err != -E2BIG && l->err != -ECANCELED)
		return refuse_read(call, l);
	if (has_uid && !may(call->peer, l->pid))
		return fr_ipc_refuse(call, "goroutines: process %u is not yours to read", l->pid);
	waited(l);
	if (goroutines_write(&l, 1, fd, &r->system, &r->bytes) < 0)
		return fr_ipc_refuse(call, "goroutines: cannot write the answer");
	r->goroutines = l->n - r->system;
	r->changed = l->st.changed;
	snprintf(r->go, sizeof(r->go), "%s", l->x.version);
	if (l->full || l->err == -E2BIG)
		fr_ipc_warnf(r->warnings, &r->nwarnings,
			     "only the first %zu goroutines are listed (the memory a request "
			     "may take, or %d)",
			     l->n, GOROUTINES_MAX);
	return 0;
}

/* ---- a dump's snapshot ---- */

/* The search for the targets' Go programs, on a worker: an executable
 * is opened, and may sit on a mount that never answers. */
struct snap {
	struct fr_targets t;
	uint32_t pids[GOROUTINES_SNAPSHOT_PROCS];
	uint32_t n;
	int more; /* Go programs past the bound */
};

/* Whether pid, one of the targets, runs a Go program (its executable has
 * a .go.buildinfo: headers and sections read, nothing more). */
static void consider(void *arg, uint32_t pid)
{
	struct snap *s = arg;
	struct fr_go_runtime rt;
	char path[64];
	int fd, go;

	if (pid == (uint32_t)getpid() || !fr_proc_matches("/proc", pid, &s->t))
		return;
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
		return;
	go = fr_go_runtime_from_fd(fd, &rt) != -ENOENT && rt.version[0];
	close(fd);
	if (go && s->n == GOROUTINES_SNAPSHOT_PROCS)
		s->more = 1;
	else if (go)
		s->pids[s->n++] = pid;
}

static void search_run(void *arg)
{
	struct snap *s = arg;

	if (s->t.npids)
		for (uint32_t i = 0; i < s->t.npids; i++)
			consider(s, s->t.pids[i]);
	else
		fr_proc_each_pid("/proc", consider, s);
}

static void search_drop(void *arg)
{
	free(arg);
}

/* The Go programs among the targets, into *s (its copy of the targets
 * set). Returns 0 or -errno (-ETIMEDOUT: an open hung; s is then the
 * worker's). */
static int search(struct snap *s)
{
	struct fr_worker *w = NULL;
	int ret = fr_worker_call(&w, search_run, search_drop, s, GOROUTINES_SNAPSHOT_NS);

	fr_worker_free(w);
	if (ret == -ETIMEDOUT)
		fr_log_warn("a dump's goroutines: looking for the targets' Go programs took more "
			    "than 5 s (an executable on a file system that does not answer?); "
			    "none kept");
	return ret;
}

int daemon_goroutines_snapshot(struct daemon *d, const struct fr_targets *t, int fd,
			       uint32_t *nprocs)
{
	struct snap *found = calloc(1, sizeof(*found)), s;
	struct glisting *ls[GOROUTINES_SNAPSHOT_PROCS];
	uint64_t system, bytes;
	size_t n = 0;
	int64_t got;
	int ret;

	*nprocs = 0;
	if (!found)
		return -ENOMEM;
	found->t = *t;
	if ((ret = search(found)) < 0) {
		if (ret != -ETIMEDOUT)
			free(found);
		return ret;
	}
	s = *found;
	free(found);
	if (!s.n)
		return 0;
	if ((got = daemon_memory_reserve(d, 0, GOROUTINES_MEMORY)) < 0)
		return (int)got;
	for (uint32_t i = 0; i < s.n; i++) {
		struct fr_worker *w = NULL;
		struct glisting *l = calloc(1, sizeof(*l));

		if (!l)
			break;
		l->pid = s.pids[i];
		l->cap = (uint64_t)got / s.n;
		ret = fr_worker_call(&w, read_run, read_drop, l, GOROUTINES_SNAPSHOT_NS);
		fr_worker_free(w);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret < 0 || (l->err < 0 && l->err != -E2BIG && l->err != -ECANCELED)) {
			listing_free(l);
			continue;
		}
		waited(l);
		ls[n++] = l;
	}
	ret = n ? goroutines_write(ls, n, fd, &system, &bytes) : 0;
	*nprocs = ret == 0 ? (uint32_t)n : 0;
	for (size_t i = 0; i < n; i++)
		listing_free(ls[i]);
	daemon_memory_release(d, 0, got);
	if (s.more)
		fr_log_warn("a dump's goroutines: only the first %d Go programs of the targets",
			    GOROUTINES_SNAPSHOT_PROCS);
	return ret;
}

int daemon_handle_goroutines(void *arg, struct fr_ipc_call *call,
			     const struct fr_ipc_goroutines_req *q,
			     struct fr_ipc_goroutines_reply *r)
{
	struct daemon *d = arg;
	struct fr_worker *w = NULL;
	struct glisting *l = NULL;
	int fd = call->fd, ret, has_uid = !fr_peer_privileged(d->peers, call->peer);
	int64_t got = 0;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY) {
		ret = fr_ipc_refuse(call, "goroutines needs a regular file open for writing "
					  "passed with the request");
		goto out;
	}
	if (q->at_ns) {
		ret = daemon_goroutines_at(d, call, q, has_uid, fd, r);
		goto out;
	}
	if (has_uid && !may(call->peer, q->pid)) {
		ret = fr_ipc_refuse(call,
				    "goroutines: process %u is not yours to read (or is gone); "
				    "root and members of socket.admin_group may read any",
				    q->pid);
		goto out;
	}
	if ((got = daemon_memory_reserve(d, has_uid, GOROUTINES_MEMORY)) < 0) {
		got = 0;
		ret = daemon_query_busy(d, call, "goroutines");
		goto out;
	}
	ret = -ENOMEM;
	if (!(l = calloc(1, sizeof(*l)))) {
		ret = fr_ipc_refuse(call, "goroutines: out of memory");
		goto out;
	}
	l->pid = q->pid;
	l->cap = (uint64_t)got;
	ret = fr_worker_call(&w, read_run, read_drop, l, GOROUTINES_DEADLINE_NS);
	if (ret < 0) {
		if (ret == -ETIMEDOUT)
			l = NULL; /* the worker's now */
		ret = fr_ipc_refuse(call, "goroutines: reading process %u %s", q->pid,
				    ret == -ETIMEDOUT ? "took longer than 20 s; given up"
						      : "could not start");
		goto out;
	}
	ret = answer(l, fd, has_uid, call, r);
out:
	fr_worker_free(w);
	listing_free(l);
	daemon_memory_release(d, has_uid, got);
	if (fd >= 0)
		close(fd);
	return ret;
}
