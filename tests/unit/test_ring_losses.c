/* The ring's lost samples as the recorder keeps them (recorder/
 * ring_losses.h) against what the file says (every chunk decoded, as
 * `flightrec dump --info` adds them up), after each append to a ring with
 * a journal whose groups of 3 chunks are merged (a group is merged at the
 * first append 200 ms after it started: bursts of 3 appends, then a
 * pause), and after expiry.
 *
 * Regression: a merged chunk takes the sequence number of its group's last
 * chunk, so counts kept by sequence number alone took the merged chunk for
 * that last chunk and lost the rest of its group's (status said 1601 where
 * dump --info said 26794).
 *
 * Also the per-CPU drop counters of the off-CPU eBPF program as the
 * recorder takes them at each drain (fr_drops_take): every drop once. */
#include "recorder/ingest/ring_losses.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/sample.h"
#include "core/util/time.h"
#include "tests/unit/check.h"

#define T0 1700000000000000000ll
#define SEC FR_NS_PER_S

/* What the file says: every chunk of the index decoded. */
static uint64_t file_lost(struct fr_ring *ring)
{
	struct fr_ring_ref *refs = NULL;
	size_t n = 0;
	uint64_t lost = 0;

	CHECK(fr_ring_query(ring, INT64_MIN, INT64_MAX, &refs, &n) == 0, "query");
	for (size_t i = 0; i < n; i++) {
		uint64_t l;

		if (fr_ring_chunk_lost(ring, &refs[i], &l) == 0)
			lost += l;
	}
	free(refs);
	return lost;
}

/* A chunk of one second with a few samples, and `lost` lost records. */
static void append(struct fr_ring *ring, struct fr_chunk_builder *b, int64_t t, uint64_t lost)
{
	static const uint64_t ips[2] = {0x401000, 0x401100};
	void *chunk = NULL;
	size_t len = 0;

	for (int k = 0; k < 10; k++) {
		struct fr_sample s = {
			.time_ns = t + k * (SEC / 10),
			.pid = 4242,
			.tid = 4242,
			.event = FR_EVENT_CPU,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = 2,
			.ips = ips,
		};

		CHECK(fr_chunk_builder_add(b, &s) == 0, "add");
	}
	fr_chunk_builder_count(b, FR_EVENT_CPU, lost, 0, 0);
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &chunk, &len) == 0, "seal");
	CHECK(fr_ring_append(ring, chunk, len) == 0, "append");
	free(chunk);
}

static void check_total(struct fr_ring_losses *l, struct fr_ring *ring, const char *what)
{
	bool complete = false;
	uint64_t want = file_lost(ring), got;

	CHECK(fr_ring_losses_update(l, ring, INT64_MAX / 2) == 0, "%s: update", what);
	got = fr_ring_losses_total(l, &complete);
	CHECK(complete, "%s: not complete", what);
	CHECK(got == want, "%s: %llu lost, the file says %llu", what, (unsigned long long)got,
	      (unsigned long long)want);
}

/* Per-CPU drop counters (an eBPF program's) taken at each drain: each
 * drop is counted once, in the drain that first sees it, and a counter
 * that starts again (a program reloaded) takes nothing and starts over. */
struct cpu_counts {
	uint64_t switches, drops, other;
};

static void drops_taken(void)
{
	struct cpu_counts c[3] = {{0}};
	uint64_t seen = 0, taken = 0, made = 0;

	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 0,
	      "nothing dropped yet");
	for (int drain = 0; drain < 20; drain++) {
		for (int cpu = 0; cpu < 3; cpu++) {
			uint64_t n = (uint64_t)((drain * 7 + cpu * 3) % 5);

			c[cpu].drops += n;
			c[cpu].switches += 1000; /* other fields are not drops */
			c[cpu].other = UINT64_MAX;
			made += n;
		}
		taken += fr_drops_take(&seen, c, 3, sizeof(c[0]),
				       offsetof(struct cpu_counts, drops));
		CHECK(taken == made, "drain %d: %llu taken of %llu dropped", drain,
		      (unsigned long long)taken, (unsigned long long)made);
	}
	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 0,
	      "a drop taken twice");
	memset(c, 0, sizeof(c));
	c[1].drops = 4;
	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 0,
	      "counters that started again");
	c[1].drops = 6;
	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 2,
	      "after the counters started again");
}

int main(void)
{
	char dir[] = "/tmp/fr-test-losses-XXXXXX", path[64], err[256], what[64];
	struct fr_chunk_builder *b = fr_chunk_builder_new(4096, 1u << 20);
	struct fr_ring_losses l;
	struct fr_ring *ring = NULL;
	bool complete;
	uint64_t appended = 0;

	if (!b || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&ring, path, 4u << 20, 64u << 10, FR_RING_CREATE | FR_RING_JOURNAL, err,
			 sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	fr_ring_set_sync_interval(ring, -1);
	fr_ring_set_group(ring, 200 * 1000000ll);
	drops_taken();
	fr_ring_losses_init(&l);
	CHECK(fr_ring_losses_total(&l, &complete) == 0 && !complete, "a new table");
	for (int i = 0; i < 12; i++) {
		if (i % 3 == 0 && i)
			usleep(250 * 1000);
		append(ring, b, T0 + i * SEC, (uint64_t)(i + 1) * 100);
		appended += (uint64_t)(i + 1) * 100;
		snprintf(what, sizeof(what), "after append %d", i);
		check_total(&l, ring, what);
	}
	CHECK(file_lost(ring) == appended, "the ring holds %llu lost, %llu were appended",
	      (unsigned long long)file_lost(ring), (unsigned long long)appended);
	{
		struct fr_ring_ref *refs = NULL;
		size_t n = 0, merged = 0;

		CHECK(fr_ring_query(ring, INT64_MIN, INT64_MAX, &refs, &n) == 0, "query");
		for (size_t i = 0; i < n; i++)
			merged += refs[i].covers > 0;
		CHECK(merged >= 2, "%zu merged chunks: the test merged no group", merged);
		free(refs);
	}
	/* Expired chunks take their counts with them */
	CHECK(fr_ring_expire(ring, T0 + 6 * SEC) > 0, "expire");
	check_total(&l, ring, "after expiry");
	CHECK(fr_ring_losses_total(&l, &complete) < appended, "nothing expired");
	/* A table that starts on a ring it did not see filled, counted a
	 * slice at a time: incomplete until every chunk is read */
	{
		struct fr_ring_losses fresh;

		fr_ring_losses_init(&fresh);
		CHECK(fr_ring_losses_update(&fresh, ring, 0) == 0, "update with no time");
		fr_ring_losses_total(&fresh, &complete);
		CHECK(!complete, "complete without reading a chunk");
		check_total(&fresh, ring, "a table started late");
		fr_ring_losses_fini(&fresh);
	}
	fr_ring_losses_fini(&l);
	fr_ring_close(ring);
	fr_chunk_builder_free(b);
	unlink(path);
	rmdir(dir);
	return failures != 0;
}
