/* Superblock damage: a ring whose primary superblock, or both copies, are
 * damaged, and rings written before the copy existed. */
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
static void check_sb_open(const char *path, unsigned flags, uint64_t samples, enum fr_ring_sb want,
			  const char *what)
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
		{"magic", 3, 0},      {"version", 16, 0},
		{"file size", 26, 4}, {"segment size", 34, 1},
		{"created", 50, 7},   {"journal size", 73, 2},
		{"crc", 81, 5},	      {"zeroed page", UINT64_MAX, 0},
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

/* Sets the chunk version a superblock at `off` records, with its crc. */
static void set_sb_chunk_version(const char *path, uint64_t off, uint32_t v)
{
	unsigned char sb[FR_RING_SB_LEN];

	peek(path, off, sb, sizeof(sb));
	sb[44] = (unsigned char)v;
	sb[45] = sb[46] = sb[47] = 0;
	{
		uint32_t crc = fr_crc32c(0, sb, 80);

		for (int i = 0; i < 4; i++)
			sb[80 + i] = (unsigned char)(crc >> (8 * i));
	}
	poke(path, off, sb, sizeof(sb));
}

/* A ring made before chunk sections (its superblock says chunk version 2)
 * opens, read-only and for writing, with every sample; a later version is
 * refused. Regression: the bump to chunk version 3 refused every ring
 * made before it. */
static void test_sb_chunk_version_2(void)
{
	char path[300];
	uint64_t samples;
	struct fr_ring *r = NULL;
	char err[512];

	path_of(path, sizeof(path), "v2.ring");
	samples = make_sb_ring(path);
	set_sb_chunk_version(path, 0, FR_CHUNK_VERSION_MIN);
	set_sb_chunk_version(path, RING_BYTES, FR_CHUNK_VERSION_MIN);
	check_sb_open(path, FR_RING_RDONLY, samples, FR_RING_SB_PRIMARY, "chunk version 2 ring");
	check_sb_open(path, 0, samples, FR_RING_SB_PRIMARY, "chunk version 2 ring, writable");
	set_sb_chunk_version(path, 0, FR_CHUNK_VERSION + 1);
	set_sb_chunk_version(path, RING_BYTES, FR_CHUNK_VERSION + 1);
	CHECK(fr_ring_open(&r, path, RING_SIZE, SEG, FR_RING_RDONLY, err, sizeof(err)) ==
			      -EPROTONOSUPPORT &&
		      strstr(err, "versions 2 to"),
	      "a later chunk version not refused: %s", err);
	fr_ring_close(r);
}

int main(void)
{
	if (ring_dir_init() != 0)
		return 1;
	test_sb_damaged_primary();
	test_sb_old_ring();
	test_sb_chunk_version_2();
	test_sb_both_damaged();
	return ring_dir_fini("test_ring_sb");
}
