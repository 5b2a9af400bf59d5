/* The configuration's "export" object: the ClickHouse exporter's server,
 * credentials, batch interval, events and rate (docs/config.md,
 * docs/clickhouse.md). Read, checked and printed back here, so the key
 * has one owner in config/.
 */
#include "config/config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clickhouse/ch_schema.h"
#include "core/store/sample.h"
#include "core/util/parse.h"
#include "core/util/time.h"

#define EXPORT_BATCH_DEFAULT_NS (10 * FR_NS_PER_S)
#define EXPORT_BATCH_MAX_NS (3600 * FR_NS_PER_S)
#define EXPORT_HZ_DEFAULT 19
#define EXPORT_HOST_MAX 255
#define EXPORT_URL_MAX 1024

void config_export_fini(struct fr_config *cfg)
{
	struct fr_config_export *e = &cfg->export;

	free(e->url);
	free(e->database);
	free(e->user);
	free(e->password_file);
	free(e->ca_file);
	free(e->host);
	memset(e, 0, sizeof(*e));
}

/* "http://" or "https://", a host, an optional port, nothing after: the
 * exporter appends its own path and query. */
static int check_url(struct config_ctx *c, const char *url)
{
	const char *p = strncmp(url, "http://", 7) == 0	   ? url + 7
			: strncmp(url, "https://", 8) == 0 ? url + 8
							   : NULL;

	if (!p || !*p || strpbrk(p, "/?#@ \t\r\n"))
		return config_fail(c, "export.clickhouse.url",
				   "must be http://HOST:PORT or https://HOST:PORT with no path, "
				   "got \"%s\"",
				   url);
	return 0;
}

static int parse_events(struct config_ctx *c, const cJSON *evs, struct fr_config_export *e)
{
	char path[PATH_MAX_LEN], got[64];
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(evs) || cJSON_GetArraySize(evs) < 1 ||
	    cJSON_GetArraySize(evs) > FR_LIMIT_EVENTS)
		return config_fail(c, "export.clickhouse.events",
				   "must be an array of 1 to %d event names like [\"cpu\", "
				   "\"offcpu\"], got %s",
				   FR_LIMIT_EVENTS, config_describe(evs, got, sizeof(got)));
	e->nevents = 0;
	cJSON_ArrayForEach(it, evs) {
		int64_t id = cJSON_IsString(it) ? fr_event_lookup(it->valuestring) : -ENOENT;

		config_join_index(path, "export.clickhouse.events", i++);
		if (id < 0)
			return config_fail(c, path, "must be an event name like \"cpu\", got %s",
					   config_describe(it, got, sizeof(got)));
		for (uint32_t k = 0; k < e->nevents; k++)
			if (e->events[k] == (uint32_t)id)
				return config_fail(c, path, "names %s a second time",
						   it->valuestring);
		e->events[e->nevents++] = (uint32_t)id;
	}
	return 0;
}

/* A string member `key` of the clickhouse object, strdup'ed, if present. */
static int get_str(struct config_ctx *c, const cJSON *ch, const char *key, size_t max, char **out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(ch, key);
	char path[PATH_MAX_LEN];

	if (!it)
		return 0;
	config_join(path, "export.clickhouse", key);
	return config_get_path(c, it, path, max, out);
}

