/* Chunk codec under damage: corruption of every byte, mutated blocks
 * re-wrapped with valid checksums, random garbage, and hand-made blocks
 * with label sets and table references the builder never makes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"

#include "tests/unit/fixture_chunk.h"

/* Mutated blocks of the chunk `buf` (200 samples) with valid checksums:
 * decode fails cleanly or yields a consistent chunk. Returns -1 when the
 * block cannot be taken out of `buf` to begin with. */
static int check_mutated_blocks(const unsigned char *buf)
{
	unsigned char *raw = NULL, *mut = NULL;
	struct fr_chunk *c = NULL;
	int ret;

	uint32_t raw_len = get_le32(buf + 36);

	raw = malloc(raw_len + 64);
	mut = malloc(raw_len + 64);
	if (!raw || !mut ||
	    fr_zstd_decompress(raw, raw_len, buf + 64, get_le32(buf + 40)) != (ssize_t)raw_len) {
		CHECK(0, "decompress for mutation");
		free(raw);
		free(mut);
		return -1;
	}
	{
		size_t l;
		unsigned char *w = wrap_block(buf, raw, raw_len, 200, &l);

		c = NULL;
		CHECK(w && fr_chunk_decode(w, l, &c) == 0, "re-wrapped block does not decode");
		fr_chunk_free(c);
		free(w);
	}
	int ok = 0, bad = 0;

	for (int iter = 0; iter < 4000; iter++) {
		size_t mlen = raw_len, l;
		unsigned char *w;
		uint32_t ns = 200;

		memcpy(mut, raw, raw_len);
		switch (iter % 5) {
		case 0: /* one random byte */ mut[rng() % mlen] = (unsigned char)rng(); break;
		case 1: /* a few bit flips */
			for (int k = 0; k < 3; k++)
				mut[rng() % mlen] ^= (unsigned char)(1u << (rng() % 8));
			break;
		case 2: /* truncate */ mlen = 1 + rng() % mlen; break;
		case 3: /* a huge varint somewhere */
		{
			size_t at = rng() % (mlen > 10 ? mlen - 10 : 1);

			for (int k = 0; k < 10 && at + (size_t)k < mlen; k++)
				mut[at + (size_t)k] = k == 9 ? (unsigned char)(rng() & 0x7f) : 0xff;
		} break;
		default: /* wrong sample count in the header */
			ns = (uint32_t)(rng() % 400);
			mut[rng() % mlen] = (unsigned char)rng();
			break;
		}
		w = wrap_block(buf, mut, mlen, ns, &l);
		if (!w)
			continue;
		c = NULL;
		ret = fr_chunk_decode(w, l, &c);
		CHECK(ret == 0 || ret == -EBADMSG, "mutated block: decode returned %d", ret);
		if (ret == 0) {
			check_invariants(c);
			ok++;
		} else {
			bad++;
		}
		fr_chunk_free(c);
		free(w);
		if (failures > 20)
			break;
	}
	printf("mutated blocks: %d decoded consistently, %d rejected\n", ok, bad);
	CHECK(bad > 1000, "only %d mutated blocks rejected", bad);
	free(raw);
	free(mut);
	return 0;
}

