/* Dumps written by triggers: a profile and its sidecar in the dumps
 * directory, then retention.
 *
 * A dump is recognised by its pair of names: STEM.pb.gz next to
 * STEM.json, STEM ending in a UTC time "YYYYMMDDTHHMMSS.mmmZ". Retention
 * touches nothing else, so a dumps directory shared with other files (or
 * pointed at the wrong place) loses only dumps.
 */
#include "recorder/dumps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/sample.h"
#include "core/uring.h"
#include "fr_version.h"
#include "ipc/proto.h"

#define PROFILE_SUFFIX ".pb.gz"
#define SIDECAR_SUFFIX ".json"
/* "YYYYMMDDTHHMMSS.mmmZ" */
#define STAMP_LEN 20

/* Writes all of `text` to a new file `tmp` and renames it to `path`.
 * Returns 0 or -errno. */
static int write_small(const char *tmp, const char *path, const char *text)
{
	size_t len = strlen(text), off = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ret = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0)
		unlink(tmp);
	return ret;
}

static char *sidecar_json(const struct fr_dump_request *req, const struct fr_profile_result *res,
			  const char *profile_name, uint64_t bytes)
{
	cJSON *o = cJSON_CreateObject(), *events;
	char name[FR_EVENT_NAME_MAX];
	char *text = NULL;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "session", req->session);
	cJSON_AddStringToObject(o, "trigger", req->trigger);
	cJSON_AddStringToObject(o, "reason", req->reason ? req->reason : "");
	fr_ipc_add_int(o, "fired_ns", req->fire_ns);
	fr_ipc_add_int(o, "t0_ns", req->profile->t0);
	fr_ipc_add_int(o, "t1_ns", req->profile->t1);
	fr_ipc_add_int(o, "window_ns", req->window_ns);
	fr_ipc_add_int(o, "after_ns", req->after_ns);
	if (req->pid)
		fr_ipc_add_int(o, "pid", req->pid);
	cJSON_AddStringToObject(o, "profile", profile_name);
	events = cJSON_AddArrayToObject(o, "events");
	for (uint32_t i = 0; events && i < res->nevents; i++) {
		cJSON *ev = cJSON_CreateObject();

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
		cJSON_AddStringToObject(ev, "event",
					fr_event_format(res->events[i].event, name, sizeof(name)));
		fr_ipc_add_int(ev, "hz", res->events[i].hz);
		fr_ipc_add_int(ev, "samples", (int64_t)res->events[i].samples_kept);
		fr_ipc_add_int(ev, "lost", (int64_t)res->events[i].lost);
	}
	fr_ipc_add_int(o, "samples", (int64_t)res->samples_kept);
	fr_ipc_add_int(o, "bytes", (int64_t)bytes);
	cJSON_AddStringToObject(o, "version", FR_VERSION);
	text = cJSON_Print(o);
	cJSON_Delete(o);
	return text;
}

