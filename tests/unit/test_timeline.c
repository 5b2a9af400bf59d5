/* Timelines (core/query/timeline.c) over a real ring of synthetic chunks:
 * the step arithmetic (aligned steps, the default step, widening past
 * FR_TIMELINE_STEPS_MAX), each group's values in the steps its samples
 * fall in, top N and "other", an off-CPU wait spread over the steps it
 * lasted and open-wait records left out, the groupings (process, comm,
 * cgroup, label:cpu), a uid's view, the event's lost samples in the steps
 * of their chunks, and the JSON form; and the memory events: rss a gauge,
 * memory-pressure the machine's, oom kills with their victims; and the
 * waits a wakeup or a runqueue delay stands for, spread as off-CPU's
 * without its open-wait records.
 *
 * app (uid 1000, cgroup nginx) runs on cpu 0 at 100 Hz in [T0, T0 + 3 s),
 * db (uid 0, cgroup db) on cpu 1 in [T0 + 3 s, T0 + 6 s), web (uid 1000,
 * no cgroup) on cpu 0 for the first 500 ms of each second; db waited
 * 2.5 s, coming back at T0 + 5.2 s, and has an open-wait record at each
 * seal. Chunks are sealed every second. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/timeline.h"
#include "core/store/chunk.h"
#include "core/store/merge.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

#define MS ((int64_t)1000000)
#define W_APP ((uint64_t)10000000) /* 1e9 / 100 */

static void write_ring(struct fr_ring *r)
{
	struct writer w;

	w_init(&w, r);
	for (int k = 0; k < 6; k++) {
		for (int64_t t = T0 + k * SEC + 5 * MS; t < T0 + (k + 1) * SEC; t += 10 * MS) {
			if (k < 3)
				w_add(&w, t, PID_APP, PID_APP, 0, 100, ST_USER);
			else
				w_add(&w, t, PID_DB, PID_DB, 1, 100, ST_OTHER);
			if (t - T0 - k * SEC < 500 * MS)
				w_add(&w, t, PID_WEB, PID_WEB, 0, 100, ST_OTHER);
		}
		if (k == 5) {
			w_add_ev(&w, T0 + 5200 * MS, PID_DB, TID(PID_DB, 1), 1, FR_EVENT_OFFCPU, 0,
				 2500 * MS, ST_KERNEL);
			w_add_ev(&w, T0 + 5500 * MS, PID_DB, TID(PID_DB, 3), 1, FR_EVENT_OFFCPU, 0,
				 6500 * MS, ST_KERNEL);
		}
		w_add_ev(&w, T0 + (k + 1) * SEC - 1, PID_DB, TID(PID_DB, 2), 1,
			 FR_EVENT_OFFCPU_OPEN, 0, 30 * SEC, ST_KERNEL);
		if (k < 5)
			w_add_ev(&w, T0 + (k + 1) * SEC - 1, PID_DB, TID(PID_DB, 3), 1,
				 FR_EVENT_OFFCPU_OPEN, 0, (uint64_t)((k + 2) * SEC - 1), ST_KERNEL);
		/* Samples lost: 3 of cpu in the second chunk, 7 and 2 waits of
		 * offcpu in the fifth and sixth. */
		if (k == 1)
			fr_chunk_builder_count(w.b, FR_EVENT_CPU, 3, 0, 0);
		if (k >= 4)
			fr_chunk_builder_count(w.b, FR_EVENT_OFFCPU, k == 4 ? 7 : 2, 0, 0);
		w_seal(&w);
	}
	w_fini(&w);
}

static struct fr_timeline *compute(struct fr_ring *r, struct fr_timeline_request *req)
{
	struct fr_timeline *t = NULL;
	char err[256];
	int ret = fr_timeline_compute(r, req, &t, err, sizeof(err));

	CHECK(ret == 0, "fr_timeline_compute: %d %s", ret, err);
	return t;
}

