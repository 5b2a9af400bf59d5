/* Config: the embedded default and its documented values, the exact
 * message of every class of error (with the JSON path and the source), the
 * all-or-nothing rule, loading from a file, and a full config that
 * round-trips through fr_config_to_json. */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sample.h"

#include "tests/unit/check.h"

#define SRC "/etc/x.json"
#define EVENTS FR_EVENT_NAMES

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static int cfg_equal(const struct fr_config *a, const struct fr_config *b)
{
	if (!str_eq(a->ring_path, b->ring_path) || !str_eq(a->socket_path, b->socket_path) ||
	    a->ring_size != b->ring_size || a->segment_size != b->segment_size ||
	    a->sync_ns != b->sync_ns || a->max_rate_hz != b->max_rate_hz ||
	    a->max_clients != b->max_clients || a->nsessions != b->nsessions)
		return 0;
	for (uint32_t s = 0; s < a->nsessions; s++) {
		const struct fr_config_session *x = &a->sessions[s], *y = &b->sessions[s];

		if (strcmp(x->name, y->name) != 0 || x->nevents != y->nevents ||
		    x->npids != y->npids || x->ncomms != y->ncomms ||
		    strcmp(x->cgroup, y->cgroup) != 0 ||
		    memcmp(x->pids, y->pids, x->npids * sizeof(x->pids[0])) != 0 ||
		    memcmp(x->comms, y->comms, sizeof(x->comms)) != 0)
			return 0;
		for (uint32_t e = 0; e < x->nevents; e++)
			if (x->events[e].event != y->events[e].event ||
			    x->events[e].hz != y->events[e].hz)
				return 0;
	}
	return 1;
}

