/* The exporter thread (recorder/export/export_ch.h): the batch grid, the cursor
 * file beside the ring, retries with backoff, and its status. Building and
 * sending a batch is core/clickhouse/export_batch.c's, shared with tools.
 */
#include "recorder/export/export_ch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clickhouse/export_batch.h"
#include "config/config.h"
#include "core/store/ring.h"
#include "core/util/fs.h"
#include "core/util/budget.h"
#include "core/util/http.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/proto.h"
#include "ipc/msg_status.h"

#define CURSOR_HEADER "flightrec-export 1\n"
#define CURSOR_FILE_MAX 256
/* How long after an interval ends it is shipped: the ingest thread seals
 * every second, and the flush barrier covers the rest. */
#define GRACE_NS (1500 * 1000000LL)
/* Retries wait 1 s doubling up to three batches (at least 5 s, at most a
 * minute): longer would only delay the catch-up once the server is back. */
#define BACKOFF_MIN_NS FR_NS_PER_S
#define BACKOFF_FLOOR_NS (5 * FR_NS_PER_S)
#define BACKOFF_MAX_NS (60 * FR_NS_PER_S)
#define SEEN_STACKS 65536
/* Decoded chunks one batch keeps between its two passes, reserved from
 * the query memory (cut to it when it is smaller). */
#define EXPORT_CACHE_BYTES ((size_t)16 << 20)
/* One wait for the query memory: short, so a stop or a reload is seen. */
#define MEMORY_WAIT_NS (1000 * 1000000LL)

/* What a reload can change, replaced as a whole on the exporter's thread
 * between batches (so nothing it uses changes under it). */
struct export_set {
	struct fr_config_export cfg; /* a copy: reloads free the daemon's */
	char host[256];
	char **debug_dirs;
	uint32_t ndebug_dirs;
	struct fr_http *http;
	struct fr_export_seen *seen;
};

struct fr_exporter {
	struct fr_export *e;  /* the context it runs in */
	struct export_set *s; /* the thread's; swapped under lock */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	/* A reload's settings for the thread to take (NULL with `pending`:
	 * the block was removed), under lock. */
	int pending;
	struct export_set *next;
	int off; /* the block was removed: the thread idles, status omits it */
	char *cursor_path;

	/* What status shows, under lock. */
	int64_t cursor_ns;
	uint64_t batches, rows, stacks, samples, duplicates, retries, rows_dropped;
	uint64_t lost_batches;
	int64_t lost_ns;
	int64_t lost_upto; /* the end of what lost_ns counted (the thread's) */
	int64_t last_ok_ns, last_error_ns;
	int retrying;
	int waiting_memory;	 /* a batch waits for the query memory */
	uint64_t memory_waits;	 /* batches that had to */
	int64_t memory_reserved; /* bytes of the query memory held now */
	char last_error[768];
};

/* Non-zero when the thread should drop what it does: the daemon stops, or
 * a reload brought new settings (a request in flight is cancelled). */
static int stopping(void *arg)
{
	struct fr_exporter *x = arg;

	return __atomic_load_n(&x->stop, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&x->pending, __ATOMIC_RELAXED);
}

/* Waits until Unix time `until_ns`, a stop or a reload. Returns non-zero
 * on the last two. */
static int sleep_until(struct fr_exporter *x, int64_t until_ns)
{
	struct timespec ts = fr_timespec_from_ns(until_ns);
	int stop;

	pthread_mutex_lock(&x->lock);
	while (!x->stop && !x->pending && fr_now_real_ns() < until_ns)
		if (pthread_cond_timedwait(&x->cond, &x->lock, &ts) == ETIMEDOUT)
			break;
	stop = x->stop || x->pending;
	pthread_mutex_unlock(&x->lock);
	return stop;
}

/* The cursor from RING.export: 0 and *t_ns, or -ENOENT (none yet) or
 * another -errno (a file not to trust: ignored, said in the log). */
