/* The attach reply's members that say why a profile is what it is
 * (ipc/msg.h, struct fr_ipc_attach_reply, "what the profile spans"): the
 * profile's own span, the ring's span, which targets matched nothing, and
 * the recorder's stalls in the window, a ring it cannot write. Each is sent only when it has
 * something to say, so replies of daemons from before them decode to
 * zeros and say nothing. ipc/msg.c calls these from the attach reply's
 * encoder and decoder. */
#include "ipc/msg.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "ipc/proto.h"

static const char *const filter_names[] = {"pid", "comm", "cgroup", "label", "combined"};
#define NFILTERS (sizeof(filter_names) / sizeof(filter_names[0]))

const char *fr_ipc_filter_name(uint32_t bit)
{
	for (uint32_t i = 0; i < NFILTERS; i++)
		if (bit == 1u << i)
			return filter_names[i];
	return "";
}

static int add_nonzero(cJSON *obj, const char *key, int64_t v)
{
	return !v || fr_ipc_add_int(obj, key, v) != NULL;
}

int fr_ipc_attach_reply_add_span(cJSON *obj, const struct fr_ipc_attach_reply *r)
{
	cJSON *arr;

	if (!add_nonzero(obj, "first_ns", r->first_ns) ||
	    !add_nonzero(obj, "last_ns", r->last_ns) ||
	    !add_nonzero(obj, "ring_oldest_ns", r->ring_oldest_ns) ||
	    !add_nonzero(obj, "ring_newest_ns", r->ring_newest_ns) ||
	    !add_nonzero(obj, "stall_t0_ns", r->stall_t0_ns) ||
	    !add_nonzero(obj, "stall_t1_ns", r->stall_t1_ns) ||
	    !add_nonzero(obj, "procs_in_window", (int64_t)r->procs_in_window) ||
	    !add_nonzero(obj, "writer_error_ns", r->writer_error_ns))
		return -ENOMEM;
	if (r->writer_error_ns && !cJSON_AddStringToObject(obj, "writer_error", r->writer_error))
		return -ENOMEM;
	if (r->unrecorded[0] && (!cJSON_AddStringToObject(obj, "unrecorded", r->unrecorded) ||
				 !cJSON_AddStringToObject(obj, "recording", r->recording)))
		return -ENOMEM;
	if (r->npids_not_running) {
		arr = cJSON_AddArrayToObject(obj, "pids_not_running");
		if (!arr)
			return -ENOMEM;
		for (uint32_t i = 0; i < r->npids_not_running && i < FR_LIMIT_PIDS; i++) {
			cJSON *n = cJSON_CreateNumber(r->pids_not_running[i]);

			if (!n)
				return -ENOMEM;
			cJSON_AddItemToArray(arr, n);
		}
	}
	if (!r->empty_filters)
		return 0;
	arr = cJSON_AddArrayToObject(obj, "empty_filters");
	if (!arr)
		return -ENOMEM;
	for (uint32_t i = 0; i < NFILTERS; i++) {
		cJSON *s;

		if (!(r->empty_filters & (1u << i)))
			continue;
		s = cJSON_CreateString(filter_names[i]);
		if (!s)
			return -ENOMEM;
		cJSON_AddItemToArray(arr, s);
	}
	return 0;
}

/* A non-negative integer member (a parsed number, or the raw text
 * fr_ipc_add_int() keeps); absent or null: 0. Returns 0 or -EINVAL. */
static int get_nonneg(const cJSON *obj, const char *key, int64_t *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char *end = NULL;
	long long n;

	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsRaw(v) && v->valuestring) {
		errno = 0;
		n = strtoll(v->valuestring, &end, 10);
		if (!errno && end != v->valuestring && !*end && n >= 0) {
			*out = n;
			return 0;
		}
	} else if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9.2e18 &&
		   v->valuedouble == (double)(int64_t)v->valuedouble) {
		*out = (int64_t)v->valuedouble;
		return 0;
	}
	snprintf(err, errlen, "attach reply: \"%s\" must be a non-negative integer", key);
	return -EINVAL;
}

