/* Persistent ring: create, append, query, read, wrap, reopen, recovery
 * from torn and damaged chunks, read-only use and readers racing the
 * appender. Foreign files, expiry and the journal are test_ring_files.c,
 * superblock damage test_ring_sb.c; the helpers are fixture_ring.{c,h}. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/crc32c.h"
#include "core/store/ring.h"

#include "tests/unit/fixture_ring.h"

/* ------------------------------------------------------------------ */

static void test_basic(void)
{
	char path[300];
	struct fr_ring *r;
	struct fr_ring_stats st;
	struct fr_ring_ref *refs;
	size_t n, len;
	struct stat sb;
	void *c;

	path_of(path, sizeof(path), "basic.ring");
	r = open_ok(path, FR_RING_CREATE);
	if (!r)
		return;
	CHECK(stat(path, &sb) == 0 && sb.st_size == RING_SIZE, "file size %lld",
	      (long long)sb.st_size);
	CHECK((sb.st_mode & 0777) == 0600, "ring mode %o", sb.st_mode & 0777);
	CHECK(strcmp(fr_ring_path(r), path) == 0, "path");
	CHECK(fr_ring_max_chunk(r) == SEG, "max chunk %zu", fr_ring_max_chunk(r));
	fr_ring_get_stats(r, &st);
	CHECK(st.file_size == RING_BYTES && st.segment_size == SEG && st.nsegments == NSEG &&
		      st.chunks == 0 && st.segments_used == 0 && st.next_seq == 1 &&
		      st.oldest_ns == 0 && st.format_version == FR_RING_VERSION,
	      "fresh stats");

	for (int i = 0; i < 5; i++)
		CHECK(append_one(r, T0 + i * SEC, 3000) == 0, "append %d", i);

	CHECK(fr_ring_query(r, T0 + SEC, T0 + 3 * SEC, &refs, &n) == 0, "query");
	CHECK(n == 2 && refs[0].seq == 2 && refs[1].seq == 3, "query [1s, 3s): %zu refs", n);
	free(refs);
	CHECK(fr_ring_query(r, T0 + SEC + SEC / 2, T0 + SEC + SEC / 2 + 1, &refs, &n) == 0 &&
		      n == 1 && refs[0].seq == 2,
	      "query inside one chunk");
	free(refs);
	CHECK(fr_ring_query(r, T0 + 10 * SEC, T0 + 20 * SEC, &refs, &n) == 0 && n == 0,
	      "query after the data");
	free(refs);
	check_readable(r, "basic");

	fr_ring_get_stats(r, &st);
	CHECK(st.chunks == 5 && st.next_seq == 6 && st.segments_used == 1, "stats after 5");
	CHECK(st.oldest_ns == T0 && st.newest_ns < T0 + 5 * SEC && st.newest_ns > T0 + 4 * SEC,
	      "stats time span");
	CHECK(st.samples == 5 * (3000 / 110 + 1), "stats samples %llu",
	      (unsigned long long)st.samples);
	CHECK(st.raw_bytes > 0 && st.bytes_used > 5 * 2000 && st.bytes_used < 5 * 4000,
	      "stats bytes %llu", (unsigned long long)st.bytes_used);

	/* Chunk validation. */
	c = make_chunk(T0, 1000, &len);
	((unsigned char *)c)[len - 1] ^= 1;
	CHECK(fr_ring_append(r, c, len) == -EBADMSG, "damaged chunk appended");
	free(c);
	c = make_chunk(T0, 2 * SEG, &len);
	CHECK(len > SEG && fr_ring_append(r, c, len) == -EFBIG, "oversized chunk appended");
	free(c);

	/* A second writer is refused; a reader is not. */
	{
		struct fr_ring *r2 = NULL;
		char err[256];
		int ret = fr_ring_open(&r2, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));

		CHECK(ret == -EBUSY, "second writer: %d %s", ret, err);
		fr_ring_close(r2);
		r2 = open_ok(path, FR_RING_RDONLY);
		fr_ring_get_stats(r2, &st);
		CHECK(st.chunks == 5, "reader sees %llu chunks", (unsigned long long)st.chunks);
		fr_ring_close(r2);
	}
	fr_ring_close(r);
	fr_ring_close(NULL);
}