static int cursor_load(struct fr_exporter *x, int64_t *t_ns)
{
	char buf[CURSOR_FILE_MAX + 1];
	struct stat st;
	long long t;
	ssize_t n;
	int fd;

	fd = open(x->cursor_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_size > CURSOR_FILE_MAX) {
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, CURSOR_FILE_MAX);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	if (strncmp(buf, CURSOR_HEADER, strlen(CURSOR_HEADER)) != 0 ||
	    sscanf(buf + strlen(CURSOR_HEADER), "%lld", &t) != 1 || t <= 0)
		return -EINVAL;
	*t_ns = t;
	return 0;
}

/* Replaces RING.export atomically (fr_replace_file: a new file, O_EXCL,
 * O_NOFOLLOW, 0600, fsync'ed, renamed over the old one, the directory
 * fsync'ed — else the older cursor could come back after a power loss and
 * the duplicate check would skip what was shipped since). */
static int cursor_save(struct fr_exporter *x, int64_t t_ns)
{
	char text[128], *dir = strdup(x->cursor_path), *slash;
	const char *base;
	int n, ret;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash == dir) {
		base = x->cursor_path + 1;
		dir[1] = '\0';
	} else if (slash) {
		*slash = '\0';
		base = slash + 1;
	} else {
		base = x->cursor_path;
		strcpy(dir, ".");
	}
	n = snprintf(text, sizeof(text), CURSOR_HEADER "%" PRId64 "\n", t_ns);
	ret = fr_replace_file(dir, base, text, (size_t)n, 0600);
	free(dir);
	return ret;
}

static void set_error(struct fr_exporter *x, const char *what, const char *why)
{
	/* Once per streak in the log; every retry in status. A request
	 * cancelled by the shutdown is no failure. */
	if (stopping(x))
		return;
	if (!x->retrying)
		fr_log_warn("export: %s: %s; retrying", what, why);
	pthread_mutex_lock(&x->lock);
	snprintf(x->last_error, sizeof(x->last_error), "%.200s: %.500s", what, why);
	x->last_error_ns = fr_now_real_ns();
	x->retrying = 1;
	x->retries++;
	pthread_mutex_unlock(&x->lock);
}

int64_t fr_export_lost_span(int64_t *upto, int64_t t0, int64_t t1, int64_t oldest)
{
	int64_t from = t0 > *upto ? t0 : *upto;
	int64_t to = oldest < t1 ? oldest : t1;

	if (oldest <= t0 || to <= from)
		return 0;
	*upto = to;
	return to - from;
}

/* The part of [t0, t1) the ring no longer holds: overwritten (or expired)
 * before it was shipped. Moves the cursor past a whole lost interval.
 * Returns 1 when the interval is gone entirely. */
static int count_lost(struct fr_exporter *x, int64_t t0, int64_t t1)
{
	struct fr_ring_stats st;

	int64_t lost;

	fr_ring_get_stats(x->e->ring, &st);
	if (!x->lost_upto)
		x->lost_upto = st.oldest_ns;
	if (!st.oldest_ns || st.oldest_ns <= t0)
		return 0;
	lost = fr_export_lost_span(&x->lost_upto, t0, t1, st.oldest_ns);
	pthread_mutex_lock(&x->lock);
	x->lost_ns += lost;
	x->lost_batches += st.oldest_ns >= t1;
	pthread_mutex_unlock(&x->lock);
	return st.oldest_ns >= t1;
}

/* Reserves a batch's cache from the query memory (limits.query_memory)
 * that attaches and dumps share: a batch waits its turn as long as it
 * takes (never failing: the ring is the spool), a second at a time so a
 * stop or a reload is not held up. Returns the bytes reserved, or 0 on a
 * stop or a reload. */
static int64_t reserve(struct fr_exporter *x)
{
	int64_t got;
	int waited = 0;

	while ((got = fr_budget_acquire(x->e->query_budget, EXPORT_CACHE_BYTES, MEMORY_WAIT_NS)) <
	       0) {
		if (stopping(x))
			break;
		if (!waited++) {
			pthread_mutex_lock(&x->lock);
			x->memory_waits++;
			x->waiting_memory = 1;
			pthread_mutex_unlock(&x->lock);
		}
	}
	pthread_mutex_lock(&x->lock);
	x->waiting_memory = 0;
	x->memory_reserved = got > 0 ? got : 0;
	pthread_mutex_unlock(&x->lock);
	return got > 0 ? got : 0;
}

