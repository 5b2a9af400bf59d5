/* The "events" request and reply (ipc/msg_events.h). Like ipc/msg.c, a
 * decoder refuses what is out of range or of the wrong type and names it,
 * never clamps: the peer may be a hostile local user.
 */
#include "ipc/msg_events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/query/events.h"
#include "ipc/msg_int.h"
#include "ipc/proto.h"

const char *fr_ipc_events_types_format(uint64_t types, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t e = 0; e < FR_EVENT_COUNT && e < 64; e++) {
		if (!(types >> e & 1))
			continue;
		at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? "," : "",
				       fr_events_type_name(e));
	}
	return buf;
}

cJSON *fr_ipc_events_req_encode(const struct fr_ipc_events_req *r)
{
	cJSON *obj = fr_ipc_new_request("events");
	char types[512];

	if (!obj)
		return NULL;
	if ((r->window_ns && !fr_ipc_add_int(obj, "window_ns", r->window_ns)) ||
	    (r->has_from && !fr_ipc_add_int(obj, "from_ns", r->from_ns)) ||
	    (r->has_to && !fr_ipc_add_int(obj, "to_ns", r->to_ns)) ||
	    (r->types && !cJSON_AddStringToObject(obj, "types",
						  fr_ipc_events_types_format(r->types, types,
									     sizeof(types)))) ||
	    fr_ipc_targets_add(obj, &r->targets) < 0 ||
	    (r->json && !cJSON_AddTrueToObject(obj, "json")) ||
	    (r->series && !cJSON_AddTrueToObject(obj, "series"))) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

/* A boolean member: 0 or 1 into *out (absent: 0). */
static int get_bool(const cJSON *obj, const char *key, int *out, char *err, size_t errlen)
{
	const cJSON *v = fr_ipc_member(obj, key);

	*out = 0;
	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return fr_ipc_fail(err, errlen, "events: \"%s\" must be true or false", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

int fr_ipc_events_req_decode(const cJSON *obj, struct fr_ipc_events_req *out, char *err,
			     size_t errlen)
{
	const char *what = "events";
	const cJSON *types;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_int(obj, what, "window_ns", 1, INT64_MAX, &out->window_ns, err, errlen) <
		    0 ||
	    (out->has_from = fr_ipc_get_int(obj, what, "from_ns", 0, INT64_MAX, &out->from_ns, err,
					    errlen)) < 0 ||
	    (out->has_to = fr_ipc_get_int(obj, what, "to_ns", 0, INT64_MAX, &out->to_ns, err,
					  errlen)) < 0)
		return -EINVAL;
	if (!out->window_ns && !out->has_from)
		return fr_ipc_fail(err, errlen, "events needs \"window_ns\" or \"from_ns\"");
	if (out->window_ns && (out->has_from || out->has_to))
		return fr_ipc_fail(err, errlen,
				   "events: \"window_ns\" or \"from_ns\"/\"to_ns\", not both");
	types = fr_ipc_member(obj, "types");
	if (types) {
		char why[512];

		if (!cJSON_IsString(types) ||
		    fr_events_parse_types(types->valuestring, &out->types, why, sizeof(why)) < 0)
			return fr_ipc_fail(err, errlen, "events: \"types\": %s",
					   cJSON_IsString(types) ? why : "must be a string");
	}
	if (fr_ipc_targets_get(obj, what, &out->targets, err, errlen) < 0)
		return -EINVAL;
	if (out->targets.children || out->targets.nlabels || out->targets.label_key[0])
		return fr_ipc_fail(err, errlen,
				   "events: \"children\" and labels do not choose events");
	if (get_bool(obj, "json", &out->json, err, errlen) < 0 ||
	    get_bool(obj, "series", &out->series, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

cJSON *fr_ipc_events_reply_encode(const struct fr_ipc_events_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "events", (int64_t)r->events) ||
	    !fr_ipc_add_int(obj, "more", (int64_t)r->more) ||
	    !fr_ipc_add_int(obj, "bytes", (int64_t)r->bytes) ||
	    fr_ipc_add_warnings(obj, r->warnings,
				r->nwarnings < FR_IPC_MAX_WARNINGS ? r->nwarnings
								   : FR_IPC_MAX_WARNINGS) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_events_reply_decode(const cJSON *obj, struct fr_ipc_events_reply *out, char *err,
			       size_t errlen)
{
	const char *what = "events reply";

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_u64(obj, what, "events", &out->events, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "more", &out->more, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "bytes", &out->bytes, err, errlen) < 0)
		return -EINVAL;
	return fr_ipc_get_warnings(obj, what, out->warnings, &out->nwarnings, err, errlen);
}
