/* Ingest benchmark: how many samples per second one core can put through
 * the chunk builder, zstd and the chunk encoder, and how many bytes each
 * sample costs in the ring, for a realistic synthetic stream.
 *
 *   bench_ingest [SAMPLES] [HZ] [CPUS]
 *
 * Chunks are sealed every simulated second (as flightrecd does) and
 * appended to a real ring file in a temporary directory. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/time.h"
#include "synth.h"

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
	uint32_t hz = argc > 2 ? (uint32_t)atoi(argv[2]) : 999;
	uint32_t cpus = argc > 3 ? (uint32_t)atoi(argv[3]) : 2;
	static struct synth s;
	struct fr_chunk_builder *b = fr_chunk_builder_new(65536, 1u << 20);
	struct fr_ring *ring = NULL;
	char dir[] = "/tmp/fr-bench-XXXXXX", path[64], err[256];
	int64_t t = 1795000000000000000LL, step = FR_NS_PER_S / ((int64_t)hz * cpus);
	int64_t next_seal = t + FR_NS_PER_S;
	uint64_t bytes = 0, chunks = 0, raw = 0;
	double t0, t_total, t_build, t_seal = 0, t_append = 0;

	if (!b || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&ring, path, 1024ull << 20, 1u << 20, FR_RING_CREATE | FR_RING_JOURNAL,
			 err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fr_ring_set_sync_interval(ring, -1);
	fr_chunk_builder_set_level(b, 1); /* as flightrecd does for a journal */
	synth_init(&s, 42);

	/* Only sealing and appending are timed separately (once per simulated
	 * second); adding is the rest, so no clock is read per sample. */
	t_total = cpu_seconds();
	for (uint64_t i = 0; i <= n; i++) {
		struct fr_sample smp;
		void *chunk;
		size_t len;
		double a;

		if (i == n || t >= next_seal) {
			a = cpu_seconds();
			if (fr_chunk_builder_seal(b, &synth_ops, 0, &chunk, &len) == 0) {
				struct fr_chunk_header h;
				fr_chunk_header_parse(chunk, len, &h);
				raw += h.raw_len;
				double c = cpu_seconds();
				t_seal += c - a;
				fr_ring_append(ring, chunk, len);
				t_append += cpu_seconds() - c;
				bytes += len;
				chunks++;
				free(chunk);
			}
			next_seal += FR_NS_PER_S;
			if (i == n)
				break;
		}
		synth_sample(&s, &smp, t, (uint32_t)(i % cpus), hz);
		if (fr_chunk_builder_add(b, &smp) == -ENOSPC) {
			next_seal = t; /* full: seal now, then add it again */
			i--;
			continue;
		}
		t += step;
	}
	t_total = cpu_seconds() - t_total;
	t_build = t_total - t_seal - t_append;
	t0 = t_total;
	printf("samples            %llu (%u Hz x %u CPUs, %llu chunks)\n", (unsigned long long)n,
	       hz, cpus, (unsigned long long)chunks);
	printf("add (+ synthesis)  %.3f s  (%.0f ns/sample)\n", t_build, t_build / n * 1e9);
	printf("seal+zstd          %.3f s  (%.0f ns/sample)\n", t_seal, t_seal / n * 1e9);
	printf("ring append+merge  %.3f s  (%.0f ns/sample)\n", t_append, t_append / n * 1e9);
	printf("throughput         %.2f M samples/s on one core\n", n / t0 / 1e6);
	printf("sealed             %.2f bytes/sample (raw block %.2f bytes/sample, zstd %.1fx)\n",
	       (double)bytes / n, (double)raw / n, (double)raw / bytes);
	fr_ring_close(ring); /* stores the last group */
	if (fr_ring_open(&ring, path, 0, 0, FR_RING_RDONLY, err, sizeof(err)) == 0) {
		struct fr_ring_stats st;

		fr_ring_get_stats(ring, &st);
		printf("stored, merged     %.2f bytes/sample in %llu chunks\n",
		       (double)st.bytes_used / (double)st.samples, (unsigned long long)st.chunks);
	}
	fr_ring_close(ring);
	fr_chunk_builder_free(b);
	unlink(path);
	rmdir(dir);
	return 0;
}
