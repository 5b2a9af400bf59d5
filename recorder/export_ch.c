/* The exporter thread (recorder/export_ch.h): the batch grid, the cursor
 * file beside the ring, retries with backoff, and its status. Building and
 * sending a batch is core/query/export_batch.c's, shared with tools.
 */
#include "recorder/export_ch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/query/export_batch.h"
#include "core/util/http.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "ipc/proto.h"
#include "recorder/daemon_int.h"

#define CURSOR_HEADER "flightrec-export 1\n"
#define CURSOR_FILE_MAX 256
/* How long after an interval ends it is shipped: the ingest thread seals
 * every second, and the flush barrier covers the rest. */
#define GRACE_NS (1500 * 1000000LL)
/* Retries wait 1 s doubling up to three batches (at least 5 s, at most a
 * minute): longer would only delay the catch-up once the server is back. */
#define BACKOFF_MIN_NS 1000000000LL
#define BACKOFF_FLOOR_NS (5 * 1000000000LL)
#define BACKOFF_MAX_NS (60 * 1000000000LL)
#define SEEN_STACKS 65536
/* Decoded chunks one batch keeps between its two passes. */
#define EXPORT_CACHE_BYTES ((size_t)16 << 20)

struct fr_exporter {
	struct daemon *d;
	const struct fr_config_export *cfg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	char host[256];
	char *cursor_path;
	char **debug_dirs;
	uint32_t ndebug_dirs;
	struct fr_http *http;
	struct fr_export_seen *seen;

	/* What status shows, under lock. */
	int64_t cursor_ns;
	uint64_t batches, rows, stacks, samples, duplicates, retries, rows_dropped;
	uint64_t lost_batches;
	int64_t lost_ns;
	int64_t lost_upto; /* the end of what lost_ns counted (the thread's) */
	int64_t last_ok_ns, last_error_ns;
	int retrying;
	char last_error[768];
};

static int stopping(void *arg)
{
	return __atomic_load_n(&((struct fr_exporter *)arg)->stop, __ATOMIC_RELAXED);
}

/* Waits until Unix time `until_ns` or a stop. Returns non-zero on stop. */
static int sleep_until(struct fr_exporter *x, int64_t until_ns)
{
	struct timespec ts = {.tv_sec = until_ns / 1000000000, .tv_nsec = until_ns % 1000000000};
	int stop;

	pthread_mutex_lock(&x->lock);
	while (!x->stop && fr_now_real_ns() < until_ns)
		if (pthread_cond_timedwait(&x->cond, &x->lock, &ts) == ETIMEDOUT)
			break;
	stop = x->stop;
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

/* Replaces RING.export atomically: a new file under a random name (O_EXCL,
 * O_NOFOLLOW, 0600), written, fsync'ed, renamed over the old one. */
static int cursor_save(struct fr_exporter *x, int64_t t_ns)
{
	char tmp[4096], text[128], *dir, *slash;
	uint64_t r = 0;
	int fd, n, ret = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) < 0)
		r = (uint64_t)fr_now_mono_ns();
	snprintf(tmp, sizeof(tmp), "%s.%016" PRIx64, x->cursor_path, r);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	n = snprintf(text, sizeof(text), CURSOR_HEADER "%" PRId64 "\n", t_ns);
	if (write(fd, text, (size_t)n) != n || fsync(fd) < 0)
		ret = -EIO;
	close(fd);
	if (ret == 0 && rename(tmp, x->cursor_path) < 0)
		ret = -errno;
	if (ret < 0) {
		unlink(tmp);
		return ret;
	}
	/* The rename itself survives a power loss too (else the older
	 * cursor comes back, and the duplicate check skips what it
	 * shipped since). */
	dir = strdup(x->cursor_path);
	slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	fd = dir ? open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
	return 0;
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

	fr_ring_get_stats(x->d->ring, &st);
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

/* Builds and sends the batch [t0, t1). Returns 0 or -errno (said in the
 * status and the log). */
