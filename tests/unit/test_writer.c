/* The ring's writer (recorder/ingest/writer.h) built alone, without a
 * recorder: a real ring in a temporary directory (its appends go through
 * io_uring, as the recorder's do), chunks queued from this thread as the
 * ingest thread queues them, flush barriers, and what the ring holds read
 * back and decoded.
 *
 * What a user relies on: when a barrier is reached every chunk queued
 * before it is in the ring (an attach ending "now" has every sample up
 * to its request); a chunk the queue has no room for is dropped and
 * counted, never blocking the producer; a chunk the ring refuses counts
 * as a write error without calling the disk failed; a stopped writer has
 * stored and synced everything queued.
 */
#include "recorder/ingest/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/sample.h"
#include "tests/unit/check.h"

#define T0 1700000000000000000ll
#define SEC 1000000000ll
#define PER_CHUNK 10
#define WAIT_MS 10000

/* Chunk `k`: PER_CHUNK samples of process 1000 + k within second k. */
static void *make_chunk(struct fr_chunk_builder *b, int k, size_t *len)
{
	static const uint64_t ips[2] = {0x401000, 0x401100};
	void *chunk = NULL;

	for (int j = 0; j < PER_CHUNK; j++) {
		struct fr_sample s = {
			.time_ns = T0 + k * SEC + j * (SEC / PER_CHUNK),
			.pid = 1000 + (uint32_t)k,
			.tid = 1000 + (uint32_t)k,
			.event = FR_EVENT_CPU,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = 2,
			.ips = ips,
		};

		CHECK(fr_chunk_builder_add(b, &s) == 0, "chunk %d: add", k);
	}
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &chunk, len) == 0, "chunk %d: seal", k);
	return chunk;
}

/* Reads the whole ring back, each chunk decoded, in sequence order (the
 * journal's groups may have been merged into fewer chunks): chunks
 * 0..n-1 are there, every sample once, in the order they were queued. */
static void check_ring(struct fr_ring *ring, int n, const char *what)
{
	struct fr_ring_ref *refs = NULL;
	uint32_t seen[64] = {0}, last = 0;
	size_t nrefs = 0;

	CHECK(fr_ring_query(ring, INT64_MIN, INT64_MAX, &refs, &nrefs) == 0, "%s: query", what);
	for (size_t i = 0; i < nrefs; i++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		if (fr_ring_read(ring, &refs[i], &buf) < 0 ||
		    fr_chunk_decode(buf, refs[i].len, &c) < 0) {
			CHECK(0, "%s: chunk %zu does not read back", what, i);
			free(buf);
			continue;
		}
		for (uint32_t j = 0; j < c->nsamples; j++) {
			uint32_t k = c->pid[j] - 1000;

			CHECK(k < 64 && c->pid[j] >= last, "%s: chunk %zu: process %u out of order",
			      what, i, c->pid[j]);
			if (k < 64)
				seen[k]++;
			last = c->pid[j];
		}
		fr_chunk_free(c);
		free(buf);
	}
	for (int k = 0; k < 64; k++)
		CHECK(seen[k] == (k < n ? PER_CHUNK : 0), "%s: chunk %d: %u samples in the ring",
		      what, k, seen[k]);
	free(refs);
}

/* Queues chunks first..last-1, the last with `barrier` in the same item
 * when `with_last`; else the barrier follows alone. */
static void queue(struct fr_writer *w, struct fr_chunk_builder *b, int first, int last,
		  uint64_t barrier, int with_last)
{
	for (int k = first; k < last; k++) {
		size_t len = 0;
		void *chunk = make_chunk(b, k, &len);

		CHECK(fr_writer_has_room(w, len), "chunk %d: no room in an empty queue", k);
		fr_writer_enqueue(w, chunk, len, with_last && k == last - 1 ? barrier : 0);
	}
	if (!with_last)
		fr_writer_enqueue(w, NULL, 0, barrier);
}

/* What the writer does not store: a chunk larger than its whole queue
 * (dropped and counted at once) and one the ring refuses (not a chunk: an
 * error of the write, not of the disk; the barrier behind it still
 * completes). */
