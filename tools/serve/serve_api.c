/* The routes of flightrec serve (serve.h): the page and its assets from a
 * fixed table (a URL names an entry, never a path, so nothing outside the
 * table can be reached), and the JSON endpoints, each one request to the
 * recorder with the rights of the user running serve:
 *
 *   /api/status             the recorder's status (ring span, events)
 *   /api/timeline?...       the timeline of the ring (serve_timeline.c)
 *   /api/profile?QUERY      the flame graph tree of a range, with what its
 *                           values are ("value_type", "unit": the profile's
 *                           default sample type: cpu nanoseconds, ...)
 *   /api/diff?QUERY&from2=&to2=   the differential tree of [from2, to2)
 *                           against [from, to)
 *   /api/pprof?QUERY        the range as a gzip'ed pprof download
 *   /api/threads?pid=PID    `flightrec threads --json` of a process
 *
 * QUERY takes the options of `flightrec attach` by their long names: from,
 * to, window, event, pid, comm, cgroup, label; a range is [from, to).
 * Every route is reached only once serve_auth.c admitted the request. */
#include "tools/serve/serve.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pprof/pprof_read.h"
#include "core/util/compress.h"
#include "core/util/fs.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "tools/cli.h"
#include "tools/query.h"
#include "tools/serve/serve_tree.h"

#define JSON_TYPE "application/json; charset=utf-8"
/* Bounds of a profile the server reads back (gzip'ed and not). */
#define PROFILE_GZ_MAX (256u << 20)

/* The query parameters of a profile and the option each stands for. */
static const struct {
	const char *key;
	int opt;
} query_params[] = {
	{"window", FR_OPT_WINDOW}, {"from", FR_OPT_FROM},   {"to", FR_OPT_TO},
	{"event", FR_OPT_EVENT},   {"pid", FR_OPT_PID},	    {"comm", FR_OPT_COMM},
	{"cgroup", FR_OPT_CGROUP}, {"label", FR_OPT_LABEL},
};

#define NPARAMS (sizeof(query_params) / sizeof(query_params[0]))

struct params {
	char val[NPARAMS][512];
	struct fr_query_args q;
};

/* Reads the query parameters into p->q, with `from_key`/`to_key` as the
 * range's. Returns 0, or -1 with the offending parameter's name in why. */
static int parse_params(const char *query, const char *from_key, const char *to_key,
			struct params *p, char *why, size_t whylen)
{
	memset(&p->q, 0, sizeof(p->q));
	for (size_t i = 0; i < NPARAMS; i++) {
		const char *key = query_params[i].key;
		int n;

		if (query_params[i].opt == FR_OPT_FROM)
			key = from_key;
		else if (query_params[i].opt == FR_OPT_TO)
			key = to_key;
		n = fr_http_query_get(query, key, p->val[i], sizeof(p->val[i]));
		if (n == -1)
			continue;
		if (n < 0 ||
		    fr_query_opt("flightrec serve", query_params[i].opt, p->val[i], &p->q) != 1) {
			snprintf(why, whylen, "bad parameter \"%s\"", key);
			return -1;
		}
	}
	if (p->q.nevents > 1) {
		snprintf(why, whylen, "one event at a time");
		return -1;
	}
	if (fr_query_finish("flightrec serve", &p->q)) {
		snprintf(why, whylen, "bad range: give window, or from (and to)");
		return -1;
	}
	return 0;
}

/* Asks the recorder for the profile of p->q into `fd`. Returns 0, or -1
 * with the reason in why. */
static int ask_profile(const struct fr_serve *s, const struct params *p, int fd,
		       struct fr_ipc_attach_reply *reply, char *why, size_t whylen)
{
	struct fr_ipc_attach_req ar;
	cJSON *req, *resp = NULL;
	int sock, ret = -1;

