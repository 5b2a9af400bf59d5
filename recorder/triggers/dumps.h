/* Dumps: profiles a session writes on its own when a trigger fires (or
 * when asked with `flightrec dump --session NAME`), kept in one directory.
 *
 * Each dump is two files in the dumps directory:
 *
 *   SESSION-TRIGGER-HOST-YYYYMMDDTHHMMSS.mmmZ.pb.gz    the gzip'ed pprof
 *   SESSION-TRIGGER-HOST-YYYYMMDDTHHMMSS.mmmZ.json     what fired
 *
 * and, when the session's targets ran Go programs at the trigger, a third:
 *
 *   SESSION-...mmmZ.goroutines.pb.gz   every goroutine of each of them
 *                                      (recorder/requests/goroutines.h)
 *
 * TRIGGER is signal, cpu_above, exit, oom, crash, pressure or manual; the time is when it fired
 * (UTC). A second dump of the same session, trigger and millisecond is
 * STEM-2 (then -3, ...): a dump never replaces a file. The sidecar is one JSON object:
 *
 *   {"session": "db", "trigger": "cpu_above", "reason": "...",
 *    "fired_ns": N, "t0_ns": N, "t1_ns": N, "window_ns": N, "after_ns": N,
 *    "pid": N (exit and oom triggers), "profile": "FILE.pb.gz",
 *    "victim": {"pid": N, "comm": "...", "cgroup": "...", "rss": N} (oom),
 *    "crash": {"pid": N, "tid": N, "comm": "...", "signal": "SIGSEGV",
 *              "addr": "0x10"} (crash),
 *    "pressure": {"resource": "cpu", "kind": "some", "share": 42.3,
 *                 "above": 10} (pressure: percent of wall time),
 *    "goroutines": "FILE.goroutines.pb.gz", "go_processes": N (when kept),
 *    "events": [{"event": "cpu", "hz": 99, "samples": N, "lost": N}],
 *    "samples": N, "bytes": N, "version": "0.1.0"}
 *
 * The directory is opened once per dump (fr_dir_open_private: created
 * 0700 when missing, never through a symlink, refused unless owned by the
 * recorder's user and not writable by group or others), and every file
 * operation is relative to that descriptor. Both files are written to
 * random temporary names (".NAME.XXXXXXXXXXXX", O_CREAT|O_EXCL|O_NOFOLLOW,
 * mode `mode`) and renamed into place without replacing anything
 * (RENAME_NOREPLACE), the profile first, so a reader never sees half a
 * dump. Retention then removes the oldest dumps (both files) until at
 * most `keep` remain and their profiles take at most `max_bytes` (0: no
 * byte limit), and removes temporary files of dumps that died half-way
 * (untouched for an hour); a dump's goroutines go with it. Only regular files named like dumps (or their
 * temporary files) are ever removed, by name (unlinkat), never through a
 * symlink.
 */
#ifndef FR_RECORDER_DUMPS_H
#define FR_RECORDER_DUMPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/query/profile.h"

struct fr_ring;
struct fr_trigger_oom;
struct fr_trigger_crash;
struct fr_trigger_pressure_hit;

/* The mode of dump files unless configured (dumps.mode): they name
 * commands, threads and files of every user. */
#define FR_DUMPS_MODE 0600

struct fr_dump_request {
	const char *dir;    /* the dumps directory (created 0700) */
	uint32_t keep;	    /* at least 1 */
	uint64_t max_bytes; /* 0: no limit */
	mode_t mode;	    /* of both files; 0: FR_DUMPS_MODE */
	const char *session;
	const char *trigger; /* "signal", "cpu_above", "exit", "manual" */
	const char *reason;
	int64_t fire_ns;
	int64_t window_ns, after_ns;
	uint32_t pid;					/* exit, oom: the process; else 0 */
	const struct fr_trigger_oom *oom;		/* oom: the victim; else NULL */
	const struct fr_trigger_crash *crash;		/* crash: the process; else NULL */
	const struct fr_trigger_pressure_hit *pressure; /* pressure: what fired; else NULL */
	const struct fr_profile_request *profile;	/* window, events, targets */
	/* The goroutines of the Go programs among the targets at the trigger
	 * (a gzip'ed pprof, read from its start), or -1; of go_processes. */
	int goroutines_fd;
	uint32_t go_processes;
};

/* Writes the dump of `req` from `ring` (profile through io_uring, then the
 * sidecar), then applies retention. Returns 0 with the profile's path in
 * `path`, or -errno with a one-line message in `err` (a refused directory
 * says why: a symlink, its owner's uid, its mode bits); a failed dump
 * leaves no file. Safe to call from several threads at once: each call
 * gets its own names. */
int fr_dumps_write(struct fr_ring *ring, const struct fr_dump_request *req, char *path,
		   size_t pathlen, char *err, size_t errlen);

/* The newest goroutines file of the dumps in `dir` taken at or before
 * `at_ns` (by the time in its name), opened read-only (never through a
 * symlink) into *fd, with that time in *taken_ns. Returns 0, -ENOENT
 * (none) or -errno. */
int fr_dumps_goroutines_at(const char *dir, int64_t at_ns, int *fd, int64_t *taken_ns);

/* Removes the oldest dumps in directory `dirfd` beyond `keep` and
 * `max_bytes`. Returns the number of dumps removed, or -errno. */
int fr_dumps_retain(int dirfd, uint32_t keep, uint64_t max_bytes);

#endif
