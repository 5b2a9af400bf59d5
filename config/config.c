/* The flightrecd configuration: the embedded default, parsing and strict
 * validation of a JSON file, and printing of the effective result.
 *
 * Validation walks the document once, in a fixed order (top-level keys,
 * limits, ring, socket, sessions), and stops at the first problem, which
 * it reports as "SOURCE: JSON.PATH: what is wrong, what is accepted". The
 * limits come first because they bound other values (an event's hz). A
 * key that is absent takes its default; a key that is present must be
 * right, and a key nobody knows is an error, so a typo never silently
 * falls back to a default. The result is all or nothing: on any error the
 * struct is left empty.
 */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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
#define DEFAULT_SESSION "default"
#define DEFAULT_HZ 99

#define MAX_RATE_HZ_LIMIT 100000
#define MAX_CLIENTS_LIMIT 1024
#define MIN_SEGMENT_SIZE (64ull << 10)
#define SEGMENT_ALIGN 4096ull

/* Config files are small; this bounds what a mistaken path (a log file, a
 * device) can make the daemon read. */
#define MAX_CONFIG_BYTES (1u << 20)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char fr_config_default_json[] =
	"{\n"
	"\t\"ring\": {\"size\": \"256MiB\", \"segment\": \"1MiB\", \"sync\": \"1s\"},\n"
	"\t\"limits\": {\"max_rate_hz\": 10000, \"max_clients\": 64},\n"
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
	static const char *const keys[] = {"max_rate_hz", "max_clients"};
	const cJSON *it;
	int ret;

	if (!limits)
		return 0;
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

/* "targets": {"pids": [N...], "comm": ["name"...], "cgroup": "/path"}. */
static int parse_targets(struct ctx *c, const cJSON *t, const char *path,
			 struct fr_config_session *sess)
{
	static const char *const keys[] = {"pids", "comm", "cgroup"};
	char sub[PATH_MAX_LEN], item[PATH_MAX_LEN], got[64];
	const cJSON *pids, *comm, *cgroup, *v;
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
	return 0;
}

static int parse_session(struct ctx *c, const cJSON *js, const char *path,
			 struct fr_config *cfg)
{
	static const char *const keys[] = {"name", "targets", "events"};
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
	static const char *const keys[] = {"ring", "socket", "limits", "sessions"};
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
	if (sock) {
		ret = get_path(c, sock, "socket", sizeof(((struct sockaddr_un *)0)->sun_path) - 1,
			       &cfg->socket_path);
		if (ret < 0)
			return ret;
	}
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

static char *duration_text(int64_t ns, char *buf, size_t len)
{
	int64_t back;

	fr_format_duration(ns, buf, len);
	if (fr_parse_duration(buf, &back) < 0 || back != ns)
		snprintf(buf, len, "%" PRId64 "ns", ns);
	return buf;
}

char *fr_config_to_json(const struct fr_config *cfg)
{
	cJSON *root, *ring, *limits, *sessions;
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
	if (cfg->socket_path && !cJSON_AddStringToObject(root, "socket", cfg->socket_path))
		goto out;

	limits = cJSON_AddObjectToObject(root, "limits");
	if (!limits || !cJSON_AddNumberToObject(limits, "max_rate_hz", cfg->max_rate_hz) ||
	    !cJSON_AddNumberToObject(limits, "max_clients", cfg->max_clients))
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
		if (sess->npids || sess->ncomms || sess->cgroup[0]) {
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
		}
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
