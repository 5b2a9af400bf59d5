/* The on-disk symbol cache (see symcache.h).
 *
 * The ingest thread asks (fr_symcache_want_*) under the cache's lock: a
 * table of what was asked recently (`seen`, by build id or by process)
 * answers most asks without a queue entry; the rest are queued for the
 * cache's thread, which runs each copy on a worker (core/util/worker.h)
 * under a deadline, since the source is a file users control. The thread
 * alone counts the bytes kept and evicts, least recently used (mtime)
 * first; the directory is the daemon's own (fr_dir_open_private()), so
 * nothing in it but the daemon's files is expected, and anything else at
 * a cache path is replaced by rename, never opened.
 */
#include "recorder/tracking/symcache.h"
#include "recorder/tracking/symcache_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/elf_image.h"
#include "core/symbols/perfmap.h"
#include "core/symbols/symbols.h"
#include "core/util/grow.h"
#include "core/util/time.h"
#include "recorder/tracking/proc.h"
#include "core/util/fs.h"
#include "core/util/htable.h"
#include "core/util/log.h"
#include "core/util/shares.h"
#include "core/util/priority.h"
#include "core/util/worker.h"

/* An entry the recorder keeps using is touched this often. */
#define REFRESH_NS (60 * FR_NS_PER_S)
/* A growing perf map is copied again at most this often. */
#define PERFMAP_REFRESH_NS (5 * FR_NS_PER_S)
#define DEADLINE_NS_DEFAULT (60 * FR_NS_PER_S)
/* What `seen` holds at most; past it, it starts again empty (every entry
 * is then asked for once more, which costs an fstatat each). */
#define SEEN_MAX 16384

/* What was asked recently: a build id, or a process's perf map. */
struct seen {
	struct hnode node; /* first */
	int64_t last_ns;   /* CLOCK_MONOTONIC of the last ask queued */
	bool refused;	   /* too large: not asked again */
	uint8_t len;
	uint8_t key[FR_ELF_BUILD_ID_MAX];
};

/* The copies one user's processes asked for, waiting their turn: the
 * cache's thread takes one copy of each user in turn, so that a flood of
 * one user's binaries (each copy a read of a file that user controls, up
 * to the deadline) cannot hold back root's or another user's copies
 * until their processes, and the files they mapped, are gone. */
struct turn {
	struct turn *next;
	uid_t uid;
	uint32_t n;
	struct job *head, **tail;
};

struct fr_symcache {
	int dirfd;
	char *dir;
	uint64_t max_bytes, file_max;
	int64_t deadline_ns;
	pthread_mutex_t lock;
	pthread_cond_t cond;		  /* work queued, work done, stop */
	struct turn *turns, **turns_tail; /* under lock: users with copies waiting */
	uint32_t user_queued;		  /* under lock: of users other than root */
	uint32_t pending;		  /* queued or being copied; under lock */
	bool stop;			  /* under lock */
	bool rescan;			  /* under lock: the budget changed */
	struct htable seen;		  /* under lock */
	uint64_t files, bytes;		  /* under lock; written by the thread */
	struct fr_shares owners;	  /* under lock; written by the thread */
	struct py_counts py;		  /* under lock */
	struct fr_worker *worker;	  /* the thread's */
	pthread_t thread;
};

/* ---- the directory: usage and eviction (the cache's thread) ---- */

struct entry {
	char name[256];
	struct timespec mtime;
	uint64_t size;
	uint32_t owner;
	bool gone;
};

/* The owner of a cache file, from its name (symcache.h): the uid after
 * ".u" (HEX.uUID, perf-PID-START.uUID.map, python-PID-START.uUID.codes),
 * else root. */
