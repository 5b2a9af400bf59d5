/* Writing a profile into a descriptor: what the recorder's attach and
 * dumps and the command line's dump share. The writer's 256 KiB buffer is
 * on the heap: the request threads that call this have small stacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/profile.h"
#include "core/util/uring.h"

int fr_profile_write_fd(struct fr_ring *ring, const struct fr_profile_request *req, int fd,
			const struct fr_profile_limits *limits, struct fr_profile_result *res,
			uint64_t *written, char *err, size_t errlen)
{
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = malloc(sizeof(*w));
	int ret;

	*written = 0;
	err[0] = '\0';
	ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;
	if (ret < 0) {
		snprintf(err, errlen, "cannot set up the output: %s", strerror(-ret));
		goto out;
	}
	fr_uring_writer_init(w, uring, fd);
	if (limits)
		fr_uring_writer_limit(w, limits->stall_ns, limits->total_ns, limits->hangup_fd);
	ret = fr_profile_write(ring, req, fr_uring_writer_write, w, res, err, errlen);
	if (ret == 0)
		ret = fr_uring_writer_flush(w);
	*written = w->written;
out:
	fr_uring_close(uring);
	free(w);
	return ret;
}
