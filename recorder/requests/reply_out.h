/* What the requests that answer with a text (timeline, events) share: the
 * window a request names, resolved against the clock, and the write of
 * the answer into the descriptor the client passed, under attach's output
 * deadlines (a client that does not read cannot hold the thread).
 */
#ifndef FR_RECORDER_REPLY_OUT_H
#define FR_RECORDER_REPLY_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/server.h"

/* The window [*t0, *t1) of a request: the last `window_ns` before `now`
 * when it is not 0, else from `from_ns` to `to_ns` (to `now` without
 * `has_to`). Returns 0, or -EINVAL when it is empty (to not after from,
 * or from in the future). */
int fr_reply_window(int64_t now, int64_t window_ns, int64_t from_ns, int has_to, int64_t to_ns,
		    int64_t *t0, int64_t *t1);

/* Writes `len` bytes of `text` into `fd` under OUTPUT_STALL_NS and
 * OUTPUT_TOTAL_NS (recorder/daemon_int.h), given up when `peer`'s socket
 * closes. Returns 0 or -errno (-ETIMEDOUT: the output took nothing for
 * OUTPUT_STALL_NS). */
int fr_reply_write(int fd, const char *text, size_t len, struct fr_ipc_peer *peer);

#endif
