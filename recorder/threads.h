/* flightrec threads on the recorder's side (recorder/threads.c): every
 * thread of the asked processes with its state, wait and stack. */
#ifndef FR_RECORDER_THREADS_H
#define FR_RECORDER_THREADS_H

#include <cjson/cJSON.h>

/* Most threads one answer lists. */
#define THREADS_MAX 100000
/* The window of the ring the stacks and waiting times come from. */
#define THREADS_WINDOW_NS (60LL * 1000000000LL)

struct daemon;
struct fr_ipc_peer;

/* Answers {"req":"threads"} into the regular file `fd` (closed here).
 * Runs on a connection thread. */
cJSON *daemon_handle_threads(struct daemon *d, const cJSON *req, int fd,
			     const struct fr_ipc_peer *peer);

#endif