static const struct fr_timeline_group *group(const struct fr_timeline *t, const char *name)
{
	for (uint32_t g = 0; t && g < t->ngroups; g++) {
		if (strcmp(t->groups[g].name, name) == 0)
			return &t->groups[g];
	}
	CHECK(0, "no group \"%s\"", name);
	return NULL;
}

static void test_steps(void)
{
	struct fr_timeline_request req = {0};

	CHECK(fr_timeline_default_step(3600 * SEC) == 60 * SEC, "1h: a minute");
	CHECK(fr_timeline_default_step(600 * SEC) == 10 * SEC, "10m: 10 s");
	CHECK(fr_timeline_default_step(60 * SEC) == SEC, "1m: a second");
	CHECK(fr_timeline_default_step(5 * SEC) == SEC, "5s: a second");
	CHECK(fr_timeline_default_step(7200 * SEC) == 120 * SEC, "2h: 2 minutes");
	CHECK(fr_timeline_default_step(86400 * SEC) == 1800 * SEC, "a day: 30 minutes");
	CHECK(fr_timeline_default_step(100 * 86400 * SEC) == 2 * 86400 * SEC, "100 days: 2 days");
	CHECK(fr_timeline_parse_by("comm", &req) == 0 && req.by == FR_TIMELINE_BY_COMM, "comm");
	CHECK(fr_timeline_parse_by("label:tenant", &req) == 0 && req.by == FR_TIMELINE_BY_LABEL &&
		      strcmp(req.label_key, "tenant") == 0,
	      "label:tenant");
	CHECK(fr_timeline_parse_by("label:", &req) == -EINVAL, "label: without a key");
	CHECK(fr_timeline_parse_by("pid", &req) == -EINVAL, "pid is no grouping");
}

static void test_values(struct fr_ring *r)
{
	struct fr_timeline_request req = {.t0 = T0 + 300 * MS,
					  .t1 = T0 + 5800 * MS,
					  .step_ns = SEC};
	struct fr_timeline *t = compute(r, &req);
	const struct fr_timeline_group *app, *db, *web;

	if (!t)
		return;
	/* Aligned to whole steps: [T0, T0 + 6 s). */
	CHECK(t->start_ns == T0 && t->end_ns == T0 + 6 * SEC && t->nsteps == 6,
	      "steps %" PRId64 " %" PRId64 " %u", t->start_ns - T0, t->end_ns - T0, t->nsteps);
	CHECK(t->nevents == 2 && t->events[0] == FR_EVENT_CPU && t->events[1] == FR_EVENT_OFFCPU,
	      "events: %u", t->nevents);
	CHECK(t->samples == 600 + 300, "samples %" PRIu64, t->samples);
	CHECK(t->ngroups == 3, "groups %u", t->ngroups);
	app = group(t, "frtest-app ("
		       "4200001"
		       ")");
	db = group(t, "frtest-db (4200002)");
	web = group(t, "frtest-web (4200003)");
	if (app && db && web) {
		CHECK(app->pid == PID_APP && !app->other, "app's pid");
		for (int k = 0; k < 6; k++) {
			CHECK(app->values[k] == (k < 3 ? 100 * W_APP : 0), "app step %d: %" PRIu64,
			      k, app->values[k]);
			CHECK(db->values[k] == (k < 3 ? 0 : 100 * W_APP), "db step %d", k);
			CHECK(web->values[k] == 50 * W_APP, "web step %d", k);
		}
		CHECK(app->total == 300 * W_APP && t->groups[0].total >= t->groups[2].total,
		      "largest first");
	}
	fr_timeline_free(t);

	/* top 1: the rest is "other", last. */
	req.top = 1;
	t = compute(r, &req);
	if (t && t->ngroups == 2) {
		CHECK(t->groups[1].other && strcmp(t->groups[1].name, "other") == 0, "other last");
		CHECK(t->groups[0].total + t->groups[1].total == 900 * W_APP, "nothing lost");
		CHECK(t->groups[1].values[0] == 50 * W_APP, "other's step 0");
	} else {
		CHECK(0, "top 1: %u groups", t ? t->ngroups : 0);
	}
	fr_timeline_free(t);
}