	fr_query_attach_req(&p->q, &ar);
	if (!(req = fr_ipc_attach_req_encode(&ar))) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if ((sock = fr_cli_connect(s->socket_path)) < 0) {
		snprintf(why, whylen, "cannot reach the recorder at %s: %s", s->socket_path,
			 strerror(-sock));
		cJSON_Delete(req);
		return -1;
	}
	if (fr_ipc_call(sock, req, fd, &resp) < 0)
		snprintf(why, whylen, "the recorder did not answer");
	else if (fr_cli_resp_error(resp))
		snprintf(why, whylen, "%s", fr_cli_resp_error(resp));
	else if (fr_ipc_attach_reply_decode(resp, reply, why, whylen) == 0)
		ret = 0;
	close(sock);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return ret;
}

/* Reads the gzip'ed profile in `fd` (from its start) into *gz. */
static int read_fd(int fd, void **gz, size_t *len)
{
	char *buf;

	*gz = NULL;
	if (fr_read_whole(fd, PROFILE_GZ_MAX, &buf, len) < 0)
		return -1;
	if (!*len) {
		free(buf);
		return -1;
	}
	*gz = buf;
	return 0;
}

/* The profile of p->q decoded into *pd. Returns 0 or -1 with why. */
static int load_profile(const struct fr_serve *s, const struct params *p,
			struct fr_ipc_attach_reply *reply, struct fr_pprof_data **pd, char *why,
			size_t whylen)
{
	int fd = memfd_create("flightrec-serve", MFD_CLOEXEC);
	void *gz = NULL, *raw = NULL;
	size_t gzlen, rawlen;
	int ret = -1;

	*pd = NULL;
	if (fd < 0) {
		snprintf(why, whylen, "memfd_create: %s", strerror(errno));
		return -1;
	}
	if (ask_profile(s, p, fd, reply, why, whylen) < 0)
		goto out;
	if (read_fd(fd, &gz, &gzlen) < 0 || fr_gunzip(gz, gzlen, &raw, &rawlen) < 0 ||
	    fr_pprof_read(raw, rawlen, pd) < 0) {
		snprintf(why, whylen, "the recorder's profile cannot be read");
		goto out;
	}
	ret = 0;
out:
	free(raw);
	free(gz);
	close(fd);
	return ret;
}

/* Sends `o` as JSON, as UTF-8 whatever bytes the names in it hold. */
static void send_json(int fd, cJSON *o, int head_only)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL, *clean = NULL;
	size_t len;

	if (!text || !(clean = fr_utf8_clean(text, strlen(text), &len)))
		fr_serve_error(fd, 500, "out of memory", head_only);
	else
		fr_serve_respond(fd, 200, JSON_TYPE, clean, len, NULL, head_only);
	free(clean);
	free(text);
}

/* Adds what the recorder said of a range to the answer `o`. */
static int add_range(cJSON *o, const char *name, const struct fr_ipc_attach_reply *r)
{
	cJSON *x = cJSON_CreateObject(), *w;

	if (!x || !cJSON_AddItemToObject(o, name, x) || !fr_ipc_add_int(x, "from_ns", r->t0_ns) ||
	    !fr_ipc_add_int(x, "to_ns", r->t1_ns) || !fr_ipc_add_int(x, "samples", r->samples) ||
	    !(w = cJSON_AddArrayToObject(x, "warnings")))
		return -1;
	for (uint32_t i = 0; i < r->nwarnings; i++)
		cJSON_AddItemToArray(w, cJSON_CreateString(r->warnings[i]));
	if (r->incomplete[0])
		cJSON_AddItemToArray(w, cJSON_CreateString(r->incomplete));
	return 0;
}

