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
	char line[512];
	int found = 0;

	if (!f)
		return -errno;
	memset(fmt, 0, sizeof(*fmt));
	while (fgets(line, sizeof(line), f)) {
		const char *decl = strstr(line, "\tfield:"), *semi, *name, *end, *o, *s;
		unsigned off, size;
		size_t nlen;

		/* Continuation chunks of the long "print fmt" line never start
		 * with a tab and "field:". */
		if (decl != line)
			continue;
		semi = strchr(decl, ';');
		o = semi ? strstr(semi, "offset:") : NULL;
		s = semi ? strstr(semi, "size:") : NULL;
		if (!o || !s || sscanf(o, "offset:%u", &off) != 1 ||
		    sscanf(s, "size:%u", &size) != 1)
			continue;
		end = semi;
		if (end > decl && end[-1] == ']') /* "char prev_comm[16]" */
			while (end > decl && *end != '[')
				end--;
		name = end;
		while (name > decl && name[-1] != ' ')
			name--;
		nlen = (size_t)(end - name);
		if (nlen == 10 && memcmp(name, "prev_state", 10) == 0 && (size == 4 || size == 8)) {
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
	fr_log_info("mounted tracefs at /sys/kernel/tracing for the sched:sched_switch tracepoint");
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
