/* Dumps written by triggers: a profile and its sidecar in the dumps
 * directory, then retention.
 *
 * A dump is recognised by its pair of names: STEM.pb.gz next to
 * STEM.json, STEM ending in a UTC time "YYYYMMDDTHHMMSS.mmmZ" (and "-N"
 * for a later dump of the same millisecond). Retention
 * touches nothing else, so a dumps directory shared with other files (or
 * pointed at the wrong place) loses only dumps.
 */
#include "recorder/triggers/dumps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/grow.h"
#include "core/util/log.h"
#include "core/store/sample.h"
#include "core/util/time.h"
#include "fr_version.h"
#include "ipc/msg_sidecar.h"
#include "recorder/sampling/bpf_events.h"
#include "recorder/triggers/triggers.h"

#define PROFILE_SUFFIX ".pb.gz"
#define SIDECAR_SUFFIX ".json"
#define GOROUTINES_SUFFIX ".goroutines.pb.gz"
/* "YYYYMMDDTHHMMSS.mmmZ" */
#define STAMP_LEN 20
/* Dumps of one stem (same session, trigger and millisecond) beyond the
 * first are STEM-2 ... STEM-MAX_SAME; more is a runaway, refused. */
#define MAX_SAME 999
/* A temporary file untouched this long is a dead dump's (retention). */
#define STALE_TEMP_S 3600

/* Creates a new, empty temporary file ".NAME.XXXXXXXXXXXX" in `dirfd` with
 * exactly `mode` (whatever the umask): O_EXCL|O_NOFOLLOW, so nothing that
 * already exists there, a symlink least of all, is ever opened. The name
 * is random, so concurrent dumps never share one. Returns the descriptor
 * with the name in `tmp`, or -errno. */