static void test_offcpu(struct fr_ring *r)
{
	struct fr_timeline_request req = {.t0 = T0,
					  .t1 = T0 + 6 * SEC,
					  .step_ns = SEC,
					  .event = FR_EVENT_OFFCPU};
	struct fr_timeline *t = compute(r, &req);
	/* Thread 1's 2.5 s spread over [2.7 s, 5.2 s); thread 2, blocked
	 * since long before, from the last seal's record (up to T0 + 6 s -
	 * 1 ns); thread 3, blocked since T0 - 1 s, back at T0 + 5.5 s: its
	 * sample, not the records of the seals before. */
	static const uint64_t want[6] = {2 * SEC, 2 * SEC, 2 * SEC + 300 * MS,
					 3 * SEC, 3 * SEC, SEC - 1 + 700 * MS};

	if (!t)
		return;
	CHECK(t->ngroups == 1 && t->samples == 2, "offcpu: %u groups, %" PRIu64 " samples",
	      t->ngroups, t->samples);
	for (int k = 0; t->ngroups && k < 6; k++)
		CHECK(t->groups[0].values[k] == want[k], "offcpu step %d: %" PRIu64, k,
		      t->groups[0].values[k]);
	/* The waits lost, in the steps of their chunks' ends; cpu's not. */
	CHECK(t->lost == 9 && t->lost_steps && t->lost_steps[4] == 7 && t->lost_steps[5] == 2 &&
		      t->lost_steps[1] == 0,
	      "offcpu lost %" PRIu64, t->lost);
	fr_timeline_free(t);

	/* Ending at T0 + 5.3 s, in the chunk sealed at T0 + 6 s: thread 1's
	 * wait (back at 5.2 s) counts whole; threads 2 and 3 from the records
	 * of the seal at T0 + 5 s - 1 ns, up to it; thread 3's return at 5.5 s
	 * is after the end and not read, though that chunk holds it. */
	req.t1 = T0 + 5300 * MS;
	req.step_ns = 100 * MS;
	t = compute(r, &req);
	if (!t)
		return;
	CHECK(t->nsteps == 53 && t->ngroups == 1, "to 5.3 s: %u steps", t->nsteps);
	CHECK(t->ngroups && t->groups[0].total == 2500 * MS + 2 * (5 * SEC - 1) &&
		      t->groups[0].values[52] == 0 && t->groups[0].values[51] == 100 * MS,
	      "to 5.3 s: %" PRIu64, t->ngroups ? t->groups[0].total : 0);
	/* A chunk that ends past the window puts its losses in the last step. */
	CHECK(t->lost == 9 && t->lost_steps && t->lost_steps[49] == 7 && t->lost_steps[52] == 2,
	      "to 5.3 s: lost %" PRIu64, t->lost);
	fr_timeline_free(t);
}

static void test_groupings(struct fr_ring *r)
{
	struct fr_timeline_request req = {.t0 = T0, .t1 = T0 + 6 * SEC, .step_ns = 2 * SEC};
	struct fr_timeline *t;
	const struct fr_timeline_group *g;

	fr_timeline_parse_by("comm", &req);
	t = compute(r, &req);
	g = group(t, "frtest-app");
	CHECK(!g || (g->pid == 0 && g->values[0] == 200 * W_APP && g->values[1] == 100 * W_APP),
	      "by comm: app");
	fr_timeline_free(t);

	fr_timeline_parse_by("cgroup", &req);
	t = compute(r, &req);
	g = group(t, CG_DB);
	CHECK(!g || g->total == 300 * W_APP, "by cgroup: db");
	g = group(t, "[unknown]");
	CHECK(!g || g->total == 300 * W_APP, "by cgroup: web has none");
	fr_timeline_free(t);

	fr_timeline_parse_by("label:cpu", &req);
	t = compute(r, &req);
	g = group(t, "0");
	CHECK(!g || g->total == 600 * W_APP, "by cpu: 0");
	g = group(t, "1");
	CHECK(!g || g->total == 300 * W_APP, "by cpu: 1");
	fr_timeline_free(t);

	fr_timeline_parse_by("label:tenant", &req);
	t = compute(r, &req);
	g = group(t, "[none]");
	CHECK(!g || g->total == 900 * W_APP, "by an absent label: none");
	fr_timeline_free(t);

	/* A user's view: db (root's) is not counted, nor listed as an event. */
	fr_timeline_parse_by("process", &req);
	req.has_uid = 1;
	req.uid = 1000;
	req.event = FR_EVENT_CPU;
	t = compute(r, &req);
	CHECK(t && t->ngroups == 2 && t->samples == 600 && t->nevents == 1, "uid 1000: %u groups",
	      t ? t->ngroups : 0);
	for (uint32_t k = 0; t && k < t->ngroups; k++)
		CHECK(t->groups[k].pid != PID_DB, "uid 1000 sees db");
	fr_timeline_free(t);
}

