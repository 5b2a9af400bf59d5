/* The status and sessions replies and the dump sidecar (ipc/msg_status.h,
 * ipc/msg_sidecar.h) with no daemon: every member comes out under its
 * name, in the order scripts read, and only when its rule says; what is
 * encoded decodes to the same struct and encodes to the same text again;
 * a malformed member is refused naming it. And the dispatch of requests
 * to typed calls (ipc/dispatch.h): decoded before the call, the reply
 * encoded after, a refusal as {"ok":false,"error":...}. */
#include "ipc/dispatch.h"
#include "ipc/msg_sidecar.h"
#include "ipc/msg_status.h"
#include "ipc/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "tests/unit/check.h"

static cJSON *parse(const char *text)
{
	cJSON *obj = NULL;

	if (fr_ipc_parse_json(text, strlen(text), &obj) < 0) {
		fprintf(stderr, "not a JSON object: %s\n", text);
		exit(1);
	}
	return obj;
}

/* The text of `obj`, which is freed. */
static char *text_of(cJSON *obj)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

	cJSON_Delete(obj);
	if (!text) {
		fprintf(stderr, "encoding failed\n");
		exit(1);
	}
	return text;
}

/* A status reply with every member that has a rule present, and some
 * left out by theirs. */
static void fill_status(struct fr_ipc_status_reply *r)
{
	struct fr_ipc_event_status *ev;

	memset(r, 0, sizeof(*r));
	snprintf(r->version, sizeof(r->version), "0.1.0");
	r->pid = 42;
	r->started_ns = 1790000000123456789LL; /* past what a double holds */
	r->uptime_ns = 5;
	r->cpus = 2;
	r->memory.limit = 1 << 30;
	r->samples_lost_complete = 1;
	snprintf(r->labels.error, sizeof(r->labels.error), "not started");
	r->ingest.has_writer_error = 1;
	snprintf(r->ingest.writer_error, sizeof(r->ingest.writer_error), "Read-only file system");
	r->ingest.writer_error_since_ns = 7;
	r->has_symbol_cache = 1;
	r->symbol_cache.owners.n = 1;
	r->symbol_cache.owners.v[0] = (struct fr_ipc_owner){.uid = 0, .bytes = 9, .entries = 1};
	r->symbol_cache.owners.has_others = 1;
	r->symbol_cache.owners.other_owners = 2;
	r->has_export = 1;
	snprintf(r->export_.url, sizeof(r->export_.url), "http://ch:8123");
	r->rec.nevents = 2;
	r->rec.events = calloc(2, sizeof(*r->rec.events));
	ev = &r->rec.events[0];
	snprintf(ev->event, sizeof(ev->event), "offcpu");
	snprintf(ev->state, sizeof(ev->state), "recording");
	ev->has_unwind = 1;
	snprintf(ev->unwind, sizeof(ev->unwind), "dwarf");
	ev->stack_copy = 8192;
	ev->unwinding.done = 1;
	ev->unwinding.stacks = 3;
	ev->has_offcpu = 1;
	snprintf(ev->offcpu.mechanism, sizeof(ev->offcpu.mechanism), "bpf");
	ev->offcpu.has_bpf = 1;
	ev->offcpu.has_copies = 1;
	ev->offcpu.stack_copies = 4;
	ev->offcpu.has_wake = 1;
	ev->offcpu.wakes_joined = 5;
	ev->offcpu.runqueue_short = 6;
	ev = &r->rec.events[1];
	snprintf(ev->event, sizeof(ev->event), "cycles");
	snprintf(ev->state, sizeof(ev->state), "failed");
	ev->has_error = 1;
	snprintf(ev->error, sizeof(ev->error), "no PMU");
	r->rec.nconsumers = 2;
	r->rec.consumers = calloc(2, sizeof(*r->rec.consumers));
	snprintf(r->rec.consumers[0].name, sizeof(r->rec.consumers[0].name), "session always");
	r->rec.consumers[0].has_uid = 1; /* uid 0 is shown */
	r->rec.consumers[0].nevents = 1;
	snprintf(r->rec.consumers[0].events[0].event, FR_EVENT_NAME_MAX, "cpu");
	r->rec.consumers[0].events[0].hz = 99;
	snprintf(r->rec.consumers[1].name, sizeof(r->rec.consumers[1].name), "a client");
	snprintf(r->ring.superblock, sizeof(r->ring.superblock), "primary");
}

