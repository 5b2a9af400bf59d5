/* The control messages (ipc/msg_ctl.h): reload and trigger, encoded and
 * decoded here only, so the CLI and the daemon cannot drift apart. Both
 * are small; what they carry from a user (a session name, a reason) is
 * bounded and checked here before the daemon sees it. */
#include "ipc/msg_ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msg.h"
#include "ipc/proto.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const cJSON *member(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer member within min..max into *out (0 when absent): a parsed
 * number or the raw text fr_ipc_add_int() builds. Returns 0 or -EINVAL. */
static int get_int(const cJSON *obj, const char *what, const char *key, int64_t min, int64_t max,
		   int64_t *out, char *err, size_t errlen)
{
	const cJSON *v = member(obj, key);
	char *end = NULL;
	double d = 0;

	*out = 0;
	if (!v)
		return 0;
	if (cJSON_IsNumber(v))
		d = v->valuedouble;
	else if (cJSON_IsRaw(v) && v->valuestring)
		d = strtod(v->valuestring, &end);
	if ((!cJSON_IsNumber(v) && (!end || end == v->valuestring || *end)) ||
	    !(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
		return fail(err, errlen, "%s: \"%s\" must be an integer", what, key);
	if (d < (double)min || d > (double)max)
		return fail(err, errlen, "%s: \"%s\" must be %lld..%lld, got %.0f", what, key,
			    (long long)min, (long long)max, d);
	*out = (int64_t)d;
	return 0;
}

static cJSON *new_request(const char *cmd)
{
	cJSON *obj = cJSON_CreateObject();

	if (obj && !cJSON_AddStringToObject(obj, "req", cmd)) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

/* ---- reload ------------------------------------------------------------ */

cJSON *fr_ipc_reload_req_encode(void)
{
	return new_request("reload");
}

void fr_ipc_reload_change(struct fr_ipc_reload_reply *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nchanged >= FR_IPC_RELOAD_MAX_CHANGES) {
		if (r->more < INT32_MAX)
			r->more++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(r->changed[r->nchanged++], FR_IPC_CHANGE_MAX, fmt, ap);
	va_end(ap);
}

cJSON *fr_ipc_reload_reply_encode(const struct fr_ipc_reload_reply *r)
{
	cJSON *obj = fr_ipc_ok(), *list;

	if (!obj)
		return NULL;
	list = cJSON_AddArrayToObject(obj, "changed");
	if (!cJSON_AddStringToObject(obj, "config", r->config) || !list ||
	    (r->more && !fr_ipc_add_int(obj, "more", r->more)))
		goto fail;
	for (uint32_t i = 0; i < r->nchanged && i < FR_IPC_RELOAD_MAX_CHANGES; i++) {
		cJSON *s = cJSON_CreateString(r->changed[i]);

		if (!s || !cJSON_AddItemToArray(list, s)) {
			cJSON_Delete(s);
			goto fail;
		}
	}
	return obj;
fail:
	cJSON_Delete(obj);
	return NULL;
}

int fr_ipc_reload_reply_decode(const cJSON *obj, struct fr_ipc_reload_reply *out, char *err,
			       size_t errlen)
{
	const char *what = "reload reply";
	const cJSON *config = member(obj, "config"), *changed = member(obj, "changed"), *it;
	int64_t more;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(config) || strlen(config->valuestring) >= sizeof(out->config))
		return fail(err, errlen, "%s: \"config\" must be a path", what);
	snprintf(out->config, sizeof(out->config), "%s", config->valuestring);
	if (changed && !cJSON_IsArray(changed))
		return fail(err, errlen, "%s: \"changed\" must be an array of strings", what);
	cJSON_ArrayForEach(it, changed) {
		if (!cJSON_IsString(it) || strlen(it->valuestring) >= FR_IPC_CHANGE_MAX)
			return fail(err, errlen,
				    "%s: \"changed\" must hold strings of at most %d "
				    "bytes",
				    what, FR_IPC_CHANGE_MAX - 1);
		if (out->nchanged >= FR_IPC_RELOAD_MAX_CHANGES)
			return fail(err, errlen, "%s: \"changed\" holds more than %d entries", what,
				    FR_IPC_RELOAD_MAX_CHANGES);
		snprintf(out->changed[out->nchanged++], FR_IPC_CHANGE_MAX, "%s", it->valuestring);
	}
	if (get_int(obj, what, "more", 0, INT32_MAX, &more, err, errlen) < 0)
		return -EINVAL;
	out->more = (uint32_t)more;
	return 0;
}

/* ---- trigger ----------------------------------------------------------- */

int fr_ipc_reason_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= FR_IPC_REASON_MAX)
		return 0;
	/* Control characters would forge lines in the log and the dump's
	 * comments; the rest of UTF-8 is the user's to write. */
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

cJSON *fr_ipc_trigger_req_encode(const struct fr_ipc_trigger_req *r)
{
	cJSON *obj = new_request("trigger");

	if (!obj)
		return NULL;
	if (!cJSON_AddStringToObject(obj, "session", r->session) ||
	    (r->reason[0] && !cJSON_AddStringToObject(obj, "reason", r->reason)) ||
	    (r->window_ns && !fr_ipc_add_int(obj, "window_ns", r->window_ns))) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_trigger_req_decode(const cJSON *obj, struct fr_ipc_trigger_req *out, char *err,
			      size_t errlen)
{
	const cJSON *name = member(obj, "session"), *reason = member(obj, "reason");

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(name) || !name->valuestring[0] ||
	    strlen(name->valuestring) >= sizeof(out->session))
		return fail(err, errlen, "trigger: \"session\" must name a session");
	snprintf(out->session, sizeof(out->session), "%s", name->valuestring);
	if (reason && (!cJSON_IsString(reason) || !fr_ipc_reason_ok(reason->valuestring)))
		return fail(err, errlen,
			    "trigger: \"reason\" must be 1..%d bytes of text without control "
			    "characters",
			    FR_IPC_REASON_MAX - 1);
	if (reason)
		snprintf(out->reason, sizeof(out->reason), "%s", reason->valuestring);
	return get_int(obj, "trigger", "window_ns", FR_IPC_DUMP_WINDOW_MIN_NS,
		       FR_IPC_DUMP_WINDOW_MAX_NS, &out->window_ns, err, errlen);
}
