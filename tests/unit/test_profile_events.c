/* Profiles of several events: a column per event, each downsampled on its
 * own, offcpu time, the kernel's losses per event, raw events, events
 * recorded in period mode, and the events a request may not ask for. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

#include "core/util/time.h"
#include "tests/unit/fixture.h"

/* app: cpu and page-fault samples of one stack and thread, db: cpu
 * samples, web: page faults, and cycles of app that no request asks for;
 * returns the ring, or NULL. */
static struct fr_ring *events_ring(const char *name)
{
	struct fr_ring *r = test_ring_create(name);
	struct writer w;
	int64_t t = T0 + SEC;

	if (!r)
		return NULL;
	w_init(&w, r);
	/* app: 10 cpu samples and 4 page-fault samples (weights 1..4) of one
	 * stack and thread; db: 5 cpu samples; web: 3 page-fault samples of
	 * 7 faults each; cycles of app, not asked for. Over two chunks. */
	for (int i = 0; i < 10; i++) {
		w_add(&w, t += 1000, PID_APP, PID_APP, (uint32_t)i % 2, 99, ST_USER);
		if (i < 4)
			w_add_ev(&w, t += 1000, PID_APP, PID_APP, 2, FR_EVENT_PAGE_FAULTS, 99,
				 (uint64_t)i + 1, ST_USER);
		if (i < 5)
			w_add(&w, t += 1000, PID_DB, PID_DB, 3, 99, ST_KERNEL);
		if (i < 3)
			w_add_ev(&w, t += 1000, PID_WEB, PID_WEB, 0, FR_EVENT_PAGE_FAULTS, 99, 7,
				 ST_OTHER);
		w_add_ev(&w, t += 1000, PID_APP, PID_APP, 1, FR_EVENT_CYCLES, 99, 1000000, ST_USER);
		if (i == 4)
			w_seal(&w);
	}
	w_fini(&w);
	return r;
}

/* cpu and page-faults in one window: one row per (stack, pid, tid) with a
 * column per event, samples/count counting both; the page-faults column
 * is what -sample_index=page-faults reads; events not asked for are out;
 * folded stacks count the first event only. */
