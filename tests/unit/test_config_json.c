/* Config printing and files: every accepted form of dumps and how it
 * prints, a full config that round-trips through fr_config_to_json, and
 * loading from a file. */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/sample.h"

#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/config_check.h"

static void test_dumps(void)
{
	struct fr_config cfg;
	char err[256], *text = NULL;
	int ret;

	if (parse_ok(&cfg, "{\"dumps\":{}}", &text) == 0) {
		CHECK(cfg.dumps_dir == NULL && cfg.dumps_keep == 50 && cfg.dumps_max_bytes == 0 &&
			      cfg.dumps_mode == 0600,
		      "empty dumps object: dir %s keep %u max_bytes %llu",
		      cfg.dumps_dir ? cfg.dumps_dir : "(null)", cfg.dumps_keep,
		      (unsigned long long)cfg.dumps_max_bytes);
		/* Defaults print as such: no dir, no byte limit. */
		CHECK(text && strstr(text, "\"keep\":\t50") && !strstr(text, "\"dir\"") &&
			      !strstr(text, "\"max_bytes\"") && !strstr(text, "\"mode\""),
		      "default dumps printed as:\n%s", text ? text : "(null)");
		free(text);
		text = NULL;
		fr_config_fini(&cfg);
	}
	if (parse_ok(&cfg, "{\"dumps\":{\"dir\":\"/srv/dumps\",\"keep\":1,\"max_bytes\":\"1B\"}}",
		     NULL) == 0) {
		CHECK(cfg.dumps_dir && strcmp(cfg.dumps_dir, "/srv/dumps") == 0, "dumps dir");
		CHECK(cfg.dumps_keep == 1 && cfg.dumps_max_bytes == 1, "keep 1, max_bytes 1B");
		fr_config_fini(&cfg);
	}
	if (parse_ok(&cfg, "{\"dumps\":{\"keep\":100000,\"max_bytes\":\"2GiB\"}}", &text) == 0) {
		CHECK(cfg.dumps_keep == 100000 && cfg.dumps_max_bytes == 2ull << 30,
		      "keep 100000, max_bytes 2GiB");
		CHECK(text && strstr(text, "\"2GiB\""), "max_bytes not printed:\n%s",
		      text ? text : "(null)");
		free(text);
		text = NULL;
		fr_config_fini(&cfg);
	}
	/* dumps.mode: octal, printed back only when not the default. */
	if (parse_ok(&cfg, "{\"dumps\":{\"mode\":\"0640\"}}", &text) == 0) {
		CHECK(cfg.dumps_mode == 0640, "mode 0640 read as %o", cfg.dumps_mode);
		CHECK(text && strstr(text, "\"0640\""), "mode not printed:\n%s",
		      text ? text : "(null)");
		free(text);
		text = NULL;
		fr_config_fini(&cfg);
	}
	if (parse_ok(&cfg, "{\"dumps\":{\"mode\":\"644\"}}", NULL) == 0) {
		CHECK(cfg.dumps_mode == 0644, "mode 644 read as %o", cfg.dumps_mode);
		fr_config_fini(&cfg);
	}
	/* A relative directory is taken as written (like ring.path). */
	if (parse_ok(&cfg, "{\"dumps\":{\"dir\":\"dumps\",\"max_bytes\":\"1000001\"}}", NULL) ==
	    0) {
		CHECK(cfg.dumps_dir && strcmp(cfg.dumps_dir, "dumps") == 0 &&
			      cfg.dumps_max_bytes == 1000001,
		      "relative dir, odd byte count");
		fr_config_fini(&cfg);
	}

	/* The directory is at most FR_CONFIG_PATH_MAX - 1 bytes. */
	{
		static char buf[FR_CONFIG_PATH_MAX + 64], dir[FR_CONFIG_PATH_MAX + 1];
		size_t n = sizeof(buf);

		memset(dir, 'd', FR_CONFIG_PATH_MAX);
		dir[0] = '/';
		dir[FR_CONFIG_PATH_MAX] = '\0';
		snprintf(buf, n, "{\"dumps\":{\"dir\":\"%s\"}}", dir);
		ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
		CHECK(ret == -EINVAL &&
			      strcmp(err,
				     SRC ": dumps.dir: must be at most 4095 bytes long, got 4096 "
					 "bytes") == 0,
		      "4096-byte dumps dir: %s", err);
		CHECK(is_empty(&cfg), "long dumps dir left state behind");
		dir[FR_CONFIG_PATH_MAX - 1] = '\0';
		snprintf(buf, n, "{\"dumps\":{\"dir\":\"%s\"}}", dir);
		ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
		CHECK(ret == 0 && cfg.dumps_dir && strcmp(cfg.dumps_dir, dir) == 0,
		      "4095-byte dumps dir: %s", err);
		fr_config_fini(&cfg);
	}

	/* A dumps dir already copied is released when a session fails. */
	{
		const char *j = "{\"dumps\":{\"dir\":\"/srv/d\"},\"sessions\":[{\"name\":\"a\","
				"\"triggers\":[{\"on\":\"signal\",\"signal\":\"TERM\"}]}]}";

		ret = fr_config_parse(&cfg, j, strlen(j), SRC, err, sizeof(err));
		CHECK(ret == -EINVAL && is_empty(&cfg), "late trigger error left state: %d", ret);
	}
}

