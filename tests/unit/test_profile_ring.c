/* What a profile says about the ring it was read from: an empty or short
 * ring, damaged chunks, the result fields, chunks of counters only, and
 * the memory budget and stop callback of a query. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

#include "tests/unit/fixture.h"

static void test_short_ring(void)
{
	const int64_t oldest = T0 + 100 * SEC + 123456789;
	struct fr_ring *r = test_ring_create("short");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t tn, dn;

	if (!r)
		return;
	/* Empty: a valid empty profile and a word about it. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "empty") == 0) {
		CHECK(res.warning[0], "empty ring: no warning");
		CHECK(res.chunks == 0 && res.samples_seen == 0 && res.stacks == 0,
		      "empty ring: chunks %" PRIu64 " seen %" PRIu64 " stacks %" PRIu64, res.chunks,
		      res.samples_seen, res.stacks);
		CHECK(profile_times(&o, &tn, &dn) == 0, "empty ring: profile does not decode");
		if (raw_read(&raw, &o, "the profile of an empty ring") == 0) {
			CHECK(raw.nsamples == 0, "empty ring: %d samples", raw.nsamples);
			CHECK(strstr(raw.text, "PeriodType: cpu nanoseconds"),
			      "empty ring: no period type");
			raw_free(&raw);
		}
	}
	out_free(&o);

	w_init(&w, r);
	for (int i = 0; i < 100; i++)
		w_add(&w, oldest + i * (SEC / 10), PID_APP, PID_APP, 0, 99, ST_USER);
	w_fini(&w);

	req_init(&q, T0, T0 + 200 * SEC, 0);
	if (run(r, &q, &res, &o, "short") == 0) {
		CHECK(strstr(res.warning, "holds samples only since"),
		      "ring shorter than the window: warning \"%s\"", res.warning);
		CHECK(res.covered_t0 == oldest, "covered_t0 %" PRId64 ", want %" PRId64,
		      res.covered_t0, oldest);
		CHECK(res.samples_kept == 100, "kept %" PRIu64, res.samples_kept);
		CHECK(profile_times(&o, &tn, &dn) == 0, "profile does not decode");
		CHECK(tn == oldest, "time_nanos %" PRId64 ", want the oldest sample %" PRId64, tn,
		      oldest);
		CHECK(dn == T0 + 200 * SEC - oldest, "duration %" PRId64 ", want %" PRId64, dn,
		      T0 + 200 * SEC - oldest);
		if (raw_read(&raw, &o, "the short-ring profile") == 0) {
			CHECK(strstr(raw.text, "holds samples only since"),
			      "the warning is not among the comments");
			raw_free(&raw);
		}
	}
	out_free(&o);

	/* A window the ring covers whole: no warning. */
	req_init(&q, oldest, oldest + 5 * SEC, 0);
	if (run(r, &q, &res, &o, "covered") == 0) {
		CHECK(res.warning[0] == '\0', "covered window: warning \"%s\"", res.warning);
		CHECK(res.samples_kept == 50, "covered window: kept %" PRIu64 ", want 50",
		      res.samples_kept);
	}
	out_free(&o);
	test_ring_done(r);
}

