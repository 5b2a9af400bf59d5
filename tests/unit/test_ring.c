/* Persistent ring: create, append, query, read, wrap, reopen, recovery
 * from torn and damaged chunks, refusal of foreign files, read-only use,
 * stats, and readers racing the appender. */
#include "core/ring.h"

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

#include "core/chunk.h"
#include "core/crc32c.h"

#include "tests/unit/check.h"

#define SEG (64 * 1024)
#define NSEG 8
/* The ring's bytes (superblock, segments), and the file with the
 * superblock's copy after them. */
#define RING_BYTES (4096 + NSEG * SEG)
#define RING_SIZE (RING_BYTES + 4096)
#define T0 1700000000000000000ll
#define SEC 1000000000ll

static char dir[256];
static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* A chunk covering [t, t + 1 s) of about `bytes` bytes (random stacks do
 * not compress). */
static void *make_chunk(int64_t t, size_t bytes, size_t *len)
{
	uint32_t n = (uint32_t)(bytes / 110 + 1);
	struct fr_chunk_builder *b = fr_chunk_builder_new(n, 1u << 20);
	uint64_t ips[10];
	void *buf = NULL;

	for (uint32_t i = 0; i < n; i++) {
		struct fr_sample s = {
			.time_ns = t + (int64_t)i * (SEC - 1) / n,
			.pid = 1 + (uint32_t)(rng() % 4),
			.tid = 7,
			.weight = 1,
			.rate_hz = 99,
			.nr_kernel = 2,
			.nr_frames = 10,
			.ips = ips,
		};

		for (int k = 0; k < 10; k++)
			ips[k] = rng();
		fr_chunk_builder_add(b, &s);
	}
	if (fr_chunk_builder_seal(b, NULL, 0, &buf, len) < 0)
		buf = NULL;
	fr_chunk_builder_free(b);
	return buf;
}

static int append_one(struct fr_ring *r, int64_t t, size_t bytes)
{
	size_t len;
	void *c = make_chunk(t, bytes, &len);
	int ret;

	if (!c)
		return -ENOMEM;
	ret = fr_ring_append(r, c, len);
	free(c);
	return ret;
}

static int same_refs(const struct fr_ring_ref *a, const struct fr_ring_ref *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].seq != b[i].seq || a[i].offset != b[i].offset || a[i].len != b[i].len ||
		    a[i].nsamples != b[i].nsamples || a[i].first_ns != b[i].first_ns ||
		    a[i].last_ns != b[i].last_ns || a[i].raw_len != b[i].raw_len)
			return 0;
	return 1;
}

static int all_refs(struct fr_ring *r, struct fr_ring_ref **refs, size_t *n)
{
	return fr_ring_query(r, INT64_MIN, INT64_MAX, refs, n);
}

/* Every ref in the index reads, verifies and decodes with its seq. */
static void check_readable(struct fr_ring *r, const char *what)
{
	struct fr_ring_ref *refs;
	size_t n;

	if (all_refs(r, &refs, &n) < 0) {
		CHECK(0, "%s: query", what);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		void *buf = NULL;
		struct fr_chunk *c = NULL;
		int ret = fr_ring_read(r, &refs[i], &buf);

		CHECK(ret == 0, "%s: read seq %llu: %d", what, (unsigned long long)refs[i].seq,
		      ret);
		if (ret == 0) {
			CHECK(fr_chunk_decode(buf, refs[i].len, &c) == 0, "%s: decode", what);
			if (c)
				CHECK(c->hdr.seq == refs[i].seq &&
					      c->hdr.first_ns == refs[i].first_ns &&
					      c->nsamples == refs[i].nsamples,
				      "%s: chunk does not match its ref", what);
		}
		if (i > 0)
			CHECK(refs[i].seq > refs[i - 1].seq, "%s: refs out of order", what);
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	unsigned char *p = NULL;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)n + 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void poke(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0 && pwrite(fd, buf, len, (off_t)off) == (ssize_t)len, "poke %s", path);
	if (fd >= 0)
		close(fd);
}

