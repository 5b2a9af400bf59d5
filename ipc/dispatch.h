/* The daemon's side of every request, typed (ipc/dispatch.c): one
 * fr_ipc_handler that decodes a request by its "req" with the decoder of
 * ipc/msg*.h, calls the daemon's function for it with the decoded struct,
 * and encodes the reply struct that function filled, or its refusal as
 * {"ok":false,"error":...}. The daemon builds and parses no JSON: a new
 * request is a struct, its codec here, and one member below.
 *
 * Every function has the same contract: it fills the zeroed reply `r` and
 * returns 0, or returns -errno with a sentence for the user in
 * call->error (fr_ipc_refuse()); -ENOMEM with no sentence answers "out of
 * memory in the daemon". A member left NULL answers "unknown request".
 */
#ifndef FR_IPC_DISPATCH_H
#define FR_IPC_DISPATCH_H

#include <stddef.h>

#include "ipc/msg.h"
#include "ipc/msg_ctl.h"
#include "ipc/msg_events.h"
#include "ipc/msg_goroutines.h"
#include "ipc/msg_status.h"
#include "ipc/msg_timeline.h"
#include "ipc/server.h"

/* The longest refusal a reply carries (with NUL). */
#define FR_IPC_ERROR_MAX 1024

/* One request being answered. */
struct fr_ipc_call {
	/* The descriptor passed with attach, threads, timeline, events or goroutines, or -1:
	 * the function owns it and closes it. (Any other request's is
	 * closed before its function runs.) */
	int fd;
	/* Who asks, and the connection (see ipc/server.h: hold/release). */
	struct fr_ipc_peer *peer;
	/* The refusal, "" while there is none. */
	char error[FR_IPC_ERROR_MAX];
};

/* Sets call->error (cut to FR_IPC_ERROR_MAX) and returns -EINVAL. */
int fr_ipc_refuse(struct fr_ipc_call *call, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends a warning to a reply's warnings (as fr_ipc_warn()), formatted. */
void fr_ipc_warnf(char (*warnings)[FR_IPC_WARNING_MAX], uint32_t *nwarnings, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct fr_ipc_handlers {
	int (*attach)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_attach_req *q,
		      struct fr_ipc_attach_reply *r);
	int (*consume)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_consume_req *q,
		       struct fr_ipc_consume_reply *r);
	int (*threads)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_threads_req *q,
		       struct fr_ipc_threads_reply *r);
	int (*timeline)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_timeline_req *q,
			struct fr_ipc_timeline_reply *r);
	int (*events)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_events_req *q,
		      struct fr_ipc_events_reply *r);
	int (*goroutines)(void *arg, struct fr_ipc_call *call,
			  const struct fr_ipc_goroutines_req *q, struct fr_ipc_goroutines_reply *r);
	int (*dump)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_dump_req *q,
		    struct fr_ipc_dump_reply *r);
	int (*trigger)(void *arg, struct fr_ipc_call *call, const struct fr_ipc_trigger_req *q,
		       struct fr_ipc_dump_reply *r);
	int (*reload)(void *arg, struct fr_ipc_call *call, struct fr_ipc_reload_reply *r);
	int (*status)(void *arg, struct fr_ipc_call *call, struct fr_ipc_status_reply *r);
	int (*sessions)(void *arg, struct fr_ipc_call *call, struct fr_ipc_sessions_reply *r);
};

/* What fr_ipc_dispatch() serves: the functions and their `arg`. */
struct fr_ipc_dispatch {
	const struct fr_ipc_handlers *h;
	void *arg;
};

/* The fr_ipc_handler (ipc/server.h) of a daemon: `arg` is a struct
 * fr_ipc_dispatch. */
struct cJSON *fr_ipc_dispatch(void *arg, const char *cmd, const struct cJSON *req, int fd,
			      struct fr_ipc_peer *peer);

#endif