static void test_two_events(void)
{
	static const uint32_t cpu_pf[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	struct fr_ring *r = events_ring("events");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, cpu_pf);
	if (run(r, &q, &res, &o, "events") == 0) {
		CHECK(res.nevents == 2 && res.events[0].event == FR_EVENT_CPU &&
			      res.events[1].event == FR_EVENT_PAGE_FAULTS,
		      "result events: %u [%u %u]", res.nevents, res.events[0].event,
		      res.events[1].event);
		CHECK(res.events[0].samples_seen == 15 && res.events[0].samples_kept == 15 &&
			      res.events[1].samples_seen == 7 && res.events[1].samples_kept == 7,
		      "per event seen/kept: cpu %" PRIu64 "/%" PRIu64 " page-faults %" PRIu64
		      "/%" PRIu64 ", want 15/15 7/7",
		      res.events[0].samples_seen, res.events[0].samples_kept,
		      res.events[1].samples_seen, res.events[1].samples_kept);
		CHECK(res.samples_seen == 22 && res.samples_kept == 22 && res.stacks == 3,
		      "seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64 ", want 22 22 3",
		      res.samples_seen, res.samples_kept, res.stacks);
		CHECK(res.hz == 99 && res.events[0].hz == 99 && res.events[1].hz == 99,
		      "hz %u [%u %u]", res.hz, res.events[0].hz, res.events[1].hz);
		if (raw_read(&raw, &o, "the two-event profile") == 0) {
			const struct rsample *app = find_pid(&raw, ST_USER, PID_APP);
			const struct rsample *db = find_pid(&raw, ST_KERNEL, PID_DB);
			const struct rsample *web = find_pid(&raw, ST_OTHER, PID_WEB);

			CHECK(strcmp(raw.types,
				     "samples/count cpu/nanoseconds[dflt] page-faults/count") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(strstr(raw.text, "PeriodType: cpu nanoseconds\n") &&
				      raw.period == PERIOD_99,
			      "period %" PRId64 ", want cpu nanoseconds %" PRId64, raw.period,
			      PERIOD_99);
			CHECK(raw.nsamples == 3, "pprof shows %d samples, want 3", raw.nsamples);
			CHECK(app && app->nv == 3 && app->v[0] == 14 &&
				      app->v[1] == 10 * PERIOD_99 && app->v[2] == 10,
			      "app row [%" PRId64 " %" PRId64 " %" PRId64 "], want [14 %" PRId64
			      " 10]",
			      app ? app->v[0] : -1, app ? app->v[1] : -1, app ? app->v[2] : -1,
			      10 * PERIOD_99);
			CHECK(db && db->nv == 3 && db->v[0] == 5 && db->v[1] == 5 * PERIOD_99 &&
				      db->v[2] == 0,
			      "db row [%" PRId64 " %" PRId64 " %" PRId64 "]", db ? db->v[0] : -1,
			      db ? db->v[1] : -1, db ? db->v[2] : -1);
			CHECK(web && web->nv == 3 && web->v[0] == 3 && web->v[1] == 0 &&
				      web->v[2] == 21,
			      "web row [%" PRId64 " %" PRId64 " %" PRId64 "]", web ? web->v[0] : -1,
			      web ? web->v[1] : -1, web ? web->v[2] : -1);
			CHECK(raw_column(&raw, 0) == 22 && raw_column(&raw, 1) == 15 * PERIOD_99 &&
				      raw_column(&raw, 2) == 31,
			      "column totals %" PRId64 " %" PRId64 " %" PRId64, raw_column(&raw, 0),
			      raw_column(&raw, 1), raw_column(&raw, 2));
			CHECK(strstr(raw.text,
				     "Comment: page-faults sampled at 99 Hz (frequency mode"),
			      "no rate comment for page-faults");
			CHECK(!strstr(raw.text, "cycles"),
			      "cycles, not asked for, is in the profile");
			/* What a reader asked for -sample_index=page-faults sums. */
			CHECK(raw_type_index(&raw, "page-faults") == 2 && raw_column(&raw, 2) == 31,
			      "page-faults: column %d of 31 total",
			      raw_type_index(&raw, "page-faults"));
			CHECK(raw.d->default_type >= 0 &&
				      strcmp(raw.d->types[raw.d->default_type].type, "cpu") == 0,
			      "default sample type %zd, want cpu", raw.d->default_type);
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* The same window asked for page-faults first, and as folded stacks. */
static void test_two_events_pf_first(void)
{
	static const uint32_t pf_cpu[] = {FR_EVENT_PAGE_FAULTS, FR_EVENT_CPU};
	struct fr_ring *r = events_ring("events-pf");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	/* page-faults first: it is the default and the period type, with the
	 * mean faults per kept sample (31 / 7, rounded) as the period. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, pf_cpu);
	if (run(r, &q, &res, &o, "events-pf") == 0) {
		CHECK(res.hz == 99, "hz %u", res.hz);
		if (raw_read(&raw, &o, "the page-faults-first profile") == 0) {
			const struct rsample *app = find_pid(&raw, ST_USER, PID_APP);

			CHECK(strcmp(raw.types,
				     "samples/count page-faults/count[dflt] cpu/nanoseconds") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(strstr(raw.text, "PeriodType: page-faults count\n") &&
				      raw.period == 4,
			      "page-faults first: period %" PRId64 ", want 4", raw.period);
			CHECK(strstr(raw.text,
				     "Comment: period 4: the mean page-faults per kept sample"),
			      "no comment on what the period means");
			CHECK(app && app->v[0] == 14 && app->v[1] == 10 &&
				      app->v[2] == 10 * PERIOD_99,
			      "app row [%" PRId64 " %" PRId64 " %" PRId64 "]", app ? app->v[0] : -1,
			      app ? app->v[1] : -1, app ? app->v[2] : -1);
			raw_done(&raw, before);
		}
	}
	out_free(&o);

	/* Folded: the count is the first event's kept samples; db has none of
	 * page-faults and no line. */
	q.format = FR_PROFILE_FOLDED;
	if (run(r, &q, &res, &o, "events-folded") == 0) {
		static const char want[] = "frtest-app;frtest_root;frtest_middle;frtest_leaf 4\n"
					   "frtest-web;frtest_root;frtest_other 3\n";

		CHECK(o.len == strlen(want) && memcmp(o.buf, want, o.len) == 0,
		      "folded output is\n%.*s\nwant\n%s", (int)o.len, (char *)o.buf, want);
		CHECK(res.stacks == 2 && res.samples_kept == 22,
		      "folded: lines %" PRIu64 " kept %" PRIu64 ", want 2 22", res.stacks,
		      res.samples_kept);
	}
	out_free(&o);
	test_ring_done(r);
}

/* Writes `seconds` of samples from `t` on 2 cpus: cpu at 999 Hz, cycles at
 * 999 Hz (99 events each) and page-faults at 49 Hz (3 faults each), a
 * chunk a second. Returns the samples of each in n[cpu, cycles, pf]. */
static void write_events(struct writer *w, int64_t t, int seconds, uint64_t n[3])
{
	static const struct {
		uint32_t event, hz;
		uint64_t weight;
	} ev[3] = {
		{FR_EVENT_CPU, 999, FR_NS_PER_S / 999},
		{FR_EVENT_CYCLES, 999, 99},
		{FR_EVENT_PAGE_FAULTS, 49, 3},
	};

	n[0] = n[1] = n[2] = 0;
	for (int sec = 0; sec < seconds; sec++) {
		for (int k = 0; k < 3; k++) {
			for (uint32_t i = 0; i < ev[k].hz; i++) {
				for (uint32_t cpu = 0; cpu < 2; cpu++) {
					int64_t ts = t + sec * SEC + (int64_t)i * (SEC / ev[k].hz) +
						     cpu * 1237 + k * 101;
					uint32_t tid = TID(PID_APP, n[k] % 8);

					w_add_ev(w, ts, PID_APP, tid, cpu, ev[k].event, ev[k].hz,
						 ev[k].weight, n[k] % 4 == 3 ? ST_OTHER : ST_USER);
					n[k]++;
				}
			}
		}
		w_seal(w);
	}
}

/* The profile of test_event_downsampling's three events: its value
 * columns, each event's sum standing for what was collected, and the
 * comments that say which event was downsampled. */
static void check_downsampled_profile(const struct out *o, const struct fr_profile_result *res,
				      const uint64_t n[3], int before)
{
	const struct fr_profile_event_result *cpu = &res->events[0], *cyc = &res->events[1];
	struct raw raw;

	if (raw_read(&raw, o, "the per-event downsampled profile") == 0) {
		CHECK(strcmp(raw.types, "samples/count cpu/nanoseconds[dflt] cycles/count "
					"page-faults/count") == 0,
		      "sample types \"%s\"", raw.types);
		CHECK(raw.period == PERIOD_99, "period %" PRId64 ", want %" PRId64, raw.period,
		      PERIOD_99);
		CHECK(raw_column(&raw, 0) == (int64_t)res->samples_kept, "samples column %" PRId64,
		      raw_column(&raw, 0));
		CHECK(raw_column(&raw, 1) == (int64_t)cpu->samples_kept * PERIOD_99,
		      "cpu column %" PRId64 ", want %" PRIu64 " x %" PRId64, raw_column(&raw, 1),
		      cpu->samples_kept, PERIOD_99);
		/* 99 cycles kept with probability 99/999 stand for 999. */
		CHECK(raw_column(&raw, 2) == (int64_t)cyc->samples_kept * 999,
		      "cycles column %" PRId64 ", want %" PRIu64 " x 999", raw_column(&raw, 2),
		      cyc->samples_kept);
		CHECK(raw_column(&raw, 3) == (int64_t)n[2] * 3,
		      "page-faults column %" PRId64 ", want %" PRIu64, raw_column(&raw, 3),
		      n[2] * 3);
		CHECK(strstr(raw.text, "Comment: cpu: downsampled from 999 Hz to 99 Hz"),
		      "no cpu downsampling comment");
		CHECK(strstr(raw.text, "Comment: cycles: downsampled from 999 Hz to 99 Hz"),
		      "no cycles downsampling comment");
		CHECK(!strstr(raw.text, "page-faults: downsampled"),
		      "page-faults said to be downsampled");
		CHECK(strstr(raw.text, "Comment: page-faults sampled at 49 Hz"),
		      "no page-faults rate comment");
		raw_done(&raw, before);
	}
}

/* Each event is downsampled to its own target: cpu and cycles from 999 Hz
 * to the requested 99 Hz, page-faults (collected at 49 Hz) not at all. */
static void test_event_downsampling(void)
{
	static const uint32_t three[] = {FR_EVENT_CPU, FR_EVENT_CYCLES, FR_EVENT_PAGE_FAULTS};
	static const uint32_t cycles_first[] = {FR_EVENT_CYCLES, FR_EVENT_CPU};
	struct fr_ring *r = test_ring_create("event-down");
	struct fr_profile_request q;
	struct fr_profile_result res, res2;
	struct writer w;
	struct out o, o2;
	struct raw raw;
	uint64_t n[3];
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	write_events(&w, T0, 10, n);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	req_events(&q, 3, three);
	if (run(r, &q, &res, &o, "event-down") == 0) {
		const struct fr_profile_event_result *cpu = &res.events[0], *cyc = &res.events[1],
						     *pf = &res.events[2];
		double want = (double)n[0] * 99 / 999;

		CHECK(res.nevents == 3, "nevents %u", res.nevents);
		CHECK(res.hz == 99 && cpu->hz == 99 && cyc->hz == 99 && pf->hz == 49,
		      "rates: profile %u, cpu %u cycles %u page-faults %u; want 99 99 99 49",
		      res.hz, cpu->hz, cyc->hz, pf->hz);
		CHECK(cpu->min_rate == 999 && cpu->max_rate == 999 && pf->min_rate == 49 &&
			      pf->max_rate == 49,
		      "collected rates cpu %u..%u page-faults %u..%u", cpu->min_rate, cpu->max_rate,
		      pf->min_rate, pf->max_rate);
		CHECK(cpu->samples_seen == n[0] && cyc->samples_seen == n[1] &&
			      pf->samples_seen == n[2],
		      "seen %" PRIu64 " %" PRIu64 " %" PRIu64, cpu->samples_seen, cyc->samples_seen,
		      pf->samples_seen);
		CHECK(cpu->samples_kept > want * 0.93 && cpu->samples_kept < want * 1.07,
		      "cpu kept %" PRIu64 " of %" PRIu64 ", want about %.0f", cpu->samples_kept,
		      n[0], want);
		CHECK(cyc->samples_kept > want * 0.93 && cyc->samples_kept < want * 1.07,
		      "cycles kept %" PRIu64 " of %" PRIu64 ", want about %.0f", cyc->samples_kept,
		      n[1], want);
		CHECK(pf->samples_kept == n[2], "page-faults kept %" PRIu64 " of %" PRIu64,
		      pf->samples_kept, n[2]);
		CHECK(res.samples_kept == cpu->samples_kept + cyc->samples_kept + pf->samples_kept,
		      "samples_kept %" PRIu64 " is not the sum over events", res.samples_kept);
		check_downsampled_profile(&o, &res, n, before);
		if (run(r, &q, &res2, &o2, "event-down-again") == 0)
			CHECK(o.len == o2.len && memcmp(o.buf, o2.buf, o.len) == 0,
			      "the same request gave different profiles (%zu and %zu bytes)", o.len,
			      o2.len);
		out_free(&o2);
	}
	out_free(&o);

	/* cycles first: its period is what a kept sample stands for, 999. */
	req_events(&q, 2, cycles_first);
	before = failures;
	if (run(r, &q, &res, &o, "event-down-cycles") == 0) {
		CHECK(res.hz == 99, "cycles first: hz %u", res.hz);
		if (raw_read(&raw, &o, "the cycles-first profile") == 0) {
			CHECK(strstr(raw.text, "PeriodType: cycles count\n") && raw.period == 999,
			      "cycles first: period %" PRId64 ", want cycles count 999",
			      raw.period);
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* offcpu: every switch recorded, its weights (ns switched out) summed
 * exactly and never downsampled, even when cpu beside it is; waits lost
 * (the chunks' offcpu lost) said as waits in a comment. */
static void test_offcpu(void)
{
	static const uint32_t off_cpu[] = {FR_EVENT_OFFCPU, FR_EVENT_CPU};
	struct fr_ring *r = test_ring_create("offcpu");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	uint64_t total = 0, noff = 0, ncpu = 0;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int sec = 0; sec < 5; sec++) {
		for (int i = 0; i < 99; i++) {
			int64_t ts = T0 + sec * SEC + i * PERIOD_99;
			uint64_t ns = 1000003ull * (uint64_t)(i % 13 + 1) + (uint64_t)sec;

			w_add(&w, ts, PID_DB, TID(PID_DB, i % 4), 0, 99, ST_USER);
			ncpu++;
			w_add_ev(&w, ts + 5000, PID_DB, TID(PID_DB, i % 4), 1, FR_EVENT_OFFCPU, 0,
				 ns, ST_KERNEL);
			total += ns;
			noff++;
		}
		/* Waits dropped before the recorder read them (the eBPF
		 * program's ring buffer full): 3 a second. */
		fr_chunk_builder_count(w.b, FR_EVENT_OFFCPU, 3, 0, 0);
		w_seal(&w);
	}
	w_fini(&w);

	/* From a second before the first wait began: a wait is counted
	 * only inside the window (core/query/profile_open.c). */
	req_init(&q, T0 - SEC, T0 + 60 * SEC, 19);
	req_events(&q, 2, off_cpu);
	if (run(r, &q, &res, &o, "offcpu") == 0) {
		CHECK(res.hz == 0 && res.events[0].hz == 0 && res.events[1].hz == 19,
		      "rates: profile %u offcpu %u cpu %u, want 0 0 19", res.hz, res.events[0].hz,
		      res.events[1].hz);
		CHECK(res.events[0].samples_seen == noff && res.events[0].samples_kept == noff,
		      "offcpu seen %" PRIu64 " kept %" PRIu64 ", want all %" PRIu64,
		      res.events[0].samples_seen, res.events[0].samples_kept, noff);
		CHECK(res.events[1].samples_kept < ncpu / 3,
		      "cpu kept %" PRIu64 " of %" PRIu64 " at 99 -> 19 Hz",
		      res.events[1].samples_kept, ncpu);
		CHECK(res.events[0].lost == 15 && res.events[1].lost == 0,
		      "lost: offcpu %" PRIu64 " cpu %" PRIu64 ", want 15 0", res.events[0].lost,
		      res.events[1].lost);
		if (raw_read(&raw, &o, "the offcpu profile") == 0) {
			CHECK(strstr(raw.text, "Comment: offcpu: 15 off-CPU waits lost in this "
					       "window: the recorder fell behind"),
			      "no comment of the waits lost");
			CHECK(!strstr(raw.text, "cpu: 15 samples lost"),
			      "offcpu's losses said as cpu's");
			CHECK(strcmp(raw.types,
				     "samples/count offcpu/nanoseconds[dflt] cpu/nanoseconds") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(strstr(raw.text, "PeriodType: offcpu nanoseconds\n") &&
				      raw.period == 1,
			      "offcpu first: period %" PRId64 ", want offcpu nanoseconds 1",
			      raw.period);
			CHECK(raw_column(&raw, 1) == (int64_t)total,
			      "offcpu column %" PRId64 ", want %" PRIu64, raw_column(&raw, 1),
			      total);
			CHECK(raw_column(&raw, 2) ==
				      (int64_t)res.events[1].samples_kept * (SEC / 19),
			      "cpu column %" PRId64, raw_column(&raw, 2));
			CHECK(strstr(raw.text, "Comment: offcpu: every context switch, value = "
					       "nanoseconds switched out"),
			      "no offcpu comment");
			CHECK(!strstr(raw.text, "offcpu: downsampled"),
			      "offcpu said to be downsampled");
			CHECK(strstr(raw.text, "Comment: cpu: downsampled from 99 Hz to 19 Hz"),
			      "no cpu downsampling comment");
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* The kernel's counters, per event and only of the events asked for. */
static void test_event_losses(void)
{
	static const uint32_t cpu_pf[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	struct fr_ring *r = test_ring_create("losses");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 10; i++) {
		w_add(&w, T0 + i * PERIOD_99, PID_APP, PID_APP, 0, 99, ST_USER);
		w_add_ev(&w, T0 + i * PERIOD_99 + 7, PID_APP, PID_APP, 1, FR_EVENT_PAGE_FAULTS, 99,
			 2, ST_USER);
	}
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 10, 1, 5);
	fr_chunk_builder_count(w.b, FR_EVENT_PAGE_FAULTS, 7, 0, 2);
	fr_chunk_builder_count(w.b, FR_EVENT_CYCLES, 100, 100, 100);
	w_seal(&w);
	w_add(&w, T0 + SEC, PID_APP, PID_APP, 0, 99, ST_USER);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 2, 2, 0);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, cpu_pf);
	if (run(r, &q, &res, &o, "losses") == 0) {
		CHECK(res.lost == 19, "lost %" PRIu64 ", want 19 (cpu 12 + page-faults 7)",
		      res.lost);
		/* No stack of these samples is deep: the chunks' truncated
		 * counts are the recorder's, not the profile's */
		CHECK(res.events[0].lost == 12 && res.events[0].throttled == 3 &&
			      res.events[0].truncated == 0,
		      "cpu counters %" PRIu64 " %" PRIu64 " %" PRIu64 ", want 12 3 0",
		      res.events[0].lost, res.events[0].throttled, res.events[0].truncated);
		CHECK(res.events[1].lost == 7 && res.events[1].throttled == 0 &&
			      res.events[1].truncated == 0,
		      "page-faults counters %" PRIu64 " %" PRIu64 " %" PRIu64 ", want 7 0 0",
		      res.events[1].lost, res.events[1].throttled, res.events[1].truncated);
		if (raw_read(&raw, &o, "the profile") == 0) {
			CHECK(strstr(raw.text, "Comment: cpu: 12 samples lost by the kernel"),
			      "no cpu lost comment");
			CHECK(strstr(raw.text,
				     "Comment: cpu: the kernel throttled sampling 3 times"),
			      "no cpu throttled comment");
			CHECK(!strstr(raw.text, "truncated at"), "a truncated comment");
			CHECK(!strstr(raw.text, "machine-wide"),
			      "losses of a whole-machine profile called machine-wide");
			CHECK(strstr(raw.text,
				     "Comment: page-faults: 7 samples lost by the kernel"),
			      "no page-faults lost comment");
			CHECK(!strstr(raw.text, "page-faults: the kernel throttled"),
			      "a throttling comment for page-faults, which was not throttled");
			CHECK(!strstr(raw.text, "cycles"), "counters of cycles, not asked for");
			raw_done(&raw, before);
		}
	}
	out_free(&o);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "losses-cpu") == 0) {
		CHECK(res.lost == 12 && res.nevents == 1, "cpu only: lost %" PRIu64 ", want 12",
		      res.lost);
		if (raw_read(&raw, &o, "the cpu-only profile") == 0) {
			CHECK(!strstr(raw.text, "page-faults"), "page-faults in a cpu profile");
			raw_free(&raw);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* A raw PMU event is a column named after its code. */
static void test_raw_event(void)
{
	const uint32_t raw_id = FR_EVENT_RAW_BASE | 0x1a2;
	const uint32_t events[] = {FR_EVENT_CPU, raw_id};
	struct fr_ring *r = test_ring_create("raw");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 20; i++) {
		w_add(&w, T0 + i * PERIOD_99, PID_DB, PID_DB, 0, 99, ST_USER);
		if (i % 2)
			w_add_ev(&w, T0 + i * PERIOD_99 + 3, PID_DB, PID_DB, 1, raw_id, 99, 5000,
				 ST_KERNEL);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, events);
	if (run(r, &q, &res, &o, "raw") == 0) {
		CHECK(res.events[1].event == raw_id && res.events[1].samples_kept == 10,
		      "raw event result %#x kept %" PRIu64, res.events[1].event,
		      res.events[1].samples_kept);
		if (raw_read(&raw, &o, "the raw-event profile") == 0) {
			const struct rsample *s = find_pid(&raw, ST_KERNEL, PID_DB);

			CHECK(strcmp(raw.types,
				     "samples/count cpu/nanoseconds[dflt] raw:0x1a2/count") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(s && s->v[0] == 10 && s->v[1] == 0 && s->v[2] == 50000,
			      "raw row [%" PRId64 " %" PRId64 " %" PRId64 "], want [10 0 50000]",
			      s ? s->v[0] : -1, s ? s->v[1] : -1, s ? s->v[2] : -1);
			CHECK(strstr(raw.text, "Comment: raw:0x1a2 sampled at 99 Hz"),
			      "no raw event comment");
			CHECK(raw_type_index(&raw, "raw:0x1a2") == 2 &&
				      raw_column(&raw, 2) == 50000,
			      "raw:0x1a2: column %d, want 2 of 50000 total",
			      raw_type_index(&raw, "raw:0x1a2"));
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* Period mode (rate 0, recorder/sampling/perf.h): cpu every 3 ms (a period 1e9 is
 * no multiple of) and page-faults every fault. Asked at 10 Hz, nothing is
 * downsampled and every value is exact: count x period; the comments and
 * the profile's period say so. */
static void test_period_mode(void)
{
	const uint32_t events[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	struct fr_ring *r = test_ring_create("period");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 200; i++) {
		w_add_ev(&w, T0 + i * 3000000, PID_DB, PID_DB, 0, FR_EVENT_CPU, 0, 3000000,
			 ST_USER);
		w_add_ev(&w, T0 + i * 3000000 + 7, PID_DB, PID_DB, 1, FR_EVENT_PAGE_FAULTS, 0, 1,
			 ST_KERNEL);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 10);
	req_events(&q, 2, events);
	if (run(r, &q, &res, &o, "period") == 0) {
		CHECK(res.events[0].samples_kept == 200 && res.events[1].samples_kept == 200,
		      "kept %" PRIu64 " cpu and %" PRIu64 " page-faults samples of 200 each",
		      res.events[0].samples_kept, res.events[1].samples_kept);
		CHECK(res.events[0].hz == 0 && res.events[1].hz == 0, "rates %u and %u, want 0",
		      res.events[0].hz, res.events[1].hz);
		if (raw_read(&raw, &o, "the period-mode profile") == 0) {
			CHECK(raw.period == 3000000, "period %" PRId64 ", want 3000000",
			      raw.period);
			CHECK(raw_column(&raw, 1) == 600000000 && raw_column(&raw, 2) == 200,
			      "columns %" PRId64 " ns and %" PRId64
			      " faults, want 600000000 and 200",
			      raw_column(&raw, 1), raw_column(&raw, 2));
			CHECK(strstr(raw.text, "Comment: cpu sampled in period mode") &&
				      strstr(raw.text,
					     "Comment: page-faults sampled in period mode") &&
				      strstr(raw.text,
					     "Comment: period 3000000: the period cpu was "
					     "sampled at"),
			      "no period-mode comments");
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

/* Requests the query cannot answer are refused with a reason. */
static void test_bad_events(void)
{
	struct fr_ring *r = test_ring_create("bad-events");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o = {0};
	char err[512];

	if (!r)
		return;
	req_init(&q, T0, T0 + SEC, 0);
	q.nevents = 2;
	q.events[0] = FR_EVENT_CYCLES;
	q.events[1] = FR_EVENT_CYCLES;
	CHECK(fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "cycles"),
	      "an event twice: \"%s\"", err);
	q.nevents = FR_LIMIT_EVENTS + 1;
	CHECK(fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err)) == -EINVAL,
	      "too many events: \"%s\"", err);
	q.nevents = 1;
	q.events[0] = FR_EVENT_COUNT + 3;
	CHECK(fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err)) == -EINVAL,
	      "an unknown event: \"%s\"", err);
	CHECK(o.len == 0, "a refused request wrote %zu bytes", o.len);
	free(o.buf);
	test_ring_done(r);
}

/* Regression: a --pid profile whose stacks are all short said "4 stacks
 * were truncated at 127" when another process's were. Truncation is
 * counted on the profile's own kept samples; what the kernel lost is said
 * to be machine-wide when the profile is of some processes only. */
static void test_truncated_own_samples(void)
{
	struct fr_ring *r = test_ring_create("truncated");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	uint64_t deep[FR_MAX_FRAMES];
	int before = failures;

	if (!r)
		return;
	for (int i = 0; i < FR_MAX_FRAMES; i++)
		deep[i] = stacks[ST_USER].ips[(size_t)i % stacks[ST_USER].nr_frames];
	w_init(&w, r);
	for (int i = 0; i < 10; i++)
		w_add(&w, T0 + i * PERIOD_99, PID_APP, PID_APP, 0, 99, ST_USER);
	for (int i = 0; i < 4; i++) {
		struct fr_sample s = {
			.time_ns = T0 + i * PERIOD_99 + 5,
			.pid = PID_DB,
			.tid = PID_DB,
			.event = FR_EVENT_CPU,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = FR_MAX_FRAMES,
			.ips = deep,
		};

		CHECK(fr_chunk_builder_add(w.b, &s) == 0, "add a deep sample");
	}
	/* As the recorder counts them: every process's, in the chunk */
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 6, 0, 4);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.targets.npids = 1;
	q.targets.pids[0] = PID_APP;
	if (run(r, &q, &res, &o, "truncated app") == 0) {
		CHECK(res.events[0].truncated == 0, "app: %" PRIu64 " truncated, want 0",
		      res.events[0].truncated);
		if (raw_read(&raw, &o, "the app profile") == 0) {
			CHECK(!strstr(raw.text, "truncated at"), "app: a truncated comment");
			CHECK(strstr(raw.text, "Comment: cpu: 6 samples lost by the kernel in this "
					       "window (machine-wide"),
			      "app: the lost samples not said to be machine-wide");
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	q.targets.pids[0] = PID_DB;
	if (run(r, &q, &res, &o, "truncated db") == 0) {
		CHECK(res.events[0].truncated == 4, "db: %" PRIu64 " truncated, want 4",
		      res.events[0].truncated);
		if (raw_read(&raw, &o, "the db profile") == 0) {
			CHECK(strstr(raw.text, "Comment: cpu: 4 of the 4 samples of this profile "
					       "have stacks truncated at 127 frames"),
			      "db: no truncated comment");
			raw_done(&raw, before);
		}
	}
	out_free(&o);
	test_ring_done(r);
}

int main(void)
{
	if (fixture_init("profile-events") != 0)
		return 1;
	test_two_events();
	test_two_events_pf_first();
	test_event_downsampling();
	test_offcpu();
	test_event_losses();
	test_truncated_own_samples();
	test_raw_event();
	test_period_mode();
	test_bad_events();
	return fixture_fini();
}