static uint32_t name_owner(const char *name)
{
	const char *u = strstr(name, ".u");
	char *end;
	unsigned long v;

	if (!u)
		return 0;
	v = strtoul(u + 2, &end, 10);
	if (end == u + 2 || (*end && strcmp(end, ".map") != 0 && strcmp(end, ".codes") != 0) ||
	    v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Lists the cache's files (unfinished copies removed when `clean`) into
 * *out, oldest first. Returns their number or -errno. */
static ssize_t list_entries(int dirfd, bool clean, struct entry **out)
{
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd = dup(dirfd);
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.') {
			if (clean && strncmp(de->d_name, ".tmp-", 5) == 0)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || strlen(de->d_name) >= sizeof(v->name))
			continue;
		if (FR_GROW(v, &cap, n + 1, 64) < 0) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		strcpy(v[n].name, de->d_name);
		v[n].mtime = st.st_mtim;
		v[n].size = (uint64_t)st.st_blocks * 512; /* copies have holes */
		v[n].owner = name_owner(de->d_name);
		v[n].gone = false;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	*out = v;
	return (ssize_t)n;
}

/* The least recently used file of `owner` still there in `v` (oldest
 * first), from *next on. Returns its index or -1. */
static ssize_t oldest_of(struct entry *v, ssize_t n, uint32_t owner, ssize_t *next)
{
	for (ssize_t i = *next; i < n; i++) {
		if (!v[i].gone && v[i].owner == owner) {
			*next = i + 1;
			return i;
		}
	}
	*next = n;
	return -1;
}

/* Above the budget, removes files by the rule of core/util/shares.h: the
 * least recently used file of the owner most over its share, so that one
 * user's files never push out another's (or root's) under their share.
 * Returns the files evicted. */
static uint64_t evict(struct fr_symcache *c, struct entry *v, ssize_t n, struct fr_shares *sh,
		      uint64_t budget)
{
	ssize_t *next = calloc(sh->n ? sh->n : 1, sizeof(*next)), i;
	uint32_t *uids = calloc(sh->n ? sh->n : 1, sizeof(*uids)), nu = sh->n, k;
	uint64_t evicted = 0;
	int o;

	if (!next || !uids)
		goto out;
	/* Owners leave `sh` as their last file goes: cursors by uid. */
	for (k = 0; k < nu; k++)
		uids[k] = sh->v[k].uid;
	while ((o = fr_shares_victim(sh, budget)) >= 0) {
		uint32_t uid = sh->v[o].uid;

		for (k = 0; k < nu && uids[k] != uid; k++)
			;
		if (k == nu || (i = oldest_of(v, n, uid, &next[k])) < 0)
			break;
		v[i].gone = true;
		if (unlinkat(c->dirfd, v[i].name, 0) < 0 && errno != ENOENT)
			continue; /* still there: counted, the next one goes */
		fr_shares_add(sh, uid, -(int64_t)v[i].size, -1);
		evicted++;
	}
out:
	free(next);
	free(uids);
	return evicted;
}

/* Counts what the directory holds, per owner, and evicts above the
 * budget. */
static void rescan(struct fr_symcache *c, bool clean)
{
	struct fr_shares sh = {0};
	struct entry *v = NULL;
	uint64_t evicted = 0, budget;
	ssize_t n = list_entries(c->dirfd, clean, &v);

	if (n < 0) {
		fr_log_warn("symbol cache %s: cannot list it: %s", c->dir, strerror((int)-n));
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if (fr_shares_add(&sh, v[i].owner, (int64_t)v[i].size, 1) < 0)
			v[i].gone = true; /* out of memory: not counted, not evicted */
	pthread_mutex_lock(&c->lock);
	budget = c->max_bytes;
	pthread_mutex_unlock(&c->lock);
	evicted = evict(c, v, n, &sh, budget);
	if (evicted)
		fr_log_debug("symbol cache %s: %" PRIu64 " files evicted over its budget", c->dir,
			     evicted);
	free(v);
	pthread_mutex_lock(&c->lock);
	c->bytes = fr_shares_total(&sh);
	c->files = 0;
	for (uint32_t k = 0; k < sh.n; k++)
		c->files += sh.v[k].entries;
	fr_shares_fini(&c->owners);
	c->owners = sh;
	pthread_mutex_unlock(&c->lock);
}

/* ---- the cache's thread ---- */

/* Marks the ask of `j` refused for good (a file over file_max). */
static void refuse(struct fr_symcache *c, const struct job *j)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, j->bid, j->bid_len);

	pthread_mutex_lock(&c->lock);
	for (struct hnode *n = fr_htable_first(&c->seen, h); n; n = n->next) {
		struct seen *s = (struct seen *)n;

		if (n->hash == h && s->len == j->bid_len && memcmp(s->key, j->bid, s->len) == 0)
			s->refused = true;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Copies `j` (taken) on the worker. Returns the bytes added, and in
 * *replaced whether a file was rewritten (the bytes are then its growth). */
static uint64_t run_job(struct fr_symcache *c, struct job *j, bool *replaced)
{
	struct copy_call *call = calloc(1, sizeof(*call));
	char hex[2 * FR_ELF_BUILD_ID_MAX + 1], what[256];
	uint64_t bytes;
	int ret;

	if (!call || (call->dirfd = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		free(call);
		symcache_job_free(j);
		return 0;
	}
	call->job = j;
	call->file_max = c->file_max;
	/* Copied first: past the deadline `j` is the abandoned worker's. */
	snprintf(what, sizeof(what), "%s",
		 j->kind == JOB_ELF	  ? j->path
		 : j->kind == JOB_PERFMAP ? "a perf map"
					  : "Python names");
	ret = fr_worker_call(&c->worker, symcache_copy_run, symcache_copy_drop, call,
			     c->deadline_ns);
	if (ret == -ETIMEDOUT) {
		fr_log_warn("symbol cache: copying %s took over %lld s; going on without it", what,
			    (long long)(c->deadline_ns / FR_NS_PER_S));
		return 0;
	}
	if (ret < 0) {
		symcache_copy_drop(call);
		return 0;
	}
	ret = call->ret;
	bytes = call->bytes;
	*replaced = call->replaced;
	symcache_py_count(c, &call->py);
	if (ret == -EFBIG && j->kind == JOB_ELF) {
		refuse(c, j);
		fr_log_info("symbol cache: %s (build id %s) is over symbols.cache_file_max; not "
			    "cached",
			    j->path, fr_build_id_hex(j->bid, j->bid_len, hex));
	} else if (ret < 0 && ret != -ESRCH && ret != -ENOENT) {
		fr_log_debug("symbol cache: not copied (%s): %s", what, strerror(-ret));
	}
	symcache_copy_drop(call);
	return bytes;
}

/* The next copy: the first of the user whose turn it is, who then goes
 * last. Under lock, with c->turns not empty. */
static struct job *next_turn(struct fr_symcache *c)
{
	struct turn *t = c->turns;
	struct job *j = t->head;

	t->head = j->next;
	if (!t->head)
		t->tail = &t->head;
	t->n--;
	c->user_queued -= j->uid != 0;
	c->turns = t->next;
	if (!c->turns)
		c->turns_tail = &c->turns;
	if (t->n) {
		t->next = NULL;
		*c->turns_tail = t;
		c->turns_tail = &t->next;
	} else {
		free(t);
	}
	return j;
}

static void *cache_main(void *arg)
{
	struct fr_symcache *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct job *j;
		uint64_t added;
		bool over, replaced = false;

		while (!c->turns && !c->stop && !c->rescan)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->stop)
			break;
		if (!c->turns) {
			/* A new budget: evict down to it. */
			c->rescan = false;
			pthread_mutex_unlock(&c->lock);
			rescan(c, false);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		j = next_turn(c);
		pthread_mutex_unlock(&c->lock);

		added = run_job(c, j, &replaced);

		pthread_mutex_lock(&c->lock);
		if (added) {
			c->bytes += added;
			c->files += !replaced;
		}
		over = c->bytes > c->max_bytes || c->rescan;
		c->rescan = false;
		pthread_mutex_unlock(&c->lock);
		/* A copy that replaced one (a perf map) is counted once too
		 * many until the next scan: the scan recounts. */
		if (over || (added && !replaced))
			rescan(c, false);
		pthread_mutex_lock(&c->lock);
		c->pending--;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- asks (the ingest thread) ---- */

static void seen_free(struct hnode *n)
{
	free(n);
}

/* Whether `key` is due to be asked for (not asked within `every_ns`, not
 * refused); records the ask when it is. Under lock. */
static bool seen_due(struct fr_symcache *c, const uint8_t *key, uint8_t len, int64_t every_ns)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, key, len);
	int64_t now = fr_now_mono_ns();
	struct seen *s;

	for (struct hnode *n = fr_htable_first(&c->seen, h); n; n = n->next) {
		s = (struct seen *)n;
		if (n->hash != h || s->len != len || memcmp(s->key, key, len) != 0)
			continue;
		if (s->refused || now - s->last_ns < every_ns)
			return false;
		s->last_ns = now;
		return true;
	}
	if (c->seen.count >= SEEN_MAX)
		fr_htable_fini(&c->seen, seen_free);
	s = calloc(1, sizeof(*s));
	if (!s)
		return false;
	s->node.hash = h;
	s->len = len;
	memcpy(s->key, key, len);
	s->last_ns = now;
	if (fr_htable_insert(&c->seen, &s->node) < 0) {
		free(s);
		return false;
	}
	return true;
}

/* Whether user `uid` may queue one more copy: FR_SYMCACHE_MAX_PENDING
 * in all, a user other than root at most a quarter of it and those users
 * together three quarters, so that one user's flood leaves room for
 * everyone else's asks, and root's always. Under lock. */
static bool queue_room(struct fr_symcache *c, uid_t uid)
{
	const struct turn *t;

	if (c->pending >= FR_SYMCACHE_MAX_PENDING)
		return false;
	if (uid == 0)
		return true;
	for (t = c->turns; t && t->uid != uid; t = t->next)
		;
	return (!t || t->n < FR_SYMCACHE_MAX_PENDING / 4) &&
	       c->user_queued < FR_SYMCACHE_MAX_PENDING / 4 * 3;
}

/* Queues `j` (taken; freed when out of memory) at the end of its user's
 * queue. Under lock. */
static void enqueue(struct fr_symcache *c, struct job *j)
{
	struct turn *t;

	for (t = c->turns; t && t->uid != j->uid; t = t->next)
		;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			symcache_job_free(j);
			return;
		}
		t->uid = j->uid;
		t->tail = &t->head;
		*c->turns_tail = t;
		c->turns_tail = &t->next;
	}
	j->next = NULL;
	*t->tail = j;
	t->tail = &j->next;
	t->n++;
	c->user_queued += j->uid != 0;
	c->pending++;
	pthread_cond_broadcast(&c->cond);
}

