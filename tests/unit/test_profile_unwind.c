/* Marker frames in profiles: a user stack the recorder could not unwind
 * to its root ends in a marker frame (core/store/sample.h), which the
 * profile names "[truncated: REASON]" on a location without a mapping,
 * at the root, and counts per reason in a comment; folded output names
 * it the same. A whole stack gets neither. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/query/profile.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

/* app: 3 whole stacks. db: 2 stacks stopped in code without CFI, 1
 * stopped by a stack copy too small; web: 1 with a kernel part, whose
 * user part's table was not built yet. */
static struct fr_ring *unwind_ring(const char *name)
{
	struct fr_ring *r = test_ring_create(name);
	struct stack saved_other = stacks[ST_OTHER], saved_kernel = stacks[ST_KERNEL];
	struct writer w;
	int64_t t = T0 + SEC;

	if (!r)
		return NULL;
	w_init(&w, r);
	for (uint32_t i = 0; i < 3; i++)
		w_add(&w, t += 1000, PID_APP, PID_APP, 0, 99, ST_USER);
	stacks[ST_OTHER] = stacks[ST_USER];
	stacks[ST_OTHER].ips[2] = FR_FRAME_MARK_ADDR(FR_FRAME_MARK_NO_CFI);
	for (uint32_t i = 0; i < 2; i++)
		w_add(&w, t += 1000, PID_DB, PID_DB, 0, 99, ST_OTHER);
	stacks[ST_OTHER].nr_frames = 2;
	stacks[ST_OTHER].ips[1] = FR_FRAME_MARK_ADDR(FR_FRAME_MARK_STACK_COPY);
	w_add(&w, t += 1000, PID_DB, TID(PID_DB, 1), 0, 99, ST_OTHER);
	stacks[ST_KERNEL].nr_frames = 5;
	stacks[ST_KERNEL].ips[4] = FR_FRAME_MARK_ADDR(FR_FRAME_MARK_PENDING);
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 0, 99, ST_KERNEL);
	w_fini(&w);
	stacks[ST_OTHER] = saved_other;
	stacks[ST_KERNEL] = saved_kernel;
	return r;
}

/* The root location of the sample of `tid` is the marker `name`: a
 * location without mapping at the marker's own address. */
static void check_root(const struct raw *r, uint32_t tid, int nlocs, const char *name,
		       unsigned reason)
{
	char l1[64];
	const char *want[] = {label(l1, sizeof(l1), "tid", tid), NULL};
	const struct rsample *s = find_sample(r, -1, want);
	const struct fr_pprof_rlocation *root;

	CHECK(s && s->nlocs == nlocs, "tid %u: no sample of %d frames", tid, nlocs);
	if (!s || s->nlocs != nlocs)
		return;
	CHECK(strcmp(r->loc_name[s->loc[nlocs - 1]], name) == 0, "tid %u: root is %s, want %s", tid,
	      r->loc_name[s->loc[nlocs - 1]], name);
	root = &r->d->locations[s->loc[nlocs - 1] - 1];
	CHECK(root->mapping < 0 && root->address == FR_FRAME_MARK_ADDR(reason),
	      "tid %u: marker on mapping %zd at 0x%" PRIx64, tid, root->mapping, root->address);
}

static void test_pprof(void)
{
	static const char comment[] = "cpu: unwinding stopped early in 4 of 7 samples: stack copy "
				      "too small 1, no unwind info 2, unwind table not ready 1";
	struct fr_ring *r = unwind_ring("unwind-pprof");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures, found = 0;
	const struct rsample *s;

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	if (run(r, &q, &res, &o, "unwind") != 0 || raw_read(&raw, &o, "unwind profile") != 0) {
		CHECK(0, "cannot make or read the profile");
		out_free(&o);
		test_ring_done(r);
		return;
	}
	CHECK(res.events[0].unwind_stopped[FR_FRAME_MARK_NO_CFI] == 2 &&
		      res.events[0].unwind_stopped[FR_FRAME_MARK_STACK_COPY] == 1 &&
		      res.events[0].unwind_stopped[FR_FRAME_MARK_PENDING] == 1 &&
		      res.events[0].unwind_stopped[FR_FRAME_MARK_BAD] == 0,
	      "result counts %" PRIu64 " %" PRIu64 " %" PRIu64,
	      res.events[0].unwind_stopped[FR_FRAME_MARK_NO_CFI],
	      res.events[0].unwind_stopped[FR_FRAME_MARK_STACK_COPY],
	      res.events[0].unwind_stopped[FR_FRAME_MARK_PENDING]);
	check_root(&raw, PID_DB, 3, "[truncated: no unwind info]", FR_FRAME_MARK_NO_CFI);
	check_root(&raw, TID(PID_DB, 1), 2, "[truncated: stack copy too small]",
		   FR_FRAME_MARK_STACK_COPY);
	check_root(&raw, PID_WEB, 5, "[truncated: unwind table not ready]", FR_FRAME_MARK_PENDING);
	/* Whole stacks have no marker. */
	s = find_pid(&raw, ST_USER, PID_APP);
	CHECK(s && s->v[0] == 3, "app's whole stack: %" PRId64 ", want 3", s ? s->v[0] : -1);
	for (size_t i = 0; i < raw.d->ncomments; i++)
		found |= strcmp(raw.d->comments[i], comment) == 0;
	CHECK(found, "no comment \"%s\"", comment);
	raw_done(&raw, before);
	out_free(&o);
	test_ring_done(r);
}

/* Folded stacks name the marker as pprof does, at the root. */
static void test_folded(void)
{
	struct fr_ring *r = unwind_ring("unwind-folded");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.format = FR_PROFILE_FOLDED;
	if (run(r, &q, &res, &o, "unwind-folded") == 0) {
		const char *want[] = {
			"frtest-db;[truncated: no unwind info];frtest_middle;frtest_leaf 2\n",
			"frtest-db;[truncated: stack copy too small];frtest_leaf 1\n",
			"frtest-app;frtest_root;frtest_middle;frtest_leaf 3\n",
		};
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			CHECK(o.buf && memmem(o.buf, o.len, want[i], strlen(want[i])),
			      "folded output lacks %sit is\n%.*s", want[i], (int)o.len,
			      (char *)o.buf);
	}
	out_free(&o);
	test_ring_done(r);
}

int main(void)
{
	if (fixture_init("profile-unwind") != 0)
		return 1;
	test_pprof();
	test_folded();
	return fixture_fini();
}
