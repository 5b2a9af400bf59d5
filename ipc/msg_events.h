/* The "events" request and its reply (ipc/msg_events.c), with the
 * contract of every message (ipc/msg.h): a decoder names the member it
 * refuses, an encoder returns a new object or NULL.
 *
 * {"req":"events", "window_ns":N | "from_ns":N ["to_ns":N],
 *  "types":"crash,oom_kill,...", "pids":[...], "comm":[...], "cgroup":"/x",
 *  "json":true, "series":true} with an output descriptor passed alongside:
 * the daemon writes the black box's events of the window
 * (core/query/events.h) into it, as text or JSON lines, under the output
 * deadlines of attach, and answers with what it wrote. A peer that is not
 * privileged gets only its own processes' events (and the machine's
 * series), as with attach.
 */
#ifndef FR_IPC_MSG_EVENTS_H
#define FR_IPC_MSG_EVENTS_H

#include <stdint.h>

#include "core/query/targets.h"
#include "ipc/msg.h"

struct cJSON;

struct fr_ipc_events_req {
	/* "window_ns" (1..INT64_MAX, ending now) or "from_ns" and maybe
	 * "to_ns", as attach. */
	int64_t window_ns, from_ns, to_ns;
	int has_from, has_to;
	/* "types": a --type list (core/query/events.h); absent: all. */
	uint64_t types;
	/* "pids", "comm", "cgroup" (has_uid is never on the wire). */
	struct fr_targets targets;
	int json;   /* "json": JSON lines, not text */
	int series; /* "series": text lists every second of the series */
};

/* {"ok":true, "events":N, "more":N, "bytes":N, "warnings":[...]} */
struct fr_ipc_events_reply {
	uint64_t events; /* listed */
	uint64_t more;	 /* past the bound, not listed */
	uint64_t bytes;	 /* written to the descriptor */
	uint32_t nwarnings;
	char warnings[FR_IPC_MAX_WARNINGS][FR_IPC_WARNING_MAX];
};

struct cJSON *fr_ipc_events_req_encode(const struct fr_ipc_events_req *r);
int fr_ipc_events_req_decode(const struct cJSON *obj, struct fr_ipc_events_req *out, char *err,
			     size_t errlen);
struct cJSON *fr_ipc_events_reply_encode(const struct fr_ipc_events_reply *r);
int fr_ipc_events_reply_decode(const struct cJSON *obj, struct fr_ipc_events_reply *out, char *err,
			       size_t errlen);

/* The --type list of `types` ("crash,oom_kill,..."), into buf. */
const char *fr_ipc_events_types_format(uint64_t types, char *buf, size_t len);

#endif
