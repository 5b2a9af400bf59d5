/* Writes a synthetic fleet into ClickHouse for the fleet benchmark
 * (tests/bench/fleet.sh): HOSTS rings of SECONDS of the synth.h stream at
 * HZ on CPUS CPUs, ending now, written by the recorder's chunk builder and
 * ring, then shipped interval by interval with the exporter's own batch
 * builder and sender (core/clickhouse/export_batch.h), as flightrecd would.
 * Hosts come in five services of the same binaries (the same stacks,
 * sampled in another order), as a fleet runs a few programs many times.
 *
 *   bench_fleet URL[,URL...] DB DIR [HOSTS] [HZ] [CPUS] [SECONDS] [BATCH_S]
 *
 * Host i is written to the i-th URL modulo their count (its shard). Prints
 * the samples written and kept, the rows and stacks shipped, the time the
 * batches took, and the rings' bytes per sample.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clickhouse/export_batch.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/http.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "synth.h"

#define SERVICES 5

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The ring of host `i`: [start, end) of the stream. Returns the samples. */
static uint64_t write_ring(const char *path, int i, int64_t start, int64_t end, uint32_t hz,
			   uint32_t cpus)
{
	static struct synth s;
	struct fr_chunk_builder *b = fr_chunk_builder_new(65536, 1u << 20);
	struct fr_ring *ring = NULL;
	int64_t step = FR_NS_PER_S / ((int64_t)hz * cpus), t = start;
	char err[256];
	uint64_t n = 0;

	if (!b || fr_ring_open(&ring, path, 256ull << 20, 4u << 20,
			       FR_RING_CREATE | FR_RING_JOURNAL, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", path, b ? err : "out of memory");
		exit(1);
	}
	fr_ring_set_sync_interval(ring, -1);
	synth_init(&s, 7 + (uint64_t)(i % SERVICES));
	s.rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1) | 1;
	if (synth_fill(&s, b, ring, t, end, step, hz, cpus, &n) < 0)
		exit(1);
	fr_ring_close(ring);
	fr_chunk_builder_free(b);
	return n;
}

int main(int argc, char **argv)
{
	int hosts = argc > 4 ? atoi(argv[4]) : 50;
	uint32_t hz = argc > 5 ? (uint32_t)atoi(argv[5]) : 19;
	uint32_t cpus = argc > 6 ? (uint32_t)atoi(argv[6]) : 2;
	int64_t secs = argc > 7 ? atoi(argv[7]) : 3600;
	int64_t batch = (argc > 8 ? atoi(argv[8]) : 10) * FR_NS_PER_S;
	char *urls[16], *save = NULL, err[512];
	int nurls = 0;
	uint64_t written = 0, kept = 0, rows = 0, stacks = 0, ring_bytes = 0, ring_samples = 0;
	double build_s = 0, ship_s = 0;
	int64_t end, start;
	struct fr_http *h = NULL;
	struct fr_http_opts ho = {.timeout_ms = 120000};

	if (argc < 4) {
		fprintf(stderr, "usage: bench_fleet URL[,URL...] DB DIR [HOSTS] [HZ] [CPUS] "
				"[SECONDS] [BATCH_S]\n");
		return 2;
	}
	for (char *u = strtok_r(argv[1], ",", &save); u && nurls < 16;
	     u = strtok_r(NULL, ",", &save))
		urls[nurls++] = u;
	if (fr_http_global_init() < 0 || fr_http_new(&h, &ho, err, sizeof(err)) < 0) {
		fprintf(stderr, "http: %s\n", err);
		return 1;
	}
	/* Whole intervals ending at the last one before now. */
	end = fr_now_real_ns() / batch * batch;
	start = end - secs * FR_NS_PER_S;
	for (int i = 0; i < hosts; i++) {
		char path[4096], host[64];
		struct fr_export_seen *seen = fr_export_seen_new(1u << 16);
		struct fr_ring *ring = NULL;
		struct fr_ring_stats st;

		snprintf(path, sizeof(path), "%s/host-%02d.ring", argv[3], i);
		snprintf(host, sizeof(host), "svc%d-host-%02d", i % SERVICES, i);
		written += write_ring(path, i, start, end, hz, cpus);
		if (!seen || fr_ring_open(&ring, path, 0, 0, 0, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", path, seen ? err : "out of memory");
			return 1;
		}
		fr_ring_get_stats(ring, &st);
		ring_bytes += st.bytes_used;
		ring_samples += st.samples;
		for (int64_t t = start; t < end; t += batch) {
			struct fr_export_req req = {.t0 = t,
						    .t1 = t + batch,
						    .host = host,
						    .hz = hz};
			struct fr_export_batch b;
			double t0 = now_s(), t1;
			int dup = 0;

			if (fr_export_batch_build(ring, &req, seen, &b, err, sizeof(err)) < 0) {
				fprintf(stderr, "%s: batch at %" PRId64 ": %s\n", host, t, err);
				return 1;
			}
			t1 = now_s();
			build_s += t1 - t0;
			if (fr_export_batch_ship(h, urls[i % nurls], argv[2], host, t, &b, seen,
						 &dup, err, sizeof(err)) < 0) {
				fprintf(stderr, "%s: ship at %" PRId64 ": %s\n", host, t, err);
				return 1;
			}
			ship_s += now_s() - t1;
			kept += b.samples_kept;
			rows += b.rows;
			stacks += b.nstacks;
			fr_export_batch_fini(&b);
		}
		fr_ring_close(ring);
		fr_export_seen_free(seen);
		fprintf(stderr, "\r%d/%d hosts", i + 1, hosts);
	}
	fprintf(stderr, "\n");
	printf("hosts %d seconds %" PRId64 " hz %u cpus %u\n", hosts, secs, hz, cpus);
	printf("samples_written %" PRIu64 " samples_kept %" PRIu64 "\n", written, kept);
	printf("rows %" PRIu64 " stack_rows %" PRIu64 "\n", rows, stacks);
	printf("batch_build_s %.1f ship_s %.1f\n", build_s, ship_s);
	printf("ring_bytes %" PRIu64 " ring_samples %" PRIu64 " ring_bytes_per_sample %.2f\n",
	       ring_bytes, ring_samples, ring_samples ? (double)ring_bytes / ring_samples : 0);
	printf("window_start_ns %" PRId64 " window_end_ns %" PRId64 "\n", start, end);
	fr_http_free(h);
	return 0;
}
