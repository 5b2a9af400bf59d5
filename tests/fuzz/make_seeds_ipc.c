/* Seeds of the ipc target: streams of framed messages, every message of
 * ipc/msg.h as its encoder writes it, and broken frames. */
#include "tests/fuzz/make_seeds.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "core/store/sample.h"
#include "ipc/msg.h"
#include "ipc/msg_ctl.h"
#include "ipc/msg_timeline.h"
#include "ipc/proto.h"

#include "tests/fuzz/fuzz.h"

struct stream {
	unsigned char b[8192];
	size_t n;
};

static void frame_raw(struct stream *s, uint32_t len, const void *body, size_t body_len)
{
	fr_put_le32(s->b + s->n, len);
	s->n += 4;
	memcpy(s->b + s->n, body, body_len);
	s->n += body_len;
}

static void frame(struct stream *s, const char *json)
{
	frame_raw(s, (uint32_t)strlen(json), json, strlen(json));
}

/* Frames `obj` (freed) as its encoder wrote it, with "v" as a client adds
 * it to requests. */
static void frame_msg(struct stream *s, cJSON *obj, int request)
{
	char *text;

	if (!obj)
		die("out of memory", ENOMEM);
	if (request)
		cJSON_AddNumberToObject(obj, "v", FR_IPC_VERSION);
	text = cJSON_PrintUnformatted(obj);
	if (!text)
		die("out of memory", ENOMEM);
	frame(s, text);
	cJSON_free(text);
	cJSON_Delete(obj);
}

/* Every message of ipc/msg.h as its encoder writes it, so the seeds follow
 * the protocol: an attach with every member and its reply, a consume and
 * its reply, a dump and its reply, a threads request and its reply. */