static int ship(struct fr_exporter *x, int64_t t0, int64_t t1)
{
	const struct fr_config_export *c = x->cfg;
	struct fr_export_req req = {
		.t0 = t0,
		.t1 = t1,
		.host = x->host,
		.nevents = c->nevents,
		.hz = c->hz,
		.symbol_cache = x->d->symcache_dir,
		.debug_dirs = (const char *const *)x->debug_dirs,
		.ndebug_dirs = x->ndebug_dirs,
		.cache_bytes = EXPORT_CACHE_BYTES,
		.stop = stopping,
		.stop_arg = x,
	};
	struct fr_export_batch b;
	char err[512];
	int dup = 0, ret;

	memcpy(req.events, c->events, sizeof(req.events));
	ret = fr_export_batch_build(x->d->ring, &req, x->seen, &b, err, sizeof(err));
	if (ret < 0) {
		set_error(x, "building a batch", err);
		return ret;
	}
	ret = fr_export_batch_ship(x->http, c->url, c->database, x->host, t0, &b, x->seen, &dup,
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

static void *export_thread(void *arg)
{
	struct fr_exporter *x = arg;
	int64_t batch = x->cfg->batch_ns, backoff = 0, t0 = x->cursor_ns, t1;
	int64_t backoff_max = 3 * batch < BACKOFF_FLOOR_NS ? BACKOFF_FLOOR_NS
			      : 3 * batch > BACKOFF_MAX_NS ? BACKOFF_MAX_NS
							   : 3 * batch;

	/* Behind recording, never in its way: a lower priority for the
	 * queries and compression this thread does. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	while (!stopping(x)) {
		t1 = t0 + batch;
		if (sleep_until(x, t1 + GRACE_NS))
			break;
		/* A batch just ended: make sure its last second is stored. */
		if (fr_now_real_ns() - t1 < 5 * GRACE_NS && daemon_flush_barrier(x->d) < 0)
			fr_log_warn("export: flush before a batch timed out");
		if (count_lost(x, t0, t1)) {
			advance(x, t0 = t1);
			continue;
		}
		if (ship(x, t0, t1) < 0) {
			backoff = backoff ? backoff * 2 : BACKOFF_MIN_NS;
			backoff = backoff < backoff_max ? backoff : backoff_max;
			if (sleep_until(x, fr_now_real_ns() + backoff))
				break;
			continue;
		}
		backoff = 0;
		advance(x, t0 = t1);
	}
	return NULL;
}

static int copy_debug_dirs(struct fr_exporter *x, const struct fr_config *cfg)
{
	x->debug_dirs = calloc(cfg->symbols.ndebug_dirs + 1, sizeof(char *));
	if (!x->debug_dirs)
		return -ENOMEM;
	for (; x->ndebug_dirs < cfg->symbols.ndebug_dirs; x->ndebug_dirs++)
		if (!(x->debug_dirs[x->ndebug_dirs] =
			      strdup(cfg->symbols.debug_dirs[x->ndebug_dirs])))
			return -ENOMEM;
	return 0;
}

static void exporter_free(struct fr_exporter *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; i < x->ndebug_dirs; i++)
		free(x->debug_dirs[i]);
	free(x->debug_dirs);
	fr_http_free(x->http);
	fr_export_seen_free(x->seen);
	free(x->cursor_path);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

/* The exporter's state before its thread runs: names, client, cursor. */
static int exporter_init(struct fr_exporter *x, char *err, size_t errlen)
{
	const struct fr_config_export *c = x->cfg;
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
	int64_t now = fr_now_real_ns(), t = 0;
	struct fr_ring_stats st;
	char a[64], b[64];
	int ret;

	if (c->host)
		snprintf(x->host, sizeof(x->host), "%s", c->host);
	else if (gethostname(x->host, sizeof(x->host) - 1) < 0)
		snprintf(x->host, sizeof(x->host), "unknown");
	if (asprintf(&x->cursor_path, "%s.export", x->d->opts->ring_path) < 0) {
		x->cursor_path = NULL;
		return -ENOMEM;
	}
	x->seen = fr_export_seen_new(SEEN_STACKS);
	if (!x->seen || copy_debug_dirs(x, x->d->opts->config) < 0)
		return -ENOMEM;
	if (fr_http_global_init() < 0) {
		snprintf(err, errlen, "cannot initialize libcurl");
		return -EIO;
	}
	ret = fr_http_new(&x->http, &ho, err, errlen);
	if (ret < 0)
		return ret;
	/* No cursor yet: from the current interval on; the ring's past was
	 * recorded before export was configured. */
	ret = cursor_load(x, &t);
	if (ret < 0 && ret != -ENOENT)
		fr_log_warn("export: ignoring the cursor file %s (%s); starting now",
			    x->cursor_path, strerror(-ret));
	x->cursor_ns = ret == 0 ? t - t % c->batch_ns : now - now % c->batch_ns;
	/* Losses are what the ring held and dropped before it was shipped:
	 * nothing before its oldest sample now (or, when it is empty, when
	 * it first has one: count_lost()) was seen by this recorder, so none
	 * of it counts. */
	fr_ring_get_stats(x->d->ring, &st);
	x->lost_upto = st.oldest_ns;
	if (st.oldest_ns > x->cursor_ns + c->batch_ns)
		fr_log_warn("export: the ring starts at %s, after the cursor %s: that span was "
			    "dropped before it was shipped, or never recorded",
			    fr_format_time(st.oldest_ns, a, sizeof(a)),
			    fr_format_time(x->cursor_ns, b, sizeof(b)));
	return 0;
}

void daemon_start_export(struct daemon *d)
{
	const struct fr_config_export *c = &d->opts->config->export;
	struct fr_exporter *x;
	char err[512] = "out of memory", when[64];
	int ret;

	if (!c->enabled)
		return;
	x = calloc(1, sizeof(*x));
	if (!x) {
		fr_log_err("export is off: out of memory");
		return;
	}
	x->d = d;
	x->cfg = c;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	ret = exporter_init(x, err, sizeof(err));
	if (ret == 0)
		ret = -pthread_create(&x->thread, NULL, export_thread, x);
	if (ret < 0) {
		fr_log_err("export is off: %s", err);
		exporter_free(x);
		return;
	}
	fr_log_info("export: shipping to %s (database %s, host %s) from %s", c->url, c->database,
		    x->host, fr_format_time(x->cursor_ns, when, sizeof(when)));
	d->exporter = x;
}

void daemon_stop_export(struct daemon *d)
{
	struct fr_exporter *x = d->exporter;

	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->stop = 1;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	pthread_join(x->thread, NULL);
	exporter_free(x);
	d->exporter = NULL;
}

int daemon_export_status(struct daemon *d, cJSON *r)
{
	struct fr_exporter *x = d->exporter;
	int64_t now = fr_now_real_ns();
	cJSON *o;

	if (!x)
		return 1;
	o = cJSON_AddObjectToObject(r, "export");
	if (!o)
		return 0;
	pthread_mutex_lock(&x->lock);
	cJSON_AddStringToObject(o, "url", x->cfg->url);
	cJSON_AddStringToObject(o, "database", x->cfg->database);
	cJSON_AddStringToObject(o, "host", x->host);
	cJSON_AddStringToObject(o, "state", x->retrying ? "retrying" : "shipping");
	fr_ipc_add_int(o, "batch_ns", x->cfg->batch_ns);
	fr_ipc_add_int(o, "hz", x->cfg->hz);
	fr_ipc_add_int(o, "cursor_ns", x->cursor_ns);
	fr_ipc_add_int(o, "lag_ns", now > x->cursor_ns ? now - x->cursor_ns : 0);
	fr_ipc_add_int(o, "batches", (int64_t)x->batches);
	fr_ipc_add_int(o, "rows", (int64_t)x->rows);
	fr_ipc_add_int(o, "samples", (int64_t)x->samples);
	fr_ipc_add_int(o, "stacks", (int64_t)x->stacks);
	fr_ipc_add_int(o, "duplicates_skipped", (int64_t)x->duplicates);
	fr_ipc_add_int(o, "retries", (int64_t)x->retries);
	fr_ipc_add_int(o, "rows_dropped", (int64_t)x->rows_dropped);
	fr_ipc_add_int(o, "lost_ns", x->lost_ns);
	fr_ipc_add_int(o, "lost_batches", (int64_t)x->lost_batches);
	fr_ipc_add_int(o, "last_ok_ns", x->last_ok_ns);
	fr_ipc_add_int(o, "last_error_ns", x->last_error_ns);
	cJSON_AddStringToObject(o, "last_error", x->last_error);
	pthread_mutex_unlock(&x->lock);
	return 1;
}
