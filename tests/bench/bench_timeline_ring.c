/* Writes a ring for the timeline benchmark (tests/bench/timeline.sh): the
 * synthetic stream of synth.h at HZ on CPUS CPUs for SECONDS, ending now,
 * sealed every second by the chunk builder and appended (and merged into
 * 10 s groups) by the ring, the recorder's own code path.
 *
 *   bench_timeline_ring PATH [HZ] [CPUS] [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "synth.h"

int main(int argc, char **argv)
{
	uint32_t hz = argc > 2 ? (uint32_t)atoi(argv[2]) : 999;
	uint32_t cpus = argc > 3 ? (uint32_t)atoi(argv[3]) : 2;
	int64_t secs = argc > 4 ? atoi(argv[4]) : 3600;
	static struct synth s;
	struct fr_chunk_builder *b = fr_chunk_builder_new(65536, 1u << 20);
	struct fr_ring *ring = NULL;
	char err[256];
	int64_t end = fr_now_real_ns(), t = end - secs * FR_NS_PER_S;
	int64_t step = FR_NS_PER_S / ((int64_t)hz * cpus);
	uint64_t n = 0;

	if (argc < 2 || !b) {
		fprintf(stderr, "usage: bench_timeline_ring PATH [HZ] [CPUS] [SECONDS]\n");
		return 2;
	}
	if (fr_ring_open(&ring, argv[1], 512ull << 20, 4u << 20, FR_RING_CREATE | FR_RING_JOURNAL,
			 err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fr_ring_set_sync_interval(ring, -1);
	synth_init(&s, 7);
	if (synth_fill(&s, b, ring, t, end, step, hz, cpus, &n) < 0)
		return 1;
	fr_ring_close(ring);
	printf("%llu samples\n", (unsigned long long)n);
	return 0;
}