static void test_json(struct fr_ring *r)
{
	struct fr_timeline_request req = {.t0 = T0, .t1 = T0 + 2 * SEC, .step_ns = SEC, .top = 1};
	struct fr_timeline *t = compute(r, &req);
	char *text = NULL, want[1024];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!t || !f)
		return;
	CHECK(fr_timeline_write_json(f, t) == 0, "write_json");
	fclose(f);
	snprintf(want, sizeof(want),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"step_ns\":1000000000,"
		 "\"ring\":{\"first_ns\":%" PRId64 ",\"last_ns\":%" PRId64 "},"
		 "\"events\":[\"cpu\",\"offcpu\"],\"samples\":300,"
		 "\"lost_total\":3,\"lost\":[0,3],\"stalled\":[false,false],\"stalled_steps\":0,"
		 "\"groups\":["
		 "{\"name\":\"frtest-app (4200001)\",\"pid\":4200001,\"total\":2000000000,"
		 "\"values\":[1000000000,1000000000]},"
		 "{\"name\":\"other\",\"total\":1000000000,\"values\":[500000000,500000000]}]}\n",
		 T0, T0 + 2 * SEC, t->ring_first_ns, t->ring_last_ns);
	CHECK(strcmp(text, want) == 0, "json:\n%s\nwant:\n%s", text, want);
	CHECK(t->ring_first_ns == T0 + 5 * MS, "ring first %" PRId64, t->ring_first_ns - T0);
	free(text);
	/* Regression partial_row: a ring whose newest data is inside the
	 * last step says which steps are partial, nothing else changed. */
	CHECK(fr_timeline_partial_from(t) == t->nsteps, "a whole window has partial steps");
	t->ring_last_ns = T0 + SEC + SEC / 2;
	CHECK(fr_timeline_partial_from(t) == 1, "partial from %u", fr_timeline_partial_from(t));
	text = NULL;
	f = open_memstream(&text, &len);
	CHECK(f && fr_timeline_write_json(f, t) == 0, "write_json");
	if (f)
		fclose(f);
	snprintf(want, sizeof(want), "\"last_ns\":%" PRId64 "},\"partial_from\":1,\"events\":[",
		 t->ring_last_ns);
	CHECK(text && strstr(text, want), "no partial_from after the ring:\n%s", text ? text : "");
	free(text);
	fr_timeline_free(t);

	/* More steps than fit: the step is widened, the window kept. */
	req.t1 = T0 + 100000 * SEC;
	req.step_ns = MS;
	t = compute(r, &req);
	CHECK(t && t->nsteps <= FR_TIMELINE_STEPS_MAX && t->end_ns >= req.t1 &&
		      t->start_ns <= req.t0,
	      "widened: %u steps", t ? t->nsteps : 0);
	fr_timeline_free(t);
	req.t1 = req.t0;
	CHECK(fr_timeline_compute(r, &req, &t, want, sizeof(want)) == -EINVAL && !t,
	      "an empty window is refused");
}