static void release(struct fr_exporter *x, int64_t got)
{
	fr_budget_release(x->e->query_budget, (uint64_t)got);
	pthread_mutex_lock(&x->lock);
	x->memory_reserved = 0;
	pthread_mutex_unlock(&x->lock);
}

/* Builds and sends the batch [t0, t1). Returns 0 or -errno (said in the
 * status and the log). */
static int ship(struct fr_exporter *x, int64_t t0, int64_t t1)
{
	struct export_set *s = x->s;
	const struct fr_config_export *c = &s->cfg;
	struct fr_export_req req = {
		.t0 = t0,
		.t1 = t1,
		.host = s->host,
		.nevents = c->nevents,
		.hz = c->hz,
		.symbol_cache = x->e->symcache_dir,
		.debug_dirs = (const char *const *)s->debug_dirs,
		.ndebug_dirs = s->ndebug_dirs,
		.cache_bytes = 0, /* what reserve() got */
		.stop = stopping,
		.stop_arg = x,
	};
	struct fr_export_batch b;
	int64_t got = reserve(x);
	char err[512];
	int dup = 0, ret;

	if (!got)
		return -ECANCELED;
	req.cache_bytes = (size_t)got;
	memcpy(req.events, c->events, sizeof(req.events));
	ret = fr_export_batch_build(x->e->ring, &req, s->seen, &b, err, sizeof(err));
	if (ret < 0) {
		release(x, got);
		set_error(x, "building a batch", err);
		return ret;
	}
	ret = fr_export_batch_ship(s->http, c->url, c->database, s->host, t0, &b, s->seen, &dup,
				   err, sizeof(err));
	if (ret < 0) {
		set_error(x, c->url, err);
	} else {
		pthread_mutex_lock(&x->lock);
		x->batches++;
		x->duplicates += dup;
		x->rows += dup ? 0 : b.rows;
		x->samples += dup ? 0 : b.samples_kept;
		x->stacks += b.nstacks;
		x->rows_dropped += b.rows_dropped;
		x->last_ok_ns = fr_now_real_ns();
		if (x->retrying)
			fr_log_info("export: shipping again after %" PRIu64 " retries", x->retries);
		x->retrying = 0;
		pthread_mutex_unlock(&x->lock);
	}
	fr_export_batch_fini(&b);
	release(x, got);
	return ret;
}

static void advance(struct fr_exporter *x, int64_t t)
{
	int ret = cursor_save(x, t);

	if (ret < 0)
		fr_log_warn("export: cannot save the cursor %s: %s", x->cursor_path,
			    strerror(-ret));
	pthread_mutex_lock(&x->lock);
	x->cursor_ns = t;
	pthread_mutex_unlock(&x->lock);
}

static void set_free(struct export_set *s);

/* Takes a reload's settings, if any. The cursor stays: every interval is
 * shipped once, under the host name and to the server in effect when it
 * is shipped. The stacks already sent are forgotten (another server may
 * not have them). While the block is removed, waits for one to come back.
 * Returns non-zero when the daemon stops. */
static int take_next(struct fr_exporter *x)
{
	struct export_set *old = NULL;
	int stop;

	pthread_mutex_lock(&x->lock);
	for (;;) {
		if (x->pending) {
			if (x->next) {
				old = x->s;
				x->s = x->next;
				x->off = 0;
			} else {
				x->off = 1;
			}
			x->next = NULL;
			x->pending = 0;
			x->retrying = 0;
			x->last_error[0] = '\0';
		}
		if (x->stop || !x->off)
			break;
		pthread_cond_wait(&x->cond, &x->lock);
	}
	stop = x->stop;
	pthread_mutex_unlock(&x->lock);
	if (old) {
		fr_log_info(
			"export: reloaded; shipping to %s (database %s, host %s) from the cursor",
			x->s->cfg.url, x->s->cfg.database, x->s->host);
		set_free(old);
	}
	return stop;
}

