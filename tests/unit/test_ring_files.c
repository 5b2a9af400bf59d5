/* The ring and the files around it: refusal of foreign files and of
 * limits the filesystem imposes, expiry of old chunks, and the journal. */
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

/* Files that are not rings, or rings of other versions: refused and left
 * as they were, or (version 1) read. */
static void test_foreign_files(void)
{
	char path[300], err[512];
	struct fr_ring *r = NULL;
	unsigned char *before, *after;
	size_t lb, la;
	int ret;
	FILE *f;

	/* Random bytes. */
	path_of(path, sizeof(path), "random.bin");
	f = fopen(path, "we");
	for (int i = 0; i < 300000; i++)
		fputc((int)(rng() & 0xff), f);
	fclose(f);
	before = slurp(path, &lb);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == -EMEDIUMTYPE && r == NULL, "random file: %d", ret);
	CHECK(strstr(err, path) &&
		      strstr(err, "is not a flightrec ring (bad magic); refusing to overwrite it"),
	      "random file message: %s", err);
	after = slurp(path, &la);
	CHECK(before && after && la == lb && memcmp(before, after, lb) == 0,
	      "random file modified");
	free(before);
	free(after);

	/* A short text file. */
	path_of(path, sizeof(path), "notes.txt");
	f = fopen(path, "we");
	fputs("hello\n", f);
	fclose(f);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == -EMEDIUMTYPE, "text file: %d", ret);
	after = slurp(path, &la);
	CHECK(after && la == 6 && memcmp(after, "hello\n", 6) == 0, "text file modified");
	free(after);

	/* Right magic, another version. */
	path_of(path, sizeof(path), "v3.ring");
	unlink(path);
	r = open_ok(path, FR_RING_CREATE);
	fr_ring_close(r);
	r = NULL;
	{
		unsigned char sb[84];

		peek(path, 0, sb, sizeof(sb));
		sb[16] = 3;
		uint32_t crc = fr_crc32c(0, sb, 80);

		memcpy(sb + 80, &crc, 4);
		poke(path, 0, sb, sizeof(sb));
	}
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == -EPROTONOSUPPORT && strstr(err, "version 3") && strstr(err, "versions 1 to 2"),
	      "version 3 ring: %d %s", ret, err);

	/* Version 1 (no journal, the superblock crc at 72) is read and
	 * written. */
	path_of(path, sizeof(path), "v1.ring");
	unlink(path);
	r = open_ok(path, FR_RING_CREATE);
	for (int i = 0; i < 3; i++)
		CHECK(append_one(r, T0 + i * SEC, 2000) == 0, "append to the v1 ring");
	fr_ring_close(r);
	r = NULL;
	{
		unsigned char sb[84];

		peek(path, 0, sb, sizeof(sb));
		sb[16] = 1;
		memset(sb + 72, 0, 12);
		uint32_t crc = fr_crc32c(0, sb, 72);

		memcpy(sb + 72, &crc, 4);
		poke(path, 0, sb, sizeof(sb));
	}
	r = open_ok(path, 0);
	if (r) {
		struct fr_ring_stats st;

		CHECK(append_one(r, T0 + 3 * SEC, 2000) == 0, "append to a version 1 ring");
		fr_ring_get_stats(r, &st);
		CHECK(st.format_version == 1 && st.chunks == 4 && st.journal_size == 0,
		      "version 1 ring: version %u, %llu chunks", st.format_version,
		      (unsigned long long)st.chunks);
		check_readable(r, "version 1 ring");
		fr_ring_close(r);
		r = NULL;
	}
}

/* Empty and missing files, bad geometry, a file the disk cannot hold, and
 * a directory. */
static void test_open_refusals(void)
{
	char path[300], err[512];
	struct fr_ring *r = NULL;
	int ret;
	FILE *f;

	/* Empty files: created with FR_RING_CREATE, refused otherwise. */
	path_of(path, sizeof(path), "empty.ring");
	f = fopen(path, "we");
	fclose(f);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_RDONLY, err, sizeof(err));
	CHECK(ret == -EMEDIUMTYPE, "empty read-only: %d", ret);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == 0, "empty file not made a ring: %d %s", ret, err);
	fr_ring_close(r);
	r = NULL;

	/* Missing files. */
	path_of(path, sizeof(path), "missing.ring");
	unlink(path);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, 0, err, sizeof(err));
	CHECK(ret == -ENOENT && strstr(err, path), "missing without create: %d %s", ret, err);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_RDONLY, err, sizeof(err));
	CHECK(ret == -ENOENT, "missing read-only: %d", ret);

	/* Bad geometry. */
	ret = fr_ring_open(&r, path, RING_SIZE, 5000, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "segment size"), "odd segment: %d %s", ret, err);
	ret = fr_ring_open(&r, path, 4096 + SEG, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "ring size"), "one segment: %d %s", ret, err);
	CHECK(access(path, F_OK) != 0, "bad geometry left a file");

	/* A file the disk cannot hold (here: over the file size limit). */
	{
		struct rlimit old, lim;

		signal(SIGXFSZ, SIG_IGN);
		getrlimit(RLIMIT_FSIZE, &old);
		lim = old;
		lim.rlim_cur = 256 * 1024;
		setrlimit(RLIMIT_FSIZE, &lim);
		ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
		setrlimit(RLIMIT_FSIZE, &old);
		CHECK(ret == -EFBIG && strstr(err, "cannot allocate 532480 bytes for") &&
			      strstr(err, path),
		      "unallocatable ring: %d %s", ret, err);
		CHECK(access(path, F_OK) != 0, "failed create left a file");
	}

	/* Not a regular file. */
	ret = fr_ring_open(&r, dir, RING_SIZE, SEG, FR_RING_RDONLY, err, sizeof(err));
	CHECK(ret < 0 && r == NULL, "directory opened as a ring");
}