static const char full_json[] =
	"{\n"
	"  \"ring\": {\"path\": \"/var/lib/flightrec/ring\", \"size\": \"300000000B\",\n"
	"           \"segment\": \"256KiB\", \"sync\": \"250ms\", \"max_age\": \"7d\"},\n"
	"  \"socket\": \"/run/flightrec/test.sock\",\n"
	"  \"dumps\": {\"dir\": \"/var/lib/flightrec/dumps\", \"keep\": 20, \"max_bytes\": \"1GiB\"},\n"
	"  \"limits\": {\"max_rate_hz\": 5000, \"max_clients\": 8},\n"
	"  \"sessions\": [\n"
	"    {\"name\": \"always\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}],\n"
	"     \"triggers\": [{\"on\": \"signal\", \"signal\": \"USR1\", \"window\": \"2m\"},\n"
	"                  {\"on\": \"signal\", \"signal\": \"SIGRTMIN+3\", \"cooldown\": \"1500ms\"},\n"
	"                  {\"on\": \"cpu_above\", \"percent\": 90, \"for\": \"10s\",\n"
	"                   \"window\": \"5m\", \"after\": \"30s\", \"cooldown\": \"15m\"}]},\n"
	"    {\"name\": \"db.main-2_x\", \"events\": [{\"event\": \"cpu\", \"hz\": 4999}]},\n"
	"    {\"name\": \"implicit\"},\n"
	"    {\"name\": \"db\", \"targets\": {\"pids\": [7, 9], \"comm\": [\"postgres\"],\n"
	"     \"cgroup\": \"/system.slice/pg.service\"}, \"events\": [{\"event\": \"offcpu\"},\n"
	"     {\"event\": \"cycles\", \"hz\": 49}, {\"event\": \"raw:0x1a2\"}],\n"
	"     \"triggers\": [{\"on\": \"exit\", \"window\": \"60s\"},\n"
	"                  {\"on\": \"signal\", \"signal\": \"usr1\", \"after\": \"1ns\"}]}\n"
	"  ]\n"
	"}\n";

/* The triggers of full_json's sessions, as written and defaulted. */
static void check_full_triggers(const struct fr_config *cfg)
{
	const struct fr_config_session *a = &cfg->sessions[0];
	const struct fr_config_trigger *t = a->triggers;

	CHECK(a->ntriggers == 3, "session always has %u triggers", a->ntriggers);
	CHECK(t[0].kind == FR_TRIGGER_SIGNAL && t[0].signal == SIGUSR1 &&
		      t[0].window_ns == 120000000000ll && t[0].after_ns == 0 &&
		      t[0].cooldown_ns == 60000000000ll,
	      "USR1 trigger");
	CHECK(t[1].kind == FR_TRIGGER_SIGNAL && t[1].signal == SIGRTMIN + 3 &&
		      t[1].cooldown_ns == 1500000000ll && t[1].window_ns == 60000000000ll,
	      "SIGRTMIN+3 trigger");
	CHECK(t[2].kind == FR_TRIGGER_CPU_ABOVE && t[2].percent == 90 &&
		      t[2].for_ns == 10 * FR_NS_PER_S && t[2].window_ns == 300000000000ll &&
		      t[2].after_ns == 30000000000ll && t[2].cooldown_ns == 900000000000ll,
	      "cpu_above trigger");
	CHECK(cfg->sessions[1].ntriggers == 0 && cfg->sessions[2].ntriggers == 0,
	      "sessions without triggers");
	t = cfg->sessions[3].triggers;
	CHECK(cfg->sessions[3].ntriggers == 2 && t[0].kind == FR_TRIGGER_EXIT &&
		      t[0].window_ns == 60000000000ll && t[1].signal == SIGUSR1 &&
		      t[1].after_ns == 1,
	      "session db triggers");
}

