/* The configuration's document, key by key: the top level, limits, ring,
 * socket and dumps (sessions are config/config_session.c's). The order of
 * the walk is the one config/config.c describes: what bounds a value is
 * read before the value.
 */
#include "config/config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "core/util/parse.h"
#include "core/store/sample.h"
#include "core/util/time.h"

/* A user's cap follows a lowered max_rate_hz rather than exceeding it. */
static void default_user_rate(struct fr_config *cfg)
{
	cfg->user_max_rate_hz = cfg->max_rate_hz < DEFAULT_USER_MAX_RATE_HZ
					? cfg->max_rate_hz
					: DEFAULT_USER_MAX_RATE_HZ;
}

/* limits.memory, then limits.query_memory, which it bounds. */
static int parse_memory(struct config_ctx *c, const cJSON *limits, struct fr_config *cfg)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(limits, "memory");
	char got[64], max[32];
	int ret;

	if (it) {
		ret = config_get_size(c, it, "limits.memory", &cfg->memory);
		if (ret < 0)
			return ret;
		if (cfg->memory < MIN_MEMORY)
			return config_fail(c, "limits.memory",
					   "must be at least 64MiB (the label table alone may "
					   "take 56MiB), got %s",
					   config_describe(it, got, sizeof(got)));
	}
	it = cJSON_GetObjectItemCaseSensitive(limits, "query_memory");
	if (!it)
		return 0;
	ret = config_get_size(c, it, "limits.query_memory", &cfg->query_memory);
	if (ret < 0)
		return ret;
	if (cfg->query_memory < MIN_QUERY_MEMORY)
		return config_fail(c, "limits.query_memory", "must be at least 1MiB, got %s",
				   config_describe(it, got, sizeof(got)));
	if (cfg->query_memory > cfg->memory)
		return config_fail(c, "limits.query_memory",
				   "must not exceed limits.memory (%s), of which it is a share; "
				   "got %s",
				   fr_format_size(cfg->memory, max, sizeof(max)),
				   config_describe(it, got, sizeof(got)));
	return 0;
}

/* "limits.unwind_table_memory": what the CFI tables stacks are unwound
 * with may take together (recorder/tracking/unwind_tables.h, shared fairly among
 * the users whose processes need them): a share of limits.memory, read
 * after it (3/8 of it when absent, recorder/ingest/memory.c). */
static int parse_unwind_table_memory(struct config_ctx *c, const cJSON *limits,
				     struct fr_config *cfg)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(limits, "unwind_table_memory");
	char got[64], max[32];
	int ret;

	if (!it)
		return 0;
	ret = config_get_size(c, it, "limits.unwind_table_memory", &cfg->unwind_table_memory);
	if (ret == 0 && cfg->unwind_table_memory < MIN_UNWIND_TABLE_MEMORY)
		return config_fail(c, "limits.unwind_table_memory", "must be at least 1MiB, got %s",
				   config_describe(it, got, sizeof(got)));
	if (ret == 0 && cfg->unwind_table_memory > cfg->memory)
		return config_fail(c, "limits.unwind_table_memory",
				   "must not exceed limits.memory (%s), of which it is a share; "
				   "got %s",
				   fr_format_size(cfg->memory, max, sizeof(max)),
				   config_describe(it, got, sizeof(got)));
	return ret;
}

