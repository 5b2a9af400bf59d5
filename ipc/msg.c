/* Encoders and decoders of the protocol's messages (ipc/msg.h).
 *
 * A decoder reads only what it is given: a member of the wrong type or out
 * of range is refused with a message naming it, never clamped, because the
 * peer on the other side may be a script or a hostile local user. The
 * request decoders' messages are those the daemon has always answered, so
 * scripts that match them keep working.
 */
#include "ipc/msg.h"
#include "ipc/msg_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/sample.h"
#include "ipc/proto.h"

/* Reads "events" (absent: [cpu]). Returns 0 or -EINVAL. */
static int get_events(const cJSON *obj, const char *cmd, uint32_t *ids, uint32_t *n, char *err,
		      size_t errlen)
{
	const cJSON *events = fr_ipc_member(obj, "events"), *e;

	*n = 0;
	if (!events) {
		ids[(*n)++] = FR_EVENT_CPU;
		return 0;
	}
	if (!cJSON_IsArray(events) || cJSON_GetArraySize(events) == 0)
		return fr_ipc_fail(err, errlen,
				   "%s: \"events\" must be a non-empty array of event names", cmd);
	cJSON_ArrayForEach(e, events) {
		int64_t id = cJSON_IsString(e) ? fr_event_lookup(e->valuestring) : -ENOENT;

		if (id < 0)
			return fr_ipc_fail(err, errlen,
					   "%s: unknown event %s%s%s (accepted: " FR_EVENT_NAMES
					   ")",
					   cmd, cJSON_IsString(e) ? "\"" : "",
					   cJSON_IsString(e) ? e->valuestring : "(not a string)",
					   cJSON_IsString(e) ? "\"" : "");
		for (uint32_t i = 0; i < *n; i++)
			if (ids[i] == (uint32_t)id)
				return fr_ipc_fail(err, errlen, "%s: event \"%s\" is listed twice",
						   cmd, e->valuestring);
		if (*n == FR_LIMIT_EVENTS)
			return fr_ipc_fail(err, errlen, "%s: at most %d events per request", cmd,
					   FR_LIMIT_EVENTS);
		ids[(*n)++] = (uint32_t)id;
	}
	return 0;
}

/* "event_hz": the rate of each of "events", in its order (0: "hz"), so one
 * request asks cpu at 99 and page-faults at 19. Needs "events" of the
 * same length. All 0 when absent. */
static int get_event_hz(const cJSON *obj, const char *cmd, uint32_t n, int has_events, uint32_t *hz,
			char *err, size_t errlen)
{
	const cJSON *arr = fr_ipc_member(obj, "event_hz"), *e;
	uint32_t k = 0;

	memset(hz, 0, FR_LIMIT_EVENTS * sizeof(*hz));
	if (!arr)
		return 0;
	if (!has_events || !cJSON_IsArray(arr) || (uint32_t)cJSON_GetArraySize(arr) != n)
		return fr_ipc_fail(err, errlen,
				   "%s: \"event_hz\" must be an array of one rate per entry of "
				   "\"events\"",
				   cmd);
	cJSON_ArrayForEach(e, arr) {
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > INT32_MAX ||
		    e->valuedouble != (double)(int64_t)e->valuedouble)
			return fr_ipc_fail(err, errlen,
					   "%s: \"event_hz\" entries must be integers of 0..%d",
					   cmd, INT32_MAX);
		hz[k++] = (uint32_t)e->valuedouble;
	}
	return 0;
}

/* Adds "event_hz" when some event has a rate of its own. */
static int add_event_hz(cJSON *obj, const uint32_t *hz, uint32_t n)
{
	cJSON *arr;
	uint32_t i;

	for (i = 0; i < n && !hz[i]; i++)
		;
	if (i == n)
		return 0;
	arr = cJSON_AddArrayToObject(obj, "event_hz");
	if (!arr)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber(hz[i])))
			return -ENOMEM;
	return 0;
}