/* /api/profile and /api/diff. */
static void route_tree(const struct fr_serve *s, int fd, const struct fr_http_request *r, int diff,
		       int head_only)
{
	struct params *p = malloc(sizeof(*p));
	struct fr_ipc_attach_reply *rep = malloc(2 * sizeof(*rep));
	struct fr_serve_tree *t = fr_serve_tree_new();
	struct fr_pprof_data *pd = NULL;
	cJSON *o = NULL, *tree;
	char why[600] = "out of memory", unit[32] = "", type[64] = "";
	int status = 500;

	if (!p || !rep || !t)
		goto out;
	status = 400;
	for (int side = 0; side <= diff; side++) {
		if (parse_params(r->query, side ? "from2" : "from", side ? "to2" : "to", p, why,
				 sizeof(why)) < 0)
			goto out;
		status = 502;
		if (load_profile(s, p, &rep[side], &pd, why, sizeof(why)) < 0)
			goto out;
		status = 500;
		snprintf(why, sizeof(why), "out of memory");
		if (fr_serve_tree_add(t, pd, side, -1) < 0)
			goto out;
		/* What the values drawn are (the default sample type): the
		 * page writes "12.3 s", "4.0 MiB" or "1,234 samples". */
		if (!side) {
			ssize_t col = pd->default_type >= 0 ? pd->default_type : 0;

			if ((size_t)col < pd->ntypes && pd->types[col].unit)
				snprintf(unit, sizeof(unit), "%s", pd->types[col].unit);
			if ((size_t)col < pd->ntypes && pd->types[col].type)
				snprintf(type, sizeof(type), "%s", pd->types[col].type);
		}
		fr_pprof_data_free(pd);
		pd = NULL;
		status = 400;
	}
	status = 500;
	if (!(o = cJSON_CreateObject()) || !(tree = fr_serve_tree_json(t, diff)) ||
	    !cJSON_AddItemToObject(o, "tree", tree) || add_range(o, "range", &rep[0]) < 0 ||
	    (diff && add_range(o, "range2", &rep[1]) < 0) ||
	    !cJSON_AddStringToObject(o, "event", p->val[3][0] ? p->val[3] : "cpu") ||
	    !cJSON_AddStringToObject(o, "unit", unit[0] ? unit : "count") ||
	    !cJSON_AddStringToObject(o, "value_type", type))
		goto out;
	status = 0;
	send_json(fd, o, head_only);
out:
	if (status)
		fr_serve_error(fd, status, why, head_only);
	cJSON_Delete(o);
	fr_pprof_data_free(pd);
	fr_serve_tree_free(t);
	free(rep);
	free(p);
}

/* /api/pprof: the range's profile as the recorder wrote it. */
static void route_pprof(const struct fr_serve *s, int fd, const struct fr_http_request *r,
			int head_only)
{
	struct params *p = malloc(sizeof(*p));
	struct fr_ipc_attach_reply *rep = malloc(sizeof(*rep));
	int mfd = memfd_create("flightrec-serve", MFD_CLOEXEC);
	char why[600] = "out of memory", disp[160];
	void *gz = NULL;
	size_t len;

	if (!p || !rep || mfd < 0)
		fr_serve_error(fd, 500, why, head_only);
	else if (parse_params(r->query, "from", "to", p, why, sizeof(why)) < 0)
		fr_serve_error(fd, 400, why, head_only);
	else if (ask_profile(s, p, mfd, rep, why, sizeof(why)) < 0)
		fr_serve_error(fd, 502, why, head_only);
	else if (read_fd(mfd, &gz, &len) < 0)
		fr_serve_error(fd, 502, "the recorder's profile cannot be read", head_only);
	else {
		snprintf(disp, sizeof(disp),
			 "Content-Disposition: attachment; filename=\"flightrec-%" PRId64
			 "-%" PRId64 ".pb.gz\"\r\n",
			 rep->t0_ns / FR_NS_PER_S, rep->t1_ns / FR_NS_PER_S);
		fr_serve_respond(fd, 200, "application/octet-stream", gz, len, disp, head_only);
	}
	if (mfd >= 0)
		close(mfd);
	free(gz);
	free(rep);
	free(p);
}

