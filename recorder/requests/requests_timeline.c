/* The "timeline" request (ipc/msg_timeline.h): which steps of a window
 * had the most of an event, per group, computed from the ring
 * (core/query/timeline.h) and written as its JSON form into the
 * descriptor the client passed.
 *
 * The same rules as attach: a peer that is not privileged sees only its
 * own processes (from its credentials, never from the request); the last
 * second is flushed into the ring first; the output is written under
 * attach's deadlines, so a client that does not read cannot hold the
 * thread. The answer is bounded (FR_TIMELINE_TOP_MAX + 1 groups of at
 * most FR_TIMELINE_STEPS_MAX values, about 2 MiB at worst) and is built
 * in memory before it is written. Memory while computing: one decoded
 * chunk at a time and the cells (group, step) that have a value. A
 * timeline reserves its estimate (fr_timeline_estimate) from the query
 * memory, as attach does, so sixty at once wait their turn under
 * limits.memory instead of taking hundreds of MiB; what it got is its
 * bound (fr_timeline_request.max_bytes): one that needs more is refused
 * with a message that says so, never left to grow.
 */
#include "recorder/requests/requests_timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/timeline.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/msg_timeline.h"
#include "ipc/proto.h"
#include "ipc/server.h"
#include "recorder/daemon_int.h"
#include "recorder/requests/peer.h"
#include "recorder/requests/reply_out.h"

/* The timeline request of `tr` as the peer may have it. Returns 0 or
 * -EINVAL with `call` refused. */
static int timeline_window(const struct fr_ipc_timeline_req *tr, struct fr_timeline_request *req,
			   struct fr_ipc_call *call)
{
	memset(req, 0, sizeof(*req));
	if (fr_reply_window(fr_now_real_ns(), tr->window_ns, tr->from_ns, tr->has_to, tr->to_ns,
			    &req->t0, &req->t1) < 0)
		return fr_ipc_refuse(call, "timeline: the window is empty (\"to_ns\" is not after "
					   "\"from_ns\", or \"from_ns\" is in the future)");
	req->step_ns = tr->step_ns;
	req->event = tr->event;
	req->by = tr->by;
	memcpy(req->label_key, tr->label_key, sizeof(req->label_key));
	req->top = tr->top;
	return 0;
}

/* A timeline's reservation of query memory. */
struct tl_mem {
	struct daemon *d;
	int has_uid;
	int64_t reserved;
};

/* fr_timeline_request.grow: more of the query memory for a timeline that
 * outgrew its estimate, if there is room now (doubling, so that a large
 * one asks a few times, not at every table it grows), else refused. */
static int64_t timeline_grow(void *arg, uint64_t need)
{
	struct tl_mem *m = arg;
	uint64_t cur = (uint64_t)m->reserved, want = need > 2 * cur ? need : 2 * cur;

	if (need <= cur)
		return m->reserved;
	if (daemon_memory_grow(m->d, m->has_uid, want - cur) < 0) {
		want = need;
		if (daemon_memory_grow(m->d, m->has_uid, want - cur) < 0)
			return -E2BIG;
	}
	__atomic_add_fetch(&m->d->mem.timelines, want - cur, __ATOMIC_RELAXED);
	m->reserved = (int64_t)want;
	return m->reserved;
}

/* Reserves the timeline's estimate and sets treq to grow from it. Returns
 * 0, or -EBUSY with `call` refused when the query memory stays taken. */
static int timeline_reserve(struct fr_timeline_request *treq, struct tl_mem *m,
			    struct fr_ipc_call *call)
{
	int64_t want = fr_timeline_estimate(m->d->ring, treq);

	m->has_uid = treq->has_uid;
	m->reserved = daemon_memory_reserve(m->d, m->has_uid, (uint64_t)(want > 0 ? want : 0));
	if (m->reserved < 0) {
		m->reserved = 0;
		return daemon_query_busy(m->d, call, "timeline");
	}
	__atomic_add_fetch(&m->d->mem.timelines, (uint64_t)m->reserved, __ATOMIC_RELAXED);
	treq->max_bytes = (uint64_t)m->reserved;
	treq->grow = timeline_grow;
	treq->grow_arg = m;
	return 0;
}

static void timeline_release(struct tl_mem *m)
{
	if (!m->reserved)
		return;
	__atomic_sub_fetch(&m->d->mem.timelines, (uint64_t)m->reserved, __ATOMIC_RELAXED);
	daemon_memory_release(m->d, m->has_uid, m->reserved);
}

/* Refuses a timeline that needed more than the `reserved` bytes it got,
 * and could get no more. */
