/* Config: the embedded default and its documented values, the exact
 * message of every class of error (with the JSON path and the source), the
 * all-or-nothing rule, the on-call settings (groups, users, a uid target)
 * and the limit on events per session. Triggers are tested in
 * test_config_triggers.c; dumps, the full config's round trip through
 * fr_config_to_json and loading from a file in test_config_json.c. */
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/limits.h"
#include "core/store/sample.h"

#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/config_check.h"

#define EVENTS FR_EVENT_NAMES

static void test_default(void)
{
	struct fr_config cfg, empty;
	char err[256];
	int ret;

	ret = fr_config_default(&cfg);
	CHECK(ret == 0, "default: %d", ret);
	CHECK(cfg.ring_path == NULL, "default ring path should be unset");
	CHECK(cfg.socket_path == NULL, "default socket should be unset");
	CHECK(cfg.ring_size == 256ull << 20, "ring size %llu", (unsigned long long)cfg.ring_size);
	CHECK(cfg.segment_size == 1ull << 20, "segment %llu", (unsigned long long)cfg.segment_size);
	CHECK(cfg.sync_ns == FR_NS_PER_S, "sync %lld", (long long)cfg.sync_ns);
	CHECK(cfg.max_rate_hz == 10000, "max_rate_hz %u", cfg.max_rate_hz);
	CHECK(cfg.max_clients == 64, "max_clients %u", cfg.max_clients);
	CHECK(cfg.memory == 512ull << 20, "memory %llu", (unsigned long long)cfg.memory);
	CHECK(cfg.query_memory == 0, "query_memory %llu", (unsigned long long)cfg.query_memory);
	CHECK(cfg.unwind_table_memory == 0, "unwind_table_memory %llu",
	      (unsigned long long)cfg.unwind_table_memory);
	CHECK(cfg.user_max_rate_hz == 99, "user_max_rate_hz %u", cfg.user_max_rate_hz);
	CHECK(cfg.dumps_dir == NULL, "default dumps dir should be unset");
	CHECK(cfg.dumps_keep == 50, "dumps keep %u", cfg.dumps_keep);
	CHECK(cfg.dumps_max_bytes == 0, "dumps max_bytes %llu",
	      (unsigned long long)cfg.dumps_max_bytes);
	CHECK(cfg.sessions[0].ntriggers == 0, "default session has %u triggers",
	      cfg.sessions[0].ntriggers);
	CHECK(cfg.nsessions == 1, "nsessions %u", cfg.nsessions);
	CHECK(strcmp(cfg.sessions[0].name, "default") == 0, "session name %s",
	      cfg.sessions[0].name);
	CHECK(cfg.sessions[0].nevents == 3, "nevents %u", cfg.sessions[0].nevents);
	CHECK(cfg.sessions[0].events[0].event == FR_EVENT_CPU, "event %u",
	      cfg.sessions[0].events[0].event);
	CHECK(cfg.sessions[0].events[0].hz == 99, "hz %u", cfg.sessions[0].events[0].hz);
	/* Off-CPU is recorded by default, by the eBPF mechanism with stacks
	 * of waits of 1 ms or more. */
	CHECK(cfg.sessions[0].events[1].event == FR_EVENT_OFFCPU &&
		      cfg.sessions[0].events[1].mechanism == FR_CONFIG_OFFCPU_BPF &&
		      cfg.sessions[0].events[1].min_wait_ns == 1000000,
	      "default offcpu: event %u mechanism %u min_wait %lld",
	      cfg.sessions[0].events[1].event, cfg.sessions[0].events[1].mechanism,
	      (long long)cfg.sessions[0].events[1].min_wait_ns);
	/* And allocation samples of processes with libflightrec, at 512 KiB. */
	CHECK(cfg.sessions[0].events[2].event == FR_EVENT_ALLOC &&
		      cfg.sessions[0].events[2].mean == 512 << 10 &&
		      cfg.sessions[0].events[2].hz == 0,
	      "default alloc: event %u mean %llu", cfg.sessions[0].events[2].event,
	      (unsigned long long)cfg.sessions[0].events[2].mean);
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_CPU) == 99, "max hz cpu");
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_CYCLES) == 0, "max hz cycles");

	/* Absent keys mean exactly the embedded default. */
	ret = fr_config_parse(&empty, "{}", 2, SRC, err, sizeof(err));
	CHECK(ret == 0, "{}: %d %s", ret, err);
	CHECK(cfg_equal(&cfg, &empty), "parsing {} differs from the embedded default");
	fr_config_fini(&empty);
	ret = fr_config_parse(&empty, "{\"limits\":{\"unwind_table_memory\":\"8MiB\"}}", 41, SRC,
			      err, sizeof(err));
	CHECK(ret == 0 && empty.unwind_table_memory == 8ull << 20, "unwind_table_memory: %d %s",
	      ret, err);
	fr_config_fini(&empty);

	/* The default prints and reads back. */
	{
		char *text = fr_config_to_json(&cfg);
		struct fr_config back;

		CHECK(text && strstr(text, "\"256MiB\"") && strstr(text, "\"1MiB\"") &&
			      strstr(text, "\"1s\""),
		      "default JSON: %s", text ? text : "(null)");
		CHECK(text && fr_config_parse(&back, text, strlen(text), "printed", err,
					      sizeof(err)) == 0,
		      "printed default does not parse: %s", err);
		CHECK(cfg_equal(&cfg, &back), "printed default differs");
		fr_config_fini(&back);
		free(text);
	}
	fr_config_fini(&cfg);
	fr_config_fini(NULL);
}

struct bad {
	const char *json;
	const char *msg;
};

