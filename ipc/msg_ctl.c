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
#include "ipc/msg_int.h"
#include "ipc/proto.h"

/* ---- reload ------------------------------------------------------------ */

cJSON *fr_ipc_reload_req_encode(void)
{
	return fr_ipc_new_request("reload");
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
	const cJSON *config = fr_ipc_member(obj, "config"),
		    *changed = fr_ipc_member(obj, "changed"), *it;
	int64_t more = 0;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(config) || strlen(config->valuestring) >= sizeof(out->config))
		return fr_ipc_fail(err, errlen, "%s: \"config\" must be a path", what);
	snprintf(out->config, sizeof(out->config), "%s", config->valuestring);
	if (changed && !cJSON_IsArray(changed))
		return fr_ipc_fail(err, errlen, "%s: \"changed\" must be an array of strings",
				   what);
	cJSON_ArrayForEach(it, changed) {
		if (!cJSON_IsString(it) || strlen(it->valuestring) >= FR_IPC_CHANGE_MAX)
			return fr_ipc_fail(err, errlen,
					   "%s: \"changed\" must hold strings of at most %d "
					   "bytes",
					   what, FR_IPC_CHANGE_MAX - 1);
		if (out->nchanged >= FR_IPC_RELOAD_MAX_CHANGES)
			return fr_ipc_fail(err, errlen,
					   "%s: \"changed\" holds more than %d entries", what,
					   FR_IPC_RELOAD_MAX_CHANGES);
		snprintf(out->changed[out->nchanged++], FR_IPC_CHANGE_MAX, "%s", it->valuestring);
	}
	if (fr_ipc_get_int(obj, what, "more", 0, INT32_MAX, &more, err, errlen) < 0)
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
	cJSON *obj = fr_ipc_new_request("trigger");

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
	const cJSON *name = fr_ipc_member(obj, "session"), *reason = fr_ipc_member(obj, "reason");

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(name) || !name->valuestring[0] ||
	    strlen(name->valuestring) >= sizeof(out->session))
		return fr_ipc_fail(err, errlen, "trigger: \"session\" must name a session");
	snprintf(out->session, sizeof(out->session), "%s", name->valuestring);
	if (reason && (!cJSON_IsString(reason) || !fr_ipc_reason_ok(reason->valuestring)))
		return fr_ipc_fail(err, errlen,
				   "trigger: \"reason\" must be 1..%d bytes of text without control "
				   "characters",
				   FR_IPC_REASON_MAX - 1);
	if (reason)
		snprintf(out->reason, sizeof(out->reason), "%s", reason->valuestring);
	return fr_ipc_get_int(obj, "trigger", "window_ns", FR_IPC_DUMP_WINDOW_MIN_NS,
			      FR_IPC_DUMP_WINDOW_MAX_NS, &out->window_ns, err, errlen) < 0
		       ? -EINVAL
		       : 0;
}
