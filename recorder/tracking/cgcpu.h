/* Cgroup CPU throttling: the parsers of the files it is read from, and
 * the once-a-second reader the memory sampler (memsample.h) runs beside
 * its RSS reads, which turns cpu.stat's throttled time into
 * FR_EVENT_THROTTLED samples (core/store/sample.h).
 *
 * Which hierarchy: cgroup v2 when its root's cgroup.controllers lists
 * "cpu" (cpu.stat: nr_periods, nr_throttled, throttled_usec), else the
 * v1 hierarchy with the cpu controller (cpu.stat: nr_periods,
 * nr_throttled, throttled_time in ns); both found in the recorder's
 * /proc/self/mountinfo. A process's cgroup is the matching line of
 * /proc/PID/cgroup ("0::PATH", or "N:LIST:PATH" with "cpu" in LIST).
 *
 * Everything read is another user's to shape (a cgroup can be named by
 * whoever may create one): a path must be absolute, shorter than
 * FR_LIMIT_CGROUP_LEN, without "." or ".." components, empty components
 * or control characters; cpu.stat is opened O_NONBLOCK | O_NOFOLLOW
 * under the mount only; every read is one bounded buffer.
 *
 * Bounds: at most FR_CGCPU_MAX cgroups remembered (path -> last counters;
 * one not seen for FR_CGCPU_FORGET_TICKS ticks is forgotten, and when
 * full the one seen longest ago makes room), at most FR_CGCPU_PIDS
 * /proc/PID/cgroup reads and FR_CGCPU_READS cpu.stat reads a tick (many
 * processes of one cgroup: one read), and the caller's deadline.
 */
#ifndef FR_RECORDER_CGCPU_H
#define FR_RECORDER_CGCPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/limits.h"

#define FR_CGCPU_MAX 256
#define FR_CGCPU_PIDS 512
#define FR_CGCPU_READS 64
#define FR_CGCPU_FORGET_TICKS 60
/* The longest mount point of a hierarchy accepted. */
#define FR_CGCPU_ROOT_MAX 192

/* What cpu.stat says of throttling, in one unit whatever the version. */
struct fr_cpu_stat {
	uint64_t nr_periods, nr_throttled;
	uint64_t throttled_ns;
};

/* Parses the `len` bytes of a cpu.stat (not NUL-terminated) of cgroup
 * v2 (`v1` 0: throttled_usec) or v1 (throttled_time, ns). Lines other
 * than the three are ignored. Returns 0, or -EPROTO without a throttled
 * time line or with a value that is not a decimal number. */
int fr_cpu_stat_parse(const char *buf, size_t len, int v1, struct fr_cpu_stat *out);

/* Whether `path` is a cgroup path read may follow (the rules above). */
int fr_cgroup_path_ok(const char *path);

/* Finds in the `len` bytes of a /proc/PID/cgroup the process's cgroup:
 * the "0::" line (`v1` 0) or the v1 line whose controller list has
 * "cpu" (`v1` 1), into `dst` (`dstlen` bytes). Only whole lines
 * (newline-terminated) count. Returns 0, -ENOENT without such a line,
 * -EINVAL for a path fr_cgroup_path_ok() refuses or that does not fit. */
int fr_proc_cgroup_parse(const char *buf, size_t len, int v1, char *dst, size_t dstlen);

/* What one line of /proc/self/mountinfo (NUL-terminated, with or
 * without its newline) mounts: 2 the cgroup2 hierarchy, 1 a v1 hierarchy
 * with the cpu controller (its super options list "cpu"), 0 anything
 * else or a mount point that is not absolute, has escapes or is
 * FR_CGCPU_ROOT_MAX long; the mount point into `dst` for 1 and 2. */
int fr_mountinfo_cgroup(const char *line, char *dst, size_t dstlen);

struct fr_cgcpu;

struct fr_cgcpu_stats {
	uint64_t cgroups;  /* remembered now */
	uint64_t reads;	   /* cpu.stat reads */
	uint64_t failures; /* cgroup and cpu.stat reads that failed or
			    * were refused (hostile or too long a path) */
	uint64_t skipped;  /* past a tick's bounds or deadline */
	uint64_t samples;
};

/* One throttled sample: `pid` one process of the cgroup that ran. */
struct fr_cgcpu_sample {
	int64_t time_ns; /* Unix ns, when read */
	uint32_t pid;
	uint64_t throttled_ns; /* since the cgroup's last read */
	uint64_t periods;      /* nr_throttled's growth, same span */
};

/* Finds the hierarchy with the cpu controller from `proc`/self/mountinfo
 * (`proc` "/proc") and allocates the table. Returns 0, or -ENOENT (no
 * hierarchy has the cpu controller) / -ENOMEM with why in `err`. */
int fr_cgcpu_new(struct fr_cgcpu **out, const char *proc, char *err, size_t errlen);

void fr_cgcpu_free(struct fr_cgcpu *c);

/* "cgroup v2 at /sys/fs/cgroup" or "cgroup v1 at /sys/fs/cgroup/cpu". */
const char *fr_cgcpu_where(const struct fr_cgcpu *c);

/* One tick (the caller's thread; reads /proc and cpu.stat): the cgroups
 * of `pids` (processes that ran in the last second), each read once, and
 * those read last tick for the last time (their processes stopped or
 * ended: the rest of their throttling), and a sample into `out` (room
 * for `room`) for each whose throttled time grew since its last read. Stops at `deadline_mono` (CLOCK_MONOTONIC
 * ns). Returns the samples written. */
uint32_t fr_cgcpu_tick(struct fr_cgcpu *c, const uint32_t *pids, uint32_t npids,
		       int64_t deadline_mono, struct fr_cgcpu_sample *out, uint32_t room);

/* Any thread (relaxed atomics). */
void fr_cgcpu_stats(const struct fr_cgcpu *c, struct fr_cgcpu_stats *out);

#endif