static void peek(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len, "peek %s", path);
	if (fd >= 0)
		close(fd);
}

static struct fr_ring *open_ok(const char *path, unsigned flags)
{
	struct fr_ring *r = NULL;
	char err[512];
	int ret = fr_ring_open(&r, path, RING_SIZE, SEG, flags, err, sizeof(err));

	CHECK(ret == 0, "open %s: %d %s", path, ret, err);
	/* Durability is not under test here, and fdatasync on a busy shared
	 * disk takes seconds: close() still syncs once. */
	if (r && !(flags & FR_RING_RDONLY))
		fr_ring_set_sync_interval(r, -1);
	return r;
}

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
		int ret = fr_ring_open(&r2, path, RING_SIZE, SEG, FR_RING_CREATE, err,
				       sizeof(err));

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
	CHECK(nb == st.chunks, "query all returned %zu of %llu", nb,
	      (unsigned long long)st.chunks);
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
		CHECK(append_one(r, T0 + i * SEC, 2000 + rng() % 20000) == 0, "append after reopen");
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

/* Appends `n` chunks to a fresh ring and returns it closed, with its refs. */
static void build_ring(const char *path, int n, struct fr_ring_ref **refs, size_t *nrefs)
{
	struct fr_ring *r;

	unlink(path);
	r = open_ok(path, FR_RING_CREATE);
	*refs = NULL;
	*nrefs = 0;
	if (!r)
		return;
	for (int i = 0; i < n; i++)
		append_one(r, T0 + i * SEC, 3000 + rng() % 3000);
	all_refs(r, refs, nrefs);
	fr_ring_close(r);
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
		CHECK(st.corrupt_chunks == (variant < 2 ? 1u : 0u),
		      "variant %d: %llu corrupt", variant,
		      (unsigned long long)st.corrupt_chunks);
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
		CHECK(st.corrupt_chunks == 1, "%llu corrupt", (unsigned long long)st.corrupt_chunks);
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
		CHECK(na == n - 1 && after[4].seq == refs[5].seq && after[na - 1].seq == refs[n - 1].seq,
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
	CHECK(strstr(err, path) && strstr(err, "is not a flightrec ring (bad magic); refusing to overwrite it"),
	      "random file message: %s", err);
	after = slurp(path, &la);
	CHECK(before && after && la == lb && memcmp(before, after, lb) == 0, "random file modified");
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
			case 0:
				memset(junk, 0, len);
				break;
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
				CHECK(zero, "segment %u held only expired chunks and is not erased", seg);
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
		      "%s: chunk %llu does not read: %d", what, (unsigned long long)refs[i].seq, ret);
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

static void test_journal(void)
{
	char path[300], copy[300];
	struct fr_ring *r, *c;
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
	{
		/* Too small to keep four segments besides a journal: none. */
		char small[300];
		struct fr_ring *t = NULL;
		char err[256];

		path_of(small, sizeof(small), "small-journal.ring");
		CHECK(fr_ring_open(&t, small, 8192 + 5 * SEG, SEG, FR_RING_CREATE | FR_RING_JOURNAL,
				   err, sizeof(err)) == 0,
		      "small ring: %s", err);
		if (t) {
			fr_ring_get_stats(t, &st);
			CHECK(st.journal_size == 0 && st.nsegments == 5, "small ring: journal %llu",
			      (unsigned long long)st.journal_size);
			fr_ring_close(t);
		}
	}
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
	      "%llu chunks (%llu in the journal) for 40 appended",
	      (unsigned long long)st.chunks, (unsigned long long)st.journal_chunks);
	all_refs(r, &refs, &n);
	for (size_t i = 0; i < n; i++)
		merged += refs[i].covers;
	CHECK(merged > 0, "no chunk was merged");
	free(refs);

	/* A copy taken while it runs (as after a kill -9) holds everything,
	 * the journal's group included. */
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
		CHECK(st.journal_chunks == 0 && total_samples(c, "closed copy") == appended + 5 * per,
		      "after a clean close: %llu journal chunks", (unsigned long long)st.journal_chunks);
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

	/* Merging at every append; a reader still holding refs to journal
	 * chunks merged since reads them (the journal has not come round). */
	all_refs(r, &refs, &n);
	fr_ring_set_group(r, 0);
	CHECK(append_one(r, T0 + 40 * SEC, 3000) == 0 && append_one(r, T0 + 41 * SEC, 3000) == 0,
	      "appends merging each time");
	appended += 2 * per;
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
	free(refs);
	fr_ring_get_stats(r, &st);
	CHECK(st.journal_chunks == 1 && total_samples(r, "group 0") == appended,
	      "group time 0: %llu journal chunks", (unsigned long long)st.journal_chunks);

	/* Expiring everything erases the journal's copies too. */
	CHECK(fr_ring_expire(r, T0 + 1000 * SEC) > 0, "expire all");
	fr_ring_get_stats(r, &st);
	CHECK(st.chunks == 0 && st.samples == 0, "expired: %llu chunks", (unsigned long long)st.chunks);
	fr_ring_close(r);
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
}