static int get_pids(const cJSON *obj, const char *cmd, struct fr_targets *t, char *err,
		    size_t errlen)
{
	const cJSON *pids = fr_ipc_member(obj, "pids"), *p;

	if (!pids)
		return 0;
	if (!cJSON_IsArray(pids))
		return fr_ipc_fail(err, errlen, "%s: \"pids\" must be an array of process ids",
				   cmd);
	cJSON_ArrayForEach(p, pids) {
		if (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > INT32_MAX ||
		    p->valuedouble != (double)(int64_t)p->valuedouble)
			return fr_ipc_fail(err, errlen,
					   "%s: \"pids\" must hold positive process ids", cmd);
		if (t->npids == FR_LIMIT_PIDS)
			return fr_ipc_fail(err, errlen, "%s: at most %d pids per request", cmd,
					   FR_LIMIT_PIDS);
		t->pids[t->npids++] = (uint32_t)p->valuedouble;
	}
	return 0;
}

static int get_comms(const cJSON *obj, const char *cmd, struct fr_targets *t, char *err,
		     size_t errlen)
{
	const cJSON *comm = fr_ipc_member(obj, "comm"), *p;

	if (!comm)
		return 0;
	if (!cJSON_IsArray(comm))
		return fr_ipc_fail(err, errlen, "%s: \"comm\" must be an array of command names",
				   cmd);
	cJSON_ArrayForEach(p, comm) {
		if (!cJSON_IsString(p) || !p->valuestring[0] ||
		    strlen(p->valuestring) >= FR_LIMIT_COMM_LEN)
			return fr_ipc_fail(err, errlen,
					   "%s: \"comm\" must hold command names of 1..%d "
					   "characters (as the kernel keeps them)",
					   cmd, FR_LIMIT_COMM_LEN - 1);
		if (t->ncomms == FR_LIMIT_COMMS)
			return fr_ipc_fail(err, errlen, "%s: at most %d command names per request",
					   cmd, FR_LIMIT_COMMS);
		snprintf(t->comms[t->ncomms++], FR_LIMIT_COMM_LEN, "%s", p->valuestring);
	}
	return 0;
}

/* Reads the label filter: "labels": ["key=value", ...], "label_key". */
static int get_labels(const cJSON *obj, const char *cmd, struct fr_targets *t, char *err,
		      size_t errlen)
{
	const cJSON *labels = fr_ipc_member(obj, "labels"), *key = fr_ipc_member(obj, "label_key"),
		    *v;

	if (labels) {
		if (!cJSON_IsArray(labels) || cJSON_GetArraySize(labels) > FR_LIMIT_LABELS)
			return fr_ipc_fail(err, errlen,
					   "%s: \"labels\" must be at most %d \"key=value\"", cmd,
					   FR_LIMIT_LABELS);
		cJSON_ArrayForEach(v, labels) {
			if (!cJSON_IsString(v) || fr_targets_add_label(t, v->valuestring) < 0)
				return fr_ipc_fail(
					err, errlen,
					"%s: \"labels\" must be \"key=value\" strings of at "
					"most %d characters each side",
					cmd, FR_LIMIT_LABEL_LEN - 1);
		}
	}
	if (key && (!cJSON_IsString(key) || fr_targets_set_label_key(t, key->valuestring) < 0))
		return fr_ipc_fail(err, errlen,
				   "%s: \"label_key\" must be a key of 1..%d characters", cmd,
				   FR_LIMIT_LABEL_LEN - 1);
	return 0;
}

/* Reads the targets: "pids", "comm", "children" (with pids), "cgroup",
 * and the label filter. */
static int get_targets(const cJSON *obj, const char *cmd, struct fr_targets *t, char *err,
		       size_t errlen)
{
	const cJSON *cgroup = fr_ipc_member(obj, "cgroup");
	const cJSON *children = fr_ipc_member(obj, "children");

	if (get_pids(obj, cmd, t, err, errlen) < 0 || get_comms(obj, cmd, t, err, errlen) < 0 ||
	    get_labels(obj, cmd, t, err, errlen) < 0)
		return -EINVAL;
	if (children) {
		if (!cJSON_IsBool(children))
			return fr_ipc_fail(err, errlen, "%s: \"children\" must be true or false",
					   cmd);
		t->children = cJSON_IsTrue(children);
		if (t->children && !t->npids)
			return fr_ipc_fail(err, errlen, "%s: \"children\" goes with \"pids\"", cmd);
	}
	if (cgroup) {
		if (!cJSON_IsString(cgroup) || cgroup->valuestring[0] != '/' ||
		    strlen(cgroup->valuestring) >= FR_LIMIT_CGROUP_LEN)
			return fr_ipc_fail(err, errlen,
					   "%s: \"cgroup\" must be a cgroup v2 path like "
					   "\"/system.slice/nginx.service\" (at most %d characters)",
					   cmd, FR_LIMIT_CGROUP_LEN - 1);
		snprintf(t->cgroup, sizeof(t->cgroup), "%s", cgroup->valuestring);
	}
	return 0;
}