static void test_wrap_reopen(void)
{
	char path[300], err[512];
	struct fr_ring *r;
	struct fr_ring_stats st, st2;
	struct fr_ring_ref *before, *after, *early;
	size_t nb, na, ne;
	int total = 200;

	path_of(path, sizeof(path), "wrap.ring");
	r = open_ok(path, FR_RING_CREATE);
	if (!r)
		return;
	fr_ring_set_sync_interval(r, 0);
	for (int i = 0; i < 10; i++) {
		if (i == 3)
			fr_ring_set_sync_interval(r, -1);
		append_one(r, T0 + i * SEC, 2000 + rng() % 20000);
	}
	all_refs(r, &early, &ne);
	for (int i = 10; i < total; i++) {
		int ret = append_one(r, T0 + i * SEC, 2000 + rng() % 20000);

		CHECK(ret == 0, "append %d: %d", i, ret);
		if (i % 37 == 0)
			check_readable(r, "while wrapping");
	}
	fr_ring_get_stats(r, &st);
	CHECK(st.next_seq == (uint64_t)total + 1, "next_seq %llu", (unsigned long long)st.next_seq);
	CHECK(st.chunks < (uint64_t)total && st.chunks > 20, "%llu chunks after wrap",
	      (unsigned long long)st.chunks);
	CHECK(st.segments_used >= NSEG - 1 && st.segments_used <= NSEG, "segments used %u",
	      st.segments_used);
	CHECK(st.bytes_used <= (uint64_t)NSEG * SEG, "bytes used");
	all_refs(r, &before, &nb);
	CHECK(nb == st.chunks, "query all returned %zu of %llu", nb, (unsigned long long)st.chunks);
	/* Contiguous up to the newest: the oldest went first. */
	CHECK(nb && before[nb - 1].seq == (uint64_t)total, "newest seq");
	for (size_t i = 1; i < nb; i++)
		CHECK(before[i].seq == before[i - 1].seq + 1, "gap in seqs at %zu", i);
	CHECK(nb && st.oldest_ns == before[0].first_ns, "oldest_ns");
	check_readable(r, "after wrap");

	/* A ref from before the wrap is stale now. */
	{
		void *buf = NULL;
		int ret = fr_ring_read(r, &early[0], &buf);

		CHECK(ret == -ESTALE, "overwritten chunk read returned %d", ret);
		free(buf);
		free(early);
	}
	fr_ring_close(r);

	/* Reopen rebuilds the same index and continues the sequence. */
	err[0] = 'x';
	r = NULL;
	CHECK(fr_ring_open(&r, path, RING_SIZE * 2, SEG, FR_RING_CREATE, err, sizeof(err)) == 0,
	      "reopen: %s", err);
	if (!r)
		goto out;
	CHECK(strstr(err, "keeps its geometry") != NULL, "no geometry note: '%s'", err);
	fr_ring_get_stats(r, &st2);
	CHECK(st2.file_size == RING_BYTES, "reopened ring changed size");
	all_refs(r, &after, &na);
	CHECK(na == nb && same_refs(before, after, nb), "reopened index differs (%zu vs %zu refs)",
	      na, nb);
	CHECK(st2.next_seq == st.next_seq && st2.corrupt_chunks == 0 &&
		      st2.bytes_used == st.bytes_used && st2.samples == st.samples,
	      "reopened stats differ");
	free(after);
	for (int i = total; i < total + 30; i++)
		CHECK(append_one(r, T0 + i * SEC, 2000 + rng() % 20000) == 0,
		      "append after reopen");
	all_refs(r, &after, &na);
	CHECK(na && after[na - 1].seq == (uint64_t)total + 30, "seq after reopen");
	for (size_t i = 1; i < na; i++)
		CHECK(after[i].seq == after[i - 1].seq + 1, "gap after reopen at %zu", i);
	free(after);
	check_readable(r, "after reopen");
	fr_ring_close(r);

	/* And once more, without appending: identical again. */
	r = open_ok(path, 0);
	if (r) {
		all_refs(r, &after, &na);
		CHECK(na > 0 && after[na - 1].seq == (uint64_t)total + 30, "second reopen");
		free(after);
		fr_ring_close(r);
	}
out:
	free(before);
}