/* ring.max_age: expired chunks leave the index at once; a segment with
 * nothing newer is zeroed on disk, and stays gone after a reopen. */
static void test_expire(void)
{
	char path[300];
	char err[256];
	struct fr_ring *r = NULL;
	struct fr_ring_ref *refs = NULL, *before = NULL;
	struct fr_ring_stats st;
	size_t n = 0, nbefore = 0, expect_left = 0;
	int64_t cutoff = T0 + 3 * SEC;
	int ret;

	path_of(path, sizeof(path), "expire");
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == 0, "open: %s", err);
	if (ret < 0)
		return;
	for (int i = 0; i < 8; i++)
		CHECK(append_one(r, T0 + i * SEC, 30000) == 0, "append %d", i);
	all_refs(r, &before, &nbefore);
	for (size_t i = 0; i < nbefore; i++)
		if (before[i].last_ns >= cutoff)
			expect_left++;

	CHECK(fr_ring_expire(r, T0) == 0, "nothing is older than the first chunk");
	ret = fr_ring_expire(r, cutoff);
	CHECK(ret == (int)(nbefore - expect_left), "expired %d chunks, expected %zu", ret,
	      nbefore - expect_left);
	all_refs(r, &refs, &n);
	CHECK(n == expect_left && refs && refs[0].first_ns == cutoff,
	      "%zu chunks left (expected %zu), the oldest from the cutoff", n, expect_left);
	free(refs);
	refs = NULL;
	fr_ring_get_stats(r, &st);
	CHECK(st.chunks == expect_left && st.oldest_ns == cutoff, "stats follow the expiry");
	check_readable(r, "after expire");
	fr_ring_close(r);

	{
		/* A segment whose chunks all expired is zero; the others keep
		 * their newer chunks intact. */
		size_t len = 0;
		unsigned char *file = slurp(path, &len);
		int erased = 0;

		CHECK(file && len == RING_SIZE, "slurp");
		for (uint32_t seg = 0; file && seg < NSEG; seg++) {
			size_t base = 4096 + (size_t)seg * SEG, expired = 0, kept = 0;
			int zero = 1;

			for (size_t i = 0; i < nbefore; i++) {
				if ((before[i].offset - 4096) / SEG != seg)
					continue;
				if (before[i].last_ns < cutoff)
					expired++;
				else
					kept++;
			}
			for (size_t i = base; i < base + SEG; i++)
				if (file[i]) {
					zero = 0;
					break;
				}
			if (expired && !kept) {
				CHECK(zero, "segment %u held only expired chunks and is not erased",
				      seg);
				erased++;
			}
			if (kept)
				CHECK(!zero, "segment %u with live chunks was erased", seg);
		}
		CHECK(erased > 0, "no segment was fully expired: the test lays out no case");
		free(file);
	}
	free(before);

	r = NULL;
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == 0, "reopen: %s", err);
	if (ret < 0)
		return;
	/* Fully expired segments are gone for good; expired chunks that
	 * share a segment with live ones come back until max_age is applied
	 * again, as flightrecd does when it starts. */
	all_refs(r, &refs, &n);
	CHECK(n >= expect_left && n < nbefore, "after a reopen: %zu chunks", n);
	free(refs);
	CHECK(fr_ring_expire(r, cutoff) == (int)(n - expect_left), "expire again after reopen");
	all_refs(r, &refs, &n);
	CHECK(n == expect_left, "expired chunks gone after re-applying max_age: %zu", n);
	free(refs);
	CHECK(append_one(r, T0 + 10 * SEC, 30000) == 0, "append after expiry");
	check_readable(r, "after expiry and append");
	fr_ring_close(r);
}

/* ------------------------------------------------------------------ */
/* Journal                                                              */

