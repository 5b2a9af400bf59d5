/* Process tracker: its tables and the side band (the start from /proc is
 * recorder/tracking/tracker_scan.c; what both share, recorder/tracking/tracker_int.h).
 *
 * Processes and threads live in chained hash tables keyed by pid and tid.
 * Each process keeps its executable mappings sorted by start address, so
 * the mapping of a frame is a binary search. File paths are interned once
 * for the whole machine (libc is mapped by every process) together with
 * their build id. When the kernel did not put it in the MMAP2 record, the
 * first chunk that needs it asks recorder/tracking/buildids.c to read it from the
 * mapped file on its own thread, and a later seal takes the answer: the
 * ingest thread never opens a file a user could put a FIFO at.
 *
 * Exited processes are kept until two seals have passed: records from
 * different CPUs arrive out of order, and the chunk that holds a process's
 * last samples must still find its name and mappings.
 *
 * Each process also keeps its cgroup v2 path, read from /proc/PID/cgroup
 * when the process is first learned from /proc, at fork (a child starts in
 * its parent's cgroup unless clone3 put it elsewhere, so both are
 * consulted) and at exec (service managers and container runtimes move a
 * child before they exec its program). Between those it is not re-read, so
 * a process moved later keeps the old path until its next exec.
 *
 * Its (real) uid, which profiles of users who are not root filter by: read
 * from /proc when the process is learned there, inherited at fork, and
 * read again at exec, since that is when a process runs as someone new
 * (runuser, sudo, a login: the fork is root's, the program the user's).
 *
 * And its parent's pid, which chunks store so that a profile can take a
 * process's descendants from the ring alone: from /proc/PID/stat when the
 * process is learned from /proc, from the FORK record otherwise (the pid
 * of the process that forked). It is kept across exec, and a parent
 * learned from a FORK is not replaced by what /proc shows later, which
 * after the parent's exit is the reaper that adopted the process.
 */
#include "recorder/tracking/tracker.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/util/hash.h"
#include "core/util/limits.h"
#include "core/util/log.h"
#include "core/symbols/elf_image.h"
#include "core/symbols/perfmap.h"
#include "recorder/tracking/buildids.h"
#include "recorder/tracking/proc.h"
#include "recorder/tracking/symcache.h"

#include "core/util/grow.h"
#include "core/util/time.h"
#include "recorder/tracking/tracker_int.h"

static uint32_t hash_str(const char *s)
{
	return fr_fnv1a_32(FR_FNV32_OFFSET, s, strlen(s));
}

struct path_entry *tracker_intern_path(struct fr_tracker *t, const char *path)
{
	uint32_t h = hash_str(path);
	struct path_entry **b = &t->paths[h % NBUCKETS], *e;
	size_t len = strlen(path);