/* The targets and events of full_json's sessions, and the highest rate
 * of each event across them. */
static void check_full_targets_events(const struct fr_config *cfg)
{
	const struct fr_config_session *db = &cfg->sessions[3];

	CHECK(db->targets.npids == 2 && db->targets.pids[0] == 7 && db->targets.pids[1] == 9,
	      "targets.pids");
	CHECK(db->targets.ncomms == 1 && strcmp(db->targets.comms[0], "postgres") == 0,
	      "targets.comm");
	CHECK(strcmp(db->targets.cgroup, "/system.slice/pg.service") == 0, "targets.cgroup");
	CHECK(db->nevents == 3 && db->events[0].event == FR_EVENT_OFFCPU && db->events[0].hz == 0,
	      "offcpu has no rate");
	CHECK(db->events[1].event == FR_EVENT_CYCLES && db->events[1].hz == 49, "cycles");
	CHECK(db->events[2].event == (FR_EVENT_RAW_BASE | 0x1a2) && db->events[2].hz == 99,
	      "raw event 0x%x", db->events[2].event);
	CHECK(cfg->sessions[1].nevents == 1 && cfg->sessions[1].events[0].event == FR_EVENT_CPU &&
		      cfg->sessions[1].events[0].hz == 4999,
	      "session db events");
	CHECK(cfg->sessions[2].nevents == 1 && cfg->sessions[2].events[0].event == FR_EVENT_CPU &&
		      cfg->sessions[2].events[0].hz == 99,
	      "session without events gets cpu at 99 Hz");
	CHECK(fr_config_max_hz(cfg, FR_EVENT_CPU) == 4999, "max hz cpu %u",
	      fr_config_max_hz(cfg, FR_EVENT_CPU));
	CHECK(fr_config_max_hz(cfg, FR_EVENT_CYCLES) == 49, "max hz cycles");
	CHECK(fr_config_max_hz(cfg, FR_EVENT_BRANCH_MISSES) == 0, "max hz branch-misses");
}

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
	CHECK(cfg.max_age_ns == 7 * 86400 * FR_NS_PER_S, "max_age %lld", (long long)cfg.max_age_ns);
	CHECK(cfg.socket_path && strcmp(cfg.socket_path, "/run/flightrec/test.sock") == 0,
	      "socket");
	CHECK(cfg.max_rate_hz == 5000 && cfg.max_clients == 8, "limits");
	CHECK(cfg.dumps_dir && strcmp(cfg.dumps_dir, "/var/lib/flightrec/dumps") == 0, "dumps dir");
	CHECK(cfg.dumps_keep == 20 && cfg.dumps_max_bytes == 1ull << 30, "dumps keep, max_bytes");
	CHECK(cfg.nsessions == 4, "nsessions %u", cfg.nsessions);
	check_full_triggers(&cfg);
	check_full_targets_events(&cfg);

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
		CHECK(strstr(text, "\"/var/lib/flightrec/dumps\"") && strstr(text, "\"1GiB\"") &&
			      strstr(text, "\"keep\":\t20"),
		      "dumps not printed:\n%s", text);
		CHECK(strstr(text, "\"SIGUSR1\"") && strstr(text, "\"SIGRTMIN+3\"") &&
			      strstr(text, "\"1.5s\"") && strstr(text, "\"15m\"") &&
			      strstr(text, "\"1ns\"") && strstr(text, "\"exit\""),
		      "triggers not printed:\n%s", text);
		fr_config_fini(&back);
		free(text);
	}
	fr_config_fini(&cfg);
}

/* "off", and a default hz that follows a lowered limit. */
static void test_sync_off_round_trip(void)
{
	const char *j = "{\"ring\":{\"sync\":\"off\"},\"limits\":{\"max_rate_hz\":50}}";
	struct fr_config cfg, back;
	char err[256];
	char *text;
	int ret;

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
	snprintf(want, sizeof(want),
		 "%s: ring.sise: unknown key (accepted: path, size, segment, sync, max_age)", path);
	CHECK(ret == -EINVAL && strcmp(err, want) == 0, "load error: %s", err);

	unlink(path);
	rmdir(dir);
}

/* "symbols": defaults, every key, the round trip and each refusal with
 * its JSON path. */
