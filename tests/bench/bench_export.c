/* Export benchmark: what the exporter's batches cost against its peer,
 * an attach of the same span. A realistic synthetic stream at HZ on CPUS
 * CPUs fills a real ring for WINDOW_S seconds; then, best of 5 each:
 *
 *   attach:  one pprof profile of the whole span at 19 Hz (fr_profile_write)
 *   export:  the span cut into batches of BATCH_S seconds, each built into
 *            ClickHouse rows at 19 Hz (fr_export_batch_build), stacks
 *            shipped once (marked as in the exporter after each batch)
 *
 * and the rows' size as JSONEachRow and gzip'ed on the wire, per sample,
 * with an FNV-1a digest of the rows (the same stream gives the same rows:
 * two builds compare by it). With a fifth argument "export", the attach
 * is left out, so the peak resident size the run ends with is the
 * export's (printed with the one the ring's filling left). The stream
 * ends now, or at FR_BENCH_END (Unix seconds) when set, for two builds to
 * read the same samples.
 *
 *   bench_export [HZ] [CPUS] [WINDOW_S] [BATCH_S] [export]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/clickhouse/export_batch.h"
#include "core/query/profile.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/compress.h"
#include "core/util/hash.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "synth.h"

#define SEC FR_NS_PER_S

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int count_sink(void *arg, const void *buf, size_t len)
{
	*(uint64_t *)arg += len;
	return 0;
}

/* The attach's bytes, counted and digested. */
struct digest_sink {
	uint64_t bytes, digest;
};

static int digest_sink(void *arg, const void *buf, size_t len)
{
	struct digest_sink *d = arg;

	d->bytes += len;
	d->digest = fr_fnv1a(d->digest, buf, len);
	return 0;
}

/* The process's peak resident size so far, KiB. */
static long peak_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

static struct fr_ring *fill(const char *path, uint32_t hz, uint32_t cpus, int64_t t, int64_t end)
{
	static struct synth s;
	struct fr_chunk_builder *b = fr_chunk_builder_new(65536, 1u << 20);
	struct fr_ring *ring = NULL;
	int64_t step = SEC / ((int64_t)hz * cpus);
	uint64_t n = 0;
	char err[256];

	if (!b || fr_ring_open(&ring, path, 256ull << 20, 1u << 20, FR_RING_CREATE, err,
			       sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	fr_ring_set_sync_interval(ring, -1);
	synth_init(&s, 7);
	synth_fill(&s, b, ring, t, end, step, hz, cpus, &n);
	fr_chunk_builder_free(b);
	return ring;
}

int main(int argc, char **argv)
{
	uint32_t hz = argc > 1 ? (uint32_t)atoi(argv[1]) : 99;
	uint32_t cpus = argc > 2 ? (uint32_t)atoi(argv[2]) : 2;
	int64_t window_s = argc > 3 ? atoi(argv[3]) : 60;
	int64_t batch_s = argc > 4 ? atoi(argv[4]) : 10;
	int64_t end = fr_now_real_ns(), t0;
	char dir[] = "/tmp/fr-bench-XXXXXX", path[64], err[256];
	struct fr_profile_request req = {0};
	struct fr_export_req ereq = {0};
	struct fr_profile_result res;
	uint64_t rows = 0, kept = 0, text = 0, wire = 0, digest = 0;
	struct digest_sink attach = {0};
	int export_only = argc > 5 && strcmp(argv[5], "export") == 0;
	double best_a = 1e9, best_e = 1e9;
	struct fr_ring *ring;
	long filled_kib;

	if (getenv("FR_BENCH_END"))
		end = atoll(getenv("FR_BENCH_END")) * SEC;
	end -= end % (batch_s * SEC);
	t0 = end - window_s * SEC;
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	ring = fill(path, hz, cpus, t0, end);
	if (!ring)
		return 1;
	filled_kib = peak_kib();
	req.t0 = t0;
	req.t1 = end;
	req.hz = 19;
	req.version = "bench";
	ereq.host = "bench-host";
	ereq.hz = 19;
	for (int run = 0; run < 5; run++) {
		struct fr_export_seen *seen = fr_export_seen_new(65536);
		double a = now(), d;

		attach = (struct digest_sink){0, FR_FNV_OFFSET};
		memset(&res, 0, sizeof(res));
		if (!export_only && fr_profile_write(ring, &req, digest_sink, &attach, &res, err,
						     sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		d = now() - a;
		best_a = d < best_a ? d : best_a;
		a = now();
		rows = kept = text = wire = 0;
		digest = FR_FNV_OFFSET;
		for (int64_t t = t0; t < end; t += batch_s * SEC) {
			struct fr_export_batch b;
			struct fr_gzip *g;

			ereq.t0 = t;
			ereq.t1 = t + batch_s * SEC;
			if (fr_export_batch_build(ring, &ereq, seen, &b, err, sizeof(err)) < 0) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			fr_export_batch_shipped(&b, seen);
			rows += b.rows;
			kept += b.samples_kept;
			text += b.samples.len + b.stacks.len;
			digest = fr_fnv1a(fr_fnv1a(digest, b.stacks.p ? b.stacks.p : "",
						   b.stacks.len),
					  b.samples.p ? b.samples.p : "", b.samples.len);
			/* What goes on the wire: both inserts gzip'ed at level 1. */
			g = fr_gzip_new(1, count_sink, &wire);
			fr_gzip_write(g, b.stacks.p ? b.stacks.p : "", b.stacks.len);
			fr_gzip_finish(g);
			fr_gzip_free(g);
			g = fr_gzip_new(1, count_sink, &wire);
			fr_gzip_write(g, b.samples.p ? b.samples.p : "", b.samples.len);
			fr_gzip_finish(g);
			fr_gzip_free(g);
			fr_export_batch_fini(&b);
		}
		d = now() - a;
		best_e = d < best_e ? d : best_e;
		fr_export_seen_free(seen);
	}
	printf("%llds at %u Hz x %u CPUs, exported at 19 Hz in %llds batches\n",
	       (long long)window_s, hz, cpus, (long long)batch_s);
	if (!export_only)
		printf("attach: %llu samples, %.1f ms (best of 5), %llu bytes of pprof.gz, digest %016llx\n",
		       (unsigned long long)res.samples_kept, best_a * 1e3,
		       (unsigned long long)attach.bytes, (unsigned long long)attach.digest);
	printf("export: %llu samples in %llu rows, %.1f ms (best of 5), %llu bytes of JSON, "
	       "%llu gzip'ed (%.1f bytes/sample on the wire)\n",
	       (unsigned long long)kept, (unsigned long long)rows, best_e * 1e3,
	       (unsigned long long)text, (unsigned long long)wire,
	       kept ? (double)wire / (double)kept : 0.0);
	printf("rows digest: %016llx\n", (unsigned long long)digest);
	if (!export_only)
		printf("export / attach time: %.2f\n", best_e / best_a);
	printf("peak resident: %ld KiB after filling the ring, %ld KiB at the end\n", filled_kib,
	       peak_kib());
	fr_ring_close(ring);
	unlink(path);
	rmdir(dir);
	return 0;
}
