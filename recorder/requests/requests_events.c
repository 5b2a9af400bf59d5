/* The "events" request (ipc/msg_events.h): the black box's events of a
 * window, collected from the ring (core/query/events.h) and written as
 * text or JSON lines into the descriptor the client passed.
 *
 * The same rules as attach and timeline: a peer that is not privileged
 * sees only its own processes' events (from its credentials, never from
 * the request) and the machine's series; the last second is flushed into
 * the ring first; the answer is built in memory (at most FR_EVENTS_MAX
 * events) and written under attach's output deadlines. The query memory
 * gives it EVENTS_RESERVE while it runs, so sixty at once wait their turn
 * as attaches do.
 */
#include "recorder/requests/requests_events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/events.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "ipc/msg_events.h"
#include "ipc/server.h"
#include "recorder/daemon_int.h"
#include "recorder/requests/peer.h"
#include "recorder/requests/reply_out.h"

/* What one events request holds at most: the list (FR_EVENTS_MAX events
 * of a few hundred bytes), a chunk read and decoded, the text. */
#define EVENTS_RESERVE ((uint64_t)64 << 20)

/* The request's window and targets as the peer may have them. Returns 0
 * or -EINVAL with `call` refused. */
static int events_request(const struct fr_ipc_events_req *er, struct fr_events_request *req,
			  struct fr_ipc_call *call)
{
	memset(req, 0, sizeof(*req));
	if (fr_reply_window(fr_now_real_ns(), er->window_ns, er->from_ns, er->has_to, er->to_ns,
			    &req->t0, &req->t1) < 0)
		return fr_ipc_refuse(call, "events: the window is empty (\"to_ns\" is not after "
					   "\"from_ns\", or \"from_ns\" is in the future)");
	req->types = er->types;
	req->types_named = er->types != 0;
	req->targets = er->targets;
	req->symbolize = 1;
	return 0;
}

/* Collects and writes the events of `req`, filling `reply`. Returns 0 or
 * -errno with `call` refused. */
static int events_write(struct daemon *d, struct fr_ipc_call *call, struct fr_events_request *req,
			int flags, struct fr_ipc_events_reply *reply)
{
	struct fr_events *e = NULL;
	char err[512], *text = NULL;
	size_t len = 0;
	FILE *mem;
	int ret;

	ret = fr_events_collect(d->ring, req, &e, err, sizeof(err));
	if (ret < 0)
		return fr_ipc_refuse(call, "events: %s", err);
	mem = open_memstream(&text, &len);
	ret = mem ? fr_events_write(mem, e, flags) : -ENOMEM;
	if (mem && fclose(mem) != 0 && ret == 0)
		ret = -ENOMEM;
	if (ret == 0)
		ret = fr_reply_write(call->fd, text, len, call->peer);
	if (ret == -ETIMEDOUT)
		fr_ipc_refuse(call,
			      "events: the output took no bytes for %lld s: is anything reading "
			      "it? Gave up",
			      (long long)(OUTPUT_STALL_NS / FR_NS_PER_S));
	else if (ret < 0)
		fr_ipc_refuse(call, "events: cannot write the answer: %s", strerror(-ret));
	else {
		reply->events = e->n;
		reply->more = e->more;
		reply->bytes = len;
		if (e->chunks_skipped)
			fr_ipc_warnf(reply->warnings, &reply->nwarnings,
				     "%llu chunks of the window were damaged or overwritten while "
				     "read: their events are not listed",
				     (unsigned long long)e->chunks_skipped);
	}
	free(text);
	fr_events_free(e);
	return ret;
}

int daemon_handle_events(void *arg, struct fr_ipc_call *call, const struct fr_ipc_events_req *er,
			 struct fr_ipc_events_reply *reply)
{
	struct daemon *d = arg;
	struct fr_events_request req = {0};
	struct fr_profile_request paths = {0};
	struct daemon_symbol_paths sp = {0};
	int64_t reserved = 0;
	int flags, ret;

	if (call->fd < 0)
		return fr_ipc_refuse(call, "events needs the output file passed with the request");
	flags = fcntl(call->fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		ret = fr_ipc_refuse(call, "events: the output descriptor is not open for writing");
		goto out;
	}
	ret = events_request(er, &req, call);
	if (ret < 0)
		goto out;
	if (!fr_peer_privileged(d->peers, call->peer)) {
		req.targets.has_uid = 1;
		req.targets.uid = (uint32_t)call->peer->uid;
		fr_ipc_warn(reply->warnings, &reply->nwarnings,
			    "the events of your own processes only (and the machine's pressure); "
			    "root and members of socket.admin_group see the whole machine");
	}
	reserved = daemon_memory_reserve(d, req.targets.has_uid, EVENTS_RESERVE);
	if (reserved < 0) {
		reserved = 0;
		ret = daemon_query_busy(d, call, "events");
		goto out;
	}
	ret = daemon_symbol_paths(d, &paths, &sp);
	if (ret < 0) {
		ret = fr_ipc_refuse(call, "events: out of memory");
		goto out;
	}
	req.symbol_cache = paths.symbol_cache;
	req.debug_dirs = paths.debug_dirs;
	req.ndebug_dirs = paths.ndebug_dirs;
	if (fr_ingest_flush(&d->ingest) < 0)
		fr_ipc_warn(reply->warnings, &reply->nwarnings, FLUSH_NOTE);
	req.stop = fr_ipc_peer_gone;
	req.stop_arg = call->peer;
	ret = events_write(d, call, &req,
			   (er->json ? FR_EVENTS_JSON : 0) | (er->series ? FR_EVENTS_SERIES : 0),
			   reply);
out:
	daemon_symbol_paths_fini(&sp);
	if (reserved)
		daemon_memory_release(d, req.targets.has_uid, reserved);
	close(call->fd);
	return ret;
}