static void *export_thread(void *arg)
{
	struct fr_exporter *x = arg;
	int64_t batch, backoff = 0, backoff_max, t0 = x->cursor_ns, t1;

	/* Behind recording, never in its way: a lower priority for the
	 * queries and compression this thread does. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	while (!take_next(x)) {
		batch = x->s->cfg.batch_ns;
		backoff_max = 3 * batch < BACKOFF_FLOOR_NS ? BACKOFF_FLOOR_NS
			      : 3 * batch > BACKOFF_MAX_NS ? BACKOFF_MAX_NS
							   : 3 * batch;
		/* To the next boundary of the grid: after a change of the
		 * batch interval the first batch is shorter, never overlapping
		 * the batches shipped before. */
		t1 = t0 - t0 % batch + batch;
		if (sleep_until(x, t1 + GRACE_NS))
			continue;
		/* A batch just ended: make sure its last second is stored. */
		if (fr_now_real_ns() - t1 < 5 * GRACE_NS && x->e->flush(x->e->flush_arg) < 0)
			fr_log_warn("export: flush before a batch timed out");
		if (count_lost(x, t0, t1)) {
			advance(x, t0 = t1);
			continue;
		}
		if (ship(x, t0, t1) < 0) {
			backoff = backoff ? backoff * 2 : BACKOFF_MIN_NS;
			backoff = backoff < backoff_max ? backoff : backoff_max;
			sleep_until(x, fr_now_real_ns() + backoff);
			continue;
		}
		backoff = 0;
		advance(x, t0 = t1);
	}
	return NULL;
}

static int copy_debug_dirs(struct export_set *s, const struct fr_config *cfg)
{
	s->debug_dirs = calloc(cfg->symbols.ndebug_dirs + 1, sizeof(char *));
	if (!s->debug_dirs)
		return -ENOMEM;
	for (; s->ndebug_dirs < cfg->symbols.ndebug_dirs; s->ndebug_dirs++)
		if (!(s->debug_dirs[s->ndebug_dirs] =
			      strdup(cfg->symbols.debug_dirs[s->ndebug_dirs])))
			return -ENOMEM;
	return 0;
}

static void set_free(struct export_set *s)
{
	struct fr_config_export *c;

	if (!s)
		return;
	c = &s->cfg;
	for (uint32_t i = 0; i < s->ndebug_dirs; i++)
		free(s->debug_dirs[i]);
	free(s->debug_dirs);
	fr_http_free(s->http);
	fr_export_seen_free(s->seen);
	free(c->url);
	free(c->database);
	free(c->user);
	free(c->password_file);
	free(c->ca_file);
	free(c->host);
	free(s);
}

static int dup_str(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return src && !*dst ? -ENOMEM : 0;
}

/* The settings of `cfg`'s export block for exporter `x`: a copy of the
 * block, the host name, the debug directories, and a client (its password
 * and CA files read now). Returns 0, or -errno with the reason in `err`. */
