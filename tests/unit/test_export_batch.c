/* Export batches (core/clickhouse/export_batch.c) from a synthetic ring: rows
 * per (stack, pid, comm) with threads summed, exact counts and values at
 * the export rate, one stacks row per new stack with its names, the same
 * bytes when built again, the shipped set honoured, and hostile host
 * names escaped in the JSON. */
#include "core/clickhouse/export_batch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/fixture.h"

static struct fr_ring *make_ring(void)
{
	struct fr_ring *r = test_ring_create("export");
	struct writer w;

	if (!r)
		return NULL;
	/* 10 s at 19 Hz: app on two threads (CPUs 0 and 1), db on CPU 2;
	 * a chunk a second, as the recorder seals. */
	w_init(&w, r);
	for (int s = 0; s < 10; s++) {
		for (int k = 0; k < 19; k++) {
			int64_t t = T0 + s * SEC + k * (SEC / 19);

			w_add(&w, t, PID_APP, TID(PID_APP, 0), 0, 19, ST_USER);
			w_add(&w, t + 1000, PID_APP, TID(PID_APP, 1), 1, 19, ST_USER);
			w_add(&w, t + 2000, PID_DB, TID(PID_DB, 0), 2, 19, ST_KERNEL);
		}
		w_seal(&w);
	}
	w_fini(&w);
	return r;
}

static void req_fill(struct fr_export_req *q, const char *host)
{
	memset(q, 0, sizeof(*q));
	q->t0 = T0;
	q->t1 = T0 + 10 * SEC;
	q->host = host;
	q->hz = 19;
	q->kallsyms = kallsyms_path;
}

/* Sums "count" and "value" over the rows of `pid`; returns its rows. */
static int rows_of(const char *text, uint32_t pid, uint64_t *count, uint64_t *value)
{
	char key[64];
	int n = 0;

	*count = *value = 0;
	snprintf(key, sizeof(key), "\"pid\":%" PRIu32 ",", pid);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *c, *v, *end = strchr(l, '\n');
		unsigned long long x;

		if (!strstr(l, key) || (end && strstr(l, key) > end))
			continue;
		c = strstr(l, "\"count\":");
		v = strstr(l, "\"value\":");
		if (c && sscanf(c, "\"count\":%llu", &x) == 1)
			*count += x;
		if (v && sscanf(v, "\"value\":%llu", &x) == 1)
			*value += x;
		n++;
	}
	return n;
}

static void test_rows(struct fr_ring *r)
{
	struct fr_export_seen *seen = fr_export_seen_new(16);
	struct fr_export_batch b, again;
	struct fr_export_req q;
	uint64_t count, value;
	char err[256];
	int ret;

	req_fill(&q, "web-1");
	ret = fr_export_batch_build(r, &q, seen, &b, err, sizeof(err));
	CHECK(ret == 0, "build: %d %s", ret, err);
	if (ret)
		return;
	CHECK(b.batch_id == fr_export_batch_id("web-1", T0, 10 * SEC), "batch id");
	CHECK(b.rows == 2, "%" PRIu64 " rows, want 2 (app's threads summed, db)", b.rows);
	CHECK(rows_of(b.samples.p, PID_APP, &count, &value) == 1 && count == 380,
	      "app: %" PRIu64 " samples, want 380 (2 threads x 19 Hz x 10 s)", count);
	/* Each sample at 19 Hz stands for 1e9/19 ns of CPU, rounded down. */
	CHECK(value == 380 * (uint64_t)(SEC / 19), "app: value %" PRIu64, value);
	CHECK(rows_of(b.samples.p, PID_DB, &count, &value) == 1 && count == 190,
	      "db: %" PRIu64 " samples, want 190", count);
	CHECK(b.samples_kept == 570, "kept %" PRIu64, b.samples_kept);
	CHECK(strstr(b.samples.p,
		     "\"time\":1700000000000000000,\"host\":\"web-1\",\"event\":\"cpu\""),
	      "row prefix:\n%s", b.samples.p);
	CHECK(b.nstacks == 2 && b.stacks.p && strstr(b.stacks.p, stacks[ST_USER].names[0]) &&
		      strstr(b.stacks.p, stacks[ST_KERNEL].names[0]),
	      "stacks (%" PRIu64 "):\n%s", b.nstacks, b.stacks.p ? b.stacks.p : "");
	CHECK(b.stacks.p && strstr(b.stacks.p, "\"build_id\":[\""), "no build ids:\n%s",
	      b.stacks.p ? b.stacks.p : "");

	/* Built again with the stacks not marked shipped: the same bytes. */
	ret = fr_export_batch_build(r, &q, seen, &again, err, sizeof(err));
	CHECK(ret == 0 && again.samples.len == b.samples.len &&
		      memcmp(again.samples.p, b.samples.p, b.samples.len) == 0 &&
		      again.stacks.len == b.stacks.len,
	      "a second build differs");
	fr_export_batch_fini(&again);
	/* Once shipped, the stacks are not written again (the same day). */
	fr_export_batch_shipped(&b, seen);
	ret = fr_export_batch_build(r, &q, seen, &again, err, sizeof(err));
	CHECK(ret == 0 && again.nstacks == 0 && again.stacks.len == 0 && again.rows == 2,
	      "shipped stacks written again: %" PRIu64, again.nstacks);
	fr_export_batch_fini(&again);
	fr_export_batch_fini(&b);
	fr_export_seen_free(seen);
}

static void test_host_escaped(struct fr_ring *r)
{
	struct fr_export_seen *seen = fr_export_seen_new(16);
	struct fr_export_batch b;
	struct fr_export_req q;
	char err[256];

	req_fill(&q, "a\"b\\c\n");
	CHECK(fr_export_batch_build(r, &q, seen, &b, err, sizeof(err)) == 0, "build: %s", err);
	CHECK(b.samples.p && strstr(b.samples.p, "\"host\":\"a\\\"b\\\\c\\u000a\""),
	      "host not escaped:\n%s", b.samples.p ? b.samples.p : "");
	CHECK(b.batch_id != fr_export_batch_id("web-1", T0, 10 * SEC), "ids of two hosts equal");
	fr_export_batch_fini(&b);
	/* An interval with no samples: no rows, no stacks, no error. */
	q.t0 = T0 + 100 * SEC;
	q.t1 = q.t0 + 10 * SEC;
	CHECK(fr_export_batch_build(r, &q, seen, &b, err, sizeof(err)) == 0 && b.rows == 0 &&
		      b.nstacks == 0,
	      "empty interval: %s", err);
	fr_export_batch_fini(&b);
	fr_export_seen_free(seen);
}

int main(void)
{
	struct fr_ring *r;

	if (fixture_init("export-batch") != 0)
		return 1;
	r = make_ring();
	if (r) {
		test_rows(r);
		test_host_escaped(r);
	}
	test_ring_done(r);
	return fixture_fini();
}