void fr_symcache_want_elf(struct fr_symcache *c, uint32_t pid, uid_t uid, uint64_t start,
			  uint64_t end, const char *path, const uint8_t *bid, uint8_t bid_len)
{
	struct job *j;
	size_t len;

	if (!c || !bid_len || bid_len > FR_ELF_BUILD_ID_MAX || path[0] != '/')
		return;
	len = strlen(path);
	pthread_mutex_lock(&c->lock);
	if (queue_room(c, uid) && seen_due(c, bid, bid_len, REFRESH_NS) &&
	    (j = calloc(1, sizeof(*j) + len + 1))) {
		j->kind = JOB_ELF;
		j->pid = pid;
		j->uid = uid;
		j->start = start;
		j->end = end;
		j->bid_len = bid_len;
		memcpy(j->bid, bid, bid_len);
		memcpy(j->path, path, len + 1);
		enqueue(c, j);
	}
	pthread_mutex_unlock(&c->lock);
}

void fr_symcache_want_perfmap(struct fr_symcache *c, uint32_t pid, int64_t start_ns, uid_t uid)
{
	/* Keyed apart from build ids by its length (12 bytes: none is). */
	uint8_t key[12];
	struct job *j;

	if (!c || start_ns <= 0)
		return;
	memcpy(key, &pid, 4);
	memcpy(key + 4, &start_ns, 8);
	pthread_mutex_lock(&c->lock);
	if (queue_room(c, uid) && seen_due(c, key, sizeof(key), PERFMAP_REFRESH_NS) &&
	    (j = calloc(1, sizeof(*j) + 1))) {
		j->kind = JOB_PERFMAP;
		j->pid = pid;
		j->start_ns = start_ns;
		j->uid = uid;
		enqueue(c, j);
	}
	pthread_mutex_unlock(&c->lock);
}

