/* Requests to typed calls and typed replies to JSON (ipc/dispatch.h): the
 * one place the daemon's requests are decoded and its replies encoded.
 * Each request's decoder runs before the daemon sees it, so a malformed
 * member is refused here, naming it, whatever the request. */
#include "ipc/dispatch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "ipc/proto.h"

int fr_ipc_refuse(struct fr_ipc_call *call, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(call->error, sizeof(call->error), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void fr_ipc_warnf(char (*warnings)[FR_IPC_WARNING_MAX], uint32_t *nwarnings, const char *fmt, ...)
{
	char line[FR_IPC_WARNING_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fr_ipc_warn(warnings, nwarnings, line);
}

/* The reply of a call that returned `ret`: `resp` (an encoded reply,
 * NULL when out of memory) or its refusal. */
static cJSON *answer(struct fr_ipc_call *call, int ret, cJSON *resp)
{
	if (ret == 0)
		return resp;
	cJSON_Delete(resp);
	return call->error[0] ? fr_ipc_error("%s", call->error) : NULL;
}

/* One request whose struct is `Q`, decoded by `dec`, answered by the
 * member `fn` into a reply `R` encoded by `enc`. The structs go on the
 * heap: some hold kilobytes of warnings and paths. A descriptor the
 * function is not called with is closed here. */
#define SERVE(fn, Q, dec, R, enc)                                          \
	do {                                                               \
		Q *q = calloc(1, sizeof(*q));                              \
		R *r = calloc(1, sizeof(*r));                              \
		char err[512] = "";                                        \
		int ret = -ENOMEM;                                         \
                                                                           \
		if (q && r && dec(req, q, err, sizeof(err)) < 0)           \
			ret = fr_ipc_refuse(call, "%s", err);              \
		else if (q && r)                                           \
			ret = x->h->fn(x->arg, call, q, r), call->fd = -1; \
		if (call->fd >= 0)                                         \
			close(call->fd);                                   \
		resp = answer(call, ret, ret == 0 ? enc(r) : NULL);        \
		free(q);                                                   \
		free(r);                                                   \
	} while (0)

/* As SERVE, for a request without members (its "req" alone). */
#define SERVE0(fn, R, enc, fini)                                    \
	do {                                                        \
		R *r = calloc(1, sizeof(*r));                       \
		int ret = r ? x->h->fn(x->arg, call, r) : -ENOMEM;  \
                                                                    \
		resp = answer(call, ret, ret == 0 ? enc(r) : NULL); \
		fini(r);                                            \
		free(r);                                            \
	} while (0)

static void no_fini(void *r)
{
	(void)r;
}

/* Whether `cmd` comes with a descriptor for its answer. */
static int takes_fd(const char *cmd)
{
	return strcmp(cmd, "attach") == 0 || strcmp(cmd, "threads") == 0 ||
	       strcmp(cmd, "timeline") == 0 || strcmp(cmd, "goroutines") == 0 ||
	       strcmp(cmd, "events") == 0;
}

static cJSON *serve(struct fr_ipc_dispatch *x, struct fr_ipc_call *call, const char *cmd,
		    const cJSON *req)
{
	cJSON *resp = NULL;

	if (call->fd >= 0 && !takes_fd(cmd)) {
		close(call->fd);
		call->fd = -1;
	}
	if (strcmp(cmd, "attach") == 0 && x->h->attach)
		SERVE(attach, struct fr_ipc_attach_req, fr_ipc_attach_req_decode,
		      struct fr_ipc_attach_reply, fr_ipc_attach_reply_encode);
	else if (strcmp(cmd, "threads") == 0 && x->h->threads)
		SERVE(threads, struct fr_ipc_threads_req, fr_ipc_threads_req_decode,
		      struct fr_ipc_threads_reply, fr_ipc_threads_reply_encode);
	else if (strcmp(cmd, "goroutines") == 0 && x->h->goroutines)
		SERVE(goroutines, struct fr_ipc_goroutines_req, fr_ipc_goroutines_req_decode,
		      struct fr_ipc_goroutines_reply, fr_ipc_goroutines_reply_encode);
	else if (strcmp(cmd, "timeline") == 0 && x->h->timeline)
		SERVE(timeline, struct fr_ipc_timeline_req, fr_ipc_timeline_req_decode,
		      struct fr_ipc_timeline_reply, fr_ipc_timeline_reply_encode);
	else if (strcmp(cmd, "events") == 0 && x->h->events)
		SERVE(events, struct fr_ipc_events_req, fr_ipc_events_req_decode,
		      struct fr_ipc_events_reply, fr_ipc_events_reply_encode);
	else if (strcmp(cmd, "status") == 0 && x->h->status)
		SERVE0(status, struct fr_ipc_status_reply, fr_ipc_status_reply_encode,
		       fr_ipc_status_reply_fini);
	else if (strcmp(cmd, "sessions") == 0 && x->h->sessions)
		SERVE0(sessions, struct fr_ipc_sessions_reply, fr_ipc_sessions_reply_encode,
		       fr_ipc_sessions_reply_fini);
	else if (strcmp(cmd, "consume") == 0 && x->h->consume)
		SERVE(consume, struct fr_ipc_consume_req, fr_ipc_consume_req_decode,
		      struct fr_ipc_consume_reply, fr_ipc_consume_reply_encode);
	else if (strcmp(cmd, "dump") == 0 && x->h->dump)
		SERVE(dump, struct fr_ipc_dump_req, fr_ipc_dump_req_decode,
		      struct fr_ipc_dump_reply, fr_ipc_dump_reply_encode);
	else if (strcmp(cmd, "reload") == 0 && x->h->reload)
		SERVE0(reload, struct fr_ipc_reload_reply, fr_ipc_reload_reply_encode, no_fini);
	else if (strcmp(cmd, "trigger") == 0 && x->h->trigger)
		SERVE(trigger, struct fr_ipc_trigger_req, fr_ipc_trigger_req_decode,
		      struct fr_ipc_dump_reply, fr_ipc_dump_reply_encode);
	else {
		if (call->fd >= 0)
			close(call->fd);
		return fr_ipc_error("unknown request \"%s\" (this recorder answers: attach, "
				    "consume, dump, status, sessions, threads, reload, trigger, "
				    "timeline, events, goroutines)",
				    cmd);
	}
	return resp;
}

cJSON *fr_ipc_dispatch(void *arg, const char *cmd, const cJSON *req, int fd,
		       struct fr_ipc_peer *peer)
{
	struct fr_ipc_call *call = calloc(1, sizeof(*call));
	cJSON *resp;

	if (!call) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	call->fd = fd;
	call->peer = peer;
	resp = serve(arg, call, cmd, req);
	free(call);
	return resp;
}