static void test_torn_tail(void)
{
	char path[300];
	struct fr_ring_ref *refs, *after;
	size_t n, na;
	struct fr_ring *r;
	struct fr_ring_stats st;
	unsigned char junk[2048];

	path_of(path, sizeof(path), "torn.ring");
	for (int variant = 0; variant < 4; variant++) {
		build_ring(path, 12, &refs, &n);
		if (n != 12) {
			CHECK(0, "build ring: %zu chunks", n);
			free(refs);
			return;
		}
		const struct fr_ring_ref *last = &refs[n - 1];

		switch (variant) {
		case 0: /* payload garbage, header intact */
			for (size_t i = 0; i < sizeof(junk); i++)
				junk[i] = (unsigned char)rng();
			poke(path, last->offset + 64 + 100, junk, 200);
			break;
		case 1: /* payload never reached the disk */
			memset(junk, 0, sizeof(junk));
			poke(path, last->offset + last->len - 1000, junk, 1000);
			break;
		case 2: /* header garbage */
			for (size_t i = 0; i < sizeof(junk); i++)
				junk[i] = (unsigned char)rng();
			poke(path, last->offset, junk, 40);
			break;
		default: /* nothing of it but its last page reached the disk */
			memset(junk, 0, sizeof(junk));
			poke(path, last->offset, junk, 64);
			break;
		}
		r = open_ok(path, 0);
		if (!r)
			break;
		fr_ring_get_stats(r, &st);
		all_refs(r, &after, &na);
		CHECK(na == n - 1 && same_refs(refs, after, na),
		      "variant %d: torn chunk not dropped cleanly (%zu refs)", variant, na);
		CHECK(st.corrupt_chunks == (variant < 2 ? 1u : 0u), "variant %d: %llu corrupt",
		      variant, (unsigned long long)st.corrupt_chunks);
		free(after);
		/* The next append goes where the torn chunk was. */
		CHECK(append_one(r, T0 + 100 * SEC, 1000) == 0, "append after torn");
		all_refs(r, &after, &na);
		CHECK(na == n && after[n - 1].offset == last->offset,
		      "variant %d: append did not overwrite the torn chunk", variant);
		CHECK(na == n && after[n - 1].seq > refs[n - 2].seq, "seq after torn");
		free(after);
		check_readable(r, "after torn");
		fr_ring_close(r);

		/* A reopen sees the replacement, not remains of the torn one. */
		r = open_ok(path, FR_RING_RDONLY);
		if (r) {
			all_refs(r, &after, &na);
			CHECK(na == n && after[n - 1].offset == last->offset,
			      "variant %d: replacement lost on reopen (%zu refs)", variant, na);
			free(after);
			check_readable(r, "reopen after torn");
			fr_ring_close(r);
		}
		free(refs);
	}
}