/* ------------------------------------------------------------------ */
/* Superblock damage                                                    */

/* A ring of a few chunks in the journal and the segments, closed. Returns
 * its samples. */
static uint64_t make_sb_ring(const char *path)
{
	struct fr_ring *r;
	struct fr_ring_stats st;

	unlink(path);
	r = open_ok(path, FR_RING_CREATE | FR_RING_JOURNAL);
	if (!r)
		return 0;
	fr_ring_set_group(r, 0);
	for (int i = 0; i < 12; i++)
		CHECK(append_one(r, T0 + i * SEC, 3000) == 0, "append %d", i);
	fr_ring_get_stats(r, &st);
	fr_ring_close(r);
	CHECK(st.samples > 0 && st.chunks > 1, "made no ring to damage");
	return st.samples;
}

/* Opens `path` with `flags` and checks it holds the `samples` of the ring
 * before the damage, every chunk readable, and says which superblock it
 * was opened with. */
static void check_sb_open(const char *path, unsigned flags, uint64_t samples,
			  enum fr_ring_sb want, const char *what)
{
	struct fr_ring *r = NULL;
	struct fr_ring_stats st;
	char err[512];
	int ret = fr_ring_open(&r, path, RING_SIZE, SEG, flags, err, sizeof(err));

	CHECK(ret == 0, "%s: open: %d %s", what, ret, err);
	if (!r)
		return;
	fr_ring_get_stats(r, &st);
	CHECK(st.samples == samples && st.corrupt_chunks == 0,
	      "%s: %llu samples (%llu corrupt), expected %llu", what,
	      (unsigned long long)st.samples, (unsigned long long)st.corrupt_chunks,
	      (unsigned long long)samples);
	CHECK(st.superblock == want && st.superblock_copy, "%s: superblock %d, copy %d", what,
	      (int)st.superblock, (int)st.superblock_copy);
	check_readable(r, what);
	fr_ring_close(r);
}

static void flip_bit(const char *path, uint64_t off, int bit)
{
	unsigned char x;

	peek(path, off, &x, 1);
	x ^= (unsigned char)(1u << bit);
	poke(path, off, &x, 1);
}

static void zero_page(const char *path, uint64_t off)
{
	static const unsigned char zeros[4096];

	poke(path, off, zeros, sizeof(zeros));
}

/* A damaged primary superblock (a flipped bit anywhere in it, a zeroed
 * first page) costs nothing: the copy at the end of the file is read, and a
 * writable open rewrites the primary from it. */
