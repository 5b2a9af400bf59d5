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

#include "core/query/elf_image.h"
#include "core/query/perfmap.h"
#include "core/query/symbols.h"
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
#define COPY_BUF (1u << 20)

enum job_kind { JOB_ELF, JOB_PERFMAP };

/* What was asked recently: a build id, or a process's perf map. */
struct seen {
	struct hnode node; /* first */
	int64_t last_ns;   /* CLOCK_MONOTONIC of the last ask queued */
	bool refused;	   /* too large: not asked again */
	uint8_t len;
	uint8_t key[FR_ELF_BUILD_ID_MAX];
};

struct job {
	struct job *next;
	enum job_kind kind;
	uint32_t pid;
	uint64_t start, end; /* ELF: the mapping */
	int64_t start_ns;    /* PERFMAP: the process's start */
	uid_t uid;	     /* the asking process's user: whose turn it waits for */
	uint8_t bid_len;
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	char path[]; /* ELF: the mapped path */
};

/* One copy, run on a worker; freed by whoever holds it last. */
struct copy_call {
	struct job *job;
	int dirfd; /* a dup of the cache's: the worker may outlive it */
	uint64_t file_max;
	uint64_t bytes; /* result: bytes added to the cache */
	int ret;
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
	struct fr_worker *worker;	  /* the thread's */
	pthread_t thread;
};

/* ---- copies (on a worker) ---- */

static bool has_build_id(int fd, const uint8_t *bid, uint8_t len)
{
	uint8_t got[FR_ELF_BUILD_ID_MAX];

	return fr_elf_build_id_fd(fd, got, sizeof(got)) == (int)len && memcmp(got, bid, len) == 0;
}

/* Copies the range `r` of `src` to the same offset of `dst`. Returns 0
 * or -errno (-EIO for a source truncated meanwhile). */
static int copy_range(int src, int dst, const struct fr_elf_range *r, char *buf)
{
	for (uint64_t done = 0; done < r->len;) {
		size_t want = r->len - done < COPY_BUF ? (size_t)(r->len - done) : COPY_BUF;
		ssize_t n = fr_pread_full(src, buf, want, r->off + done);

		if (n < 0 || (size_t)n < want)
			return n < 0 ? (int)n : -EIO;
		if (pwrite(dst, buf, want, (off_t)(r->off + done)) != (ssize_t)want)
			return -EIO;
		done += want;
	}
	return 0;
}

/* Copies the `nranges` ranges of `src` (a file of `size` bytes) into a
 * new temporary file of the cache, the same size, zeros (holes)
 * elsewhere, and renames it to `name`, when `bid` (len > 0) is still the
 * copy's build id. Adds the disk it takes to c->bytes. Returns 0 or
 * -errno (nothing left behind). */
