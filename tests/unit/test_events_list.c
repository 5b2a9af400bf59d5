/* The black box's events (core/query/events.c, events_write.c) over a
 * real ring of chunks built by the chunk builder: the fields read back
 * from the samples' application labels as core/store/sample.h stores them
 * (exec, exit by a code and by a signal, crash with its stack, oom, the
 * machine's pressure, throttling), a crash's stack named innermost first
 * (kernel frames from the fixture's kallsyms, user frames from this
 * binary), time order across chunks, the filters (types, pids, comm,
 * cgroup, a uid's view, the machine's series with targets), the --type
 * parser, and the text and JSON lines written of them. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/events.h"
#include "core/query/timeline.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

#define MS ((int64_t)1000000)
#define TID_CRASH TID(PID_APP, 1)

/* The application labels of a sample, by its pid and time. */
struct labelled {
	uint32_t pid;
	int64_t time;
	const char *kv[16]; /* key, value, ..., NULL */
};

static const struct labelled labelled[] = {
	{PID_APP, T0 + 1 * SEC, {"path", "/usr/bin/frtest-app", "ppid", "1", "tenant", "acme"}},
	{PID_APP,
	 T0 + 2 * SEC,
	 {"signal", "SIGSEGV", "code", "SEGV_MAPERR", "addr", "0x10", "tenant", "acme"}},
	{PID_APP,
	 T0 + 2100 * MS,
	 {"signal", "SIGSEGV", "core", "1", "sender_pid", "77", "sender_uid", "0", "sender_comm",
	  "kill", "cpu_ns", "1200000000", "tenant", "acme"}},
	{PID_WEB, T0 + 3 * SEC, {"exit_code", "3", "cpu_ns", "400000000", "note", "a\"b\nc\x1b[2J"}},
};

static int app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
		      struct fr_app_label *out)
{
	(void)arg;
	(void)tid;
	(void)ref;
	for (size_t i = 0; i < sizeof(labelled) / sizeof(labelled[0]); i++) {
		int n = 0;

		if (labelled[i].pid != pid || labelled[i].time != time_ns)
			continue;
		for (; labelled[i].kv[2 * n]; n++)
			out[n] = (struct fr_app_label){labelled[i].kv[2 * n],
						       labelled[i].kv[2 * n + 1]};
		return n;
	}
	return 0;
}

static void add(struct fr_chunk_builder *b, int64_t t, uint32_t pid, uint32_t tid, uint32_t event,
		uint64_t weight, int st)
{
	struct fr_sample s = {
		.time_ns = t,
		.pid = pid,
		.tid = tid,
		.event = event,
		.weight = weight,
		.nr_kernel = st < 0 ? 0 : stacks[st].nr_kernel,
		.nr_frames = st < 0 ? 0 : stacks[st].nr_frames,
		.ips = st < 0 ? NULL : stacks[st].ips,
	};

	CHECK(fr_chunk_builder_add(b, &s) == 0, "add");
}

static void seal(struct fr_chunk_builder *b, struct fr_ring *r)
{
	struct fr_chunk_meta_ops ops = meta_ops;
	void *buf = NULL;
	size_t len = 0;
	int ret;

	ops.app_labels = app_labels;
	ret = fr_chunk_builder_seal(b, &ops, 0, &buf, &len);
	CHECK(ret == 0, "seal: %d", ret);
	if (ret == 0)
		CHECK(fr_ring_append(r, buf, len) == 0, "append");
	free(buf);
}

/* Two chunks; the second holds earlier events than the first's last, as
 * a merge may leave them. */