static int is_empty(const struct fr_config *cfg)
{
	static const struct fr_config zero;

	return memcmp(cfg, &zero, sizeof(zero)) == 0;
}

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
	CHECK(cfg.segment_size == 1ull << 20, "segment %llu",
	      (unsigned long long)cfg.segment_size);
	CHECK(cfg.sync_ns == 1000000000ll, "sync %lld", (long long)cfg.sync_ns);
	CHECK(cfg.max_rate_hz == 10000, "max_rate_hz %u", cfg.max_rate_hz);
	CHECK(cfg.max_clients == 64, "max_clients %u", cfg.max_clients);
	CHECK(cfg.nsessions == 1, "nsessions %u", cfg.nsessions);
	CHECK(strcmp(cfg.sessions[0].name, "default") == 0, "session name %s",
	      cfg.sessions[0].name);
	CHECK(cfg.sessions[0].nevents == 1, "nevents %u", cfg.sessions[0].nevents);
	CHECK(cfg.sessions[0].events[0].event == FR_EVENT_CPU, "event %u",
	      cfg.sessions[0].events[0].event);
	CHECK(cfg.sessions[0].events[0].hz == 99, "hz %u", cfg.sessions[0].events[0].hz);
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_CPU) == 99, "max hz cpu");
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_CYCLES) == 0, "max hz cycles");

	/* Absent keys mean exactly the embedded default. */
	ret = fr_config_parse(&empty, "{}", 2, SRC, err, sizeof(err));
	CHECK(ret == 0, "{}: %d %s", ret, err);
	CHECK(cfg_equal(&cfg, &empty), "parsing {} differs from the embedded default");
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
	{"{\"dumps\":{}}", SRC ": dumps: unknown key (accepted: ring, socket, limits, sessions)"},
	{"{\"limits\":{\"rate\":1}}",
	 SRC ": limits.rate: unknown key (accepted: max_rate_hz, max_clients)"},
	{"{\"sessions\":[{\"name\":\"a\",\"evnts\":[]}]}",
	 SRC ": sessions[0].evnts: unknown key (accepted: name, targets, events)"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\",\"rate\":9}]}]}",
	 SRC ": sessions[0].events[0].rate: unknown key (accepted: event, hz)"},
	{"{\"ring\":{\"size\":\"4MiB\",\"size\":\"8MiB\"}}", SRC ": ring.size: given twice"},
	/* types */
	{"{\"ring\":{\"size\":12}}", SRC ": ring.size: must be a size string like \"256MiB\", got 12"},
	{"{\"ring\":{\"size\":\"12 parsecs\"}}",
	 SRC ": ring.size: must be a size string like \"256MiB\", got \"12 parsecs\""},
	{"{\"ring\":[]}", SRC ": ring: must be an object like {\"size\": \"256MiB\"}, got []"},
	{"{\"ring\":{\"path\":\"\"}}", SRC ": ring.path: must be a non-empty path string, got \"\""},
	{"{\"ring\":{\"sync\":5}}",
	 SRC ": ring.sync: must be a duration like \"1s\", or \"off\", got 5"},
	{"{\"ring\":{\"max_age\":\"500ms\"}}",
	 SRC ": ring.max_age: must be a duration of at least 1s like \"7d\" or \"12h\", got \"500ms\""},
	{"{\"sessions\":[{\"name\":\"x\",\"events\":[{\"event\":\"offcpu\",\"hz\":99}]}]}",
	 SRC ": sessions[0].events[0].hz: offcpu records every context switch and takes no rate; "
	     "leave \"hz\" out"},
	{"{\"sessions\":[{\"name\":\"x\",\"events\":[{\"event\":\"raw:0xzz\"}]}]}",
	 SRC ": sessions[0].events[0].event: unknown event \"raw:0xzz\" (accepted: " EVENTS ")"},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"comm\":[\"a-very-long-command-name\"]}}]}",
	 SRC ": sessions[0].targets.comm[0]: must be a command name of 1..15 characters (as the "
	     "kernel keeps it), got \"a-very-long-command-name\""},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"cgroup\":\"system.slice\"}}]}",
	 SRC ": sessions[0].targets.cgroup: must be a cgroup v2 path like "
	     "\"/system.slice/nginx.service\" (at most 255 characters), got \"system.slice\""},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"pids\":[0]}}]}",
	 SRC ": sessions[0].targets.pids[0]: must be 1..2147483647, got 0"},
	{"{\"sessions\":[{\"name\":\"x\",\"targets\":{\"pid\":[1]}}]}",
	 SRC ": sessions[0].targets.pid: unknown key (accepted: pids, comm, cgroup)"},
	{"{\"socket\":true}", SRC ": socket: must be a non-empty path string, got true"},
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
	{"{\"limits\":{\"max_rate_hz\":100001}}", SRC ": limits.max_rate_hz: must be 1..100000, got 100001"},
	{"{\"limits\":{\"max_clients\":0}}", SRC ": limits.max_clients: must be 1..1024, got 0"},
	{"{\"ring\":{\"segment\":\"32KiB\"}}", SRC ": ring.segment: must be at least 64KiB, got \"32KiB\""},
	{"{\"ring\":{\"segment\":\"65537B\"}}",
	 SRC ": ring.segment: must be a multiple of 4KiB, got \"65537B\""},
	{"{\"ring\":{\"size\":\"1MiB\"}}",
	 SRC ": ring.size: must hold at least 2 segments (2MiB with a segment of 1MiB), got \"1MiB\""},
	{"{\"ring\":{\"segment\":\"200MiB\"}}",
	 SRC ": ring.segment: must be at most half of ring.size (128MiB), got \"200MiB\""},
	/* events */
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpux\"}]}]}",
	 SRC ": sessions[0].events[0].event: unknown event \"cpux\" (accepted: " EVENTS ")"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"hz\":9}]}]}",
	 SRC ": sessions[0].events[0].event: missing; name the event to record (accepted: " EVENTS
	     ")"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[{\"event\":\"cpu\"},{\"event\":\"cpu\"}]}]}",
	 SRC ": sessions[0].events[1].event: \"cpu\" is already listed in this session"},
	{"{\"sessions\":[{\"name\":\"a\",\"events\":[]}]}",
	 SRC ": sessions[0].events: must list at least one event"},
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
	{"{\"sessions\":[5]}",
	 SRC ": sessions[0]: must be an object like {\"name\": \"always\", \"events\": [...]}, got 5"},
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
	const char *json = "{\"ring\":{\"path\":\"/var/r\"},\"socket\":\"/run/s\","
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
			      strcmp(err, SRC ": sessions[0].name: must be at most 63 characters, got 64") == 0,
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
		CHECK(ret == -EINVAL && strcmp(err, SRC ": sessions: at most 64 sessions, got 65") == 0,
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
			      strcmp(err, SRC ": socket: must be at most 107 bytes long, got 150 bytes") == 0,
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

static const char full_json[] =
	"{\n"
	"  \"ring\": {\"path\": \"/var/lib/flightrec/ring\", \"size\": \"300000000B\",\n"
	"           \"segment\": \"256KiB\", \"sync\": \"250ms\", \"max_age\": \"7d\"},\n"
	"  \"socket\": \"/run/flightrec/test.sock\",\n"
	"  \"limits\": {\"max_rate_hz\": 5000, \"max_clients\": 8},\n"
	"  \"sessions\": [\n"
	"    {\"name\": \"always\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}]},\n"
	"    {\"name\": \"db.main-2_x\", \"events\": [{\"event\": \"cpu\", \"hz\": 4999}]},\n"
	"    {\"name\": \"implicit\"},\n"
	"    {\"name\": \"db\", \"targets\": {\"pids\": [7, 9], \"comm\": [\"postgres\"],\n"
	"     \"cgroup\": \"/system.slice/pg.service\"}, \"events\": [{\"event\": \"offcpu\"},\n"
	"     {\"event\": \"cycles\", \"hz\": 49}, {\"event\": \"raw:0x1a2\"}]}\n"
	"  ]\n"
	"}\n";

static void test_round_trip(void)
{
	struct fr_config cfg, back;
	char err[256];
	char *text;
	int ret;

	ret = fr_config_parse(&cfg, full_json, strlen(full_json), SRC, err, sizeof(err));
	CHECK(ret == 0, "full config: %d %s", ret, err);
	if (ret < 0)
		return;
	CHECK(cfg.ring_path && strcmp(cfg.ring_path, "/var/lib/flightrec/ring") == 0, "ring path");
	CHECK(cfg.ring_size == 300000000ull, "ring size %llu", (unsigned long long)cfg.ring_size);
	CHECK(cfg.segment_size == 256 << 10, "segment");
	CHECK(cfg.sync_ns == 250000000, "sync %lld", (long long)cfg.sync_ns);
	CHECK(cfg.max_age_ns == 7 * 86400 * 1000000000LL, "max_age %lld", (long long)cfg.max_age_ns);
	CHECK(cfg.socket_path && strcmp(cfg.socket_path, "/run/flightrec/test.sock") == 0, "socket");
	CHECK(cfg.max_rate_hz == 5000 && cfg.max_clients == 8, "limits");
	CHECK(cfg.nsessions == 4, "nsessions %u", cfg.nsessions);
	{
		const struct fr_config_session *db = &cfg.sessions[3];

		CHECK(db->npids == 2 && db->pids[0] == 7 && db->pids[1] == 9, "targets.pids");
		CHECK(db->ncomms == 1 && strcmp(db->comms[0], "postgres") == 0, "targets.comm");
		CHECK(strcmp(db->cgroup, "/system.slice/pg.service") == 0, "targets.cgroup");
		CHECK(db->nevents == 3 && db->events[0].event == FR_EVENT_OFFCPU &&
			      db->events[0].hz == 0,
		      "offcpu has no rate");
		CHECK(db->events[1].event == FR_EVENT_CYCLES && db->events[1].hz == 49, "cycles");
		CHECK(db->events[2].event == (FR_EVENT_RAW_BASE | 0x1a2) && db->events[2].hz == 99,
		      "raw event 0x%x", db->events[2].event);
	}
	CHECK(cfg.sessions[1].nevents == 1 && cfg.sessions[1].events[0].event == FR_EVENT_CPU &&
		      cfg.sessions[1].events[0].hz == 4999,
	      "session db events");
	CHECK(cfg.sessions[2].nevents == 1 && cfg.sessions[2].events[0].event == FR_EVENT_CPU &&
		      cfg.sessions[2].events[0].hz == 99,
	      "session without events gets cpu at 99 Hz");
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_CPU) == 4999, "max hz cpu %u",
	      fr_config_max_hz(&cfg, FR_EVENT_CPU));
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_CYCLES) == 49, "max hz cycles");
	CHECK(fr_config_max_hz(&cfg, FR_EVENT_BRANCH_MISSES) == 0, "max hz branch-misses");

	text = fr_config_to_json(&cfg);
	CHECK(text != NULL, "to_json");
	if (text) {
		ret = fr_config_parse(&back, text, strlen(text), "printed", err, sizeof(err));
		CHECK(ret == 0, "printed config does not parse: %s\n%s", err, text);
		CHECK(ret == 0 && cfg_equal(&cfg, &back), "round trip differs:\n%s", text);
		CHECK(strstr(text, "\"raw:0x1a2\"") && strstr(text, "\"/system.slice/pg.service\""),
		      "raw event or cgroup target not printed:\n%s", text);
		CHECK(strstr(text, "\"250ms\"") && strstr(text, "\"256KiB\""),
		      "sizes and durations not in their friendly form:\n%s", text);
		fr_config_fini(&back);
		free(text);
	}
	fr_config_fini(&cfg);

	/* "off", and a default hz that follows a lowered limit. */
	{
		const char *j = "{\"ring\":{\"sync\":\"off\"},\"limits\":{\"max_rate_hz\":50}}";

		ret = fr_config_parse(&cfg, j, strlen(j), SRC, err, sizeof(err));
		CHECK(ret == 0 && cfg.sync_ns < 0, "sync off: %s", err);
		CHECK(cfg.sessions[0].events[0].hz == 50, "implicit hz above the limit: %u",
		      cfg.sessions[0].events[0].hz);
		text = fr_config_to_json(&cfg);
		CHECK(text && strstr(text, "\"off\""), "sync off not printed");
		ret = text ? fr_config_parse(&back, text, strlen(text), "p", err, sizeof(err)) : -1;
		CHECK(ret == 0 && cfg_equal(&cfg, &back), "sync off round trip");
		fr_config_fini(&back);
		free(text);
		fr_config_fini(&cfg);
	}
}

