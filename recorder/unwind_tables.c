/* The machine's CFI tables (see unwind_tables.h).
 *
 * Two sides. The ingest thread owns the entries: a hash table of keys to
 * states (pending, ready with its table, failed, dropped), which it alone
 * reads and changes, so a look-up per frame takes no lock. The builder
 * thread owns nothing but the job it works on: a queue of jobs and a list
 * of finished ones under `lock` connect the two, and the ingest thread
 * takes the finished ones once per drain (fr_unwind_tables_collect()).
 *
 * The builder reads a file on a deadline worker (core/util/worker.h): a
 * read that misses FR_UNWIND_TABLES_READ_DEADLINE_NS is left to its worker
 * and the table fails with -ETIMEDOUT, so later tables are not held up.
 * Compiling the CFI (fr_cfi_build()) works on private memory only and runs
 * on the builder itself.
 *
 * The structure is freed by whichever of the owner and the builder lets
 * go last: shutdown waits at most a second for a builder busy compiling a
 * large file.
 */
#include "recorder/unwind_tables.h"

#include "recorder/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/query/elf_image.h"
#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/worker.h"

#define NBUCKETS 4096
#define STOP_WAIT_MS 1000

enum { KEY_BUILD_ID = 1, KEY_INODE, KEY_VDSO };
/* ST_LINKED: a file known by its inode whose build id was read; its
 * table is that of the build id's entry. */
enum { ST_PENDING, ST_READY, ST_FAILED, ST_DROPPED, ST_LINKED };

/* What identifies a file's table; zeroed before it is filled, so that it
 * compares and hashes as bytes. */
struct key {
	uint8_t kind;
	uint8_t len; /* of bid */
	uint8_t bid[FR_BUILD_ID_MAX];
	uint32_t pid; /* KEY_INODE from /proc (no generation): the process */
	uint64_t dev, ino, gen;
	const void *path_id; /* KEY_INODE from /proc: the tracker's path */
};

struct entry {
	struct entry *next;
	struct key key;
	uint32_t hash;
	uint8_t state;
	struct fr_cfi_table *table; /* ST_READY */
	size_t bytes;
	uint64_t last_use;
	struct key link; /* ST_LINKED: the build id's key */
	struct job *job; /* ST_PENDING: its job, until taken */
	bool urgent;	 /* ST_PENDING: a sample waits for it */
};

struct job {
	struct job *next;
	struct entry *entry; /* the ingest thread's; the builder never touches it */
	struct key key;
	uint32_t pid;
	uint64_t start, end;
	char *path;
	bool prefetch; /* asked for at the mapping's MMAP2, not by a sample */
	/* The answer: a table, or for a KEY_INODE job the file's build id
	 * (bid_len > 0, no table), or err. */
	struct fr_cfi_table *table;
	uint8_t bid[FR_BUILD_ID_MAX];
	uint8_t bid_len;
	int err;
};

struct fr_unwind_tables {
	/* The ingest thread's. */
	struct entry *buckets[NBUCKETS];
	uint32_t nentries;
	uint64_t clock; /* look-ups so far: the LRU's time */
	uint64_t budget;
	/* Shared, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* work queued, answer posted, builder gone */
	struct job *queue, **queue_tail;
	struct job *done, **done_tail;
	unsigned refs; /* the owner's and the builder's */
	bool stop, builder_gone;
	/* The builder's. */
	struct fr_worker *worker;
	/* Counters (atomics). */
	struct fr_unwind_tables_stats st;
};

static void job_free(struct job *j)
{
	if (!j)
		return;
	fr_cfi_free(j->table);
	free(j->path);
	free(j);
}

