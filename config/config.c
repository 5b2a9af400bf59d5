/* The flightrecd configuration: the embedded default, parsing and strict
 * validation of a JSON file, and printing of the effective result.
 *
 * Validation walks the document once, in a fixed order (top-level keys,
 * limits, ring, socket, dumps, sessions; in a session its name, targets,
 * triggers, events), and stops at the first problem, which it reports as
 * "SOURCE: JSON.PATH: what is wrong, what is accepted". The limits come
 * first because they bound other values (an event's hz); targets come
 * before triggers because an exit trigger needs them. A
 * key that is absent takes its default; a key that is present must be
 * right, and a key nobody knows is an error, so a typo never silently
 * falls back to a default. The result is all or nothing: on any error the
 * struct is left empty.
 */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <pwd.h>

#include <cjson/cJSON.h>

#include "core/parse.h"
#include "core/sample.h"

/* What an absent key means. fr_config_default_json spells out the same
 * values; the unit test checks that parsing "{}" and the default agree. */
#define DEFAULT_RING_SIZE (256ull << 20)
#define DEFAULT_SEGMENT_SIZE (1ull << 20)
#define DEFAULT_SYNC_NS 1000000000ll
#define DEFAULT_MAX_RATE_HZ 10000
#define DEFAULT_MAX_CLIENTS 64
#define DEFAULT_USER_MAX_RATE_HZ 99
#define DEFAULT_QUERY_MEMORY (256ull << 20)
#define MIN_QUERY_MEMORY (1ull << 20)
#define DEFAULT_SESSION "default"
#define DEFAULT_HZ 99
#define DEFAULT_DUMPS_KEEP 50
#define DEFAULT_DUMPS_MODE 0600
#define NS_PER_S 1000000000ll
#define DEFAULT_TRIGGER_WINDOW_NS (60 * NS_PER_S)
#define DEFAULT_TRIGGER_COOLDOWN_NS (60 * NS_PER_S)
#define DEFAULT_TRIGGER_FOR_NS (10 * NS_PER_S)

#define MAX_RATE_HZ_LIMIT 100000
#define MAX_CLIENTS_LIMIT 1024
#define MIN_SEGMENT_SIZE (64ull << 10)
#define SEGMENT_ALIGN 4096ull
#define MAX_DUMPS_KEEP 100000
/* A trigger's window plus its tail: what one dump may span. */
#define MAX_TRIGGER_SPAN_NS (3600 * NS_PER_S)

/* Config files are small; this bounds what a mistaken path (a log file, a
 * device) can make the daemon read. */
#define MAX_CONFIG_BYTES (1u << 20)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char fr_config_default_json[] =
	"{\n"
	"\t\"ring\": {\"size\": \"256MiB\", \"segment\": \"1MiB\", \"sync\": \"1s\"},\n"
	"\t\"limits\": {\"max_rate_hz\": 10000, \"max_clients\": 64, \"query_memory\": \"256MiB\"},\n"
	"\t\"sessions\": [\n"
	"\t\t{\"name\": \"default\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}]}\n"
	"\t]\n"
	"}\n";

struct ctx {
	const char *source;
	char *err;
	size_t errlen;
};

/* Path of a JSON value, "sessions[1].events[0].hz". Long enough for any
 * path this schema has plus a user's (truncated) unknown key. */
#define PATH_MAX_LEN 192

static int fail(struct ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!c->err || c->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->source && path && path[0])
		snprintf(c->err, c->errlen, "%s: %s: %s", c->source, path, msg);
	else if (c->source)
		snprintf(c->err, c->errlen, "%s: %s", c->source, msg);
	else if (path && path[0])
		snprintf(c->err, c->errlen, "%s: %s", path, msg);
	else
		snprintf(c->err, c->errlen, "%s", msg);
	return -EINVAL;
}

/* Appends at most `max` bytes of `s` to the path in `out`, never past
 * PATH_MAX_LEN. Paths of this schema are far shorter; only a user's absurd
 * key could be cut, and a cut path still points at the right place. */
static void append(char *out, const char *s, size_t max)
{
	size_t pos = strlen(out);

	while (*s && max-- && pos + 1 < PATH_MAX_LEN)
		out[pos++] = *s++;
	out[pos] = '\0';
}

static void join(char *out, const char *parent, const char *key)
{
	out[0] = '\0';
	append(out, parent, PATH_MAX_LEN);
	if (parent[0])
		append(out, ".", 1);
	append(out, key, 64);
}

static void join_index(char *out, const char *parent, int i)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "[%d]", i);
	out[0] = '\0';
	append(out, parent, PATH_MAX_LEN);
	append(out, idx, sizeof(idx));
}

/* Renders a value for "got ..." in messages: its JSON text, shortened. */
static const char *describe(const cJSON *item, char *buf, size_t len)
{
	char *text = cJSON_PrintUnformatted(item);

	if (!text) {
		snprintf(buf, len, "(unprintable value)");
		return buf;
	}
	if (strlen(text) > 48)
		snprintf(buf, len, "%.45s...", text);
	else
		snprintf(buf, len, "%s", text);
	cJSON_free(text);
	return buf;
}

/* Rejects keys outside `accepted` and keys given twice, so that every
 * later lookup by name sees the one value the user wrote. */
static int check_keys(struct ctx *c, const cJSON *obj, const char *path,
		      const char *const *accepted, size_t naccepted)
{
	char list[256] = "";
	char sub[PATH_MAX_LEN];
	const cJSON *it, *prev;

	for (size_t i = 0; i < naccepted; i++) {
		if (i)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, accepted[i], sizeof(list) - strlen(list) - 1);
	}

	cJSON_ArrayForEach(it, obj) {
		bool known = false;

		join(sub, path, it->string);
		for (size_t i = 0; i < naccepted; i++)
			if (strcmp(it->string, accepted[i]) == 0)
				known = true;
		if (!known)
			return fail(c, sub, "unknown key (accepted: %s)", list);
		for (prev = obj->child; prev != it; prev = prev->next)
			if (strcmp(prev->string, it->string) == 0)
				return fail(c, sub, "given twice");
	}
	return 0;
}

static int get_uint(struct ctx *c, const cJSON *item, const char *path, uint32_t min,
		    uint32_t max, uint32_t *out)
{
	char got[64];
	double d;

	if (!cJSON_IsNumber(item))
		return fail(c, path, "must be an integer %" PRIu32 "..%" PRIu32 ", got %s", min, max,
			    describe(item, got, sizeof(got)));
	d = item->valuedouble;
	if (!(d >= min && d <= max) || d != floor(d))
		return fail(c, path, "must be %" PRIu32 "..%" PRIu32 ", got %s", min, max,
			    describe(item, got, sizeof(got)));
	*out = (uint32_t)d;
	return 0;
}

static int get_size(struct ctx *c, const cJSON *item, const char *path, uint64_t *out)
{
	char got[64];
	int ret;

	if (!cJSON_IsString(item))
		return fail(c, path, "must be a size string like \"256MiB\", got %s",
			    describe(item, got, sizeof(got)));
	ret = fr_parse_size(item->valuestring, out);
	if (ret == -ERANGE)
		return fail(c, path, "too large, got %s", describe(item, got, sizeof(got)));
	if (ret < 0)
		return fail(c, path, "must be a size string like \"256MiB\", got %s",
			    describe(item, got, sizeof(got)));
	return 0;
}

/* A duration as the config accepts it; plain ns when the friendly form
 * would not read back exactly. */
