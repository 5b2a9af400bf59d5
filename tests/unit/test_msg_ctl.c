/* The control messages (ipc/msg_ctl.h) with no daemon: reload and trigger
 * encode to the wire text both ends agree on, survive encode -> text ->
 * decode, and every malformed member is refused with a message naming
 * it; a reason that could forge a log line is refused on both ends. */
#include "ipc/msg_ctl.h"
#include "ipc/msg.h"
#include "ipc/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

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

/* Checks `obj`'s wire text and returns it parsed back, as the peer reads
 * it; frees `obj`. */
static cJSON *wire(cJSON *obj, const char *want, const char *what)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
	cJSON *back;

	CHECK(text && strcmp(text, want) == 0, "%s encodes as %s, want %s", what,
	      text ? text : "(null)", want);
	cJSON_Delete(obj);
	back = parse(text ? text : "{}");
	cJSON_free(text);
	return back;
}

static void refused(const char *text, const char *want, int trigger)
{
	struct fr_ipc_trigger_req *t = malloc(sizeof(*t));
	struct fr_ipc_reload_reply *r = malloc(sizeof(*r));
	cJSON *obj = parse(text);
	char err[512] = "";
	int ret = trigger ? fr_ipc_trigger_req_decode(obj, t, err, sizeof(err))
			  : fr_ipc_reload_reply_decode(obj, r, err, sizeof(err));

	CHECK(ret == -EINVAL && strstr(err, want), "%s: ret %d, \"%s\", want \"%s\"", text, ret,
	      err, want);
	cJSON_Delete(obj);
	free(t);
	free(r);
}

static void test_trigger(void)
{
	struct fr_ipc_trigger_req q = {.session = "db",
				       .reason = "p99 \"alert\" é",
				       .window_ns = 120000000000LL},
				  back;
	char err[512] = "";
	cJSON *obj;

	obj = wire(fr_ipc_trigger_req_encode(&q),
		   "{\"req\":\"trigger\",\"session\":\"db\",\"reason\":\"p99 \\\"alert\\\" é\","
		   "\"window_ns\":120000000000}",
		   "trigger");
	CHECK(fr_ipc_trigger_req_decode(obj, &back, err, sizeof(err)) == 0, "trigger: %s", err);
	CHECK(strcmp(q.session, back.session) == 0 && strcmp(q.reason, back.reason) == 0 &&
		      q.window_ns == back.window_ns,
	      "trigger differs after a round trip");
	cJSON_Delete(obj);

	/* Absent reason and window: the engine's defaults. */
	obj = parse("{\"req\":\"trigger\",\"session\":\"db\"}");
	CHECK(fr_ipc_trigger_req_decode(obj, &back, err, sizeof(err)) == 0 && !back.reason[0] &&
		      back.window_ns == 0,
	      "trigger without reason: %s", err);
	cJSON_Delete(obj);

	refused("{\"req\":\"trigger\"}", "\"session\" must name a session", 1);
	refused("{\"req\":\"trigger\",\"session\":\"\"}", "\"session\" must name a session", 1);
	refused("{\"req\":\"trigger\",\"session\":"
		"\"0123456789012345678901234567890123456789012345678901234567890123\"}",
		"\"session\" must name a session", 1);
	refused("{\"req\":\"trigger\",\"session\":\"db\",\"reason\":\"a\\nforged line\"}",
		"\"reason\" must be 1..199 bytes of text without control characters", 1);
	refused("{\"req\":\"trigger\",\"session\":\"db\",\"reason\":\"\"}", "\"reason\" must be",
		1);
	refused("{\"req\":\"trigger\",\"session\":\"db\",\"reason\":7}", "\"reason\" must be", 1);
	refused("{\"req\":\"trigger\",\"session\":\"db\",\"window_ns\":999}",
		"\"window_ns\" must be 1000000000..3600000000000", 1);
	refused("{\"req\":\"trigger\",\"session\":\"db\",\"window_ns\":1000000000.5}",
		"\"window_ns\" must be an integer", 1);
	CHECK(!fr_ipc_reason_ok("tab\there") && !fr_ipc_reason_ok("del\x7f") &&
		      fr_ipc_reason_ok("INC-1: p99 > 2s"),
	      "reason rule");
}

static void test_reload(void)
{
	struct fr_ipc_reload_reply *r = calloc(1, sizeof(*r)), *back = malloc(sizeof(*back));
	char err[512] = "";
	cJSON *obj;

	obj = wire(fr_ipc_reload_req_encode(), "{\"req\":\"reload\"}", "reload");
	cJSON_Delete(obj);

	snprintf(r->config, sizeof(r->config), "/etc/flightrec.json");
	fr_ipc_reload_change(r, "ring.sync: \"%s\" -> \"%s\"", "1s", "5s");
	obj = wire(fr_ipc_reload_reply_encode(r),
		   "{\"ok\":true,\"changed\":[\"ring.sync: \\\"1s\\\" -> \\\"5s\\\"\"],"
		   "\"config\":\"/etc/flightrec.json\"}",
		   "reload reply");
	CHECK(fr_ipc_reload_reply_decode(obj, back, err, sizeof(err)) == 0 &&
		      memcmp(r, back, sizeof(*r)) == 0,
	      "reload reply differs after a round trip: %s", err);
	cJSON_Delete(obj);

	/* Past the list's room, changes are counted, not lost silently. */
	for (int i = 0; i < FR_IPC_RELOAD_MAX_CHANGES + 4; i++)
		fr_ipc_reload_change(r, "sessions[s%d]: added", i);
	CHECK(r->nchanged == FR_IPC_RELOAD_MAX_CHANGES && r->more == 5,
	      "full list: %u listed, %u more", r->nchanged, r->more);
	obj = fr_ipc_reload_reply_encode(r);
	CHECK(obj && fr_ipc_reload_reply_decode(obj, back, err, sizeof(err)) == 0 &&
		      back->nchanged == FR_IPC_RELOAD_MAX_CHANGES && back->more == 5,
	      "a full reload reply does not round-trip its count: %s", err);
	cJSON_Delete(obj);

	refused("{\"ok\":true}", "\"config\" must be a path", 0);
	refused("{\"ok\":true,\"config\":\"/x\",\"changed\":\"a\"}", "\"changed\" must be an array",
		0);
	refused("{\"ok\":true,\"config\":\"/x\",\"changed\":[1]}", "\"changed\" must hold strings",
		0);
	refused("{\"ok\":true,\"config\":\"/x\",\"more\":-1}", "\"more\" must be 0..", 0);
	free(r);
	free(back);
}

int main(void)
{
	test_trigger();
	test_reload();
	return failures != 0;
}