static void test_sb_damaged_primary(void)
{
	static const struct {
		const char *name;
		uint64_t off; /* -1: zero the first page */
		int bit;
	} cases[] = {
		{"magic", 3, 0},       {"version", 16, 0},  {"file size", 26, 4},
		{"segment size", 34, 1}, {"created", 50, 7}, {"journal size", 73, 2},
		{"crc", 81, 5},        {"zeroed page", UINT64_MAX, 0},
	};
	char path[300];

	path_of(path, sizeof(path), "sb.ring");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t samples = make_sb_ring(path);
		unsigned char *before, *after, good[FR_RING_SB_LEN], now[FR_RING_SB_LEN];
		size_t lb, la;

		peek(path, 0, good, sizeof(good));
		if (cases[i].off == UINT64_MAX)
			zero_page(path, 0);
		else
			flip_bit(path, cases[i].off, cases[i].bit);

		/* Read-only: everything, through the copy, writing nothing. */
		before = slurp(path, &lb);
		check_sb_open(path, FR_RING_RDONLY, samples, FR_RING_SB_FROM_COPY, cases[i].name);
		after = slurp(path, &la);
		CHECK(before && after && la == lb && memcmp(before, after, lb) == 0,
		      "%s: a read-only open wrote to the ring", cases[i].name);
		free(before);
		free(after);

		/* Writable: the primary is rewritten from the copy, the
		 * samples stay, and the next open needs no copy. */
		check_sb_open(path, 0, samples, FR_RING_SB_REPAIRED, cases[i].name);
		peek(path, 0, now, sizeof(now));
		CHECK(memcmp(now, good, sizeof(good)) == 0, "%s: primary not repaired",
		      cases[i].name);
		check_sb_open(path, FR_RING_RDONLY, samples, FR_RING_SB_PRIMARY, cases[i].name);
	}
}

/* A ring made before superblock copies (the file ends with its last
 * segment) still opens, and a writable open adds the copy after its end,
 * changing none of its bytes. */
static void test_sb_old_ring(void)
{
	char path[300];
	uint64_t samples;
	unsigned char *before, *after;
	size_t lb, la;
	struct fr_ring *r = NULL;
	struct fr_ring_stats st;
	char err[512];
	int ret;

	path_of(path, sizeof(path), "old.ring");
	samples = make_sb_ring(path);
	CHECK(truncate(path, RING_BYTES) == 0, "truncate the copy off");
	before = slurp(path, &lb);

	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_RDONLY, err, sizeof(err));
	CHECK(ret == 0, "old ring read-only: %d %s", ret, err);
	if (r) {
		fr_ring_get_stats(r, &st);
		CHECK(st.samples == samples && !st.superblock_copy &&
			      st.superblock == FR_RING_SB_PRIMARY,
		      "old ring read-only: %llu samples, copy %d", (unsigned long long)st.samples,
		      (int)st.superblock_copy);
		fr_ring_close(r);
		r = NULL;
	}
	check_sb_open(path, FR_RING_CREATE, samples, FR_RING_SB_PRIMARY, "old ring writable");
	after = slurp(path, &la);
	CHECK(before && after && lb == RING_BYTES && la == RING_SIZE &&
		      memcmp(before, after, lb) == 0 &&
		      memcmp(after, after + RING_BYTES, FR_RING_SB_LEN) == 0,
	      "old ring: copy not added after the ring (%zu -> %zu bytes)", lb, la);
	free(before);
	free(after);

	/* Bytes after the ring that are not a superblock are not the ring's:
	 * left alone, and the ring goes without a copy. */
	CHECK(truncate(path, RING_BYTES) == 0, "truncate the copy off");
	{
		unsigned char junk[100];

		memset(junk, 'j', sizeof(junk));
		poke(path, RING_BYTES, junk, sizeof(junk));
	}
	before = slurp(path, &lb);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, 0, err, sizeof(err));
	CHECK(ret == 0, "ring with bytes after it: %d %s", ret, err);
	if (r) {
		fr_ring_get_stats(r, &st);
		CHECK(!st.superblock_copy, "a copy was claimed over foreign bytes");
		fr_ring_close(r);
		r = NULL;
	}
	after = slurp(path, &la);
	CHECK(before && after && la == lb && memcmp(before, after, lb) == 0,
	      "bytes after the ring were overwritten");
	free(before);
	free(after);
}