static void test_symbols(void)
{
	struct fr_config cfg;
	char err[512], *text = NULL;
	int ret;

	if (parse_ok(&cfg, "{}", &text) == 0) {
		CHECK(cfg.symbols.ndebug_dirs == 1 &&
			      strcmp(cfg.symbols.debug_dirs[0], "/usr/lib/debug") == 0 &&
			      !cfg.symbols.cache_dir && cfg.symbols.cache_size == 1ull << 30 &&
			      cfg.symbols.cache_file_max == 256ull << 20,
		      "symbols defaults");
		CHECK(text && strstr(text, "\"/usr/lib/debug\"") && strstr(text, "\"1GiB\""),
		      "default symbols printed as:\n%s", text ? text : "(null)");
		free(text);
		text = NULL;
		fr_config_fini(&cfg);
	}
	if (parse_ok(&cfg,
		     "{\"symbols\":{\"debug_dirs\":[\"/opt/debug\",\"/usr/lib/debug\"],"
		     "\"cache_dir\":\"/var/cache/fr\",\"cache_size\":\"10MiB\","
		     "\"cache_file_max\":\"1MiB\"}}",
		     NULL) == 0) {
		CHECK(cfg.symbols.ndebug_dirs == 2 &&
			      strcmp(cfg.symbols.debug_dirs[0], "/opt/debug") == 0 &&
			      strcmp(cfg.symbols.debug_dirs[1], "/usr/lib/debug") == 0,
		      "debug_dirs in order");
		CHECK(cfg.symbols.cache_dir &&
			      strcmp(cfg.symbols.cache_dir, "/var/cache/fr") == 0 &&
			      cfg.symbols.cache_size == 10ull << 20 &&
			      cfg.symbols.cache_file_max == 1ull << 20,
		      "cache keys");
		fr_config_fini(&cfg);
	}
	/* No debug directory at all, and no cache. */
	if (parse_ok(&cfg, "{\"symbols\":{\"debug_dirs\":[],\"cache_size\":\"0B\"}}", NULL) == 0) {
		CHECK(cfg.symbols.ndebug_dirs == 0 && cfg.symbols.cache_size == 0, "empty dirs");
		fr_config_fini(&cfg);
	}
	static const struct {
		const char *json, *want;
	} bad[] = {
		{"{\"symbols\":[]}",
		 "symbols: must be an object like {\"cache_size\": \"1GiB\"}, got []"},
		{"{\"symbols\":{\"debug_dir\":[]}}",
		 "symbols.debug_dir: unknown key (accepted: debug_dirs, cache_dir, cache_size, "
		 "cache_file_max)"},
		{"{\"symbols\":{\"debug_dirs\":\"/usr/lib/debug\"}}",
		 "symbols.debug_dirs: must be an array of paths like [\"/usr/lib/debug\"], got "
		 "\"/usr/lib/debug\""},
		{"{\"symbols\":{\"debug_dirs\":[\"/a\",\"debug\"]}}",
		 "symbols.debug_dirs[1]: must be an absolute path, got \"debug\""},
		{"{\"symbols\":{\"debug_dirs\":[\"/1\",\"/2\",\"/3\",\"/4\",\"/5\",\"/6\",\"/7\",\"/8\","
		 "\"/9\"]}}",
		 "symbols.debug_dirs: must list at most 8 directories, got 9"},
		{"{\"symbols\":{\"cache_dir\":\"\"}}",
		 "symbols.cache_dir: must be a non-empty path string, got \"\""},
		{"{\"symbols\":{\"cache_size\":5}}",
		 "symbols.cache_size: must be a size string like \"256MiB\", got 5"},
		{"{\"symbols\":{\"cache_file_max\":\"2GiB\"}}",
		 "symbols.cache_file_max: must be 4KiB..1GiB (the largest ELF file read), got "
		 "\"2GiB\""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[512];

		ret = fr_config_parse(&cfg, bad[i].json, strlen(bad[i].json), SRC, err,
				      sizeof(err));
		snprintf(want, sizeof(want), SRC ": %s", bad[i].want);
		CHECK(ret == -EINVAL && strcmp(err, want) == 0 && is_empty(&cfg),
		      "%s: %d %s\n  want %s", bad[i].json, ret, err, want);
	}
}

int main(void)
{
	test_dumps();
	test_symbols();
	test_round_trip();
	test_sync_off_round_trip();
	test_load();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("config_json: all checks passed\n");
	return 0;
}
