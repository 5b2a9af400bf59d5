/* The "goroutines" request and reply (ipc/msg_goroutines.h). Like
 * ipc/msg.c, a decoder refuses what is out of range or of the wrong type
 * and names it, never clamps: the peer may be a hostile local user.
 */
#include "ipc/msg_goroutines.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ipc/msg_int.h"
#include "ipc/proto.h"

cJSON *fr_ipc_goroutines_req_encode(const struct fr_ipc_goroutines_req *r)
{
	cJSON *obj = fr_ipc_new_request("goroutines");

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "pid", r->pid) ||
	    (r->at_ns && !fr_ipc_add_int(obj, "at_ns", r->at_ns))) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_goroutines_req_decode(const cJSON *obj, struct fr_ipc_goroutines_req *out, char *err,
				 size_t errlen)
{
	int64_t pid = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = fr_ipc_get_int(obj, "goroutines", "pid", 1, INT32_MAX, &pid, err, errlen);
	if (ret < 0)
		return -EINVAL;
	if (!ret)
		return fr_ipc_fail(err, errlen, "goroutines needs \"pid\"");
	out->pid = (uint32_t)pid;
	if (fr_ipc_get_int(obj, "goroutines", "at_ns", 1, INT64_MAX, &out->at_ns, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

cJSON *fr_ipc_goroutines_reply_encode(const struct fr_ipc_goroutines_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (!fr_ipc_add_int(obj, "goroutines", (int64_t)r->goroutines) ||
	    !fr_ipc_add_int(obj, "system", (int64_t)r->system) ||
	    !fr_ipc_add_int(obj, "changed", (int64_t)r->changed) ||
	    !cJSON_AddStringToObject(obj, "go", r->go) ||
	    !fr_ipc_add_int(obj, "bytes", (int64_t)r->bytes) ||
	    fr_ipc_add_warnings(obj, r->warnings, r->nwarnings) < 0) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_goroutines_reply_decode(const cJSON *obj, struct fr_ipc_goroutines_reply *out, char *err,
				   size_t errlen)
{
	const char *what = "goroutines reply";
	const cJSON *go;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_get_u64(obj, what, "goroutines", &out->goroutines, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "system", &out->system, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "changed", &out->changed, err, errlen) < 0 ||
	    fr_ipc_get_u64(obj, what, "bytes", &out->bytes, err, errlen) < 0 ||
	    fr_ipc_get_warnings(obj, what, out->warnings, &out->nwarnings, err, errlen) < 0)
		return -EINVAL;
	go = fr_ipc_member(obj, "go");
	if (go && (!cJSON_IsString(go) || strlen(go->valuestring) >= sizeof(out->go)))
		return fr_ipc_fail(err, errlen, "%s: \"go\" must be a short string", what);
	if (go)
		snprintf(out->go, sizeof(out->go), "%s", go->valuestring);
	return 0;
}