static char *duration_text(int64_t ns, char *buf, size_t len)
{
	int64_t back;

	fr_format_duration(ns, buf, len);
	if (fr_parse_duration(buf, &back) < 0 || back != ns)
		snprintf(buf, len, "%" PRId64 "ns", ns);
	return buf;
}

static int get_path(struct ctx *c, const cJSON *item, const char *path, size_t max, char **out)
{
	char got[64];
	size_t len;

	if (!cJSON_IsString(item) || !item->valuestring[0])
		return fail(c, path, "must be a non-empty path string, got %s",
			    describe(item, got, sizeof(got)));
	len = strlen(item->valuestring);
	if (len > max)
		return fail(c, path, "must be at most %zu bytes long, got %zu bytes", max, len);
	*out = strdup(item->valuestring);
	return *out ? 0 : -ENOMEM;
}

static int parse_limits(struct ctx *c, const cJSON *limits, struct fr_config *cfg)
{
	static const char *const keys[] = {"max_rate_hz", "max_clients", "user_max_rate_hz",
					   "query_memory"};
	const cJSON *it;
	int ret;

	if (!limits)
		goto user_default;
	if (!cJSON_IsObject(limits)) {
		char got[64];

		return fail(c, "limits", "must be an object like {\"max_rate_hz\": 10000}, got %s",
			    describe(limits, got, sizeof(got)));
	}
	ret = check_keys(c, limits, "limits", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	it = cJSON_GetObjectItemCaseSensitive(limits, "max_rate_hz");
	if (it) {
		ret = get_uint(c, it, "limits.max_rate_hz", 1, MAX_RATE_HZ_LIMIT, &cfg->max_rate_hz);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(limits, "max_clients");
	if (it) {
		ret = get_uint(c, it, "limits.max_clients", 1, MAX_CLIENTS_LIMIT, &cfg->max_clients);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(limits, "query_memory");
	if (it) {
		char got[64];

		ret = get_size(c, it, "limits.query_memory", &cfg->query_memory);
		if (ret < 0)
			return ret;
		if (cfg->query_memory < MIN_QUERY_MEMORY)
			return fail(c, "limits.query_memory", "must be at least 1MiB, got %s",
				    describe(it, got, sizeof(got)));
	}
	/* After max_rate_hz, which bounds it: a user cannot be allowed more
	 * than root. */
	it = cJSON_GetObjectItemCaseSensitive(limits, "user_max_rate_hz");
	if (it)
		return get_uint(c, it, "limits.user_max_rate_hz", 1, cfg->max_rate_hz,
				&cfg->user_max_rate_hz);
user_default:
	cfg->user_max_rate_hz = cfg->max_rate_hz < DEFAULT_USER_MAX_RATE_HZ
					? cfg->max_rate_hz : DEFAULT_USER_MAX_RATE_HZ;
	return 0;
}

/* A user or group of this machine, by name or number: a JSON number, or a
 * string holding a name or a number. Names are resolved here, once, so a
 * typo is a config error rather than a socket nobody can reach. Returns 0
 * with the id in `out`, or -EINVAL (-ENOMEM) with the message set. */
static int get_id(struct ctx *c, const cJSON *item, const char *path, int group,
		  uint32_t *out)
{
	const char *what = group ? "group" : "user";
	char got[64], *buf = NULL, *end;
	long size;
	int ret;

	if (cJSON_IsNumber(item)) {
		double d = item->valuedouble;

		/* (uid_t)-1 means "no change" to chown and friends. */
		if (!(d >= 0 && d < (double)UINT32_MAX) || d != floor(d))
			return fail(c, path, "must be a %s name or number 0..%u, got %s", what,
				    UINT32_MAX - 1, describe(item, got, sizeof(got)));
		*out = (uint32_t)d;
		return 0;
	}
	if (!cJSON_IsString(item) || !item->valuestring[0])
		return fail(c, path, "must be a %s name or number, got %s", what,
			    describe(item, got, sizeof(got)));
	errno = 0;
	{
		unsigned long long n = strtoull(item->valuestring, &end, 10);

		if (!*end && item->valuestring[0] >= '0' && item->valuestring[0] <= '9') {
			if (errno || n >= UINT32_MAX)
				return fail(c, path, "must be a %s name or number 0..%u, got %s",
					    what, UINT32_MAX - 1, describe(item, got, sizeof(got)));
			*out = (uint32_t)n;
			return 0;
		}
	}
	size = sysconf(group ? _SC_GETGR_R_SIZE_MAX : _SC_GETPW_R_SIZE_MAX);
	if (size < 1024)
		size = 1024;
	for (;;) {
		char *nb = realloc(buf, (size_t)size);

		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		if (group) {
			struct group gr, *res = NULL;

			ret = getgrnam_r(item->valuestring, &gr, buf, (size_t)size, &res);
			if (!ret && res)
				*out = (uint32_t)gr.gr_gid;
			else if (!ret)
				ret = ENOENT;
		} else {
			struct passwd pw, *res = NULL;

			ret = getpwnam_r(item->valuestring, &pw, buf, (size_t)size, &res);
			if (!ret && res)
				*out = (uint32_t)pw.pw_uid;
			else if (!ret)
				ret = ENOENT;
		}
		if (ret != ERANGE || size > (1L << 24))
			break;
		size *= 2;
	}
	free(buf);
	if (ret == ENOENT)
		return fail(c, path, "no %s named %s on this machine", what,
			    describe(item, got, sizeof(got)));
	if (ret)
		return fail(c, path, "cannot look up %s %s: %s", what,
			    describe(item, got, sizeof(got)), strerror(ret));
	return 0;
}

/* "socket": a path, or {"path": PATH, "group": GROUP, "admin_group": GROUP}. */
static int parse_socket(struct ctx *c, const cJSON *sock, struct fr_config *cfg)
{
	static const char *const keys[] = {"path", "group", "admin_group"};
	const size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
	const cJSON *it;
	char got[64];
	int ret;

	if (!sock)
		return 0;
	if (cJSON_IsString(sock))
		return get_path(c, sock, "socket", max, &cfg->socket_path);
	if (!cJSON_IsObject(sock))
		return fail(c, "socket", "must be a path string or an object like "
			    "{\"group\": \"flightrec\"}, got %s", describe(sock, got, sizeof(got)));
	ret = check_keys(c, sock, "socket", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	it = cJSON_GetObjectItemCaseSensitive(sock, "path");
	if (it) {
		ret = get_path(c, it, "socket.path", max, &cfg->socket_path);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(sock, "group");
	if (it) {
		ret = get_id(c, it, "socket.group", 1, &cfg->socket_gid);
		if (ret < 0)
			return ret;
		cfg->has_socket_group = 1;
	}
	it = cJSON_GetObjectItemCaseSensitive(sock, "admin_group");
	if (it) {
		ret = get_id(c, it, "socket.admin_group", 1, &cfg->admin_gid);
		if (ret < 0)
			return ret;
		cfg->has_admin_group = 1;
	}
	return 0;
}

static int parse_ring(struct ctx *c, const cJSON *ring, struct fr_config *cfg)
{
	static const char *const keys[] = {"path", "size", "segment", "sync", "max_age"};
	const cJSON *path, *size, *segment, *sync, *max_age;
	char got[64], a[32], b[32];
	int ret;

	if (!ring)
		return 0;
	if (!cJSON_IsObject(ring))
		return fail(c, "ring", "must be an object like {\"size\": \"256MiB\"}, got %s",
			    describe(ring, got, sizeof(got)));
	ret = check_keys(c, ring, "ring", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	path = cJSON_GetObjectItemCaseSensitive(ring, "path");
	if (path) {
		ret = get_path(c, path, "ring.path", 4095, &cfg->ring_path);
		if (ret < 0)
			return ret;
	}

	size = cJSON_GetObjectItemCaseSensitive(ring, "size");
	if (size) {
		ret = get_size(c, size, "ring.size", &cfg->ring_size);
		if (ret < 0)
			return ret;
	}

	segment = cJSON_GetObjectItemCaseSensitive(ring, "segment");
	if (segment) {
		ret = get_size(c, segment, "ring.segment", &cfg->segment_size);
		if (ret < 0)
			return ret;
		if (cfg->segment_size < MIN_SEGMENT_SIZE)
			return fail(c, "ring.segment", "must be at least 64KiB, got %s",
				    describe(segment, got, sizeof(got)));
		if (cfg->segment_size % SEGMENT_ALIGN)
			return fail(c, "ring.segment", "must be a multiple of 4KiB, got %s",
				    describe(segment, got, sizeof(got)));
	}

	/* Blame the value the user wrote: the size if given, else the
	 * segment that does not fit twice into the default size. */
	if (cfg->segment_size > cfg->ring_size / 2) {
		fr_format_size(cfg->segment_size * 2, a, sizeof(a));
		fr_format_size(cfg->segment_size, b, sizeof(b));
		if (size)
			return fail(c, "ring.size",
				    "must hold at least 2 segments (%s with a segment of %s), got %s", a,
				    b, describe(size, got, sizeof(got)));
		fr_format_size(cfg->ring_size / 2, a, sizeof(a));
		return fail(c, "ring.segment", "must be at most half of ring.size (%s), got %s", a,
			    describe(segment, got, sizeof(got)));
	}

	sync = cJSON_GetObjectItemCaseSensitive(ring, "sync");
	if (sync) {
		if (cJSON_IsString(sync) && strcmp(sync->valuestring, "off") == 0) {
			cfg->sync_ns = -1;
		} else if (!cJSON_IsString(sync) ||
			   fr_parse_duration(sync->valuestring, &cfg->sync_ns) < 0) {
			return fail(c, "ring.sync", "must be a duration like \"1s\", or \"off\", got %s",
				    describe(sync, got, sizeof(got)));
		}
	}

	max_age = cJSON_GetObjectItemCaseSensitive(ring, "max_age");
	if (max_age) {
		if (!cJSON_IsString(max_age) ||
		    fr_parse_duration(max_age->valuestring, &cfg->max_age_ns) < 0 ||
		    cfg->max_age_ns < 1000000000LL) {
			cfg->max_age_ns = 0;
			return fail(c, "ring.max_age",
				    "must be a duration of at least 1s like \"7d\" or \"12h\", got %s",
				    describe(max_age, got, sizeof(got)));
		}
	}
	return 0;
}

/* "mode": an octal string of read and write bits for dump files. The
 * owner always reads and writes (the recorder replaces nothing, but an
 * operator cleans up); nobody else writes, since a dump is evidence. A
 * JSON number is refused: 640 would be decimal, not the mode meant. */
static int get_file_mode(struct ctx *c, const cJSON *item, const char *path, uint32_t *out)
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
	return fail(c, path,
		    "must be an octal string like \"0640\" with the owner's read and write "
		    "bits and at most read for group and others (0600..0644), got %s",
		    describe(item, got, sizeof(got)));
}

/* "dumps": {"dir": PATH, "keep": N, "max_bytes": SIZE, "mode": OCTAL}: where
 * the dumps of triggers go, how many of them are kept and who may read
 * them. */
static int parse_dumps(struct ctx *c, const cJSON *dumps, struct fr_config *cfg)
{
	static const char *const keys[] = {"dir", "keep", "max_bytes", "mode"};
	const cJSON *it;
	char got[64];
	int ret;

	if (!dumps)
		return 0;
	if (!cJSON_IsObject(dumps))
		return fail(c, "dumps", "must be an object like {\"keep\": 50}, got %s",
			    describe(dumps, got, sizeof(got)));
	ret = check_keys(c, dumps, "dumps", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	it = cJSON_GetObjectItemCaseSensitive(dumps, "dir");
	if (it) {
		ret = get_path(c, it, "dumps.dir", FR_CONFIG_PATH_MAX - 1, &cfg->dumps_dir);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(dumps, "keep");
	if (it) {
		ret = get_uint(c, it, "dumps.keep", 1, MAX_DUMPS_KEEP, &cfg->dumps_keep);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(dumps, "max_bytes");
	if (it) {
		ret = get_size(c, it, "dumps.max_bytes", &cfg->dumps_max_bytes);
		if (ret < 0)
			return ret;
		/* 0 stands for "no limit" inside; written out it would read
		 * as "keep nothing", so it is refused rather than guessed. */
		if (cfg->dumps_max_bytes == 0)
			return fail(c, "dumps.max_bytes",
				    "must be more than 0 (leave it out for no byte limit), got %s",
				    describe(it, got, sizeof(got)));
	}
	it = cJSON_GetObjectItemCaseSensitive(dumps, "mode");
	if (it) {
		ret = get_file_mode(c, it, "dumps.mode", &cfg->dumps_mode);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void event_list(char *buf, size_t len)
{
	snprintf(buf, len, "%s", FR_EVENT_NAMES);
}

static uint32_t default_hz(const struct fr_config *cfg)
{
	/* An implicit rate follows a lowered limit rather than breaking it. */
	return cfg->max_rate_hz < DEFAULT_HZ ? cfg->max_rate_hz : DEFAULT_HZ;
}

static int parse_event(struct ctx *c, const cJSON *ev, const char *path,
		       struct fr_config_session *sess, struct fr_config *cfg)
{
	static const char *const keys[] = {"event", "hz"};
	char sub[PATH_MAX_LEN], got[64], names[256];
	struct fr_config_event *out = &sess->events[sess->nevents];
	const cJSON *name, *hz;
	int64_t id;
	int ret;

	if (!cJSON_IsObject(ev))
		return fail(c, path, "must be an object like {\"event\": \"cpu\", \"hz\": 99}, got %s",
			    describe(ev, got, sizeof(got)));
	ret = check_keys(c, ev, path, keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	join(sub, path, "event");
	event_list(names, sizeof(names));
	name = cJSON_GetObjectItemCaseSensitive(ev, "event");
	if (!name)
		return fail(c, sub, "missing; name the event to record (accepted: %s)", names);
	if (!cJSON_IsString(name))
		return fail(c, sub, "must be an event name string, got %s",
			    describe(name, got, sizeof(got)));
	id = fr_event_lookup(name->valuestring);
	if (id < 0)
		return fail(c, sub, "unknown event %s (accepted: %s)", describe(name, got, sizeof(got)),
			    names);
	for (uint32_t i = 0; i < sess->nevents; i++)
		if (sess->events[i].event == (uint32_t)id)
			return fail(c, sub, "\"%s\" is already listed in this session",
				    name->valuestring);
	out->event = (uint32_t)id;

	hz = cJSON_GetObjectItemCaseSensitive(ev, "hz");
	if (!fr_event_has_rate((uint32_t)id)) {
		/* offcpu records every context switch; there is no rate. */
		if (hz) {
			join(sub, path, "hz");
			return fail(c, sub, "%s records every context switch and takes no rate; "
				    "leave \"hz\" out", name->valuestring);
		}
		out->hz = 0;
		sess->nevents++;
		return 0;
	}
	out->hz = default_hz(cfg);
	if (hz) {
		join(sub, path, "hz");
		ret = get_uint(c, hz, sub, 1, cfg->max_rate_hz, &out->hz);
		if (ret < 0)
			return ret;
	}
	sess->nevents++;
	return 0;
}

static int check_name(struct ctx *c, const cJSON *name, const char *path,
		      const struct fr_config *cfg)
{
	char got[64];
	const char *s;
	size_t len;

	if (!cJSON_IsString(name))
		return fail(c, path, "must be a string, got %s", describe(name, got, sizeof(got)));
	s = name->valuestring;
	len = strlen(s);
	if (len == 0)
		return fail(c, path, "must not be empty");
	if (len >= FR_CONFIG_NAME_MAX)
		return fail(c, path, "must be at most %d characters, got %zu", FR_CONFIG_NAME_MAX - 1,
			    len);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		char shown[8];

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-')
			continue;
		if (ch >= 0x20 && ch < 0x7f)
			snprintf(shown, sizeof(shown), "'%c'", ch);
		else
			snprintf(shown, sizeof(shown), "0x%02x", ch);
		return fail(c, path, "%s has the character %s (accepted: A-Z a-z 0-9 _ . -)",
			    describe(name, got, sizeof(got)), shown);
	}
	for (uint32_t i = 0; i < cfg->nsessions; i++)
		if (strcmp(cfg->sessions[i].name, s) == 0)
			return fail(c, path, "\"%s\" is already the name of sessions[%" PRIu32 "]", s,
				    i);
	return 0;
}

/* "targets": {"pids": [N...], "comm": ["name"...], "cgroup": "/path",
 * "uid": USER}. */
static int parse_targets(struct ctx *c, const cJSON *t, const char *path,
			 struct fr_config_session *sess)
{
	static const char *const keys[] = {"pids", "comm", "cgroup", "uid"};
	char sub[PATH_MAX_LEN], item[PATH_MAX_LEN], got[64];
	const cJSON *pids, *comm, *cgroup, *uid, *v;
	int ret, i;

	if (!cJSON_IsObject(t))
		return fail(c, path, "must be an object like {\"comm\": [\"postgres\"]}, got %s",
			    describe(t, got, sizeof(got)));
	ret = check_keys(c, t, path, keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	pids = cJSON_GetObjectItemCaseSensitive(t, "pids");
	if (pids) {
		join(sub, path, "pids");
		if (!cJSON_IsArray(pids) || cJSON_GetArraySize(pids) == 0)
			return fail(c, sub, "must be a non-empty array of process ids, got %s",
				    describe(pids, got, sizeof(got)));
		if (cJSON_GetArraySize(pids) > FR_CONFIG_MAX_TARGETS)
			return fail(c, sub, "at most %d pids", FR_CONFIG_MAX_TARGETS);
		i = 0;
		cJSON_ArrayForEach(v, pids) {
			join_index(item, sub, i++);
			ret = get_uint(c, v, item, 1, INT32_MAX, &sess->pids[sess->npids]);
			if (ret < 0)
				return ret;
			sess->npids++;
		}
	}
	comm = cJSON_GetObjectItemCaseSensitive(t, "comm");
	if (comm) {
		join(sub, path, "comm");
		if (!cJSON_IsArray(comm) || cJSON_GetArraySize(comm) == 0)
			return fail(c, sub, "must be a non-empty array of command names, got %s",
				    describe(comm, got, sizeof(got)));
		if (cJSON_GetArraySize(comm) > FR_CONFIG_MAX_COMMS)
			return fail(c, sub, "at most %d command names", FR_CONFIG_MAX_COMMS);
		i = 0;
		cJSON_ArrayForEach(v, comm) {
			join_index(item, sub, i++);
			if (!cJSON_IsString(v) || !v->valuestring[0] ||
			    strlen(v->valuestring) >= FR_CONFIG_COMM_MAX)
				return fail(c, item, "must be a command name of 1..%d characters (as "
					    "the kernel keeps it), got %s", FR_CONFIG_COMM_MAX - 1,
					    describe(v, got, sizeof(got)));
			snprintf(sess->comms[sess->ncomms++], FR_CONFIG_COMM_MAX, "%s",
				 v->valuestring);
		}
	}
	cgroup = cJSON_GetObjectItemCaseSensitive(t, "cgroup");
	if (cgroup) {
		join(sub, path, "cgroup");
		if (!cJSON_IsString(cgroup) || cgroup->valuestring[0] != '/' ||
		    strlen(cgroup->valuestring) >= FR_CONFIG_CGROUP_MAX)
			return fail(c, sub, "must be a cgroup v2 path like "
				    "\"/system.slice/nginx.service\" (at most %d characters), got %s",
				    FR_CONFIG_CGROUP_MAX - 1, describe(cgroup, got, sizeof(got)));
		snprintf(sess->cgroup, sizeof(sess->cgroup), "%s", cgroup->valuestring);
	}
	uid = cJSON_GetObjectItemCaseSensitive(t, "uid");
	if (uid) {
		join(sub, path, "uid");
		ret = get_id(c, uid, sub, 0, &sess->uid);
		if (ret < 0)
			return ret;
		sess->has_uid = 1;
	}
	return 0;
}

/* "users": [USER...], who besides root and the admin group may dump the
 * session by hand. */
static int parse_users(struct ctx *c, const cJSON *users, const char *path,
		       struct fr_config_session *sess)
{
	char item[PATH_MAX_LEN], got[64];
	const cJSON *v;
	int i = 0, ret;

	if (!cJSON_IsArray(users) || cJSON_GetArraySize(users) == 0)
		return fail(c, path, "must be a non-empty array of user names or uids, got %s",
			    describe(users, got, sizeof(got)));
	if (cJSON_GetArraySize(users) > FR_CONFIG_MAX_USERS)
		return fail(c, path, "at most %d users", FR_CONFIG_MAX_USERS);
	cJSON_ArrayForEach(v, users) {
		join_index(item, path, i++);
		ret = get_id(c, v, item, 0, &sess->users[sess->nusers]);
		if (ret < 0)
			return ret;
		sess->nusers++;
	}
	return 0;
}

/* Signals a trigger may wait for. The daemon handles HUP, INT, TERM
 * itself, ignores PIPE and reaps with CHLD; KILL and STOP cannot be
 * caught; the others have a default action or a meaning (a fault, job
 * control, a timer) that a dump must not hijack. What is left is what
 * the kernel sets aside for applications: USR1, USR2 and the real-time
 * signals. */
#define ACCEPTED_SIGNALS "USR1, USR2, RTMIN..RTMAX forms"

static const struct {
	const char *name;
	int signo;
} signal_names[] = {
	{"HUP", SIGHUP},       {"INT", SIGINT},     {"QUIT", SIGQUIT},   {"ILL", SIGILL},
	{"TRAP", SIGTRAP},     {"ABRT", SIGABRT},   {"IOT", SIGIOT},     {"BUS", SIGBUS},
	{"FPE", SIGFPE},       {"KILL", SIGKILL},   {"USR1", SIGUSR1},   {"SEGV", SIGSEGV},
	{"USR2", SIGUSR2},     {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},   {"TERM", SIGTERM},
#ifdef SIGSTKFLT
	{"STKFLT", SIGSTKFLT},
#endif
	{"CHLD", SIGCHLD},     {"CLD", SIGCHLD},    {"CONT", SIGCONT},   {"STOP", SIGSTOP},
	{"TSTP", SIGTSTP},     {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},   {"URG", SIGURG},
	{"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},   {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},
	{"WINCH", SIGWINCH},   {"IO", SIGIO},       {"POLL", SIGPOLL},
#ifdef SIGPWR
	{"PWR", SIGPWR},
#endif
	{"SYS", SIGSYS},
};

static bool signal_accepted(int signo)
{
	return signo == SIGUSR1 || signo == SIGUSR2 || (signo >= SIGRTMIN && signo <= SIGRTMAX);
}

char *fr_config_signal_name(int signo, char *buf, size_t len)
{
	if (signo >= SIGRTMIN && signo <= SIGRTMAX) {
		if (signo == SIGRTMIN)
			snprintf(buf, len, "SIGRTMIN");
		else
			snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
		return buf;
	}
	for (size_t i = 0; i < ARRAY_SIZE(signal_names); i++)
		if (signal_names[i].signo == signo) {
			snprintf(buf, len, "SIG%s", signal_names[i].name);
			return buf;
		}
	snprintf(buf, len, "signal %d", signo);
	return buf;
}

/* Reads "USR1", "SIGUSR1", "sigusr1", "RTMIN", "SIGRTMIN+3", "RTMAX-2"
 * into a signal number and the name to show for it. Returns 0, -ENOENT
 * (no such name) or -ERANGE (a real-time form past the range the C
 * library leaves to applications). */
static int lookup_signal(const char *text, int *signo, char *name, size_t len)
{
	const char *s = text, *rest;
	int base, sign, n = 0;

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(signal_names); i++)
		if (strcasecmp(s, signal_names[i].name) == 0) {
			*signo = signal_names[i].signo;
			snprintf(name, len, "SIG%s", signal_names[i].name);
			return 0;
		}
	if (strncasecmp(s, "RTMIN", 5) == 0) {
		base = SIGRTMIN;
		sign = 1;
	} else if (strncasecmp(s, "RTMAX", 5) == 0) {
		base = SIGRTMAX;
		sign = -1;
	} else {
		return -ENOENT;
	}
	rest = s + 5;
	if (*rest) {
		if (*rest != (sign > 0 ? '+' : '-') || !rest[1])
			return -ENOENT;
		for (rest++; *rest; rest++) {
			if (*rest < '0' || *rest > '9')
				return -ENOENT;
			if (n < 1000)
				n = n * 10 + (*rest - '0');
		}
	}
	snprintf(name, len, "SIGRT%s%c%d", sign > 0 ? "MIN" : "MAX", sign > 0 ? '+' : '-', n);
	if (n > SIGRTMAX - SIGRTMIN)
		return -ERANGE;
	*signo = base + sign * n;
	return 0;
}

static int get_signal(struct ctx *c, const cJSON *item, const char *path,
		      const struct fr_config_session *sess, struct fr_config_trigger *t)
{
	char got[64], name[32];
	int signo, ret;

	if (!cJSON_IsString(item))
		return fail(c, path, "must be a signal name like \"USR1\" (accepted: %s), got %s",
			    ACCEPTED_SIGNALS, describe(item, got, sizeof(got)));
	ret = lookup_signal(item->valuestring, &signo, name, sizeof(name));
	if (ret == -ERANGE)
		return fail(c, path,
			    "%s is past SIGRTMAX, which is SIGRTMIN+%d here (accepted: %s)", name,
			    SIGRTMAX - SIGRTMIN, ACCEPTED_SIGNALS);
	if (ret < 0)
		return fail(c, path, "unknown signal %s (accepted: %s)",
			    describe(item, got, sizeof(got)), ACCEPTED_SIGNALS);
	if (signo == SIGHUP || signo == SIGINT || signo == SIGTERM || signo == SIGPIPE ||
	    signo == SIGCHLD)
		return fail(c, path, "%s is the daemon's own (accepted: %s)", name,
			    ACCEPTED_SIGNALS);
	if (signo == SIGKILL || signo == SIGSTOP)
		return fail(c, path, "%s cannot be caught (accepted: %s)", name, ACCEPTED_SIGNALS);
	if (!signal_accepted(signo))
		return fail(c, path, "%s cannot be used for triggers (accepted: %s)", name,
			    ACCEPTED_SIGNALS);
	/* One signal, one trigger per session: two would always fire
	 * together and write the same dump twice. */
	for (uint32_t i = 0; i < sess->ntriggers; i++)
		if (sess->triggers[i].kind == FR_TRIGGER_SIGNAL &&
		    sess->triggers[i].signal == signo)
			return fail(c, path, "%s is already the signal of triggers[%" PRIu32 "]",
				    fr_config_signal_name(signo, name, sizeof(name)), i);
	t->signal = signo;
	return 0;
}

/* A duration of at least `min_ns`; `like` shows examples in messages. */
static int get_duration(struct ctx *c, const cJSON *item, const char *path, int64_t min_ns,
			const char *like, int64_t *out)
{
	char got[64], min[32];
	int64_t ns;

	if (cJSON_IsString(item) && fr_parse_duration(item->valuestring, &ns) == 0 &&
	    ns >= min_ns) {
		*out = ns;
		return 0;
	}
	if (min_ns > 0)
		return fail(c, path, "must be a duration of at least %s like %s, got %s",
			    fr_format_duration(min_ns, min, sizeof(min)), like,
			    describe(item, got, sizeof(got)));
	return fail(c, path, "must be a duration like %s, got %s", like,
		    describe(item, got, sizeof(got)));
}

/* Indexed by enum fr_trigger_kind. */
static const char *const trigger_kinds[] = {"signal", "cpu_above", "exit"};

const char *fr_config_trigger_kind(uint32_t kind)
{
	return kind < ARRAY_SIZE(trigger_kinds) ? trigger_kinds[kind] : "unknown";
}
#define TRIGGER_KINDS "signal, cpu_above, exit"

static const char *const signal_keys[] = {"on", "signal", "window", "after", "cooldown"};
static const char *const cpu_keys[] = {"on", "percent", "for", "window", "after", "cooldown"};
static const char *const exit_keys[] = {"on", "window", "after", "cooldown"};

static const struct {
	const char *const *keys;
	size_t nkeys;
} trigger_keys[] = {
	{signal_keys, ARRAY_SIZE(signal_keys)},
	{cpu_keys, ARRAY_SIZE(cpu_keys)},
	{exit_keys, ARRAY_SIZE(exit_keys)},
};

static bool has_key(const char *const *keys, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], key) == 0)
			return true;
	return false;
}

/* check_keys for a trigger of `kind`, but a key that belongs to another
 * kind ("percent" on a signal trigger) says which kind takes it: the
 * user has the right key on the wrong trigger, or the wrong "on". */
static int check_trigger_keys(struct ctx *c, const cJSON *jt, const char *path, uint32_t kind)
{
	const char *const *keys = trigger_keys[kind].keys;
	size_t nkeys = trigger_keys[kind].nkeys;
	char sub[PATH_MAX_LEN], list[128] = "";
	const cJSON *it;

	for (size_t i = 0; i < nkeys; i++) {
		if (i)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, keys[i], sizeof(list) - strlen(list) - 1);
	}
	cJSON_ArrayForEach(it, jt) {
		if (has_key(keys, nkeys, it->string))
			continue;
		for (uint32_t k = 0; k < ARRAY_SIZE(trigger_keys); k++) {
			if (!has_key(trigger_keys[k].keys, trigger_keys[k].nkeys, it->string))
				continue;
			join(sub, path, it->string);
			return fail(c, sub, "only %s triggers take \"%s\" (accepted for %s: %s)",
				    trigger_kinds[k], it->string, trigger_kinds[kind], list);
		}
	}
	return check_keys(c, jt, path, keys, nkeys);
}

static int parse_trigger(struct ctx *c, const cJSON *jt, const char *path,
			 struct fr_config_session *sess)
{
	struct fr_config_trigger *t = &sess->triggers[sess->ntriggers];
	char sub[PATH_MAX_LEN], got[64], a[32], b[32];
	const cJSON *on, *it, *after;
	uint32_t kind;
	int ret;

	if (!cJSON_IsObject(jt))
		return fail(c, path,
			    "must be an object like {\"on\": \"signal\", \"signal\": \"USR1\"}, got %s",
			    describe(jt, got, sizeof(got)));
	join(sub, path, "on");
	on = cJSON_GetObjectItemCaseSensitive(jt, "on");
	if (!on)
		return fail(c, sub, "missing; say what fires the trigger (accepted: " TRIGGER_KINDS
			    ")");
	if (!cJSON_IsString(on))
		return fail(c, sub, "must be a string (accepted: " TRIGGER_KINDS "), got %s",
			    describe(on, got, sizeof(got)));
	for (kind = 0; kind < ARRAY_SIZE(trigger_kinds); kind++)
		if (strcmp(on->valuestring, trigger_kinds[kind]) == 0)
			break;
	if (kind == ARRAY_SIZE(trigger_kinds))
		return fail(c, sub, "unknown trigger %s (accepted: " TRIGGER_KINDS ")",
			    describe(on, got, sizeof(got)));
	ret = check_trigger_keys(c, jt, path, kind);
	if (ret < 0)
		return ret;

	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->window_ns = DEFAULT_TRIGGER_WINDOW_NS;
	t->after_ns = 0;
	t->cooldown_ns = DEFAULT_TRIGGER_COOLDOWN_NS;

	switch (kind) {
	case FR_TRIGGER_SIGNAL:
		join(sub, path, "signal");
		it = cJSON_GetObjectItemCaseSensitive(jt, "signal");
		if (!it)
			return fail(c, sub, "missing; name the signal that fires the trigger "
				    "(accepted: " ACCEPTED_SIGNALS ")");
		ret = get_signal(c, it, sub, sess, t);
		if (ret < 0)
			return ret;
		break;
	case FR_TRIGGER_CPU_ABOVE:
		join(sub, path, "percent");
		it = cJSON_GetObjectItemCaseSensitive(jt, "percent");
		if (!it)
			return fail(c, sub, "missing; give the CPU use that fires the trigger, "
				    "1..100 (percent of all CPUs)");
		ret = get_uint(c, it, sub, 1, 100, &t->percent);
		if (ret < 0)
			return ret;
		t->for_ns = DEFAULT_TRIGGER_FOR_NS;
		it = cJSON_GetObjectItemCaseSensitive(jt, "for");
		if (it) {
			join(sub, path, "for");
			ret = get_duration(c, it, sub, NS_PER_S, "\"10s\" or \"1m\"", &t->for_ns);
			if (ret < 0)
				return ret;
		}
		break;
	case FR_TRIGGER_EXIT:
		/* Without targets every process of the machine would count,
		 * and some process fails all the time (a grep that found
		 * nothing exits with 1). */
		if (!sess->npids && !sess->ncomms && !sess->cgroup[0] && !sess->has_uid)
			return fail(c, sub, "an exit trigger needs the session's targets (pids, "
				    "comm, cgroup or uid): without them any failing process of the "
				    "machine would fire it");
		break;
	}

	it = cJSON_GetObjectItemCaseSensitive(jt, "window");
	if (it) {
		join(sub, path, "window");
		ret = get_duration(c, it, sub, NS_PER_S, "\"60s\" or \"2m\"", &t->window_ns);
		if (ret < 0)
			return ret;
	}
	after = cJSON_GetObjectItemCaseSensitive(jt, "after");
	if (after) {
		join(sub, path, "after");
		ret = get_duration(c, after, sub, 0, "\"10s\" (\"0s\" for none)", &t->after_ns);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(jt, "cooldown");
	if (it) {
		join(sub, path, "cooldown");
		ret = get_duration(c, it, sub, NS_PER_S, "\"60s\" or \"10m\"", &t->cooldown_ns);
		if (ret < 0)
			return ret;
	}
	/* The dump is read from the ring, and the tail is waited for: both
	 * bounded so that one trigger cannot ask for hours of either. Blame
	 * "after" when it was given, as it is the part added to the window. */
	if (t->window_ns > MAX_TRIGGER_SPAN_NS ||
	    t->after_ns > MAX_TRIGGER_SPAN_NS - t->window_ns) {
		join(sub, path, after ? "after" : "window");
		return fail(c, sub, "window + after must be at most 1h, got %s + %s",
			    duration_text(t->window_ns, a, sizeof(a)),
			    duration_text(t->after_ns, b, sizeof(b)));
	}
	sess->ntriggers++;
	return 0;
}

static int parse_triggers(struct ctx *c, const cJSON *triggers, const char *path,
			  struct fr_config_session *sess)
{
	char sub[PATH_MAX_LEN], got[64];
	const cJSON *jt;
	int n, i, ret;

	if (!cJSON_IsArray(triggers))
		return fail(c, path,
			    "must be an array like [{\"on\": \"signal\", \"signal\": \"USR1\"}], "
			    "got %s",
			    describe(triggers, got, sizeof(got)));
	n = cJSON_GetArraySize(triggers);
	if (n > FR_CONFIG_MAX_TRIGGERS)
		return fail(c, path, "at most %d triggers per session, got %d",
			    FR_CONFIG_MAX_TRIGGERS, n);
	i = 0;
	cJSON_ArrayForEach(jt, triggers) {
		join_index(sub, path, i++);
		ret = parse_trigger(c, jt, sub, sess);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int parse_session(struct ctx *c, const cJSON *js, const char *path,
			 struct fr_config *cfg)
{
	static const char *const keys[] = {"name", "targets", "triggers", "events", "users"};
	struct fr_config_session *sess = &cfg->sessions[cfg->nsessions];
	char sub[PATH_MAX_LEN], evpath[PATH_MAX_LEN], got[64];
	const cJSON *name, *events, *ev;
	int n, i, ret;

	if (!cJSON_IsObject(js))
		return fail(c, path,
			    "must be an object like {\"name\": \"always\", \"events\": [...]}, got %s",
			    describe(js, got, sizeof(got)));
	ret = check_keys(c, js, path, keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	join(sub, path, "name");
	name = cJSON_GetObjectItemCaseSensitive(js, "name");
	if (!name)
		return fail(c, sub, "missing; every session needs a unique name");
	ret = check_name(c, name, sub, cfg);
	if (ret < 0)
		return ret;
	memset(sess, 0, sizeof(*sess));
	snprintf(sess->name, sizeof(sess->name), "%s", name->valuestring);

	if (cJSON_GetObjectItemCaseSensitive(js, "targets")) {
		join(sub, path, "targets");
		ret = parse_targets(c, cJSON_GetObjectItemCaseSensitive(js, "targets"), sub, sess);
		if (ret < 0)
			return ret;
	}

	if (cJSON_GetObjectItemCaseSensitive(js, "users")) {
		join(sub, path, "users");
		ret = parse_users(c, cJSON_GetObjectItemCaseSensitive(js, "users"), sub, sess);
		if (ret < 0)
			return ret;
	}

	if (cJSON_GetObjectItemCaseSensitive(js, "triggers")) {
		join(sub, path, "triggers");
		ret = parse_triggers(c, cJSON_GetObjectItemCaseSensitive(js, "triggers"), sub,
				     sess);
		if (ret < 0)
			return ret;
	}

	join(sub, path, "events");
	events = cJSON_GetObjectItemCaseSensitive(js, "events");
	if (!events) {
		sess->events[0].event = FR_EVENT_CPU;
		sess->events[0].hz = default_hz(cfg);
		sess->nevents = 1;
		cfg->nsessions++;
		return 0;
	}
	if (!cJSON_IsArray(events))
		return fail(c, sub,
			    "must be an array like [{\"event\": \"cpu\", \"hz\": 99}], got %s",
			    describe(events, got, sizeof(got)));
	n = cJSON_GetArraySize(events);
	if (n == 0)
		return fail(c, sub, "must list at least one event");
	if (n > FR_CONFIG_MAX_EVENTS)
		return fail(c, sub, "at most %d events per session, got %d", FR_CONFIG_MAX_EVENTS, n);
	i = 0;
	cJSON_ArrayForEach(ev, events) {
		join_index(evpath, sub, i++);
		ret = parse_event(c, ev, evpath, sess, cfg);
		if (ret < 0)
			return ret;
	}
	cfg->nsessions++;
	return 0;
}

static int parse_sessions(struct ctx *c, const cJSON *sessions, struct fr_config *cfg)
{
	char path[PATH_MAX_LEN], got[64];
	const cJSON *js;
	int n, i, ret;

	if (!sessions) {
		struct fr_config_session *sess = &cfg->sessions[0];

		memset(sess, 0, sizeof(*sess));
		snprintf(sess->name, sizeof(sess->name), "%s", DEFAULT_SESSION);
		sess->events[0].event = FR_EVENT_CPU;
		sess->events[0].hz = default_hz(cfg);
		sess->nevents = 1;
		cfg->nsessions = 1;
		return 0;
	}
	if (!cJSON_IsArray(sessions))
		return fail(c, "sessions", "must be an array of sessions, got %s",
			    describe(sessions, got, sizeof(got)));
	n = cJSON_GetArraySize(sessions);
	if (n == 0)
		return fail(c, "sessions",
			    "must list at least one session (leave the key out for the default)");
	if (n > FR_CONFIG_MAX_SESSIONS)
		return fail(c, "sessions", "at most %d sessions, got %d", FR_CONFIG_MAX_SESSIONS, n);
	i = 0;
	cJSON_ArrayForEach(js, sessions) {
		join_index(path, "sessions", i++);
		ret = parse_session(c, js, path, cfg);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Reports a syntax error at `pos` (a byte offset into text) as a line and
 * column, both counted from 1. */
static int syntax_error(struct ctx *c, const char *text, size_t len, size_t skip, size_t pos)
{
	size_t line = 1, col = 1;

	if (pos > len)
		pos = len;
	for (size_t i = skip; i < pos; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	if (pos >= len)
		return fail(c, NULL, "line %zu, column %zu: invalid JSON (unexpected end of input)",
			    line, col);
	return fail(c, NULL, "line %zu, column %zu: invalid JSON", line, col);
}

static int parse_root(struct ctx *c, const cJSON *root, struct fr_config *cfg)
{
	static const char *const keys[] = {"ring", "socket", "dumps", "limits", "sessions"};
	const cJSON *sock;
	char got[64];
	int ret;

	if (!cJSON_IsObject(root))
		return fail(c, NULL, "the top level must be a JSON object, got %s",
			    describe(root, got, sizeof(got)));
	ret = check_keys(c, root, "", keys, ARRAY_SIZE(keys));
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
	return parse_sessions(c, cJSON_GetObjectItemCaseSensitive(root, "sessions"), cfg);
}

int fr_config_parse(struct fr_config *cfg, const char *json, size_t len, const char *source,
		    char *err, size_t errlen)
{
	struct ctx c = {.source = source, .err = err, .errlen = errlen};
	const char *end = NULL;
	size_t skip = 0;
	cJSON *root = NULL;
	char *text;
	const char *nul;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	if (err && errlen)
		err[0] = '\0';

	cfg->ring_size = DEFAULT_RING_SIZE;
	cfg->segment_size = DEFAULT_SEGMENT_SIZE;
	cfg->sync_ns = DEFAULT_SYNC_NS;
	cfg->max_rate_hz = DEFAULT_MAX_RATE_HZ;
	cfg->max_clients = DEFAULT_MAX_CLIENTS;
	cfg->query_memory = DEFAULT_QUERY_MEMORY;
	cfg->dumps_keep = DEFAULT_DUMPS_KEEP;
	cfg->dumps_mode = DEFAULT_DUMPS_MODE;

	/* The parser wants a NUL-terminated copy; it is also told to insist
	 * that the terminator follows the value, so trailing text is an
	 * error rather than silently ignored. */
	text = malloc(len + 1);
	if (!text) {
		ret = -ENOMEM;
		fail(&c, NULL, "out of memory");
		goto err;
	}
	memcpy(text, json, len);
	text[len] = '\0';

	/* Editors on some systems start UTF-8 files with a byte order mark. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		skip = 3;
	nul = memchr(text + skip, '\0', len - skip);
	if (nul) {
		ret = syntax_error(&c, text, len, skip, (size_t)(nul - text));
		goto err_text;
	}
	root = cJSON_ParseWithLengthOpts(text + skip, len - skip + 1, &end, 1);
	if (!root) {
		/* The position cJSON reports (the same as cJSON_GetErrorPtr,
		 * but per call, so this is safe in threads). */
		size_t pos = end ? (size_t)(end - text) : len;

		ret = syntax_error(&c, text, len, skip, pos);
		goto err_text;
	}

	ret = parse_root(&c, root, cfg);
	if (ret < 0) {
		if (ret == -ENOMEM)
			fail(&c, NULL, "out of memory");
		goto err_root;
	}
	cJSON_Delete(root);
	free(text);
	return 0;

err_root:
	cJSON_Delete(root);
err_text:
	free(text);
err:
	fr_config_fini(cfg);
	return ret;
}

int fr_config_load(struct fr_config *cfg, const char *path, char *err, size_t errlen)
{
	size_t cap = 4096, len = 0;
	char *buf = NULL;
	int fd, ret;

	memset(cfg, 0, sizeof(*cfg));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return ret;
	}

	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *grown;

			if (cap >= MAX_CONFIG_BYTES) {
				ret = -EFBIG;
				snprintf(err, errlen, "%s: larger than %u bytes; is this a config file?",
					 path, MAX_CONFIG_BYTES);
				goto out;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				ret = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	ret = fr_config_parse(cfg, buf, len, path, err, errlen);
out:
	free(buf);
	close(fd);
	return ret;
}

int fr_config_default(struct fr_config *cfg)
{
	char err[256];
	int ret;

	ret = fr_config_parse(cfg, fr_config_default_json, strlen(fr_config_default_json),
			      "built-in default", err, sizeof(err));
	/* The embedded text is valid; only memory can fail here. */
	return ret == -EINVAL ? -ENOMEM : ret;
}

uint32_t fr_config_max_hz(const struct fr_config *cfg, uint32_t event)
{
	uint32_t hz = 0;

	for (uint32_t s = 0; s < cfg->nsessions; s++)
		for (uint32_t e = 0; e < cfg->sessions[s].nevents; e++)
			if (cfg->sessions[s].events[e].event == event &&
			    cfg->sessions[s].events[e].hz > hz)
				hz = cfg->sessions[s].events[e].hz;
	return hz;
}

void fr_config_fini(struct fr_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->ring_path);
	free(cfg->socket_path);
	free(cfg->dumps_dir);
	memset(cfg, 0, sizeof(*cfg));
}

/* A size as the config accepts it: the friendly form when it reads back
 * exactly, else plain bytes. */
static char *size_text(uint64_t bytes, char *buf, size_t len)
{
	uint64_t back;

	fr_format_size(bytes, buf, len);
	if (fr_parse_size(buf, &back) < 0 || back != bytes)
		snprintf(buf, len, "%" PRIu64 "B", bytes);
	return buf;
}

/* Every key of every trigger, defaults included, so that the printed
 * configuration shows what each one does. Returns false out of memory. */
static bool add_triggers(cJSON *js, const struct fr_config_session *sess)
{
	cJSON *arr = cJSON_AddArrayToObject(js, "triggers");
	char buf[64];

	if (!arr)
		return false;
	for (uint32_t i = 0; i < sess->ntriggers; i++) {
		const struct fr_config_trigger *t = &sess->triggers[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return false;
		cJSON_AddItemToArray(arr, o);
		if (t->kind >= ARRAY_SIZE(trigger_kinds) ||
		    !cJSON_AddStringToObject(o, "on", trigger_kinds[t->kind]))
			return false;
		if (t->kind == FR_TRIGGER_SIGNAL &&
		    !cJSON_AddStringToObject(o, "signal", fr_config_signal_name(t->signal, buf, sizeof(buf))))
			return false;
		if (t->kind == FR_TRIGGER_CPU_ABOVE &&
		    (!cJSON_AddNumberToObject(o, "percent", t->percent) ||
		     !cJSON_AddStringToObject(o, "for",
					      duration_text(t->for_ns, buf, sizeof(buf)))))
			return false;
		if (!cJSON_AddStringToObject(o, "window",
					     duration_text(t->window_ns, buf, sizeof(buf))) ||
		    !cJSON_AddStringToObject(o, "after",
					     duration_text(t->after_ns, buf, sizeof(buf))) ||
		    !cJSON_AddStringToObject(o, "cooldown",
					     duration_text(t->cooldown_ns, buf, sizeof(buf))))
			return false;
	}
	return true;
}

char *fr_config_to_json(const struct fr_config *cfg)
{
	cJSON *root, *ring, *dumps, *limits, *sessions;
	char buf[64];
	char *text = NULL, *out = NULL;

	root = cJSON_CreateObject();
	if (!root)
		return NULL;

	ring = cJSON_AddObjectToObject(root, "ring");
	if (!ring)
		goto out;
	if (cfg->ring_path && !cJSON_AddStringToObject(ring, "path", cfg->ring_path))
		goto out;
	if (!cJSON_AddStringToObject(ring, "size", size_text(cfg->ring_size, buf, sizeof(buf))) ||
	    !cJSON_AddStringToObject(ring, "segment",
				     size_text(cfg->segment_size, buf, sizeof(buf))) ||
	    !cJSON_AddStringToObject(ring, "sync", cfg->sync_ns < 0 ? "off" :
						   duration_text(cfg->sync_ns, buf, sizeof(buf))))
		goto out;
	if (cfg->max_age_ns > 0 &&
	    !cJSON_AddStringToObject(ring, "max_age", duration_text(cfg->max_age_ns, buf, sizeof(buf))))
		goto out;
	if (cfg->has_socket_group || cfg->has_admin_group) {
		cJSON *sock = cJSON_AddObjectToObject(root, "socket");

		if (!sock || (cfg->socket_path &&
			      !cJSON_AddStringToObject(sock, "path", cfg->socket_path)) ||
		    (cfg->has_socket_group &&
		     !cJSON_AddNumberToObject(sock, "group", cfg->socket_gid)) ||
		    (cfg->has_admin_group &&
		     !cJSON_AddNumberToObject(sock, "admin_group", cfg->admin_gid)))
			goto out;
	} else if (cfg->socket_path && !cJSON_AddStringToObject(root, "socket", cfg->socket_path)) {
		goto out;
	}

	dumps = cJSON_AddObjectToObject(root, "dumps");
	if (!dumps || (cfg->dumps_dir && !cJSON_AddStringToObject(dumps, "dir", cfg->dumps_dir)) ||
	    !cJSON_AddNumberToObject(dumps, "keep", cfg->dumps_keep))
		goto out;
	if (cfg->dumps_max_bytes &&
	    !cJSON_AddStringToObject(dumps, "max_bytes",
				     size_text(cfg->dumps_max_bytes, buf, sizeof(buf))))
		goto out;
	snprintf(buf, sizeof(buf), "%04o", (unsigned)cfg->dumps_mode);
	if (cfg->dumps_mode != DEFAULT_DUMPS_MODE && !cJSON_AddStringToObject(dumps, "mode", buf))
		goto out;

	limits = cJSON_AddObjectToObject(root, "limits");
	if (!limits || !cJSON_AddNumberToObject(limits, "max_rate_hz", cfg->max_rate_hz) ||
	    !cJSON_AddNumberToObject(limits, "max_clients", cfg->max_clients) ||
	    !cJSON_AddNumberToObject(limits, "user_max_rate_hz", cfg->user_max_rate_hz) ||
	    !cJSON_AddStringToObject(limits, "query_memory",
				     size_text(cfg->query_memory, buf, sizeof(buf))))
		goto out;

	sessions = cJSON_AddArrayToObject(root, "sessions");
	if (!sessions)
		goto out;
	for (uint32_t s = 0; s < cfg->nsessions; s++) {
		const struct fr_config_session *sess = &cfg->sessions[s];
		cJSON *js = cJSON_CreateObject(), *events;

		if (!js)
			goto out;
		cJSON_AddItemToArray(sessions, js);
		if (!cJSON_AddStringToObject(js, "name", sess->name))
			goto out;
		events = cJSON_AddArrayToObject(js, "events");
		if (!events)
			goto out;
		for (uint32_t e = 0; e < sess->nevents; e++) {
			cJSON *ev = cJSON_CreateObject();
			char name[FR_EVENT_NAME_MAX];

			if (!ev)
				goto out;
			cJSON_AddItemToArray(events, ev);
			if (!cJSON_AddStringToObject(ev, "event",
						     fr_event_format(sess->events[e].event, name,
								     sizeof(name))) ||
			    (fr_event_has_rate(sess->events[e].event) &&
			     !cJSON_AddNumberToObject(ev, "hz", sess->events[e].hz)))
				goto out;
		}
		if (sess->npids || sess->ncomms || sess->cgroup[0] || sess->has_uid) {
			cJSON *t = cJSON_AddObjectToObject(js, "targets"), *a;

			if (!t)
				goto out;
			if (sess->npids) {
				if (!(a = cJSON_AddArrayToObject(t, "pids")))
					goto out;
				for (uint32_t i = 0; i < sess->npids; i++)
					cJSON_AddItemToArray(a, cJSON_CreateNumber(sess->pids[i]));
			}
			if (sess->ncomms) {
				if (!(a = cJSON_AddArrayToObject(t, "comm")))
					goto out;
				for (uint32_t i = 0; i < sess->ncomms; i++)
					cJSON_AddItemToArray(a, cJSON_CreateString(sess->comms[i]));
			}
			if (sess->cgroup[0] && !cJSON_AddStringToObject(t, "cgroup", sess->cgroup))
				goto out;
			if (sess->has_uid && !cJSON_AddNumberToObject(t, "uid", sess->uid))
				goto out;
		}
		if (sess->nusers) {
			cJSON *a = cJSON_AddArrayToObject(js, "users");

			if (!a)
				goto out;
			for (uint32_t i = 0; i < sess->nusers; i++)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(sess->users[i]));
		}
		if (sess->ntriggers && !add_triggers(js, sess))
			goto out;
	}

	/* Returned to be released with free(), whatever allocator cJSON was
	 * built or hooked with. */
	text = cJSON_Print(root);
	if (text)
		out = strdup(text);
out:
	cJSON_free(text);
	cJSON_Delete(root);
	return out;
}