static int parse_numbers(struct config_ctx *c, const cJSON *ch, struct fr_config_export *e)
{
	const cJSON *it;
	char got[64];
	int ret;

	it = cJSON_GetObjectItemCaseSensitive(ch, "batch");
	if (it) {
		ret = config_get_duration(c, it, "export.clickhouse.batch", FR_NS_PER_S, "\"10s\"",
					  &e->batch_ns);
		if (ret < 0)
			return ret;
		/* Whole seconds dividing a day: batches stay on one grid
		 * whatever the recorder's start, and never straddle a day. */
		if (e->batch_ns > EXPORT_BATCH_MAX_NS || e->batch_ns % FR_NS_PER_S ||
		    (86400 * FR_NS_PER_S) % e->batch_ns)
			return config_fail(c, "export.clickhouse.batch",
					   "must be whole seconds dividing a day, at most 1h "
					   "(\"10s\", \"1m\"), got %s",
					   config_describe(it, got, sizeof(got)));
	}
	it = cJSON_GetObjectItemCaseSensitive(ch, "hz");
	if (it) {
		ret = config_get_uint(c, it, "export.clickhouse.hz", 1, 10000, &e->hz);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(ch, "events");
	return it ? parse_events(c, it, e) : 0;
}

int config_parse_export(struct config_ctx *c, const cJSON *exp, struct fr_config *cfg)
{
	static const char *const keys[] = {"clickhouse"};
	static const char *const ch_keys[] = {"url",	"database", "user", "password_file",
					      "batch",	"events",   "hz",   "host",
					      "ca_file"};
	struct fr_config_export *e = &cfg->export;
	const cJSON *ch;
	char got[64];
	int ret;

	config_export_fini(cfg);
	if (!exp)
		return 0;
	if (!cJSON_IsObject(exp) ||
	    !cJSON_IsObject(ch = cJSON_GetObjectItemCaseSensitive(exp, "clickhouse")))
		return config_fail(c, "export",
				   "must be an object like {\"clickhouse\": {\"url\": "
				   "\"http://HOST:8123\"}}, got %s",
				   config_describe(exp, got, sizeof(got)));
	ret = config_check_keys(c, exp, "export", keys, ARRAY_SIZE(keys));
	if (ret == 0)
		ret = config_check_keys(c, ch, "export.clickhouse", ch_keys, ARRAY_SIZE(ch_keys));
	if (ret < 0)
		return ret;
	e->enabled = 1;
	e->batch_ns = EXPORT_BATCH_DEFAULT_NS;
	e->hz = EXPORT_HZ_DEFAULT;
	e->events[0] = FR_EVENT_CPU;
	e->events[1] = FR_EVENT_OFFCPU;
	e->nevents = 2;
	if (!cJSON_GetObjectItemCaseSensitive(ch, "url"))
		return config_fail(c, "export.clickhouse.url",
				   "missing; name the server, like \"http://HOST:8123\"");
	if ((ret = get_str(c, ch, "url", EXPORT_URL_MAX, &e->url)) < 0 ||
	    (ret = check_url(c, e->url)) < 0 ||
	    (ret = get_str(c, ch, "database", FR_CH_NAME_MAX, &e->database)) < 0 ||
	    (ret = get_str(c, ch, "user", 256, &e->user)) < 0 ||
	    (ret = get_str(c, ch, "password_file", FR_CONFIG_PATH_MAX - 1, &e->password_file)) <
		    0 ||
	    (ret = get_str(c, ch, "host", EXPORT_HOST_MAX, &e->host)) < 0 ||
	    (ret = get_str(c, ch, "ca_file", FR_CONFIG_PATH_MAX - 1, &e->ca_file)) < 0)
		return ret;
	if (e->database && !fr_ch_name_ok(e->database))
		return config_fail(c, "export.clickhouse.database",
				   "must be letters, digits and '_', not starting with a digit, "
				   "got \"%s\"",
				   e->database);
	if (!e->database && !(e->database = strdup("flightrec")))
		return -ENOMEM;
	if (e->password_file && e->password_file[0] != '/')
		return config_fail(c, "export.clickhouse.password_file",
				   "must be an absolute path, got \"%s\"", e->password_file);
	if (e->ca_file && e->ca_file[0] != '/')
		return config_fail(c, "export.clickhouse.ca_file",
				   "must be an absolute path, got \"%s\"", e->ca_file);
	/* A CA for plain HTTP would be silently unused: say so instead. */
	if (e->ca_file && strncmp(e->url, "https://", 8) != 0)
		return config_fail(c, "export.clickhouse.ca_file",
				   "is only used with an https:// url, got url \"%s\"", e->url);
	return parse_numbers(c, ch, e);
}

bool config_export_json(cJSON *root, const struct fr_config *cfg)
{
	const struct fr_config_export *e = &cfg->export;
	cJSON *o, *ch, *evs;
	char buf[64];

	if (!e->enabled)
		return true;
	o = cJSON_AddObjectToObject(root, "export");
	ch = o ? cJSON_AddObjectToObject(o, "clickhouse") : NULL;
	if (!ch || !cJSON_AddStringToObject(ch, "url", e->url) ||
	    !cJSON_AddStringToObject(ch, "database", e->database) ||
	    (e->user && !cJSON_AddStringToObject(ch, "user", e->user)) ||
	    (e->password_file && !cJSON_AddStringToObject(ch, "password_file", e->password_file)) ||
	    (e->ca_file && !cJSON_AddStringToObject(ch, "ca_file", e->ca_file)) ||
	    (e->host && !cJSON_AddStringToObject(ch, "host", e->host)) ||
	    !cJSON_AddStringToObject(ch, "batch",
				     fr_format_duration(e->batch_ns, buf, sizeof(buf))) ||
	    !cJSON_AddNumberToObject(ch, "hz", e->hz) ||
	    !(evs = cJSON_AddArrayToObject(ch, "events")))
		return false;
	for (uint32_t i = 0; i < e->nevents; i++) {
		cJSON *s = cJSON_CreateString(fr_event_format(e->events[i], buf, sizeof(buf)));

		if (!s || !cJSON_AddItemToArray(evs, s)) {
			cJSON_Delete(s);
			return false;
		}
	}
	return true;
}