static void test_corruption(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(200, 1u << 20);
	struct stored st, prev;
	unsigned char *buf = NULL, *mut = NULL;
	struct fr_chunk *c;
	size_t len;
	int ret;

	for (int i = 0; i < 200; i++) {
		make_sample(&st, i, i ? &prev : NULL);
		fr_chunk_builder_add(b, &st.s);
		prev = st;
	}
	fr_chunk_builder_count(b, 0, 1, 2, 3);
	if (fr_chunk_builder_seal(b, &fake_ops, 0, (void **)&buf, &len) < 0) {
		CHECK(0, "seal");
		goto out;
	}

	/* Every bit of the header and a spread of payload bits. */
	for (size_t bit = 0; bit < len * 8; bit += bit < 64 * 8 ? 1 : 13) {
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		c = NULL;
		ret = fr_chunk_decode(buf, len, &c);
		CHECK(ret == -EBADMSG, "flipped bit %zu: decode returned %d", bit, ret);
		CHECK(fr_chunk_verify(buf, len) == -EBADMSG, "flipped bit %zu verified", bit);
		fr_chunk_free(c);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (failures > 20)
			goto out;
	}
	/* Truncated or extended. */
	for (size_t l = 0; l < len; l += 1 + l / 4) {
		c = NULL;
		CHECK(fr_chunk_decode(buf, l, &c) == -EBADMSG, "truncated to %zu decoded", l);
	}
	c = NULL;
	mut = malloc(len + 8);
	memcpy(mut, buf, len);
	memset(mut + len, 0, 8);
	CHECK(fr_chunk_decode(mut, len + 8, &c) == -EBADMSG, "extended chunk decoded");
	free(mut);
	mut = NULL;

	/* Valid headers of other versions: the first format, and a later one. */
	for (unsigned char version = 1; version <= FR_CHUNK_VERSION + 1;
	     version += FR_CHUNK_VERSION) {
		unsigned char h[64];
		struct fr_chunk_header hdr;

		memcpy(h, buf, 64);
		h[4] = version;
		fix_header_crc(h);
		CHECK(fr_chunk_header_parse(h, 64, &hdr) == -EPROTONOSUPPORT,
		      "version %u header not reported as unsupported", version);
		mut = malloc(len);
		memcpy(mut, buf, len);
		memcpy(mut, h, 64);
		c = NULL;
		CHECK(fr_chunk_decode(mut, len, &c) == -EPROTONOSUPPORT,
		      "version %u chunk not refused as unsupported", version);
		free(mut);
		mut = NULL;
	}

	if (check_mutated_blocks(buf) != 0)
		goto out;

	/* Random garbage, some with a valid-looking header. */
	for (int iter = 0; iter < 2000; iter++) {
		size_t l = rng() % 2000;
		unsigned char *g = malloc(l + 1);

		for (size_t i = 0; i < l; i++)
			g[i] = (unsigned char)rng();
		if (iter % 2 && l >= 64) {
			memcpy(g, buf, 16);
			put_le32(g + 40, (uint32_t)(l - 64));
			put_le32(g + 56, fr_crc32c(0, g + 64, l - 64));
			fix_header_crc(g);
		}
		c = NULL;
		ret = fr_chunk_decode(g, l, &c);
		CHECK(ret == -EBADMSG, "garbage of %zu bytes: decode returned %d", l, ret);
		fr_chunk_free(c);
		free(g);
	}
out:
	free(mut);
	free(buf);
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Hand-made blocks: label sets and table checks the builder never makes */

struct blk {
	unsigned char p[512];
	size_t n;
};

static void bv(struct blk *b, uint64_t v)
{
	while (v >= 0x80) {
		b->p[b->n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (unsigned char)v;
}

static void bs(struct blk *b, const char *s)
{
	bv(b, strlen(s));
	memcpy(b->p + b->n, s, strlen(s));
	b->n += strlen(s);
}

enum variant {
	V_GOOD,
	V_BAD_LABELSET_ID,
	V_BAD_LABEL_STRING,
	V_PROC_INDEX,
	V_MAP_WRAP,
	V_KERNEL_GT_FRAMES,
	V_TRAILING,
	V_NONEMPTY_STRING0,
	V_TIME_OUTSIDE,
	V_BIG_BUILD_ID,
	V_BUILD_ID_REF,
	V_PID_OVERFLOW,
	V_SHARED_TOO_MANY,
	V_STACK_ID,
	V_RUNS_SHORT,
	V_RUNS_LONG,
	V_CPU_OVERFLOW,
};

static void bz(struct blk *b, int64_t v)
{
	bv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* The metadata of make_block()'s block: strings, build ids, pids,
 * processes, threads and mappings. */
static void make_block_meta(struct blk *b, enum variant v)
{
	bv(b, 4); /* strings */
	bs(b, v == V_NONEMPTY_STRING0 ? "x" : "");
	bs(b, "k");
	bs(b, "v");
	bs(b, "/bin/x");
	bv(b, 1); /* build ids */
	bv(b, v == V_BIG_BUILD_ID ? 21 : 4);
	for (int i = 0; i < (v == V_BIG_BUILD_ID ? 21 : 4); i++)
		b->p[b->n++] = (unsigned char)(0xa0 + i);
	bv(b, 2); /* pids: 1, 2 */
	bv(b, 1);
	bv(b, 0);
	bv(b, 2); /* procs: index gap, uid, comm, exe, start, build id */
	bv(b, 0);
	bv(b, 0);
	bv(b, 1);
	bv(b, 3);
	bz(b, -7);
	bv(b, v == V_BUILD_ID_REF ? 2 : 1);
	bv(b, v == V_PROC_INDEX ? 1 : 0);
	bv(b, 0);
	bv(b, 1);
	bv(b, 3);
	bv(b, 0);
	bv(b, 0);
	bv(b, 1); /* threads: tid gap, pid - tid, name */
	bv(b, 1);
	bz(b, 0);
	bv(b, 2);
	bv(b, 2); /* maps: pid index delta, start (gap), len, pgoff, path, build id */
	bv(b, 0);
	bv(b, 0x1000);
	bv(b, 0x1000);
	bv(b, 0);
	bv(b, 3);
	bv(b, 0);
	bv(b, 0);
	bv(b, 0);
	if (v == V_MAP_WRAP)
		bv(b, UINT64_MAX - 0x1000);
	else
		bv(b, 0x1000);
	bv(b, 0x10);
	bv(b, 3);
	bv(b, 1);
}

/* A version 2 block of three samples: pids {1, 2}; two stacks sharing
 * their two root frames; cpu 0 on a 4 ns grid and cpu 1 without one. */
static void make_block(struct blk *b, enum variant v)
{
	b->n = 0;
	make_block_meta(b, v);
	bv(b, 2); /* stacks: pid index, nr_kernel, nr_frames, shared columns */
	bv(b, 0);
	bv(b, 1);
	bv(b, v == V_KERNEL_GT_FRAMES ? 3 : 0);
	bv(b, 0);
	bv(b, 2);
	bv(b, 3);
	bv(b, 0);
	bv(b, v == V_SHARED_TOO_MANY ? 3 : 2);
	/* Frames root first: 0x11f0 (from 0), 0x1100 (from its caller); then
	 * 0x1180 (from its caller 0x1100). */
	bz(b, 0x11f0);
	bz(b, -0xf0);
	bz(b, 0x80);
	bv(b, 2); /* labelsets */
	bv(b, 1);
	bv(b, 1);
	bv(b, v == V_BAD_LABEL_STRING ? 4 : 2);
	bv(b, 2);
	bv(b, 2);
	bv(b, 1);
	bv(b, 1);
	bv(b, 1);
	bv(b, 0); /* events */
	bv(b, 3); /* samples */
	bv(b, 2); /* cpu runs: cpu gap, length, period, first time */
	bv(b, v == V_CPU_OVERFLOW ? UINT32_MAX : 0);
	bv(b, 2);
	bv(b, 4);
	bv(b, 0);
	bv(b, 0);
	bv(b, 1);
	bv(b, 0);
	bv(b, 5);
	bv(b, 2);			    /* periods: 1000 + 2 x 4 */
	bz(b, v == V_TIME_OUTSIDE ? 3 : 2); /* jitter: 1010 */
	bz(b, 0);
	bz(b, v == V_STACK_ID ? 2 : 1);
	bz(b, -1); /* stacks 0, 1, 0 */
	bz(b, 0);  /* tids: pid - tid */
	if (v == V_PID_OVERFLOW)
		bz(b, 1ll << 33);
	else
		bz(b, 0);
	bz(b, 0);
	bv(b, 1);
	bv(b, 0);
	bv(b, 3); /* event runs */
	bv(b, 2);
	bv(b, 5);
	bv(b, 1);
	bv(b, 6);
	bv(b, v == V_RUNS_SHORT ? 1 : v == V_RUNS_LONG ? 3 : 2);
	bv(b, 1);
	bv(b, 99);
	bv(b, 3); /* rate */
	bv(b, 2);
	bv(b, 1);
	bv(b, 1);
	bv(b, v == V_BAD_LABELSET_ID ? 3 : 2);
	bv(b, 2);
	if (v == V_TRAILING)
		bv(b, 0);
}

/* The decoded V_GOOD block: its label sets, samples, tables and lookups. */
static void check_handmade_good(const struct fr_chunk *c)
{
	static const int64_t times[] = {1000, 1010, 1005};
	static const uint32_t cpus[] = {0, 0, 1}, stacks[] = {0, 1, 0}, pids[] = {1, 2, 1};
	static const uint64_t weights[] = {5, 6, 6};

	CHECK(c->nlabelsets == 3, "%u label sets", c->nlabelsets);
	CHECK(c->labelsets[1].npairs == 1 &&
		      strcmp(c->strings[c->label_keys[c->labelsets[1].first]], "k") == 0 &&
		      strcmp(c->strings[c->label_values[c->labelsets[1].first]], "v") == 0,
	      "label set 1");
	CHECK(c->labelsets[2].npairs == 2 &&
		      strcmp(c->strings[c->label_values[c->labelsets[2].first + 1]], "k") == 0,
	      "label set 2");
	CHECK(c->nsamples == 3, "%u samples", c->nsamples);
	for (uint32_t i = 0; i < 3 && i < c->nsamples; i++) {
		CHECK(c->time_ns[i] == times[i], "sample %u time %lld", i,
		      (long long)c->time_ns[i]);
		CHECK(c->cpu[i] == cpus[i] && c->stack[i] == stacks[i] && c->pid[i] == pids[i] &&
			      c->tid[i] == pids[i],
		      "sample %u ids", i);
		CHECK(c->weight[i] == weights[i] && c->rate_hz[i] == 99 && c->event[i] == 0,
		      "sample %u runs", i);
		CHECK(c->labelset[i] == (i ? 2u : 1u), "sample %u label set", i);
	}
	CHECK(c->nstacks == 2 && c->stacks[0].nr_frames == 2 && c->stacks[1].nr_frames == 3 &&
		      c->stacks[0].pid == 1 && c->stacks[1].pid == 2,
	      "stack shapes");
	if (c->nstacks == 2) {
		const uint64_t *f0 = &c->frames[c->stacks[0].first];
		const uint64_t *f1 = &c->frames[c->stacks[1].first];

		CHECK(f0[0] == 0x1100 && f0[1] == 0x11f0, "frames of stack 0");
		CHECK(f1[0] == 0x1180 && f1[1] == 0x1100 && f1[2] == 0x11f0,
		      "frames of stack 1 (shared root)");
	}
	CHECK(c->nprocs == 2 && c->procs[0].pid == 1 && c->procs[0].start_ns == 993 &&
		      c->procs[0].build_id_len == 4 && c->procs[0].build_id[3] == 0xa3 &&
		      c->procs[1].build_id_len == 0,
	      "procs");
	CHECK(c->nthreads == 1 && c->threads[0].tid == 1 && c->threads[0].pid == 1 &&
		      strcmp(c->strings[c->threads[0].name], "v") == 0,
	      "thread");
	CHECK(c->nmaps == 2 && c->maps[1].start == 0x2000 && c->maps[1].pgoff == 0x10 &&
		      c->maps[1].build_id_len == 4 && c->maps[0].build_id_len == 0,
	      "maps");
	CHECK(fr_chunk_find_map(c, 1, 0x1100) == &c->maps[0], "find map 0");
	CHECK(fr_chunk_find_map(c, 1, 0x2fff) == &c->maps[1], "find map 1 end");
	CHECK(fr_chunk_find_map(c, 1, 0x3000) == NULL, "find past map 1");
	CHECK(fr_chunk_find_map(c, 1, 0xfff) == NULL, "find before map 0");
	CHECK(fr_chunk_find_map(c, 2, 0x1100) == NULL, "find other pid");
	CHECK(fr_chunk_find_proc(c, 2) == &c->procs[1], "find proc 2");
	CHECK(fr_chunk_find_proc(c, 3) == NULL, "find proc 3");
	CHECK(fr_chunk_find_thread(c, 1) == &c->threads[0], "find thread");
}

static void test_handmade(void)
{
	unsigned char tmpl[64] = {0};
	struct blk blk;
	struct fr_chunk *c = NULL;
	unsigned char *w;
	size_t l;

	put_le32(tmpl, FR_CHUNK_MAGIC);
	tmpl[4] = FR_CHUNK_VERSION_MIN; /* no sections: nothing may follow */
	tmpl[6] = 64;
	/* first_ns 1000, last_ns 1010 */
	tmpl[16] = 0xe8;
	tmpl[17] = 0x03;
	tmpl[24] = 0xf2;
	tmpl[25] = 0x03;

	make_block(&blk, V_GOOD);
	w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
	CHECK(w && fr_chunk_decode(w, l, &c) == 0, "hand-made block does not decode");
	free(w);
	if (c) {
		check_handmade_good(c);
		fr_chunk_free(c);
		c = NULL;
	}
	/* The smallest block: "" and eight empty tables. */
	{
		static const unsigned char minimal[16] = {1, 0};

		w = wrap_block(tmpl, minimal, sizeof(minimal), 0, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == 0, "minimal block does not decode");
		if (c)
			CHECK(c->nstrings == 1 && c->nsamples == 0 && c->nlabelsets == 1 &&
				      fr_chunk_find_map(c, 1, 1) == NULL &&
				      fr_chunk_find_proc(c, 1) == NULL &&
				      fr_chunk_find_thread(c, 1) == NULL,
			      "minimal block content");
		free(w);
		fr_chunk_free(c);
		c = NULL;
		w = wrap_block(tmpl, minimal, 15, 0, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == -EBADMSG, "15-byte block decoded");
		free(w);
		fr_chunk_free(c);
		c = NULL;
	}
	for (int v = V_BAD_LABELSET_ID; v <= V_CPU_OVERFLOW; v++) {
		make_block(&blk, (enum variant)v);
		w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == -EBADMSG, "variant %d decoded", v);
		free(w);
		fr_chunk_free(c);
		c = NULL;
	}
	fr_chunk_free(NULL);
	fr_chunk_builder_free(NULL);
}

/* ------------------------------------------------------------------ */
/* Hand-made sections (version 3): names over time and an unknown one  */

enum svariant {
	S_GOOD,
	S_TIME_BACK,
	S_NAME_ID,
	S_BEFORE_ID,
	S_NO_CHANGES,
	S_IDS_DOWN,
	S_LEN_PAST_END,
	S_LEN_LONGER,
	S_TID_OVERFLOW,
	S_ZERO_ID,
	S_CREATOR_TID,
	S_CREATOR_ZERO,
	S_CREATORS_FIRST,
};

/* The V_GOOD block, then: section 1 (thread 1: "k", from 1000 "v", from
 * 1006 "k"; thread 2: "", from 990 "/bin/x") and section 9 (3 bytes a
 * reader does not know). */
static void make_sections(struct blk *b, enum svariant v)
{
	struct blk nm = {.n = 0};

	make_block(b, V_GOOD);
	bv(&nm, 2); /* entries */
	bv(&nm, 1); /* tid 1 */
	bv(&nm, v == S_BEFORE_ID ? 4 : 1);
	bv(&nm, v == S_NO_CHANGES ? 0 : 2);
	if (v != S_NO_CHANGES) {
		bz(&nm, 0);
		bv(&nm, v == S_NAME_ID ? 4 : 2);
		bz(&nm, v == S_TIME_BACK ? -1 : 6);
		bv(&nm, 1);
	}
	bv(&nm, v == S_TID_OVERFLOW ? UINT32_MAX : 0); /* tid 2 */
	bv(&nm, 0);
	bv(&nm, 1);
	bz(&nm, -10);
	bv(&nm, 3);
	if (v == S_IDS_DOWN) {
		bv(b, 9);
		bv(b, 0);
	}
	bv(b, v == S_ZERO_ID ? 0 : 1);
	bv(b, v == S_LEN_PAST_END ? nm.n + 8 : v == S_LEN_LONGER ? nm.n + 1 : nm.n);
	memcpy(b->p + b->n, nm.p, nm.n);
	b->n += nm.n;
	if (v == S_LEN_LONGER)
		bv(b, 0);
	/* Section 2: thread 1 created by thread 7. */
	if (v != S_IDS_DOWN) {
		bv(b, 2);
		bv(b, 3);
		bv(b, 1);
		bv(b, v == S_CREATOR_TID ? 2 : 1);
		bv(b, v == S_CREATOR_ZERO ? 0 : 7);
		bv(b, 9);
		bv(b, 3);
		bv(b, 1);
		bv(b, 2);
		bv(b, 3);
	}
	if (v == S_CREATORS_FIRST) {
		/* Section 2 again after 9: ids must increase. */
		bv(b, 2);
		bv(b, 0);
	}
}

static const char *name_at(const struct fr_chunk *c, uint32_t tid, int64_t t)
{
	return c->strings[fr_chunk_thread_name_at(c, tid, t)];
}

static void test_handmade_sections(void)
{
	unsigned char tmpl[64] = {0};
	struct blk blk;
	struct fr_chunk *c = NULL;
	unsigned char *w;
	size_t l;

	put_le32(tmpl, FR_CHUNK_MAGIC);
	tmpl[4] = FR_CHUNK_VERSION;
	tmpl[6] = 64;
	tmpl[16] = 0xe8; /* first_ns 1000, last_ns 1010 */
	tmpl[17] = 0x03;
	tmpl[24] = 0xf2;
	tmpl[25] = 0x03;

	make_sections(&blk, S_GOOD);
	w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
	CHECK(w && fr_chunk_decode(w, l, &c) == 0, "block with sections does not decode");
	free(w);
	if (c) {
		check_handmade_good(c);
		CHECK(c->nnames == 2 && c->nname_changes == 3, "%u names, %u changes", c->nnames,
		      c->nname_changes);
		CHECK(strcmp(name_at(c, 1, 999), "k") == 0, "thread 1 before its first rename");
		CHECK(strcmp(name_at(c, 1, 1000), "v") == 0, "thread 1 at its first rename");
		CHECK(strcmp(name_at(c, 1, 1005), "v") == 0, "thread 1 between its renames");
		CHECK(strcmp(name_at(c, 1, 1006), "k") == 0, "thread 1 at its second rename");
		/* Thread 2 is in no thread table: its names serve its comm. */
		CHECK(strcmp(name_at(c, 2, 989), "") == 0 &&
			      strcmp(name_at(c, 2, 995), "/bin/x") == 0,
		      "thread 2's names");
		CHECK(strcmp(c->strings[fr_chunk_comm_at(c, 2, 995)], "/bin/x") == 0 &&
			      strcmp(c->strings[fr_chunk_comm_at(c, 1, 1001)], "v") == 0,
		      "comm from the main thread's names");
		CHECK(strcmp(name_at(c, 3, 1000), "") == 0, "unknown thread named");
		CHECK(c->threads[0].creator == 7, "thread 1's creator: %u", c->threads[0].creator);
		fr_chunk_free(c);
		c = NULL;
	}
	/* The same in version 2: nothing may follow the samples. */
	tmpl[4] = FR_CHUNK_VERSION_MIN;
	w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
	CHECK(w && fr_chunk_decode(w, l, &c) == -EBADMSG, "sections in a version 2 chunk");
	free(w);
	fr_chunk_free(c);
	c = NULL;
	tmpl[4] = FR_CHUNK_VERSION;
	for (int v = S_TIME_BACK; v <= S_CREATORS_FIRST; v++) {
		make_sections(&blk, (enum svariant)v);
		w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == -EBADMSG, "section variant %d decoded", v);
		free(w);
		fr_chunk_free(c);
		c = NULL;
	}
}

int main(void)
{
	test_corruption();
	test_handmade();
	test_handmade_sections();
	if (failures) {
		fprintf(stderr, "test_chunk: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
