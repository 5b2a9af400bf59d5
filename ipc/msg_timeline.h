/* The "timeline" request and its reply (ipc/msg_timeline.c), with the
 * contract of every message (ipc/msg.h): a decoder names the member it
 * refuses, an encoder returns a new object or NULL.
 *
 * {"req":"timeline", ...} with an output descriptor passed alongside: the
 * daemon writes the timeline's JSON form (core/query/timeline.h) into it
 * (bounded: at most FR_TIMELINE_TOP_MAX + 1 groups of
 * FR_TIMELINE_STEPS_MAX values), under the output deadlines of attach, and
 * answers with what it wrote. A peer that is not privileged gets only its
 * own processes, as with attach.
 */
#ifndef FR_IPC_MSG_TIMELINE_H
#define FR_IPC_MSG_TIMELINE_H

#include <stdint.h>

#include "core/query/timeline.h"
#include "ipc/msg.h"

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

struct fr_ipc_timeline_req {
	/* "window_ns" (1..INT64_MAX, ending now) or "from_ns" and maybe
	 * "to_ns" (0..INT64_MAX Unix ns; default now), as attach. */
	int64_t window_ns, from_ns, to_ns;
	int has_from, has_to;
	/* "step_ns": 1000000..INT64_MAX; absent or 0: the default step. */
	int64_t step_ns;
	/* "event": a name (core/store/sample.h); absent: cpu. */
	uint32_t event;
	/* "by": "process", "comm", "cgroup" or "label:KEY"; absent: process. */
	enum fr_timeline_by by;
	char label_key[FR_LIMIT_LABEL_LEN];
	/* "top": 1..FR_TIMELINE_TOP_MAX; absent or 0: the default. */
	uint32_t top;
	/* "pids", "comm" (as attach's): only those processes; the other
	 * kinds of target are refused. */
	struct fr_targets targets;
};

/* {"ok":true, "samples":N, "groups":N, "bytes":N, "warnings":[...]} */
struct fr_ipc_timeline_reply {
	uint64_t samples; /* counted */
	uint64_t groups;  /* listed, "other" included */
	uint64_t bytes;	  /* written to the descriptor */
	uint32_t nwarnings;
	char warnings[FR_IPC_MAX_WARNINGS][FR_IPC_WARNING_MAX];
};

struct cJSON *fr_ipc_timeline_req_encode(const struct fr_ipc_timeline_req *r);
int fr_ipc_timeline_req_decode(const struct cJSON *obj, struct fr_ipc_timeline_req *out, char *err,
			       size_t errlen);
struct cJSON *fr_ipc_timeline_reply_encode(const struct fr_ipc_timeline_reply *r);
int fr_ipc_timeline_reply_decode(const struct cJSON *obj, struct fr_ipc_timeline_reply *out,
				 char *err, size_t errlen);

#endif
