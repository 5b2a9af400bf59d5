/* flightrec threads on the recorder's side (recorder/requests/threads.c): every
 * thread of the asked processes with its state, wait and stack; for a
 * user who is not privileged, of the processes /proc hides from that user
 * (set-user-ID, not dumpable) only what ps shows (recorder/requests/threads_hide.c
 * for a past moment). */
#ifndef FR_RECORDER_THREADS_H
#define FR_RECORDER_THREADS_H

#include <cjson/cJSON.h>

/* Most threads one answer lists. */
#define THREADS_MAX 100000
/* The window of the ring the stacks and waiting times come from. */
#define THREADS_WINDOW_NS (60 * FR_NS_PER_S)

#include <stddef.h>
#include <stdint.h>

#include "core/util/time.h"

struct daemon;
struct fr_ipc_peer;
struct fr_profile_request;

/* Answers {"req":"threads"} into the regular file `fd` (closed here).
 * Runs on a connection thread. */
cJSON *daemon_handle_threads(struct daemon *d, const cJSON *req, int fd,
			     const struct fr_ipc_peer *peer);

/* The threads at `at` from the ring (fr_threads_at_write(), its request
 * `preq`) as a user (uid, gid) who is not privileged may see them, into
 * `fd`: the processes the kernel would hide from that user, running now
 * with other credentials or not dumpable, or whose executable in the ring
 * is set-user-ID or set-group-ID to someone else, cut down to pid, tid,
 * thread and state (recorder/requests/threads_hide.c). Returns 0 with the counts
 * (*nhidden: processes cut down), or -errno with a reason in `err`. */
int daemon_threads_at_hide(struct daemon *d, struct fr_profile_request *preq, int64_t at, int fd,
			   uint32_t uid, uint32_t gid, size_t *nthreads, size_t *nprocs,
			   size_t *nhidden, char *err, size_t errlen);

#endif
