/* The window and the output of a text reply: see
 * recorder/requests/reply_out.h. */
#include "recorder/requests/reply_out.h"

#include <errno.h>
#include <stdlib.h>

#include "core/util/uring.h"
#include "recorder/daemon_int.h"

int fr_reply_window(int64_t now, int64_t window_ns, int64_t from_ns, int has_to, int64_t to_ns,
		    int64_t *t0, int64_t *t1)
{
	if (window_ns) {
		*t1 = now;
		*t0 = window_ns < now ? now - window_ns : 0;
	} else {
		*t0 = from_ns;
		*t1 = has_to ? to_ns : now;
	}
	return *t1 > *t0 ? 0 : -EINVAL;
}

int fr_reply_write(int fd, const char *text, size_t len, struct fr_ipc_peer *peer)
{
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = malloc(sizeof(*w));
	int ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;

	if (ret == 0) {
		fr_uring_writer_init(w, uring, fd);
		fr_uring_writer_limit(w, OUTPUT_STALL_NS, OUTPUT_TOTAL_NS, peer->sock);
		ret = fr_uring_writer_write(w, text, len);
		if (ret == 0)
			ret = fr_uring_writer_flush(w);
	}
	fr_uring_close(uring);
	free(w);
	return ret;
}
