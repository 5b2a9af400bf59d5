/* Build ids of mapped files, read on a thread of their own.
 *
 * The tracker needs a mapping's build id when the kernel did not put it
 * in the MMAP2 record (mappings learned from /proc at start-up, a first
 * page that was not in memory). Reading it means opening a file another
 * user may control: a FIFO put at a deleted library's path, a file on a
 * FUSE mount that never answers. So the ingest thread never reads one: it
 * asks here and takes the answer at a later seal; a chunk sealed before
 * the answer carries the mapping without a build id.
 *
 * The file read is the mapped inode itself, through
 * /proc/PID/map_files/START-END, whatever is at its path now; only when
 * that is gone (the process exited, the range was unmapped) the path under
 * /proc/PID/root and then the path, opened with fr_open_untrusted().
 *
 * A read that does not return within a few seconds is given up, so one
 * such file does not hold back the build ids of every later mapping.
 *
 * Thread-safe between the one thread that asks and takes and the readers.
 */
#ifndef FR_RECORDER_BUILDIDS_H
#define FR_RECORDER_BUILDIDS_H

#include <stdint.h>

#include "core/store/chunk.h"

/* Requests waiting beyond this are refused (-EAGAIN) and asked again. */
#define FR_BUILDIDS_MAX_PENDING 4096

struct fr_buildids;

struct fr_buildid_result {
	char *path;  /* the path asked about; the caller frees it */
	int err;     /* 0, or why there is no build id (-errno) */
	uint8_t len; /* 0: none */
	uint8_t id[FR_BUILD_ID_MAX];
};

/* Starts the reader thread. Returns NULL on failure (errno set). */
struct fr_buildids *fr_buildids_new(void);

/* Stops the reader. A read in progress is waited for at most a second; a
 * reader stuck longer (a file that never answers) is left behind, and
 * frees what it owns when its read returns. Accepts NULL. */
void fr_buildids_free(struct fr_buildids *b);

/* How long a read may take before it is given up (default 5 s): its
 * request is answered -ETIMEDOUT and a new reader serves the rest, at
 * most 8 readers being left behind at once. */
void fr_buildids_set_stuck(struct fr_buildids *b, int64_t ns);

/* Asks for the build id of `path`, mapped by `pid` at [start, end).
 * Returns 0, -EAGAIN when FR_BUILDIDS_MAX_PENDING requests wait, or
 * -ENOMEM. */
int fr_buildids_request(struct fr_buildids *b, uint32_t pid, uint64_t start, uint64_t end,
			const char *path);

/* Hands back one answer, oldest first, without waiting: returns 1 and
 * fills *out, or 0 when there is none. */
int fr_buildids_take(struct fr_buildids *b, struct fr_buildid_result *out);

/* Waits until every request asked so far is answered. Returns 0, or
 * -ETIMEDOUT after `timeout_ms`. */
int fr_buildids_wait(struct fr_buildids *b, int timeout_ms);

/* Requests waiting or being read, and since when (CLOCK_MONOTONIC ns;
 * 0 when idle) the reader has been reading the current one. */
void fr_buildids_state(struct fr_buildids *b, uint32_t *pending, int64_t *busy_since_ns);

/* Reads the build id of what `pid` maps at [start, end) from `path`, as
 * the reader thread does; blocking. Returns the length, or -errno. */
int fr_buildid_read_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path,
			   uint8_t *out, size_t cap);

#endif