static void test_load(void)
{
	char dir[] = "/tmp/fr-test-config-XXXXXX";
	char path[128], err[256], want[256];
	struct fr_config cfg;
	int fd, ret;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/flightrec.json", dir);

	ret = fr_config_load(&cfg, path, err, sizeof(err));
	snprintf(want, sizeof(want), "cannot open %s: %s", path, strerror(ENOENT));
	CHECK(ret == -ENOENT, "missing file: %d", ret);
	CHECK(strcmp(err, want) == 0, "missing file message: %s", err);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(write(fd, full_json, strlen(full_json)) == (ssize_t)strlen(full_json), "write");
	close(fd);
	ret = fr_config_load(&cfg, path, err, sizeof(err));
	CHECK(ret == 0 && cfg.nsessions == 4, "load: %d %s", ret, err);
	fr_config_fini(&cfg);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(write(fd, "{\"ring\": {\"sise\": 1}}", 21) == 21, "write");
	close(fd);
	ret = fr_config_load(&cfg, path, err, sizeof(err));
	snprintf(want, sizeof(want), "%s: ring.sise: unknown key (accepted: path, size, segment, sync, max_age)",
		 path);
	CHECK(ret == -EINVAL && strcmp(err, want) == 0, "load error: %s", err);

	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_default();
	test_errors();
	test_all_or_nothing();
	test_round_trip();
	test_load();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("config: all checks passed\n");
	return 0;
}
