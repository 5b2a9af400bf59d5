/* The black box's samples of a ring (exec, exit, crash) as a pprof
 * profile, for blackbox_events.sh: the CLI refuses these events as
 * profiles (they are series over time), this reads them with the query
 * side directly, so the test sees their labels and the crash's stack.
 *
 *   ring_events RING EVENT OUT.pb.gz
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

int main(int argc, char **argv)
{
	struct fr_profile_request *req = calloc(1, sizeof(*req));
	struct fr_profile_result res;
	struct fr_ring *ring = NULL;
	char err[512];
	uint64_t written = 0;
	int64_t ev;
	int fd;

	if (argc != 4 || !req) {
		fprintf(stderr, "usage: ring_events RING EVENT OUT.pb.gz\n");
		return 2;
	}
	ev = fr_event_lookup(argv[2]);
	if (ev < 0) {
		fprintf(stderr, "ring_events: unknown event %s\n", argv[2]);
		return 2;
	}
	if (fr_ring_open(&ring, argv[1], 0, 0, FR_RING_RDONLY, err, sizeof(err)) < 0) {
		fprintf(stderr, "ring_events: %s\n", err);
		return 1;
	}
	fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror("ring_events: open");
		return 1;
	}
	req->t0 = 0;
	req->t1 = INT64_MAX;
	req->nevents = 1;
	req->events[0] = (uint32_t)ev;
	req->version = "test";
	req->format = FR_PROFILE_PPROF;
	if (fr_profile_write_fd(ring, req, fd, NULL, &res, &written, err, sizeof(err)) < 0) {
		fprintf(stderr, "ring_events: %s\n", err);
		return 1;
	}
	close(fd);
	fr_ring_close(ring);
	free(req);
	return 0;
}