static int flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	unsigned char c;
	int ok;

	if (fd < 0)
		return -1;
	ok = pread(fd, &c, 1, (off_t)off) == 1;
	c ^= 0x5a;
	ok = ok && pwrite(fd, &c, 1, (off_t)off) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static void test_corrupt_chunk(void)
{
	struct fr_ring *r = test_ring_create("corrupt");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct fr_ring_ref *refs = NULL;
	struct writer w;
	struct out o;
	struct raw raw;
	size_t nrefs = 0;
	char l1[64];
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int c = 0; c < 5; c++) {
		for (int i = 0; i < 10; i++)
			w_add(&w, T0 + c * SEC + i * (SEC / 100), PID_APP, TID(PID_APP, c), 0, 99,
			      ST_USER);
		w_seal(&w);
	}
	w_fini(&w);
	CHECK(fr_ring_sync(r) == 0, "fr_ring_sync");
	CHECK(fr_ring_query(r, T0, T0 + 60 * SEC, &refs, &nrefs) == 0 && nrefs == 5,
	      "query: %zu chunks, want 5", nrefs);
	if (nrefs != 5) {
		free(refs);
		test_ring_done(r);
		return;
	}
	/* Chunk 1: a payload byte; chunk 3: a header byte (first_ns). */
	CHECK(flip(fr_ring_path(r), refs[1].offset + FR_CHUNK_HEADER_LEN + refs[1].len / 2) == 0,
	      "corrupting chunk 1");
	CHECK(flip(fr_ring_path(r), refs[3].offset + 17) == 0, "corrupting chunk 3");
	free(refs);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "corrupt") == 0) {
		CHECK(res.chunks_skipped == 2, "chunks skipped %" PRIu64 ", want 2",
		      res.chunks_skipped);
		CHECK(res.chunks == 3, "chunks read %" PRIu64 ", want 3", res.chunks);
		CHECK(res.samples_seen == 30 && res.samples_kept == 30 && res.stacks == 3,
		      "seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64 ", want 30 30 3",
		      res.samples_seen, res.samples_kept, res.stacks);
		if (raw_read(&raw, &o, "the profile of a damaged ring") == 0) {
			for (int c = 0; c < 5; c++) {
				const char *want[] = {label(l1, sizeof(l1), "tid", TID(PID_APP, c)),
						      NULL};
				const struct rsample *s = find_sample(&raw, ST_USER, want);
				int damaged = c == 1 || c == 3;

				CHECK(damaged ? !s : s && s->v[0] == 10,
				      "chunk %d (%s): %" PRId64 " samples in the profile", c,
				      damaged ? "damaged" : "intact", s ? s->v[0] : 0);
			}
			CHECK(strstr(raw.text, "2 chunks of the window could not be read"),
			      "no comment about the damaged chunks");
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

static void test_result_fields(void)
{
	struct fr_ring *r = test_ring_create("fields");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 30; i++)
		w_add(&w, T0 + i * PERIOD_99, i % 2 ? PID_APP : PID_DB, i % 2 ? PID_APP : PID_DB, 0,
		      99, i % 3 ? ST_USER : ST_KERNEL);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 7, 1, 2);
	w_seal(&w);
	for (int i = 30; i < 40; i++)
		w_add(&w, T0 + i * PERIOD_99, PID_WEB, PID_WEB, 1, 99, ST_OTHER);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 5, 0, 0);
	w_fini(&w);

	req_init(&q, T0, T0 + 10 * SEC, 0);
	if (run(r, &q, &res, &o, "fields") == 0) {
		CHECK(res.chunks == 2, "chunks %" PRIu64 ", want 2", res.chunks);
		CHECK(res.chunks_skipped == 0, "chunks skipped %" PRIu64, res.chunks_skipped);
		CHECK(res.samples_seen == 40, "samples seen %" PRIu64 ", want 40",
		      res.samples_seen);
		CHECK(res.samples_kept == 40, "samples kept %" PRIu64 ", want 40",
		      res.samples_kept);
		/* app and db each with the user and the kernel stack, web with one. */
		CHECK(res.stacks == 5, "stacks %" PRIu64 ", want 5", res.stacks);
		CHECK(res.hz == 99, "hz %u, want 99", res.hz);
		CHECK(res.lost == 12, "lost %" PRIu64 ", want 12", res.lost);
		CHECK(res.covered_t0 == T0, "covered_t0 %" PRId64 ", want %" PRId64, res.covered_t0,
		      T0);
		CHECK(res.bytes == o.len, "bytes %" PRIu64 ", but the sink received %zu", res.bytes,
		      o.len);
		CHECK(res.warning[0] == '\0', "warning \"%s\"", res.warning);
		if (raw_read(&raw, &o, "the profile") == 0) {
			CHECK(raw.nsamples == (int)res.stacks,
			      "pprof shows %d samples, stacks %" PRIu64, raw.nsamples, res.stacks);
			CHECK(raw_total(&raw) == 40, "pprof total %" PRId64, raw_total(&raw));
			CHECK(strstr(raw.text, "Comment: cpu: 12 samples lost by the kernel"),
			      "no comment about lost samples");
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* The recorder seals chunks of counters alone when no sample came (every
 * sample lost, say): such a chunk has no stacks, is stamped with the time
 * it was sealed, and still counts in `lost`. */
static void test_counters_only_chunk(void)
{
	struct fr_ring *r = test_ring_create("counters");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct timespec ts;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t now;

	if (!r)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
	w_init(&w, r);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 3, 0, 0);
	w_seal(&w);
	for (int i = 0; i < 5; i++)
		w_add(&w, now + i * PERIOD_99, PID_APP, PID_APP, 0, 99, ST_USER);
	w_fini(&w);
	CHECK(w.chunks == 2, "wrote %u chunks, want 2", w.chunks);

	req_init(&q, now - 60 * SEC, now + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "counters") == 0) {
		CHECK(res.chunks == 2, "chunks %" PRIu64 ", want 2", res.chunks);
		CHECK(res.lost == 3, "lost %" PRIu64 ", want 3", res.lost);
		CHECK(res.samples_kept == 5 && res.stacks == 1,
		      "kept %" PRIu64 " stacks %" PRIu64 ", want 5 1", res.samples_kept,
		      res.stacks);
		if (raw_read(&raw, &o, "the profile") == 0) {
			CHECK(raw_total(&raw) == 5, "pprof total %" PRId64, raw_total(&raw));
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* Stops after `left` more chunks. */
static int stop_after(void *arg)
{
	int *left = arg;

	return (*left)-- <= 0;
}

/* A query under a memory budget: its estimate grows with the window's
 * samples (400 bytes each); a decoded-chunk cache of one byte gives the same profile (the
 * chunks are decoded again); a stop callback ends the query with
 * -ECANCELED and says why. */
static void test_budget_and_stop(void)
{
	struct fr_ring *r = test_ring_create("budget");
	struct fr_profile_request q;
	struct fr_profile_result res, res_small;
	struct out o = {0}, o_small = {0};
	struct writer w;
	char err[512] = "";
	int64_t e_all, e_none;
	int left, ret;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 2000; i++)
		w_add(&w, T0 + i * (SEC / 100), PID_APP, PID_APP, 0, 99,
		      i % 2 ? ST_USER : ST_KERNEL);
	w_fini(&w);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	e_all = fr_profile_estimate(r, &q);
	req_init(&q, T0 + 1000 * SEC, T0 + 1010 * SEC, 0);
	e_none = fr_profile_estimate(r, &q);
	CHECK(e_none > 0 && e_all >= e_none + 2000 * 400,
	      "estimates: 2000 samples %" PRId64 ", none %" PRId64, e_all, e_none);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	if (run(r, &q, &res, &o, "budget-full") == 0) {
		q.cache_bytes = 1;
		if (run(r, &q, &res_small, &o_small, "budget-nocache") == 0)
			CHECK(res_small.samples_kept == res.samples_kept &&
				      res_small.stacks == res.stacks && o_small.len == o.len &&
				      memcmp(o_small.buf, o.buf, o.len) == 0,
			      "without a cache: kept %" PRIu64 " stacks %" PRIu64 " (want %" PRIu64
			      ", %" PRIu64 ")",
			      res_small.samples_kept, res_small.stacks, res.samples_kept,
			      res.stacks);
	}
	out_free(&o);
	out_free(&o_small);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	left = 1;
	q.stop = stop_after;
	q.stop_arg = &left;
	memset(&o, 0, sizeof(o));
	ret = fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err));
	CHECK(ret == -ECANCELED && strcmp(err, "stopped: the client went away") == 0,
	      "stopped query: %d \"%s\"", ret, err);
	CHECK(o.len == 0, "a stopped query wrote %zu bytes", o.len);
	out_free(&o);
	test_ring_done(r);
}

