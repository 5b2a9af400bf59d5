/* Why a profile is empty (core/query/profile_explain.c): which target,
 * alone, matches no sample of the window, the processes the window holds,
 * and a profile's span (its first and last kept sample). */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/query/profile.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

/* Samples of app 10, db 20 and web 30, each of its own stack, 1 ms apart
 * from T0 + 1 s. */
static void write_three(struct writer *w)
{
	static const struct {
		uint32_t pid;
		int n, st;
	} procs[] = {{PID_APP, 10, ST_USER}, {PID_DB, 20, ST_KERNEL}, {PID_WEB, 30, ST_OTHER}};
	int64_t t = T0 + SEC;

	for (size_t k = 0; k < sizeof(procs) / sizeof(procs[0]); k++)
		for (int i = 0; i < procs[k].n; i++)
			w_add(w, t += 1000000, procs[k].pid, procs[k].pid, (uint32_t)i % 2, 99,
			      procs[k].st);
}

/* fr_profile_empty_targets() of `q`, expecting `want` and `procs`. */
static void expect_empty(struct fr_ring *r, const struct fr_profile_request *q, uint32_t want,
			 uint64_t want_procs, const char *name)
{
	uint32_t empty = 0xdead;
	uint64_t procs = 0;
	char err[256] = "";
	int ret = fr_profile_empty_targets(r, q, &empty, &procs, err, sizeof(err));

	CHECK(ret == 0 && empty == want && procs == want_procs,
	      "%s: ret %d (%s), empty %#x want %#x, %" PRIu64 " processes want %" PRIu64, name, ret,
	      err, empty, want, procs, want_procs);
}

static void test_empty_targets(void)
{
	struct fr_ring *r = test_ring_create("explain");
	struct fr_profile_request q;
	struct writer w;

	if (!r)
		return;
	w_init(&w, r);
	write_three(&w);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	/* A command name nobody had. */
	snprintf(q.targets.comms[q.targets.ncomms++], FR_LIMIT_COMM_LEN, "nginx");
	expect_empty(r, &q, FR_TARGET_COMM, 3, "comm nginx");
	/* With a pid that did run: only the name is named. */
	q.targets.pids[q.targets.npids++] = PID_DB;
	expect_empty(r, &q, FR_TARGET_COMM, 3, "pid db and comm nginx");
	/* A pid that never ran and a cgroup nobody is in: both. */
	q.targets.ncomms = 0;
	q.targets.pids[0] = 4000000;
	snprintf(q.targets.cgroup, sizeof(q.targets.cgroup), "/no/such");
	expect_empty(r, &q, FR_TARGET_PID | FR_TARGET_CGROUP, 3, "pid and cgroup");
	/* A label no sample carries. */
	memset(&q.targets, 0, sizeof(q.targets));
	fr_targets_add_label(&q.targets, "tenant=42");
	expect_empty(r, &q, FR_TARGET_LABEL, 3, "label");
	/* Each matches alone, not together: app's pid with db's name. */
	memset(&q.targets, 0, sizeof(q.targets));
	q.targets.pids[q.targets.npids++] = PID_APP;
	snprintf(q.targets.comms[q.targets.ncomms++], FR_LIMIT_COMM_LEN, "frtest-db");
	expect_empty(r, &q, FR_TARGET_COMBINED, 3, "combined");
	/* The processes a user may see are theirs only (uid 1000: app and
	 * web, fixture.h), and root's db by name is nothing of theirs. */
	memset(&q.targets, 0, sizeof(q.targets));
	q.targets.has_uid = 1;
	q.targets.uid = 1000;
	snprintf(q.targets.comms[q.targets.ncomms++], FR_LIMIT_COMM_LEN, "frtest-db");
	expect_empty(r, &q, FR_TARGET_COMM, 2, "uid 1000, comm db");
	/* The window before the samples: nothing at all. */
	memset(&q.targets, 0, sizeof(q.targets));
	q.t0 = T0 - 60 * SEC;
	q.t1 = T0;
	q.targets.pids[q.targets.npids++] = PID_APP;
	expect_empty(r, &q, FR_TARGET_PID, 0, "window before the samples");
	test_ring_done(r);
}

static void test_span(void)
{
	struct fr_ring *r = test_ring_create("span");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;

	if (!r)
		return;
	{
		struct writer w;

		w_init(&w, r);
		write_three(&w);
		w_fini(&w);
	}
	/* A minute asked, 60 ms of samples: app's first at T0 + 1.001 s,
	 * web's last at T0 + 1.060 s. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	CHECK(run(r, &q, &res, &o, "span") == 0, "span: the profile failed");
	CHECK(res.first_ns == T0 + SEC + 1000000 && res.last_ns == T0 + SEC + 60000000,
	      "span: first %" PRId64 " last %" PRId64 " (from T0)", res.first_ns - T0,
	      res.last_ns - T0);
	out_free(&o);
	/* db alone: its 20 samples, 11..30 ms. */
	q.targets.pids[q.targets.npids++] = PID_DB;
	CHECK(run(r, &q, &res, &o, "span-db") == 0, "span db: the profile failed");
	CHECK(res.first_ns == T0 + SEC + 11000000 && res.last_ns == T0 + SEC + 30000000,
	      "span db: first %" PRId64 " last %" PRId64 " (from T0)", res.first_ns - T0,
	      res.last_ns - T0);
	out_free(&o);
	/* Nothing kept: no span. */
	q.targets.pids[0] = 4000000;
	CHECK(run(r, &q, &res, &o, "span-none") == 0 && res.first_ns == 0 && res.last_ns == 0,
	      "an empty profile has a span: %" PRId64 "..%" PRId64, res.first_ns, res.last_ns);
	out_free(&o);
	test_ring_done(r);
}

int main(void)
{
	if (fixture_init("profile-explain") != 0)
		return 1;
	test_empty_targets();
	test_span();
	return fixture_fini();
}