static void write_ring(struct fr_ring *r)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(1024, 1 << 20);

	if (!b)
		return;
	add(b, T0 + 1 * SEC, PID_APP, PID_APP, FR_EVENT_EXEC, 1, -1);
	add(b, T0 + 1500 * MS, PID_APP, PID_APP, FR_EVENT_CPU, 10000000, ST_USER);
	add(b, T0 + 2 * SEC, PID_APP, TID_CRASH, FR_EVENT_CRASH, 1, ST_KERNEL);
	add(b, T0 + 2100 * MS, PID_APP, PID_APP, FR_EVENT_EXIT, 3500 * MS, -1);
	add(b, T0 + 4 * SEC, PID_DB, PID_DB, FR_EVENT_OOM, 64ull << 20, -1);
	add(b, T0 + 4500 * MS, PID_APP, PID_APP, FR_EVENT_THROTTLED, 5 * MS, -1);
	seal(b, r);
	add(b, T0 + 3 * SEC, PID_WEB, PID_WEB, FR_EVENT_EXIT, 1200 * MS, -1);
	for (int k = 1; k <= 5; k++)
		add(b, T0 + k * SEC + 100 * MS, 0, 0, FR_EVENT_MEM_PRESSURE, (uint64_t)k * MS, -1);
	seal(b, r);
	fr_chunk_builder_free(b);
}

static struct fr_events *collect(struct fr_ring *r, struct fr_events_request *req)
{
	struct fr_events *e = NULL;
	char err[256];
	int ret;

	req->t0 = req->t0 ? req->t0 : T0;
	req->t1 = req->t1 ? req->t1 : T0 + 10 * SEC;
	req->kallsyms = kallsyms_path;
	ret = fr_events_collect(r, req, &e, err, sizeof(err));
	CHECK(ret == 0, "collect: %d %s", ret, err);
	return e;
}

/* What fr_events_write() writes of `e`, malloc'd. */
static char *written(const struct fr_events *e, int flags)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f && fr_events_write(f, e, flags) == 0, "write");
	if (f)
		fclose(f);
	return text;
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

#define HAS(text, what) \
	CHECK(text &&strstr(text, what), "missing: %s\nin:\n%s", what, text ? text : "")