static int create_tmp(int dirfd, const char *name, mode_t mode, char *tmp, size_t tmplen)
{
	static uint64_t counter; /* atomic; only when getrandom fails */

	for (int attempt = 0; attempt < 100; attempt++) {
		uint64_t r;
		int fd, n;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = (uint64_t)fr_now_mono_ns() ^
			    (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 40) ^
			    ((uint64_t)getpid() << 20);
		n = snprintf(tmp, tmplen, ".%s.%012" PRIx64, name, r & (uint64_t)0xffffffffffff);
		if (n < 0 || (size_t)n >= tmplen)
			return -ENAMETOOLONG;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0) {
			if (fchmod(fd, mode) < 0) {
				int e = errno;

				close(fd);
				unlinkat(dirfd, tmp, 0);
				return -e;
			}
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Renames `tmp` to `name` in `dirfd` unless `name` exists (then -EEXIST
 * and `tmp` stays): a dump never replaces another file. */
static int publish(int dirfd, const char *tmp, const char *name)
{
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* A file system without RENAME_NOREPLACE: a hard link is just as
	 * exclusive; the temporary name then goes. */
	if (linkat(dirfd, tmp, dirfd, name, 0) < 0)
		return -errno;
	unlinkat(dirfd, tmp, 0);
	return 0;
}

/* Writes all of `text` to a new temporary file in `dirfd` and renames it
 * to `name` (never replacing a file). Returns 0 or -errno; on failure
 * nothing is left. */
/* Writes n bytes to fd whole. Returns 0 or -errno. */
static int put_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The new file `name` of the directory, holding `text`, or (text NULL)
 * what the descriptor `from` holds from its start: written to a
 * temporary name, synced, and renamed into place without replacing
 * anything. Returns 0 or -errno (nothing left behind). */
static int write_new(int dirfd, const char *name, mode_t mode, const char *text, int from)
{
	char tmp[NAME_MAX + 1], buf[65536];
	int fd = create_tmp(dirfd, name, mode, tmp, sizeof(tmp)), ret = 0;
	off_t at = 0;
	ssize_t n;

	if (fd < 0)
		return fd;
	if (text)
		ret = put_all(fd, text, strlen(text));
	while (!text && ret == 0 && (n = pread(from, buf, sizeof(buf), at)) != 0) {
		if (n < 0) {
			ret = errno == EINTR ? 0 : -errno;
			continue;
		}
		at += n;
		ret = put_all(fd, buf, (size_t)n);
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0)
		ret = publish(dirfd, tmp, name);
	if (ret < 0)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

static char *sidecar_json(const struct fr_dump_request *req, const struct fr_profile_result *res,
			  const char *profile_name, const char *goroutines_name, uint64_t bytes)
{
	struct fr_ipc_sidecar *sc = calloc(1, sizeof(*sc));
	char *text;

	if (!sc)
		return NULL;
	snprintf(sc->session, sizeof(sc->session), "%s", req->session);
	snprintf(sc->trigger, sizeof(sc->trigger), "%s", req->trigger);
	snprintf(sc->reason, sizeof(sc->reason), "%s", req->reason ? req->reason : "");
	sc->fired_ns = req->fire_ns;
	sc->t0_ns = req->profile->t0;
	sc->t1_ns = req->profile->t1;
	sc->window_ns = req->window_ns;
	sc->after_ns = req->after_ns;
	sc->pid = req->pid;
	if (req->oom) {
		sc->has_victim = 1;
		sc->victim.pid = req->oom->pid;
		snprintf(sc->victim.comm, sizeof(sc->victim.comm), "%s", req->oom->comm);
		snprintf(sc->victim.cgroup, sizeof(sc->victim.cgroup), "%s", req->oom->cgroup);
		sc->victim.rss = req->oom->rss;
	}
	if (req->crash) {
		const char *sig = fr_signal_name(req->crash->signal);

		sc->has_crash = 1;
		sc->crash.pid = req->crash->pid;
		sc->crash.tid = req->crash->tid;
		snprintf(sc->crash.comm, sizeof(sc->crash.comm), "%s", req->crash->comm);
		if (sig)
			snprintf(sc->crash.signal, sizeof(sc->crash.signal), "%s", sig);
		else
			snprintf(sc->crash.signal, sizeof(sc->crash.signal), "%d",
				 req->crash->signal);
		if (req->crash->has_addr)
			snprintf(sc->crash.addr, sizeof(sc->crash.addr), "0x%" PRIx64,
				 req->crash->addr);
	}
	if (req->pressure) {
		sc->has_pressure = 1;
		snprintf(sc->pressure.cgroup, sizeof(sc->pressure.cgroup), "%s",
			 req->pressure->cgroup);
		snprintf(sc->pressure.resource, sizeof(sc->pressure.resource), "%s",
			 fr_pressure_resource_name(req->pressure->resource));
		snprintf(sc->pressure.kind, sizeof(sc->pressure.kind), "%s",
			 req->pressure->full ? "full" : "some");
		sc->pressure.share = req->pressure->share;
		sc->pressure.above = req->pressure->above;
	}
	snprintf(sc->profile, sizeof(sc->profile), "%s", profile_name);
	snprintf(sc->goroutines, sizeof(sc->goroutines), "%s", goroutines_name);
	sc->go_processes = req->go_processes;
	for (uint32_t i = 0; i < res->nevents && i < FR_LIMIT_EVENTS; i++) {
		struct fr_ipc_sidecar_event *ev = &sc->events[sc->nevents++];

		fr_event_format(res->events[i].event, ev->event, sizeof(ev->event));
		ev->hz = res->events[i].hz;
		ev->samples = res->events[i].samples_kept;
		ev->lost = res->events[i].lost;
	}
	sc->samples = res->samples_kept;
	sc->bytes = bytes;
	snprintf(sc->version, sizeof(sc->version), "%s", FR_VERSION);
	text = fr_ipc_sidecar_text(sc);
	free(sc);
	return text;
}

/* Publishes the finished profile at temporary name `tmp` under the first
 * free name of STEM, STEM-2, ... (two dumps fired in the same millisecond
 * each get their own; a leftover sidecar without its profile only moves
 * the name on), then writes its sidecar: retention and readers take a dump
 * by its sidecar. Returns 0 with the profile's name in `name` (NAME_MAX +
 * 1 bytes) and `tmp` consumed, or -errno with the reason in `err`. */
static int publish_dump(int dirfd, const struct fr_dump_request *req, const char *stem,
			const char *tmp, const struct fr_profile_result *res, uint64_t bytes,
			mode_t mode, char *name, char *err, size_t errlen)
{
	char side[NAME_MAX + 1], gor[NAME_MAX + 1];
	char *json;
	int ret;

	for (int i = 1; i <= MAX_SAME; i++) {
		char suffix[16] = "";

		if (i > 1)
			snprintf(suffix, sizeof(suffix), "-%d", i);
		snprintf(name, NAME_MAX + 1, "%s%s" PROFILE_SUFFIX, stem, suffix);
		snprintf(side, sizeof(side), "%s%s" SIDECAR_SUFFIX, stem, suffix);
		snprintf(gor, sizeof(gor), "%s%s" GOROUTINES_SUFFIX, stem, suffix);
		if (faccessat(dirfd, side, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		ret = publish(dirfd, tmp, name);
		if (ret == -EEXIST)
			continue;
		if (ret < 0) {
			fr_set_err(err, errlen, "cannot rename %s/%s into place: %s", req->dir,
				   name, strerror(-ret));
			return ret;
		}
		/* No sidecar of this name can appear once its profile is
		 * published: names are claimed by the profile, in a directory
		 * only this user changes. The goroutines go in before the
		 * sidecar that names them (one that fails is left out, and the
		 * dump keeps its profile). */
		if (req->goroutines_fd >= 0 && req->go_processes &&
		    write_new(dirfd, gor, mode, NULL, req->goroutines_fd) < 0) {
			fr_log_warn("cannot write %s/%s; the dump goes without it", req->dir, gor);
			gor[0] = '\0';
		} else if (req->goroutines_fd < 0 || !req->go_processes) {
			gor[0] = '\0';
		}
		json = sidecar_json(req, res, name, gor, bytes);
		ret = json ? write_new(dirfd, side, mode, json, -1) : -ENOMEM;
		free(json);
		if (ret < 0) {
			fr_set_err(err, errlen, "cannot write %s/%s: %s", req->dir, side,
				   strerror(-ret));
			unlinkat(dirfd, name, 0);
		}
		return ret;
	}
	fr_set_err(err, errlen, "%s holds %d dumps named %s already", req->dir, MAX_SAME, stem);
	return -EEXIST;
}

int fr_dumps_write(struct fr_ring *ring, const struct fr_dump_request *req, char *path,
		   size_t pathlen, char *err, size_t errlen)
{
	char host[128], stamp[32], stem[NAME_MAX - 31], name[NAME_MAX + 1];
	char tmp[NAME_MAX + 1];
	struct fr_profile_result res;
	struct tm tm;
	time_t secs = (time_t)(req->fire_ns / FR_NS_PER_S);
	mode_t mode = req->mode ? req->mode : FR_DUMPS_MODE;
	uint64_t written = 0;
	int dirfd, fd = -1, ret, n;

	err[0] = '\0';
	tmp[0] = '\0';
	if (strchr(req->session, '/') || strchr(req->trigger, '/')) {
		fr_set_err(err, errlen, "session %s: a dump's name cannot hold '/'", req->session);
		return -EINVAL;
	}
	/* Everything below is relative to this one descriptor of the checked
	 * directory: a path swapped or symlinked meanwhile changes nothing. */
	dirfd = fr_dir_open_private(req->dir, 0700, err, errlen);
	if (dirfd < 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		fr_set_err(err, errlen, "refusing the dumps directory: %s", why);
		return dirfd;
	}
	fr_host_name(host, sizeof(host));
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	n = snprintf(stem, sizeof(stem), "%s-%s-%s-%s.%03dZ", req->session, req->trigger, host,
		     stamp, (int)(req->fire_ns / 1000000 % 1000));
	/* Room for "-999", the suffixes and the temporary names' decoration. */
	if (n < 0 || (size_t)n + 32 >= sizeof(stem) ||
	    strlen(req->dir) + (size_t)n + 16 >= pathlen) {
		fr_set_err(err, errlen, "the dump's name is too long for %s", req->dir);
		ret = -ENAMETOOLONG;
		goto err;
	}
	snprintf(name, sizeof(name), "%s" PROFILE_SUFFIX, stem);
	fd = create_tmp(dirfd, name, mode, tmp, sizeof(tmp));
	if (fd < 0) {
		ret = fd;
		fd = -1;
		tmp[0] = '\0';
		fr_set_err(err, errlen, "cannot create a temporary file in %s: %s", req->dir,
			   strerror(-ret));
		goto err;
	}
	ret = fr_profile_write_fd(ring, req->profile, fd, NULL, &res, &written, err, errlen);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (ret < 0) {
		if (!err[0])
			fr_set_err(err, errlen, "cannot write %s/%s: %s", req->dir, name,
				   strerror(-ret));
		goto err;
	}
	close(fd);
	fd = -1;
	ret = publish_dump(dirfd, req, stem, tmp, &res, written, mode, name, err, errlen);
	if (ret < 0)
		goto err;
	tmp[0] = '\0';
	snprintf(path, pathlen, "%s/%s", req->dir, name);
	ret = fr_dumps_retain(dirfd, req->keep, req->max_bytes);
	if (ret < 0)
		fr_log_warn("cannot apply dump retention in %s: %s", req->dir, strerror(-ret));
	close(dirfd);
	return 0;

err:
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlinkat(dirfd, tmp, 0);
	close(dirfd);
	return ret;
}

struct dump_entry {
	char *name; /* the profile's file name */
	struct timespec mtime;
	uint64_t bytes;
};

static int cmp_newest_first(const void *a, const void *b)
{
	const struct dump_entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(y->name, x->name);
}

/* Whether the first `len` bytes of `name` are
 * NAME-...-YYYYMMDDTHHMMSS.mmmZ`suffix`, or the same with "-N" after the Z
 * (a later dump of the same millisecond). */
static int is_dump_name(const char *name, size_t len, const char *suffix)
{
	size_t slen = strlen(suffix);
	const char *stamp, *end;

	if (len < slen + STAMP_LEN + 2 || strncmp(name + len - slen, suffix, slen) != 0)
		return 0;
	end = name + len - slen;
	/* An optional "-N", N in 2..MAX_SAME without leading zeros. */
	for (const char *p = end - 1; p > name && end - p <= 4; p--) {
		if (*p >= '0' && *p <= '9')
			continue;
		if (*p == '-' && p + 1 < end && p[1] != '0')
			end = p;
		break;
	}
	if ((size_t)(end - name) < STAMP_LEN + 2)
		return 0;
	stamp = end - STAMP_LEN;
	if (stamp[-1] != '-' || stamp[8] != 'T' || stamp[15] != '.' || stamp[19] != 'Z')
		return 0;
	for (int i = 0; i < STAMP_LEN - 1; i++)
		if (i != 8 && i != 15 && (stamp[i] < '0' || stamp[i] > '9'))
			return 0;
	return 1;
}

/* The time in a dump's name (`suffix` after its stamp and "-N"), Unix ns.
 * Returns 0, or -EINVAL for a name not a dump's. */
static int stamp_ns(const char *name, const char *suffix, int64_t *ns)
{
	size_t len = strlen(name), slen = strlen(suffix);
	const char *end, *st;
	struct tm tm = {0};
	char buf[STAMP_LEN + 1];

	if (!is_dump_name(name, len, suffix))
		return -EINVAL;
	end = name + len - slen;
	/* Past a "-N" after the stamp (is_dump_name() checked its digits). */
	while (end > name && end[-1] != 'Z')
		end--;
	if ((size_t)(end - name) < STAMP_LEN)
		return -EINVAL;
	st = end - STAMP_LEN;
	memcpy(buf, st, STAMP_LEN);
	buf[STAMP_LEN] = '\0';
	if (sscanf(buf, "%4d%2d%2dT%2d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ns = (int64_t)timegm(&tm) * FR_NS_PER_S + (int64_t)atoi(buf + 16) * 1000000;
	return 0;
}

int fr_dumps_goroutines_at(const char *dir, int64_t at_ns, int *fd, int64_t *taken_ns)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ret = -ENOENT;
	char best[NAME_MAX + 1] = "";
	int64_t best_ns = INT64_MIN, ns;
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (dfd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d)))
		if (stamp_ns(de->d_name, GOROUTINES_SUFFIX, &ns) == 0 && ns <= at_ns &&
		    ns > best_ns) {
			best_ns = ns;
			snprintf(best, sizeof(best), "%s", de->d_name);
		}
	if (best[0]) {
		*fd = openat(dirfd(d), best, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		ret = *fd < 0 ? -errno : 0;
		if (ret == 0 && (fstat(*fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(*fd);
			ret = -ENOENT;
		}
		*taken_ns = best_ns;
	}
	closedir(d);
	return ret;
}

static int is_dump_profile(const char *name)
{
	return is_dump_name(name, strlen(name), PROFILE_SUFFIX);
}

/* Whether `name` is a dump's temporary file (create_tmp): "." + a dump's
 * profile or sidecar name + "." + 12 hex digits. */
static int is_dump_temp(const char *name)
{
	size_t len = strlen(name);

	if (name[0] != '.' || len < 1 + 13 || name[len - 13] != '.')
		return 0;
	for (size_t i = len - 12; i < len; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return is_dump_name(name + 1, len - 14, PROFILE_SUFFIX) ||
	       is_dump_name(name + 1, len - 14, SIDECAR_SUFFIX) ||
	       is_dump_name(name + 1, len - 14, GOROUTINES_SUFFIX);
}

/* Whether `name` in `dirfd` is a regular file (a symlink is not). */
static int is_regular(int dirfd, const char *name, struct stat *st)
{
	return fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode);
}

int fr_dumps_retain(int dirfd, uint32_t keep, uint64_t max_bytes)
{
	struct dump_entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	int removed = 0, ret = 0;
	/* Its own descriptor: readdir moves the offset, and closedir closes. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while ((de = readdir(d))) {
		char side[NAME_MAX + 1];
		struct stat st, sst;
		size_t len;

		/* What a dump killed half-way (the recorder stopped, the machine
		 * crashed) left: nobody will rename it any more. A dump being
		 * written touches its file far more often than this. */
		if (is_dump_temp(de->d_name)) {
			if (is_regular(dirfd, de->d_name, &st) &&
			    st.st_mtim.tv_sec + STALE_TEMP_S < time(NULL))
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (!is_dump_profile(de->d_name))
			continue;
		len = strlen(de->d_name) - strlen(PROFILE_SUFFIX);
		snprintf(side, sizeof(side), "%.*s" SIDECAR_SUFFIX, (int)len, de->d_name);
		if (!is_regular(dirfd, de->d_name, &st) || !is_regular(dirfd, side, &sst))
			continue;
		if (FR_GROW(v, &cap, n + 1, 64) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		v[n].name = strdup(de->d_name);
		if (!v[n].name) {
			ret = -ENOMEM;
			goto out;
		}
		v[n].mtime = st.st_mtim;
		v[n].bytes = (uint64_t)st.st_size;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_newest_first);
	for (size_t i = 0; i < n; i++) {
		char side[NAME_MAX + 1];
		size_t len = strlen(v[i].name) - strlen(PROFILE_SUFFIX);

		total += v[i].bytes;
		/* The newest dump always stays, whatever its size. */
		if (i < keep && (i == 0 || !max_bytes || total <= max_bytes))
			continue;
		/* unlinkat never follows a symlink: it removes the name. */
		if (unlinkat(dirfd, v[i].name, 0) < 0 && errno != ENOENT) {
			ret = -errno;
			continue;
		}
		snprintf(side, sizeof(side), "%.*s" SIDECAR_SUFFIX, (int)len, v[i].name);
		unlinkat(dirfd, side, 0);
		snprintf(side, sizeof(side), "%.*s" GOROUTINES_SUFFIX, (int)len, v[i].name);
		unlinkat(dirfd, side, 0);
		removed++;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	closedir(d);
	return ret < 0 ? ret : removed;
}