static const struct bad bad_configs[] = {
	/* syntax */
	{"{\n  \"ring\": x\n}", SRC ": line 2, column 11: invalid JSON"},
	{"{\"ring\": {", SRC ": line 1, column 11: invalid JSON (unexpected end of input)"},
	{"{} x", SRC ": line 1, column 4: invalid JSON"},
	{"", SRC ": line 1, column 1: invalid JSON (unexpected end of input)"},
	{"[1]", SRC ": the top level must be a JSON object, got [1]"},
	/* unknown and repeated keys */
	{"{\"ring\":{\"sise\":\"1MiB\"}}",
	 SRC ": ring.sise: unknown key (accepted: path, size, segment, sync, max_age)"},
	{"{\"dump\":{}}", SRC
	 ": dump: unknown key (accepted: ring, socket, dumps, limits, symbols, sessions, export)"},
	{"{\"limits\":{\"rate\":1}}",
	 SRC ": limits.rate: unknown key (accepted: max_rate_hz, max_clients, user_max_rate_hz, "
	     "memory, query_memory, unwind_table_memory)"},
	{"{\"limits\":{\"memory\":\"32MiB\"}}",
	 SRC ": limits.memory: must be at least 64MiB (the label table alone may take 56MiB), "
	     "got \"32MiB\""},
	{"{\"limits\":{\"memory\":\"128MiB\",\"query_memory\":\"256MiB\"}}",
	 SRC ": limits.query_memory: must not exceed limits.memory (128MiB), of which it is a "
	     "share; got \"256MiB\""},
	{"{\"limits\":{\"unwind_table_memory\":\"512KiB\"}}",
	 SRC ": limits.unwind_table_memory: must be at least 1MiB, got \"512KiB\""},
	{"{\"limits\":{\"query_memory\":\"512KiB\"}}",
	 SRC ": limits.query_memory: must be at least 1MiB, got \"512KiB\""},
	{"{\"limits\":{\"query_memory\":256}}",
	 SRC ": limits.query_memory: must be a size string like \"256MiB\", got 256"},
	{"{\"sessions\":[{\"name\":\"a\",\"evnts\":[]}]}",
	 SRC ": sessions[0].evnts: unknown key (accepted: name, targets, triggers, events, users)"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"rate\":9}]}]}", SRC
	 ": sessions[0].events[0].rate: unknown key (accepted: event, hz, period, unwind, stack_copy, mechanism, min_wait, mean)"},
	{"{\"ring\":{\"size\":\"4MiB\",\"size\":\"8MiB\"}}", SRC ": ring.size: given twice"},
	/* types */
	{"{\"ring\":{\"size\":12}}",
	 SRC ": ring.size: must be a size string like \"256MiB\", got 12"},
	{"{\"ring\":{\"size\":\"12 parsecs\"}}",
	 SRC ": ring.size: must be a size string like \"256MiB\", got \"12 parsecs\""},
	{"{\"ring\":[]}", SRC ": ring: must be an object like {\"size\": \"256MiB\"}, got []"},
	{"{\"ring\":{\"path\":\"\"}}",
	 SRC ": ring.path: must be a non-empty path string, got \"\""},
	{"{\"ring\":{\"sync\":5}}",
	 SRC ": ring.sync: must be a duration like \"1s\", or \"off\", got 5"},
	{"{\"ring\":{\"max_age\":\"500ms\"}}", SRC
	 ": ring.max_age: must be a duration of at least 1s like \"7d\" or \"12h\", got \"500ms\""},
	{"{\"sessions\":[{\"name\":\"x\",\"events\":[{\"event\":\"offcpu\",\"hz\":99}]}]}",
	 SRC ": sessions[0].events[0].hz: offcpu records every context switch and takes no rate; "
	     "leave \"hz\" out"},
	{"{\"sessions\":[{\"name\":\"x\",\"events\":[{\"event\":\"raw:0xzz\"}]}]}",
	 SRC ": sessions[0].events[0].event: \"raw:0xzz\": the config must be 0x and 1 to 16 hex "
	     "digits, like raw:0x1c2"},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"comm\":[\"a-very-long-command-name\"]}}]}",
	 SRC ": sessions[0].targets.comm[0]: must be a command name of 1..15 characters (as the "
	     "kernel keeps it), got \"a-very-long-command-name\""},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"cgroup\":\"system.slice\"}}]}",
	 SRC ": sessions[0].targets.cgroup: must be a cgroup v2 path like "
	     "\"/system.slice/nginx.service\" (at most 255 characters), got \"system.slice\""},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"pids\":[0]}}]}",
	 SRC ": sessions[0].targets.pids[0]: must be 1..2147483647, got 0"},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"pid\":[1]}}]}",
	 SRC ": sessions[0].targets.pid: unknown key (accepted: pids, comm, cgroup, uid, labels, "
	     "label_key)"},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"labels\":[\"tenant\"]}}]}",
	 SRC ": sessions[0].targets.labels[0]: must be \"key=value\" with at most 63 characters "
	     "each side, got \"tenant\""},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"label_key\":\"\"}}]}",
	 SRC ": sessions[0].targets.label_key: must be a label key of 1..63 characters, got \"\""},
	{"{\"socket\":true}", SRC ": socket: must be a path string or an object like "
				  "{\"group\": \"flightrec\"}, got true"},
	{"{\"socket\":{\"path\":\"\"}}",
	 SRC ": socket.path: must be a non-empty path string, got \"\""},
	{"{\"socket\":{\"mode\":\"0666\"}}",
	 SRC ": socket.mode: unknown key (accepted: path, group, admin_group)"},
	{"{\"socket\":{\"group\":\"fr-no-such-group\"}}",
	 SRC ": socket.group: no group named \"fr-no-such-group\" on this machine"},
	{"{\"socket\":{\"admin_group\":-1}}",
	 SRC ": socket.admin_group: must be a group name or number 0..4294967294, got -1"},
	{"{\"socket\":{\"group\":true}}",
	 SRC ": socket.group: must be a group name or number, got true"},
	{"{\"limits\":{\"max_rate_hz\":500,\"user_max_rate_hz\":501}}",
	 SRC ": limits.user_max_rate_hz: must be 1..500, got 501"},
	{"{\"limits\":{\"user_max_rate_hz\":0}}",
	 SRC ": limits.user_max_rate_hz: must be 1..10000, got 0"},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"uid\":\"fr-no-such-user\"}}]}",
	 SRC ": sessions[0].targets.uid: no user named \"fr-no-such-user\" on this machine"},
	{"{\"sessions\":[{\"name\":\"x\",\"users\":[]}]}",
	 SRC ": sessions[0].users: must be a non-empty array of user names or uids, got []"},
	{"{\"sessions\":[{\"name\":\"x\",\"users\":[0,\"fr-no-such-user\"]}]}",
	 SRC ": sessions[0].users[1]: no user named \"fr-no-such-user\" on this machine"},
	{"{\"limits\":{\"max_clients\":\"64\"}}",
	 SRC ": limits.max_clients: must be an integer 1..1024, got \"64\""},
	{"{\"sessions\":{}}", SRC ": sessions: must be an array of sessions, got {}"},
	{"{\"sessions\":[{\"name\":7}]}", SRC ": sessions[0].name: must be a string, got 7"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":1}]}]}",
	 SRC ": sessions[0].events[0].event: must be an event name string, got 1"},
	/* ranges */
	{"{\"sessions\":[{\"name\":\"a\"},{\"name\":\"b\",\"events\":[{\"event\":\"cpu\",\"hz\":0}]}]}",
	 SRC ": sessions[1].events[0].hz: must be 1..10000, got 0"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"hz\":999}]}],"
	 "\"limits\":{\"max_rate_hz\":500}}",
	 SRC ": sessions[0].events[0].hz: must be 1..500, got 999"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"hz\":1.5}]}]}",
	 SRC ": sessions[0].events[0].hz: must be 1..10000, got 1.5"},
	{"{\"limits\":{\"max_rate_hz\":100001}}",
	 SRC ": limits.max_rate_hz: must be 1..100000, got 100001"},
	{"{\"limits\":{\"max_clients\":0}}", SRC ": limits.max_clients: must be 1..1024, got 0"},
	{"{\"ring\":{\"segment\":\"32KiB\"}}",
	 SRC ": ring.segment: must be at least 64KiB, got \"32KiB\""},
	{"{\"ring\":{\"segment\":\"65537B\"}}",
	 SRC ": ring.segment: must be a multiple of 4KiB, got \"65537B\""},
	{"{\"ring\":{\"size\":\"1MiB\"}}", SRC
	 ": ring.size: must hold at least 2 segments (2MiB with a segment of 1MiB), got \"1MiB\""},
	{"{\"ring\":{\"segment\":\"200MiB\"}}",
	 SRC ": ring.segment: must be at most half of ring.size (128MiB), got \"200MiB\""},
	/* events */
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpux\"}]}]}",
	 SRC ": sessions[0].events[0].event: unknown event \"cpux\" (accepted: " EVENTS ")"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"hz\":9}]}]}", SRC
	 ": sessions[0].events[0].event: missing; name the event to record (accepted: " EVENTS ")"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\"},{\"event\":\"cpu\"}]}]}",
	 SRC ": sessions[0].events[1].event: \"cpu\" is already listed in this session"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[]}]}",
	 SRC ": sessions[0].events: must list at least one event"},
	/* dumps */
	{"{\"dumps\":[]}", SRC ": dumps: must be an object like {\"keep\": 50}, got []"},
	{"{\"dumps\":{\"kep\":5}}",
	 SRC ": dumps.kep: unknown key (accepted: dir, keep, max_bytes, mode)"},
	{"{\"dumps\":{\"keep\":0}}", SRC ": dumps.keep: must be 1..100000, got 0"},
	{"{\"dumps\":{\"keep\":100001}}", SRC ": dumps.keep: must be 1..100000, got 100001"},
	{"{\"dumps\":{\"keep\":\"50\"}}",
	 SRC ": dumps.keep: must be an integer 1..100000, got \"50\""},
	{"{\"dumps\":{\"dir\":\"\"}}",
	 SRC ": dumps.dir: must be a non-empty path string, got \"\""},
	{"{\"dumps\":{\"dir\":[]}}", SRC ": dumps.dir: must be a non-empty path string, got []"},
	{"{\"dumps\":{\"max_bytes\":\"0\"}}",
	 SRC ": dumps.max_bytes: must be more than 0 (leave it out for no byte limit), got \"0\""},
	{"{\"dumps\":{\"max_bytes\":100}}",
	 SRC ": dumps.max_bytes: must be a size string like \"256MiB\", got 100"},
	{"{\"dumps\":{\"keep\":5,\"keep\":6}}", SRC ": dumps.keep: given twice"},
