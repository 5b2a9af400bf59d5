/* The timeline request and reply (ipc/msg_timeline.h): their wire text,
 * round trips, and every refusal's message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "ipc/msg_timeline.h"
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

/* `obj` printed, as it goes on the wire, then parsed back; frees obj. */
static cJSON *over_wire(cJSON *obj, const char *want, const char *what)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
	cJSON *back = NULL;

	CHECK(text && (!want || strcmp(text, want) == 0), "%s encodes as %s, want %s", what,
	      text ? text : "(null)", want ? want : "anything");
	cJSON_Delete(obj);
	if (text && fr_ipc_parse_json(text, strlen(text), &back) < 0)
		back = NULL;
	cJSON_free(text);
	return back;
}

static void test_request(void)
{
	static struct fr_ipc_timeline_req q, back;
	char err[512] = "";
	cJSON *obj;

	q.window_ns = 3600000000000LL;
	q.step_ns = 60000000000LL;
	q.event = FR_EVENT_OFFCPU;
	q.by = FR_TIMELINE_BY_LABEL;
	snprintf(q.label_key, sizeof(q.label_key), "tenant");
	q.top = 12;
	q.targets.npids = 2;
	q.targets.pids[0] = 4321;
	q.targets.pids[1] = 77;
	q.targets.ncomms = 1;
	snprintf(q.targets.comms[0], sizeof(q.targets.comms[0]), "nginx");
	obj = over_wire(fr_ipc_timeline_req_encode(&q),
			"{\"req\":\"timeline\",\"window_ns\":3600000000000,\"step_ns\":60000000000,"
			"\"event\":\"offcpu\",\"by\":\"label:tenant\",\"top\":12,"
			"\"pids\":[4321,77],\"comm\":[\"nginx\"]}",
			"timeline request");
	CHECK(obj && fr_ipc_timeline_req_decode(obj, &back, err, sizeof(err)) == 0,
	      "timeline request round trip: %s", err);
	CHECK(memcmp(&q, &back, sizeof(q)) == 0, "timeline request differs after a round trip");
	cJSON_Delete(obj);

	/* A span, the defaults left out. */
	memset(&q, 0, sizeof(q));
	q.has_from = q.has_to = 1;
	q.from_ns = 1795000000000000000LL;
	q.to_ns = 1795000600000000000LL;
	obj = over_wire(fr_ipc_timeline_req_encode(&q),
			"{\"req\":\"timeline\",\"from_ns\":1795000000000000000,"
			"\"to_ns\":1795000600000000000,\"event\":\"cpu\",\"by\":\"process\"}",
			"timeline --from --to request");
	CHECK(obj && fr_ipc_timeline_req_decode(obj, &back, err, sizeof(err)) == 0,
	      "timeline --from --to round trip: %s", err);
	CHECK(memcmp(&q, &back, sizeof(q)) == 0, "timeline --from --to differs after a round trip");
	cJSON_Delete(obj);
}

static void test_reply(void)
{
	static struct fr_ipc_timeline_reply r, back;
	char err[512] = "";
	cJSON *obj;

	r.samples = 7192808;
	r.groups = 9;
	r.bytes = 1ULL << 33;
	fr_ipc_warn(r.warnings, &r.nwarnings, "only your own processes");
	obj = over_wire(fr_ipc_timeline_reply_encode(&r),
			"{\"ok\":true,\"samples\":7192808,\"groups\":9,\"bytes\":8589934592,"
			"\"warnings\":[\"only your own processes\"]}",
			"timeline reply");
	CHECK(obj && fr_ipc_timeline_reply_decode(obj, &back, err, sizeof(err)) == 0,
	      "timeline reply round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "timeline reply differs after a round trip");
	cJSON_Delete(obj);
}

struct bad {
	const char *json, *error;
};

static const struct bad bad_requests[] = {
	{"{}", "timeline needs \"window_ns\" or \"from_ns\""},
	{"{\"window_ns\":0}", "timeline: \"window_ns\" must be 1..9223372036854775807, got 0"},
	{"{\"window_ns\":1.5}", "timeline: \"window_ns\" must be an integer"},
	{"{\"window_ns\":1,\"from_ns\":2}",
	 "timeline: \"window_ns\" or \"from_ns\"/\"to_ns\", not both"},
	{"{\"from_ns\":-1}", "timeline: \"from_ns\" must be 0..9223372036854775807, got -1"},
	{"{\"window_ns\":1,\"step_ns\":999999}",
	 "timeline: \"step_ns\" must be at least 1000000 (1ms)"},
	{"{\"window_ns\":1,\"top\":33}", "timeline: \"top\" must be 0..32, got 33"},
	{"{\"window_ns\":1,\"event\":\"nope\"}",
	 "timeline: \"event\" must be one of: " FR_EVENT_NAMES},
	{"{\"window_ns\":1,\"event\":7}", "timeline: \"event\" must be one of: " FR_EVENT_NAMES},
	{"{\"window_ns\":1,\"by\":\"pid\"}",
	 "timeline: \"by\" must be process, comm, cgroup or label:KEY (a key of 1 to 63 "
	 "characters)"},
	{"{\"window_ns\":1,\"by\":\"label:\"}",
	 "timeline: \"by\" must be process, comm, cgroup or label:KEY (a key of 1 to 63 "
	 "characters)"},
	{"{\"window_ns\":1,\"cgroup\":\"/a\"}",
	 "timeline: only \"pids\" and \"comm\" narrow a timeline"},
	{"{\"window_ns\":1,\"pids\":[1],\"children\":true}",
	 "timeline: only \"pids\" and \"comm\" narrow a timeline"},
	{"{\"window_ns\":1,\"pids\":[0]}", "timeline: \"pids\" must hold positive process ids"},
};

static const struct bad bad_replies[] = {
	{"{\"samples\":\"1\"}", "timeline reply: \"samples\" must be an integer"},
	{"{\"groups\":-1}", "timeline reply: \"groups\" must be 0..9223372036854775807, got -1"},
	{"{\"warnings\":[1]}", "timeline reply: \"warnings\" must be an array of strings"},
};

static void test_refusals(void)
{
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
		cJSON *obj = parse(bad_requests[i].json);
		struct fr_ipc_timeline_req q;
		char err[512] = "";

		CHECK(fr_ipc_timeline_req_decode(obj, &q, err, sizeof(err)) == -EINVAL &&
			      strcmp(err, bad_requests[i].error) == 0,
		      "%s: \"%s\", want \"%s\"", bad_requests[i].json, err, bad_requests[i].error);
		cJSON_Delete(obj);
	}
	for (size_t i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]); i++) {
		cJSON *obj = parse(bad_replies[i].json);
		struct fr_ipc_timeline_reply r;
		char err[512] = "";

		CHECK(fr_ipc_timeline_reply_decode(obj, &r, err, sizeof(err)) == -EINVAL &&
			      strcmp(err, bad_replies[i].error) == 0,
		      "%s: \"%s\", want \"%s\"", bad_replies[i].json, err, bad_replies[i].error);
		cJSON_Delete(obj);
	}
}

int main(void)
{
	test_request();
	test_reply();
	test_refusals();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("proto_timeline: all checks passed\n");
	return 0;
}