static void destroy(struct fr_unwind_tables *u)
{
	for (struct job *j = u->queue, *n; j; j = n) {
		n = j->next;
		job_free(j);
	}
	for (struct job *j = u->done, *n; j; j = n) {
		n = j->next;
		job_free(j);
	}
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* ---- the builder -------------------------------------------------------- */

/* One file read on the deadline worker; freed by read_drop when the
 * worker was abandoned, else by the builder. */
struct read_call {
	uint32_t pid;
	uint64_t start, end;
	char *path;
	bool bid_first; /* a file with a build id is not read further */
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	int bid_len;
	void *buf;
	size_t size;
	struct stat st;
	int err;
};

static void read_drop(void *arg)
{
	struct read_call *rc = arg;

	free(rc->buf);
	free(rc->path);
	free(rc);
}

/* The whole file into private memory. */
static void read_file(void *arg)
{
	struct read_call *rc = arg;
	ssize_t n;
	int fd = fr_proc_open_mapped(rc->pid, rc->start, rc->end, rc->path, FR_ELF_MAX_SIZE,
				     &rc->st);

	if (fd < 0) {
		rc->err = fd;
		return;
	}
	/* The build id alone (a few preads): the table may be built, or
	 * being built, from another mapping of the same file. */
	if (rc->bid_first) {
		rc->bid_len = fr_elf_build_id_fd(fd, rc->bid, sizeof(rc->bid));
		if (rc->bid_len > 0 && rc->bid_len <= FR_BUILD_ID_MAX) {
			close(fd);
			return;
		}
		rc->bid_len = 0;
	}
	rc->size = (size_t)rc->st.st_size;
	rc->buf = malloc(rc->size ? rc->size : 1);
	if (!rc->buf) {
		rc->err = -ENOMEM;
	} else {
		n = fr_pread_full(fd, rc->buf, rc->size, 0);
		/* A file cut short since its fstat is not the file mapped. */
		rc->err = n < 0 ? (int)n : (size_t)n != rc->size ? -ESTALE : 0;
	}
	close(fd);
}

/* The daemon's own vDSO, copied: the same image every 64-bit process
 * maps, and no file to read. Its size is that of the [vdso] line of
 * /proc/self/maps. */
static int read_vdso(void **buf, size_t *size)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	char line[512];
	FILE *f;
	int ret = -ENOENT;

	if (!base)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && start == base &&
		    strstr(line, "[vdso]")) {
			*size = (size_t)(end - start);
			*buf = malloc(*size);
			ret = *buf ? 0 : -ENOMEM;
			if (*buf)
				memcpy(*buf, (const void *)base, *size);
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Reads the file of `j` on the worker; 0 with the bytes, or -errno. A
 * file known by its inode that has a build id is not read further: 0 with
 * no bytes and its build id in the job. */
static int build_read(struct fr_unwind_tables *u, struct job *j, void **buf, size_t *size)
{
	struct read_call *rc = calloc(1, sizeof(*rc));
	int ret;

	if (!rc || !(rc->path = strdup(j->path))) {
		free(rc);
		return -ENOMEM;
	}
	rc->pid = j->pid;
	rc->start = j->start;
	rc->end = j->end;
	rc->bid_first = j->key.kind == KEY_INODE;
	ret = fr_worker_call(&u->worker, read_file, read_drop, rc,
			     FR_UNWIND_TABLES_READ_DEADLINE_NS);
	if (ret == -ETIMEDOUT)
		return ret; /* the worker frees rc when the read returns */
	if (ret == 0)
		ret = rc->err;
	/* A file without a build id is known by its inode: what is at the
	 * path now may be another. */
	if (ret == 0 && j->key.kind == KEY_INODE &&
	    (rc->st.st_dev != j->key.dev || rc->st.st_ino != j->key.ino))
		ret = -ESTALE;
	if (ret == 0 && rc->bid_len > 0) {
		memcpy(j->bid, rc->bid, (size_t)rc->bid_len);
		j->bid_len = (uint8_t)rc->bid_len;
	} else if (ret == 0) {
		*buf = rc->buf;
		*size = rc->size;
		rc->buf = NULL;
	}
	read_drop(rc);
	return ret;
}

static void build(struct fr_unwind_tables *u, struct job *j)
{
	void *buf = NULL;
	size_t size = 0;
	int ret;

	/* A program that ran a few milliseconds (a build's many short
	 * execs) exited before its turn: its table may never be needed, and
	 * a sample that needs it asks again. */
	if (j->prefetch && kill((pid_t)j->pid, 0) < 0 && errno == ESRCH) {
		j->err = -ESRCH;
		return;
	}
	ret = j->key.kind == KEY_VDSO ? read_vdso(&buf, &size) : build_read(u, j, &buf, &size);
	if (ret == 0 && j->bid_len)
		return; /* linked to its build id's table by the ingest thread */
	if (ret == 0)
		ret = fr_cfi_build(buf, size, &j->table);
	free(buf);
	/* A file read by its path must be the one the build id names. */
	if (ret == 0 && j->key.kind == KEY_BUILD_ID &&
	    (j->table->build_id_len != j->key.len ||
	     memcmp(j->table->build_id, j->key.bid, j->key.len) != 0)) {
		fr_cfi_free(j->table);
		j->table = NULL;
		ret = -ESTALE;
	}
	j->err = ret;
}

static void *builder_main(void *arg)
{
	struct fr_unwind_tables *u = arg;
	bool last;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		struct job *j;

		while (!u->queue && !u->stop)
			pthread_cond_wait(&u->cond, &u->lock);
		if (u->stop)
			break;
		j = u->queue;
		u->queue = j->next;
		if (!u->queue)
			u->queue_tail = &u->queue;
		pthread_mutex_unlock(&u->lock);

		build(u, j);

		pthread_mutex_lock(&u->lock);
		j->next = NULL;
		*u->done_tail = j;
		u->done_tail = &j->next;
		pthread_cond_broadcast(&u->cond);
	}
	fr_worker_free(u->worker);
	u->worker = NULL;
	u->builder_gone = true;
	last = --u->refs == 0;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (last)
		destroy(u);
	return NULL;
}