#define MODE_ERR                                                                             \
	SRC ": dumps.mode: must be an octal string like \"0640\" with the owner's read and " \
	    "write bits and at most read for group and others (0600..0644), got "
	{"{\"dumps\":{\"mode\":640}}", MODE_ERR "640"},
	{"{\"dumps\":{\"mode\":\"0666\"}}", MODE_ERR "\"0666\""},
	{"{\"dumps\":{\"mode\":\"0400\"}}", MODE_ERR "\"0400\""},
	{"{\"dumps\":{\"mode\":\"0755\"}}", MODE_ERR "\"0755\""},
	{"{\"dumps\":{\"mode\":\"0680\"}}", MODE_ERR "\"0680\""},
	{"{\"dumps\":{\"mode\":\"\"}}", MODE_ERR "\"\""},
	{"{\"dumps\":{\"mode\":\"-600\"}}", MODE_ERR "\"-600\""},
	{"{\"dumps\":{\"mode\":\"04600\"}}", MODE_ERR "\"04600\""},
	/* triggers: the array and "on" */
	{TRIG("{}"), SRC ": sessions[0].triggers: must be an array like [{\"on\": \"signal\", "
			 "\"signal\": \"USR1\"}], got {}"},
	{TRIGS("5"),
	 T0 ": must be an object like {\"on\": \"signal\", \"signal\": \"USR1\"}, got 5"},
	{TRIGS("{}"), T0
	 ".on: missing; say what fires the trigger (accepted: signal, cpu_above, exit, oom, crash, pressure)"},
	{TRIGS("{\"window\":\"10s\"}"), T0
	 ".on: missing; say what fires the trigger (accepted: signal, cpu_above, exit, oom, crash, pressure)"},
	{TRIGS("{\"on\":1}"), T0
	 ".on: must be a string (accepted: signal, cpu_above, exit, oom, crash, pressure), got 1"},
	{"{\"sessions\":[{\"name\":\"a\"},{\"name\":\"b\",\"triggers\":[{\"on\":\"cpu\"}]}]}",
	 SRC ": sessions[1].triggers[0].on: unknown trigger \"cpu\" (accepted: signal, cpu_above, "
	     "exit, oom, crash, pressure)"},
	{TRIGS("{\"on\":\"Signal\",\"signal\":\"USR1\"}"), T0
	 ".on: unknown trigger \"Signal\" (accepted: signal, cpu_above, exit, oom, crash, pressure)"},
	/* triggers: keys of the wrong kind, unknown and repeated keys */
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"percent\":90}"),
	 T0 ".percent: only cpu_above triggers take \"percent\" (accepted for signal: on, signal, "
	    "window, after, cooldown)"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"for\":\"10s\"}"), T0
	 ".for: only cpu_above and pressure triggers take \"for\" (accepted for signal: on, signal, "
	 "window, after, cooldown)"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":90,\"signal\":\"USR1\"}"), T0
	 ".signal: only signal triggers take \"signal\" (accepted for cpu_above: on, percent, for, "
	 "window, after, cooldown)"},
	{TRIGS("{\"on\":\"exit\",\"signal\":\"USR1\"}"),
	 T0 ".signal: only signal triggers take \"signal\" (accepted for exit: on, window, after, "
	    "cooldown)"},
	{TRIGS("{\"on\":\"exit\",\"percent\":5}"),
	 T0 ".percent: only cpu_above triggers take \"percent\" (accepted for exit: on, window, "
	    "after, cooldown)"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":90,\"windw\":\"10s\"}"),
	 T0 ".windw: unknown key (accepted: on, percent, for, window, after, cooldown)"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":\"1s\",\"window\":\"2s\"}"),
	 T0 ".window: given twice"},
	{TRIGS("{\"on\":\"signal\",\"on\":\"exit\",\"signal\":\"USR1\"}"), T0 ".on: given twice"},
	/* triggers: signals */
	{TRIGS("{\"on\":\"signal\"}"),
	 T0 ".signal: missing; name the signal that fires the trigger (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":10}"),
	 T0 ".signal: must be a signal name like \"USR1\" (accepted: " ACC "), got 10"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"TERM\"}"),
	 T0 ".signal: SIGTERM is the daemon's own (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGTERM\"}"),
	 T0 ".signal: SIGTERM is the daemon's own (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGHUP\"}"),
	 T0 ".signal: SIGHUP is the daemon's own (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"int\"}"),
	 T0 ".signal: SIGINT is the daemon's own (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGPIPE\"}"),
	 T0 ".signal: SIGPIPE is the daemon's own (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"CHLD\"}"),
	 T0 ".signal: SIGCHLD is the daemon's own (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGKILL\"}"),
	 T0 ".signal: SIGKILL cannot be caught (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"STOP\"}"),
	 T0 ".signal: SIGSTOP cannot be caught (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGSEGV\"}"),
	 T0 ".signal: SIGSEGV cannot be used for triggers (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"WINCH\"}"),
	 T0 ".signal: SIGWINCH cannot be used for triggers (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGFOO\"}"),
	 T0 ".signal: unknown signal \"SIGFOO\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR3\"}"),
	 T0 ".signal: unknown signal \"USR3\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIG\"}"),
	 T0 ".signal: unknown signal \"SIG\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"\"}"),
	 T0 ".signal: unknown signal \"\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"10\"}"),
	 T0 ".signal: unknown signal \"10\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"RTMIN-1\"}"),
	 T0 ".signal: unknown signal \"RTMIN-1\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"SIGRTMAX+1\"}"),
	 T0 ".signal: unknown signal \"SIGRTMAX+1\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"RTMIN+\"}"),
	 T0 ".signal: unknown signal \"RTMIN+\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"RTMIN+2x\"}"),
	 T0 ".signal: unknown signal \"RTMIN+2x\" (accepted: " ACC ")"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\"},{\"on\":\"signal\",\"signal\":\"SIGUSR1\"}"),
	 SRC ": sessions[0].triggers[1].signal: SIGUSR1 is already the signal of triggers[0]"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"RTMIN+1\"},{\"on\":\"cpu_above\",\"percent\":5},"
	       "{\"on\":\"signal\",\"signal\":\"sigrtmin+1\"}"),
	 SRC ": sessions[0].triggers[2].signal: SIGRTMIN+1 is already the signal of triggers[0]"},
	/* triggers: cpu_above */
	{TRIGS("{\"on\":\"cpu_above\"}"),
	 T0 ".percent: missing; give the CPU use that fires the trigger, 1..100 (percent of all "
	    "CPUs)"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":0}"), T0 ".percent: must be 1..100, got 0"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":101}"), T0 ".percent: must be 1..100, got 101"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":50.5}"), T0 ".percent: must be 1..100, got 50.5"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":\"90\"}"),
	 T0 ".percent: must be an integer 1..100, got \"90\""},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":90,\"for\":\"500ms\"}"),
	 T0 ".for: must be a duration of at least 1s like \"10s\" or \"1m\", got \"500ms\""},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":90,\"for\":10}"),
	 T0 ".for: must be a duration of at least 1s like \"10s\" or \"1m\", got 10"},
	/* triggers: pressure */
	{TRIGS("{\"on\":\"pressure\",\"above\":\"some 10%\"}"),
	 T0 ".resource: missing; name the resource whose pressure fires the trigger (accepted: "
	    "memory, cpu, io)"},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"disk\",\"above\":\"some 10%\"}"),
	 T0 ".resource: unknown resource \"disk\" (accepted: memory, cpu, io)"},
	{TRIGS("{\"on\":\"pressure\",\"resource\":1,\"above\":\"some 10%\"}"),
	 T0 ".resource: must be a string (accepted: memory, cpu, io), got 1"},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\"}"),
	 T0 ".above: missing; give the share of time stalled that fires the trigger, like \"some "
	    "10%\" or \"full 5%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":10}"),
	 T0 ".above: must be a string like \"some 10%\" or \"full 5%\", got 10"},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"10%\"}"), T0
	 ".above: must start with \"some\" (some task stalled) or \"full\" (all stalled) and one "
	 "space, like \"some 10%\" or \"full 5%\", got \"10%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"Some 10%\"}"), T0
	 ".above: must start with \"some\" (some task stalled) or \"full\" (all stalled) and one "
	 "space, like \"some 10%\" or \"full 5%\", got \"Some 10%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some 10\"}"),
	 T0 ".above: must be \"some\" or \"full\", one space, a share of wall time and \"%\", like "
	    "\"some 10%\" or \"full 5%\", got \"some 10\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some  10%\"}"),
	 T0 ".above: must be \"some\" or \"full\", one space, a share of wall time and \"%\", like "
	    "\"some 10%\" or \"full 5%\", got \"some  10%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some 10.%\"}"),
	 T0 ".above: must be \"some\" or \"full\", one space, a share of wall time and \"%\", like "
	    "\"some 10%\" or \"full 5%\", got \"some 10.%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some 10% \"}"),
	 T0 ".above: must be \"some\" or \"full\", one space, a share of wall time and \"%\", like "
	    "\"some 10%\" or \"full 5%\", got \"some 10% \""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some 1.125%\"}"),
	 T0 ".above: at most two decimals, got \"some 1.125%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some 0%\"}"),
	 T0 ".above: the share must be 0.01%..100% (of wall time), got \"some 0%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"io\",\"above\":\"full 100.5%\"}"),
	 T0 ".above: the share must be 0.01%..100% (of wall time), got \"full 100.5%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"io\",\"above\":\"full 99999999999%\"}"),
	 T0 ".above: the share must be 0.01%..100% (of wall time), got \"full 99999999999%\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"cpu\",\"above\":\"full 5%\"}"), T0
	 ".above: \"full\" CPU pressure is always 0 for the machine (some task runs whenever one "
	 "waits for a CPU); use \"some\", or a cgroup target, whose own is not"},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"cpu\",\"above\":\"some 5%\",\"for\":\"500ms\"}"),
	 T0 ".for: must be a duration of at least 1s like \"5s\" or \"1m\", got \"500ms\""},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"cpu\",\"above\":\"some 5%\",\"percent\":5}"),
	 T0 ".percent: only cpu_above triggers take \"percent\" (accepted for pressure: on, "
	    "resource, above, for, window, after, cooldown)"},
	{TRIGS("{\"on\":\"exit\",\"for\":\"5s\"}"),
	 T0 ".for: only cpu_above and pressure triggers take \"for\" (accepted for exit: on, "
	    "window, after, cooldown)"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":5,\"above\":\"some 5%\"}"),
	 T0 ".above: only pressure triggers take \"above\" (accepted for cpu_above: on, percent, "
	    "for, window, after, cooldown)"},
	{TRIGS("{\"on\":\"pressure\",\"resource\":\"cpu\",\"above\":\"some 5%\",\"targets\":{}}"),
	 T0 ".targets: unknown key (accepted: on, resource, above, for, window, after, cooldown)"},
	/* triggers: exit */
	{TRIGS("{\"on\":\"exit\"}"), T0
	 ".on: an exit trigger needs the session's targets (pids, comm, cgroup or uid): without them "
	 "any failing process of the machine would fire it"},
	/* triggers: window, after, cooldown */
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":\"0s\"}"),
	 T0 ".window: must be a duration of at least 1s like \"60s\" or \"2m\", got \"0s\""},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":60}"),
	 T0 ".window: must be a duration of at least 1s like \"60s\" or \"2m\", got 60"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":\"999ms\"}"),
	 T0 ".window: must be a duration of at least 1s like \"60s\" or \"2m\", got \"999ms\""},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"after\":\"-1s\"}"),
	 T0 ".after: must be a duration like \"10s\" (\"0s\" for none), got \"-1s\""},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"after\":\"300000000d\"}"),
	 T0 ".after: must be a duration like \"10s\" (\"0s\" for none), got \"300000000d\""},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"cooldown\":\"0s\"}"),
	 T0 ".cooldown: must be a duration of at least 1s like \"60s\" or \"10m\", got \"0s\""},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":\"61m\"}"),
	 T0 ".window: window + after must be at most 1h, got 1h1m + 0s"},
	{"{\"sessions\":[{\"name\":\"a\",\"targets\":{\"comm\":[\"x\"]},\"triggers\":[{\"on\":"
	 "\"exit\",\"window\":\"2h\",\"after\":\"0s\"}]}]}",
	 T0 ".after: window + after must be at most 1h, got 2h + 0s"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":\"50m\",\"after\":\"601s\"}"),
	 T0 ".after: window + after must be at most 1h, got 50m + 10m1s"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":9,\"after\":\"59m1s\"}"),
	 T0 ".after: window + after must be at most 1h, got 1m + 59m1s"},
	{TRIGS("{\"on\":\"cpu_above\",\"percent\":9,\"after\":\"3541s\"}"),
	 T0 ".after: window + after must be at most 1h, got 1m + 59m1s"},
	{TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"after\":\"106751d\"}"),
	 T0 ".after: window + after must be at most 1h, got 1m + 106751d"},
	/* sessions */
	{"{\"sessions\":[]}",
	 SRC ": sessions: must list at least one session (leave the key out for the default)"},
	{"{\"sessions\":[{\"events\":[{\"event\":\"cpu\"}]}]}",
	 SRC ": sessions[0].name: missing; every session needs a unique name"},
	{"{\"sessions\":[{\"name\":\"\"}]}", SRC ": sessions[0].name: must not be empty"},
	{"{\"sessions\":[{\"name\":\"a b\"}]}",
	 SRC ": sessions[0].name: \"a b\" has the character ' ' (accepted: A-Z a-z 0-9 _ . -)"},
	{"{\"sessions\":[{\"name\":\"a/b\"}]}",
	 SRC ": sessions[0].name: \"a/b\" has the character '/' (accepted: A-Z a-z 0-9 _ . -)"},
	{"{\"sessions\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"a\"}]}",
	 SRC ": sessions[2].name: \"a\" is already the name of sessions[0]"},
	/* unwinding */
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"unwind\":\"lbr\"}]}]}",
	 SRC ": sessions[0].events[0].unwind: must be \"dwarf\" or \"fp\", got \"lbr\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"unwind\":1}]}]}",
	 SRC ": sessions[0].events[0].unwind: must be \"dwarf\" or \"fp\", got 1"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"stack_copy\":\"256B\"}]}]}",
	 SRC ": sessions[0].events[0].stack_copy: must be 512B..65528B (64KiB - 8), got \"256B\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"stack_copy\":\"64KiB\"}]}]}",
	 SRC ": sessions[0].events[0].stack_copy: must be 512B..65528B (64KiB - 8), got \"64KiB\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"stack_copy\":8192}]}]}",
	 SRC ": sessions[0].events[0].stack_copy: must be a size string like \"256MiB\", got 8192"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"unwind\":\"fp\","
	 "\"stack_copy\":\"8KiB\"}]}]}",
	 SRC ": sessions[0].events[0].stack_copy: only used with \"unwind\": \"dwarf\"; leave it "
	     "out with \"fp\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"offcpu\",\"unwind\":\"fp\","
	 "\"stack_copy\":\"8KiB\"}]}]}",
	 SRC ": sessions[0].events[0].stack_copy: only used with \"unwind\": \"dwarf\"; leave it "
	     "out with \"fp\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"perf\","
	 "\"stack_copy\":\"8KiB\"}]}]}",
	 SRC ": sessions[0].events[0].stack_copy: \"perf\" copies stacks only with \"unwind\": "
	     "\"dwarf\" (a copy at every context switch); say so, or leave \"stack_copy\" out"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"unwnd\":\"fp\"}]}]}", SRC
	 ": sessions[0].events[0].unwnd: unknown key (accepted: event, hz, period, unwind, stack_copy, mechanism, min_wait, mean)"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"ebpf\"}]}]}",
	 SRC ": sessions[0].events[0].mechanism: must be \"bpf\" or \"perf\", got \"ebpf\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"min_wait\":\"1ms\"}]}]}",
	 SRC ": sessions[0].events[0].min_wait: only offcpu takes it; leave it out"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"perf\","
	 "\"min_wait\":\"1ms\"}]}]}",
	 SRC ": sessions[0].events[0].min_wait: only used with \"mechanism\": \"bpf\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"offcpu\",\"min_wait\":\"11s\"}]}]}",
	 SRC ": sessions[0].events[0].min_wait: must be 0..10s, got \"11s\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"mean\":\"1KiB\"}]}]}",
	 SRC ": sessions[0].events[0].mean: only alloc takes it; leave it out"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"alloc\",\"mean\":\"2GiB\"}]}]}",
	 SRC ": sessions[0].events[0].mean: must be 1 byte to 1GiB, got \"2GiB\""},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"alloc\",\"hz\":99}]}]}",
	 SRC ": sessions[0].events[0].hz: alloc is sampled by bytes and takes no rate; say "
	     "\"mean\" (e.g. \"512KiB\"), leave \"hz\" out"},
	{"{\"sessions\":[5]}", SRC
	 ": sessions[0]: must be an object like {\"name\": \"always\", \"events\": [...]}, got 5"},
};