/* A query that meets the journal's merge: the window's chunks sit in the
 * journal when the query lists them; before it reads them, the group is
 * merged into a segment and the journal goes round over their places
 * (the recorder's writer does this while a request reads). Every sample
 * of the window is still in the profile, read again where the merge put
 * it, and no chunk is counted as lost to damage. */
struct merge_race {
	struct fr_ring *r;
	struct fr_ring_ref first; /* the window's first chunk, in the journal */
	int done;
	int stale; /* the journal went round over it */
};

static int merge_then_wrap(void *arg)
{
	struct merge_race *m = arg;
	struct writer w;
	void *buf = NULL;

	if (m->done++)
		return 0;
	/* Later chunks: the first stores the window's group (merged), the
	 * rest fill the journal until it goes round over the window's. */
	w_init(&w, m->r);
	for (int k = 0; k < 20000 && !m->stale; k++) {
		for (int i = 0; i < 50; i++)
			w_add(&w, T0 + 100 * SEC + k * SEC / 10 + i * PERIOD_99 / 100, PID_WEB,
			      PID_WEB, (uint32_t)(i % 2), 99, i % NSTACKS);
		w_seal(&w);
		m->stale = fr_ring_read(m->r, &m->first, &buf) == -ESTALE;
		free(buf);
		buf = NULL;
	}
	w_fini(&w);
	return 0;
}

