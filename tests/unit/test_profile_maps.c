/* The mappings of a profile as pprof readers take them
 * (core/query/profile_maps.c): the first is the target program's
 * executable (the --pid's, else the process with the most samples', even
 * with no frame in it), not the mapping the first frame hit; anonymous
 * memory is "[anon]", which go tool pprof does not try to open; and no
 * reader is sent to a mapping's path: every location has a function (an
 * address no symbol covers is "FILE+0xOFFSET"), every mapping says
 * has_functions (pprof opens the file of a mapping without it to name its
 * locations again, and a FIFO there blocks it), and a function named from
 * a symbol alone has no source file (`pprof -list` would open the
 * binary as one). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/query/profile.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

static void add(struct writer *w, int64_t t, uint32_t pid, const uint64_t *ips, uint16_t n)
{
	struct fr_sample s = {
		.time_ns = t,
		.pid = pid,
		.tid = pid,
		.event = FR_EVENT_CPU,
		.weight = 1,
		.rate_hz = 99,
		.nr_frames = n,
		.ips = ips,
	};

	CHECK(fr_chunk_builder_add(w->b, &s) == 0, "add a sample");
}

static const struct fr_pprof_rmapping *map_named(const struct raw *r, const char *file)
{
	for (size_t i = 0; i < r->d->nmappings; i++)
		if (strcmp(r->d->mappings[i].filename, file) == 0)
			return &r->d->mappings[i];
	return NULL;
}

/* db: 10 samples all in JIT memory (first in the ring, so its mapping
 * is the first a frame hits); app: 3 samples of named frames called from
 * JIT memory, 2 of named frames alone. */
static struct fr_ring *maps_ring(void)
{
	struct fr_ring *r = test_ring_create("maps");
	const struct stack *u = &stacks[ST_USER];
	uint64_t jit[1] = {ANON_START + 0x10}, mixed[8];
	struct writer w;

	if (!r)
		return NULL;
	mixed[0] = u->ips[0];
	for (int i = 1; i < u->nr_frames && i < 7; i++)
		mixed[i] = u->ips[i];
	mixed[u->nr_frames < 7 ? u->nr_frames : 7] = ANON_START + 0x20;
	w_init(&w, r);
	for (int i = 0; i < 10; i++)
		add(&w, T0 + i * PERIOD_99, PID_DB, jit, 1);
	for (int i = 0; i < 3; i++)
		add(&w, T0 + i * PERIOD_99 + 1, PID_APP, mixed,
		    (uint16_t)(u->nr_frames < 7 ? u->nr_frames + 1 : 8));
	for (int i = 0; i < 2; i++)
		w_add(&w, T0 + (3 + i) * PERIOD_99 + 1, PID_APP, PID_APP, 0, 99, ST_USER);
	w_fini(&w);
	return r;
}

static void check_maps(struct fr_ring *ring, uint32_t pid, int exe_has_addresses, const char *what)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (pid) {
		q.targets.npids = 1;
		q.targets.pids[0] = pid;
	}
	if (run(ring, &q, &res, &o, what) == 0 && raw_read(&raw, &o, what) == 0) {
		const struct fr_pprof_rmapping *first = &raw.d->mappings[0];
		const struct fr_pprof_rmapping *anon = map_named(&raw, "[anon]");

		CHECK(raw.d->nmappings >= 2 && strcmp(first->filename, exe_path) == 0,
		      "%s: the first mapping is %s, not the executable %s", what,
		      raw.d->nmappings ? first->filename : "(none)", exe_path);
		CHECK((first->memory_limit != 0) == exe_has_addresses,
		      "%s: the executable's addresses %#" PRIx64 "..%#" PRIx64, what,
		      first->memory_start, first->memory_limit);
		for (size_t i = 0; i < raw.d->nmappings; i++)
			CHECK(raw.d->mappings[i].has_functions,
			      "%s: mapping %s without has_functions", what,
			      raw.d->mappings[i].filename);
		for (size_t i = 0; i < raw.d->nlocations; i++) {
			const struct fr_pprof_rlocation *l = &raw.d->locations[i];
			const struct fr_pprof_rfunction *f =
				l->nline ? &raw.d->functions[raw.d->line_funcs[l->line]] : NULL;

			CHECK(f && f->name[0], "%s: location %zu at %#" PRIx64 " has no function",
			      what, i, l->address);
			CHECK(!f || l->mapping < 0 ||
				      strcmp(f->filename, raw.d->mappings[l->mapping].filename) !=
					      0,
			      "%s: function %s has the mapped file as its source", what,
			      f ? f->name : "");
		}
		CHECK(anon, "%s: no [anon] mapping", what);
		CHECK(!map_named(&raw, "//anon"), "%s: a mapping named //anon", what);
		raw_done(&raw, before);
	}
	out_free(&o);
}

int main(void)
{
	struct fr_ring *r;

	if (fixture_init("profile-maps") != 0)
		return 1;
	r = maps_ring();
	if (r) {
		/* app's executable has frames, all named */
		check_maps(r, PID_APP, 1, "--pid app");
		/* db has the most samples, none in its executable */
		check_maps(r, 0, 0, "whole machine");
		test_ring_done(r);
	}
	return fixture_fini();
}