static void test_errors(void)
{
	char err[512];

	for (size_t i = 0; i < sizeof(bad_configs) / sizeof(bad_configs[0]); i++) {
		const struct bad *b = &bad_configs[i];
		struct fr_config cfg;
		int ret;

		memset(&cfg, 0x5a, sizeof(cfg));
		ret = fr_config_parse(&cfg, b->json, strlen(b->json), SRC, err, sizeof(err));
		CHECK(ret == -EINVAL, "%s: returned %d", b->json, ret);
		CHECK(strcmp(err, b->msg) == 0, "%s:\n  got  %s\n  want %s", b->json, err, b->msg);
		CHECK(is_empty(&cfg), "%s: config not left empty", b->json);
		fr_config_fini(&cfg);
	}
}

/* Errors found late still leave nothing behind (a ring path was already
 * copied when the session failed), and messages work without a source. */
static void test_all_or_nothing(void)
{
	const char *json =
		"{\"ring\":{\"path\":\"/var/r\"},\"socket\":\"/run/s\","
		"\"sessions\":[{\"name\":\"x\",\"events\":[{\"event\":\"cpu\",\"hz\":-1}]}]}";
	struct fr_config cfg;
	char err[256];
	int ret;

	ret = fr_config_parse(&cfg, json, strlen(json), NULL, err, sizeof(err));
	CHECK(ret == -EINVAL, "late error: %d", ret);
	CHECK(strcmp(err, "sessions[0].events[0].hz: must be 1..10000, got -1") == 0,
	      "no-source message: %s", err);
	CHECK(is_empty(&cfg), "late error left state behind");

	/* A name of 63 characters is fine, 64 is not. */
	{
		char buf[256], name[70];

		memset(name, 'n', 64);
		name[64] = '\0';
		snprintf(buf, sizeof(buf), "{\"sessions\":[{\"name\":\"%s\"}]}", name);
		ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
		CHECK(ret == -EINVAL &&
			      strcmp(err, SRC
				     ": sessions[0].name: must be at most 63 characters, got 64") ==
				      0,
		      "64-char name: %s", err);
		name[63] = '\0';
		snprintf(buf, sizeof(buf), "{\"sessions\":[{\"name\":\"%s\"}]}", name);
		ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
		CHECK(ret == 0 && strcmp(cfg.sessions[0].name, name) == 0, "63-char name: %s", err);
		fr_config_fini(&cfg);
	}

	/* Too many sessions. */
	{
		char *buf = malloc(8192);
		size_t n = 0;

		n += (size_t)sprintf(buf + n, "{\"sessions\":[");
		for (int i = 0; i < FR_CONFIG_MAX_SESSIONS + 1; i++)
			n += (size_t)sprintf(buf + n, "%s{\"name\":\"s%d\"}", i ? "," : "", i);
		n += (size_t)sprintf(buf + n, "]}");
		ret = fr_config_parse(&cfg, buf, n, SRC, err, sizeof(err));
		CHECK(ret == -EINVAL &&
			      strcmp(err, SRC ": sessions: at most 64 sessions, got 65") == 0,
		      "65 sessions: %s", err);
		free(buf);
	}

	/* A socket path longer than a Unix socket address can hold. */
	{
		char buf[512], p[200];

		memset(p, 'a', 150);
		p[0] = '/';
		p[150] = '\0';
		snprintf(buf, sizeof(buf), "{\"socket\":\"%s\"}", p);
		ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
		CHECK(ret == -EINVAL &&
			      strcmp(err, SRC
				     ": socket: must be at most 107 bytes long, got 150 bytes") ==
				      0,
		      "long socket: %s", err);
	}

	/* Input is taken by length, not up to a NUL. */
	ret = fr_config_parse(&cfg, "{}\0garbage", 10, SRC, err, sizeof(err));
	CHECK(ret == -EINVAL && strcmp(err, SRC ": line 1, column 3: invalid JSON") == 0,
	      "embedded NUL: %s", err);
	ret = fr_config_parse(&cfg, "{}xyz", 2, SRC, err, sizeof(err));
	CHECK(ret == 0, "length not honoured: %s", err);
	fr_config_fini(&cfg);
}

