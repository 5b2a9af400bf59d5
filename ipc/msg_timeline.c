/* The "timeline" request and reply (ipc/msg_timeline.h). Like ipc/msg.c,
 * a decoder refuses what is out of range or of the wrong type and names
 * it, never clamps: the peer may be a hostile local user.
 */
#include "ipc/msg_timeline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/store/sample.h"
#include "ipc/msg_int.h"
#include "ipc/proto.h"

cJSON *fr_ipc_timeline_req_encode(const struct fr_ipc_timeline_req *r)
{
	cJSON *obj = cJSON_CreateObject();
	char ev[FR_EVENT_NAME_MAX], by[FR_LIMIT_LABEL_LEN + 8];

	if (!obj)
		return NULL;
	if (!cJSON_AddStringToObject(obj, "req", "timeline") ||
	    (r->window_ns && !fr_ipc_add_int(obj, "window_ns", r->window_ns)) ||
	    (r->has_from && !fr_ipc_add_int(obj, "from_ns", r->from_ns)) ||
	    (r->has_to && !fr_ipc_add_int(obj, "to_ns", r->to_ns)) ||
	    (r->step_ns && !fr_ipc_add_int(obj, "step_ns", r->step_ns)) ||
	    !cJSON_AddStringToObject(obj, "event", fr_event_format(r->event, ev, sizeof(ev))) ||
	    !cJSON_AddStringToObject(obj, "by",
				     fr_timeline_by_name(r->by, r->label_key, by, sizeof(by))) ||
	    (r->top && !fr_ipc_add_int(obj, "top", r->top)) ||
	    fr_ipc_targets_add(obj, &r->targets) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_timeline_req_decode(const cJSON *obj, struct fr_ipc_timeline_req *out, char *err,
			       size_t errlen)
{
	const char *what = "timeline";
	const cJSON *ev, *by;
	struct fr_timeline_request tr = {0};
	int64_t step = 0, top = 0;
	int64_t id;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_int(obj, what, "window_ns", 1, INT64_MAX, &out->window_ns, err, errlen) <
		    0 ||
	    (out->has_from = fr_ipc_get_int(obj, what, "from_ns", 0, INT64_MAX, &out->from_ns, err,
					    errlen)) < 0 ||
	    (out->has_to = fr_ipc_get_int(obj, what, "to_ns", 0, INT64_MAX, &out->to_ns, err,
					  errlen)) < 0 ||
	    fr_ipc_get_int(obj, what, "step_ns", 0, INT64_MAX, &step, err, errlen) < 0 ||
	    fr_ipc_get_int(obj, what, "top", 0, FR_TIMELINE_TOP_MAX, &top, err, errlen) < 0)
		return -EINVAL;
	if (!out->window_ns && !out->has_from)
		return fr_ipc_fail(err, errlen, "timeline needs \"window_ns\" or \"from_ns\"");
	if (out->window_ns && (out->has_from || out->has_to))
		return fr_ipc_fail(err, errlen,
				   "timeline: \"window_ns\" or \"from_ns\"/\"to_ns\", not both");
	if (step && step < 1000000)
		return fr_ipc_fail(err, errlen,
				   "timeline: \"step_ns\" must be at least 1000000 (1ms)");
	out->step_ns = step;
	out->top = (uint32_t)top;
	ev = fr_ipc_member(obj, "event");
	id = ev ? (cJSON_IsString(ev) ? fr_event_lookup(ev->valuestring) : -ENOENT) : FR_EVENT_CPU;
	if (id < 0 || FR_EVENT_IS_OPEN_WAIT((uint32_t)id))
		return fr_ipc_fail(err, errlen, "timeline: \"event\" must be one of: %s",
				   FR_EVENT_NAMES);
	out->event = (uint32_t)id;
	by = fr_ipc_member(obj, "by");
	if (by && (!cJSON_IsString(by) || fr_timeline_parse_by(by->valuestring, &tr) < 0))
		return fr_ipc_fail(
			err, errlen,
			"timeline: \"by\" must be process, comm, cgroup or label:KEY (a key "
			"of 1 to %d characters)",
			FR_LIMIT_LABEL_LEN - 1);
	out->by = tr.by;
	memcpy(out->label_key, tr.label_key, sizeof(out->label_key));
	if (fr_ipc_targets_get(obj, what, &out->targets, err, errlen) < 0)
		return -EINVAL;
	if (out->targets.children || out->targets.cgroup[0] ||
	    fr_targets_labels_given(&out->targets))
		return fr_ipc_fail(err, errlen,
				   "timeline: only \"pids\" and \"comm\" narrow a timeline");
	return 0;
}

cJSON *fr_ipc_timeline_reply_encode(const struct fr_ipc_timeline_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "samples", (int64_t)r->samples) ||
	    !fr_ipc_add_int(obj, "groups", (int64_t)r->groups) ||
	    !fr_ipc_add_int(obj, "bytes", (int64_t)r->bytes) ||
	    fr_ipc_add_warnings(obj, r->warnings,
				r->nwarnings < FR_IPC_MAX_WARNINGS ? r->nwarnings
								   : FR_IPC_MAX_WARNINGS) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_timeline_reply_decode(const cJSON *obj, struct fr_ipc_timeline_reply *out, char *err,
				 size_t errlen)
{
	const char *what = "timeline reply";

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_u64(obj, what, "samples", &out->samples, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "groups", &out->groups, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "bytes", &out->bytes, err, errlen) < 0)
		return -EINVAL;
	return fr_ipc_get_warnings(obj, what, out->warnings, &out->nwarnings, err, errlen);
}
