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
#include "ipc/proto.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const cJSON *member(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Integer member `key` within min..max: 1 present, 0 absent, -EINVAL.
 * Accepts a parsed number or the raw text fr_ipc_add_int() builds. */
static int get_int(const cJSON *obj, const char *what, const char *key, int64_t min, int64_t max,
		   int64_t *out, char *err, size_t errlen)
{
	const cJSON *v = member(obj, key);
	long long ll;
	double d;
	int n = 0;

	if (!v)
		return 0;
	if (cJSON_IsRaw(v) && v->valuestring && sscanf(v->valuestring, "%lld%n", &ll, &n) == 1 &&
	    !v->valuestring[n]) {
		d = (double)ll;
	} else if (cJSON_IsNumber(v) && v->valuedouble >= -9223372036854775808.0 &&
		   v->valuedouble < 9223372036854775808.0 &&
		   v->valuedouble == (double)(int64_t)v->valuedouble) {
		d = v->valuedouble;
		ll = (long long)d;
	} else {
		return fail(err, errlen, "%s: \"%s\" must be an integer", what, key);
	}
	if (ll < min || ll > max)
		return fail(err, errlen, "%s: \"%s\" must be %lld..%lld, got %.0f", what, key,
			    (long long)min, (long long)max, d);
	*out = ll;
	return 1;
}

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
	    (r->top && !fr_ipc_add_int(obj, "top", r->top))) {
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
	if (get_int(obj, what, "window_ns", 1, INT64_MAX, &out->window_ns, err, errlen) < 0 ||
	    (out->has_from =
		     get_int(obj, what, "from_ns", 0, INT64_MAX, &out->from_ns, err, errlen)) < 0 ||
	    (out->has_to = get_int(obj, what, "to_ns", 0, INT64_MAX, &out->to_ns, err, errlen)) <
		    0 ||
	    get_int(obj, what, "step_ns", 0, INT64_MAX, &step, err, errlen) < 0 ||
	    get_int(obj, what, "top", 0, FR_TIMELINE_TOP_MAX, &top, err, errlen) < 0)
		return -EINVAL;
	if (!out->window_ns && !out->has_from)
		return fail(err, errlen, "timeline needs \"window_ns\" or \"from_ns\"");
	if (out->window_ns && (out->has_from || out->has_to))
		return fail(err, errlen,
			    "timeline: \"window_ns\" or \"from_ns\"/\"to_ns\", not both");
	if (step && step < 1000000)
		return fail(err, errlen, "timeline: \"step_ns\" must be at least 1000000 (1ms)");
	out->step_ns = step;
	out->top = (uint32_t)top;
	ev = member(obj, "event");
	id = ev ? (cJSON_IsString(ev) ? fr_event_lookup(ev->valuestring) : -ENOENT) : FR_EVENT_CPU;
	if (id < 0 || id == FR_EVENT_OFFCPU_OPEN)
		return fail(err, errlen, "timeline: \"event\" must be one of: %s", FR_EVENT_NAMES);
	out->event = (uint32_t)id;
	by = member(obj, "by");
	if (by && (!cJSON_IsString(by) || fr_timeline_parse_by(by->valuestring, &tr) < 0))
		return fail(err, errlen,
			    "timeline: \"by\" must be process, comm, cgroup or label:KEY (a key "
			    "of 1 to %d characters)",
			    FR_LIMIT_LABEL_LEN - 1);
	out->by = tr.by;
	memcpy(out->label_key, tr.label_key, sizeof(out->label_key));
	return 0;
}

cJSON *fr_ipc_timeline_reply_encode(const struct fr_ipc_timeline_reply *r)
{
	cJSON *obj = fr_ipc_ok(), *arr;

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "samples", (int64_t)r->samples) ||
	    !fr_ipc_add_int(obj, "groups", (int64_t)r->groups) ||
	    !fr_ipc_add_int(obj, "bytes", (int64_t)r->bytes) ||
	    !(arr = cJSON_AddArrayToObject(obj, "warnings")))
		goto err;
	for (uint32_t i = 0; i < r->nwarnings && i < FR_IPC_MAX_WARNINGS; i++) {
		cJSON *s = cJSON_CreateString(r->warnings[i]);

		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			goto err;
		}
	}
	return obj;
err:
	cJSON_Delete(obj);
	return NULL;
}

int fr_ipc_timeline_reply_decode(const cJSON *obj, struct fr_ipc_timeline_reply *out, char *err,
				 size_t errlen)
{
	const char *what = "timeline reply";
	const cJSON *arr, *w;
	int64_t v[3] = {0, 0, 0};

	memset(out, 0, sizeof(*out));
	if (get_int(obj, what, "samples", 0, INT64_MAX, &v[0], err, errlen) < 0 ||
	    get_int(obj, what, "groups", 0, INT64_MAX, &v[1], err, errlen) < 0 ||
	    get_int(obj, what, "bytes", 0, INT64_MAX, &v[2], err, errlen) < 0)
		return -EINVAL;
	out->samples = (uint64_t)v[0];
	out->groups = (uint64_t)v[1];
	out->bytes = (uint64_t)v[2];
	arr = member(obj, "warnings");
	if (arr && !cJSON_IsArray(arr))
		return fail(err, errlen, "%s: \"warnings\" must be an array of strings", what);
	cJSON_ArrayForEach(w, arr) {
		if (!cJSON_IsString(w))
			return fail(err, errlen, "%s: \"warnings\" must be an array of strings",
				    what);
		fr_ipc_warn(out->warnings, &out->nwarnings, w->valuestring);
	}
	return 0;
}