static void test_status(void)
{
	struct fr_ipc_status_reply r, back;
	char err[512] = "", *a, *b;
	cJSON *obj;

	fill_status(&r);
	a = text_of(fr_ipc_status_reply_encode(&r));
	CHECK(strncmp(a,
		      "{\"ok\":true,\"version\":\"0.1.0\",\"pid\":42,"
		      "\"started_ns\":1790000000123456789,\"uptime_ns\":5,\"reloaded_ns\":0,",
		      86) == 0,
	      "status starts %.120s", a);
	CHECK(!strstr(a, "\"config\""), "an empty config is sent: %s", a);
	CHECK(strstr(a, "\"labels\":{\"error\":\"not started\"},\"ingest\":{"),
	      "labels with an error hold it alone: %s", a);
	CHECK(strstr(a, "\"writer_error\":\"Read-only file system\",\"writer_error_since_ns\":7,"
			"\"nice\":"),
	      "the writer's error is not where it was: %s", a);
	CHECK(strstr(a, "\"owners\":[{\"uid\":0,\"bytes\":9,\"entries\":1}],\"other_owners\":"
			"{\"owners\":2,\"bytes\":0,\"entries\":0}"),
	      "owners: %s", a);
	CHECK(strstr(a, "\"unwind\":\"dwarf\",\"stack_copy\":8192,\"unwinding\":{\"ends\":"
			"{\"done\":1,\"stack_copy\":0,\"no_cfi\":0,\"pending\":0,\"bad\":0,"
			"\"max_depth\":0},\"stacks\":3,"),
	      "unwinding (its ends first): %s", a);
	CHECK(strstr(a, "\"stack_walks_dropped\":0,\"stack_copies\":4,"), "offcpu bpf: %s", a);
	CHECK(strstr(a, "\"state\":\"failed\",\"error\":\"no PMU\",\"hz\":0,"),
	      "a failed event: %s", a);
	CHECK(!strstr(a, "\"pmu\""), "a failed event has a pmu: %s", a);
	CHECK(!strstr(a, "\"unwind_tables\":{"), "absent unwind tables are sent: %s", a);
	CHECK(strstr(a, "{\"name\":\"session always\",\"uid\":0,\"since_ns\":0,\"events\":"
			"[{\"event\":\"cpu\",\"hz\":99}]},{\"name\":\"a client\",\"since_ns\":0,"),
	      "consumers: %s", a);
	CHECK(strstr(a, "\"superblock\":\"primary\",\"superblock_copy\":false}}"),
	      "the ring ends the reply: %s", a);

	obj = parse(a);
	CHECK(fr_ipc_status_reply_decode(obj, &back, err, sizeof(err)) == 0, "decode: %s", err);
	cJSON_Delete(obj);
	CHECK(back.started_ns == r.started_ns, "started_ns %lld", (long long)back.started_ns);
	CHECK(back.rec.events[0].offcpu.has_wake && back.rec.events[0].offcpu.wakes_joined == 5 &&
		      back.rec.events[0].offcpu.runqueue_short == 6,
	      "the wakeup counters did not come back");
	CHECK(back.rec.nevents == 2 && back.rec.events[0].offcpu.has_copies &&
		      back.rec.events[1].has_error && back.rec.consumers[0].has_uid &&
		      !back.rec.consumers[1].has_uid && back.has_symbol_cache &&
		      !back.has_unwind_tables && back.has_export,
	      "what is present did not come back");
	b = text_of(fr_ipc_status_reply_encode(&back));
	CHECK(strcmp(a, b) == 0, "status differs after a round trip:\n%s\n%s", a, b);
	cJSON_free(a);
	cJSON_free(b);
	fr_ipc_status_reply_fini(&r);
	fr_ipc_status_reply_fini(&back);
}

static void refused(const char *text, const char *want)
{
	struct fr_ipc_status_reply r;
	cJSON *obj = parse(text);
	char err[512] = "";
	int ret = fr_ipc_status_reply_decode(obj, &r, err, sizeof(err));

	CHECK(ret == -EINVAL && strstr(err, want), "%s: ret %d, \"%s\", want \"%s\"", text, ret,
	      err, want);
	CHECK(!r.rec.events && !r.rec.consumers, "a refused reply keeps its arrays");
	cJSON_Delete(obj);
}