/* The socket group, the admin group, the users' rate limit, a session's
 * users and a uid target: names resolved, numbers taken, printed back. */
static void test_oncall(void)
{
	const char *j = "{\"socket\": {\"path\": \"/run/fr/s.sock\", \"group\": \"root\", "
			"\"admin_group\": 4242},"
			" \"limits\": {\"user_max_rate_hz\": 49},"
			" \"sessions\": [{\"name\": \"api\", \"users\": [\"nobody\", 1234],"
			"  \"targets\": {\"comm\": [\"api\"], \"uid\": \"root\"},"
			"  \"triggers\": [{\"on\": \"exit\"}]},"
			"  {\"name\": \"mine\", \"targets\": {\"uid\": \"4000\"},"
			"  \"triggers\": [{\"on\": \"exit\"}]}]}";
	struct fr_config cfg, back;
	char err[256] = "", *text;
	int ret;

	ret = fr_config_parse(&cfg, j, strlen(j), SRC, err, sizeof(err));
	CHECK(ret == 0, "on-call config: %s", err);
	if (ret < 0)
		return;
	CHECK(cfg.socket_path && strcmp(cfg.socket_path, "/run/fr/s.sock") == 0, "socket.path");
	CHECK(cfg.has_socket_group && cfg.socket_gid == 0, "socket.group by name");
	CHECK(cfg.has_admin_group && cfg.admin_gid == 4242, "socket.admin_group by number");
	CHECK(cfg.user_max_rate_hz == 49, "user_max_rate_hz %u", cfg.user_max_rate_hz);
	CHECK(cfg.sessions[0].nusers == 2 && cfg.sessions[0].users[0] == 65534 &&
		      cfg.sessions[0].users[1] == 1234,
	      "users by name and number");
	CHECK(cfg.sessions[0].targets.has_uid && cfg.sessions[0].targets.uid == 0,
	      "targets.uid by name");
	CHECK(cfg.sessions[1].targets.has_uid && cfg.sessions[1].targets.uid == 4000,
	      "targets.uid alone is a target (an exit trigger may use it)");
	text = fr_config_to_json(&cfg);
	CHECK(text != NULL, "to_json");
	ret = text ? fr_config_parse(&back, text, strlen(text), "printed", err, sizeof(err)) : -1;
	CHECK(ret == 0 && cfg_equal(&cfg, &back), "on-call round trip: %s\n%s", err,
	      text ? text : "");
	if (ret == 0)
		fr_config_fini(&back);
	free(text);
	fr_config_fini(&cfg);

	/* Without a socket object: root only; users get 99 Hz, or the
	 * recorder's limit when that is lower. */
	ret = fr_config_parse(&cfg, "{}", 2, SRC, err, sizeof(err));
	CHECK(ret == 0 && !cfg.has_socket_group && !cfg.has_admin_group &&
		      cfg.user_max_rate_hz == 99,
	      "defaults: group %d admin %d rate %u", cfg.has_socket_group, cfg.has_admin_group,
	      cfg.user_max_rate_hz);
	fr_config_fini(&cfg);
	j = "{\"limits\": {\"max_rate_hz\": 50}}";
	ret = fr_config_parse(&cfg, j, strlen(j), SRC, err, sizeof(err));
	CHECK(ret == 0 && cfg.user_max_rate_hz == 50, "user rate follows a lower limit: %u",
	      cfg.user_max_rate_hz);
	fr_config_fini(&cfg);
}