int fr_dumps_write(struct fr_ring *ring, const struct fr_dump_request *req, char *path,
		   size_t pathlen, char *err, size_t errlen)
{
	char host[128], stamp[32], stem[3072], tmp[3200], side[3200], side_tmp[3300];
	struct fr_profile_result res;
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = NULL;
	struct tm tm;
	time_t secs = (time_t)(req->fire_ns / 1000000000);
	char *json = NULL;
	const char *base;
	int fd = -1, ret, n;

	err[0] = '\0';
	ret = fr_mkdir_p(req->dir, 0700, err, errlen);
	if (ret < 0)
		return ret;
	fr_host_name(host, sizeof(host));
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	n = snprintf(stem, sizeof(stem), "%s/%s-%s-%s-%s.%03dZ", req->dir, req->session,
		     req->trigger, host, stamp, (int)(req->fire_ns / 1000000 % 1000));
	if (n < 0 || (size_t)n >= sizeof(stem) || (size_t)n + 8 >= pathlen) {
		fr_set_err(err, errlen, "the dump's name is too long for %s", req->dir);
		return -ENAMETOOLONG;
	}
	snprintf(path, pathlen, "%s" PROFILE_SUFFIX, stem);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(side, sizeof(side), "%s" SIDECAR_SUFFIX, stem);
	snprintf(side_tmp, sizeof(side_tmp), "%s.tmp", side);

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return ret;
	}
	w = malloc(sizeof(*w));
	ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;
	if (ret < 0) {
		fr_set_err(err, errlen, "cannot set up the output of %s: %s", path, strerror(-ret));
		goto err;
	}
	fr_uring_writer_init(w, uring, fd);
	ret = fr_profile_write(ring, req->profile, fr_uring_writer_write, w, &res, err, errlen);
	if (ret == 0)
		ret = fr_uring_writer_flush(w);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (ret < 0) {
		if (!err[0])
			fr_set_err(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		goto err;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot rename %s into place: %s", tmp, strerror(errno));
		goto err;
	}
	base = strrchr(path, '/');
	json = sidecar_json(req, &res, base ? base + 1 : path, w->written);
	ret = json ? write_small(side_tmp, side, json) : -ENOMEM;
	if (ret < 0) {
		fr_set_err(err, errlen, "cannot write %s: %s", side, strerror(-ret));
		unlink(path);
		goto err;
	}
	free(json);
	fr_uring_close(uring);
	free(w);
	ret = fr_dumps_retain(req->dir, req->keep, req->max_bytes);
	if (ret < 0)
		fr_log_warn("cannot apply dump retention in %s: %s", req->dir, strerror(-ret));
	return 0;

err:
	free(json);
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	fr_uring_close(uring);
	free(w);
	return ret;
}

struct dump_entry {
	char *stem; /* path without suffix */
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
	return strcmp(y->stem, x->stem);
}

/* Whether `name` is NAME-...-YYYYMMDDTHHMMSS.mmmZ.pb.gz. */
static int is_dump_profile(const char *name)
{
	size_t len = strlen(name), slen = strlen(PROFILE_SUFFIX);
	const char *stamp;

	if (len < slen + STAMP_LEN + 2 || strcmp(name + len - slen, PROFILE_SUFFIX) != 0)
		return 0;
	stamp = name + len - slen - STAMP_LEN;
	if (stamp[-1] != '-' || stamp[8] != 'T' || stamp[15] != '.' || stamp[19] != 'Z')
		return 0;
	for (int i = 0; i < STAMP_LEN - 1; i++)
		if (i != 8 && i != 15 && (stamp[i] < '0' || stamp[i] > '9'))
			return 0;
	return 1;
}

int fr_dumps_retain(const char *dir, uint32_t keep, uint64_t max_bytes)
{
	DIR *d = opendir(dir);
	struct dump_entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	int removed = 0, ret = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char p[4200], side[4200];
		struct stat st;
		size_t len;

		if (!is_dump_profile(de->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		len = strlen(p) - strlen(PROFILE_SUFFIX);
		snprintf(side, sizeof(side), "%.*s" SIDECAR_SUFFIX, (int)len, p);
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode) || access(side, F_OK) < 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct dump_entry *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				ret = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = ncap;
		}
		v[n].stem = strndup(p, len);
		if (!v[n].stem) {
			ret = -ENOMEM;
			goto out;
		}
		v[n].mtime = st.st_mtim;
		v[n].bytes = (uint64_t)st.st_size;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_newest_first);
	for (size_t i = 0; i < n; i++) {
		char p[4200];

		total += v[i].bytes;
		/* The newest dump always stays, whatever its size. */
		if (i < keep && (i == 0 || !max_bytes || total <= max_bytes))
			continue;
		snprintf(p, sizeof(p), "%s" PROFILE_SUFFIX, v[i].stem);
		if (unlink(p) < 0 && errno != ENOENT) {
			ret = -errno;
			continue;
		}
		snprintf(p, sizeof(p), "%s" SIDECAR_SUFFIX, v[i].stem);
		unlink(p);
		removed++;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].stem);
	free(v);
	closedir(d);
	return ret < 0 ? ret : removed;
}