/* Names are any bytes: the JSON form escapes what JSON must and makes
 * what is not UTF-8 U+FFFD, keeping what is. */
static void test_json_names(void)
{
	uint64_t v[1] = {7};
	struct fr_timeline_group g = {.values = v, .total = 7, .pid = 1};
	struct fr_timeline t = {.start_ns = 0,
				.end_ns = SEC,
				.step_ns = SEC,
				.nsteps = 1,
				.ngroups = 1,
				.groups = &g,
				.by = FR_TIMELINE_BY_LABEL};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	snprintf(g.name, sizeof(g.name), "a\"b\\c\x1b[2J\xff\xc3\xa9\xe2\x82");
	snprintf(t.label_key, sizeof(t.label_key), "te\"n");
	if (!f)
		return;
	CHECK(fr_timeline_write_json(f, &t) == 0, "write_json");
	fclose(f);
	CHECK(strstr(text, "\"by\":\"label:te\\\"n\"") != NULL, "by: %s", text);
	CHECK(strstr(text, "\"name\":\"a\\\"b\\\\c\\u001b[2J\\ufffd\xc3\xa9\\ufffd\\ufffd\",") !=
		      NULL,
	      "names: %s", text);
	CHECK(strstr(text, "\"pid\"") == NULL, "pid only by process: %s", text);
	free(text);
}

/* ---- memory events ------------------------------------------------------ */

#define MIB ((uint64_t)1 << 20)

/* app's RSS once a second (10 .. 60 MiB; second 2 read twice, 30 then 35
 * MiB), web's at 5 MiB, the machine's pressure (k ms in second k), and
 * app killed by the OOM killer at T0 + 5.5 s with 60 MiB. */
static void write_memory_ring(struct fr_ring *r)
{
	struct writer w;

	w_init(&w, r);
	for (int k = 0; k < 6; k++) {
		int64_t t = T0 + k * SEC + 100 * MS;

		w_add_ev(&w, t, PID_APP, PID_APP, 0, FR_EVENT_RSS, 0, (uint64_t)(k + 1) * 10 * MIB,
			 ST_OTHER);
		if (k == 2)
			w_add_ev(&w, t + 500 * MS, PID_APP, PID_APP, 0, FR_EVENT_RSS, 0, 35 * MIB,
				 ST_OTHER);
		w_add_ev(&w, t, PID_WEB, PID_WEB, 0, FR_EVENT_RSS, 0, 5 * MIB, ST_OTHER);
		w_add_ev(&w, t, 0, 0, 0, FR_EVENT_MEM_PRESSURE, 0, (uint64_t)k * MS, ST_OTHER);
		if (k == 5)
			w_add_ev(&w, T0 + 5500 * MS, PID_APP, PID_APP, 1, FR_EVENT_OOM, 0, 60 * MIB,
				 ST_OTHER);
		w_seal(&w);
	}
	w_fini(&w);
}