/* A session's events become the value columns of its dumps and of the
 * consumer that records it, which hold FR_LIMIT_EVENTS: a session with
 * more used to be accepted and its last events silently dropped there.
 * It is refused, naming the limit; a session at the limit keeps every
 * event. */
static void test_more_events_than_a_dump_keeps(void)
{
	static const char *const names[] = {
		"cpu",
		"cycles",
		"instructions",
		"cache-references",
		"cache-misses",
		"branch-instructions",
		"branch-misses",
		"page-faults",
		"context-switches",
	};
	struct fr_config cfg;
	char buf[1024], err[256], want[256];
	size_t n;
	int ret;

	for (uint32_t count = FR_LIMIT_EVENTS; count <= FR_LIMIT_EVENTS + 1; count++) {
		n = (size_t)snprintf(buf, sizeof(buf),
				     "{\"sessions\":[{\"name\":\"s\",\"events\":[");
		for (uint32_t i = 0; i < count; i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s{\"event\":\"%s\"}",
					      i ? "," : "", names[i]);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]}]}");
		ret = fr_config_parse(&cfg, buf, n, SRC, err, sizeof(err));
		if (count == FR_LIMIT_EVENTS) {
			CHECK(ret == 0 && cfg.sessions[0].nevents == count &&
				      cfg.sessions[0].events[count - 1].event ==
					      (uint32_t)fr_event_lookup(names[count - 1]),
			      "%u events: %d %s", count, ret, err);
			fr_config_fini(&cfg);
			continue;
		}
		snprintf(want, sizeof(want),
			 SRC ": sessions[0].events: at most %d events per session (the value "
			     "columns of one profile), got %u",
			 FR_LIMIT_EVENTS, count);
		CHECK(ret == -EINVAL && strcmp(err, want) == 0, "%u events: %d %s", count, ret,
		      err);
		CHECK(is_empty(&cfg), "%u events left state behind", count);
	}
}