/* Adds "events": [names] when n > 0. Returns 0 or -ENOMEM. */
static int add_event_names(cJSON *obj, const uint32_t *ids, uint32_t n)
{
	char name[FR_EVENT_NAME_MAX];
	cJSON *arr;

	if (!n)
		return 0;
	arr = cJSON_AddArrayToObject(obj, "events");
	if (!arr)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		cJSON *s = cJSON_CreateString(fr_event_format(ids[i], name, sizeof(name)));

		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			return -ENOMEM;
		}
	}
	return 0;
}

void fr_ipc_warn(char (*warnings)[FR_IPC_WARNING_MAX], uint32_t *nwarnings, const char *text)
{
	if (*nwarnings == FR_IPC_MAX_WARNINGS)
		return;
	snprintf(warnings[(*nwarnings)++], FR_IPC_WARNING_MAX, "%s", text);
}

/* Reads a reply's event name into *id. */
static int get_event_name(const cJSON *ev, const char *what, uint32_t *id, char *err, size_t errlen)
{
	const cJSON *name = fr_ipc_member(ev, "event");
	int64_t v = cJSON_IsString(name) ? fr_event_lookup(name->valuestring) : -ENOENT;

	if (v < 0)
		return fr_ipc_fail(err, errlen,
				   "%s: \"events\" must hold objects naming a known \"event\"",
				   what);
	*id = (uint32_t)v;
	return 0;
}

/* Reads the array member "events" of a reply: at most `max` objects. */
static int get_event_array(const cJSON *obj, const char *what, uint32_t max, const cJSON **arr,
			   char *err, size_t errlen)
{
	*arr = fr_ipc_member(obj, "events");
	if (*arr && (!cJSON_IsArray(*arr) || (uint32_t)cJSON_GetArraySize(*arr) > max))
		return fr_ipc_fail(err, errlen,
				   "%s: \"events\" must be an array of at most %u objects", what,
				   max);
	return 0;
}

/* ---- attach ----------------------------------------------------------- */

int fr_ipc_cursor_name_ok(const char *name)
{
	size_t n = 0;

	for (; name[n]; n++)
		if (n >= FR_IPC_CURSOR_NAME_MAX ||
		    !((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= 'A' && name[n] <= 'Z') ||
		      (name[n] >= '0' && name[n] <= '9') || name[n] == '_' || name[n] == '-' ||
		      name[n] == '.'))
			return 0;
	return n > 0;
}

static int add_targets(cJSON *obj, const struct fr_targets *t)
{
	cJSON *arr;

	if (t->npids) {
		if (!(arr = cJSON_AddArrayToObject(obj, "pids")))
			return -ENOMEM;
		for (uint32_t i = 0; i < t->npids; i++)
			if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber(t->pids[i])))
				return -ENOMEM;
	}
	if (t->ncomms) {
		if (!(arr = cJSON_AddArrayToObject(obj, "comm")))
			return -ENOMEM;
		for (uint32_t i = 0; i < t->ncomms; i++)
			if (!cJSON_AddItemToArray(arr, cJSON_CreateString(t->comms[i])))
				return -ENOMEM;
	}
	if (t->cgroup[0] && !cJSON_AddStringToObject(obj, "cgroup", t->cgroup))
		return -ENOMEM;
	if (t->children && !cJSON_AddTrueToObject(obj, "children"))
		return -ENOMEM;
	if (t->nlabels) {
		char kv[2 * FR_LIMIT_LABEL_LEN];

		if (!(arr = cJSON_AddArrayToObject(obj, "labels")))
			return -ENOMEM;
		for (uint32_t i = 0; i < t->nlabels && i < FR_LIMIT_LABELS; i++) {
			snprintf(kv, sizeof(kv), "%.*s=%.*s", FR_LIMIT_LABEL_LEN - 1,
				 t->label_keys[i], FR_LIMIT_LABEL_LEN - 1, t->label_values[i]);
			if (!cJSON_AddItemToArray(arr, cJSON_CreateString(kv)))
				return -ENOMEM;
		}
	}
	if (t->label_key[0] && !cJSON_AddStringToObject(obj, "label_key", t->label_key))
		return -ENOMEM;
	return 0;
}

