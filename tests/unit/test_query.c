/* The query options of flightrec attach and dump (tools/query.c): --hz N
 * for every event as before; --hz EVENT=N,... each event at its own rate,
 * adding the events --event did not list; bad rates refused; --diff only
 * with event heap. */
#include <stdio.h>
#include <string.h>

#include "core/store/sample.h"
#include "tests/unit/check.h"
#include "tools/query.h"

/* Parses `hz` (and `events` when not NULL, given after it) as
 * flightrec attach --window 1m would. Returns fr_query_finish()'s result,
 * or the option's EXIT_USAGE. */
static int parse(struct fr_query_args *q, const char *hz, const char *events)
{
	memset(q, 0, sizeof(*q));
	q->window_s = "1m";
	if (fr_query_opt("test", FR_OPT_HZ, hz, q) != 1)
		return EXIT_USAGE;
	if (events && fr_query_opt("test", FR_OPT_EVENT, events, q) != 1)
		return EXIT_USAGE;
	return fr_query_finish("test", q);
}

int main(void)
{
	struct fr_ipc_attach_req r;
	struct fr_query_args q;

	CHECK(parse(&q, "99", NULL) == 0 && q.hz == 99 && q.nevents == 0 && q.event_hz[0] == 0,
	      "--hz 99");
	CHECK(parse(&q, "cpu=99,page-faults=19", NULL) == 0 && q.hz == 0 && q.nevents == 2 &&
		      q.events[0] == FR_EVENT_CPU && q.events[1] == FR_EVENT_PAGE_FAULTS &&
		      q.event_hz[0] == 99 && q.event_hz[1] == 19,
	      "--hz cpu=99,page-faults=19");
	fr_query_attach_req(&q, &r);
	CHECK(r.nevents == 2 && r.event_hz[0] == 99 && r.event_hz[1] == 19,
	      "the attach request carries the event rates");
	/* Given with --event: the rates go to their events, in --event's
	 * order; a bare N is the rate of the others. */
	CHECK(parse(&q, "49,page-faults=19", "offcpu,page-faults,cpu") == 0 && q.hz == 49 &&
		      q.nevents == 3 && q.event_hz[0] == 0 && q.event_hz[1] == 19 &&
		      q.event_hz[2] == 0,
	      "--hz 49,page-faults=19 --event offcpu,page-faults,cpu");
	CHECK(parse(&q, "page-faults=19", "cpu") == 0 && q.nevents == 2 &&
		      q.events[1] == FR_EVENT_PAGE_FAULTS && q.event_hz[1] == 19,
	      "--hz page-faults=19 --event cpu adds page-faults");

	CHECK(parse(&q, "0", NULL) != 0, "--hz 0 accepted");
	CHECK(parse(&q, "cpu=", NULL) != 0, "--hz cpu= accepted");
	CHECK(parse(&q, "nope=99", NULL) != 0, "--hz nope=99 accepted");
	CHECK(parse(&q, "offcpu=99", NULL) != 0, "--hz offcpu=99 accepted (it has no rate)");
	CHECK(parse(&q, "cpu=99,cpu=19", NULL) != 0, "--hz cpu twice accepted");
	CHECK(parse(&q, "cpu=99x", NULL) != 0, "--hz cpu=99x accepted");
	CHECK(parse(&q, ",", NULL) != 0, "--hz , accepted");

	/* --diff: the heap's growth, of event heap alone. */
	memset(&q, 0, sizeof(q));
	q.from_s = "-10m";
	q.to_s = "-1m";
	CHECK(fr_query_opt("test", FR_OPT_DIFF, NULL, &q) == 1 &&
		      fr_query_opt("test", FR_OPT_EVENT, "heap", &q) == 1 &&
		      fr_query_finish("test", &q) == 0,
	      "--event heap --diff refused");
	fr_query_attach_req(&q, &r);
	CHECK(r.diff && r.nevents == 1 && r.events[0] == FR_EVENT_HEAP,
	      "the request carries --diff");
	CHECK(fr_query_opt("test", FR_OPT_EVENT, "heap,cpu", &q) == 1 &&
		      fr_query_finish("test", &q) == EXIT_USAGE,
	      "--diff with cpu accepted");
	CHECK(fr_query_opt("test", FR_OPT_EVENT, "alloc", &q) == 1 &&
		      fr_query_finish("test", &q) == EXIT_USAGE,
	      "--diff of alloc accepted");
	return failures ? 1 : 0;
}