static void refusals(struct fr_writer *w)
{
	size_t len = 2 * w->queue_max;
	void *junk = calloc(1, len);
	int64_t since = 0;
	uint64_t target;

	CHECK(junk && !fr_writer_has_room(w, len), "room for more than the queue holds");
	fr_writer_enqueue(w, junk, len, 0);
	CHECK(w->chunks_dropped == 1, "%llu chunks dropped", (unsigned long long)w->chunks_dropped);

	junk = calloc(1, 512);
	target = fr_writer_barrier_ask(w);
	fr_writer_enqueue(w, junk, 512, target);
	CHECK(fr_writer_barrier_wait(w, target, WAIT_MS) == 0, "barrier 3 not reached");
	CHECK(w->write_errors == 1, "%llu write errors", (unsigned long long)w->write_errors);
	CHECK(fr_writer_error(w, &since) == 0 && since == 0,
	      "a refused chunk was taken for a failing disk");
}

int main(void)
{
	char dir[] = "/tmp/fr-test-writer-XXXXXX", path[64], err[256];
	struct fr_chunk_builder *b = fr_chunk_builder_new(4096, 1u << 20);
	struct fr_ring *ring = NULL;
	struct fr_ring_stats st;
	struct fr_writer w;
	uint64_t target;
	size_t len;

	if (!b || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&ring, path, 4u << 20, 64u << 10, FR_RING_CREATE | FR_RING_JOURNAL, err,
			 sizeof(err)) < 0) {
		fprintf(stderr, "cannot open a ring in %s: %s\n", dir, err);
		return 1;
	}
	/* The queue's bound, as the integration tests set it: small enough
	 * that a chunk can be too large for it. */
	setenv("FLIGHTREC_WRITER_QUEUE", "65536", 1);
	fr_writer_init(&w, 0);
	CHECK(w.queue_max == 65536, "the queue's bound from the environment: %zu", w.queue_max);
	CHECK(fr_writer_start(&w, ring) == 0, "start");

	/* A barrier queued alone behind five chunks. */
	target = fr_writer_barrier_ask(&w);
	CHECK(target == 1 && fr_writer_barrier_asked(&w) == 1, "the first barrier");
	queue(&w, b, 0, 5, target, 0);
	CHECK(fr_writer_barrier_wait(&w, target, WAIT_MS) == 0, "barrier 1 not reached");
	check_ring(ring, 5, "after barrier 1");

	/* A barrier in the same item as the chunk sealed for it. */
	target = fr_writer_barrier_ask(&w);
	queue(&w, b, 5, 8, target, 1);
	CHECK(fr_writer_barrier_wait(&w, target, WAIT_MS) == 0, "barrier 2 not reached");
	check_ring(ring, 8, "after barrier 2");
	CHECK(w.last_append_real > 0, "no append time for status");

	/* A barrier nobody queues is waited for only until the timeout. */
	CHECK(fr_writer_barrier_wait(&w, target + 1, 50) == -ETIMEDOUT,
	      "a barrier never queued was reached");

	refusals(&w);

	/* Queued without a barrier, then stopped: stored and synced. */
	queue(&w, b, 8, 12, 0, 1);
	fr_writer_stop(&w);
	CHECK(!fr_writer_stalled(&w, SEC, &len) && len == 0, "stopped with %zu bytes queued", len);
	fr_writer_fini(&w);
	fr_ring_close(ring);
	ring = NULL;

	/* What the file holds, opened again. */
	if (fr_ring_open(&ring, path, 4u << 20, 64u << 10, FR_RING_JOURNAL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cannot open the ring again: %s\n", err);
		return 1;
	}
	fr_ring_get_stats(ring, &st);
	CHECK(st.samples == 12 * PER_CHUNK, "%llu samples after reopening",
	      (unsigned long long)st.samples);
	check_ring(ring, 12, "reopened");
	fr_ring_close(ring);
	fr_chunk_builder_free(b);
	snprintf(err, sizeof(err), "rm -rf %s", dir);
	if (system(err) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return failures ? 1 : 0;
}