int symcache_ask(struct fr_symcache *c, struct job *j, const uint8_t *key, uint8_t keylen,
		 int64_t every_ns, bool (*merge)(struct job *waiting, const struct job *j))
{
	const struct turn *t;
	int ret = 1;

	pthread_mutex_lock(&c->lock);
	for (t = c->turns; merge && t && t->uid != j->uid; t = t->next)
		;
	for (struct job *q = t && merge ? t->head : NULL; q; q = q->next)
		if (merge(q, j)) {
			ret = 0;
			goto out;
		}
	if (!queue_room(c, j->uid)) {
		c->py.asks_dropped++;
		ret = -EAGAIN;
	} else if (key && !seen_due(c, key, keylen, every_ns)) {
		ret = 0;
	} else {
		enqueue(c, j);
	}
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void symcache_py_count(struct fr_symcache *c, const struct py_counts *add)
{
	pthread_mutex_lock(&c->lock);
	c->py.read += add->read;
	c->py.unread += add->unread;
	c->py.dropped += add->dropped;
	pthread_mutex_unlock(&c->lock);
}

void fr_symcache_python_counts(struct fr_symcache *c, struct fr_symcache_pycounts *out)
{
	pthread_mutex_lock(&c->lock);
	*out = (struct fr_symcache_pycounts){c->py.read, c->py.unread, c->py.dropped,
					     c->py.asks_dropped};
	pthread_mutex_unlock(&c->lock);
}

/* ---- lifecycle ---- */

int fr_symcache_open(struct fr_symcache **out, const struct fr_symcache_options *o, char *err,
		     size_t errlen)
{
	struct fr_symcache *c = calloc(1, sizeof(*c));
	int ret;

	if (!c || !(c->dir = strdup(o->dir))) {
		free(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->dirfd = fr_dir_open_private(o->dir, 0700, err, errlen);
	if (c->dirfd < 0) {
		ret = c->dirfd;
		free(c->dir);
		free(c);
		return ret;
	}
	c->max_bytes = o->max_bytes;
	c->file_max = o->file_max ? o->file_max : FR_ELF_MAX_SIZE;
	c->deadline_ns = o->deadline_ns > 0 ? o->deadline_ns : DEADLINE_NS_DEFAULT;
	c->turns_tail = &c->turns;
	fr_mutex_init_pi(&c->lock);
	fr_mono_cond_init(&c->cond);
	rescan(c, true);
	ret = pthread_create(&c->thread, NULL, cache_main, c);
	if (ret != 0) {
		snprintf(err, errlen, "cannot start its thread: %s", strerror(ret));
		close(c->dirfd);
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		free(c->dir);
		free(c);
		return -ret;
	}
	*out = c;
	return 0;
}

void fr_symcache_close(struct fr_symcache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	fr_worker_free(c->worker);
	while (c->turns) {
		struct turn *t = c->turns;

		c->turns = t->next;
		while (t->head) {
			struct job *j = t->head;

			t->head = j->next;
			symcache_job_free(j);
		}
		free(t);
	}
	fr_htable_fini(&c->seen, seen_free);
	fr_shares_fini(&c->owners);
	close(c->dirfd);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->dir);
	free(c);
}

int fr_symcache_wait(struct fr_symcache *c, int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	fr_mono_deadline(&ts, (int64_t)timeout_ms * 1000000);
	pthread_mutex_lock(&c->lock);
	while (c->pending && ret == 0)
		ret = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	ret = c->pending ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void fr_symcache_usage(struct fr_symcache *c, uint64_t *files, uint64_t *bytes)
{
	pthread_mutex_lock(&c->lock);
	*files = c->files;
	*bytes = c->bytes;
	pthread_mutex_unlock(&c->lock);
}

void fr_symcache_set_budget(struct fr_symcache *c, uint64_t max_bytes)
{
	pthread_mutex_lock(&c->lock);
	if (max_bytes != c->max_bytes) {
		c->max_bytes = max_bytes;
		c->rescan = true;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
}

size_t fr_symcache_owners(struct fr_symcache *c, struct fr_share *out, size_t max,
			  struct fr_share *rest, uint64_t *budget)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = fr_shares_list(&c->owners, out, max, rest);
	*budget = c->max_bytes;
	pthread_mutex_unlock(&c->lock);
	return n;
}