/* "unwind" and "stack_copy": the defaults of each kind of event, what is
 * written, rounding to the kernel's multiple of 8, and the round trip. */
static void test_unwind(void)
{
	struct fr_config cfg;
	const struct fr_config_event *ev;

	if (parse_ok(&cfg, "{}", NULL) == 0) {
		ev = &cfg.sessions[0].events[0];
		CHECK(ev->event == FR_EVENT_CPU &&
			      ev->unwind == (FR_CONFIG_HAS_DWARF ? FR_CONFIG_UNWIND_DWARF
								 : FR_CONFIG_UNWIND_FP),
		      "default cpu unwind %u", ev->unwind);
		CHECK(ev->stack_copy == (FR_CONFIG_HAS_DWARF ? 8192u : 0u), "default copy %u",
		      ev->stack_copy);
		fr_config_fini(&cfg);
	}
	if (!FR_CONFIG_HAS_DWARF) {
		char err[512];
		const char *j = "{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\","
				"\"unwind\":\"dwarf\"}]}]}";

		CHECK(fr_config_parse(&cfg, j, strlen(j), SRC, err, sizeof(err)) == -EINVAL &&
			      strstr(err, "only supported on x86-64"),
		      "dwarf off x86-64: %s", err);
		return;
	}
	if (parse_ok(&cfg,
		     "{\"sessions\":[{\"name\":\"a\",\"events\":["
		     "{\"event\":\"cpu\",\"stack_copy\":\"1001B\"},"
		     "{\"event\":\"offcpu\"},"
		     "{\"event\":\"page-faults\",\"unwind\":\"fp\"},"
		     "{\"event\":\"cycles\",\"unwind\":\"dwarf\",\"stack_copy\":\"65528B\"}]},"
		     "{\"name\":\"b\",\"events\":[{\"event\":\"offcpu\",\"unwind\":\"dwarf\"}]},"
		     "{\"name\":\"c\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"perf\"}]},"
		     "{\"name\":\"d\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"perf\","
		     "\"unwind\":\"dwarf\",\"stack_copy\":\"4KiB\"}]},"
		     "{\"name\":\"e\",\"events\":[{\"event\":\"offcpu\",\"unwind\":\"fp\"}]}]}",
		     NULL) == 0) {
		ev = cfg.sessions[0].events;
		CHECK(ev[0].unwind == FR_CONFIG_UNWIND_DWARF && ev[0].stack_copy == 1008,
		      "cpu 1001B: %u %u", ev[0].unwind, ev[0].stack_copy);
		/* offcpu's eBPF mechanism copies stacks of long waits only: dwarf
		 * by default. */
		CHECK(ev[1].unwind == FR_CONFIG_UNWIND_DWARF && ev[1].stack_copy == 8192 &&
			      ev[1].mechanism == FR_CONFIG_OFFCPU_BPF,
		      "offcpu default: %u %u %u", ev[1].unwind, ev[1].stack_copy, ev[1].mechanism);
		CHECK(ev[2].unwind == FR_CONFIG_UNWIND_FP && ev[2].stack_copy == 0, "fp: %u %u",
		      ev[2].unwind, ev[2].stack_copy);
		CHECK(ev[3].unwind == FR_CONFIG_UNWIND_DWARF && ev[3].stack_copy == 65528,
		      "largest copy: %u %u", ev[3].unwind, ev[3].stack_copy);
		ev = cfg.sessions[1].events;
		CHECK(ev[0].unwind == FR_CONFIG_UNWIND_DWARF && ev[0].stack_copy == 8192,
		      "offcpu dwarf: %u %u", ev[0].unwind, ev[0].stack_copy);
		CHECK(ev[0].mechanism == FR_CONFIG_OFFCPU_BPF, "offcpu dwarf: mechanism %u",
		      ev[0].mechanism);
		/* The perf mechanism copies at every switch: only when asked. */
		ev = cfg.sessions[2].events;
		CHECK(ev[0].mechanism == FR_CONFIG_OFFCPU_PERF &&
			      ev[0].unwind == FR_CONFIG_UNWIND_FP && ev[0].stack_copy == 0,
		      "offcpu perf: %u %u %u", ev[0].mechanism, ev[0].unwind, ev[0].stack_copy);
		ev = cfg.sessions[3].events;
		CHECK(ev[0].mechanism == FR_CONFIG_OFFCPU_PERF &&
			      ev[0].unwind == FR_CONFIG_UNWIND_DWARF && ev[0].stack_copy == 4096,
		      "offcpu perf dwarf: %u %u %u", ev[0].mechanism, ev[0].unwind,
		      ev[0].stack_copy);
		ev = cfg.sessions[4].events;
		CHECK(ev[0].mechanism == FR_CONFIG_OFFCPU_BPF &&
			      ev[0].unwind == FR_CONFIG_UNWIND_FP && ev[0].stack_copy == 0,
		      "offcpu fp: %u %u %u", ev[0].mechanism, ev[0].unwind, ev[0].stack_copy);
		fr_config_fini(&cfg);
	}
}