static int parse_limits(struct config_ctx *c, const cJSON *limits, struct fr_config *cfg)
{
	static const char *const keys[] = {"max_rate_hz", "max_clients",  "user_max_rate_hz",
					   "memory",	  "query_memory", "unwind_table_memory"};
	const cJSON *it;
	int ret;

	if (!limits) {
		default_user_rate(cfg);
		return 0;
	}
	if (!cJSON_IsObject(limits)) {
		char got[64];

		return config_fail(c, "limits",
				   "must be an object like {\"max_rate_hz\": 10000}, got %s",
				   config_describe(limits, got, sizeof(got)));
	}
	ret = config_check_keys(c, limits, "limits", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	it = cJSON_GetObjectItemCaseSensitive(limits, "max_rate_hz");
	if (it) {
		ret = config_get_uint(c, it, "limits.max_rate_hz", 1, MAX_RATE_HZ_LIMIT,
				      &cfg->max_rate_hz);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(limits, "max_clients");
	if (it) {
		ret = config_get_uint(c, it, "limits.max_clients", 1, MAX_CLIENTS_LIMIT,
				      &cfg->max_clients);
		if (ret < 0)
			return ret;
	}
	ret = parse_memory(c, limits, cfg);
	if (ret == 0)
		ret = parse_unwind_table_memory(c, limits, cfg);
	if (ret < 0)
		return ret;
	/* After max_rate_hz, which bounds it: a user cannot be allowed more
	 * than root. */
	it = cJSON_GetObjectItemCaseSensitive(limits, "user_max_rate_hz");
	if (it)
		return config_get_uint(c, it, "limits.user_max_rate_hz", 1, cfg->max_rate_hz,
				       &cfg->user_max_rate_hz);
	default_user_rate(cfg);
	return 0;
}

/* "socket": a path, or {"path": PATH, "group": GROUP, "admin_group": GROUP}. */
static int parse_socket(struct config_ctx *c, const cJSON *sock, struct fr_config *cfg)
{
	static const char *const keys[] = {"path", "group", "admin_group"};
	const size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
	const cJSON *it;
	char got[64];
	int ret;

	if (!sock)
		return 0;
	if (cJSON_IsString(sock))
		return config_get_path(c, sock, "socket", max, &cfg->socket_path);
	if (!cJSON_IsObject(sock))
		return config_fail(c, "socket",
				   "must be a path string or an object like "
				   "{\"group\": \"flightrec\"}, got %s",
				   config_describe(sock, got, sizeof(got)));
	ret = config_check_keys(c, sock, "socket", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	it = cJSON_GetObjectItemCaseSensitive(sock, "path");
	if (it) {
		ret = config_get_path(c, it, "socket.path", max, &cfg->socket_path);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(sock, "group");
	if (it) {
		ret = config_get_id(c, it, "socket.group", 1, &cfg->socket_gid);
		if (ret < 0)
			return ret;
		cfg->has_socket_group = 1;
	}
	it = cJSON_GetObjectItemCaseSensitive(sock, "admin_group");
	if (it) {
		ret = config_get_id(c, it, "socket.admin_group", 1, &cfg->admin_gid);
		if (ret < 0)
			return ret;
		cfg->has_admin_group = 1;
	}
	return 0;
}

/* "ring.size" and "ring.segment": a segment fits twice in the ring. */
static int parse_ring_size(struct config_ctx *c, const cJSON *ring, struct fr_config *cfg)
{
	const cJSON *size, *segment;
	char got[64], a[32], b[32];
	int ret;

	size = cJSON_GetObjectItemCaseSensitive(ring, "size");
	if (size) {
		ret = config_get_size(c, size, "ring.size", &cfg->ring_size);
		if (ret < 0)
			return ret;
	}

	segment = cJSON_GetObjectItemCaseSensitive(ring, "segment");
	if (segment) {
		ret = config_get_size(c, segment, "ring.segment", &cfg->segment_size);
		if (ret < 0)
			return ret;
		if (cfg->segment_size < MIN_SEGMENT_SIZE)
			return config_fail(c, "ring.segment", "must be at least 64KiB, got %s",
					   config_describe(segment, got, sizeof(got)));
		if (cfg->segment_size % SEGMENT_ALIGN)
			return config_fail(c, "ring.segment", "must be a multiple of 4KiB, got %s",
					   config_describe(segment, got, sizeof(got)));
	}

	/* Blame the value the user wrote: the size if given, else the
	 * segment that does not fit twice into the default size. */
	if (cfg->segment_size > cfg->ring_size / 2) {
		fr_format_size(cfg->segment_size * 2, a, sizeof(a));
		fr_format_size(cfg->segment_size, b, sizeof(b));
		if (size)
			return config_fail(
				c, "ring.size",
				"must hold at least 2 segments (%s with a segment of %s), got %s",
				a, b, config_describe(size, got, sizeof(got)));
		fr_format_size(cfg->ring_size / 2, a, sizeof(a));
		return config_fail(c, "ring.segment",
				   "must be at most half of ring.size (%s), got %s", a,
				   config_describe(segment, got, sizeof(got)));
	}
	return 0;
}

static int parse_ring(struct config_ctx *c, const cJSON *ring, struct fr_config *cfg)
{
	static const char *const keys[] = {"path", "size", "segment", "sync", "max_age"};
	const cJSON *path, *sync, *max_age;
	char got[64];
	int ret;

	if (!ring)
		return 0;
	if (!cJSON_IsObject(ring))
		return config_fail(c, "ring",
				   "must be an object like {\"size\": \"256MiB\"}, got %s",
				   config_describe(ring, got, sizeof(got)));
	ret = config_check_keys(c, ring, "ring", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	path = cJSON_GetObjectItemCaseSensitive(ring, "path");
	if (path) {
		ret = config_get_path(c, path, "ring.path", 4095, &cfg->ring_path);
		if (ret < 0)
			return ret;
	}

	ret = parse_ring_size(c, ring, cfg);
	if (ret < 0)
		return ret;

	sync = cJSON_GetObjectItemCaseSensitive(ring, "sync");
	if (sync) {
		if (cJSON_IsString(sync) && strcmp(sync->valuestring, "off") == 0) {
			cfg->sync_ns = -1;
		} else if (!cJSON_IsString(sync) ||
			   fr_parse_duration(sync->valuestring, &cfg->sync_ns) < 0) {
			return config_fail(c, "ring.sync",
					   "must be a duration like \"1s\", or \"off\", got %s",
					   config_describe(sync, got, sizeof(got)));
		}
	}

	max_age = cJSON_GetObjectItemCaseSensitive(ring, "max_age");
	if (max_age) {
		if (!cJSON_IsString(max_age) ||
		    fr_parse_duration(max_age->valuestring, &cfg->max_age_ns) < 0 ||
		    cfg->max_age_ns < FR_NS_PER_S) {
			cfg->max_age_ns = 0;
			return config_fail(
				c, "ring.max_age",
				"must be a duration of at least 1s like \"7d\" or \"12h\", got %s",
				config_describe(max_age, got, sizeof(got)));
		}
	}
	return 0;
}

/* "mode": an octal string of read and write bits for dump files. The
 * owner always reads and writes (the recorder replaces nothing, but an
 * operator cleans up); nobody else writes, since a dump is evidence. A
 * JSON number is refused: 640 would be decimal, not the mode meant. */
static int get_file_mode(struct config_ctx *c, const cJSON *item, const char *path, uint32_t *out)
{
	const char *text = cJSON_IsString(item) ? item->valuestring : NULL;
	char got[64], *end = NULL;
	unsigned long v;

	if (text && text[0] >= '0' && text[0] <= '7' && strlen(text) <= 4) {
		v = strtoul(text, &end, 8);
		if (*end == '\0' && (v & ~0644ul) == 0 && (v & 0600) == 0600) {
			*out = (uint32_t)v;
			return 0;
		}
	}
	return config_fail(c, path,
			   "must be an octal string like \"0640\" with the owner's read and write "
			   "bits and at most read for group and others (0600..0644), got %s",
			   config_describe(item, got, sizeof(got)));
}

/* "dumps": {"dir": PATH, "keep": N, "max_bytes": SIZE, "mode": OCTAL}: where
 * the dumps of triggers go, how many of them are kept and who may read
 * them. */
static int parse_dumps(struct config_ctx *c, const cJSON *dumps, struct fr_config *cfg)
{
	static const char *const keys[] = {"dir", "keep", "max_bytes", "mode"};
	const cJSON *it;
	char got[64];
	int ret;

	if (!dumps)
		return 0;
	if (!cJSON_IsObject(dumps))
		return config_fail(c, "dumps", "must be an object like {\"keep\": 50}, got %s",
				   config_describe(dumps, got, sizeof(got)));
	ret = config_check_keys(c, dumps, "dumps", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	it = cJSON_GetObjectItemCaseSensitive(dumps, "dir");
	if (it) {
		ret = config_get_path(c, it, "dumps.dir", FR_CONFIG_PATH_MAX - 1, &cfg->dumps_dir);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(dumps, "keep");
	if (it) {
		ret = config_get_uint(c, it, "dumps.keep", 1, MAX_DUMPS_KEEP, &cfg->dumps_keep);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(dumps, "max_bytes");
	if (it) {
		ret = config_get_size(c, it, "dumps.max_bytes", &cfg->dumps_max_bytes);
		if (ret < 0)
			return ret;
		/* 0 stands for "no limit" inside; written out it would read
		 * as "keep nothing", so it is refused rather than guessed. */
		if (cfg->dumps_max_bytes == 0)
			return config_fail(
				c, "dumps.max_bytes",
				"must be more than 0 (leave it out for no byte limit), got %s",
				config_describe(it, got, sizeof(got)));
	}
	it = cJSON_GetObjectItemCaseSensitive(dumps, "mode");
	if (it) {
		ret = get_file_mode(c, it, "dumps.mode", &cfg->dumps_mode);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int config_parse_root(struct config_ctx *c, const cJSON *root, struct fr_config *cfg)
{
	static const char *const keys[] = {"ring",    "socket",	  "dumps", "limits",
					   "symbols", "sessions", "export"};
	const cJSON *sock;
	char got[64];
	int ret;

	if (!cJSON_IsObject(root))
		return config_fail(c, NULL, "the top level must be a JSON object, got %s",
				   config_describe(root, got, sizeof(got)));
	ret = config_check_keys(c, root, "", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	ret = parse_limits(c, cJSON_GetObjectItemCaseSensitive(root, "limits"), cfg);
	if (ret < 0)
		return ret;
	ret = parse_ring(c, cJSON_GetObjectItemCaseSensitive(root, "ring"), cfg);
	if (ret < 0)
		return ret;
	sock = cJSON_GetObjectItemCaseSensitive(root, "socket");
	ret = parse_socket(c, sock, cfg);
	if (ret < 0)
		return ret;
	ret = parse_dumps(c, cJSON_GetObjectItemCaseSensitive(root, "dumps"), cfg);
	if (ret < 0)
		return ret;
	ret = config_parse_symbols(c, cJSON_GetObjectItemCaseSensitive(root, "symbols"), cfg);
	if (ret < 0)
		return ret;
	ret = config_parse_export(c, cJSON_GetObjectItemCaseSensitive(root, "export"), cfg);
	if (ret < 0)
		return ret;
	return config_parse_sessions(c, cJSON_GetObjectItemCaseSensitive(root, "sessions"), cfg);
}