/* /api/threads?pid=PID: the threads of processes, as threads --json. */
static void route_threads(const struct fr_serve *s, int fd, const struct fr_http_request *r,
			  int head_only)
{
	struct fr_ipc_threads_req q = {0};
	struct fr_ipc_threads_reply *rep = malloc(sizeof(*rep));
	int mfd = memfd_create("flightrec-serve", MFD_CLOEXEC), sock = -1;
	cJSON *req = NULL, *resp = NULL, *o = NULL;
	char pids[256], why[600] = "out of memory";
	int status = 500;

	if (!rep || mfd < 0)
		goto out;
	status = 400;
	snprintf(why, sizeof(why), "bad parameter \"pid\": expected process ids like 1234");
	if (fr_http_query_get(r->query, "pid", pids, sizeof(pids)) < 0 ||
	    fr_parse_pid_list(pids, q.targets.pids, FR_LIMIT_PIDS, &q.targets.npids) < 0 ||
	    !q.targets.npids)
		goto out;
	status = 502;
	if (!(req = fr_ipc_threads_req_encode(&q)) || (sock = fr_cli_connect(s->socket_path)) < 0) {
		snprintf(why, sizeof(why), "cannot reach the recorder at %s", s->socket_path);
		goto out;
	}
	if (fr_ipc_call(sock, req, mfd, &resp) < 0 || fr_cli_resp_error(resp) ||
	    fr_ipc_threads_reply_decode(resp, rep, why, sizeof(why)) < 0) {
		snprintf(why, sizeof(why), "%s",
			 resp && fr_cli_resp_error(resp) ? fr_cli_resp_error(resp)
							 : "the recorder did not answer");
		goto out;
	}
	status = 500;
	if (!(o = fr_cli_threads_json(mfd, rep)))
		goto out;
	status = 0;
	send_json(fd, o, head_only);
out:
	if (status)
		fr_serve_error(fd, status, why, head_only);
	if (sock >= 0)
		close(sock);
	if (mfd >= 0)
		close(mfd);
	cJSON_Delete(o);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(rep);
}

/* /api/status: the recorder's status reply as it sent it. */
static void route_status(const struct fr_serve *s, int fd, int head_only)
{
	cJSON *resp = NULL;
	char *text = NULL;

	if (fr_cli_simple_request("status", s->socket_path, &resp, &text))
		fr_serve_error(fd, 502, "the recorder did not answer the status request",
			       head_only);
	else
		fr_serve_respond(fd, 200, JSON_TYPE, text, strlen(text), NULL, head_only);
	cJSON_Delete(resp);
	free(text);
}

static const struct fr_serve_asset *find_asset(const char *name)
{
	for (size_t i = 0; i < fr_serve_nassets; i++)
		if (strcmp(fr_serve_assets[i].name, name) == 0)
			return &fr_serve_assets[i];
	return NULL;
}

void fr_serve_route(const struct fr_serve *s, int fd, const struct fr_http_request *r)
{
	int head_only = strcmp(r->method, "HEAD") == 0;
	const struct fr_serve_asset *a = NULL;

	if (strcmp(r->path, "/") == 0 || strcmp(r->path, "/index.html") == 0)
		a = find_asset("index.html");
	else if (strncmp(r->path, "/assets/", 8) == 0)
		a = find_asset(r->path + 8);
	if (a) {
		char cookie[FR_HTTP_TOKEN_MAX + 128];

		/* The page loaded with the token in its address keeps it in a
		 * cookie its scripts cannot read, sent only by this site's own
		 * requests (not a link from another site, not a form). */
		snprintf(cookie, sizeof(cookie),
			 "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\r\n", s->cookie_name,
			 s->token);
		fr_serve_respond(fd, 200, a->type, a->data, a->len,
				 r->set_cookie && strcmp(a->name, "index.html") == 0 ? cookie
										     : NULL,
				 head_only);
		explicit_bzero(cookie, sizeof(cookie));
		return;
	}
	/* Browsers ask for it; the page has none. */
	if (strcmp(r->path, "/favicon.ico") == 0)
		fr_serve_respond(fd, 204, "image/x-icon", NULL, 0, NULL, head_only);
	else if (strcmp(r->path, "/api/status") == 0)
		route_status(s, fd, head_only);
	else if (strcmp(r->path, "/api/timeline") == 0)
		fr_serve_route_timeline(s, fd, r, head_only);
	else if (strcmp(r->path, "/api/profile") == 0)
		route_tree(s, fd, r, 0, head_only);
	else if (strcmp(r->path, "/api/diff") == 0)
		route_tree(s, fd, r, 1, head_only);
	else if (strcmp(r->path, "/api/pprof") == 0)
		route_pprof(s, fd, r, head_only);
	else if (strcmp(r->path, "/api/threads") == 0)
		route_threads(s, fd, r, head_only);
	else
		fr_serve_error(fd, 404, NULL, head_only);
}