/* "pids_not_running": at most FR_LIMIT_PIDS process ids (1..INT32_MAX). */
static int get_pids(const cJSON *obj, struct fr_ipc_attach_reply *out, char *err, size_t errlen)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "pids_not_running"), *it;

	out->npids_not_running = 0;
	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > FR_LIMIT_PIDS) {
		snprintf(err, errlen,
			 "attach reply: \"pids_not_running\" must be an array of at most %d pids",
			 FR_LIMIT_PIDS);
		return -EINVAL;
	}
	cJSON_ArrayForEach(it, arr) {
		if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > INT32_MAX ||
		    it->valuedouble != (double)(int32_t)it->valuedouble) {
			snprintf(err, errlen, "attach reply: \"pids_not_running\" holds pids");
			return -EINVAL;
		}
		out->pids_not_running[out->npids_not_running++] = (uint32_t)it->valuedouble;
	}
	return 0;
}

/* A text member of at most FR_IPC_WARNING_MAX - 1 bytes into `out`
 * ("" when absent): "writer_error" (with "writer_error_ns"),
 * "unrecorded", "recording". */
static int get_text(const cJSON *obj, const char *key, char *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	out[0] = '\0';
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= FR_IPC_WARNING_MAX) {
		snprintf(err, errlen, "attach reply: \"%s\" must be a short string", key);
		return -EINVAL;
	}
	snprintf(out, FR_IPC_WARNING_MAX, "%s", v->valuestring);
	return 0;
}

int fr_ipc_attach_reply_get_span(const cJSON *obj, struct fr_ipc_attach_reply *out, char *err,
				 size_t errlen)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "empty_filters"), *it;
	int64_t procs = 0;

	if (get_nonneg(obj, "first_ns", &out->first_ns, err, errlen) < 0 ||
	    get_nonneg(obj, "last_ns", &out->last_ns, err, errlen) < 0 ||
	    get_nonneg(obj, "ring_oldest_ns", &out->ring_oldest_ns, err, errlen) < 0 ||
	    get_nonneg(obj, "ring_newest_ns", &out->ring_newest_ns, err, errlen) < 0 ||
	    get_nonneg(obj, "stall_t0_ns", &out->stall_t0_ns, err, errlen) < 0 ||
	    get_nonneg(obj, "stall_t1_ns", &out->stall_t1_ns, err, errlen) < 0 ||
	    get_nonneg(obj, "procs_in_window", &procs, err, errlen) < 0 ||
	    get_nonneg(obj, "writer_error_ns", &out->writer_error_ns, err, errlen) < 0)
		return -EINVAL;
	out->procs_in_window = (uint64_t)procs;
	if (get_text(obj, "writer_error", out->writer_error, err, errlen) < 0 ||
	    get_text(obj, "unrecorded", out->unrecorded, err, errlen) < 0 ||
	    get_text(obj, "recording", out->recording, err, errlen) < 0)
		return -EINVAL;
	out->empty_filters = 0;
	if (get_pids(obj, out, err, errlen) < 0)
		return -EINVAL;
	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr)) {
		snprintf(err, errlen, "attach reply: \"empty_filters\" must be an array");
		return -EINVAL;
	}
	cJSON_ArrayForEach(it, arr) {
		uint32_t i;

		for (i = 0; i < NFILTERS; i++)
			if (cJSON_IsString(it) && strcmp(it->valuestring, filter_names[i]) == 0)
				break;
		/* A kind of filter from a newer daemon: not ours to name. */
		if (i < NFILTERS)
			out->empty_filters |= 1u << i;
		else if (!cJSON_IsString(it)) {
			snprintf(err, errlen, "attach reply: \"empty_filters\" holds strings");
			return -EINVAL;
		}
	}
	return 0;
}