static void test_all(struct fr_ring *r)
{
	struct fr_events_request req = {.symbolize = 1};
	struct fr_events *e = collect(r, &req);
	const struct fr_events_item *crash = NULL;
	/* At one time, by pid: the machine's (0) first. */
	static const uint32_t order[] = {FR_EVENT_EXEC,		FR_EVENT_MEM_PRESSURE,
					 FR_EVENT_CRASH,	FR_EVENT_MEM_PRESSURE,
					 FR_EVENT_EXIT,		FR_EVENT_EXIT,
					 FR_EVENT_MEM_PRESSURE, FR_EVENT_OOM,
					 FR_EVENT_MEM_PRESSURE, FR_EVENT_THROTTLED,
					 FR_EVENT_MEM_PRESSURE};
	char *text;

	if (!e)
		return;
	/* The cpu sample is no event; the rest in time order. */
	CHECK(e->n == 11 && e->chunks == 2, "events %zu chunks %" PRIu64, e->n, e->chunks);
	for (size_t i = 0; i < e->n && i < 11; i++) {
		CHECK(e->items[i].event == order[i], "event %zu: %u", i, e->items[i].event);
		if (e->items[i].event == FR_EVENT_CRASH)
			crash = &e->items[i];
	}
	if (crash) {
		CHECK(crash->tid == TID_CRASH && strcmp(crash->comm, "frtest-app") == 0 &&
			      crash->cgroup && strcmp(crash->cgroup, CG_NGINX) == 0,
		      "crash's process");
		/* Innermost first: the kernel's, then this binary's. */
		CHECK(crash->nframes >= 6, "frames %u", crash->nframes);
		for (uint32_t k = 0; k < crash->nframes && k < 6; k++) {
			const struct fr_events_frame *f = &crash->frames[k];

			CHECK(f->function && strcmp(f->function, stacks[ST_KERNEL].names[k]) == 0,
			      "frame %u: %s, want %s", k, f->function ? f->function : "(null)",
			      stacks[ST_KERNEL].names[k]);
			CHECK(f->kernel == (k < 3) && f->addr == stacks[ST_KERNEL].ips[k],
			      "frame %u kernel %d", k, f->kernel);
		}
	}

	text = written(e, FR_EVENTS_JSON);
	/* One object per line, the contract's keys in order. */
	CHECK(count(text, "\n") == 11 && count(text, "{\"time\":\"") == 11, "lines:\n%s", text);
	HAS(text, "{\"time\":\"2023-11-14T22:13:22.000Z\",\"time_ns\":1700000002000000000,"
		  "\"type\":\"crash\",\"pid\":4200001,\"tid\":4210001,\"comm\":\"frtest-app\","
		  "\"cgroup\":\"/system.slice/nginx.service\",\"signal\":\"SIGSEGV\","
		  "\"code\":\"SEGV_MAPERR\",\"addr\":\"0x10\",\"stack\":[{\"function\":"
		  "\"frk_schedule\",\"file\":null,\"line\":null,\"kernel\":true},");
	HAS(text, "{\"function\":\"frtest_leaf\",\"file\":");
	HAS(text, "},{\"function\":\"frtest_middle\",\"file\":");
	HAS(text, "],\"labels\":{\"tenant\":\"acme\"}}\n");
	HAS(text,
	    "\"type\":\"exit\",\"pid\":4200001,\"tid\":4200001,\"comm\":\"frtest-app\","
	    "\"cgroup\":\"/system.slice/nginx.service\",\"signal\":\"SIGSEGV\",\"core\":true,"
	    "\"sender\":{\"kind\":\"process\",\"pid\":77,\"uid\":0,\"comm\":\"kill\"},"
	    "\"cpu_ns\":1200000000,\"lifetime_ns\":3500000000,\"labels\":{\"tenant\":\"acme\"}}");
	HAS(text, "\"type\":\"exit\",\"pid\":4200003,\"tid\":4200003,\"comm\":\"frtest-web\","
		  "\"exit_code\":3,\"cpu_ns\":400000000,\"lifetime_ns\":1200000000,"
		  "\"labels\":{\"note\":\"a\\\"b\\u000ac\\u001b[2J\"}}\n");
	HAS(text, "\"type\":\"exec\",\"pid\":4200001,\"tid\":4200001,\"comm\":\"frtest-app\","
		  "\"cgroup\":\"/system.slice/nginx.service\",\"path\":\"/usr/bin/frtest-app\","
		  "\"ppid\":1,\"labels\":{\"tenant\":\"acme\"}}\n");
	HAS(text, "\"type\":\"oom_kill\",\"pid\":4200002,\"tid\":4200002,\"comm\":\"frtest-db\","
		  "\"cgroup\":\"/system.slice/db.service\",\"rss\":67108864}\n");
	HAS(text, "\"type\":\"memory-pressure\",\"pid\":0,\"tid\":0,\"stall_ns\":3000000}\n");
	HAS(text, "\"type\":\"throttled\",\"pid\":4200001,\"tid\":4200001,\"comm\":\"frtest-app\","
		  "\"cgroup\":\"/system.slice/nginx.service\",\"stall_ns\":5000000}\n");
	free(text);

	text = written(e, 0);
	HAS(text, "2023-11-14T22:13:21.000Z exec            pid 4200001 (frtest-app) "
		  "/usr/bin/frtest-app ppid 1 cgroup /system.slice/nginx.service labels "
		  "tenant=acme\n");
	HAS(text, "2023-11-14T22:13:22.000Z crash           pid 4200001 (frtest-app) tid 4210001 "
		  "SIGSEGV SEGV_MAPERR at 0x10 cgroup /system.slice/nginx.service labels "
		  "tenant=acme\n    frk_schedule [kernel]\n    frk_do_sys_read [kernel]\n");
	HAS(text, "\n    frtest_leaf");
	HAS(text, "\n    frtest_root");
	HAS(text,
	    "2023-11-14T22:13:22.100Z exit            pid 4200001 (frtest-app) killed by "
	    "SIGSEGV from pid 77 (kill) uid 0 (core dumped) after 3.5s, cpu 1.2s cgroup /system.slice/nginx.service");
	HAS(text, "2023-11-14T22:13:23.000Z exit            pid 4200003 (frtest-web) exit_code 3 "
		  "after 1.2s, cpu 400ms labels note=a\"b?c?[2J\n");
	HAS(text, "2023-11-14T22:13:24.000Z oom_kill        pid 4200002 (frtest-db) rss 64.0MiB "
		  "cgroup /system.slice/db.service\n");
	/* The pressure summed up in one line, at its first second. */
	CHECK(count(text, "memory-pressure") == 2, "one summary line:\n%s", text);
	HAS(text, "2023-11-14T22:13:21.100Z memory-pressure [machine] 5 s to 22:13:25.100Z: "
		  "stalled 15ms in all (0.3%), most 5ms in the second to 22:13:25.100Z");
	HAS(text, "throttled       cgroup /system.slice/nginx.service 1 s to");
	free(text);

	text = written(e, FR_EVENTS_SERIES);
	CHECK(count(text, " memory-pressure [machine] stalled ") == 5, "every second:\n%s", text);
	HAS(text, "2023-11-14T22:13:23.100Z memory-pressure [machine] stalled 3ms in the second "
		  "(0.3%)\n");
	free(text);
	fr_events_free(e);
}

