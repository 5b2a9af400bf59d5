/* The events request and reply (ipc/msg_events.h): their wire text,
 * round trips, and the refusals of what a hostile peer may send. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/query/events.h"
#include "ipc/msg_events.h"
#include "ipc/proto.h"

#include "tests/unit/check.h"

static cJSON *parse(const char *text)
{
	cJSON *obj = NULL;

	if (fr_ipc_parse_json(text, strlen(text), &obj) < 0) {
		fprintf(stderr, "test input is not a JSON object: %s\n", text);
		exit(1);
	}
	return obj;
}

static cJSON *over_wire(cJSON *obj, const char *want, const char *what)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
	cJSON *back = NULL;

	CHECK(text && strcmp(text, want) == 0, "%s encodes as %s, want %s", what,
	      text ? text : "(null)", want);
	cJSON_Delete(obj);
	if (text && fr_ipc_parse_json(text, strlen(text), &back) < 0)
		back = NULL;
	cJSON_free(text);
	return back;
}

static void test_round_trips(void)
{
	static struct fr_ipc_events_req q, back;
	static struct fr_ipc_events_reply r, rback;
	char err[512] = "";
	cJSON *obj;

	q.window_ns = 600000000000LL;
	q.types = 1ull << FR_EVENT_CRASH | 1ull << FR_EVENT_OOM | 1ull << FR_EVENT_MEM_PRESSURE;
	q.targets.pids[q.targets.npids++] = 1234;
	snprintf(q.targets.cgroup, sizeof(q.targets.cgroup), "/system.slice");
	q.json = 1;
	q.series = 1;
	obj = over_wire(fr_ipc_events_req_encode(&q),
			"{\"req\":\"events\",\"window_ns\":600000000000,\"types\":\"oom_kill,"
			"memory-pressure,crash\",\"pids\":[1234],\"cgroup\":\"/system.slice\","
			"\"json\":true,\"series\":true}",
			"events request");
	CHECK(obj && fr_ipc_events_req_decode(obj, &back, err, sizeof(err)) == 0,
	      "events request round trip: %s", err);
	CHECK(memcmp(&q, &back, sizeof(q)) == 0, "events request differs after a round trip");
	cJSON_Delete(obj);

	r.events = 12;
	r.more = 3;
	r.bytes = 4096;
	fr_ipc_warn(r.warnings, &r.nwarnings, "your own processes only");
	obj = over_wire(fr_ipc_events_reply_encode(&r),
			"{\"ok\":true,\"events\":12,\"more\":3,\"bytes\":4096,"
			"\"warnings\":[\"your own processes only\"]}",
			"events reply");
	CHECK(obj && fr_ipc_events_reply_decode(obj, &rback, err, sizeof(err)) == 0,
	      "events reply round trip: %s", err);
	CHECK(memcmp(&r, &rback, sizeof(r)) == 0, "events reply differs after a round trip");
	cJSON_Delete(obj);
}

struct bad {
	const char *json, *error;
};

static const struct bad bad_requests[] = {
	{"{}", "events needs \"window_ns\" or \"from_ns\""},
	{"{\"window_ns\":0}", "events: \"window_ns\" must be 1..9223372036854775807, got 0"},
	{"{\"window_ns\":1,\"from_ns\":2}",
	 "events: \"window_ns\" or \"from_ns\"/\"to_ns\", not both"},
	{"{\"window_ns\":1,\"types\":\"cpu\"}",
	 "events: \"types\": unknown event type \"cpu\" (types: " FR_EVENTS_TYPES ")"},
	{"{\"window_ns\":1,\"types\":7}", "events: \"types\": must be a string"},
	{"{\"window_ns\":1,\"types\":\"crash,,oom\"}",
	 "events: \"types\": \"crash,,oom\" is not a comma-separated list of event types "
	 "(" FR_EVENTS_TYPES ")"},
	{"{\"window_ns\":1,\"types\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
	 "events: \"types\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is not a "
	 "comma-separated list of event types (" FR_EVENTS_TYPES ")"},
	{"{\"window_ns\":1,\"json\":1}", "events: \"json\" must be true or false"},
	{"{\"window_ns\":1,\"pids\":[1],\"children\":true}",
	 "events: \"children\" and labels do not choose events"},
	{"{\"window_ns\":1,\"pids\":[0]}", "events: \"pids\" must hold positive process ids"},
};

static void test_refusals(void)
{
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
		static struct fr_ipc_events_req q;
		char err[512] = "";
		cJSON *obj = parse(bad_requests[i].json);
		int ret = fr_ipc_events_req_decode(obj, &q, err, sizeof(err));

		CHECK(ret == -EINVAL && strcmp(err, bad_requests[i].error) == 0,
		      "%s: %d \"%s\", want \"%s\"", bad_requests[i].json, ret, err,
		      bad_requests[i].error);
		cJSON_Delete(obj);
	}
}

int main(void)
{
	test_round_trips();
	test_refusals();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("proto_events: all checks passed\n");
	return 0;
}