cJSON *fr_ipc_attach_req_encode(const struct fr_ipc_attach_req *r)
{
	cJSON *obj = fr_ipc_new_request("attach");

	if (!obj)
		return NULL;
	if ((r->window_ns && !fr_ipc_add_int(obj, "window_ns", r->window_ns)) ||
	    (r->has_from && !fr_ipc_add_int(obj, "from_ns", r->from_ns)) ||
	    (r->has_to && !fr_ipc_add_int(obj, "to_ns", r->to_ns)) ||
	    (r->hz && !fr_ipc_add_int(obj, "hz", r->hz)) ||
	    add_event_names(obj, r->events, r->nevents) < 0 ||
	    add_event_hz(obj, r->event_hz, r->nevents) < 0 || add_targets(obj, &r->targets) < 0 ||
	    (r->format == FR_PROFILE_FOLDED && !cJSON_AddStringToObject(obj, "format", "folded")) ||
	    (r->since_last[0] && !cJSON_AddStringToObject(obj, "since_last", r->since_last)) ||
	    (r->by_cpu && !cJSON_AddTrueToObject(obj, "by_cpu")) ||
	    (r->diff && !cJSON_AddTrueToObject(obj, "diff")))
		goto err;
	return obj;
err:
	cJSON_Delete(obj);
	return NULL;
}

int fr_ipc_attach_req_decode(const cJSON *obj, struct fr_ipc_attach_req *out, char *err,
			     size_t errlen)
{
	const cJSON *format, *cursor, *by_cpu, *diff;
	int64_t hz = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_int(obj, "attach", "window_ns", 1, INT64_MAX, &out->window_ns, err, errlen) <
		    0 ||
	    (out->has_from = fr_ipc_get_int(obj, "attach", "from_ns", 0, INT64_MAX, &out->from_ns,
					    err, errlen)) < 0 ||
	    (out->has_to = fr_ipc_get_int(obj, "attach", "to_ns", 0, INT64_MAX, &out->to_ns, err,
					  errlen)) < 0 ||
	    fr_ipc_get_int(obj, "attach", "hz", 0, INT32_MAX, &hz, err, errlen) < 0)
		return -EINVAL;
	out->hz = (uint32_t)hz;
	cursor = fr_ipc_member(obj, "since_last");
	if (cursor && (!cJSON_IsString(cursor) || !fr_ipc_cursor_name_ok(cursor->valuestring)))
		return fr_ipc_fail(err, errlen, "attach: \"since_last\": " FR_IPC_CURSOR_NAME_RULE);
	if (cursor)
		snprintf(out->since_last, sizeof(out->since_last), "%s", cursor->valuestring);
	if (!out->window_ns && !out->has_from && !cursor)
		return fr_ipc_fail(err, errlen, "attach needs \"window_ns\" or \"from_ns\"");
	ret = get_targets(obj, "attach", &out->targets, err, errlen);
	if (ret == 0)
		ret = get_events(obj, "attach", out->events, &out->nevents, err, errlen);
	if (ret == 0)
		ret = get_event_hz(obj, "attach", out->nevents,
				   fr_ipc_member(obj, "events") != NULL, out->event_hz, err,
				   errlen);
	if (ret < 0)
		return ret;
	format = fr_ipc_member(obj, "format");
	if (format) {
		int f = cJSON_IsString(format) ? fr_profile_format_parse(format->valuestring)
					       : -EINVAL;
		if (f < 0)
			return fr_ipc_fail(
				err, errlen,
				"attach: \"format\" must be one of: " FR_PROFILE_FORMAT_NAMES);
		out->format = (enum fr_profile_format)f;
	}
	by_cpu = fr_ipc_member(obj, "by_cpu");
	if (by_cpu) {
		if (!cJSON_IsBool(by_cpu))
			return fr_ipc_fail(err, errlen, "attach: \"by_cpu\" must be true or false");
		out->by_cpu = cJSON_IsTrue(by_cpu);
	}
	diff = fr_ipc_member(obj, "diff");
	if (diff) {
		if (!cJSON_IsBool(diff))
			return fr_ipc_fail(err, errlen, "attach: \"diff\" must be true or false");
		out->diff = cJSON_IsTrue(diff);
	}
	return 0;
}