static int timeline_too_big(struct daemon *d, int64_t reserved, struct fr_ipc_call *call)
{
	uint64_t limit = fr_budget_limit(&d->query_budget);
	uint64_t ceiling = __atomic_load_n(&d->mem.limit, __ATOMIC_RELAXED);
	int set = __atomic_load_n(&d->mem.query_set, __ATOMIC_RELAXED);
	char got[32], size[32];

	fr_format_size_human((uint64_t)reserved, got, sizeof(got));
	if (set)
		return fr_ipc_refuse(
			call,
			"timeline: refused: the window needs more than the %s of memory "
			"it could reserve (limits.query_memory, %s); ask for a shorter "
			"window, a wider step or fewer groups",
			got, fr_format_size(limit, size, sizeof(size)));
	return fr_ipc_refuse(call,
			     "timeline: refused: the window needs more than the %s of memory it "
			     "could reserve under limits.memory (%s, shared with the daemon's "
			     "caches and other queries); ask for a shorter window, a wider step "
			     "or fewer groups",
			     got, fr_format_size(ceiling, size, sizeof(size)));
}

/* The timeline's JSON form in memory: a malloc'd string, or NULL. */
static char *to_json(const struct fr_timeline *t, size_t *len)
{
	char *text = NULL;
	FILE *mem = open_memstream(&text, len);
	int ret;

	if (!mem)
		return NULL;
	ret = fr_timeline_write_json(mem, t);
	if (fclose(mem) != 0 || ret < 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Computes the timeline of `treq` and writes its JSON form into the
 * call's descriptor, filling `reply`. Returns 0 or -errno with `call`
 * refused. */
static int timeline_write(struct daemon *d, struct fr_ipc_call *call,
			  struct fr_timeline_request *treq, struct tl_mem *mem,
			  struct fr_ipc_timeline_reply *reply)
{
	struct fr_timeline *t = NULL;
	char err[512], *text = NULL;
	size_t len = 0;
	int ret;

	ret = fr_timeline_compute(d->ring, treq, &t, err, sizeof(err));
	if (ret == -E2BIG)
		return timeline_too_big(d, mem->reserved, call);
	if (ret < 0)
		return fr_ipc_refuse(call, "timeline: %s", err);
	text = to_json(t, &len);
	ret = text ? fr_reply_write(call->fd, text, len, call->peer) : -ENOMEM;
	if (ret == -ETIMEDOUT)
		fr_ipc_refuse(call,
			      "timeline: the output took no bytes for %lld s: is anything reading "
			      "it? Gave up",
			      (long long)(OUTPUT_STALL_NS / FR_NS_PER_S));
	else if (ret < 0)
		fr_ipc_refuse(call, "timeline: cannot write the answer: %s", strerror(-ret));
	else {
		reply->samples = t->samples;
		reply->groups = t->ngroups;
		reply->bytes = len;
	}
	free(text);
	fr_timeline_free(t);
	return ret;
}

int daemon_handle_timeline(void *arg, struct fr_ipc_call *call,
			   const struct fr_ipc_timeline_req *tr,
			   struct fr_ipc_timeline_reply *reply)
{
	struct daemon *d = arg;
	struct fr_timeline_request treq = {0};
	struct tl_mem mem = {.d = d};
	int flags, ret;

	if (call->fd < 0)
		return fr_ipc_refuse(call,
				     "timeline needs the output file passed with the request");
	flags = fcntl(call->fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		ret = fr_ipc_refuse(call,
				    "timeline: the output descriptor is not open for writing");
		goto out;
	}
	ret = timeline_window(tr, &treq, call);
	if (ret < 0)
		goto out;
	if (tr->targets.npids || tr->targets.ncomms)
		treq.targets = &tr->targets;
	if (!fr_peer_privileged(d->peers, call->peer)) {
		treq.has_uid = 1;
		treq.uid = (uint32_t)call->peer->uid;
		fr_ipc_warn(reply->warnings, &reply->nwarnings,
			    "the timeline holds only your own processes; root and members of "
			    "socket.admin_group see the whole machine");
	}
	if (fr_ingest_flush(&d->ingest) < 0)
		fr_ipc_warn(reply->warnings, &reply->nwarnings, FLUSH_NOTE);
	treq.stop = fr_ipc_peer_gone;
	treq.stop_arg = call->peer;
	ret = timeline_reserve(&treq, &mem, call);
	if (ret == 0)
		ret = timeline_write(d, call, &treq, &mem, reply);
out:
	close(call->fd);
	timeline_release(&mem);
	return ret;
}
