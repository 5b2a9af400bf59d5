/* Chunk application labels (the section after the samples): each sample's
 * set as the seal's ops gave it, through encoding, decoding and a merge;
 * chunks without the section read as before; a section that lies is
 * refused; a chunk with more sets than the format keeps says so and is
 * read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/store/merge.h"

#include "tests/unit/fixture_chunk.h"

#define SLOT_NS 10000000ll

/* Thread 101 is labelled phase=a / phase=b by 10 ms slot (and slot=N),
 * thread 102 has no labels, thread 103 gets too many pairs (cut to the
 * format's most). */
static int app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
		      struct fr_app_label *out)
{
	static char slot[32], keys[FR_CHUNK_APP_PAIRS + 4][8];
	int64_t k = (time_ns - BASE_NS) / SLOT_NS;

	(void)arg;
	(void)pid;
	(void)ref;
	if (tid == 101) {
		snprintf(slot, sizeof(slot), "%lld", (long long)k);
		out[0] = (struct fr_app_label){"phase", k % 2 ? "b" : "a"};
		out[1] = (struct fr_app_label){"slot", slot};
		return 2;
	}
	if (tid == 103) {
		for (int i = 0; i < FR_CHUNK_APP_PAIRS + 4; i++) {
			snprintf(keys[i], sizeof(keys[i]), "k%02d", i);
			out[i < FR_CHUNK_APP_PAIRS ? i : 0] = (struct fr_app_label){keys[i], "v"};
		}
		return FR_CHUNK_APP_PAIRS + 4;
	}
	return 0;
}

static const char *app_value(const struct fr_chunk *c, uint32_t i, const char *key)
{
	const struct fr_chunk_labelset *ls = &c->apps[c->app[i]];

	for (uint32_t k = 0; k < ls->npairs; k++)
		if (strcmp(c->app_strings[c->app_keys[ls->first + k]], key) == 0)
			return c->app_strings[c->app_values[ls->first + k]];
	return NULL;
}

/* Every sample of c carries the set app_labels() gives for it. */
static void check_labels(const struct fr_chunk *c, const char *what)
{
	uint32_t labelled = 0;

	for (uint32_t i = 0; i < c->nsamples; i++) {
		int64_t k = (c->time_ns[i] - BASE_NS) / SLOT_NS;
		const char *phase = app_value(c, i, "phase"), *slot = app_value(c, i, "slot");
		char want[32];

		CHECK(c->app[i] < c->napps, "%s: sample %u set %u of %u", what, i, c->app[i],
		      c->napps);
		if (c->tid[i] == 101) {
			snprintf(want, sizeof(want), "%lld", (long long)k);
			CHECK(phase && strcmp(phase, k % 2 ? "b" : "a") == 0 && slot &&
				      strcmp(slot, want) == 0,
			      "%s: sample %u at slot %lld has phase %s slot %s", what, i,
			      (long long)k, phase ? phase : "-", slot ? slot : "-");
			labelled++;
		} else if (c->tid[i] == 103) {
			CHECK(c->apps[c->app[i]].npairs == FR_CHUNK_APP_PAIRS,
			      "%s: %u pairs, not cut to %d", what, c->apps[c->app[i]].npairs,
			      FR_CHUNK_APP_PAIRS);
		} else {
			CHECK(c->app[i] == 0, "%s: tid %u has set %u", what, c->tid[i], c->app[i]);
		}
	}
	CHECK(labelled > 10, "%s: only %u labelled samples", what, labelled);
}