static int add_event_counts(cJSON *obj, const struct fr_ipc_event_counts *events, uint32_t n)
{
	char name[FR_EVENT_NAME_MAX];
	cJSON *arr = cJSON_AddArrayToObject(obj, "events");

	if (!arr)
		return -ENOMEM;
	for (uint32_t e = 0; e < n; e++) {
		const struct fr_ipc_event_counts *c = &events[e];
		cJSON *ev = cJSON_CreateObject();

		if (!ev || !cJSON_AddItemToArray(arr, ev)) {
			cJSON_Delete(ev);
			return -ENOMEM;
		}
		if (!cJSON_AddStringToObject(ev, "event",
					     fr_event_format(c->event, name, sizeof(name))) ||
		    !fr_ipc_add_int(ev, "hz", c->hz) ||
		    !fr_ipc_add_int(ev, "samples", (int64_t)c->samples) ||
		    !fr_ipc_add_int(ev, "samples_in_window", (int64_t)c->samples_in_window) ||
		    !fr_ipc_add_int(ev, "lost", (int64_t)c->lost) ||
		    !fr_ipc_add_int(ev, "recorded", (int64_t)c->recorded) ||
		    !fr_ipc_add_int(ev, "throttled", (int64_t)c->throttled) ||
		    !fr_ipc_add_int(ev, "truncated", (int64_t)c->truncated))
			return -ENOMEM;
	}
	return 0;
}

cJSON *fr_ipc_attach_reply_encode(const struct fr_ipc_attach_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "samples", (int64_t)r->samples) ||
	    !fr_ipc_add_int(obj, "samples_in_window", (int64_t)r->samples_in_window) ||
	    !fr_ipc_add_int(obj, "stacks", (int64_t)r->stacks) ||
	    !fr_ipc_add_int(obj, "bytes", (int64_t)r->bytes) || !fr_ipc_add_int(obj, "hz", r->hz) ||
	    !fr_ipc_add_int(obj, "lost", (int64_t)r->lost) ||
	    !fr_ipc_add_int(obj, "t0_ns", r->t0_ns) || !fr_ipc_add_int(obj, "t1_ns", r->t1_ns) ||
	    !fr_ipc_add_int(obj, "covered_t0_ns", r->covered_t0_ns) ||
	    add_event_counts(obj, r->events, r->nevents) < 0 ||
	    (r->incomplete[0] && !cJSON_AddStringToObject(obj, "incomplete", r->incomplete)) ||
	    fr_ipc_add_warnings(obj, r->warnings, r->nwarnings) < 0 ||
	    fr_ipc_attach_reply_add_span(obj, r) < 0)
		goto err;
	return obj;
err:
	cJSON_Delete(obj);
	return NULL;
}

static int get_event_counts(const cJSON *obj, struct fr_ipc_attach_reply *out, char *err,
			    size_t errlen)
{
	const char *what = "attach reply";
	const cJSON *arr, *ev;

	if (get_event_array(obj, what, FR_LIMIT_EVENTS, &arr, err, errlen) < 0)
		return -EINVAL;
	cJSON_ArrayForEach(ev, arr) {
		struct fr_ipc_event_counts *c = &out->events[out->nevents++];

		if (get_event_name(ev, what, &c->event, err, errlen) < 0 ||
		    fr_ipc_get_u32(ev, what, "hz", &c->hz, err, errlen) < 0 ||
		    fr_ipc_get_u64(ev, what, "samples", &c->samples, err, errlen) < 0 ||
		    fr_ipc_get_u64(ev, what, "samples_in_window", &c->samples_in_window, err,
				   errlen) < 0 ||
		    fr_ipc_get_u64(ev, what, "lost", &c->lost, err, errlen) < 0 ||
		    fr_ipc_get_u64(ev, what, "throttled", &c->throttled, err, errlen) < 0 ||
		    fr_ipc_get_u64(ev, what, "truncated", &c->truncated, err, errlen) < 0 ||
		    (fr_ipc_member(ev, "recorded") &&
		     fr_ipc_get_u64(ev, what, "recorded", &c->recorded, err, errlen) < 0))
			return -EINVAL;
	}
	return 0;
}

