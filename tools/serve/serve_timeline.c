/* flightrec serve's /api/timeline: the recorder's "timeline" answer
 * (ipc/msg_timeline.h) in its JSON form (core/query/timeline.h), which the
 * page draws as is. Parameters: event (default cpu), by (default process),
 * top, step (a duration), pid and comm (only those processes), and from/to (RFC 3339 or Unix seconds); without
 * from, the ring's whole span as the recorder's status gives it. Without
 * step, about 300 steps of a human unit: five times finer than the CLI's
 * default, since a chart has the width for them and the point is to find
 * the minute. */
#include "tools/serve/serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/sample.h"
#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/client.h"
#include "ipc/msg_timeline.h"
#include "tools/cli.h"
#include "tools/query.h"

/* The timeline JSON is bounded by the request (groups x steps). */
#define TIMELINE_JSON_MAX (64u << 20)

/* The oldest sample of the ring, from the recorder's status; 0 when it
 * cannot tell (an empty ring). */
static int64_t ring_oldest(const struct fr_serve *s)
{
	struct fr_ipc_status_reply *r = malloc(sizeof(*r));
	cJSON *resp = NULL;
	char *text = NULL, err[512];
	int64_t oldest = 0;

	if (r && fr_cli_simple_request("status", s->socket_path, &resp, &text) == 0 &&
	    fr_ipc_status_reply_decode(resp, r, err, sizeof(err)) == 0) {
		oldest = r->ring.oldest_ns;
		fr_ipc_status_reply_fini(r);
	}
	cJSON_Delete(resp);
	free(text);
	free(r);
	return oldest;
}

/* The processes asked: "pid" (1234,5678) and "comm" (nginx,redis), as
 * attach's --pid and --comm. Returns 0 or -1 with why. */
static int timeline_targets(const char *query, struct fr_ipc_timeline_req *q, char *why,
			    size_t whylen)
{
	static const struct {
		const char *key;
		int opt;
	} keys[] = {{"pid", FR_OPT_PID}, {"comm", FR_OPT_COMM}};
	struct fr_query_args *a = calloc(1, sizeof(*a));
	char v[512];
	int ret = 0, n;

	if (!a)
		return snprintf(why, whylen, "out of memory"), -1;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && ret == 0; i++) {
		n = fr_http_query_get(query, keys[i].key, v, sizeof(v));
		if (n == -1)
			continue;
		if (n < 0 || fr_query_opt("flightrec serve", keys[i].opt, v, a) != 1) {
			snprintf(why, whylen, "bad parameter \"%s\"", keys[i].key);
			ret = -1;
		}
	}
	fr_targets_processes(&q->targets, &a->targets);
	free(a);
	return ret;
}

/* Reads the request's parameters into *q. Returns 0 or -1 with why. */
static int timeline_params(const struct fr_serve *s, const char *query,
			   struct fr_ipc_timeline_req *q, char *why, size_t whylen)
{
	struct fr_timeline_request tr = {0};
	char v[256];
	uint64_t top;
	int64_t id;

	memset(q, 0, sizeof(*q));
	q->event = FR_EVENT_CPU;
	if (fr_http_query_get(query, "event", v, sizeof(v)) >= 0) {
		if ((id = fr_event_lookup(v)) < 0)
			return snprintf(why, whylen, "bad parameter \"event\""), -1;
		q->event = (uint32_t)id;
	}
	if (fr_http_query_get(query, "by", v, sizeof(v)) >= 0) {
		if (fr_timeline_parse_by(v, &tr) < 0)
			return snprintf(why, whylen, "bad parameter \"by\""), -1;
		q->by = tr.by;
		memcpy(q->label_key, tr.label_key, sizeof(q->label_key));
	}
	if (fr_http_query_get(query, "top", v, sizeof(v)) >= 0) {
		if (fr_parse_u64(v, 1, FR_TIMELINE_TOP_MAX, &top) < 0)
			return snprintf(why, whylen, "bad parameter \"top\""), -1;
		q->top = (uint32_t)top;
	}
	if (timeline_targets(query, q, why, whylen) < 0)
		return -1;
	if (fr_http_query_get(query, "to", v, sizeof(v)) >= 0) {
		if (fr_parse_time(v, &q->to_ns) < 0)
			return snprintf(why, whylen, "bad parameter \"to\""), -1;
		q->has_to = 1;
	}
	if (fr_http_query_get(query, "step", v, sizeof(v)) >= 0 &&
	    (fr_parse_duration(v, &q->step_ns) < 0 || q->step_ns < 1000000))
		return snprintf(why, whylen, "bad parameter \"step\": at least 1ms"), -1;
	q->has_from = 1;
	if (fr_http_query_get(query, "from", v, sizeof(v)) >= 0) {
		if (fr_parse_time(v, &q->from_ns) < 0)
			return snprintf(why, whylen, "bad parameter \"from\""), -1;
	} else if (!(q->from_ns = ring_oldest(s))) {
		/* An empty ring: the last minute, empty too. */
		q->has_from = 0;
		q->window_ns = 60 * FR_NS_PER_S;
	}
	if (!q->step_ns && q->has_from) {
		int64_t end = q->has_to ? q->to_ns : fr_now_real_ns();

		if (end > q->from_ns)
			q->step_ns = fr_timeline_default_step((end - q->from_ns) / 5);
	}
	return 0;
}

void fr_serve_route_timeline(const struct fr_serve *s, int fd, const struct fr_http_request *r,
			     int head_only)
{
	struct fr_ipc_timeline_req q;
	struct fr_ipc_timeline_reply rep;
	cJSON *req = NULL, *resp = NULL;
	char why[600] = "out of memory";
	int mfd = memfd_create("flightrec-serve", MFD_CLOEXEC), sock = -1, status = 500;
	char *body = NULL;
	size_t len;

	if (mfd < 0)
		goto out;
	status = 400;
	if (timeline_params(s, r->query, &q, why, sizeof(why)) < 0)
		goto out;
	status = 502;
	if (!(req = fr_ipc_timeline_req_encode(&q)) ||
	    (sock = fr_cli_connect(s->socket_path)) < 0) {
		snprintf(why, sizeof(why), "cannot reach the recorder at %s", s->socket_path);
		goto out;
	}
	if (fr_ipc_call(sock, req, mfd, &resp) < 0 || fr_cli_resp_error(resp) ||
	    fr_ipc_timeline_reply_decode(resp, &rep, why, sizeof(why)) < 0) {
		snprintf(why, sizeof(why), "%s",
			 resp && fr_cli_resp_error(resp) ? fr_cli_resp_error(resp)
							 : "the recorder did not answer");
		goto out;
	}
	if (fr_read_whole(mfd, TIMELINE_JSON_MAX, &body, &len) < 0 || !len) {
		snprintf(why, sizeof(why), "the recorder's timeline cannot be read");
		goto out;
	}
	status = 0;
	fr_serve_respond(fd, 200, "application/json; charset=utf-8", body, len, NULL, head_only);
out:
	if (status)
		fr_serve_error(fd, status, why, head_only);
	free(body);
	if (sock >= 0)
		close(sock);
	if (mfd >= 0)
		close(mfd);
	cJSON_Delete(req);
	cJSON_Delete(resp);
}