static void test_damaged_middle(void)
{
	char path[300];
	struct fr_ring_ref *refs, *after;
	size_t n, na;
	struct fr_ring *r;
	struct fr_ring_stats st;
	unsigned char byte;

	path_of(path, sizeof(path), "middle.ring");

	/* One flipped payload bit: skipped by its length, counted. */
	build_ring(path, 15, &refs, &n);
	peek(path, refs[6].offset + 64 + 500, &byte, 1);
	byte ^= 0x10;
	poke(path, refs[6].offset + 64 + 500, &byte, 1);
	r = open_ok(path, 0);
	if (r) {
		fr_ring_get_stats(r, &st);
		CHECK(st.corrupt_chunks == 1, "%llu corrupt",
		      (unsigned long long)st.corrupt_chunks);
		all_refs(r, &after, &na);
		CHECK(na == n - 1, "%zu refs after a flipped bit", na);
		for (size_t i = 0, k = 0; i < n && k < na; i++) {
			if (i == 6)
				continue;
			CHECK(after[k].seq == refs[i].seq, "ref %zu differs", i);
			k++;
		}
		free(after);
		check_readable(r, "after flipped bit");
		CHECK(append_one(r, T0 + 50 * SEC, 1000) == 0 && 1, "append");
		all_refs(r, &after, &na);
		CHECK(na == n && after[na - 1].seq == refs[n - 1].seq + 1, "append after damage");
		free(after);
		fr_ring_close(r);
	}
	free(refs);

	/* A damaged header: the scan finds the next chunk after it. */
	build_ring(path, 15, &refs, &n);
	peek(path, refs[4].offset + 20, &byte, 1);
	byte ^= 0x01;
	poke(path, refs[4].offset + 20, &byte, 1);
	r = open_ok(path, 0);
	if (r) {
		all_refs(r, &after, &na);
		CHECK(na == n - 1 && after[4].seq == refs[5].seq &&
			      after[na - 1].seq == refs[n - 1].seq,
		      "resync after a damaged header (%zu refs)", na);
		free(after);
		check_readable(r, "after damaged header");
		fr_ring_close(r);
	}
	free(refs);

	/* Damage found only when read (written behind the ring's back after
	 * it was opened): dropped and counted then. */
	build_ring(path, 10, &refs, &n);
	r = open_ok(path, FR_RING_RDONLY);
	if (r) {
		void *buf = NULL;

		peek(path, refs[3].offset + 64 + 10, &byte, 1);
		byte ^= 0x80;
		poke(path, refs[3].offset + 64 + 10, &byte, 1);
		CHECK(fr_ring_read(r, &refs[3], &buf) == -EBADMSG, "damaged read");
		free(buf);
		fr_ring_get_stats(r, &st);
		CHECK(st.corrupt_chunks == 1 && st.chunks == n - 1, "damaged read not dropped");
		CHECK(fr_ring_read(r, &refs[3], &buf) == -ESTALE, "dropped chunk read again");
		free(buf);
		check_readable(r, "after damaged read");
		fr_ring_close(r);
	}
	free(refs);
}

static void test_rdonly(void)
{
	char path[300];
	struct fr_ring_ref *refs;
	size_t n, lb, la;
	struct fr_ring *r;
	unsigned char *before, *after;

	path_of(path, sizeof(path), "ro.ring");
	build_ring(path, 20, &refs, &n);
	free(refs);
	chmod(path, 0400);
	before = slurp(path, &lb);
	r = open_ok(path, FR_RING_RDONLY);
	if (r) {
		all_refs(r, &refs, &n);
		CHECK(n == 20, "read-only ring has %zu chunks", n);
		free(refs);
		check_readable(r, "read-only");
		CHECK(append_one(r, T0, 1000) == -EROFS, "append to read-only ring");
		CHECK(fr_ring_sync(r) == 0, "sync of read-only ring");
		fr_ring_close(r);
	}
	after = slurp(path, &la);
	CHECK(before && after && la == lb && memcmp(before, after, lb) == 0,
	      "read-only open modified the file");
	free(before);
	free(after);
	chmod(path, 0600);
}

/* Random damage anywhere in the segments: the ring opens, everything it
 * indexes reads back, appends continue, and a clean reopen rebuilds the
 * same index. */
