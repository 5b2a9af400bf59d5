/* The machine's CFI tables (see unwind_tables.h).
 *
 * Two sides. The ingest thread owns the entries: a hash table of keys to
 * states (pending, ready with its table, failed, dropped), which it alone
 * reads and changes, so a look-up per frame takes no lock. The builder
 * thread owns nothing but the job it works on: a queue of jobs and a list
 * of finished ones under `lock` connect the two, and the ingest thread
 * takes the finished ones once per drain (fr_unwind_tables_collect()).
 *
 * This file is the ingest thread's side; the builder's (reading files,
 * compiling tables, the per-user queues it serves in turn) is
 * unwind_build.c, and what both see unwind_tables_int.h.
 *
 * The structure is freed by whichever of the owner and the builder lets
 * go last: shutdown waits at most a second for a builder busy compiling a
 * large file.
 */
#include "recorder/tracking/unwind_tables_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/hash.h"
#include "core/util/log.h"
#include "core/util/priority.h"

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
	u->turns_tail = &u->turns;
	u->done_tail = &u->done;
	u->refs = 2;
	fr_mutex_init_pi(&u->lock);
	fr_mono_cond_init(&u->cond);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &ta, unwind_builder_main, u);
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
		unwind_destroy(u);
}

static uint32_t key_hash(const struct key *k)
{
	return fr_fnv1a_32(FR_FNV32_OFFSET, k, sizeof(*k));
}

static void stat_add(uint64_t *counter, int64_t delta)
{
	__atomic_add_fetch(counter, (uint64_t)delta, __ATOMIC_RELAXED);
}

/* Drops the table of `e`. */
static void drop(struct fr_unwind_tables *u, struct entry *e)
{
	pthread_mutex_lock(&u->lock);
	fr_shares_add(&u->shares, e->owner, -(int64_t)e->bytes, -1);
	pthread_mutex_unlock(&u->lock);
	stat_add(&u->st.bytes, -(int64_t)e->bytes);
	stat_add(&u->st.tables, -1);
	stat_add(&u->st.evicted, 1);
	fr_cfi_free(e->table);
	e->table = NULL;
	e->bytes = 0;
	e->state = ST_DROPPED;
}

/* Drops ready tables until the budget holds, by the rule of
 * core/util/shares.h: the least recently used table of the owner most
 * over its share, so one user's tables never push out another's (or
 * root's) below their share. */