/* offcpu's "mechanism" and "min_wait": read, defaulted, printed back. */
static void test_offcpu_mechanism(void)
{
	struct fr_config cfg;
	const struct fr_config_event *ev;

	if (parse_ok(&cfg,
		     "{\"sessions\":[{\"name\":\"a\",\"events\":["
		     "{\"event\":\"offcpu\",\"min_wait\":\"200us\"}]},"
		     "{\"name\":\"b\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"perf\"}]},"
		     "{\"name\":\"c\",\"events\":[{\"event\":\"offcpu\",\"mechanism\":\"bpf\","
		     "\"min_wait\":\"0s\"}]}]}",
		     NULL) == 0) {
		ev = &cfg.sessions[0].events[0];
		CHECK(ev->mechanism == FR_CONFIG_OFFCPU_BPF && ev->min_wait_ns == 200000,
		      "min_wait 200us: %u %lld", ev->mechanism, (long long)ev->min_wait_ns);
		ev = &cfg.sessions[1].events[0];
		CHECK(ev->mechanism == FR_CONFIG_OFFCPU_PERF, "perf: %u", ev->mechanism);
		ev = &cfg.sessions[2].events[0];
		CHECK(ev->mechanism == FR_CONFIG_OFFCPU_BPF && ev->min_wait_ns == 0,
		      "min_wait 0s: %u %lld", ev->mechanism, (long long)ev->min_wait_ns);
		fr_config_fini(&cfg);
	}
}

/* alloc's "mean": read, defaulted, printed and read back. */
static void test_alloc_mean(void)
{
	struct fr_config cfg, back;
	char err[512], *text;

	if (parse_ok(&cfg,
		     "{\"sessions\":[{\"name\":\"a\",\"events\":["
		     "{\"event\":\"alloc\",\"mean\":\"64KiB\"}]},"
		     "{\"name\":\"b\",\"events\":[{\"event\":\"alloc\"}]}]}",
		     NULL) != 0)
		return;
	CHECK(cfg.sessions[0].events[0].mean == 64 << 10, "mean 64KiB: %llu",
	      (unsigned long long)cfg.sessions[0].events[0].mean);
	CHECK(cfg.sessions[1].events[0].mean == FR_CONFIG_ALLOC_MEAN_DEFAULT, "default mean: %llu",
	      (unsigned long long)cfg.sessions[1].events[0].mean);
	text = fr_config_to_json(&cfg);
	CHECK(text && fr_config_parse(&back, text, strlen(text), "printed", err, sizeof(err)) == 0,
	      "printed alloc config does not parse: %s", err);
	if (text) {
		CHECK(cfg_equal(&cfg, &back), "printed alloc config differs");
		fr_config_fini(&back);
	}
	free(text);
	fr_config_fini(&cfg);
}

/* A session's label filter: read, printed and read back. */
static void test_target_labels(void)
{
	static const char json[] =
		"{\"sessions\":[{\"name\":\"checkout\",\"targets\":{\"comm\":[\"shop\"],"
		"\"labels\":[\"tenant=42\",\"endpoint=/a=b\"],\"label_key\":\"phase\"}}]}";
	struct fr_config cfg, back;
	char err[512];
	char *text;
	const struct fr_targets *t;

	if (fr_config_parse(&cfg, json, strlen(json), SRC, err, sizeof(err)) != 0) {
		CHECK(0, "labels config: %s", err);
		return;
	}
	t = &cfg.sessions[0].targets;
	CHECK(t->nlabels == 2 && strcmp(t->label_keys[0], "tenant") == 0 &&
		      strcmp(t->label_values[0], "42") == 0 &&
		      strcmp(t->label_keys[1], "endpoint") == 0 &&
		      strcmp(t->label_values[1], "/a=b") == 0 && strcmp(t->label_key, "phase") == 0,
	      "session label filter read wrong");
	text = fr_config_to_json(&cfg);
	CHECK(text && fr_config_parse(&back, text, strlen(text), "printed", err, sizeof(err)) == 0,
	      "printed labels config does not parse: %s", err);
	if (text) {
		CHECK(cfg_equal(&cfg, &back), "printed labels config differs");
		fr_config_fini(&back);
	}
	free(text);
	fr_config_fini(&cfg);
}

int main(void)
{
	test_default();
	test_target_labels();
	test_unwind();
	test_offcpu_mechanism();
	test_alloc_mean();
	test_errors();
	test_all_or_nothing();
	test_oncall();
	test_more_events_than_a_dump_keeps();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("config: all checks passed\n");
	return 0;
}