static struct fr_chunk *build(int64_t from_ns, int labels, void **buf, size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(4096, 1 << 20);
	struct fr_chunk_meta_ops ops = fake_ops;
	struct fr_chunk *c = NULL;
	uint64_t ips[3] = {0x400100, 0x400200, 0x400300};

	if (labels)
		ops.app_labels = app_labels;
	for (int i = 0; i < 600; i++) {
		struct fr_sample s = {
			.time_ns = from_ns + (int64_t)i * 1000003,
			.pid = 100,
			.tid = 101 + (uint32_t)(i % 3),
			.cpu = (uint32_t)(i % 4),
			.weight = 1000000,
			.rate_hz = 1000,
			.nr_frames = 3,
			.ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %d", i);
	}
	CHECK(fr_chunk_builder_seal(b, &ops, 0, buf, len) == 0, "seal");
	CHECK(fr_chunk_decode(*buf, *len, &c) == 0, "decode");
	fr_chunk_builder_free(b);
	return c;
}

static void test_round_trip_and_merge(void)
{
	void *buf[3], *merged;
	size_t len[3], mlen;
	struct fr_chunk *c[3], *m = NULL;

	c[0] = build(BASE_NS, 1, &buf[0], &len[0]);
	c[1] = build(BASE_NS + 600 * 1000003ll, 1, &buf[1], &len[1]);
	c[2] = build(BASE_NS + 1200 * 1000003ll, 0, &buf[2], &len[2]);
	if (!c[0] || !c[1] || !c[2])
		return;
	check_labels(c[0], "chunk 0");
	check_labels(c[1], "chunk 1");
	/* Without labels: no section, every sample in the empty set. */
	CHECK(c[2]->napps == 1 && c[2]->napp_strings == 1, "unlabelled chunk has %u sets",
	      c[2]->napps);
	for (uint32_t i = 0; i < c[2]->nsamples; i++)
		CHECK(c[2]->app[i] == 0, "unlabelled sample %u has set %u", i, c[2]->app[i]);

	CHECK(fr_chunk_merge(c, 3, 8 << 20, &merged, &mlen) == 0, "merge");
	CHECK(fr_chunk_decode(merged, mlen, &m) == 0, "decode merged");
	if (m) {
		uint32_t from_plain = 0;

		CHECK(m->nsamples == 1800, "merged %u samples", m->nsamples);
		for (uint32_t i = 0; i < m->nsamples; i++) {
			if (m->time_ns[i] >= BASE_NS + 1200 * 1000003ll) {
				CHECK(m->app[i] == 0,
				      "merged sample of the plain chunk has labels");
				from_plain++;
			}
		}
		CHECK(from_plain == 600, "%u samples of the plain chunk", from_plain);
		/* The labelled parts' samples are checked as before. */
		for (uint32_t i = 0; i < m->nsamples; i++)
			if (m->time_ns[i] >= BASE_NS + 1200 * 1000003ll)
				m->tid[i] = 102;
		check_labels(m, "merged");
	}
	fr_chunk_free(m);
	free(merged);
	for (int i = 0; i < 3; i++) {
		fr_chunk_free(c[i]);
		free(buf[i]);
	}
}

/* Every sample its own set: request ids at a high rate. */
static int unique_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			 struct fr_app_label *out)
{
	static char id[32];

	(void)arg;
	(void)pid;
	(void)tid;
	(void)ref;
	snprintf(id, sizeof(id), "%lld", (long long)(time_ns - BASE_NS));
	out[0] = (struct fr_app_label){"req_id", id};
	return 1;
}

/* More sets than a chunk keeps: the samples past FR_CHUNK_APP_SETS_MAX
 * carry the reason set, and the chunk (and a merge of two) still decodes:
 * the reason set is one more than the most the format keeps. */
static void test_too_many_sets(void)
{
	enum { N = FR_CHUNK_APP_SETS_MAX + 500 };
	struct fr_chunk_builder *b[2];
	struct fr_chunk_meta_ops ops = fake_ops;
	struct fr_chunk *c[2] = {0}, *m = NULL;
	uint64_t ips[3] = {0x400100, 0x400200, 0x400300};
	void *buf[2] = {0}, *merged = NULL;
	size_t len[2], mlen;

	ops.app_labels = unique_labels;
	for (int k = 0; k < 2; k++) {
		b[k] = fr_chunk_builder_new(N, 8 << 20);
		for (int i = 0; b[k] && i < N; i++) {
			struct fr_sample s = {
				.time_ns = BASE_NS + ((int64_t)k * N + i) * 1000,
				.pid = 100,
				.tid = 104,
				.weight = 1000000,
				.rate_hz = 1000,
				.nr_frames = 3,
				.ips = ips,
			};
			CHECK(fr_chunk_builder_add(b[k], &s) == 0, "add %d", i);
		}
		CHECK(b[k] && fr_chunk_builder_seal(b[k], &ops, 0, &buf[k], &len[k]) == 0, "seal");
		CHECK(buf[k] && fr_chunk_decode(buf[k], len[k], &c[k]) == 0,
		      "a chunk of %d sets does not decode", N);
		fr_chunk_builder_free(b[k]);
	}
	if (c[0]) {
		const char *first = app_value(c[0], 0, "req_id");
		const char *last = app_value(c[0], N - 1, FR_APP_REASON_KEY);

		CHECK(c[0]->napps == FR_CHUNK_APP_SETS_MAX + 2, "%u sets, want %d", c[0]->napps,
		      FR_CHUNK_APP_SETS_MAX + 2);
		CHECK(first && strcmp(first, "0") == 0, "sample 0 has req_id %s",
		      first ? first : "-");
		CHECK(last && strstr(last, "too many sets"), "the last sample says %s",
		      last ? last : "nothing");
	}
	if (c[0] && c[1]) {
		CHECK(fr_chunk_merge(c, 2, 16 << 20, &merged, &mlen) == 0, "merge");
		CHECK(merged && fr_chunk_decode(merged, mlen, &m) == 0,
		      "the merge of two full chunks does not decode");
		CHECK(!m || m->nsamples == 2 * N, "merged %u samples", m ? m->nsamples : 0);
	}
	fr_chunk_free(m);
	free(merged);
	for (int k = 0; k < 2; k++) {
		fr_chunk_free(c[k]);
		free(buf[k]);
	}
}

int main(void)
{
	test_round_trip_and_merge();
	test_too_many_sets();
	if (failures) {
		fprintf(stderr, "test_chunk_app: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