static void evict(struct fr_unwind_tables *u)
{
	uint64_t budget = __atomic_load_n(&u->budget, __ATOMIC_RELAXED);

	for (;;) {
		struct entry *lru = NULL;
		uint32_t uid;
		int o;

		pthread_mutex_lock(&u->lock);
		o = fr_shares_victim(&u->shares, budget);
		uid = o >= 0 ? u->shares.v[o].uid : 0;
		pthread_mutex_unlock(&u->lock);
		if (o < 0)
			return;
		for (unsigned b = 0; b < NBUCKETS; b++)
			for (struct entry *e = u->buckets[b]; e; e = e->next)
				if (e->state == ST_READY && e->owner == uid &&
				    (!lru || e->last_use < lru->last_use))
					lru = e;
		if (!lru)
			return;
		drop(u, lru);
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

/* Whether user `uid` may queue one more build: a user other than root
 * at most a quarter of FR_UNWIND_TABLES_MAX_PENDING (prefetches an
 * eighth), and those users together three quarters, so that a flood of
 * one user's binaries leaves room for everyone else's, and root's
 * always (root's are bounded by the whole queue alone). Under lock. */
static bool queue_room(struct fr_unwind_tables *u, uint32_t uid, bool prefetch)
{
	const struct queue *q;

	if (uid == 0)
		return true;
	q = unwind_queue_of(u, uid);
	if (q && q->n >= FR_UNWIND_TABLES_MAX_PENDING / (prefetch ? 8 : 4))
		return false;
	return u->user_queued < FR_UNWIND_TABLES_MAX_PENDING / 4 * 3;
}

/* Queues the build of `e` for process `pid` (of user m->uid). Returns 0,
 * or -EAGAIN when too many wait. */
static int request(struct fr_unwind_tables *u, struct entry *e, uint32_t pid,
		   const struct fr_tracker_map *m, bool prefetch)
{
	uint32_t uid = m->uid;
	struct job *j;
	int ret;

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
	j->uid = uid;
	j->start = m->start;
	j->end = m->end;
	j->prefetch = prefetch;
	pthread_mutex_lock(&u->lock);
	/* Samples wait for it: ahead of the tables of this user asked for
	 * as their mappings appeared, of which a busy machine has
	 * hundreds. */
	ret = queue_room(u, uid, prefetch) ? unwind_enqueue(u, j, !prefetch, NULL) : -EAGAIN;
	if (ret == 0)
		pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (ret < 0) {
		unwind_job_free(j);
		return ret;
	}
	e->state = ST_PENDING;
	e->job = j;
	e->urgent = !prefetch;
	e->owner = uid;
	stat_add(&u->st.pending, 1);
	return 0;
}

/* A sample of a process of user `uid` needs the table of `e`, still
 * waiting: its job moves to the head of that user's queue (once, or once
 * more when root's process needs what a user asked for first: the table
 * is then root's, and waits in no user's queue). */
static void promote(struct fr_unwind_tables *u, struct entry *e, uint32_t uid)
{
	struct queue *q, *spare = calloc(1, sizeof(*spare));
	struct job **pp, *j = e->job;

	e->urgent = true;
	if (uid == 0)
		e->owner = 0;
	pthread_mutex_lock(&u->lock);
	q = unwind_queue_of(u, j->uid);
	for (pp = q ? &q->head : NULL; pp && *pp && *pp != j; pp = &(*pp)->next)
		;
	/* Not found: the builder has it already (and reads it unlocked). */
	if (pp && *pp == j) {
		struct queue *to = unwind_queue_of(u, uid);

		j->prefetch = false; /* not skipped: needed */
		if (to == q && q->n == 1) {
			/* alone: first already */
		} else if (to || spare) {
			/* Neither a queue freed that is needed, nor one
			 * allocated under the lock. */
			unwind_unqueue(u, q, pp);
			j->uid = uid;
			unwind_enqueue(u, j, true, &spare);
		} else if (q->n > 1) {
			/* No memory for a queue of `uid`: first of its own. */
			unwind_unqueue(u, q, pp);
			unwind_enqueue(u, j, true, NULL);
		}
	}
	pthread_mutex_unlock(&u->lock);
	free(spare);
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

/* Process `pid` maps the file of `e`, whose build waits: the job is
 * read through that mapping, and a prefetch is skipped only when this,
 * the latest process to map it, has exited. A file is often mapped
 * first by a process that lives a few milliseconds (a shell's command, a
 * build's compiler) and then by one that works for minutes; judged by
 * the first alone, the long-lived one's tables were not built, and its
 * samples found them one at a time, each after a turn in the queue. */
static void adopt(struct fr_unwind_tables *u, struct entry *e, uint32_t pid,
		  const struct fr_tracker_map *m)
{
	struct job *j = e->job;
	char *path;

	if (!j || j->pid == pid || !(path = strdup(m->path)))
		return;
	pthread_mutex_lock(&u->lock);
	if (!j->taken) {
		j->pid = pid;
		j->start = m->start;
		j->end = m->end;
		free(j->path);
		j->path = path;
		path = NULL;
	}
	pthread_mutex_unlock(&u->lock);
	free(path);
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
	else if (e->state == ST_PENDING && prefetch)
		adopt(u, e, pid, m);
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

/* Counts a table of `bytes` to `uid`. Returns 0 or -ENOMEM. */
static int count(struct fr_unwind_tables *u, uint32_t uid, size_t bytes)
{
	int ret;

	pthread_mutex_lock(&u->lock);
	ret = fr_shares_add(&u->shares, uid, (int64_t)bytes, 1);
	pthread_mutex_unlock(&u->lock);
	return ret;
}

/* The table of `e` is used by a process of root's: it is root's from now
 * on (a user who asked for it first must not be able to have it evicted
 * as theirs). */
static void to_root(struct fr_unwind_tables *u, struct entry *e)
{
	pthread_mutex_lock(&u->lock);
	if (fr_shares_add(&u->shares, 0, (int64_t)e->bytes, 1) == 0) {
		fr_shares_add(&u->shares, e->owner, -(int64_t)e->bytes, -1);
		e->owner = 0;
	}
	pthread_mutex_unlock(&u->lock);
}

/* A finished job of entry `e`: its table, its failure, or the build id
 * that links it to another entry (whose build is asked for now, from the
 * same mapping, when that build id is new). */
static void take(struct fr_unwind_tables *u, struct job *j, struct entry *e)
{
	struct fr_tracker_map m = {.start = j->start,
				   .end = j->end,
				   .path = j->path,
				   .uid = e->owner};
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
	} else if (j->err == 0 && count(u, e->owner, fr_cfi_size(j->table)) == 0) {
		e->table = j->table;
		j->table = NULL;
		e->bytes = fr_cfi_size(e->table);
		e->state = ST_READY;
		e->last_use = ++u->clock; /* newer than any table used so far */
		stat_add(&u->st.built, 1);
		stat_add(&u->st.tables, 1);
		stat_add(&u->st.bytes, (int64_t)e->bytes);
		fr_log_debug("unwind table of %s: %u rows, %zu KiB", j->path, e->table->nrows,
			     e->bytes >> 10);
	} else if (j->err == 0) {
		e->state = ST_DROPPED; /* no memory to count it: asked again */
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
		unwind_job_free(j);
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
	if (e && e->state == ST_PENDING && (!e->urgent || (m->uid == 0 && e->owner != 0)))
		promote(u, e, m->uid);
	if (!e || e->state == ST_PENDING || e->state == ST_DROPPED || e->state == ST_LINKED) {
		*miss = FR_UNWIND_MISS_PENDING;
		return NULL;
	}
	if (e->state == ST_FAILED) {
		*miss = k.kind == KEY_VDSO ? FR_UNWIND_MISS_VDSO : FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	e->last_use = ++u->clock;
	if (m->uid == 0 && e->owner != 0)
		to_root(u, e);
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
	bool any;

	if (max_ns <= 0 || __atomic_load_n(&u->st.pending, __ATOMIC_RELAXED) == 0)
		return 0;
	fr_mono_deadline(&deadline, max_ns);
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

uint64_t fr_unwind_tables_clock(const struct fr_unwind_tables *u)
{
	return u->clock;
}

uint64_t fr_unwind_tables_trim_idle(struct fr_unwind_tables *u, uint64_t since)
{
	uint64_t freed = 0;

	for (unsigned b = 0; b < NBUCKETS; b++) {
		for (struct entry *e = u->buckets[b]; e; e = e->next) {
			if (e->state != ST_READY || e->last_use > since)
				continue;
			freed += e->bytes;
			drop(u, e);
		}
	}
	return freed;
}

void fr_unwind_tables_stats(struct fr_unwind_tables *u, struct fr_unwind_tables_stats *out)
{
	const uint64_t *in = (const uint64_t *)&u->st;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

void fr_unwind_tables_set_budget(struct fr_unwind_tables *u, uint64_t budget)
{
	__atomic_store_n(&u->budget, budget, __ATOMIC_RELAXED);
}

size_t fr_unwind_tables_owners(struct fr_unwind_tables *u, struct fr_share *out, size_t max,
			       struct fr_share *rest, uint64_t *budget)
{
	size_t n;

	pthread_mutex_lock(&u->lock);
	n = fr_shares_list(&u->shares, out, max, rest);
	pthread_mutex_unlock(&u->lock);
	*budget = __atomic_load_n(&u->budget, __ATOMIC_RELAXED);
	return n;
}