/* ---- the ingest thread's side ------------------------------------------- */

struct fr_unwind_tables *fr_unwind_tables_new(uint64_t budget)
{
	struct fr_unwind_tables *u = calloc(1, sizeof(*u));
	pthread_attr_t ta;
	pthread_t th;
	int ret;

	if (!u)
		return NULL;
	u->budget = budget;
	u->queue_tail = &u->queue;
	u->done_tail = &u->done;
	u->refs = 2;
	fr_mutex_init_pi(&u->lock);
	fr_mono_cond_init(&u->cond);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &ta, builder_main, u);
	pthread_attr_destroy(&ta);
	if (ret != 0) {
		pthread_cond_destroy(&u->cond);
		pthread_mutex_destroy(&u->lock);
		free(u);
		errno = ret;
		return NULL;
	}
	return u;
}

void fr_unwind_tables_free(struct fr_unwind_tables *u)
{
	struct timespec deadline;
	bool last;

	if (!u)
		return;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		for (struct entry *e = u->buckets[b], *n; e; e = n) {
			n = e->next;
			fr_cfi_free(e->table);
			free(e);
		}
		u->buckets[b] = NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += STOP_WAIT_MS / 1000;
	pthread_mutex_lock(&u->lock);
	u->stop = true;
	pthread_cond_broadcast(&u->cond);
	while (!u->builder_gone &&
	       pthread_cond_timedwait(&u->cond, &u->lock, &deadline) != ETIMEDOUT)
		;
	if (!u->builder_gone)
		fr_log_warn("the unwind table builder is still busy; leaving it to finish alone");
	last = --u->refs == 0;
	pthread_mutex_unlock(&u->lock);
	if (last)
		destroy(u);
}