static void test_refusals(void)
{
	refused("{\"pid\":\"x\"}", "\"pid\" must be an integer");
	refused("{\"samples\":-1}", "\"samples\" must be 0..");
	refused("{\"ring\":[]}", "\"ring\" must be an object");
	refused("{\"events\":[{\"event\":\"cpu\"},{\"every_switch\":1}]}",
		"\"every_switch\" must be true or false");
	refused("{\"consumers\":[1]}", "\"consumers\" must be an array of objects");
	refused("{\"symbol_cache\":{\"owners\":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
		"{}]}}",
		"\"owners\" holds more than 16");
}

static void test_sessions(void)
{
	struct fr_ipc_sessions_reply r = {0}, back;
	struct fr_ipc_session s = {.name = "db", .nevents = 1, .ntriggers = 3, .suppressed = 3};
	char err[512] = "", *a, *b;
	cJSON *obj;

	snprintf(s.events[0].event, FR_EVENT_NAME_MAX, "cpu");
	s.events[0].hz = 99;
	snprintf(s.targets, sizeof(s.targets), "all processes");
	snprintf(s.triggers[0].on, sizeof(s.triggers[0].on), "signal");
	snprintf(s.triggers[0].signal, sizeof(s.triggers[0].signal), "SIGUSR1");
	snprintf(s.triggers[1].on, sizeof(s.triggers[1].on), "cpu_above");
	s.triggers[1].has_cpu = 1;
	s.triggers[1].percent = 30;
	s.triggers[1].has_for = 1;
	snprintf(s.triggers[2].on, sizeof(s.triggers[2].on), "pressure");
	snprintf(s.triggers[2].resource, sizeof(s.triggers[2].resource), "io");
	snprintf(s.triggers[2].above, sizeof(s.triggers[2].above), "full 2.5%%");
	s.triggers[2].has_for = 1;
	s.triggers[2].for_ns = 5000000000;
	r.nsessions = 1;
	r.sessions = &s;
	r.cpu_hz = 99;
	a = text_of(fr_ipc_sessions_reply_encode(&r));
	CHECK(strcmp(a, "{\"ok\":true,\"sessions\":[{\"name\":\"db\",\"events\":[{\"event\":"
			"\"cpu\",\"hz\":99}],\"targets\":\"all processes\",\"triggers\":[{\"on\":"
			"\"signal\",\"signal\":\"SIGUSR1\",\"window_ns\":0,\"after_ns\":0,"
			"\"cooldown_ns\":0},{\"on\":\"cpu_above\",\"percent\":30,\"for_ns\":0,"
			"\"window_ns\":0,\"after_ns\":0,\"cooldown_ns\":0},{\"on\":\"pressure\","
			"\"resource\":\"io\",\"above\":\"full 2.5%\",\"for_ns\":5000000000,"
			"\"window_ns\":0,\"after_ns\":0,\"cooldown_ns\":0}],\"last_dump_ns\":null,"
			"\"suppressed\":3}],\"cpu_hz\":99,\"events\":[],\"consumers\":[],"
			"\"hz_from_command_line\":false}") == 0,
	      "sessions encodes as %s", a);
	obj = parse(a);
	CHECK(fr_ipc_sessions_reply_decode(obj, &back, err, sizeof(err)) == 0, "decode: %s", err);
	cJSON_Delete(obj);
	CHECK(back.nsessions == 1 && back.sessions[0].triggers[1].has_cpu &&
		      back.sessions[0].ntriggers == 3 && back.sessions[0].triggers[2].has_for &&
		      !back.sessions[0].triggers[2].has_cpu &&
		      strcmp(back.sessions[0].triggers[2].above, "full 2.5%") == 0 &&
		      back.sessions[0].last_dump_ns == 0,
	      "sessions did not come back");
	b = text_of(fr_ipc_sessions_reply_encode(&back));
	CHECK(strcmp(a, b) == 0, "sessions differs after a round trip:\n%s\n%s", a, b);
	cJSON_free(a);
	cJSON_free(b);
	fr_ipc_sessions_reply_fini(&back);
}

