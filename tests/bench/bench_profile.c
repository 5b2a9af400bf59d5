/* Profile benchmark: the time to build a pprof profile of a 60 s window
 * from the ring, as `flightrec attach --window 60s` does, for a machine
 * sampled at HZ on CPUS CPUs with a realistic synthetic stream.
 *
 *   bench_profile [HZ] [CPUS] [WINDOW_S]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/util/log.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/util/time.h"
#include "core/util/uring.h"
#include "synth.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint32_t hz = argc > 1 ? (uint32_t)atoi(argv[1]) : 99;
	uint32_t cpus = argc > 2 ? (uint32_t)atoi(argv[2]) : 2;
	int64_t window_s = argc > 3 ? atoi(argv[3]) : 60;
	static struct synth s;
	static struct fr_uring_writer w;
	struct fr_chunk_builder *b = fr_chunk_builder_new(65536, 1u << 20);
	struct fr_ring *ring = NULL;
	struct fr_uring *u = NULL;
	struct fr_profile_request req = {0};
	struct fr_profile_result res;
	char dir[] = "/tmp/fr-bench-XXXXXX", path[64], err[256];
	int64_t end = fr_now_real_ns(), t = end - window_s * FR_NS_PER_S;
	int64_t step = FR_NS_PER_S / ((int64_t)hz * cpus);
	uint64_t n = 0;
	double best = 1e9;
	int fd;

	if (!b || !mkdtemp(dir) || fr_uring_open(&u, 8) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&ring, path, 256ull << 20, 1u << 20, FR_RING_CREATE, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fr_ring_set_sync_interval(ring, -1);
	synth_init(&s, 7);
	synth_fill(&s, b, ring, t, end, step, hz, cpus, &n);
	req.t0 = end - window_s * FR_NS_PER_S;
	req.t1 = end + 1;
	req.version = "bench";
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	for (int run = 0; run < 5; run++) {
		double a = now();
		fr_uring_writer_init(&w, u, fd);
		if (fr_profile_write(ring, &req, fr_uring_writer_write, &w, &res, err,
				     sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		fr_uring_writer_flush(&w);
		double d = now() - a;
		if (d < best)
			best = d;
	}
	printf("window %llds at %u Hz x %u CPUs: %llu samples, %llu stacks, %llu bytes of pprof.gz\n",
	       (long long)window_s, hz, cpus, (unsigned long long)res.samples_kept,
	       (unsigned long long)res.stacks, (unsigned long long)w.written);
	printf("build time (best of 5): %.1f ms\n", best * 1e3);
	close(fd);
	fr_ring_close(ring);
	fr_uring_close(u);
	fr_chunk_builder_free(b);
	unlink(path);
	rmdir(dir);
	return 0;
}