static void test_merge_race(void)
{
	char path[400], err[512];
	struct merge_race m = {0};
	struct fr_ring_ref *refs = NULL;
	size_t nrefs = 0;
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct fr_ring_stats st;
	struct writer w;
	struct out o = {0};
	int ret;

	snprintf(path, sizeof(path), "%s/merge-race.ring", tmpdir);
	ret = fr_ring_open(&m.r, path, RING_SIZE, RING_SEG, FR_RING_CREATE | FR_RING_JOURNAL, err,
			   sizeof(err));
	CHECK(ret == 0, "fr_ring_open with a journal: %d %s", ret, err);
	if (ret < 0)
		return;
	fr_ring_set_sync_interval(m.r, -1);
	fr_ring_get_stats(m.r, &st);
	CHECK(st.journal_size > 0, "the ring has no journal");
	w_init(&w, m.r);
	for (int c = 0; c < 4; c++) {
		for (int i = 0; i < 25; i++)
			w_add(&w, T0 + c * SEC + i * PERIOD_99, PID_APP, PID_APP, 0, 99, ST_USER);
		w_seal(&w);
	}
	w_fini(&w);
	CHECK(fr_ring_query(m.r, T0, T0 + 4 * SEC, &refs, &nrefs) == 0 && nrefs == 4,
	      "query: %zu chunks, want 4", nrefs);
	if (nrefs != 4) {
		free(refs);
		fr_ring_close(m.r);
		return;
	}
	m.first = refs[0];
	free(refs);
	req_init(&q, T0, T0 + 4 * SEC, 0);
	q.stop = merge_then_wrap;
	q.stop_arg = &m;
	if (run(m.r, &q, &res, &o, "merge-race") == 0) {
		CHECK(m.done > 0 && m.stale, "the journal did not go round over the window (%d)",
		      m.done);
		CHECK(res.samples_kept == 100 && res.chunks_skipped == 0,
		      "after the journal's merge: kept %" PRIu64 " of 100 samples, %" PRIu64
		      " chunks skipped",
		      res.samples_kept, res.chunks_skipped);
	}
	out_free(&o);
	fr_ring_close(m.r);
	unlink(path);
}

int main(void)
{
	if (fixture_init("profile-ring") != 0)
		return 1;
	test_short_ring();
	test_budget_and_stop();
	test_corrupt_chunk();
	test_result_fields();
	test_counters_only_chunk();
	test_merge_race();
	return fixture_fini();
}
