/* Ring benchmark: the time to open (scan and index) a full ring, warm and
 * with the page cache dropped, to decode one million samples, and to
 * decode every chunk as a starting recorder does to count what the ring's
 * chunks lost (recorder/ingest/ring_losses.c; samples_lost).
 *
 *   bench_ring [RING_MIB] [HZ] [CPUS]
 *
 * The ring is filled with the synthetic stream of synth.h, one chunk per
 * simulated second, until it has wrapped. Dropping the page cache needs
 * root; without it only the warm figure is printed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/time.h"
#include "synth.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	int ok;

	sync();
	if (fd < 0)
		return -1;
	ok = write(fd, "3", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static double time_open(const char *path, uint64_t *chunks)
{
	struct fr_ring *r = NULL;
	struct fr_ring_stats st;
	char err[256];
	double a = now(), d;

	if (fr_ring_open(&r, path, 0, 0, FR_RING_RDONLY, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	d = now() - a;
	fr_ring_get_stats(r, &st);
	*chunks = st.chunks;
	fr_ring_close(r);
	return d;
}

/* Reads and decodes every chunk, for its lost counters, as the recorder's
 * writer counts a ring it found at start. Returns the seconds taken. */
static double time_decode_all(struct fr_ring *ring, const struct fr_ring_ref *refs, size_t nrefs)
{
	uint64_t lost = 0;
	double a = now();

	for (size_t i = 0; i < nrefs; i++) {
		uint64_t l;

		if (fr_ring_chunk_lost(ring, &refs[i], &l) == 0)
			lost += l;
	}
	a = now() - a;
	if (lost)
		printf("(%llu samples lost in the synthetic stream)\n", (unsigned long long)lost);
	return a;
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
	uint32_t hz = argc > 2 ? (uint32_t)atoi(argv[2]) : 999;
	uint32_t cpus = argc > 3 ? (uint32_t)atoi(argv[3]) : 2;
	static struct synth s;
	struct fr_chunk_builder *b = fr_chunk_builder_new(65536, 1u << 20);
	struct fr_ring *ring = NULL;
	struct fr_ring_stats st;
	struct fr_ring_ref *refs = NULL;
	char dir[] = "/tmp/fr-bench-XXXXXX", path[64], err[256];
	int64_t t = 1795000000000000000LL, step = FR_NS_PER_S / ((int64_t)hz * cpus);
	uint64_t n = 0, chunks = 0, decoded = 0, appended = 0;
	size_t nrefs = 0;
	double best = 1e9, cold = -1, a;

	if (!b || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&ring, path, mib << 20, 1u << 20, FR_RING_CREATE | FR_RING_JOURNAL, err,
			 sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fr_ring_set_sync_interval(ring, -1);
	synth_init(&s, 3);
	/* Fill until the ring has wrapped: it holds fewer samples than were
	 * appended (merging the journal's groups keeps every sample). */
	for (;;) {
		void *chunk;
		size_t len;
		for (int64_t end = t + FR_NS_PER_S; t < end; t += step, n++) {
			struct fr_sample smp;
			synth_sample(&s, &smp, t, (uint32_t)(n % cpus), hz);
			fr_chunk_builder_add(b, &smp);
		}
		if (fr_chunk_builder_seal(b, &synth_ops, 0, &chunk, &len) == 0) {
			fr_ring_append(ring, chunk, len);
			free(chunk);
			appended++;
		}
		fr_ring_get_stats(ring, &st);
		if (st.samples + 10000 < n)
			break;
	}
	fr_ring_close(ring);
	ring = NULL;

	for (int i = 0; i < 5; i++) {
		double d = time_open(path, &chunks);
		if (d < best)
			best = d;
	}
	if (drop_caches() == 0)
		cold = time_open(path, &chunks);
	printf("ring %lluMiB, full and wrapped: %llu chunks (%u Hz x %u CPUs, 1 chunk/s "
	       "merged by the journal), %llu s appended\n",
	       (unsigned long long)mib, (unsigned long long)chunks, hz, cpus,
	       (unsigned long long)appended);
	printf("open (scan + index): warm %.1f ms (best of 5)", best * 1e3);
	if (cold >= 0)
		printf(", page cache dropped %.1f ms", cold * 1e3);
	printf("\n");

	if (fr_ring_open(&ring, path, 0, 0, FR_RING_RDONLY, err, sizeof(err)) < 0 ||
	    fr_ring_query(ring, INT64_MIN, INT64_MAX, &refs, &nrefs) < 0)
		return 1;
	a = now();
	for (size_t i = 0; i < nrefs && decoded < 1000000; i++) {
		void *buf = NULL;
		struct fr_chunk *c = NULL;
		if (fr_ring_read(ring, &refs[i], &buf) == 0 &&
		    fr_chunk_decode(buf, refs[i].len, &c) == 0)
			decoded += c->nsamples;
		fr_chunk_free(c);
		free(buf);
	}
	a = now() - a;
	printf("read + decode: %llu samples in %.1f ms (%.1f M samples/s)\n",
	       (unsigned long long)decoded, a * 1e3, decoded / a / 1e6);
	a = time_decode_all(ring, refs, nrefs);
	printf("every chunk's lost counters (decode all %zu chunks): %.1f ms, %.0fx the warm "
	       "open\n",
	       nrefs, a * 1e3, a / best);
	free(refs);
	fr_ring_close(ring);
	fr_chunk_builder_free(b);
	unlink(path);
	rmdir(dir);
	return 0;
}
