/* The protocol's messages (ipc/msg.h) with no daemon: each request and
 * reply survives encode -> wire text -> decode, encodes to the very bytes
 * clients and daemons have always exchanged, decodes absent members to
 * their defaults, and every malformed member is refused with -EINVAL and
 * a message naming it. */
#include "ipc/msg.h"
#include "ipc/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/store/sample.h"
#include "tests/unit/check.h"

/* Prints `obj` as it goes on the wire and parses it back, as the peer
 * does; frees `obj`. Returns the parsed object (caller frees) or NULL. */
static cJSON *over_wire(cJSON *obj, char **text_out)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
	cJSON *back = NULL;

	cJSON_Delete(obj);
	if (!text)
		return NULL;
	if (fr_ipc_parse_json(text, strlen(text), &back) < 0)
		back = NULL;
	if (text_out)
		*text_out = text;
	else
		cJSON_free(text);
	return back;
}

static cJSON *parse(const char *text)
{
	cJSON *obj = NULL;

	if (fr_ipc_parse_json(text, strlen(text), &obj) < 0) {
		fprintf(stderr, "test input is not a JSON object: %s\n", text);
		exit(1);
	}
	return obj;
}

static void check_text(cJSON *obj, const char *want, const char *what)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

	CHECK(text && strcmp(text, want) == 0, "%s encodes as %s, want %s", what,
	      text ? text : "(null)", want);
	cJSON_free(text);
	cJSON_Delete(obj);
}