static size_t n_of(struct fr_ring *r, struct fr_events_request *req, uint32_t event)
{
	struct fr_events *e = collect(r, req);
	size_t n = 0;

	for (size_t i = 0; e && i < e->n; i++)
		n += event == UINT32_MAX || e->items[i].event == event;
	fr_events_free(e);
	return n;
}

static void test_filters(struct fr_ring *r)
{
	struct fr_events_request req = {0};
	char err[256];
	uint64_t types;

	CHECK(fr_events_parse_types("crash,oom", &types, err, sizeof(err)) == 0 &&
		      types == (1ull << FR_EVENT_CRASH | 1ull << FR_EVENT_OOM),
	      "crash,oom");
	CHECK(fr_events_parse_types("oom_kill,pressure", &types, err, sizeof(err)) == 0 &&
		      types == (1ull << FR_EVENT_OOM | 1ull << FR_EVENT_MEM_PRESSURE |
				1ull << FR_EVENT_CPU_PRESSURE | 1ull << FR_EVENT_IO_PRESSURE),
	      "oom_kill,pressure");
	CHECK(fr_events_parse_types("crash,bogus", &types, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "unknown event type \"bogus\" (types: crash, oom_kill"),
	      "bogus: %s", err);
	CHECK(fr_events_parse_types("cpu", &types, err, sizeof(err)) == -EINVAL,
	      "cpu is no black-box event");
	CHECK(fr_events_parse_types("", &types, err, sizeof(err)) == -EINVAL, "empty");
	CHECK(fr_events_parse_types("crash,", &types, err, sizeof(err)) == -EINVAL, "crash,");

	req.types = 1ull << FR_EVENT_EXIT;
	req.types_named = 1;
	CHECK(n_of(r, &req, UINT32_MAX) == 2, "two exits");
	/* Targets: the machine's series only when named. */
	memset(&req, 0, sizeof(req));
	req.targets.pids[req.targets.npids++] = PID_WEB;
	CHECK(n_of(r, &req, UINT32_MAX) == 1, "web's exit alone");
	req.types = 1ull << FR_EVENT_EXIT | 1ull << FR_EVENT_MEM_PRESSURE;
	req.types_named = 1;
	CHECK(n_of(r, &req, FR_EVENT_MEM_PRESSURE) == 5 && n_of(r, &req, FR_EVENT_EXIT) == 1,
	      "named pressure with a pid");
	memset(&req, 0, sizeof(req));
	snprintf(req.targets.comms[req.targets.ncomms++], FR_LIMIT_COMM_LEN, "frtest-db");
	CHECK(n_of(r, &req, UINT32_MAX) == 1, "comm frtest-db: its kill");
	memset(&req, 0, sizeof(req));
	snprintf(req.targets.cgroup, sizeof(req.targets.cgroup), "/system.slice/");
	CHECK(n_of(r, &req, UINT32_MAX) == 5, "cgroup /system.slice: app's 4, db's kill");
	snprintf(req.targets.cgroup, sizeof(req.targets.cgroup), "/system.slice/db");
	CHECK(n_of(r, &req, UINT32_MAX) == 0, "/system.slice/db is not db.service");
	/* A uid's view: db runs as root, the others as 1000; the machine's
	 * pressure is everyone's; kernel frames keep no address. */
	memset(&req, 0, sizeof(req));
	req.targets.has_uid = 1;
	req.targets.uid = 0;
	CHECK(n_of(r, &req, FR_EVENT_OOM) == 1 && n_of(r, &req, UINT32_MAX) == 6, "uid 0");
	req.targets.uid = 1000;
	req.symbolize = 1;
	{
		struct fr_events *e = collect(r, &req);

		CHECK(e && e->n == 10, "uid 1000: %zu", e ? e->n : 0);
		for (size_t i = 0; e && i < e->n; i++) {
			CHECK(e->items[i].pid != PID_DB, "db shown to uid 1000");
			for (uint32_t k = 0; k < e->items[i].nframes; k++)
				CHECK(!e->items[i].frames[k].kernel || !e->items[i].frames[k].addr,
				      "a kernel address shown to a user");
		}
		fr_events_free(e);
	}
	/* The window: [t0, t1). */
	memset(&req, 0, sizeof(req));
	req.t0 = T0 + 2 * SEC;
	req.t1 = T0 + 3 * SEC;
	CHECK(n_of(r, &req, UINT32_MAX) == 3, "crash, app's exit, one second of pressure");
}