static void test_memory(void)
{
	struct fr_ring *r = test_ring_create("timeline-memory");
	struct fr_timeline_request req = {.t0 = T0,
					  .t1 = T0 + 6 * SEC,
					  .step_ns = SEC,
					  .event = FR_EVENT_RSS};
	const struct fr_timeline_group *app, *web, *m;
	static const uint64_t app_mib[6] = {10, 20, 35, 40, 50, 60};
	struct fr_timeline *t;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!r)
		return;
	write_memory_ring(r);
	/* rss, a gauge: the largest value of each step (35, not 30 + 35),
	 * the peak as the total. */
	t = compute(r, &req);
	app = t ? group(t, "frtest-app (4200001)") : NULL;
	web = t ? group(t, "frtest-web (4200003)") : NULL;
	if (app && web) {
		for (int k = 0; k < 6; k++) {
			CHECK(app->values[k] == app_mib[k] * MIB, "app's rss in step %d: %" PRIu64,
			      k, app->values[k] / MIB);
			CHECK(web->values[k] == 5 * MIB, "web's rss in step %d", k);
		}
		CHECK(app->total == 60 * MIB && web->total == 5 * MIB,
		      "totals %" PRIu64 " %" PRIu64, app->total, web->total);
		CHECK(t->samples == 13, "rss samples %" PRIu64, t->samples);
	}
	fr_timeline_free(t);
	/* Steps of 2 s: still the largest, never the sum of the seconds. */
	req.step_ns = 2 * SEC;
	t = compute(r, &req);
	app = t ? group(t, "frtest-app (4200001)") : NULL;
	if (app)
		CHECK(app->values[0] == 20 * MIB && app->values[1] == 40 * MIB &&
			      app->values[2] == 60 * MIB,
		      "2 s steps: %" PRIu64 " %" PRIu64 " %" PRIu64, app->values[0] / MIB,
		      app->values[1] / MIB, app->values[2] / MIB);
	fr_timeline_free(t);
	/* top 1: "other" is the largest of the rest, not their sum. */
	req.step_ns = SEC;
	req.top = 1;
	t = compute(r, &req);
	if (t && t->ngroups == 2)
		CHECK(t->groups[1].other && t->groups[1].values[0] == 5 * MIB &&
			      t->groups[1].total == 5 * MIB,
		      "other: %" PRIu64, t->groups[1].values[0]);
	else
		CHECK(0, "rss top 1: %u groups", t ? t->ngroups : 0);
	fr_timeline_free(t);

	/* memory-pressure: the machine's, summed per step. */
	req = (struct fr_timeline_request){.t0 = T0,
					   .t1 = T0 + 6 * SEC,
					   .step_ns = 2 * SEC,
					   .event = FR_EVENT_MEM_PRESSURE};
	t = compute(r, &req);
	m = t ? group(t, "[machine]") : NULL;
	if (m)
		CHECK(m->values[0] == 1 * MS && m->values[1] == 5 * MS && m->values[2] == 9 * MS &&
			      m->pid == 0,
		      "pressure %" PRIu64 " %" PRIu64 " %" PRIu64, m->values[0], m->values[1],
		      m->values[2]);
	fr_timeline_free(t);

	/* oom: one kill, its victim listed with its RSS and name. */
	req.event = FR_EVENT_OOM;
	req.step_ns = SEC;
	t = compute(r, &req);
	app = t ? group(t, "frtest-app (4200001)") : NULL;
	if (app && t) {
		CHECK(app->total == 1 && app->values[5] == 1, "kills: %" PRIu64, app->total);
		CHECK(t->nvictims == 1 && t->victims[0].pid == PID_APP &&
			      t->victims[0].rss == 60 * MIB &&
			      strcmp(t->victims[0].comm, "frtest-app") == 0 &&
			      t->victims[0].time_ns == T0 + 5500 * MS,
		      "victims: %u", t->nvictims);
		f = open_memstream(&text, &len);
		if (f) {
			CHECK(fr_timeline_write_json(f, t) == 0, "write_json");
			fclose(f);
			CHECK(strstr(text, "\"unit\":\"count\"") != NULL &&
				      strstr(text, "\"victims\":[{\"time_ns\":") != NULL &&
				      strstr(text, "\"comm\":\"frtest-app\"") != NULL &&
				      strstr(text, "\"victims_more\":0,\"marks\":[{\"time_ns\":"
						   "1700000005500000000,\"type\":\"oom_kill\","
						   "\"pid\":4200001,\"comm\":\"frtest-app\"}],"
						   "\"marks_more\":0}") != NULL,
			      "oom json: %s", text);
			free(text);
		}
	}
	fr_timeline_free(t);
	test_ring_done(r);
}

/* A wakeup of db's thread that had waited 1.5 s, at T0 + 2.5 s; a
 * runqueue delay of 400 ms of app, at T0 + 4.2 s; an off-CPU wait and an
 * open-wait record beside them, which neither timeline reads. */