static int set_new(struct fr_exporter *x, const struct fr_config *cfg, struct export_set **out,
		   char *err, size_t errlen)
{
	const struct fr_config_export *c = &cfg->export;
	struct export_set *s = calloc(1, sizeof(*s));
	struct fr_http_opts ho = {
		.user = c->user,
		.password_file = c->password_file,
		.ca_file = c->ca_file,
		.connect_timeout_ms = 5000,
		.timeout_ms = 60000,
		.max_response = 1 << 20,
		.cancel = stopping,
		.cancel_arg = x,
	};
	int ret;

	*out = NULL;
	snprintf(err, errlen, "out of memory");
	if (!s)
		return -ENOMEM;
	s->cfg = *c;
	s->cfg.url = s->cfg.database = s->cfg.user = s->cfg.password_file = NULL;
	s->cfg.ca_file = s->cfg.host = NULL;
	if (dup_str(&s->cfg.url, c->url) < 0 || dup_str(&s->cfg.database, c->database) < 0 ||
	    dup_str(&s->cfg.user, c->user) < 0 ||
	    dup_str(&s->cfg.password_file, c->password_file) < 0 ||
	    dup_str(&s->cfg.ca_file, c->ca_file) < 0 || dup_str(&s->cfg.host, c->host) < 0 ||
	    !(s->seen = fr_export_seen_new(SEEN_STACKS)) || copy_debug_dirs(s, cfg) < 0) {
		set_free(s);
		return -ENOMEM;
	}
	if (c->host)
		snprintf(s->host, sizeof(s->host), "%s", c->host);
	else if (gethostname(s->host, sizeof(s->host) - 1) < 0)
		snprintf(s->host, sizeof(s->host), "unknown");
	if (fr_http_global_init() < 0) {
		snprintf(err, errlen, "cannot initialize libcurl");
		set_free(s);
		return -EIO;
	}
	ret = fr_http_new(&s->http, &ho, err, errlen);
	if (ret < 0) {
		set_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

static void exporter_free(struct fr_exporter *x)
{
	if (!x)
		return;
	set_free(x->s);
	set_free(x->next);
	free(x->cursor_path);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

/* The exporter's state before its thread runs: settings, cursor. */
static int exporter_init(struct fr_exporter *x, const struct fr_config *cfg, char *err,
			 size_t errlen)
{
	int64_t now = fr_now_real_ns(), t = 0, batch = cfg->export.batch_ns;
	struct fr_ring_stats st;
	char a[64], b[64];
	int ret;

	if (asprintf(&x->cursor_path, "%s.export", x->e->ring_path) < 0) {
		x->cursor_path = NULL;
		return -ENOMEM;
	}
	ret = set_new(x, cfg, &x->s, err, errlen);
	if (ret < 0)
		return ret;
	/* No cursor yet: from the current interval on; the ring's past was
	 * recorded before export was configured. A cursor off this grid (the
	 * batch interval changed) is kept: the first batch ends at the grid. */
	ret = cursor_load(x, &t);
	if (ret < 0 && ret != -ENOENT)
		fr_log_warn("export: ignoring the cursor file %s (%s); starting now",
			    x->cursor_path, strerror(-ret));
	x->cursor_ns = ret == 0 ? t - t % FR_NS_PER_S : now - now % batch;
	/* Losses are what the ring held and dropped before it was shipped:
	 * nothing before its oldest sample now (or, when it is empty, when
	 * it first has one: count_lost()) was seen by this recorder, so none
	 * of it counts. */
	fr_ring_get_stats(x->e->ring, &st);
	x->lost_upto = st.oldest_ns;
	if (st.oldest_ns > x->cursor_ns + batch)
		fr_log_warn("export: the ring starts at %s, after the cursor %s: that span was "
			    "dropped before it was shipped, or never recorded",
			    fr_format_time(st.oldest_ns, a, sizeof(a)),
			    fr_format_time(x->cursor_ns, b, sizeof(b)));
	return 0;
}

/* Starts the exporter of `cfg`. Returns 0, or -errno with the reason in
 * `err`. */
static int start(struct fr_export *e, const struct fr_config *cfg, char *err, size_t errlen)
{
	struct fr_exporter *x = calloc(1, sizeof(*x));
	char when[64];
	int ret;

	snprintf(err, errlen, "out of memory");
	if (!x)
		return -ENOMEM;
	x->e = e;
	fr_mutex_init_pi(&x->lock);
	pthread_cond_init(&x->cond, NULL);
	ret = exporter_init(x, cfg, err, errlen);
	if (ret == 0 && (ret = -pthread_create(&x->thread, NULL, export_thread, x)) < 0)
		snprintf(err, errlen, "cannot start its thread: %s", strerror(-ret));
	if (ret < 0) {
		exporter_free(x);
		return ret;
	}
	fr_log_info("export: shipping to %s (database %s, host %s) from %s", x->s->cfg.url,
		    x->s->cfg.database, x->s->host,
		    fr_format_time(x->cursor_ns, when, sizeof(when)));
	/* Published last: status requests read it from other threads. */
	__atomic_store_n(&e->running, x, __ATOMIC_RELEASE);
	return 0;
}

void fr_export_start(struct fr_export *e, const struct fr_config *cfg)
{
	char err[512];

	if (cfg->export.enabled && start(e, cfg, err, sizeof(err)) < 0)
		fr_log_err("export is off: %s", err);
}

static int str_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* Whether the exporter of `a` and of `b` would differ. */
static int export_differs(const struct fr_config *a, const struct fr_config *b)
{
	const struct fr_config_export *x = &a->export, *y = &b->export;

	if (x->enabled != y->enabled)
		return 1;
	if (!x->enabled)
		return 0;
	if (str_differs(x->url, y->url) || str_differs(x->database, y->database) ||
	    str_differs(x->user, y->user) || str_differs(x->password_file, y->password_file) ||
	    str_differs(x->ca_file, y->ca_file) || str_differs(x->host, y->host) ||
	    x->batch_ns != y->batch_ns || x->hz != y->hz || x->nevents != y->nevents ||
	    memcmp(x->events, y->events, sizeof(x->events)) != 0 ||
	    a->symbols.ndebug_dirs != b->symbols.ndebug_dirs)
		return 1;
	for (uint32_t i = 0; i < a->symbols.ndebug_dirs; i++)
		if (strcmp(a->symbols.debug_dirs[i], b->symbols.debug_dirs[i]) != 0)
			return 1;
	return 0;
}

int fr_export_reload(struct fr_export *e, const struct fr_config *old, const struct fr_config *n,
		     char *why, size_t whylen)
{
	struct fr_exporter *x = e->running;
	struct export_set *s = NULL, *stale;
	char err[512];
	int ret;

	if (x ? !export_differs(old, n) : !n->export.enabled)
		return 0;
	if (!x) {
		ret = start(e, n, err, sizeof(err));
		if (ret < 0)
			snprintf(why, whylen, "export.clickhouse: %s", err);
		return ret;
	}
	if (n->export.enabled && (ret = set_new(x, n, &s, err, sizeof(err))) < 0) {
		snprintf(why, whylen, "export.clickhouse: %s", err);
		return ret;
	}
	/* The thread takes it between batches; a request in flight is
	 * cancelled (stopping()). */
	pthread_mutex_lock(&x->lock);
	stale = x->next;
	x->next = s;
	x->pending = 1;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	set_free(stale);
	fr_log_info("export: %s",
		    s ? "new settings taken at the next batch" : "stopped by a reload");
	return 0;
}

void fr_export_stop(struct fr_export *e)
{
	struct fr_exporter *x = e->running;

	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->stop = 1;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	pthread_join(x->thread, NULL);
	exporter_free(x);
	e->running = NULL;
}

int fr_export_status(struct fr_export *e, struct fr_ipc_status_export *o)
{
	struct fr_exporter *x = __atomic_load_n(&e->running, __ATOMIC_ACQUIRE);
	int64_t now = fr_now_real_ns();

	if (!x)
		return 0;
	pthread_mutex_lock(&x->lock);
	if (x->off) {
		pthread_mutex_unlock(&x->lock);
		return 0;
	}
	snprintf(o->url, sizeof(o->url), "%s", x->s->cfg.url);
	snprintf(o->database, sizeof(o->database), "%s", x->s->cfg.database);
	snprintf(o->host, sizeof(o->host), "%s", x->s->host);
	snprintf(o->state, sizeof(o->state), "%s",
		 x->waiting_memory ? "waiting for query memory"
		 : x->retrying	   ? "retrying"
				   : "shipping");
	o->batch_ns = x->s->cfg.batch_ns;
	o->hz = x->s->cfg.hz;
	o->cursor_ns = x->cursor_ns;
	o->lag_ns = now > x->cursor_ns ? now - x->cursor_ns : 0;
	o->batches = x->batches;
	o->rows = x->rows;
	o->samples = x->samples;
	o->stacks = x->stacks;
	o->duplicates_skipped = x->duplicates;
	o->retries = x->retries;
	o->rows_dropped = x->rows_dropped;
	o->query_memory_reserved = x->memory_reserved;
	o->memory_waits = x->memory_waits;
	o->lost_ns = x->lost_ns;
	o->lost_batches = x->lost_batches;
	o->last_ok_ns = x->last_ok_ns;
	o->last_error_ns = x->last_error_ns;
	snprintf(o->last_error, sizeof(o->last_error), "%s", x->last_error);
	pthread_mutex_unlock(&x->lock);
	return 1;
}