/* The timeline of any event marks the crash, the kill and the death by
 * a signal at their times; an exit with a code is no mark. */
static void test_timeline_marks(struct fr_ring *r)
{
	struct fr_timeline_request req = {.t0 = T0, .t1 = T0 + 10 * SEC, .step_ns = SEC};
	struct fr_timeline *t = NULL;
	char err[256], *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret = fr_timeline_compute(r, &req, &t, err, sizeof(err));

	CHECK(ret == 0, "timeline: %s", err);
	if (ret)
		return;
	CHECK(t->nmarks == 3 && t->marks_more == 0, "marks: %u", t->nmarks);
	f = open_memstream(&text, &len);
	if (f) {
		CHECK(fr_timeline_write_json(f, t) == 0, "write_json");
		fclose(f);
		HAS(text, ",\"marks\":[{\"time_ns\":1700000002000000000,\"type\":\"crash\","
			  "\"pid\":4200001,\"comm\":\"frtest-app\",\"signal\":\"SIGSEGV\"},"
			  "{\"time_ns\":1700000002100000000,\"type\":\"exit\",\"pid\":4200001,"
			  "\"comm\":\"frtest-app\",\"signal\":\"SIGSEGV\",\"sender\":{\"kind\":"
			  "\"process\",\"pid\":77,\"comm\":\"kill\"}},"
			  "{\"time_ns\":1700000004000000000,\"type\":\"oom_kill\",\"pid\":4200002,"
			  "\"comm\":\"frtest-db\"}],\"marks_more\":0}\n");
		free(text);
	}
	fr_timeline_free(t);
	/* A user's timeline marks only their processes': not db's kill. */
	req.has_uid = 1;
	req.uid = 1000;
	ret = fr_timeline_compute(r, &req, &t, err, sizeof(err));
	CHECK(ret == 0 && t->nmarks == 2, "uid 1000's marks: %u", ret ? 0 : t->nmarks);
	if (ret == 0)
		fr_timeline_free(t);
}

/* A profile of the window says in its comments how its processes ended:
 * the crash and the kill, not the exits; a profile of web alone none. */