static void test_waits(void)
{
	struct fr_ring *r = test_ring_create("timeline-waits");
	struct fr_timeline_request req = {.t0 = T0,
					  .t1 = T0 + 6 * SEC,
					  .step_ns = SEC,
					  .event = FR_EVENT_WAKEUP};
	static const uint64_t wake[6] = {0, SEC, 500 * MS, 0, 0, 0};
	static const uint64_t rq[6] = {0, 0, 0, 200 * MS, 200 * MS, 0};
	struct fr_timeline *t;
	struct writer w;

	if (!r)
		return;
	w_init(&w, r);
	w_add_ev(&w, T0 + 2500 * MS, PID_DB, TID(PID_DB, 1), 1, FR_EVENT_WAKEUP, 0, 1500 * MS,
		 ST_KERNEL);
	w_add_ev(&w, T0 + 2500 * MS, PID_DB, TID(PID_DB, 1), 1, FR_EVENT_OFFCPU, 0, 1500 * MS,
		 ST_KERNEL);
	w_add_ev(&w, T0 + 3 * SEC - 1, PID_DB, TID(PID_DB, 2), 1, FR_EVENT_OFFCPU_OPEN, 0, 30 * SEC,
		 ST_KERNEL);
	w_add_ev(&w, T0 + 4200 * MS, PID_APP, PID_APP, 0, FR_EVENT_RUNQUEUE, 0, 400 * MS, ST_USER);
	w_seal(&w);
	w_fini(&w);
	t = compute(r, &req);
	CHECK(t && t->ngroups == 1 && t->samples == 1 && t->nevents == 3 &&
		      t->events[1] == FR_EVENT_WAKEUP && t->events[2] == FR_EVENT_RUNQUEUE,
	      "wakeup: %u groups", t ? t->ngroups : 0);
	for (int k = 0; t && t->ngroups && k < 6; k++)
		CHECK(t->groups[0].values[k] == wake[k] && t->groups[0].pid == PID_DB,
		      "wakeup step %d: %" PRIu64, k, t->groups[0].values[k]);
	fr_timeline_free(t);
	req.event = FR_EVENT_RUNQUEUE;
	t = compute(r, &req);
	CHECK(t && t->ngroups == 1 && t->samples == 1, "runqueue: %u groups", t ? t->ngroups : 0);
	for (int k = 0; t && t->ngroups && k < 6; k++)
		CHECK(t->groups[0].values[k] == rq[k] && t->groups[0].pid == PID_APP,
		      "runqueue step %d: %" PRIu64, k, t->groups[0].values[k]);
	fr_timeline_free(t);
	test_ring_done(r);
}

/* Losses placed in time and stalls (the chunks' gaps, section 4): 20
 * samples of cpu lost in [1.5 s, 3.5 s) are shared out 5, 10, 5 over the
 * seconds they span, 4 more with no known time go to the step of the
 * chunk's end as before; a stall over [2.2 s, 4.1 s] marks steps 2 to 4.
 * The gaps survive a merge. */
