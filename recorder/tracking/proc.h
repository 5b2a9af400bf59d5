/* The recorder's readers of /proc: what a process is called, who runs it,
 * where it lives (cgroup v2) and how much CPU it used, and the machine's
 * CPU counters. The tracker and the trigger engine both read processes
 * through here, so a file of /proc is parsed in one place.
 *
 * Every reader takes the proc root (`proc`, "/proc" on a live machine) so
 * tests can point it at a tree of their own. Each reads at most a few
 * kilobytes with one read(2) (fgets line by line for cgroup and
 * mountinfo), never follows what a process controls, and answers -ENOENT
 * for a process that is gone: a pid vanishes between any two reads.
 *
 * Thread-safe: no state.
 */
#ifndef FR_RECORDER_PROC_H
#define FR_RECORDER_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "core/util/limits.h"

/* What /proc/PID/stat says, up to starttime. */
struct fr_proc_stat {
	char comm[FR_LIMIT_COMM_LEN]; /* cut to 15 bytes */
	char state;		      /* 'R', 'S', 'Z', ... */
	uint32_t ppid;
	uint64_t ticks; /* utime + stime, clock ticks */
	uint64_t start; /* starttime, clock ticks after boot */
	int fields;	/* the last field parsed: 2 (comm) .. 22 */
};

/* Reads at most `len` - 1 bytes of `path` with one read, NUL-terminated.
 * Returns the length or -errno. */
ssize_t fr_proc_read_text(const char *path, char *buf, size_t len);

/* Reads the cgroup v2 path of `pid` from `proc`/PID/cgroup (the line
 * "0::PATH"; v1 hierarchies have other numbers) into `dst`, cut to `len`.
 * The path is relative to the root of the reader's cgroup namespace.
 * Returns 0, or -ENOENT when the process is gone or has no v2 line (a
 * v1-only machine); `dst` is then unchanged. */
int fr_proc_read_cgroup(const char *proc, uint32_t pid, char *dst, size_t len);

/* Reads the real uid of `pid` from `proc`/PID/status into *uid. Returns 0,
 * or -ENOENT when the process is gone (*uid unchanged). */
int fr_proc_read_uid(const char *proc, uint32_t pid, uint32_t *uid);

/* Reads the name of `pid` (`tid` 0) or of its thread `tid` from
 * `proc`/PID/comm or `proc`/PID/task/TID/comm into `dst` (`len` bytes,
 * cut to fit), without the newline the kernel ends it with; a newline
 * inside the name (anyone may name a process so) is kept. Returns 0, or
 * -errno (-ENOENT: gone or empty); `dst` is then unchanged. */
int fr_proc_read_comm(const char *proc, uint32_t pid, uint32_t tid, char *dst, size_t len);

struct fr_targets;

/* Whether process `pid` has one of the command names, the cgroup (or one
 * below it) and the real uid that `t` asks for (its pids are not looked
 * at). Returns 1 or 0 (not, or gone). */
int fr_proc_matches(const char *proc, uint32_t pid, const struct fr_targets *t);

/* Parses `proc`/PID/stat into *ps. The name may hold spaces and
 * parentheses, so fields are counted from the last ')'. Returns 0 when
 * every field up to starttime was there; -EPROTO when the line stops
 * early or is not as the kernel writes it (ps->fields says how far it got:
 * 0 when there is no name in parentheses); another -errno when the file
 * cannot be read. */
int fr_proc_read_stat(const char *proc, uint32_t pid, struct fr_proc_stat *ps);

/* Busy and total ticks of all CPUs from the first line of `proc`/stat;
 * busy is everything but idle and iowait. Returns 0, -EPROTO for a line
 * that is not "cpu " and eight numbers, or -errno. */
int fr_proc_read_machine(const char *proc, uint64_t *busy, uint64_t *total);

/* Where cgroup2 is mounted, from `proc`/self/mountinfo: /sys/fs/cgroup
 * on unified machines, /sys/fs/cgroup/unified on hybrid ones;
 * "/sys/fs/cgroup" when mountinfo says nothing. */
void fr_proc_cgroup_root(const char *proc, char *dst, size_t len);

/* Reads usage_usec of cgroup `cgroup` from ROOT/CGROUP/cpu.stat, `root`
 * being where cgroup2 is mounted. Returns 0, -EPROTO without that line,
 * or -errno. */
int fr_proc_read_cgroup_usage(const char *root, const char *cgroup, uint64_t *usec);

/* Calls `fn` for every process directory of `proc` (a name of digits
 * only, not 0), in the order readdir gives them. Returns the number of
 * calls, or -errno when `proc` cannot be listed. */
int fr_proc_each_pid(const char *proc, void (*fn)(void *arg, uint32_t pid), void *arg);

/* Opens what process `pid` maps at [start, end) for reading: the mapped
 * inode through /proc/PID/map_files, else `path` under /proc/PID/root,
 * else `path` (both with fr_open_untrusted(); not with `path` NULL: the
 * mapped inode or nothing); a regular file of at most
 * `max` bytes, never a FIFO or a device, never through a symbolic link
 * the path's owner planted. The caller checks it is the file it wanted
 * (its build id or inode). Returns the descriptor (and *st when st is not
 * NULL) or -errno. */
int fr_proc_open_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path, uint64_t max,
			struct stat *st);

#endif