static void test_profile_comments(struct fr_ring *r)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;

	req_init(&q, T0, T0 + 10 * SEC, 0);
	if (run(r, &q, &res, &o, "box") == 0 && raw_read(&raw, &o, "box") == 0) {
		HAS(raw.text,
		    "Comment: event: 2023-11-14T22:13:22.000Z crash           pid 4200001 "
		    "(frtest-app) tid 4210001 SIGSEGV SEGV_MAPERR at 0x10 cgroup "
		    "/system.slice/nginx.service labels tenant=acme\n");
		HAS(raw.text,
		    "Comment: event: 2023-11-14T22:13:24.000Z oom_kill        pid 4200002 "
		    "(frtest-db) rss 64.0MiB cgroup /system.slice/db.service\n");
		CHECK(count(raw.text, "Comment: event: ") == 2, "two events:\n%s", raw.text);
		CHECK(!strstr(raw.text, "frk_schedule [kernel]"), "a stack in the comments");
		raw_done(&raw, 0);
	}
	out_free(&o);
	req_init(&q, T0, T0 + 10 * SEC, 0);
	q.targets.pids[q.targets.npids++] = PID_WEB;
	if (run(r, &q, &res, &o, "box-web") == 0 && raw_read(&raw, &o, "box-web") == 0) {
		CHECK(!strstr(raw.text, "Comment: event: "), "web's profile lists others' events");
		raw_done(&raw, 0);
	}
	out_free(&o);
}

/* Occurrences and seconds of series are bounded apart: with a bound of
 * 2, two of each are listed, whatever came first, and the rest counted. */
static void test_bound_kinds(struct fr_ring *r)
{
	struct fr_events e = {.t0 = T0, .t1 = T0 + 10 * SEC, .max = 2};
	struct fr_events_request req = {0};
	struct fr_ring_ref *refs = NULL;
	size_t nrefs = 0, series = 0;

	CHECK(fr_ring_query(r, e.t0, e.t1, &refs, &nrefs) == 0 && nrefs == 2, "chunks");
	for (size_t k = 0; k < nrefs; k++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		if (fr_ring_read(r, &refs[k], &buf) == 0 &&
		    fr_chunk_decode(buf, refs[k].len, &c) == 0)
			CHECK(fr_events_add_chunk(&e, &req, c, NULL) == 0, "add_chunk");
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
	for (size_t i = 0; i < e.n; i++)
		series += e.items[i].event == FR_EVENT_MEM_PRESSURE ||
			  e.items[i].event == FR_EVENT_THROTTLED;
	CHECK(e.n == 4 && series == 2 && e.more == 7, "listed %zu (%zu series), more %" PRIu64, e.n,
	      series, e.more);
	/* The list's own items, freed as a collected list's are. */
	{
		struct fr_events *heap = malloc(sizeof(*heap));

		if (heap) {
			*heap = e;
			fr_events_free(heap);
		}
	}
}

/* A profile's comments tell 20 kills and count the rest. */
static void test_profile_bound(void)
{
	struct fr_ring *r = test_ring_create("events-many");
	struct fr_chunk_builder *b = fr_chunk_builder_new(1024, 1 << 20);
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;

	if (!r || !b) {
		fr_chunk_builder_free(b);
		test_ring_done(r);
		return;
	}
	for (int k = 0; k < 25; k++)
		add(b, T0 + k * 100 * MS, PID_DB, PID_DB, FR_EVENT_OOM, 1ull << 20, -1);
	add(b, T0 + 50 * MS, PID_APP, PID_APP, FR_EVENT_CPU, 10000000, ST_USER);
	seal(b, r);
	fr_chunk_builder_free(b);
	req_init(&q, T0, T0 + 10 * SEC, 0);
	if (run(r, &q, &res, &o, "many") == 0 && raw_read(&raw, &o, "many") == 0) {
		CHECK(count(raw.text, "Comment: event: 2023") == 20, "20 kills told:\n%s",
		      raw.text);
		HAS(raw.text,
		    "Comment: event: and 5 more crashes and OOM kills (flightrec events)\n");
		raw_done(&raw, 0);
	}
	out_free(&o);
	test_ring_done(r);
}

int main(void)
{
	struct fr_ring *r;

	if (fixture_init("events") < 0)
		return 1;
	r = test_ring_create("events");
	if (r) {
		write_ring(r);
		test_all(r);
		test_filters(r);
		test_timeline_marks(r);
		test_profile_comments(r);
		test_bound_kinds(r);
	}
	test_ring_done(r);
	test_profile_bound();
	return fixture_fini();
}