static void make_message_seeds(void)
{
	static struct fr_ipc_attach_req ar;
	static struct fr_ipc_attach_reply ap;
	struct fr_ipc_consume_req cr = {.hz = 999, .nevents = 2};
	struct fr_ipc_consume_reply cp = {.start_ns = 1700000000000000000LL, .nevents = 1};
	struct fr_ipc_dump_req dr = {.session = "db", .window_ns = 120000000000LL};
	struct fr_ipc_dump_reply dp = {.t0_ns = 1700000000000000000LL,
				       .t1_ns = 1700000060000000000LL};
	static struct fr_ipc_threads_req tr;
	static struct fr_ipc_reload_reply lp;
	struct fr_ipc_trigger_req gr = {.session = "db",
					.reason = "p99 alert",
					.window_ns = 120000000000LL};
	struct fr_ipc_threads_reply tp = {.processes = 1, .threads = 10001, .bytes = 90210};
	static struct fr_ipc_timeline_req lr;
	static struct fr_ipc_timeline_reply tlp;
	struct stream s;

	ar.window_ns = 60000000000LL;
	ar.hz = 99;
	ar.nevents = 2;
	ar.events[0] = FR_EVENT_CPU;
	ar.events[1] = (uint32_t)fr_event_lookup("offcpu");
	ar.targets.npids = 1;
	ar.targets.pids[0] = 1234;
	ar.targets.children = 1;
	ar.targets.ncomms = 1;
	snprintf(ar.targets.comms[0], sizeof(ar.targets.comms[0]), "postgres");
	snprintf(ar.targets.cgroup, sizeof(ar.targets.cgroup), "/system.slice/x.service");
	fr_targets_add_label(&ar.targets, "tenant=42");
	fr_targets_set_label_key(&ar.targets, "endpoint");
	ar.format = FR_PROFILE_FOLDED;
	ar.event_hz[1] = 19;
	snprintf(ar.since_last, sizeof(ar.since_last), "hourly.db-1");
	ar.by_cpu = 1;
	ap.samples = ap.samples_in_window = 5940;
	ap.stacks = 212;
	ap.bytes = 48211;
	ap.hz = 99;
	ap.t0_ns = 1700000000000000000LL;
	ap.t1_ns = 1700000060000000000LL;
	ap.covered_t0_ns = ap.t0_ns;
	ap.nevents = 1;
	ap.events[0] = (struct fr_ipc_event_counts){FR_EVENT_CPU, 99, 5940, 5940, 0, 5940, 1, 2};
	snprintf(ap.incomplete, sizeof(ap.incomplete),
		 "incomplete: the recorder did not "
		 "store its last samples within 3 s");
	fr_ipc_warn(ap.warnings, &ap.nwarnings, "pid 5678 exited before the window");
	ap.first_ns = ap.t0_ns + 40000000000LL;
	ap.last_ns = ap.t1_ns - 200000000LL;
	ap.ring_oldest_ns = ap.first_ns;
	ap.ring_newest_ns = ap.last_ns;
	ap.stall_t0_ns = ap.t0_ns + 45000000000LL;
	ap.stall_t1_ns = ap.t0_ns + 52000000000LL;
	ap.empty_filters = FR_IPC_FILTER_COMM | FR_IPC_FILTER_LABEL;
	ap.procs_in_window = 12;
	ap.npids_not_running = 2;
	ap.pids_not_running[0] = 99999;
	ap.pids_not_running[1] = 1;
	cr.events[0] = FR_EVENT_CPU;
	cr.events[1] = (uint32_t)fr_event_lookup("cycles");
	cr.event_hz[1] = 19;
	fr_ipc_warn(cp.warnings, &cp.nwarnings, "999 Hz is above the limit for users");
	cp.events[0] = (struct fr_ipc_consume_event){FR_EVENT_CPU, 999, 999};
	snprintf(dp.path, sizeof(dp.path), "/var/lib/flightrec/dumps/db-manual-h-t.pb.gz");
	lr.window_ns = 3600000000000LL;
	lr.step_ns = 60000000000LL;
	lr.event = FR_EVENT_CPU;
	lr.by = FR_TIMELINE_BY_COMM;
	lr.top = 8;
	tlp.samples = 7192808;
	tlp.groups = 9;
	tlp.bytes = 4321;
	fr_ipc_warn(tlp.warnings, &tlp.nwarnings, "the timeline holds only your own processes");
	tr.targets = ar.targets;
	tr.targets.children = 0;
	fr_ipc_warn(tp.warnings, &tp.nwarnings, "only your own processes (uid 1000) are listed");

	s.n = 0;
	frame_msg(&s, fr_ipc_attach_req_encode(&ar), 1);
	frame_msg(&s, fr_ipc_attach_reply_encode(&ap), 0);
	frame_msg(&s, fr_ipc_consume_req_encode(&cr), 1);
	frame_msg(&s, fr_ipc_consume_reply_encode(&cp), 0);
	frame_msg(&s, fr_ipc_dump_req_encode(&dr), 1);
	frame_msg(&s, fr_ipc_dump_reply_encode(&dp), 0);
	frame_msg(&s, fr_ipc_threads_req_encode(&tr), 1);
	frame_msg(&s, fr_ipc_threads_reply_encode(&tp), 0);
	snprintf(lp.config, sizeof(lp.config), "/etc/flightrec.json");
	fr_ipc_reload_change(&lp, "sessions[db].events[0].hz: 99 -> 199");
	fr_ipc_reload_change(&lp, "ring.size: \"256MiB\" -> \"1GiB\" (at the next start)");
	frame_msg(&s, fr_ipc_reload_req_encode(), 1);
	frame_msg(&s, fr_ipc_reload_reply_encode(&lp), 0);
	frame_msg(&s, fr_ipc_trigger_req_encode(&gr), 1);
	frame_msg(&s, fr_ipc_timeline_req_encode(&lr), 1);
	frame_msg(&s, fr_ipc_timeline_reply_encode(&tlp), 0);
	/* A timeline by an application label, of an event, over a span. */
	frame(&s, "{\"v\":1,\"req\":\"timeline\",\"from_ns\":1795000000000000000,"
		  "\"to_ns\":1795000360000000000,\"step_ns\":10000000000,\"event\":\"offcpu\","
		  "\"by\":\"label:tenant\",\"top\":32}");
	/* Raw events by their full config, by an id only, and malformed. */
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":1000000000,\"events\":["
		  "\"raw:0x10000003c,config1=0x3f807f8fff,config2=0x1\",\"raw:id=0x21234567\","
		  "\"raw:0x1c2,config3=0x1\"]}");
	/* The threads at a past moment: by pids, and by command names and a
	 * cgroup as the ring had them then. */
	frame(&s, "{\"v\":1,\"req\":\"threads\",\"pids\":[1,2],\"at_ns\":1795000000000000000}");
	frame(&s, "{\"v\":1,\"req\":\"threads\",\"comm\":[\"postgres\",\"pgbouncer\"],"
		  "\"cgroup\":\"/system.slice/db.service\",\"at_ns\":1795000000000000000}");
	write_seed("ipc", "messages", -1, s.b, s.n);

	/* Members each decoder refuses, one per frame. */
	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":1.5,\"hz\":-1}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"from_ns\":1,\"pids\":[0],\"comm\":[\"\"]}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":1,\"children\":true,"
		  "\"cgroup\":\"x\",\"format\":\"svg\"}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":1,\"by_cpu\":\"yes\"}");
	frame(&s, "{\"v\":1,\"req\":\"consume\",\"events\":[\"cpu\",\"cpu\"],\"hz\":1e30}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"since_last\":\"../x\",\"events\":[\"cpu\"],"
		  "\"event_hz\":[1,2]}");
	frame(&s, "{\"v\":1,\"req\":\"consume\",\"event_hz\":[-1]}");
	frame(&s, "{\"v\":1,\"req\":\"dump\",\"session\":\"\",\"window_ns\":999}");
	frame(&s, "{\"v\":1,\"req\":\"timeline\",\"window_ns\":1,\"from_ns\":2,\"step_ns\":5,"
		  "\"by\":\"label:\",\"event\":\"nope\",\"top\":33}");
	frame(&s, "{\"v\":1,\"req\":\"timeline\",\"by\":7,\"top\":-1}");
	frame(&s, "{\"v\":1,\"req\":\"threads\",\"pids\":[1],\"children\":true}");
	frame(&s, "{\"v\":1,\"req\":\"trigger\",\"session\":\"db\",\"reason\":\"a\\nb\"}");
	frame(&s, "{\"v\":1,\"req\":\"trigger\",\"session\":\"db\",\"reason\":\"\","
		  "\"window_ns\":1}");
	frame(&s, "{\"ok\":true,\"config\":\"/x\",\"changed\":[\"a\",2],\"more\":-1}");
	frame(&s, "{\"v\":1,\"req\":\"threads\",\"pids\":[]}");
	/* An attach reply's span members: negative, not a list, a kind of
	 * filter this build does not know beside one that is no string. */
	frame(&s, "{\"v\":1,\"ok\":true,\"samples\":0,\"first_ns\":-1,\"empty_filters\":\"comm\"}");
	frame(&s, "{\"v\":1,\"ok\":true,\"samples\":0,\"procs_in_window\":3,"
		  "\"empty_filters\":[\"pid\",\"uid\",7],\"stall_t1_ns\":1e300}");
	frame(&s, "{\"v\":1,\"ok\":true,\"samples\":0,\"pids_not_running\":[0,1.5,-3]}");
	frame(&s, "{\"v\":1,\"req\":\"threads\",\"comm\":[\"x\"],\"at_ns\":-1}");
	frame(&s, "{\"ok\":true,\"events\":[{\"event\":\"raw:0x1\",\"hz\":4294967296}],"
		  "\"warnings\":[1],\"incomplete\":true,\"path\":7}");
	write_seed("ipc", "bad-fields", -1, s.b, s.n);
}