static int write_copy(struct copy_call *c, int src, uint64_t size,
		      const struct fr_elf_range *ranges, size_t nranges, const char *name,
		      const uint8_t *bid, uint8_t bid_len)
{
	static unsigned counter;
	char tmp[256], *buf = malloc(COPY_BUF);
	struct stat st;
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%u", (int)getpid(),
		 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
	/* O_EXCL|O_NOFOLLOW: whatever is at the name is not ours to open. */
	fd = openat(c->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (size_t i = 0; i < nranges && ret == 0; i++)
		ret = copy_range(src, fd, &ranges[i], buf);
	free(buf);
	if (ret == 0 && ftruncate(fd, (off_t)size) < 0)
		ret = -errno;
	/* The file may have been rewritten while it was read. */
	if (ret == 0 && bid_len && !has_build_id(fd, bid, bid_len))
		ret = -ESTALE;
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (ret == 0 && fstat(fd, &st) < 0)
		ret = -errno;
	close(fd);
	/* rename() replaces the entry itself: a symlink at `name` is not
	 * followed, a FIFO not opened. */
	if (ret == 0 && renameat(c->dirfd, tmp, c->dirfd, name) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(c->dirfd, tmp, 0);
	else
		c->bytes += (uint64_t)st.st_blocks * 512;
	return ret;
}

/* The owner of the file `j` maps, from the mapping's inode (stat, no
 * open). Returns 0 or -errno (the process is gone). */
static int mapped_owner(const struct job *j, uid_t *uid)
{
	char buf[96];
	struct stat st;

	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, j->pid, j->start,
		 j->end);
	if (stat(buf, &st) < 0)
		return -errno;
	*uid = st.st_uid;
	return 0;
}

/* Whether the copy `name` is there; it is used again, so evicted last. */
static bool cached_already(struct copy_call *c, const char *name)
{
	struct stat st;

	if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return false;
	utimensat(c->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
	return true;
}

/* A copy is named by its build id and, unless root owns the file, by its
 * owner (fr_symcache_elf_name()): a build id is a note anyone can write
 * into their own file, so a user's file never stands in for root's, and
 * queries use it only for that user's processes. */
static int copy_elf(struct copy_call *c)
{
	const struct job *j = c->job;
	char name[FR_SYMCACHE_NAME_MAX];
	struct fr_elf_range *ranges = NULL;
	size_t nranges = 0;
	struct stat st;
	uid_t uid = 0;
	int fd, ret;

	if (mapped_owner(j, &uid) == 0 &&
	    fr_symcache_elf_name(name, sizeof(name), j->bid, j->bid_len, uid) == 0 &&
	    cached_already(c, name))
		return 0;
	fd = fr_proc_open_mapped(j->pid, j->start, j->end, j->path, c->file_max, &st);
	if (fd < 0)
		return fd;
	/* The owner of the file opened decides, whatever stat said. */
	ret = fr_symcache_elf_name(name, sizeof(name), j->bid, j->bid_len, st.st_uid);
	if (ret == 0 && cached_already(c, name)) {
		close(fd);
		return 0;
	}
	/* Code and data are not copied: a copy is for naming addresses. */
	if (ret == 0)
		ret = has_build_id(fd, j->bid, j->bid_len)
			      ? fr_elf_symbol_ranges(fd, (uint64_t)st.st_size, &ranges, &nranges)
			      : -ESTALE;
	if (ret == 0)
		ret = write_copy(c, fd, (uint64_t)st.st_size, ranges, nranges, name, j->bid,
				 j->bid_len);
	free(ranges);
	close(fd);
	return ret;
}

static int copy_perfmap(struct copy_call *c)
{
	const struct job *j = c->job;
	char name[128], root[64], path[64];
	struct stat st, old;
	uint32_t ns_pid;
	uid_t uid;
	int fd, ret;

	ret = fr_perfmap_proc_ids(j->pid, &uid, &ns_pid);
	if (ret < 0)
		return ret;
	snprintf(root, sizeof(root), "/proc/%u/root", j->pid);
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", ns_pid);
	fd = fr_open_untrusted(root, path, FR_PERFMAP_MAX_SIZE, &st);
	if (fd < 0)
		return fd;
	/* As the symbolizer reads it: only the process's user's names. */
	ret = st.st_uid == uid ? 0 : -EPERM;
	/* Named with the uid its chunks record, which queries look it up
	 * with and which it is counted to. */
	fr_symcache_perfmap_name(name, sizeof(name), NULL, j->pid, j->start_ns, j->uid);
	/* Unchanged since the last copy: nothing to do. */
	if (ret == 0 && fstatat(c->dirfd, name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(old.st_mode) && old.st_size == st.st_size) {
		utimensat(c->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
		close(fd);
		return 0;
	}
	if (ret == 0) {
		struct fr_elf_range all = {0, (uint64_t)st.st_size};

		ret = write_copy(c, fd, (uint64_t)st.st_size, &all, 1, name, NULL, 0);
	}
	close(fd);
	return ret;
}

static void copy_run(void *arg)
{
	struct copy_call *c = arg;

	c->ret = c->job->kind == JOB_ELF ? copy_elf(c) : copy_perfmap(c);
}

static void copy_drop(void *arg)
{
	struct copy_call *c = arg;

	close(c->dirfd);
	free(c->job);
	free(c);
}

/* ---- the directory: usage and eviction (the cache's thread) ---- */

struct entry {
	char name[256];
	struct timespec mtime;
	uint64_t size;
	uint32_t owner;
	bool gone;
};

/* The owner of a cache file, from its name (symcache.h): the uid after
 * ".u" (HEX.uUID, perf-PID-START.uUID.map), else root. */
static uint32_t name_owner(const char *name)
{
	const char *u = strstr(name, ".u");
	char *end;
	unsigned long v;

	if (!u)
		return 0;
	v = strtoul(u + 2, &end, 10);
	if (end == u + 2 || (*end && strcmp(end, ".map") != 0) || v > UINT32_MAX)
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

/* Copies `j` (taken) on the worker. Returns the bytes added. */
static uint64_t run_job(struct fr_symcache *c, struct job *j)
{
	struct copy_call *call = calloc(1, sizeof(*call));
	char hex[2 * FR_ELF_BUILD_ID_MAX + 1], what[256];
	uint64_t bytes;
	int ret;

	if (!call || (call->dirfd = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		free(call);
		free(j);
		return 0;
	}
	call->job = j;
	call->file_max = c->file_max;
	/* Copied first: past the deadline `j` is the abandoned worker's. */
	snprintf(what, sizeof(what), "%s", j->kind == JOB_ELF ? j->path : "a perf map");
	ret = fr_worker_call(&c->worker, copy_run, copy_drop, call, c->deadline_ns);
	if (ret == -ETIMEDOUT) {
		fr_log_warn("symbol cache: copying %s took over %lld s; going on without it", what,
			    (long long)(c->deadline_ns / FR_NS_PER_S));
		return 0;
	}
	if (ret < 0) {
		copy_drop(call);
		return 0;
	}
	ret = call->ret;
	bytes = call->bytes;
	if (ret == -EFBIG && j->kind == JOB_ELF) {
		refuse(c, j);
		fr_log_info("symbol cache: %s (build id %s) is over symbols.cache_file_max; not "
			    "cached",
			    j->path, fr_build_id_hex(j->bid, j->bid_len, hex));
	} else if (ret < 0 && ret != -ESRCH && ret != -ENOENT) {
		fr_log_debug("symbol cache: not copied (%s): %s",
			     j->kind == JOB_ELF ? j->path : "perf map", strerror(-ret));
	}
	copy_drop(call);
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
		bool over;

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

		added = run_job(c, j);

		pthread_mutex_lock(&c->lock);
		if (added) {
			c->bytes += added;
			c->files++;
		}
		over = c->bytes > c->max_bytes || c->rescan;
		c->rescan = false;
		pthread_mutex_unlock(&c->lock);
		/* A copy that replaced one (a perf map) is counted once too
		 * many until the next scan: the scan recounts. */
		if (over || added)
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
			free(j);
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
			free(j);
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