static void test_attach_req(void)
{
	struct fr_ipc_attach_req r, back;
	char err[512] = "";
	cJSON *obj;

	memset(&r, 0, sizeof(r));
	r.window_ns = 60000000000LL;
	r.hz = 99;
	r.nevents = 2;
	r.events[0] = FR_EVENT_CPU;
	r.events[1] = (uint32_t)fr_event_lookup("offcpu");
	r.targets.npids = 2;
	r.targets.pids[0] = 1234;
	r.targets.pids[1] = 5678;
	r.targets.children = 1;
	r.targets.ncomms = 1;
	snprintf(r.targets.comms[0], sizeof(r.targets.comms[0]), "postgres");
	snprintf(r.targets.cgroup, sizeof(r.targets.cgroup), "/system.slice/x.service");
	CHECK(fr_targets_add_label(&r.targets, "tenant=42") == 0 &&
		      fr_targets_add_label(&r.targets, "q=a=b") == 0 &&
		      fr_targets_set_label_key(&r.targets, "endpoint") == 0,
	      "label filter");
	r.format = FR_PROFILE_FOLDED;
	r.by_cpu = 1;
	check_text(fr_ipc_attach_req_encode(&r),
		   "{\"req\":\"attach\",\"window_ns\":60000000000,\"hz\":99,"
		   "\"events\":[\"cpu\",\"offcpu\"],\"pids\":[1234,5678],\"comm\":[\"postgres\"],"
		   "\"cgroup\":\"/system.slice/x.service\",\"children\":true,"
		   "\"labels\":[\"tenant=42\",\"q=a=b\"],\"label_key\":\"endpoint\","
		   "\"format\":\"folded\",\"by_cpu\":true}",
		   "attach request");

	obj = over_wire(fr_ipc_attach_req_encode(&r), NULL);
	CHECK(obj && fr_ipc_attach_req_decode(obj, &back, err, sizeof(err)) == 0,
	      "attach request round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "attach request differs after a round trip");
	cJSON_Delete(obj);

	/* Each event at its own rate. */
	r.format = FR_PROFILE_PPROF;
	r.targets = (struct fr_targets){0};
	r.by_cpu = 0;
	r.events[1] = FR_EVENT_PAGE_FAULTS;
	r.event_hz[0] = 0;
	r.event_hz[1] = 19;
	check_text(fr_ipc_attach_req_encode(&r),
		   "{\"req\":\"attach\",\"window_ns\":60000000000,\"hz\":99,"
		   "\"events\":[\"cpu\",\"page-faults\"],\"event_hz\":[0,19]}",
		   "attach request with event rates");
	obj = over_wire(fr_ipc_attach_req_encode(&r), NULL);
	CHECK(obj && fr_ipc_attach_req_decode(obj, &back, err, sizeof(err)) == 0 &&
		      back.event_hz[0] == 0 && back.event_hz[1] == 19 && back.hz == 99,
	      "attach request with event rates, round trip: %s", err);
	cJSON_Delete(obj);

	/* A cursor, with no window: the window is the cursor's. */
	obj = parse("{\"req\":\"attach\",\"since_last\":\"hourly.db-1\"}");
	CHECK(fr_ipc_attach_req_decode(obj, &back, err, sizeof(err)) == 0 &&
		      strcmp(back.since_last, "hourly.db-1") == 0 && !back.window_ns &&
		      !back.has_from,
	      "attach since_last: %s", err);
	cJSON_Delete(obj);
	check_text(fr_ipc_attach_req_encode(&back),
		   "{\"req\":\"attach\",\"events\":[\"cpu\"],\"since_last\":\"hourly.db-1\"}",
		   "attach request with a cursor");

	/* A window by its ends, exact in nanoseconds past 2^53. */
	memset(&r, 0, sizeof(r));
	r.has_from = r.has_to = 1;
	r.from_ns = 1795000000123456789LL;
	r.to_ns = 1795000010123456789LL;
	check_text(fr_ipc_attach_req_encode(&r),
		   "{\"req\":\"attach\",\"from_ns\":1795000000123456789,"
		   "\"to_ns\":1795000010123456789}",
		   "attach request by from/to");

	/* The heap's growth between the two. */
	r.nevents = 1;
	r.events[0] = FR_EVENT_HEAP;
	r.diff = 1;
	check_text(fr_ipc_attach_req_encode(&r),
		   "{\"req\":\"attach\",\"from_ns\":1795000000123456789,"
		   "\"to_ns\":1795000010123456789,\"events\":[\"heap\"],\"diff\":true}",
		   "attach request of the heap's growth");
	obj = over_wire(fr_ipc_attach_req_encode(&r), NULL);
	CHECK(obj && fr_ipc_attach_req_decode(obj, &back, err, sizeof(err)) == 0 &&
		      memcmp(&r, &back, sizeof(r)) == 0,
	      "attach request with diff, round trip: %s", err);
	cJSON_Delete(obj);

	/* Absent members take their defaults: events [cpu], pprof. */
	obj = parse("{\"req\":\"attach\",\"v\":1,\"window_ns\":5,\"pids\":null}");
	CHECK(fr_ipc_attach_req_decode(obj, &back, err, sizeof(err)) == 0, "defaults: %s", err);
	CHECK(back.window_ns == 5 && !back.has_from && !back.has_to && back.hz == 0,
	      "attach window defaults");
	CHECK(back.nevents == 1 && back.events[0] == FR_EVENT_CPU, "attach events default to cpu");
	CHECK(back.format == FR_PROFILE_PPROF && back.targets.npids == 0 && !back.targets.cgroup[0],
	      "attach format and targets default");
	CHECK(!back.by_cpu && !back.diff, "the cpu label and a diff are asked for by default");
	cJSON_Delete(obj);
}

struct bad {
	const char *json;
	const char *error;
};

static const struct bad bad_attach[] = {
	{"{}", "attach needs \"window_ns\" or \"from_ns\""},
	{"{\"to_ns\":5}", "attach needs \"window_ns\" or \"from_ns\""},
	{"{\"window_ns\":\"60s\"}", "attach: \"window_ns\" must be an integer"},
	{"{\"window_ns\":1.5}", "attach: \"window_ns\" must be an integer"},
	{"{\"window_ns\":1e30}", "attach: \"window_ns\" must be an integer"},
	{"{\"window_ns\":0}", "attach: \"window_ns\" must be 1..9223372036854775807, got 0"},
	{"{\"since_last\":\"a/b\"}",
	 "attach: \"since_last\": a cursor name is 1 to 64 characters of letters, digits, '_', "
	 "'-' and '.'"},
	{"{\"since_last\":\"\"}",
	 "attach: \"since_last\": a cursor name is 1 to 64 characters of letters, digits, '_', "
	 "'-' and '.'"},
	{"{\"since_last\":7}",
	 "attach: \"since_last\": a cursor name is 1 to 64 characters of letters, digits, '_', "
	 "'-' and '.'"},
	{"{\"window_ns\":5,\"event_hz\":[99]}",
	 "attach: \"event_hz\" must be an array of one rate per entry of \"events\""},
	{"{\"window_ns\":5,\"events\":[\"cpu\",\"page-faults\"],\"event_hz\":[99]}",
	 "attach: \"event_hz\" must be an array of one rate per entry of \"events\""},
	{"{\"window_ns\":5,\"events\":[\"cpu\"],\"event_hz\":[-1]}",
	 "attach: \"event_hz\" entries must be integers of 0..2147483647"},
	{"{\"window_ns\":5,\"events\":[\"cpu\"],\"event_hz\":[1.5]}",
	 "attach: \"event_hz\" entries must be integers of 0..2147483647"},
	{"{\"window_ns\":5,\"events\":[\"cpu\"],\"event_hz\":{}}",
	 "attach: \"event_hz\" must be an array of one rate per entry of \"events\""},
	{"{\"from_ns\":-1}", "attach: \"from_ns\" must be 0..9223372036854775807, got -1"},
	{"{\"from_ns\":1,\"to_ns\":true}", "attach: \"to_ns\" must be an integer"},
	{"{\"window_ns\":1,\"hz\":-5}", "attach: \"hz\" must be 0..2147483647, got -5"},
	{"{\"window_ns\":1,\"hz\":4294967296}",
	 "attach: \"hz\" must be 0..2147483647, got 4294967296"},
	{"{\"window_ns\":1,\"pids\":5}", "attach: \"pids\" must be an array of process ids"},
	{"{\"window_ns\":1,\"pids\":[0]}", "attach: \"pids\" must hold positive process ids"},
	{"{\"window_ns\":1,\"pids\":[\"1\"]}", "attach: \"pids\" must hold positive process ids"},
	{"{\"window_ns\":1,\"pids\":[2147483648]}",
	 "attach: \"pids\" must hold positive process ids"},
	{"{\"window_ns\":1,\"comm\":\"postgres\"}",
	 "attach: \"comm\" must be an array of command names"},
	{"{\"window_ns\":1,\"comm\":[\"\"]}",
	 "attach: \"comm\" must hold command names of 1..15 characters (as the kernel keeps them)"},
	{"{\"window_ns\":1,\"comm\":[\"a-name-of-16-chr\"]}",
	 "attach: \"comm\" must hold command names of 1..15 characters (as the kernel keeps them)"},
	{"{\"window_ns\":1,\"children\":1,\"pids\":[1]}",
	 "attach: \"children\" must be true or false"},
	{"{\"window_ns\":1,\"children\":true}", "attach: \"children\" goes with \"pids\""},
	{"{\"window_ns\":1,\"cgroup\":\"system.slice\"}",
	 "attach: \"cgroup\" must be a cgroup v2 path like \"/system.slice/nginx.service\" (at "
	 "most 255 characters)"},
	{"{\"window_ns\":1,\"labels\":[\"tenant\"]}",
	 "attach: \"labels\" must be \"key=value\" strings of at most 63 characters each side"},
	{"{\"window_ns\":1,\"label_key\":\"\"}",
	 "attach: \"label_key\" must be a key of 1..63 characters"},
	{"{\"window_ns\":1,\"events\":\"cpu\"}",
	 "attach: \"events\" must be a non-empty array of event names"},
	{"{\"window_ns\":1,\"events\":[]}",
	 "attach: \"events\" must be a non-empty array of event names"},
	{"{\"window_ns\":1,\"events\":[\"bogus\"]}",
	 "attach: unknown event \"bogus\" (accepted: " FR_EVENT_NAMES ")"},
	{"{\"window_ns\":1,\"events\":[7]}",
	 "attach: unknown event (not a string) (accepted: " FR_EVENT_NAMES ")"},
	{"{\"window_ns\":1,\"events\":[\"cpu\",\"cpu\"]}", "attach: event \"cpu\" is listed twice"},
	{"{\"window_ns\":1,\"events\":[\"cpu\",\"cycles\",\"instructions\",\"cache-references\","
	 "\"cache-misses\",\"branch-instructions\",\"branch-misses\",\"page-faults\","
	 "\"context-switches\"]}",
	 "attach: at most 8 events per request"},
	{"{\"window_ns\":1,\"format\":\"svg\"}",
	 "attach: \"format\" must be one of: " FR_PROFILE_FORMAT_NAMES},
	{"{\"window_ns\":1,\"format\":1}",
	 "attach: \"format\" must be one of: " FR_PROFILE_FORMAT_NAMES},
	{"{\"window_ns\":1,\"by_cpu\":1}", "attach: \"by_cpu\" must be true or false"},
	{"{\"window_ns\":1,\"diff\":\"yes\"}", "attach: \"diff\" must be true or false"},
};

static const struct bad bad_consume[] = {
	{"{\"events\":[\"cpu\"],\"event_hz\":[\"fast\"]}",
	 "consume: \"event_hz\" entries must be integers of 0..2147483647"},
	{"{\"hz\":\"fast\"}", "consume: \"hz\" must be an integer"},
	{"{\"hz\":-1}", "consume: \"hz\" must be 0..2147483647, got -1"},
	{"{\"events\":{}}", "consume: \"events\" must be a non-empty array of event names"},
	{"{\"events\":[\"nope\"]}",
	 "consume: unknown event \"nope\" (accepted: " FR_EVENT_NAMES ")"},
	{"{\"events\":[\"offcpu\",\"offcpu\"]}", "consume: event \"offcpu\" is listed twice"},
};

static const struct bad bad_threads[] = {
	{"{}", "threads needs \"pids\", \"comm\" or \"cgroup\""},
	{"{\"pids\":[]}", "threads needs \"pids\", \"comm\" or \"cgroup\""},
	{"{\"pids\":[0]}", "threads: \"pids\" must hold positive process ids"},
	{"{\"pids\":\"1\"}", "threads: \"pids\" must be an array of process ids"},
	{"{\"pids\":[1],\"children\":true}",
	 "threads: \"children\" is not taken; name the processes"},
	{"{\"comm\":[\"abcdefghijklmnop\"]}",
	 "threads: \"comm\" must hold command names of 1..15 characters (as the kernel keeps them)"},
	{"{\"cgroup\":\"x\"}", "threads: \"cgroup\" must be a cgroup v2 path like "
			       "\"/system.slice/nginx.service\" (at most 255 characters)"},
	{"{\"pids\":[1],\"at_ns\":0}", "threads: \"at_ns\" must be 1..9223372036854775807, got 0"},
	{"{\"pids\":[1],\"at_ns\":\"1\"}", "threads: \"at_ns\" must be an integer"},
};

static const struct bad bad_threads_reply[] = {
	{"{\"processes\":\"1\",\"threads\":1,\"bytes\":2,\"warnings\":[]}",
	 "threads reply: \"processes\" must be an integer"},
	{"{\"processes\":1,\"threads\":-1,\"bytes\":2,\"warnings\":[]}",
	 "threads reply: \"threads\" must be 0..9223372036854775807, got -1"},
};

static const struct bad bad_dump[] = {
	{"{}", "dump: \"session\" must name a session"},
	{"{\"session\":\"\"}", "dump: \"session\" must name a session"},
	{"{\"session\":7}", "dump: \"session\" must name a session"},
	{"{\"session\":\"db\",\"window_ns\":\"1m\"}", "dump: \"window_ns\" must be an integer"},
	{"{\"session\":\"db\",\"window_ns\":999999999}",
	 "dump: \"window_ns\" must be 1000000000..3600000000000, got 999999999"},
	{"{\"session\":\"db\",\"window_ns\":3600000000001}",
	 "dump: \"window_ns\" must be 1000000000..3600000000000, got 3600000000001"},
};

static const struct bad bad_attach_reply[] = {
	{"{\"ok\":true,\"samples\":\"many\"}", "attach reply: \"samples\" must be an integer"},
	{"{\"ok\":true,\"samples\":-1}",
	 "attach reply: \"samples\" must be 0..9223372036854775807, got -1"},
	{"{\"ok\":true,\"hz\":1.5}", "attach reply: \"hz\" must be an integer"},
	{"{\"ok\":true,\"t0_ns\":\"x\"}", "attach reply: \"t0_ns\" must be an integer"},
	{"{\"ok\":true,\"events\":{}}",
	 "attach reply: \"events\" must be an array of at most 8 objects"},
	{"{\"ok\":true,\"events\":[{\"event\":\"nope\"}]}",
	 "attach reply: \"events\" must hold objects naming a known \"event\""},
	{"{\"ok\":true,\"events\":[{\"event\":\"cpu\",\"lost\":-2}]}",
	 "attach reply: \"lost\" must be 0..9223372036854775807, got -2"},
	{"{\"ok\":true,\"warnings\":\"careful\"}",
	 "attach reply: \"warnings\" must be an array of strings"},
	/* What the profile spans (ipc/msg_attach.c). */
	{"{\"ok\":true,\"first_ns\":-1}",
	 "attach reply: \"first_ns\" must be a non-negative integer"},
	{"{\"ok\":true,\"stall_t1_ns\":\"soon\"}",
	 "attach reply: \"stall_t1_ns\" must be a non-negative integer"},
	{"{\"ok\":true,\"empty_filters\":\"comm\"}",
	 "attach reply: \"empty_filters\" must be an array"},
	{"{\"ok\":true,\"empty_filters\":[\"comm\",3]}",
	 "attach reply: \"empty_filters\" holds strings"},
	{"{\"ok\":true,\"pids_not_running\":[0]}", "attach reply: \"pids_not_running\" holds pids"},
	{"{\"ok\":true,\"warnings\":[1]}",
	 "attach reply: \"warnings\" must be an array of strings"},
	{"{\"ok\":true,\"incomplete\":true}", "attach reply: \"incomplete\" must be a string"},
};

static const struct bad bad_consume_reply[] = {
	{"{\"ok\":true,\"start_ns\":\"now\"}", "consume reply: \"start_ns\" must be an integer"},
	{"{\"ok\":true,\"events\":[{}]}",
	 "consume reply: \"events\" must hold objects naming a known \"event\""},
	{"{\"ok\":true,\"events\":[{\"event\":\"cpu\",\"recording_hz\":4294967296}]}",
	 "consume reply: \"recording_hz\" must be 0..4294967295, got 4294967296"},
	{"{\"ok\":true,\"warnings\":{}}",
	 "consume reply: \"warnings\" must be an array of strings"},
};

static const struct bad bad_dump_reply[] = {
	{"{\"ok\":true}", "dump reply: \"path\" must be a file path"},
	{"{\"ok\":true,\"path\":\"\"}", "dump reply: \"path\" must be a file path"},
	{"{\"ok\":true,\"path\":\"/d/x.pb.gz\",\"t1_ns\":[]}",
	 "dump reply: \"t1_ns\" must be an integer"},
};

/* Each decoder through one signature, for the tables above. */
static int decode_attach(const cJSON *o, char *err, size_t len)
{
	struct fr_ipc_attach_req r;
	return fr_ipc_attach_req_decode(o, &r, err, len);
}

static int decode_consume(const cJSON *o, char *err, size_t len)
{
	struct fr_ipc_consume_req r;
	return fr_ipc_consume_req_decode(o, &r, err, len);
}

static int decode_dump(const cJSON *o, char *err, size_t len)
{
	struct fr_ipc_dump_req r;
	return fr_ipc_dump_req_decode(o, &r, err, len);
}

static int decode_attach_reply(const cJSON *o, char *err, size_t len)
{
	static struct fr_ipc_attach_reply r;
	return fr_ipc_attach_reply_decode(o, &r, err, len);
}

static int decode_consume_reply(const cJSON *o, char *err, size_t len)
{
	static struct fr_ipc_consume_reply r;
	return fr_ipc_consume_reply_decode(o, &r, err, len);
}

static int decode_threads(const cJSON *o, char *err, size_t len)
{
	static struct fr_ipc_threads_req r;
	return fr_ipc_threads_req_decode(o, &r, err, len);
}

static int decode_threads_reply(const cJSON *o, char *err, size_t len)
{
	static struct fr_ipc_threads_reply r;
	return fr_ipc_threads_reply_decode(o, &r, err, len);
}

static int decode_dump_reply(const cJSON *o, char *err, size_t len)
{
	static struct fr_ipc_dump_reply r;
	return fr_ipc_dump_reply_decode(o, &r, err, len);
}

static void check_refused(const struct bad *cases, size_t n,
			  int (*decode)(const cJSON *, char *, size_t))
{
	for (size_t i = 0; i < n; i++) {
		cJSON *obj = parse(cases[i].json);
		char err[512] = "";
		int ret = decode(obj, err, sizeof(err));

		CHECK(ret == -EINVAL, "%s: decoded to %d, want -EINVAL", cases[i].json, ret);
		CHECK(strcmp(err, cases[i].error) == 0, "%s: message \"%s\", want \"%s\"",
		      cases[i].json, err, cases[i].error);
		cJSON_Delete(obj);
	}
}

static void test_refusals(void)
{
	check_refused(bad_attach, sizeof(bad_attach) / sizeof(bad_attach[0]), decode_attach);
	check_refused(bad_consume, sizeof(bad_consume) / sizeof(bad_consume[0]), decode_consume);
	check_refused(bad_dump, sizeof(bad_dump) / sizeof(bad_dump[0]), decode_dump);
	check_refused(bad_attach_reply, sizeof(bad_attach_reply) / sizeof(bad_attach_reply[0]),
		      decode_attach_reply);
	check_refused(bad_consume_reply, sizeof(bad_consume_reply) / sizeof(bad_consume_reply[0]),
		      decode_consume_reply);
	check_refused(bad_dump_reply, sizeof(bad_dump_reply) / sizeof(bad_dump_reply[0]),
		      decode_dump_reply);
	check_refused(bad_threads, sizeof(bad_threads) / sizeof(bad_threads[0]), decode_threads);
	check_refused(bad_threads_reply, sizeof(bad_threads_reply) / sizeof(bad_threads_reply[0]),
		      decode_threads_reply);
}

static void test_attach_reply(void)
{
	static struct fr_ipc_attach_reply r, back;
	char err[512] = "";
	cJSON *obj;

	memset(&r, 0, sizeof(r));
	r.samples = 10;
	r.samples_in_window = 12;
	r.stacks = 3;
	r.bytes = 4096;
	r.hz = 99;
	r.lost = 1;
	r.t0_ns = 1795000000123456789LL;
	r.t1_ns = 1795000060123456789LL;
	r.covered_t0_ns = 1795000001000000000LL;
	r.nevents = 1;
	r.events[0] = (struct fr_ipc_event_counts){FR_EVENT_CPU, 99, 10, 12, 1, 40, 2, 3};
	snprintf(r.incomplete, sizeof(r.incomplete), "incomplete: late");
	fr_ipc_warn(r.warnings, &r.nwarnings, "pid 5678 exited before the window");
	check_text(fr_ipc_attach_reply_encode(&r),
		   "{\"ok\":true,\"samples\":10,\"samples_in_window\":12,\"stacks\":3,"
		   "\"bytes\":4096,\"hz\":99,\"lost\":1,\"t0_ns\":1795000000123456789,"
		   "\"t1_ns\":1795000060123456789,\"covered_t0_ns\":1795000001000000000,"
		   "\"events\":[{\"event\":\"cpu\",\"hz\":99,\"samples\":10,\"samples_in_window\":12,"
		   "\"lost\":1,\"recorded\":40,\"throttled\":2,\"truncated\":3}],"
		   "\"incomplete\":\"incomplete: late\","
		   "\"warnings\":[\"pid 5678 exited before the window\"]}",
		   "attach reply");

	/* Times whose doubles are exact: cJSON parses numbers as doubles. */
	r.t0_ns = 1LL << 60;
	r.t1_ns = (1LL << 60) + (1LL << 20);
	r.covered_t0_ns = 1LL << 59;
	obj = over_wire(fr_ipc_attach_reply_encode(&r), NULL);
	CHECK(obj && fr_ipc_attach_reply_decode(obj, &back, err, sizeof(err)) == 0,
	      "attach reply round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "attach reply differs after a round trip");
	cJSON_Delete(obj);

	/* What the profile spans: absent when zero (the bytes above), and
	 * each member when not; an unknown kind of filter is skipped. */
	r.first_ns = 1LL << 60;
	r.last_ns = (1LL << 60) + (1LL << 19);
	r.ring_oldest_ns = 1LL << 59;
	r.ring_newest_ns = (1LL << 60) + (1LL << 20);
	r.stall_t0_ns = (1LL << 60) + (1LL << 10);
	r.stall_t1_ns = (1LL << 60) + (1LL << 11);
	r.empty_filters = FR_IPC_FILTER_PID | FR_IPC_FILTER_CGROUP;
	r.procs_in_window = 12;
	r.npids_not_running = 1;
	r.pids_not_running[0] = 99999;
	r.writer_error_ns = (1LL << 60) + (1LL << 12);
	snprintf(r.writer_error, sizeof(r.writer_error), "Read-only file system");
	snprintf(r.unrecorded, sizeof(r.unrecorded), "page-faults");
	snprintf(r.recording, sizeof(r.recording), "cpu at 99 Hz, offcpu at every context switch");
	obj = over_wire(fr_ipc_attach_reply_encode(&r), NULL);
	CHECK(obj && cJSON_GetArraySize(cJSON_GetObjectItem(obj, "empty_filters")) == 2 &&
		      strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(obj, "empty_filters"), 1)
				     ->valuestring,
			     "cgroup") == 0,
	      "empty_filters on the wire");
	CHECK(obj && fr_ipc_attach_reply_decode(obj, &back, err, sizeof(err)) == 0,
	      "attach reply with its span, round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "attach reply's span differs after a round trip");
	cJSON_Delete(obj);
	obj = cJSON_Parse("{\"ok\":true,\"writer_error_ns\":1,\"writer_error\":7}");
	CHECK(obj && fr_ipc_attach_reply_decode(obj, &back, err, sizeof(err)) < 0 &&
		      strstr(err, "writer_error"),
	      "a writer_error that is not text: %s", err);
	cJSON_Delete(obj);
	obj = cJSON_Parse("{\"ok\":true,\"empty_filters\":[\"comm\",\"tenant\"]}");
	CHECK(obj && fr_ipc_attach_reply_decode(obj, &back, err, sizeof(err)) == 0 &&
		      back.empty_filters == FR_IPC_FILTER_COMM,
	      "an unknown kind of filter: %s, %#x", err, back.empty_filters);
	cJSON_Delete(obj);

	/* A reply has room for FR_IPC_MAX_WARNINGS; more are dropped. */
	for (int i = 0; i < FR_IPC_MAX_WARNINGS + 2; i++)
		fr_ipc_warn(r.warnings, &r.nwarnings, "again");
	CHECK(r.nwarnings == FR_IPC_MAX_WARNINGS, "%u warnings kept", r.nwarnings);
}

static void test_consume(void)
{
	struct fr_ipc_consume_req q = {.hz = 999, .nevents = 1, .events = {FR_EVENT_CPU}}, qb;
	static struct fr_ipc_consume_reply r, back;
	char err[512] = "";
	cJSON *obj;

	check_text(fr_ipc_consume_req_encode(&q),
		   "{\"req\":\"consume\",\"hz\":999,\"events\":[\"cpu\"]}", "consume request");
	obj = over_wire(fr_ipc_consume_req_encode(&q), NULL);
	CHECK(obj && fr_ipc_consume_req_decode(obj, &qb, err, sizeof(err)) == 0,
	      "consume request round trip: %s", err);
	CHECK(memcmp(&q, &qb, sizeof(q)) == 0, "consume request differs after a round trip");
	cJSON_Delete(obj);
	q.nevents = 2;
	q.events[1] = FR_EVENT_PAGE_FAULTS;
	q.event_hz[1] = 19;
	check_text(fr_ipc_consume_req_encode(&q),
		   "{\"req\":\"consume\",\"hz\":999,\"events\":[\"cpu\",\"page-faults\"],"
		   "\"event_hz\":[0,19]}",
		   "consume request with event rates");
	obj = over_wire(fr_ipc_consume_req_encode(&q), NULL);
	CHECK(obj && fr_ipc_consume_req_decode(obj, &qb, err, sizeof(err)) == 0 &&
		      memcmp(&q, &qb, sizeof(q)) == 0,
	      "consume request with event rates, round trip: %s", err);
	cJSON_Delete(obj);
	obj = parse("{\"req\":\"consume\"}");
	CHECK(fr_ipc_consume_req_decode(obj, &qb, err, sizeof(err)) == 0 && qb.hz == 0 &&
		      qb.nevents == 1 && qb.events[0] == FR_EVENT_CPU,
	      "consume defaults");
	cJSON_Delete(obj);

	memset(&r, 0, sizeof(r));
	fr_ipc_warn(r.warnings, &r.nwarnings, "capped");
	r.start_ns = 1LL << 60;
	r.nevents = 2;
	r.events[0] = (struct fr_ipc_consume_event){FR_EVENT_CPU, 999, 999};
	r.events[1] = (struct fr_ipc_consume_event){(uint32_t)fr_event_lookup("offcpu"), 0, 0};
	check_text(fr_ipc_consume_reply_encode(&r),
		   "{\"ok\":true,\"warnings\":[\"capped\"],\"start_ns\":1152921504606846976,"
		   "\"events\":[{\"event\":\"cpu\",\"hz\":999,\"recording_hz\":999},"
		   "{\"event\":\"offcpu\",\"hz\":0,\"recording_hz\":0}]}",
		   "consume reply");
	obj = over_wire(fr_ipc_consume_reply_encode(&r), NULL);
	CHECK(obj && fr_ipc_consume_reply_decode(obj, &back, err, sizeof(err)) == 0,
	      "consume reply round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "consume reply differs after a round trip");
	cJSON_Delete(obj);
}

static void test_dump(void)
{
	struct fr_ipc_dump_req q = {.session = "db", .window_ns = 120000000000LL}, qb;
	static struct fr_ipc_dump_reply r, back;
	char err[512] = "";
	cJSON *obj;

	check_text(fr_ipc_dump_req_encode(&q),
		   "{\"req\":\"dump\",\"session\":\"db\",\"window_ns\":120000000000}",
		   "dump request");
	obj = over_wire(fr_ipc_dump_req_encode(&q), NULL);
	CHECK(obj && fr_ipc_dump_req_decode(obj, &qb, err, sizeof(err)) == 0,
	      "dump request round trip: %s", err);
	CHECK(strcmp(qb.session, "db") == 0 && qb.window_ns == q.window_ns,
	      "dump request differs after a round trip");
	cJSON_Delete(obj);

	memset(&r, 0, sizeof(r));
	snprintf(r.path, sizeof(r.path), "/var/lib/flightrec/dumps/db-manual-h-t.pb.gz");
	r.t0_ns = 1LL << 60;
	r.t1_ns = (1LL << 60) + (1LL << 30);
	check_text(fr_ipc_dump_reply_encode(&r),
		   "{\"ok\":true,\"path\":\"/var/lib/flightrec/dumps/db-manual-h-t.pb.gz\","
		   "\"t0_ns\":1152921504606846976,\"t1_ns\":1152921505680588800}",
		   "dump reply");
	obj = over_wire(fr_ipc_dump_reply_encode(&r), NULL);
	CHECK(obj && fr_ipc_dump_reply_decode(obj, &back, err, sizeof(err)) == 0,
	      "dump reply round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "dump reply differs after a round trip");
	cJSON_Delete(obj);
}

/* flightrec threads: the targets as attach writes them, and the counts. */
static void test_threads(void)
{
	static struct fr_ipc_threads_req q, qb;
	static struct fr_ipc_threads_reply r, back;
	char err[512] = "";
	cJSON *obj;

	memset(&q, 0, sizeof(q));
	q.targets.pids[q.targets.npids++] = 42;
	snprintf(q.targets.comms[q.targets.ncomms++], FR_LIMIT_COMM_LEN, "postgres");
	snprintf(q.targets.cgroup, sizeof(q.targets.cgroup), "/db.slice");
	check_text(fr_ipc_threads_req_encode(&q),
		   "{\"req\":\"threads\",\"pids\":[42],\"comm\":[\"postgres\"],"
		   "\"cgroup\":\"/db.slice\"}",
		   "threads request");
	obj = over_wire(fr_ipc_threads_req_encode(&q), NULL);
	CHECK(obj && fr_ipc_threads_req_decode(obj, &qb, err, sizeof(err)) == 0,
	      "threads request round trip: %s", err);
	CHECK(memcmp(&q, &qb, sizeof(q)) == 0, "threads request differs after a round trip");
	cJSON_Delete(obj);
	/* At a past moment by pids; a time a double holds exactly. */
	memset(&q, 0, sizeof(q));
	q.targets.pids[q.targets.npids++] = 42;
	q.at_ns = 1795000000LL << 20;
	obj = over_wire(fr_ipc_threads_req_encode(&q), NULL);
	CHECK(obj && fr_ipc_threads_req_decode(obj, &qb, err, sizeof(err)) == 0,
	      "threads --at request round trip: %s", err);
	CHECK(memcmp(&q, &qb, sizeof(q)) == 0, "threads --at request differs after a round trip");
	cJSON_Delete(obj);
	/* At a past moment by command names and a cgroup, as the ring had
	 * them then (they were refused before). */
	memset(&q, 0, sizeof(q));
	snprintf(q.targets.comms[q.targets.ncomms++], FR_LIMIT_COMM_LEN, "postgres");
	snprintf(q.targets.cgroup, sizeof(q.targets.cgroup), "/db.slice");
	q.at_ns = 1795000000LL << 20;
	check_text(fr_ipc_threads_req_encode(&q),
		   "{\"req\":\"threads\",\"comm\":[\"postgres\"],\"cgroup\":\"/db.slice\","
		   "\"at_ns\":1882193920000000}",
		   "threads --at --comm --cgroup request");
	obj = over_wire(fr_ipc_threads_req_encode(&q), NULL);
	CHECK(obj && fr_ipc_threads_req_decode(obj, &qb, err, sizeof(err)) == 0,
	      "threads --at --comm --cgroup request refused: %s", err);
	CHECK(memcmp(&q, &qb, sizeof(q)) == 0,
	      "threads --at --comm --cgroup request differs after a round trip");
	cJSON_Delete(obj);

	memset(&r, 0, sizeof(r));
	r.processes = 2;
	r.threads = 10001;
	r.bytes = 1ULL << 40;
	fr_ipc_warn(r.warnings, &r.nwarnings, "only your own processes");
	check_text(fr_ipc_threads_reply_encode(&r),
		   "{\"ok\":true,\"processes\":2,\"threads\":10001,\"bytes\":1099511627776,"
		   "\"warnings\":[\"only your own processes\"]}",
		   "threads reply");
	obj = over_wire(fr_ipc_threads_reply_encode(&r), NULL);
	CHECK(obj && fr_ipc_threads_reply_decode(obj, &back, err, sizeof(err)) == 0,
	      "threads reply round trip: %s", err);
	CHECK(memcmp(&r, &back, sizeof(r)) == 0, "threads reply differs after a round trip");
	cJSON_Delete(obj);
}

/* Regression (raw_ns_exact): an object decoded without printing it holds
 * its integers as the raw text fr_ipc_add_int() wrote; a time in ns is
 * past what a double holds exactly, and was read through one (rounded to
 * ...768, and INT64_MAX refused as no integer). Every digit is kept. */
static void test_raw_ns_exact(void)
{
	struct fr_ipc_attach_req r, back;
	char err[512] = "";
	cJSON *obj;

	memset(&r, 0, sizeof(r));
	r.has_from = 1;
	r.from_ns = 1763977000123456789LL;
	r.has_to = 1;
	r.to_ns = INT64_MAX;
	obj = fr_ipc_attach_req_encode(&r);
	CHECK(obj && fr_ipc_attach_req_decode(obj, &back, err, sizeof(err)) == 0,
	      "raw_ns_exact: decoded without printing: %s", err);
	CHECK(back.from_ns == r.from_ns && back.to_ns == INT64_MAX,
	      "raw_ns_exact: from_ns %lld to_ns %lld, want %lld and %lld", (long long)back.from_ns,
	      (long long)back.to_ns, (long long)r.from_ns, (long long)INT64_MAX);
	cJSON_Delete(obj);
}

int main(void)
{
	test_attach_req();
	test_refusals();
	test_attach_reply();
	test_consume();
	test_dump();
	test_threads();
	test_raw_ns_exact();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("proto: all checks passed\n");
	return 0;
}