static void test_sidecar(void)
{
	struct fr_ipc_sidecar s = {.session = "db",
				   .trigger = "manual",
				   .fired_ns = 1,
				   .profile = "db.pb.gz",
				   .nevents = 1,
				   .version = "0.1.0"};
	struct fr_ipc_sidecar back;
	char err[512] = "", *a, *b;
	cJSON *obj;

	snprintf(s.events[0].event, FR_EVENT_NAME_MAX, "cpu");
	a = fr_ipc_sidecar_text(&s);
	CHECK(a && strstr(a, "\"after_ns\":\t0,\n\t\"profile\":\t\"db.pb.gz\""),
	      "a sidecar without a pid: %s", a ? a : "(null)");
	s.pid = 77;
	free(a);
	a = fr_ipc_sidecar_text(&s);
	CHECK(a && strstr(a, "\"pid\":\t77,"), "a sidecar with a pid: %s", a ? a : "(null)");
	obj = a ? cJSON_Parse(a) : NULL;
	CHECK(obj && fr_ipc_sidecar_decode(obj, &back, err, sizeof(err)) == 0, "decode: %s", err);
	b = fr_ipc_sidecar_text(&back);
	CHECK(a && b && strcmp(a, b) == 0, "the sidecar differs after a round trip");
	cJSON_Delete(obj);
	free(a);
	free(b);

	/* A pressure trigger's: its object, with the cgroup when given. */
	s.pid = 0;
	s.has_pressure = 1;
	snprintf(s.pressure.resource, sizeof(s.pressure.resource), "memory");
	snprintf(s.pressure.kind, sizeof(s.pressure.kind), "full");
	s.pressure.share = 12.5;
	s.pressure.above = 2.5;
	a = fr_ipc_sidecar_text(&s);
	CHECK(a &&
		      strstr(a, "\"pressure\":\t{\n\t\t\"resource\":\t\"memory\",\n\t\t\"kind\":\t"
				"\"full\",\n\t\t\"share\":\t12.5,\n\t\t\"above\":\t2.5\n\t}") &&
		      !strstr(a, "\"cgroup\""),
	      "a pressure sidecar: %s", a ? a : "(null)");
	free(a);
	snprintf(s.pressure.cgroup, sizeof(s.pressure.cgroup), "/db");
	a = fr_ipc_sidecar_text(&s);
	obj = a ? cJSON_Parse(a) : NULL;
	memset(&back, 0, sizeof(back));
	CHECK(obj && fr_ipc_sidecar_decode(obj, &back, err, sizeof(err)) == 0 &&
		      back.has_pressure && strcmp(back.pressure.cgroup, "/db") == 0 &&
		      back.pressure.share == 12.5 && strcmp(back.pressure.kind, "full") == 0,
	      "a pressure sidecar's decode: %s", err);
	b = fr_ipc_sidecar_text(&back);
	CHECK(a && b && strcmp(a, b) == 0, "the pressure sidecar differs after a round trip");
	cJSON_Delete(obj);
	free(a);
	free(b);
	/* Not as written: refused, naming it. */
	obj = cJSON_Parse("{\"session\":\"db\",\"pressure\":{\"resource\":\"cpu\"}}");
	CHECK(obj && fr_ipc_sidecar_decode(obj, &back, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "\"pressure\""),
	      "a pressure object without its members taken: %s", err);
	cJSON_Delete(obj);
}

/* A reply a recorder sent (the fuzz corpus' seed, captured from
 * `flightrec status --json` and `sessions --json`) encodes again, once
 * decoded, to exactly its own text: what --json prints. */