static uint32_t key_hash(const struct key *k)
{
	const unsigned char *p = (const unsigned char *)k;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void stat_add(uint64_t *counter, int64_t delta)
{
	__atomic_add_fetch(counter, (uint64_t)delta, __ATOMIC_RELAXED);
}

/* Drops ready tables, least recently used first, until the budget holds. */
static void evict(struct fr_unwind_tables *u)
{
	while (__atomic_load_n(&u->st.bytes, __ATOMIC_RELAXED) > u->budget) {
		struct entry *lru = NULL;

		for (unsigned b = 0; b < NBUCKETS; b++)
			for (struct entry *e = u->buckets[b]; e; e = e->next)
				if (e->state == ST_READY && (!lru || e->last_use < lru->last_use))
					lru = e;
		if (!lru)
			return;
		stat_add(&u->st.bytes, -(int64_t)lru->bytes);
		stat_add(&u->st.tables, -1);
		stat_add(&u->st.evicted, 1);
		fr_cfi_free(lru->table);
		lru->table = NULL;
		lru->bytes = 0;
		lru->state = ST_DROPPED;
	}
}

/* The key of mapping `m`, or 0 when it has no file a table can be built
 * from (anonymous memory, [vsyscall], a file known by neither build id
 * nor inode). */
static int map_key(uint32_t pid, const struct fr_tracker_map *m, struct key *k)
{
	memset(k, 0, sizeof(*k));
	if (strcmp(m->path, "[vdso]") == 0) {
		k->kind = KEY_VDSO;
		return 1;
	}
	/* "//anon" (perf's name for anonymous memory), "[heap]", ...: no
	 * file. */
	if (m->path[0] != '/' || m->path[1] == '/')
		return 0;
	if (m->build_id_len) {
		k->kind = KEY_BUILD_ID;
		k->len = m->build_id_len < FR_BUILD_ID_MAX ? m->build_id_len : FR_BUILD_ID_MAX;
		memcpy(k->bid, m->build_id, k->len);
		return 1;
	}
	if (m->inode == FR_TRACKER_INODE_NONE || !m->ino)
		return 0;
	k->kind = KEY_INODE;
	k->dev = m->dev;
	k->ino = m->ino;
	if (m->inode == FR_TRACKER_INODE_MMAP2) {
		k->gen = m->ino_generation;
	} else {
		/* Without the generation a freed and reused inode number could
		 * name another file: keep such a table to its process. */
		k->gen = UINT64_MAX;
		k->pid = pid;
		k->path_id = m->path_id;
	}
	return 1;
}

/* Queues the build of `e`. Returns 0, or -EAGAIN when too many wait. */
static int request(struct fr_unwind_tables *u, struct entry *e, uint32_t pid,
		   const struct fr_tracker_map *m, bool prefetch)
{
	struct job *j;

	/* Prefetches (a burst of execs) leave half the queue to the builds
	 * samples wait for. */
	if (__atomic_load_n(&u->st.pending, __ATOMIC_RELAXED) >=
	    (prefetch ? FR_UNWIND_TABLES_MAX_PENDING / 2 : FR_UNWIND_TABLES_MAX_PENDING))
		return -EAGAIN;
	j = calloc(1, sizeof(*j));
	if (!j || !(j->path = strdup(m->path))) {
		free(j);
		return -ENOMEM;
	}
	j->entry = e;
	j->key = e->key;
	j->pid = pid;
	j->start = m->start;
	j->end = m->end;
	j->prefetch = prefetch;
	e->state = ST_PENDING;
	e->job = j;
	e->urgent = !prefetch;
	stat_add(&u->st.pending, 1);
	pthread_mutex_lock(&u->lock);
	if (prefetch) {
		*u->queue_tail = j;
		u->queue_tail = &j->next;
	} else {
		/* Samples wait for it: ahead of the tables asked for as their
		 * mappings appeared, of which a busy machine has hundreds. */
		j->next = u->queue;
		u->queue = j;
		if (u->queue_tail == &u->queue)
			u->queue_tail = &j->next;
	}
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

/* A sample needs the table of `e`, asked for as its mapping appeared and
 * still waiting: its job moves to the head of the queue (once). */
static void promote(struct fr_unwind_tables *u, struct entry *e)
{
	struct job **pp, *j = e->job;

	e->urgent = true;
	pthread_mutex_lock(&u->lock);
	for (pp = &u->queue; *pp && *pp != j; pp = &(*pp)->next)
		;
	/* Not found: the builder has it already (and reads it unlocked). */
	if (*pp == j) {
		j->prefetch = false; /* not skipped: needed */
		if (pp != &u->queue) {
			*pp = j->next;
			if (u->queue_tail == &j->next)
				u->queue_tail = pp;
			j->next = u->queue;
			u->queue = j;
		}
	}
	pthread_mutex_unlock(&u->lock);
}

/* Frees the entries that hold no table and wait for none (failed,
 * dropped or linked): forgetting a failure costs at most one more try, a
 * link one more read of a build id. */
static void sweep(struct fr_unwind_tables *u)
{
	for (unsigned b = 0; b < NBUCKETS; b++) {
		for (struct entry **pp = &u->buckets[b]; *pp;) {
			struct entry *e = *pp;

			if (e->state == ST_FAILED || e->state == ST_DROPPED ||
			    e->state == ST_LINKED) {
				*pp = e->next;
				free(e);
				u->nentries--;
			} else {
				pp = &e->next;
			}
		}
	}
}

/* The entry of `k`, created (and its build asked for) the first time;
 * *asked tells whether a build was asked for now. NULL when out of memory
 * or when FR_UNWIND_TABLES_MAX_ENTRIES hold tables or wait for them (a
 * user mapping ever new files cannot grow the recorder without bound). */
static struct entry *get_entry(struct fr_unwind_tables *u, const struct key *k, uint32_t pid,
			       const struct fr_tracker_map *m, bool prefetch, bool *asked)
{
	uint32_t h = key_hash(k);
	struct entry **b = &u->buckets[h % NBUCKETS], *e;

	*asked = false;
	for (e = *b; e; e = e->next)
		if (e->hash == h && memcmp(&e->key, k, sizeof(*k)) == 0)
			break;
	if (!e) {
		if (u->nentries >= FR_UNWIND_TABLES_MAX_ENTRIES)
			sweep(u);
		if (u->nentries >= FR_UNWIND_TABLES_MAX_ENTRIES)
			return NULL;
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		u->nentries++;
		e->key = *k;
		e->hash = h;
		e->state = ST_DROPPED; /* asked for just below */
		e->next = *b;
		*b = e;
	}
	/* Refused: asked again by a later sample. */
	if (e->state == ST_DROPPED)
		*asked = request(u, e, pid, m, prefetch) == 0;
	return e;
}

/* The entry whose table serves `k`: that of its build id for a file
 * linked to one (whose build is asked for when it has none). The build
 * id's entry is looked up each time rather than pointed to, so that it
 * can be swept or dropped on its own. */
static struct entry *get_table_entry(struct fr_unwind_tables *u, const struct key *k, uint32_t pid,
				     const struct fr_tracker_map *m, bool prefetch, bool *asked)
{
	struct entry *e = get_entry(u, k, pid, m, prefetch, asked);
	struct key link;

	if (!e || e->state != ST_LINKED)
		return e;
	link = e->link; /* e may be swept by the look-up */
	return get_entry(u, &link, pid, m, prefetch, asked);
}

/* A finished job of entry `e`: its table, its failure, or the build id
 * that links it to another entry (whose build is asked for now, from the
 * same mapping, when that build id is new). */
static void take(struct fr_unwind_tables *u, struct job *j, struct entry *e)
{
	struct fr_tracker_map m = {.start = j->start, .end = j->end, .path = j->path};
	struct key link;
	bool asked;

	e->job = NULL;
	e->urgent = false;
	if (j->err == 0 && j->bid_len) {
		memset(&link, 0, sizeof(link));
		link.kind = KEY_BUILD_ID;
		link.len = j->bid_len;
		memcpy(link.bid, j->bid, j->bid_len);
		e->link = link;
		e->state = ST_LINKED;
		stat_add(&u->st.linked, 1);
		get_entry(u, &link, j->pid, &m, j->prefetch, &asked); /* may sweep e */
	} else if (j->err == -ESRCH) {
		e->state = ST_DROPPED; /* asked for again when needed */
		stat_add(&u->st.skipped, 1);
	} else if (j->err == 0) {
		e->table = j->table;
		j->table = NULL;
		e->bytes = fr_cfi_size(e->table);
		e->state = ST_READY;
		e->last_use = u->clock;
		stat_add(&u->st.built, 1);
		stat_add(&u->st.tables, 1);
		stat_add(&u->st.bytes, (int64_t)e->bytes);
		fr_log_debug("unwind table of %s: %u rows, %zu KiB", j->path, e->table->nrows,
			     e->bytes >> 10);
	} else {
		/* Remembered: a sample that needs it counts "no unwind info"
		 * rather than asking again. */
		e->state = ST_FAILED;
		stat_add(&u->st.failed, 1);
		fr_log_info("no unwind table for %s: %s", j->path,
			    j->err == -ENOENT	   ? "the file has no CFI"
			    : j->err == -ENOEXEC   ? "not an x86-64 ELF file"
			    : j->err == -ESTALE	   ? "the file at its path is another one now"
			    : j->err == -ETIMEDOUT ? "reading it took too long"
						   : strerror(-j->err));
	}
}

void fr_unwind_tables_collect(struct fr_unwind_tables *u)
{
	struct job *done;

	pthread_mutex_lock(&u->lock);
	done = u->done;
	u->done = NULL;
	u->done_tail = &u->done;
	pthread_mutex_unlock(&u->lock);
	if (!done)
		return;
	while (done) {
		struct job *j = done;

		done = j->next;
		stat_add(&u->st.pending, -1);
		take(u, j, j->entry);
		job_free(j);
	}
	evict(u);
}

const struct fr_cfi_table *fr_unwind_tables_find(struct fr_unwind_tables *u, uint32_t pid,
						 const struct fr_tracker_map *m, uint64_t addr,
						 uint64_t *vaddr, int *miss)
{
	struct key k;
	struct entry *e;
	bool asked;

	if (!map_key(pid, m, &k)) {
		*miss = FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	e = get_table_entry(u, &k, pid, m, false, &asked);
	if (e && e->state == ST_PENDING && !e->urgent)
		promote(u, e);
	if (!e || e->state == ST_PENDING || e->state == ST_DROPPED || e->state == ST_LINKED) {
		*miss = FR_UNWIND_MISS_PENDING;
		return NULL;
	}
	if (e->state == ST_FAILED) {
		*miss = k.kind == KEY_VDSO ? FR_UNWIND_MISS_VDSO : FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	e->last_use = ++u->clock;
	if (fr_cfi_translate(e->table, addr - m->start + m->pgoff, vaddr) < 0) {
		*miss = FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	return e->table;
}

void fr_unwind_tables_prefetch(struct fr_unwind_tables *u, uint32_t pid,
			       const struct fr_tracker_map *m)
{
	struct key k;
	bool asked;

	if (map_key(pid, m, &k) && get_table_entry(u, &k, pid, m, true, &asked) && asked) {
		stat_add(&u->st.prefetched, 1);
		fr_log_debug("unwind table of %s asked for as it is mapped", m->path);
	}
}

int fr_unwind_tables_wait(struct fr_unwind_tables *u, int64_t max_ns)
{
	struct timespec deadline;
	int64_t ns;
	bool any;

	if (max_ns <= 0 || __atomic_load_n(&u->st.pending, __ATOMIC_RELAXED) == 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	ns = deadline.tv_nsec + max_ns;
	deadline.tv_sec += ns / 1000000000;
	deadline.tv_nsec = ns % 1000000000;
	pthread_mutex_lock(&u->lock);
	while (!u->done && pthread_cond_timedwait(&u->cond, &u->lock, &deadline) != ETIMEDOUT)
		;
	any = u->done != NULL;
	pthread_mutex_unlock(&u->lock);
	if (any)
		fr_unwind_tables_collect(u);
	return any;
}

int fr_unwind_tables_settle(struct fr_unwind_tables *u, int timeout_ms)
{
	int64_t deadline = fr_now_mono_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		fr_unwind_tables_collect(u);
		if (__atomic_load_n(&u->st.pending, __ATOMIC_RELAXED) == 0)
			return 0;
		if (fr_now_mono_ns() >= deadline)
			return -ETIMEDOUT;
		usleep(2000);
	}
}

void fr_unwind_tables_stats(struct fr_unwind_tables *u, struct fr_unwind_tables_stats *out)
{
	const uint64_t *in = (const uint64_t *)&u->st;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}