/* Samples of every chunk a query returns, each read and decoded; checks
 * the refs come in sequence order and no sample time is seen twice. */
static uint64_t total_samples(struct fr_ring *r, const char *what)
{
	struct fr_ring_ref *refs = NULL;
	size_t n = 0;
	uint64_t total = 0;

	CHECK(all_refs(r, &refs, &n) == 0, "%s: query", what);
	for (size_t i = 0; i < n; i++) {
		void *buf = NULL;
		struct fr_chunk *c = NULL;
		int ret = fr_ring_read(r, &refs[i], &buf);

		CHECK(ret == 0 && fr_chunk_decode(buf, refs[i].len, &c) == 0,
		      "%s: chunk %llu does not read: %d", what, (unsigned long long)refs[i].seq,
		      ret);
		if (i > 0)
			CHECK(refs[i].seq - refs[i].covers > refs[i - 1].seq,
			      "%s: chunks %llu and %llu overlap", what,
			      (unsigned long long)refs[i - 1].seq, (unsigned long long)refs[i].seq);
		if (c) {
			CHECK(c->hdr.covers == refs[i].covers, "%s: covers", what);
			total += c->nsamples;
		}
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
	return total;
}

static void copy_file(const char *from, const char *to)
{
	size_t len = 0;
	unsigned char *b = slurp(from, &len);
	FILE *f = fopen(to, "we");

	CHECK(b && f && fwrite(b, 1, len, f) == len, "copy %s", from);
	if (f)
		fclose(f);
	free(b);
}

static struct fr_ring *open_journal(const char *path, unsigned flags)
{
	struct fr_ring *r = NULL;
	char err[512];
	int ret = fr_ring_open(&r, path, RING_SIZE, SEG, flags | FR_RING_JOURNAL, err, sizeof(err));

	CHECK(ret == 0, "open %s: %d %s", path, ret, err);
	if (r && !(flags & FR_RING_RDONLY)) {
		fr_ring_set_sync_interval(r, -1);
		fr_ring_set_group(r, INT64_MAX);
	}
	return r;
}

/* A copy of the journal ring at `path` taken while it runs (as after a
 * kill -9) holds everything, the journal's group included. */
static void check_journal_copy(const char *path, const char *copy, uint64_t appended, uint64_t per)
{
	struct fr_ring *c;
	struct fr_ring_stats st;
	struct fr_ring_ref *refs = NULL;
	size_t n = 0;

	copy_file(path, copy);
	c = open_journal(copy, FR_RING_RDONLY);
	if (c) {
		fr_ring_get_stats(c, &st);
		CHECK(total_samples(c, "copy") == appended && st.corrupt_chunks == 0,
		      "the copy lost samples of the journal (%llu corrupt)",
		      (unsigned long long)st.corrupt_chunks);
		fr_ring_close(c);
	}
	/* Reopened for writing, it goes on; closing stores the group. */
	c = open_journal(copy, 0);
	if (c) {
		for (int i = 40; i < 45; i++)
			CHECK(append_one(c, T0 + i * SEC, 3000) == 0, "append %d to the copy", i);
		CHECK(total_samples(c, "copy reopened") == appended + 5 * per, "copy reopened");
		fr_ring_close(c);
	}
	c = open_journal(copy, FR_RING_RDONLY);
	if (c) {
		fr_ring_get_stats(c, &st);
		CHECK(st.journal_chunks == 0 &&
			      total_samples(c, "closed copy") == appended + 5 * per,
		      "after a clean close: %llu journal chunks",
		      (unsigned long long)st.journal_chunks);
		all_refs(c, &refs, &n);
		fr_ring_close(c);
		/* A torn merge: the newest merged chunk damaged, its parts are
		 * read from the journal again. */
		if (n > 0 && refs[n - 1].covers > 0) {
			unsigned char x;

			peek(copy, refs[n - 1].offset + FR_CHUNK_HEADER_LEN + 5, &x, 1);
			x ^= 0x10;
			poke(copy, refs[n - 1].offset + FR_CHUNK_HEADER_LEN + 5, &x, 1);
			c = open_journal(copy, FR_RING_RDONLY);
			if (c) {
				fr_ring_get_stats(c, &st);
				CHECK(total_samples(c, "torn merge") == appended + 5 * per &&
					      st.corrupt_chunks == 1 &&
					      st.journal_chunks == refs[n - 1].covers + 1,
				      "torn merge: %llu corrupt, %llu journal chunks",
				      (unsigned long long)st.corrupt_chunks,
				      (unsigned long long)st.journal_chunks);
				fr_ring_close(c);
			}
		} else {
			CHECK(0, "the newest chunk after a close is not merged");
		}
		free(refs);
	}
}

/* Too small to keep four segments besides a journal: none. */
static void check_small_ring_no_journal(void)
{
	char small[300];
	struct fr_ring *t = NULL;
	struct fr_ring_stats st;
	char err[256];

	path_of(small, sizeof(small), "small-journal.ring");
	CHECK(fr_ring_open(&t, small, 8192 + 5 * SEG, SEG, FR_RING_CREATE | FR_RING_JOURNAL, err,
			   sizeof(err)) == 0,
	      "small ring: %s", err);
	if (t) {
		fr_ring_get_stats(t, &st);
		CHECK(st.journal_size == 0 && st.nsegments == 5, "small ring: journal %llu",
		      (unsigned long long)st.journal_size);
		fr_ring_close(t);
	}
}

/* Refs to journal chunks taken before they were merged still read. */
static void check_stale_journal_refs(struct fr_ring *r, const struct fr_ring_ref *refs, size_t n)
{
	size_t stale_journal = 0;

	for (size_t i = 0; i < n; i++) {
		void *buf = NULL;

		if (refs[i].offset >= 4096 + 128 * 1024)
			continue;
		stale_journal++;
		CHECK(fr_ring_read(r, &refs[i], &buf) == 0,
		      "journal chunk %llu, merged since the query, does not read",
		      (unsigned long long)refs[i].seq);
		free(buf);
	}
	CHECK(stale_journal > 0, "the query held no journal chunk");
}

/* The closed ring file at `path` holds nothing in its journal. */
static void check_journal_erased(const char *path)
{
	size_t len = 0;
	unsigned char *file = slurp(path, &len);
	int zero = 1;

	for (size_t i = 4096; file && i < 4096 + 128 * 1024; i++)
		if (file[i]) {
			zero = 0;
			break;
		}
	CHECK(file && zero, "the journal keeps expired data");
	free(file);
}

static void test_journal(void)
{
	char path[300], copy[300];
	struct fr_ring *r;
	struct fr_ring_stats st;
	struct fr_ring_ref *refs = NULL;
	size_t n = 0;
	uint64_t appended = 0, per = 3000 / 110 + 1, merged = 0;
	int bad = 0;

	path_of(path, sizeof(path), "journal.ring");
	path_of(copy, sizeof(copy), "journal.copy");
	r = open_journal(path, FR_RING_CREATE);
	if (!r)
		return;
	check_small_ring_no_journal();
	fr_ring_get_stats(r, &st);
	CHECK(st.format_version == FR_RING_VERSION && st.journal_size == 128 * 1024 &&
		      st.nsegments == (RING_SIZE - 8192 - 128 * 1024) / SEG,
	      "journal of %llu bytes, %u segments", (unsigned long long)st.journal_size,
	      st.nsegments);
	/* Every sample is seen exactly once after every append, in the
	 * journal or merged into a segment. */
	for (int i = 0; i < 40; i++) {
		CHECK(append_one(r, T0 + i * SEC, 3000) == 0, "append %d", i);
		appended += per;
		if (total_samples(r, "journal") != appended)
			bad++;
	}
	CHECK(!bad, "%d appends saw samples missing or twice", bad);
	fr_ring_get_stats(r, &st);
	CHECK(st.journal_chunks > 0 && st.chunks < 40 && st.samples == appended,
	      "%llu chunks (%llu in the journal) for 40 appended", (unsigned long long)st.chunks,
	      (unsigned long long)st.journal_chunks);
	all_refs(r, &refs, &n);
	for (size_t i = 0; i < n; i++)
		merged += refs[i].covers;
	CHECK(merged > 0, "no chunk was merged");
	free(refs);

	check_journal_copy(path, copy, appended, per);

	/* Merging at every append; a reader still holding refs to journal
	 * chunks merged since reads them (the journal has not come round). */
	all_refs(r, &refs, &n);
	fr_ring_set_group(r, 0);
	CHECK(append_one(r, T0 + 40 * SEC, 3000) == 0 && append_one(r, T0 + 41 * SEC, 3000) == 0,
	      "appends merging each time");
	appended += 2 * per;
	check_stale_journal_refs(r, refs, n);
	free(refs);
	fr_ring_get_stats(r, &st);
	CHECK(st.journal_chunks == 1 && total_samples(r, "group 0") == appended,
	      "group time 0: %llu journal chunks", (unsigned long long)st.journal_chunks);

	/* Expiring everything erases the journal's copies too. */
	CHECK(fr_ring_expire(r, T0 + 1000 * SEC) > 0, "expire all");
	fr_ring_get_stats(r, &st);
	CHECK(st.chunks == 0 && st.samples == 0, "expired: %llu chunks",
	      (unsigned long long)st.chunks);
	fr_ring_close(r);
	check_journal_erased(path);
}

int main(void)
{
	if (ring_dir_init() != 0)
		return 1;
	test_foreign_files();
	test_open_refusals();
	test_expire();
	test_journal();
	return ring_dir_fini("test_ring_files");
}