	for (e = *b; e; e = e->next)
		if (e->hash == h && strcmp(e->path, path) == 0)
			return e;
	e = calloc(1, sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	e->hash = h;
	memcpy(e->path, path, len + 1);
	e->next = *b;
	*b = e;
	return e;
}

/* Copies a command or thread name, cut to the kernel's 15 characters. */
void tracker_copy_name(char dst[FR_LIMIT_COMM_LEN], const char *src)
{
	size_t n = strnlen(src, FR_LIMIT_COMM_LEN - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static struct proc *find_proc(struct fr_tracker *t, uint32_t pid)
{
	for (struct proc *p = t->procs[fr_hash_u32(pid) % NBUCKETS]; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static struct thread *find_thread(struct fr_tracker *t, uint32_t tid)
{
	for (struct thread *th = t->threads[fr_hash_u32(tid) % NBUCKETS]; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

static void free_proc(struct proc *p)
{
	free(p->maps);
	free(p);
}

static void unlink_proc(struct fr_tracker *t, uint32_t pid)
{
	struct proc **pp = &t->procs[fr_hash_u32(pid) % NBUCKETS];

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			struct proc *p = *pp;
			*pp = p->next;
			free_proc(p);
			t->nprocs--;
			return;
		}
	}
}

/* Returns the live process `pid`, creating it (replacing an exited one of
 * the same pid, which has been reused) when needed. */
struct proc *tracker_get_proc(struct fr_tracker *t, uint32_t pid)
{
	struct proc *p = find_proc(t, pid);

	if (p && !p->exited_gen)
		return p;
	if (p)
		unlink_proc(t, pid);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = t->procs[fr_hash_u32(pid) % NBUCKETS];
	t->procs[fr_hash_u32(pid) % NBUCKETS] = p;
	t->nprocs++;
	return p;
}

struct thread *tracker_get_thread(struct fr_tracker *t, uint32_t tid, uint32_t pid)
{
	struct thread *th = find_thread(t, tid);

	if (th && !th->exited_gen && th->pid == pid)
		return th;
	if (!th) {
		th = calloc(1, sizeof(*th));
		if (!th)
			return NULL;
		th->next = t->threads[fr_hash_u32(tid) % NBUCKETS];
		t->threads[fr_hash_u32(tid) % NBUCKETS] = th;
		t->nthreads++;
	}
	th->tid = tid;
	th->pid = pid;
	th->exited_gen = 0;
	th->name[0] = '\0';
	free(th->hist);
	th->hist = NULL;
	th->creator = 0;
	return th;
}

static int reserve_maps(struct proc *p, uint32_t more)
{
	return FR_GROW(p->maps, &p->cap, p->nmaps + more, 16);
}

/* Inserts [start, end) keeping the array sorted. As with mmap(MAP_FIXED),
 * the new mapping replaces the part of any old one it overlaps; what an
 * old mapping has outside the new range stays mapped. */
void tracker_add_map(struct proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		     struct path_entry *path, const uint8_t *bid, uint8_t bid_len)
{
	struct map left = {0}, right = {0}, m;
	int has_left = 0, has_right = 0;
	uint32_t i = 0, j;

	/* Room for the new mapping and the two remnants of a split one. */
	if (reserve_maps(p, 3) < 0)
		return;
	while (i < p->nmaps && p->maps[i].end <= start)
		i++;
	j = i;
	while (j < p->nmaps && p->maps[j].start < end)
		j++;
	if (j > i) {
		if (p->maps[i].start < start) {
			left = p->maps[i];
			left.end = start;
			has_left = 1;
		}
		if (p->maps[j - 1].end > end) {
			right = p->maps[j - 1];
			right.pgoff += end - right.start;
			right.start = end;
			has_right = 1;
		}
		memmove(&p->maps[i], &p->maps[j], (p->nmaps - j) * sizeof(*p->maps));
		p->nmaps -= j - i;
	}
	m = (struct map){.start = start,
			 .end = end,
			 .pgoff = pgoff,
			 .path = path,
			 .bid_len = bid_len};
	if (bid_len)
		memcpy(m.bid, bid, bid_len);
	/* Insert left remnant, the new mapping and right remnant at i. */
	uint32_t n = (uint32_t)(has_left + 1 + has_right);
	memmove(&p->maps[i + n], &p->maps[i], (p->nmaps - i) * sizeof(*p->maps));
	if (has_left)
		p->maps[i++] = left;
	p->maps[i++] = m;
	if (has_right)
		p->maps[i] = right;
	p->nmaps += n;
}

const struct map *tracker_lookup_map(const struct proc *p, uint64_t addr)
{
	uint32_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else if (p->maps[mid].start > addr)
			hi = mid;
		else
			return &p->maps[mid];
	}
	return NULL;
}

void fr_tracker_comm(struct fr_tracker *t, uint32_t pid, uint32_t tid, const char *comm, int exec)
{
	fr_tracker_comm_at(t, pid, tid, comm, exec, 0);
}

void fr_tracker_comm_at(struct fr_tracker *t, uint32_t pid, uint32_t tid, const char *comm,
			int exec, int64_t time_ns)
{
	struct proc *p = tracker_get_proc(t, pid);
	struct thread *th = tracker_get_thread(t, tid, pid);

	if (th) {
		tracker_name_change(t, th, comm, time_ns);
		tracker_copy_name(th->name, comm);
	}
	if (!p)
		return;
	if (exec) {
		/* A new program: its old address space is gone. */
		p->nmaps = 0;
		p->exe = NULL;
		p->exe_pending = 1;
		/* Its cgroup as it is now; if it is gone already, what was
		 * inherited or read before stays. */
		fr_proc_read_cgroup("/proc", pid, p->cgroup, sizeof(p->cgroup));
		fr_proc_read_uid("/proc", pid, &p->uid);
	}
	if (exec || pid == tid || !p->comm[0])
		tracker_copy_name(p->comm, comm);
}

void fr_tracker_mmap(struct fr_tracker *t, uint32_t pid, uint64_t start, uint64_t len,
		     uint64_t pgoff, uint32_t prot, const char *path, const uint8_t *build_id,
		     uint8_t build_id_len)
{
	struct proc *p = tracker_get_proc(t, pid);
	struct path_entry *pe;

	if (!p || pid == (uint32_t)-1)
		return;
	pe = tracker_intern_path(t, path);
	if (!pe)
		return;
	if (p->exe_pending && path[0] == '/') {
		/* The kernel maps the new executable first at exec. */
		p->exe = pe;
		p->exe_pending = 0;
	}
	if (!(prot & PROT_EXEC))
		return;
	if (build_id_len && !pe->bid_state) {
		memcpy(pe->bid, build_id, build_id_len);
		pe->bid_len = build_id_len;
		pe->bid_state = 1;
	}
	tracker_add_map(p, start, start + len, pgoff, pe, build_id, build_id_len);
}

void fr_tracker_mmap_inode(struct fr_tracker *t, uint32_t pid, uint64_t start, uint64_t dev,
			   uint64_t ino, uint64_t ino_generation)
{
	struct proc *p = find_proc(t, pid);
	struct map *m;

	if (!p || p->exited_gen || !(m = (struct map *)tracker_lookup_map(p, start)) ||
	    m->start != start)
		return;
	m->inode = FR_TRACKER_INODE_MMAP2;
	m->dev = dev;
	m->ino = ino;
	m->ino_gen = ino_generation;
}

static void map_out(const struct proc *p, const struct map *m, struct fr_tracker_map *out)
{
	out->uid = p->uid;
	out->start = m->start;
	out->end = m->end;
	out->pgoff = m->pgoff;
	out->path = m->path->path;
	out->path_id = m->path;
	out->build_id = m->bid_len ? m->bid : NULL;
	out->build_id_len = m->bid_len;
	out->inode = m->inode;
	out->dev = m->dev;
	out->ino = m->ino;
	out->ino_generation = m->ino_gen;
}

int fr_tracker_find_map(struct fr_tracker *t, uint32_t pid, uint64_t addr,
			struct fr_tracker_map *out)
{
	struct proc *p = find_proc(t, pid);
	const struct map *m;

	if (!p || !(m = tracker_lookup_map(p, addr)))
		return -ENOENT;
	map_out(p, m, out);
	return 0;
}

int fr_tracker_find_map_named(struct fr_tracker *t, uint32_t pid, const char *prefix,
			      struct fr_tracker_map *out)
{
	struct proc *p = find_proc(t, pid);
	size_t len = strlen(prefix);

	for (uint32_t i = 0; p && !p->exited_gen && i < p->nmaps; i++) {
		const char *path = p->maps[i].path->path, *base = strrchr(path, '/');

		if (strncmp(base ? base + 1 : path, prefix, len) == 0) {
			map_out(p, &p->maps[i], out);
			return 0;
		}
	}
	return -ENOENT;
}

void fr_tracker_fork(struct fr_tracker *t, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		     int64_t time_ns)
{
	struct thread *parent_thread = find_thread(t, ptid);
	struct thread *th = find_thread(t, tid);
	char name[FR_LIMIT_COMM_LEN] = "";

	/* Records from different CPUs are drained out of order: the child may
	 * have exec'd on another CPU and its COMM and MMAP2 records been seen
	 * already. A process or thread known and alive is then newer than
	 * this record and must not be overwritten with its parent's copy. */
	int thread_known = th && !th->exited_gen && th->pid == pid;

	if (parent_thread)
		memcpy(name, parent_thread->name, sizeof(name));
	if (pid == tid && pid != ppid) {
		/* A new process: a copy of its parent's address space. */
		struct proc *known = find_proc(t, pid);
		struct proc *parent, *p;

		if (known && !known->exited_gen) {
			if (!known->start_ns)
				known->start_ns = time_ns;
			if (!known->ppid)
				known->ppid = ppid;
		} else if ((p = tracker_get_proc(t, pid))) {
			p->start_ns = time_ns;
			p->ppid = ppid;
			parent = find_proc(t, ppid);
			if (parent) {
				p->uid = parent->uid;
				/* The kernel copies the comm of the thread that forked. */
				if (parent_thread && parent_thread->pid == ppid && name[0])
					memcpy(p->comm, name, sizeof(p->comm));
				else
					memcpy(p->comm, parent->comm, sizeof(p->comm));
				p->exe = parent->exe;
				memcpy(p->cgroup, parent->cgroup, sizeof(p->cgroup));
				for (uint32_t i = 0; i < parent->nmaps; i++) {
					const struct map *m = &parent->maps[i];
					tracker_add_map(p, m->start, m->end, m->pgoff, m->path,
							m->bid, m->bid_len);
				}
			}
			/* clone3(CLONE_INTO_CGROUP), as systemd starts services,
			 * puts a child elsewhere than its parent. */
			fr_proc_read_cgroup("/proc", pid, p->cgroup, sizeof(p->cgroup));
		}
	}
	if (!thread_known && (th = tracker_get_thread(t, tid, pid)))
		memcpy(th->name, name, sizeof(th->name));
	/* The thread that called clone (or fork): a thread's creator, or for
	 * a new process's main thread the parent's thread that forked. */
	if (th && th->tid == tid && th->pid == pid && !th->exited_gen && !th->creator && ptid &&
	    ptid != tid)
		th->creator = ptid;
}

/* Whether process `pid` runs now: neither gone nor a zombie. Called for
 * each process's EXIT, which a user can make thousands a second: a
 * reaped process (the common case by the time the record is read) is
 * told by kill() alone, /proc is read only for one that is still there. */
static bool still_running(uint32_t pid)
{
	struct fr_proc_stat ps;

	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return false;
	return fr_proc_read_stat("/proc", pid, &ps) == 0 && ps.state != 'Z' && ps.state != 'X';
}

void fr_tracker_exit(struct fr_tracker *t, uint32_t pid, uint32_t tid, int64_t time_ns)
{
	struct thread *th = find_thread(t, tid);

	/* An exec that leaves a process not dumpable (a set-user-ID or
	 * set-group-ID program) ends its perf task context, and the kernel
	 * says so with an EXIT record for it (perf_event_exit_task() from
	 * begin_new_exec()), though the process goes on under the same pid
	 * as the new program. Taken as an exit, the records of the new
	 * program that follow would make a new, empty process of it: uid 0,
	 * no cgroup, no parent, no executable; its user would not see it.
	 * A real exit's record is read once the thread has left (a zombie
	 * or gone); a main thread that still runs has exec'd. */
	if (pid == tid && still_running(pid))
		return;

	if (th && !th->exited_gen)
		th->exited_gen = t->gen;
	if (pid == tid) {
		struct proc *p = find_proc(t, pid);
		if (p && !p->exited_gen)
			p->exited_gen = t->gen;
	}
}

/* Records from different CPUs arrive out of order: an MMAP or COMM that
 * comes after its process's EXIT recreates the process, and nothing would
 * ever remove it. Every SWEEP_SEALS seals, entries whose process or thread
 * no longer exists are marked exited, which bounds the tables by what
 * lives on the machine. */
#define SWEEP_SEALS 64

static void sweep(struct fr_tracker *t)
{
	for (unsigned b = 0; b < NBUCKETS; b++) {
		for (struct proc *p = t->procs[b]; p; p = p->next)
			if (!p->exited_gen && kill((pid_t)p->pid, 0) < 0 && errno == ESRCH)
				p->exited_gen = t->gen;
		for (struct thread *th = t->threads[b]; th; th = th->next)
			if (!th->exited_gen &&
			    syscall(SYS_tgkill, (pid_t)th->pid, (pid_t)th->tid, 0) < 0 &&
			    errno == ESRCH)
				th->exited_gen = t->gen;
	}
}

void fr_tracker_sealed(struct fr_tracker *t)
{
	t->gen++;
	if (t->gen % SWEEP_SEALS == 0)
		sweep(t);
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct proc **pp = &t->procs[b];
		while (*pp) {
			struct proc *p = *pp;
			if (p->exited_gen && p->exited_gen + 2 <= t->gen) {
				*pp = p->next;
				free_proc(p);
				t->nprocs--;
			} else {
				pp = &p->next;
			}
		}
		struct thread **tp = &t->threads[b];
		while (*tp) {
			struct thread *th = *tp;
			if (th->exited_gen && th->exited_gen + 2 <= t->gen) {
				*tp = th->next;
				free(th->hist);
				free(th);
				t->nthreads--;
			} else {
				tracker_names_sealed(t, th);
				tp = &th->next;
			}
		}
	}
}

/* Takes the build ids read since the last call into their paths. */
static void collect_build_ids(struct fr_tracker *t)
{
	struct fr_buildid_result r;

	while (t->bids && fr_buildids_take(t->bids, &r) == 1) {
		struct path_entry *pe = tracker_intern_path(t, r.path);

		if (pe) {
			pe->bid_len = r.len;
			memcpy(pe->bid, r.id, r.len);
			pe->bid_state = BID_READ;
		}
		if (r.err < 0 && r.err != -ENOENT)
			fr_log_debug("no build id for %s: %s", r.path, strerror(-r.err));
		free(r.path);
	}
}

/* Build id of a mapping: the kernel's, else the file's once it is read
 * (asked for here, on the first chunk that needs it). */
static void map_build_id(struct fr_tracker *t, uint32_t pid, const struct map *m,
			 struct fr_map_info *out)
{
	struct path_entry *pe = m->path;

	if (m->bid_len) {
		out->build_id_len = m->bid_len;
		memcpy(out->build_id, m->bid, m->bid_len);
		return;
	}
	if (pe->bid_state == BID_ASKED)
		collect_build_ids(t);
	/* A refused request (the reader is behind) is asked again later. */
	if (pe->bid_state == BID_UNREAD && pe->path[0] == '/' && t->bids &&
	    fr_buildids_request(t->bids, pid, m->start, m->end, pe->path) == 0)
		pe->bid_state = BID_ASKED;
	out->build_id_len = pe->bid_state == BID_READ ? pe->bid_len : 0;
	memcpy(out->build_id, pe->bid, out->build_id_len);
}

int fr_tracker_settle(struct fr_tracker *t, int timeout_ms)
{
	int ret = t->bids ? fr_buildids_wait(t->bids, timeout_ms) : 0;

	collect_build_ids(t);
	return ret;
}

void fr_tracker_file_state(struct fr_tracker *t, uint32_t *pending, int64_t *busy_since_ns)
{
	*pending = 0;
	*busy_since_ns = 0;
	if (t->bids)
		fr_buildids_state(t->bids, pending, busy_since_ns);
}

static int ops_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	struct fr_tracker *t = arg;
	struct proc *p = find_proc(t, pid);

	if (!p && fr_tracker_scan_pid(t, "/proc", pid) == 0)
		p = find_proc(t, pid);
	if (!p)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->uid = p->uid;
	out->comm = p->comm;
	out->exe = p->exe ? p->exe->path : "";
	out->start_ns = p->start_ns;
	out->cgroup = p->cgroup;
	out->ppid = p->ppid;
	return 0;
}

static int ops_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	struct fr_tracker *t = arg;
	struct thread *th = find_thread(t, tid);

	if (!th)
		return -ENOENT;
	out->tid = tid;
	out->pid = th->pid;
	out->name = th->name;
	out->creator = th->creator;
	tracker_names_info(th, out);
	return 0;
}

static int ops_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	struct fr_tracker *t = arg;
	struct proc *p = find_proc(t, pid);
	const struct map *m;