int fr_ipc_attach_reply_decode(const cJSON *obj, struct fr_ipc_attach_reply *out, char *err,
			       size_t errlen)
{
	const char *what = "attach reply";
	const cJSON *incomplete = fr_ipc_member(obj, "incomplete");

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_u64(obj, what, "samples", &out->samples, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "samples_in_window", &out->samples_in_window, err, errlen) <
		    0 ||
	    fr_ipc_get_u64(obj, what, "stacks", &out->stacks, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "bytes", &out->bytes, err, errlen) < 0 ||
	    fr_ipc_get_u32(obj, what, "hz", &out->hz, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "lost", &out->lost, err, errlen) < 0 ||
	    fr_ipc_get_i64(obj, what, "t0_ns", &out->t0_ns, err, errlen) < 0 ||
	    fr_ipc_get_i64(obj, what, "t1_ns", &out->t1_ns, err, errlen) < 0 ||
	    fr_ipc_get_i64(obj, what, "covered_t0_ns", &out->covered_t0_ns, err, errlen) < 0 ||
	    get_event_counts(obj, out, err, errlen) < 0 ||
	    fr_ipc_get_warnings(obj, what, out->warnings, &out->nwarnings, err, errlen) < 0 ||
	    fr_ipc_attach_reply_get_span(obj, out, err, errlen) < 0)
		return -EINVAL;
	if (incomplete && !cJSON_IsString(incomplete))
		return fr_ipc_fail(err, errlen, "%s: \"incomplete\" must be a string", what);
	if (incomplete)
		snprintf(out->incomplete, sizeof(out->incomplete), "%s", incomplete->valuestring);
	return 0;
}

/* ---- consume ---------------------------------------------------------- */