static void test_gaps(void)
{
	struct fr_ring *r = test_ring_create("timeline-gaps");
	struct fr_timeline_request req = {.t0 = T0, .t1 = T0 + 6 * SEC, .step_ns = SEC};
	static const uint64_t want_lost[6] = {0, 5, 10, 9, 0, 0};
	static const uint8_t want_stalled[6] = {0, 0, 1, 1, 1, 0};
	struct fr_chunk *parts[2] = {NULL, NULL}, *m = NULL;
	struct fr_ring_ref *refs = NULL;
	struct fr_timeline *t;
	size_t nrefs = 0, mlen = 0;
	void *merged = NULL;
	struct writer w;

	if (!r)
		return;
	w_init(&w, r);
	for (int64_t at = T0 + 500 * MS; at < T0 + 4 * SEC; at += 50 * MS)
		w_add(&w, at, PID_APP, PID_APP, 0, 100, ST_USER);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 24, 0, 0);
	fr_chunk_builder_gap(w.b, FR_GAP_LOST, FR_EVENT_CPU, 20, T0 + 1500 * MS, T0 + 3500 * MS);
	fr_chunk_builder_gap(w.b, FR_GAP_STALL, 0, 0, T0 + 2200 * MS, T0 + 4100 * MS);
	w_seal(&w);
	for (int64_t at = T0 + 4 * SEC; at < T0 + 5 * SEC; at += 50 * MS)
		w_add(&w, at, PID_APP, PID_APP, 0, 100, ST_USER);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 2, 0, 0);
	fr_chunk_builder_gap(w.b, FR_GAP_LOST, FR_EVENT_CPU, 2, T0 + 4500 * MS, T0 + 4500 * MS);
	w_seal(&w);
	w_fini(&w);

	t = compute(r, &req);
	if (t) {
		CHECK(t->lost == 26, "lost %" PRIu64 ", not 26", t->lost);
		for (int k = 0; k < 6; k++) {
			CHECK(t->lost_steps[k] == (k == 4 ? 2 : want_lost[k]),
			      "step %d: %" PRIu64 " lost", k, t->lost_steps[k]);
			CHECK(t->stalled_steps[k] == want_stalled[k], "step %d: stalled %d", k,
			      t->stalled_steps[k]);
		}
	}
	fr_timeline_free(t);
	/* A window of its own: the share inside it, and the rest of the
	 * chunk's count clamped in, as before. */
	req.t0 = T0 + 2 * SEC;
	req.t1 = T0 + 3 * SEC;
	t = compute(r, &req);
	if (t)
		CHECK(t->nsteps == 1 && t->lost == 14 && t->stalled_steps[0],
		      "[2 s, 3 s): %" PRIu64 " lost", t->lost);
	fr_timeline_free(t);

	/* Decoded, and merged into one chunk: the same gaps. */
	CHECK(fr_ring_query(r, INT64_MIN, INT64_MAX, &refs, &nrefs) == 0 && nrefs == 2,
	      "%zu chunks", nrefs);
	for (size_t i = 0; i < nrefs && i < 2; i++) {
		void *buf = NULL;

		if (fr_ring_read(r, &refs[i], &buf) == 0)
			CHECK(fr_chunk_decode(buf, refs[i].len, &parts[i]) == 0, "decode %zu", i);
		free(buf);
	}
	if (parts[0] && parts[1]) {
		CHECK(parts[0]->ngaps == 2 && parts[0]->gaps[0].kind == FR_GAP_LOST &&
			      parts[0]->gaps[0].count == 20 &&
			      parts[0]->gaps[0].from_ns == T0 + 1500 * MS &&
			      parts[0]->gaps[0].to_ns == T0 + 3500 * MS &&
			      parts[0]->gaps[1].kind == FR_GAP_STALL &&
			      parts[0]->gaps[1].to_ns == T0 + 4100 * MS,
		      "chunk 0 has %u gaps", parts[0]->ngaps);
		CHECK(fr_chunk_merge(parts, 2, 8 << 20, &merged, &mlen) == 0 &&
			      fr_chunk_decode(merged, mlen, &m) == 0,
		      "merge");
		CHECK(m && m->ngaps == 3 && m->gaps[2].count == 2 &&
			      m->gaps[2].from_ns == T0 + 4500 * MS,
		      "merged: %u gaps", m ? m->ngaps : 0);
	}
	fr_chunk_free(m);
	free(merged);
	fr_chunk_free(parts[0]);
	fr_chunk_free(parts[1]);
	free(refs);
	test_ring_done(r);
}

int main(void)
{
	struct fr_ring *r;

	if (fixture_init("timeline") < 0)
		return 1;
	r = test_ring_create("timeline");
	if (r) {
		write_ring(r);
		test_steps();
		test_values(r);
		test_offcpu(r);
		test_groupings(r);
		test_json(r);
	}
	test_json_names();
	test_ring_done(r);
	test_memory();
	test_waits();
	test_gaps();
	return fixture_fini();
}
