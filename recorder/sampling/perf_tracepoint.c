/* The sched:sched_switch tracepoint offcpu's perf mechanism samples: its
 * id for attr.config and where its format puts prev_state, read from
 * tracefs, which is mounted when a machine that never used tracing has
 * the directory but not the file system.
 */
#include "recorder/sampling/perf_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "recorder/sampling/tp_format.h"

/* tracefs where it is mounted today, then where older systems had it. */
static const char *const tracefs_roots[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

/* Reads one line of a small file; returns 0 or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	return ret;
}

/* Finds prev_state in the tracepoint's format file ("\tfield:long
 * prev_state;\toffset:40;\tsize:8;\tsigned:1;" lines): the layout differs
 * between kernel versions and configurations, so offsets are never assumed.
 * The task leaving is the sample's own tid, so nothing else is needed. */
static int read_switch_format(const char *path, struct switch_format *fmt)
{
	FILE *f = fopen(path, "re");
	char line[FR_TP_LINE_MAX], name[64];
	int found = 0, data_loc;
	uint32_t off, size;

	if (!f)
		return -errno;
	memset(fmt, 0, sizeof(*fmt));
	while (fgets(line, sizeof(line), f)) {
		if (fr_tp_field(line, name, sizeof(name), &off, &size, &data_loc) < 0)
			continue;
		if (strcmp(name, "prev_state") == 0 && (size == 4 || size == 8) && off < 4096) {
			fmt->prev_state = off;
			fmt->prev_state_size = size;
			fmt->min_size = off + size;
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -EPROTO;
}

/* Mounts tracefs at its usual place when nothing is mounted there (as
 * perf does): a machine that never used tracing has the directory but not
 * the file system. Returns 0 when it mounted it, -errno otherwise. */
static int mount_tracefs(void)
{
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0)
		return -EEXIST; /* mounted; the tracepoint is missing */
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return -errno;
	fr_log_info("mounted tracefs at /sys/kernel/tracing for its tracepoints");
	return 0;
}

static int find_sched_switch_once(uint64_t *id, struct switch_format *fmt, char *err,
				  size_t errlen);

int fr_perf_find_sched_switch(uint64_t *id, struct switch_format *fmt, char *err, size_t errlen)
{
	int ret = find_sched_switch_once(id, fmt, err, errlen), m;

	if (ret != -ENOENT)
		return ret;
	m = mount_tracefs();
	if (m == 0)
		return find_sched_switch_once(id, fmt, err, errlen);
	if (m != -EEXIST)
		fr_set_err(
			err, errlen,
			"offcpu: the sched:sched_switch tracepoint is not available (tracefs is not "
			"mounted and mounting it at /sys/kernel/tracing failed: %s)",
			fr_errno_name(-m));
	return ret;
}

static int find_sched_switch_once(uint64_t *id, struct switch_format *fmt, char *err, size_t errlen)
{
	char path[128], buf[64], first[128] = "";
	int first_err = 0;

	for (size_t i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		char *end;
		int ret;

		snprintf(path, sizeof(path), "%s/events/sched/sched_switch/id", tracefs_roots[i]);
		ret = read_line(path, buf, sizeof(buf));
		if (ret < 0) {
			/* The first place is where tracefs belongs; say that. */
			if (!first_err) {
				first_err = -ret;
				snprintf(first, sizeof(first), "%s", path);
			}
			continue;
		}
		*id = strtoull(buf, &end, 10);
		if (end == buf) {
			fr_set_err(err, errlen, "offcpu: %s does not hold a tracepoint id", path);
			return -EPROTO;
		}
		snprintf(path, sizeof(path), "%s/events/sched/sched_switch/format",
			 tracefs_roots[i]);
		ret = read_switch_format(path, fmt);
		if (ret < 0) {
			fr_set_err(
				err, errlen,
				"offcpu: cannot read the layout of sched:sched_switch from %s (%s)",
				path, ret == -EPROTO ? "prev_state missing" : fr_errno_name(-ret));
			return ret;
		}
		return 0;
	}
	fr_set_err(err, errlen,
		   "offcpu: the sched:sched_switch tracepoint is not available "
		   "(cannot read %s: %s)",
		   first, fr_errno_name(first_err));
	return -first_err;
}

/* Reads at most `len` - 1 bytes of a tracefs file (which says size 0, so
 * it is read until its end or the buffer is full), NUL-terminated.
 * Returns the length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

static int find_oom_once(uint64_t *id, struct fr_oom_format *fmt, char *err, size_t errlen)
{
	char path[128], buf[64], text[16384];
	int first_err = 0;

	for (size_t i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		char *end;
		ssize_t n;
		int ret;

		snprintf(path, sizeof(path), "%s/events/oom/mark_victim/id", tracefs_roots[i]);
		ret = read_line(path, buf, sizeof(buf));
		if (ret < 0) {
			first_err = first_err ? first_err : -ret;
			continue;
		}
		*id = strtoull(buf, &end, 10);
		if (end == buf) {
			fr_set_err(err, errlen, "oom: %s does not hold a tracepoint id", path);
			return -EPROTO;
		}
		snprintf(path, sizeof(path), "%s/events/oom/mark_victim/format", tracefs_roots[i]);
		n = read_small(path, text, sizeof(text));
		ret = n < 0 ? (int)n : fr_oom_format_parse(text, (size_t)n, fmt);
		if (ret < 0) {
			fr_set_err(err, errlen,
				   "oom: cannot read the layout of oom:mark_victim from %s (%s)",
				   path, ret == -EPROTO ? "no pid field" : fr_errno_name(-ret));
			return ret;
		}
		return 0;
	}
	fr_set_err(err, errlen,
		   "oom: the oom:mark_victim tracepoint is not available (cannot read "
		   "/sys/kernel/tracing/events/oom/mark_victim/id: %s)",
		   fr_errno_name(first_err));
	return -first_err;
}

int fr_perf_find_oom(uint64_t *id, struct fr_oom_format *fmt, char *err, size_t errlen)
{
	int ret = find_oom_once(id, fmt, err, errlen);

	if (ret == -ENOENT && mount_tracefs() == 0)
		ret = find_oom_once(id, fmt, err, errlen);
	return ret;
}