cJSON *fr_ipc_consume_req_encode(const struct fr_ipc_consume_req *r)
{
	cJSON *obj = fr_ipc_new_request("consume");

	if (!obj)
		return NULL;
	if ((r->hz && !fr_ipc_add_int(obj, "hz", r->hz)) ||
	    add_event_names(obj, r->events, r->nevents) < 0 ||
	    add_event_hz(obj, r->event_hz, r->nevents) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_consume_req_decode(const cJSON *obj, struct fr_ipc_consume_req *out, char *err,
			      size_t errlen)
{
	int64_t hz = 0;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_int(obj, "consume", "hz", 0, INT32_MAX, &hz, err, errlen) < 0)
		return -EINVAL;
	out->hz = (uint32_t)hz;
	if (get_events(obj, "consume", out->events, &out->nevents, err, errlen) < 0)
		return -EINVAL;
	return get_event_hz(obj, "consume", out->nevents, fr_ipc_member(obj, "events") != NULL,
			    out->event_hz, err, errlen);
}

cJSON *fr_ipc_consume_reply_encode(const struct fr_ipc_consume_reply *r)
{
	char name[FR_EVENT_NAME_MAX];
	cJSON *obj = fr_ipc_ok(), *events;

	if (!obj)
		return NULL;
	if (fr_ipc_add_warnings(obj, r->warnings, r->nwarnings) < 0 ||
	    !fr_ipc_add_int(obj, "start_ns", r->start_ns) ||
	    !(events = cJSON_AddArrayToObject(obj, "events")))
		goto err;
	for (uint32_t i = 0; i < r->nevents; i++) {
		cJSON *ev = cJSON_CreateObject();

		if (!ev || !cJSON_AddItemToArray(events, ev)) {
			cJSON_Delete(ev);
			goto err;
		}
		if (!cJSON_AddStringToObject(ev, "event",
					     fr_event_format(r->events[i].event, name,
							     sizeof(name))) ||
		    !fr_ipc_add_int(ev, "hz", r->events[i].hz) ||
		    !fr_ipc_add_int(ev, "recording_hz", r->events[i].recording_hz))
			goto err;
	}
	return obj;
err:
	cJSON_Delete(obj);
	return NULL;
}

int fr_ipc_consume_reply_decode(const cJSON *obj, struct fr_ipc_consume_reply *out, char *err,
				size_t errlen)
{
	const char *what = "consume reply";
	const cJSON *arr, *ev;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_warnings(obj, what, out->warnings, &out->nwarnings, err, errlen) < 0 ||
	    fr_ipc_get_i64(obj, what, "start_ns", &out->start_ns, err, errlen) < 0 ||
	    get_event_array(obj, what, FR_LIMIT_EVENTS, &arr, err, errlen) < 0)
		return -EINVAL;
	cJSON_ArrayForEach(ev, arr) {
		struct fr_ipc_consume_event *c = &out->events[out->nevents++];

		if (get_event_name(ev, what, &c->event, err, errlen) < 0 ||
		    fr_ipc_get_u32(ev, what, "hz", &c->hz, err, errlen) < 0 ||
		    fr_ipc_get_u32(ev, what, "recording_hz", &c->recording_hz, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

/* ---- dump ------------------------------------------------------------- */

cJSON *fr_ipc_dump_req_encode(const struct fr_ipc_dump_req *r)
{
	cJSON *obj = fr_ipc_new_request("dump");

	if (!obj)
		return NULL;
	if (!cJSON_AddStringToObject(obj, "session", r->session ? r->session : "") ||
	    (r->window_ns && !fr_ipc_add_int(obj, "window_ns", r->window_ns))) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_dump_req_decode(const cJSON *obj, struct fr_ipc_dump_req *out, char *err, size_t errlen)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "session");

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(name) || !name->valuestring[0])
		return fr_ipc_fail(err, errlen, "dump: \"session\" must name a session");
	out->session = name->valuestring;
	if (fr_ipc_get_int(obj, "dump", "window_ns", FR_IPC_DUMP_WINDOW_MIN_NS,
			   FR_IPC_DUMP_WINDOW_MAX_NS, &out->window_ns, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

cJSON *fr_ipc_dump_reply_encode(const struct fr_ipc_dump_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (!cJSON_AddStringToObject(obj, "path", r->path) ||
	    !fr_ipc_add_int(obj, "t0_ns", r->t0_ns) || !fr_ipc_add_int(obj, "t1_ns", r->t1_ns)) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_dump_reply_decode(const cJSON *obj, struct fr_ipc_dump_reply *out, char *err,
			     size_t errlen)
{
	const char *what = "dump reply";
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(obj, "path");

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(path) || !path->valuestring[0] ||
	    strlen(path->valuestring) >= sizeof(out->path))
		return fr_ipc_fail(err, errlen, "%s: \"path\" must be a file path", what);
	snprintf(out->path, sizeof(out->path), "%s", path->valuestring);
	if (fr_ipc_get_i64(obj, what, "t0_ns", &out->t0_ns, err, errlen) < 0 ||
	    fr_ipc_get_i64(obj, what, "t1_ns", &out->t1_ns, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

/* ---- threads ---------------------------------------------------------- */

cJSON *fr_ipc_threads_req_encode(const struct fr_ipc_threads_req *r)
{
	cJSON *obj = fr_ipc_new_request("threads");

	if (!obj)
		return NULL;
	if (add_targets(obj, &r->targets) < 0 ||
	    (r->at_ns && !fr_ipc_add_int(obj, "at_ns", r->at_ns))) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_threads_req_decode(const cJSON *obj, struct fr_ipc_threads_req *out, char *err,
			      size_t errlen)
{
	const struct fr_targets *t = &out->targets;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_member(obj, "children"))
		return fr_ipc_fail(err, errlen,
				   "threads: \"children\" is not taken; name the processes");
	if (get_targets(obj, "threads", &out->targets, err, errlen) < 0)
		return -EINVAL;
	/* The whole machine's threads would be a scan of every process. */
	if (!t->npids && !t->ncomms && !t->cgroup[0])
		return fr_ipc_fail(err, errlen, "threads needs \"pids\", \"comm\" or \"cgroup\"");
	/* With "at_ns", comm and cgroup are matched as the ring's chunks had
	 * them at each sample's time (core/query/threads_at.h). */
	if (fr_ipc_get_int(obj, "threads", "at_ns", 1, INT64_MAX, &out->at_ns, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

cJSON *fr_ipc_threads_reply_encode(const struct fr_ipc_threads_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "processes", (int64_t)r->processes) ||
	    !fr_ipc_add_int(obj, "threads", (int64_t)r->threads) ||
	    !fr_ipc_add_int(obj, "bytes", (int64_t)r->bytes) ||
	    fr_ipc_add_warnings(obj, r->warnings, r->nwarnings) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_threads_reply_decode(const cJSON *obj, struct fr_ipc_threads_reply *out, char *err,
				size_t errlen)
{
	const char *what = "threads reply";

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_u64(obj, what, "processes", &out->processes, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "threads", &out->threads, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "bytes", &out->bytes, err, errlen) < 0 ||
	    fr_ipc_get_warnings(obj, what, out->warnings, &out->nwarnings, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

int fr_ipc_targets_add(cJSON *obj, const struct fr_targets *t)
{
	return add_targets(obj, t);
}

int fr_ipc_targets_get(const cJSON *obj, const char *cmd, struct fr_targets *t, char *err,
		       size_t errlen)
{
	return get_targets(obj, cmd, t, err, errlen);
}