static void test_real_reply(const char *name, int sessions)
{
	const char *src = getenv("FR_SOURCE_DIR");
	char path[4096], text[65536], err[512] = "", *again;
	struct fr_ipc_status_reply *st = calloc(1, sizeof(*st));
	struct fr_ipc_sessions_reply *se = calloc(1, sizeof(*se));
	size_t n;
	FILE *f;
	cJSON *obj;

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/status/%s", src ? src : ".", name);
	f = fopen(path, "r");
	CHECK(f, "cannot read %s", path);
	if (!f || !st || !se)
		goto out;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	while (n && text[n - 1] == '\n')
		n--;
	text[n] = '\0';
	obj = parse(text);
	if (sessions) {
		CHECK(fr_ipc_sessions_reply_decode(obj, se, err, sizeof(err)) == 0, "%s: %s", name,
		      err);
		again = text_of(fr_ipc_sessions_reply_encode(se));
	} else {
		CHECK(fr_ipc_status_reply_decode(obj, st, err, sizeof(err)) == 0, "%s: %s", name,
		      err);
		again = text_of(fr_ipc_status_reply_encode(st));
	}
	CHECK(strcmp(again, text) == 0, "%s comes out different:\n%s\n%s", name, text, again);
	cJSON_Delete(obj);
	cJSON_free(again);
	fr_ipc_status_reply_fini(st);
	fr_ipc_sessions_reply_fini(se);
out:
	free(st);
	free(se);
}

/* ---- dispatch ---------------------------------------------------------- */

static int status_calls;

static int fake_status(void *arg, struct fr_ipc_call *call, struct fr_ipc_status_reply *r)
{
	status_calls++;
	CHECK(call->fd == -1, "status was handed descriptor %d", call->fd);
	if (*(int *)arg)
		return fr_ipc_refuse(call, "status: refused for the test");
	snprintf(r->version, sizeof(r->version), "test");
	return 0;
}

static int fake_dump(void *arg, struct fr_ipc_call *call, const struct fr_ipc_dump_req *q,
		     struct fr_ipc_dump_reply *r)
{
	snprintf(r->path, sizeof(r->path), "/dumps/%s", q->session);
	return 0;
}

static const struct fr_ipc_handlers fakes = {.status = fake_status, .dump = fake_dump};

/* The reply's text to `req` with `fd` passed. */
static char *ask(int *refuse, const char *req, int fd)
{
	struct fr_ipc_dispatch x = {.h = &fakes, .arg = refuse};
	struct fr_ipc_peer peer = {.sock = -1};
	cJSON *obj = parse(req);
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(obj, "req");
	char *text = text_of(fr_ipc_dispatch(&x, cmd->valuestring, obj, fd, &peer));

	cJSON_Delete(obj);
	return text;
}

static void test_dispatch(void)
{
	int refuse = 0, pipefd[2];
	char *t, c;

	t = ask(&refuse, "{\"req\":\"status\"}", -1);
	CHECK(strncmp(t, "{\"ok\":true,\"version\":\"test\",", 28) == 0, "status: %s", t);
	cJSON_free(t);
	refuse = 1;
	t = ask(&refuse, "{\"req\":\"status\"}", -1);
	CHECK(strcmp(t, "{\"ok\":false,\"error\":\"status: refused for the test\"}") == 0,
	      "a refusal: %s", t);
	cJSON_free(t);
	/* A descriptor with a request that takes none is closed before the
	 * call: the pipe's read end sees its end. */
	CHECK(pipe2(pipefd, O_CLOEXEC) == 0, "pipe");
	t = ask(&refuse, "{\"req\":\"status\"}", pipefd[1]);
	CHECK(read(pipefd[0], &c, 1) == 0, "the passed descriptor was kept");
	close(pipefd[0]);
	cJSON_free(t);
	CHECK(status_calls == 3, "status called %d times", status_calls);
	t = ask(&refuse, "{\"req\":\"dump\",\"session\":\"db\"}", -1);
	CHECK(strcmp(t, "{\"ok\":true,\"path\":\"/dumps/db\",\"t0_ns\":0,\"t1_ns\":0}") == 0,
	      "dump: %s", t);
	cJSON_free(t);
	t = ask(&refuse, "{\"req\":\"dump\",\"session\":7}", -1);
	CHECK(strstr(t, "\"ok\":false") && strstr(t, "\\\"session\\\""),
	      "a malformed dump is not refused naming the member: %s", t);
	cJSON_free(t);
	t = ask(&refuse, "{\"req\":\"attach\"}", -1);
	CHECK(strstr(t, "unknown request \\\"attach\\\""), "no attach function: %s", t);
	cJSON_free(t);
}

int main(void)
{
	test_status();
	test_refusals();
	test_sessions();
	test_sidecar();
	test_real_reply("seed-status", 0);
	test_real_reply("seed-sessions", 1);
	test_dispatch();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