static void test_random_damage(void)
{
	char path[300];
	struct fr_ring_ref *refs, *after;
	size_t n, na;
	struct fr_ring *r;
	unsigned char junk[4096];

	path_of(path, sizeof(path), "damage.ring");
	for (int round = 0; round < 40; round++) {
		build_ring(path, 30 + (int)(rng() % 120), &refs, &n);
		free(refs);
		for (int k = 0; k < 1 + (int)(rng() % 4); k++) {
			uint64_t off = 4096 + rng() % (NSEG * SEG);
			size_t len = 1 + rng() % sizeof(junk);

			if (off + len > RING_BYTES)
				len = RING_BYTES - off;
			switch (rng() % 3) {
			case 0: memset(junk, 0, len); break;
			case 1:
				for (size_t i = 0; i < len; i++)
					junk[i] = (unsigned char)rng();
				break;
			default:
				peek(path, off, junk, 1);
				junk[0] ^= (unsigned char)(1u << (rng() % 8));
				len = 1;
				break;
			}
			poke(path, off, junk, len);
		}
		r = open_ok(path, 0);
		if (!r)
			return;
		check_readable(r, "damaged ring");
		for (int i = 0; i < 20; i++)
			CHECK(append_one(r, T0 + (1000 + i) * SEC, 2000 + rng() % 8000) == 0,
			      "append to damaged ring");
		check_readable(r, "damaged ring after appends");
		all_refs(r, &refs, &n);
		fr_ring_close(r);
		r = open_ok(path, FR_RING_RDONLY);
		if (!r) {
			free(refs);
			return;
		}
		all_refs(r, &after, &na);
		CHECK(na == n && same_refs(refs, after, n),
		      "round %d: reopen of a repaired ring differs (%zu vs %zu)", round, na, n);
		CHECK(n > 0 && refs[n - 1].seq == after[na - 1].seq, "newest chunk lost");
		free(after);
		free(refs);
		fr_ring_close(r);
		if (failures)
			return;
	}
}

struct race {
	struct fr_ring *r;
	int *stop;
	int reads, stale, bad;
};

static void *reader(void *arg)
{
	struct race *rc = arg;

	while (!__atomic_load_n(rc->stop, __ATOMIC_RELAXED)) {
		struct fr_ring_ref *refs;
		struct fr_ring_stats st;
		size_t n;

		if (fr_ring_query(rc->r, INT64_MIN, INT64_MAX, &refs, &n) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			void *buf = NULL;
			int ret = fr_ring_read(rc->r, &refs[i], &buf);

			if (ret == 0)
				rc->reads++;
			else if (ret == -ESTALE)
				rc->stale++;
			else
				rc->bad++;
			free(buf);
		}
		free(refs);
		fr_ring_get_stats(rc->r, &st);
		/* Leave the appender CPU time on a loaded two-CPU machine: the
		 * test is about what readers see, not about starving it. */
		usleep(200);
	}
	return NULL;
}

static void test_race(void)
{
	char path[300];
	struct race rc[2];
	struct fr_ring *r;
	pthread_t th[2];
	int stop = 0;

	path_of(path, sizeof(path), "race.ring");
	unlink(path);
	r = open_ok(path, FR_RING_CREATE);
	if (!r)
		return;
	fr_ring_set_sync_interval(r, -1);
	for (int i = 0; i < 2; i++) {
		rc[i] = (struct race){.r = r, .stop = &stop};
		pthread_create(&th[i], NULL, reader, &rc[i]);
	}
	for (int i = 0; i < 400; i++)
		CHECK(append_one(r, T0 + i * SEC, 1000 + rng() % 30000) == 0, "race append");
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK(rc[i].bad == 0, "%d damaged reads while wrapping", rc[i].bad);
		CHECK(rc[i].reads > 0, "no reads");
		printf("race: %d reads, %d stale\n", rc[i].reads, rc[i].stale);
	}
	fr_ring_close(r);
}

int main(void)
{
	if (ring_dir_init() != 0)
		return 1;
	test_basic();
	test_wrap_reopen();
	test_torn_tail();
	test_damaged_middle();
	test_rdonly();
	test_random_damage();
	test_race();
	return ring_dir_fini("test_ring");
}
