/* The "goroutines" request and its reply (ipc/msg_goroutines.c), with the
 * contract of every message (ipc/msg.h): a decoder names the member it
 * refuses, an encoder returns a new object or NULL.
 *
 * {"req":"goroutines", "pid":P} with an output descriptor passed
 * alongside: the recorder reads every goroutine of Go process P from its
 * memory, without stopping it, and writes them into the descriptor as a
 * gzip'ed pprof (one sample per goroutine: recorder/requests/goroutines.h
 * lists its labels), under the output deadlines of attach. A peer that
 * is not privileged may ask only for a process it could read itself
 * (its own, dumpable), as with threads.
 */
#ifndef FR_IPC_MSG_GOROUTINES_H
#define FR_IPC_MSG_GOROUTINES_H

#include <stdint.h>

#include "ipc/msg.h"

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

struct fr_ipc_goroutines_req {
	uint32_t pid; /* "pid": 1..INT32_MAX */
	/* "at_ns": as the newest snapshot kept at or before then (Unix ns;
	 * a dump's) had them; 0: now. */
	int64_t at_ns;
};

/* {"ok":true, "goroutines":N, "system":N, "changed":N, "go":"go1.19.8",
 * "bytes":N, "warnings":[...]} */
struct fr_ipc_goroutines_reply {
	uint64_t goroutines; /* listed, one pprof sample each */
	uint64_t system;     /* the runtime's own, left out as Go leaves them out */
	uint64_t changed;    /* changed under the reader twice: listed without a stack */
	uint64_t bytes;	     /* written to the descriptor */
	char go[32];	     /* the Go release that built the program */
	uint32_t nwarnings;
	char warnings[FR_IPC_MAX_WARNINGS][FR_IPC_WARNING_MAX];
};

struct cJSON *fr_ipc_goroutines_req_encode(const struct fr_ipc_goroutines_req *r);
int fr_ipc_goroutines_req_decode(const struct cJSON *obj, struct fr_ipc_goroutines_req *out,
				 char *err, size_t errlen);
struct cJSON *fr_ipc_goroutines_reply_encode(const struct fr_ipc_goroutines_reply *r);
int fr_ipc_goroutines_reply_decode(const struct cJSON *obj, struct fr_ipc_goroutines_reply *out,
				   char *err, size_t errlen);

#endif
