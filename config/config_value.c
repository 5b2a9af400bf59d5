/* The readers of single configuration values (integers, sizes, paths,
 * durations, users and groups) and the messages they fail with. Every
 * reader checks the JSON type and the range, and on failure names the JSON
 * path, what is accepted and what was given, so that a message alone
 * tells the user what to change.
 */
#include "config/config_int.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/parse.h"

int config_fail(struct config_ctx *c, const char *path, const char *fmt, ...)
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

void config_join(char *out, const char *parent, const char *key)
{
	out[0] = '\0';
	append(out, parent, PATH_MAX_LEN);
	if (parent[0])
		append(out, ".", 1);
	append(out, key, 64);
}

void config_join_index(char *out, const char *parent, int i)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "[%d]", i);
	out[0] = '\0';
	append(out, parent, PATH_MAX_LEN);
	append(out, idx, sizeof(idx));
}

/* Renders a value for "got ..." in messages: its JSON text, shortened. */
const char *config_describe(const cJSON *item, char *buf, size_t len)
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
int config_check_keys(struct config_ctx *c, const cJSON *obj, const char *path,
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

		config_join(sub, path, it->string);
		for (size_t i = 0; i < naccepted; i++)
			if (strcmp(it->string, accepted[i]) == 0)
				known = true;
		if (!known)
			return config_fail(c, sub, "unknown key (accepted: %s)", list);
		for (prev = obj->child; prev != it; prev = prev->next)
			if (strcmp(prev->string, it->string) == 0)
				return config_fail(c, sub, "given twice");
	}
	return 0;
}

int config_get_uint(struct config_ctx *c, const cJSON *item, const char *path, uint32_t min,
		    uint32_t max, uint32_t *out)
{
	char got[64];
	double d;

	if (!cJSON_IsNumber(item))
		return config_fail(c, path, "must be an integer %" PRIu32 "..%" PRIu32 ", got %s",
				   min, max, config_describe(item, got, sizeof(got)));
	d = item->valuedouble;
	if (!(d >= min && d <= max) || d != floor(d))
		return config_fail(c, path, "must be %" PRIu32 "..%" PRIu32 ", got %s", min, max,
				   config_describe(item, got, sizeof(got)));
	*out = (uint32_t)d;
	return 0;
}

int config_get_size(struct config_ctx *c, const cJSON *item, const char *path, uint64_t *out)
{
	char got[64];
	int ret;

	if (!cJSON_IsString(item))
		return config_fail(c, path, "must be a size string like \"256MiB\", got %s",
				   config_describe(item, got, sizeof(got)));
	ret = fr_parse_size(item->valuestring, out);
	if (ret == -ERANGE)
		return config_fail(c, path, "too large, got %s",
				   config_describe(item, got, sizeof(got)));
	if (ret < 0)
		return config_fail(c, path, "must be a size string like \"256MiB\", got %s",
				   config_describe(item, got, sizeof(got)));
	return 0;
}

/* A duration as the config accepts it; plain ns when the friendly form
 * would not read back exactly. */
char *config_duration_text(int64_t ns, char *buf, size_t len)
{
	int64_t back;

	fr_format_duration(ns, buf, len);
	if (fr_parse_duration(buf, &back) < 0 || back != ns)
		snprintf(buf, len, "%" PRId64 "ns", ns);
	return buf;
}

int config_get_path(struct config_ctx *c, const cJSON *item, const char *path, size_t max,
		    char **out)
{
	char got[64];
	size_t len;

	if (!cJSON_IsString(item) || !item->valuestring[0])
		return config_fail(c, path, "must be a non-empty path string, got %s",
				   config_describe(item, got, sizeof(got)));
	len = strlen(item->valuestring);
	if (len > max)
		return config_fail(c, path, "must be at most %zu bytes long, got %zu bytes", max,
				   len);
	*out = strdup(item->valuestring);
	return *out ? 0 : -ENOMEM;
}

/* An id written as a number, a JSON number or a string of digits: one
 * range for both forms. (uid_t)-1 means "no change" to chown and friends,
 * so it is no one's id. */
static int id_number(struct config_ctx *c, const cJSON *item, const char *path, const char *what,
		     double d, uint32_t *out)
{
	char got[64];

	if (!(d >= 0 && d < (double)UINT32_MAX) || d != floor(d))
		return config_fail(c, path, "must be a %s name or number 0..%u, got %s", what,
				   UINT32_MAX - 1, config_describe(item, got, sizeof(got)));
	*out = (uint32_t)d;
	return 0;
}

/* Looks a user or group name up in this machine's databases. Returns 0
 * with the id, -ENOMEM, or the positive errno of the get*nam_r functions
 * (ENOENT: no such name). */
static int lookup_id(const char *name, int group, uint32_t *out)
{
	long size = sysconf(group ? _SC_GETGR_R_SIZE_MAX : _SC_GETPW_R_SIZE_MAX);
	char *buf = NULL;
	int ret;

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

			ret = getgrnam_r(name, &gr, buf, (size_t)size, &res);
			if (!ret && res)
				*out = (uint32_t)gr.gr_gid;
			else if (!ret)
				ret = ENOENT;
		} else {
			struct passwd pw, *res = NULL;

			ret = getpwnam_r(name, &pw, buf, (size_t)size, &res);
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
	return ret;
}

/* A user or group of this machine, by name or number: a JSON number, or a
 * string holding a name or a number. Names are resolved here, once, so a
 * typo is a config error rather than a socket nobody can reach. Returns 0
 * with the id in `out`, or -EINVAL (-ENOMEM) with the message set. */
int config_get_id(struct config_ctx *c, const cJSON *item, const char *path, int group,
		  uint32_t *out)
{
	const char *what = group ? "group" : "user";
	const char *text;
	char got[64], *end;
	int ret;

	if (cJSON_IsNumber(item))
		return id_number(c, item, path, what, item->valuedouble, out);
	if (!cJSON_IsString(item) || !item->valuestring[0])
		return config_fail(c, path, "must be a %s name or number, got %s", what,
				   config_describe(item, got, sizeof(got)));
	text = item->valuestring;
	if (text[0] >= '0' && text[0] <= '9') {
		double d;

		errno = 0;
		d = (double)strtoull(text, &end, 10);
		if (!*end)
			return id_number(c, item, path, what, errno ? -1 : d, out);
	}
	ret = lookup_id(text, group, out);
	if (ret == -ENOMEM)
		return ret;
	if (ret == ENOENT)
		return config_fail(c, path, "no %s named %s on this machine", what,
				   config_describe(item, got, sizeof(got)));
	if (ret)
		return config_fail(c, path, "cannot look up %s %s: %s", what,
				   config_describe(item, got, sizeof(got)), strerror(ret));
	return 0;
}

/* A duration of at least `min_ns`; `like` shows examples in messages. */
int config_get_duration(struct config_ctx *c, const cJSON *item, const char *path, int64_t min_ns,
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
		return config_fail(c, path, "must be a duration of at least %s like %s, got %s",
				   fr_format_duration(min_ns, min, sizeof(min)), like,
				   config_describe(item, got, sizeof(got)));
	return config_fail(c, path, "must be a duration like %s, got %s", like,
			   config_describe(item, got, sizeof(got)));
}
