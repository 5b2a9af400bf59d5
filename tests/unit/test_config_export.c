/* The configuration's "export" block: defaults, every member read and
 * printed back, and each refusal naming its JSON path. */
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/sample.h"

#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/config_check.h"

static void test_defaults(void)
{
	struct fr_config cfg;
	char *text = NULL;

	if (parse_ok(&cfg, "{}", NULL) == 0) {
		CHECK(!cfg.export.enabled, "export on without an export block");
		fr_config_fini(&cfg);
	}
	if (parse_ok(&cfg, "{\"export\":{\"clickhouse\":{\"url\":\"http://ch:8123\"}}}", &text) ==
	    0) {
		CHECK(cfg.export.enabled && strcmp(cfg.export.url, "http://ch:8123") == 0,
		      "url not read");
		CHECK(strcmp(cfg.export.database, "flightrec") == 0, "database default %s",
		      cfg.export.database);
		CHECK(cfg.export.batch_ns == 10 * FR_NS_PER_S && cfg.export.hz == 19,
		      "batch %lld hz %u", (long long)cfg.export.batch_ns, cfg.export.hz);
		CHECK(cfg.export.nevents == 2 && cfg.export.events[0] == FR_EVENT_CPU &&
			      cfg.export.events[1] == FR_EVENT_OFFCPU,
		      "default events");
		CHECK(!cfg.export.user && !cfg.export.password_file && !cfg.export.host,
		      "optional members set");
		CHECK(text && strstr(text, "\"export\"") && strstr(text, "\"10s\""),
		      "export not printed:\n%s", text ? text : "(null)");
		free(text);
		fr_config_fini(&cfg);
	}
}

static void test_full(void)
{
	struct fr_config cfg;

	if (parse_ok(&cfg,
		     "{\"export\":{\"clickhouse\":{\"url\":\"https://ch.example:8443\","
		     "\"database\":\"prof_1\",\"user\":\"rec\",\"password_file\":\"/etc/fr.pw\","
		     "\"batch\":\"1m\",\"events\":[\"page-faults\",\"cpu\"],\"hz\":99,"
		     "\"host\":\"web-7\",\"ca_file\":\"/etc/fr-ca.pem\"}}}",
		     NULL) == 0) {
		CHECK(strcmp(cfg.export.database, "prof_1") == 0 &&
			      strcmp(cfg.export.user, "rec") == 0 &&
			      strcmp(cfg.export.password_file, "/etc/fr.pw") == 0 &&
			      strcmp(cfg.export.host, "web-7") == 0 &&
			      strcmp(cfg.export.ca_file, "/etc/fr-ca.pem") == 0,
		      "strings not read");
		CHECK(cfg.export.batch_ns == 60000000000LL && cfg.export.hz == 99, "batch, hz");
		CHECK(cfg.export.nevents == 2 && cfg.export.events[1] == FR_EVENT_CPU, "events");
		fr_config_fini(&cfg);
	}
}

static void test_bad(void)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
		{"{\"export\":[]}",
		 "export: must be an object like {\"clickhouse\": {\"url\": \"http://HOST:8123\"}}, "
		 "got []"},
		{"{\"export\":{\"clickhouse\":{}}}",
		 "export.clickhouse.url: missing; name the server, like \"http://HOST:8123\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\"},\"kafka\":{}}}",
		 "export.kafka: unknown key (accepted: clickhouse)"},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"batch_size\":1}}}",
		 "export.clickhouse.batch_size: unknown key (accepted: url, database, user, "
		 "password_file, batch, events, hz, host, ca_file)"},
		{"{\"export\":{\"clickhouse\":{\"url\":\"ftp://a\"}}}",
		 "export.clickhouse.url: must be http://HOST:PORT or https://HOST:PORT with no "
		 "path, got \"ftp://a\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://u:p@a:8123\"}}}",
		 "export.clickhouse.url: must be http://HOST:PORT or https://HOST:PORT with no "
		 "path, got \"http://u:p@a:8123\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a/x?y\"}}}",
		 "export.clickhouse.url: must be http://HOST:PORT or https://HOST:PORT with no "
		 "path, got \"http://a/x?y\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"database\":\"a;b\"}}}",
		 "export.clickhouse.database: must be letters, digits and '_', not starting with "
		 "a digit, got \"a;b\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"password_file\":\"pw\"}}}",
		 "export.clickhouse.password_file: must be an absolute path, got \"pw\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"https://a\",\"ca_file\":\"ca.pem\"}}}",
		 "export.clickhouse.ca_file: must be an absolute path, got \"ca.pem\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"ca_file\":\"/ca.pem\"}}}",
		 "export.clickhouse.ca_file: is only used with an https:// url, got url \"http://a\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"batch\":\"7s\"}}}",
		 "export.clickhouse.batch: must be whole seconds dividing a day, at most 1h "
		 "(\"10s\", \"1m\"), got \"7s\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"batch\":\"500ms\"}}}",
		 "export.clickhouse.batch: must be a duration of at least 1s like \"10s\", got "
		 "\"500ms\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"events\":[]}}}",
		 "export.clickhouse.events: must be an array of 1 to 8 event names like [\"cpu\", "
		 "\"offcpu\"], got []"},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"events\":[\"cpu\",\"nope\"]}}}",
		 "export.clickhouse.events[1]: must be an event name like \"cpu\", got \"nope\""},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"events\":[\"cpu\",\"cpu\"]}}}",
		 "export.clickhouse.events[1]: names cpu a second time"},
		{"{\"export\":{\"clickhouse\":{\"url\":\"http://a\",\"hz\":0}}}", NULL},
	};
	struct fr_config cfg;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[512];
		int ret = fr_config_parse(&cfg, bad[i].json, strlen(bad[i].json), SRC, err,
					  sizeof(err));

		if (!bad[i].want) {
			CHECK(ret == -EINVAL && strstr(err, "export.clickhouse.hz") &&
				      is_empty(&cfg),
			      "%s: %d %s", bad[i].json, ret, err);
			continue;
		}
		snprintf(want, sizeof(want), SRC ": %s", bad[i].want);
		CHECK(ret == -EINVAL && strcmp(err, want) == 0 && is_empty(&cfg),
		      "%s: %d %s\n  want %s", bad[i].json, ret, err, want);
	}
}

int main(void)
{
	test_defaults();
	test_full();
	test_bad();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("config_export: all checks passed\n");
	return 0;
}