void make_ipc_seeds(void)
{
	struct stream s;

	clean_dir("ipc");

	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"status\"}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":60000000000,\"hz\":99,"
		  "\"pids\":[1234,5678]}");
	frame(&s, "{\"ok\":true,\"samples\":5940,\"stacks\":212,\"bytes\":48211,\"hz\":99,"
		  "\"t0_ns\":1700000000000000000,\"t1_ns\":1700000060000000000,"
		  "\"warnings\":[\"pid 5678 exited before the window\"]}");
	frame(&s, "{\"ok\":false,\"error\":\"protocol version 2 is not supported; this "
		  "daemon speaks version 1\"}");
	write_seed("ipc", "conversation", -1, s.b, s.n);

	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"from_ns\":1700000000000000000,"
		  "\"to_ns\":1700000001000000000,\"hz\":0,\"pids\":[]}");
	frame_raw(&s, 100, "{\"v\":1,\"req\":", 13);
	write_seed("ipc", "truncated", -1, s.b, s.n);

	s.n = 0;
	frame_raw(&s, 0, "", 0);
	write_seed("ipc", "empty-frame", -1, s.b, s.n);

	s.n = 0;
	frame_raw(&s, FR_IPC_MAX_FRAME + 1, "{}", 2);
	write_seed("ipc", "oversize", -1, s.b, s.n);

	s.n = 0;
	frame(&s, "{}");
	frame(&s, "[1,2,{\"v\":1}]");
	write_seed("ipc", "not-an-object", -1, s.b, s.n);

	s.n = 0;
	frame_raw(&s, 16, "{\"v\":1}\0{\"v\":2}", 16);
	write_seed("ipc", "nul", -1, s.b, s.n);

	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"status\"} {\"v\":1}");
	write_seed("ipc", "trailing", -1, s.b, s.n);

	{
		char deep[1200];
		size_t n = 0;

		n += (size_t)sprintf(deep + n, "{\"v\":1,\"x\":");
		for (int i = 0; i < 300; i++)
			deep[n++] = '[';
		n += (size_t)sprintf(deep + n, "\"\\u00e9\\ud83d\\ude00\\n\",1e308,-0.5,null,true");
		for (int i = 0; i < 300; i++)
			deep[n++] = ']';
		deep[n++] = '}';
		s.n = 0;
		frame_raw(&s, (uint32_t)n, deep, n);
		write_seed("ipc", "nested", -1, s.b, s.n);
	}
	make_message_seeds();
}