/* Both superblocks damaged: reading gives a clear error (the geometry is
 * not guessed), a recorder (FR_RING_CREATE) moves the file aside intact
 * and starts a new ring, and a file that never was a ring is still never
 * touched. */
static void test_sb_both_damaged(void)
{
	char path[300], err[512], aside[400];
	unsigned char *before, *after;
	size_t lb, la;
	struct fr_ring *r = NULL;
	struct fr_ring_stats st;
	int ret;

	for (int old = 0; old < 2; old++) {
		path_of(path, sizeof(path), "both.ring");
		make_sb_ring(path);
		if (old) {
			/* A ring without a copy, its first page zeroed: only its
			 * chunks say it was a ring. */
			CHECK(truncate(path, RING_BYTES) == 0, "truncate the copy off");
			zero_page(path, 0);
		} else {
			flip_bit(path, 40, 3);
			flip_bit(path, RING_BYTES + 40, 3);
		}
		before = slurp(path, &lb);
		ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_RDONLY, err, sizeof(err));
		CHECK(ret == -EUCLEAN && r == NULL && strstr(err, path) &&
			      strstr(err, "superblock is damaged"),
		      "both damaged (%d), read-only: %d %s", old, ret, err);
		ret = fr_ring_open(&r, path, RING_SIZE, SEG, 0, err, sizeof(err));
		CHECK(ret == -EUCLEAN && r == NULL, "both damaged (%d), no create: %d %s", old, ret,
		      err);
		after = slurp(path, &la);
		CHECK(before && after && la == lb && memcmp(before, after, lb) == 0,
		      "both damaged (%d): refusing modified the file", old);
		free(after);

		ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
		CHECK(ret == 0, "both damaged (%d), create: %d %s", old, ret, err);
		if (r) {
			fr_ring_get_stats(r, &st);
			CHECK(st.chunks == 0 && st.superblock_copy, "the new ring is not new");
			CHECK(append_one(r, T0, 2000) == 0, "append to the new ring");
			fr_ring_close(r);
			r = NULL;
		}
		/* The damaged file, byte for byte, next to it. */
		{
			char cmd[700];
			FILE *p;

			snprintf(cmd, sizeof(cmd), "ls -d '%s'.damaged-* 2>/dev/null", path);
			p = popen(cmd, "r");
			aside[0] = '\0';
			if (p) {
				if (!fgets(aside, sizeof(aside), p))
					aside[0] = '\0';
				pclose(p);
			}
			aside[strcspn(aside, "\n")] = '\0';
		}
		after = aside[0] ? slurp(aside, &la) : NULL;
		CHECK(after && la == lb && memcmp(before, after, lb) == 0,
		      "both damaged (%d): not moved aside intact ('%s')", old, aside);
		if (aside[0])
			unlink(aside);
		free(before);
		free(after);
	}

	/* Garbage with the ring's size, no magic and no chunk: not a ring. */
	path_of(path, sizeof(path), "garbage.ring");
	{
		FILE *f = fopen(path, "we");

		for (int i = 0; i < RING_SIZE; i++)
			fputc((int)(rng() & 0xff), f);
		fclose(f);
	}
	before = slurp(path, &lb);
	ret = fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == -EMEDIUMTYPE && strstr(err, "not a flightrec ring"), "garbage: %d %s", ret,
	      err);
	after = slurp(path, &la);
	CHECK(before && after && la == lb && memcmp(before, after, lb) == 0,
	      "garbage file modified");
	free(before);
	free(after);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/fr-ring-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_basic();
	test_wrap_reopen();
	test_torn_tail();
	test_damaged_middle();
	test_foreign_files();
	test_rdonly();
	test_random_damage();
	test_race();
	test_expire();
	test_journal();
	test_sb_damaged_primary();
	test_sb_old_ring();
	test_sb_both_damaged();

	if (failures) {
		fprintf(stderr, "test_ring: %d failure(s); files kept in %s\n", failures, dir);
		return 1;
	}
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return 0;
}
