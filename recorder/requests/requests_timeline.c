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
#include "core/util/uring.h"
#include "ipc/msg_timeline.h"
#include "ipc/proto.h"
#include "ipc/server.h"
#include "recorder/daemon_int.h"

/* The timeline request of `tr` as the peer may have it. Returns 0 or an
 * error reply. */
static cJSON *timeline_window(const struct fr_ipc_timeline_req *tr, struct fr_timeline_request *req)
{
	int64_t now = fr_now_real_ns();

	memset(req, 0, sizeof(*req));
	if (tr->window_ns) {
		req->t1 = now;
		req->t0 = tr->window_ns < now ? now - tr->window_ns : 0;
	} else {
		req->t0 = tr->from_ns;
		req->t1 = tr->has_to ? tr->to_ns : now;
	}
	if (req->t1 <= req->t0)
		return fr_ipc_error("timeline: the window is empty (\"to_ns\" is not after "
				    "\"from_ns\", or \"from_ns\" is in the future)");
	req->step_ns = tr->step_ns;
	req->event = tr->event;
	req->by = tr->by;
	memcpy(req->label_key, tr->label_key, sizeof(req->label_key));
	req->top = tr->top;
	return NULL;
}

/* Writes `len` bytes into the client's descriptor under attach's output
 * deadlines. Returns 0 or -errno. */
static int write_out(int fd, const char *text, size_t len, struct fr_ipc_peer *peer)
{
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = malloc(sizeof(*w));
	int ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;

	if (ret == 0) {
		fr_uring_writer_init(w, uring, fd);
		fr_uring_writer_limit(w, OUTPUT_STALL_NS, OUTPUT_TOTAL_NS, peer->sock);
		ret = fr_uring_writer_write(w, text, len);
		if (ret == 0)
			ret = fr_uring_writer_flush(w);
	}
	fr_uring_close(uring);
	free(w);
	return ret;
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
 * NULL, or the error reply when the query memory stays taken. */
static cJSON *timeline_reserve(struct fr_timeline_request *treq, struct tl_mem *m)
{
	int64_t want = fr_timeline_estimate(m->d->ring, treq);

	m->has_uid = treq->has_uid;
	m->reserved = daemon_memory_reserve(m->d, m->has_uid, (uint64_t)(want > 0 ? want : 0));
	if (m->reserved < 0) {
		m->reserved = 0;
		return daemon_query_busy(m->d, "timeline");
	}
	__atomic_add_fetch(&m->d->mem.timelines, (uint64_t)m->reserved, __ATOMIC_RELAXED);
	treq->max_bytes = (uint64_t)m->reserved;
	treq->grow = timeline_grow;
	treq->grow_arg = m;
	return NULL;
}

static void timeline_release(struct tl_mem *m)
{
	if (!m->reserved)
		return;
	__atomic_sub_fetch(&m->d->mem.timelines, (uint64_t)m->reserved, __ATOMIC_RELAXED);
	daemon_memory_release(m->d, m->has_uid, m->reserved);
}

/* The reply to a timeline that needed more than the `reserved` bytes it
 * got, and could get no more. */
static cJSON *timeline_too_big(struct daemon *d, int64_t reserved)
{
	uint64_t limit = fr_budget_limit(&d->query_budget);
	uint64_t ceiling = __atomic_load_n(&d->mem.limit, __ATOMIC_RELAXED);
	int set = __atomic_load_n(&d->mem.query_set, __ATOMIC_RELAXED);
	char got[32], size[32];

	fr_format_size_human((uint64_t)reserved, got, sizeof(got));
	if (set)
		return fr_ipc_error("timeline: refused: the window needs more than the %s of memory "
				    "it could reserve (limits.query_memory, %s); ask for a shorter "
				    "window, a wider step or fewer groups",
				    got, fr_format_size(limit, size, sizeof(size)));
	return fr_ipc_error("timeline: refused: the window needs more than the %s of memory it "
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

cJSON *daemon_handle_timeline(struct daemon *d, const cJSON *req, int fd, struct fr_ipc_peer *peer)
{
	struct fr_ipc_timeline_req tr;
	struct fr_ipc_timeline_reply reply = {0};
	struct fr_timeline_request treq = {0};
	struct fr_timeline *t = NULL;
	char err[512], *text = NULL;
	cJSON *resp = NULL;
	struct tl_mem mem = {.d = d};
	size_t len = 0;
	int flags, ret;

	if (fd < 0)
		return fr_ipc_error("timeline needs the output file passed with the request");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		resp = fr_ipc_error("timeline: the output descriptor is not open for writing");
		goto out;
	}
	if (fr_ipc_timeline_req_decode(req, &tr, err, sizeof(err)) < 0) {
		resp = fr_ipc_error("%s", err);
		goto out;
	}
	resp = timeline_window(&tr, &treq);
	if (resp)
		goto out;
	if (!daemon_peer_privileged(d, peer)) {
		treq.has_uid = 1;
		treq.uid = (uint32_t)peer->uid;
		fr_ipc_warn(reply.warnings, &reply.nwarnings,
			    "the timeline holds only your own processes; root and members of "
			    "socket.admin_group see the whole machine");
	}
	if (daemon_flush_barrier(d) < 0)
		fr_ipc_warn(reply.warnings, &reply.nwarnings, FLUSH_NOTE);
	treq.stop = fr_ipc_peer_gone;
	treq.stop_arg = peer;
	resp = timeline_reserve(&treq, &mem);
	if (resp)
		goto out;
	ret = fr_timeline_compute(d->ring, &treq, &t, err, sizeof(err));
	if (ret == -E2BIG) {
		resp = timeline_too_big(d, mem.reserved);
		goto out;
	}
	if (ret < 0) {
		resp = fr_ipc_error("timeline: %s", err);
		goto out;
	}
	text = to_json(t, &len);
	ret = text ? write_out(fd, text, len, peer) : -ENOMEM;
	if (ret == -ETIMEDOUT) {
		resp = fr_ipc_error("timeline: the output took no bytes for %lld s: is anything "
				    "reading it? Gave up",
				    (long long)(OUTPUT_STALL_NS / FR_NS_PER_S));
		goto out;
	} else if (ret < 0) {
		resp = fr_ipc_error("timeline: cannot write the answer: %s", strerror(-ret));
		goto out;
	}
	reply.samples = t->samples;
	reply.groups = t->ngroups;
	reply.bytes = len;
	resp = fr_ipc_timeline_reply_encode(&reply);
out:
	close(fd);
	free(text);
	fr_timeline_free(t);
	timeline_release(&mem);
	return resp;
}