	if (!p || !(m = tracker_lookup_map(p, addr)))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->start = m->start;
	out->end = m->end;
	out->pgoff = m->pgoff;
	out->path = m->path->path;
	map_build_id(t, pid, m, out);
	/* What a sealed chunk refers to is what profiles will name: the
	 * symbol cache keeps a copy of it (or of the JIT's perf map). */
	if (out->build_id_len)
		fr_symcache_want_elf(t->symcache, pid, p->uid, m->start, m->end, out->path,
				     out->build_id, out->build_id_len);
	else if (t->symcache && fr_perfmap_is_anon(out->path))
		fr_symcache_want_perfmap(t->symcache, pid, p->start_ns, p->uid);
	return 0;
}

void fr_tracker_set_symcache(struct fr_tracker *t, struct fr_symcache *c)
{
	t->symcache = c;
}

struct fr_tracker *fr_tracker_new(void)
{
	struct fr_tracker *t = calloc(1, sizeof(*t));
	struct timespec boot;

	if (!t)
		return NULL;
	t->gen = 1;
	t->clk_tck = sysconf(_SC_CLK_TCK);
	if (t->clk_tck <= 0)
		t->clk_tck = 100;
	clock_gettime(CLOCK_BOOTTIME, &boot);
	t->boot_ns = fr_now_real_ns() - fr_ns_from_timespec(&boot);
	t->ops.proc = ops_proc;
	t->ops.thread = ops_thread;
	t->ops.mapping = ops_mapping;
	t->ops.arg = t;
	t->bids = fr_buildids_new();
	if (!t->bids) {
		free(t);
		return NULL;
	}
	return t;
}

void fr_tracker_free(struct fr_tracker *t)
{
	if (!t)
		return;
	fr_buildids_free(t->bids);
	for (unsigned b = 0; b < NBUCKETS; b++) {
		for (struct proc *p = t->procs[b], *n; p; p = n) {
			n = p->next;
			free_proc(p);
		}
		for (struct thread *th = t->threads[b], *n; th; th = n) {
			n = th->next;
			free(th->hist);
			free(th);
		}
		for (struct path_entry *e = t->paths[b], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(t);
}

const struct fr_chunk_meta_ops *fr_tracker_ops(struct fr_tracker *t)
{
	return &t->ops;
}

uint32_t fr_tracker_nprocs(const struct fr_tracker *t)
{
	return t->nprocs;
}

uint32_t fr_tracker_nthreads(const struct fr_tracker *t)
{
	return t->nthreads;
}
