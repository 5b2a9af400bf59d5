/* The status and sessions requests of recorder/requests/status.c over a
 * socketpair, with no daemon running: a struct daemon holding only what
 * those requests read (a ring, the counters, the sources with none
 * started), the request dispatched as the IPC server would
 * (ipc/dispatch.h) on a thread of the test, and the reply read by the
 * CLI's decoder. What a viewer is told depends on who asks: the
 * configuration's path only to the privileged. */
#include "recorder/daemon_int.h"
#include "recorder/requests/peer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "core/util/log.h"
#include "ipc/dispatch.h"
#include "ipc/msg_status.h"
#include "ipc/proto.h"
#include "tests/unit/check.h"

/* The daemon's end of the socketpair: answers one request as the IPC
 * server does, for the peer `peer`. */
struct server {
	struct fr_ipc_dispatch dispatch;
	struct fr_ipc_peer peer;
	int sock;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	const cJSON *cmd;
	cJSON *req = NULL, *resp;
	int fd = -1;

	if (fr_ipc_recv_json(s->sock, &req, &fd) < 0)
		return NULL;
	cmd = cJSON_GetObjectItemCaseSensitive(req, "req");
	resp = fr_ipc_dispatch(&s->dispatch, cJSON_IsString(cmd) ? cmd->valuestring : "", req, fd,
			       &s->peer);
	if (resp)
		fr_ipc_send_json(s->sock, resp, -1);
	cJSON_Delete(resp);
	cJSON_Delete(req);
	return NULL;
}

/* Asks `d` for `cmd` as uid `uid` and returns the parsed reply. */
static cJSON *ask(struct daemon *d, const char *cmd, uid_t uid)
{
	struct server s = {.dispatch = {.h = &daemon_handlers, .arg = d},
			   .peer = {.pid = getpid(), .uid = uid, .gid = uid}};
	cJSON *req = cJSON_CreateObject(), *resp = NULL;
	pthread_t thread;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
	cJSON_AddNumberToObject(req, "v", FR_IPC_VERSION);
	cJSON_AddStringToObject(req, "req", cmd);
	s.sock = sv[1];
	s.peer.sock = sv[1];
	pthread_create(&thread, NULL, serve_one, &s);
	CHECK(fr_ipc_send_json(sv[0], req, -1) == 0, "sending %s failed", cmd);
	CHECK(fr_ipc_recv_json(sv[0], &resp, NULL) == 0, "no reply to %s", cmd);
	pthread_join(thread, NULL);
	close(sv[0]);
	close(sv[1]);
	cJSON_Delete(req);
	return resp;
}

static void test_status(struct daemon *d, const char *ring_path)
{
	struct fr_ipc_status_reply *r = calloc(1, sizeof(*r));
	cJSON *resp = ask(d, "status", geteuid());
	char err[512] = "";

	CHECK(resp && fr_ipc_status_reply_decode(resp, r, err, sizeof(err)) == 0,
	      "status reply: %s", err);
	CHECK(r->pid == getpid(), "pid %lld", (long long)r->pid);
	CHECK(strcmp(r->config, "/etc/flightrec.json") == 0,
	      "the daemon's own user is not shown the configuration: \"%s\"", r->config);
	CHECK(r->started_ns == d->start_real, "started_ns %lld", (long long)r->started_ns);
	CHECK(r->samples == 12345 && r->samples_lost_since_start == 7 && r->cpus == 3,
	      "counters: samples %llu, lost %llu, cpus %llu", (unsigned long long)r->samples,
	      (unsigned long long)r->samples_lost_since_start, (unsigned long long)r->cpus);
	CHECK(strcmp(r->labels.error, "not started") == 0, "labels: \"%s\"", r->labels.error);
	CHECK(!r->has_symbol_cache && !r->has_unwind_tables && !r->has_export,
	      "parts that do not run are reported");
	CHECK(r->rec.nevents == 0 && r->rec.nconsumers == 0, "%u events, %u consumers",
	      r->rec.nevents, r->rec.nconsumers);
	CHECK(strcmp(r->ring.path, ring_path) == 0 && r->ring.size > 0 && r->ring.size <= 4u << 20,
	      "ring %s of %llu bytes", r->ring.path, (unsigned long long)r->ring.size);
	CHECK(r->memory.limit == 1u << 30, "memory limit %llu",
	      (unsigned long long)r->memory.limit);
	fr_ipc_status_reply_fini(r);
	cJSON_Delete(resp);

	/* Another user came in through the socket's group. */
	resp = ask(d, "status", geteuid() + 4242);
	CHECK(resp && fr_ipc_status_reply_decode(resp, r, err, sizeof(err)) == 0,
	      "status reply: %s", err);
	CHECK(!r->config[0], "a user who is not privileged is shown the configuration");
	fr_ipc_status_reply_fini(r);
	cJSON_Delete(resp);
	free(r);
}

static void test_sessions(struct daemon *d)
{
	struct fr_ipc_sessions_reply r;
	struct fr_config *cfg = calloc(1, sizeof(*cfg));
	cJSON *resp;
	char err[512] = "";

	cfg->nsessions = 1;
	snprintf(cfg->sessions[0].name, sizeof(cfg->sessions[0].name), "db");
	cfg->sessions[0].nevents = 1;
	cfg->sessions[0].events[0].event = FR_EVENT_CPU;
	cfg->sessions[0].events[0].hz = 19;
	cfg->sessions[0].targets.npids = 2;
	cfg->sessions[0].targets.pids[0] = 12;
	cfg->sessions[0].targets.pids[1] = 13;
	daemon_publish_sessions(d, cfg);
	resp = ask(d, "sessions", 0);
	CHECK(resp && fr_ipc_sessions_reply_decode(resp, &r, err, sizeof(err)) == 0,
	      "sessions reply: %s", err);
	CHECK(r.nsessions == 1 && strcmp(r.sessions[0].name, "db") == 0 &&
		      strcmp(r.sessions[0].targets, "pid 12,13") == 0 &&
		      r.sessions[0].events[0].hz == 19 && r.sessions[0].last_dump_ns == 0,
	      "the session published is not the one answered");
	fr_ipc_sessions_reply_fini(&r);
	cJSON_Delete(resp);
	free(cfg);
}

int main(void)
{
	static struct fr_peers peers;
	struct fr_daemon_options opts = {.config_source = "/etc/flightrec.json"};
	struct daemon *d = calloc(1, sizeof(*d));
	char dir[] = "/tmp/fr-requests-status.XXXXXX", path[64], err[512] = "";
	cJSON *resp;

	if (!d || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&d->ring, path, 4u << 20, 64u << 10, FR_RING_CREATE, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	d->opts = &opts;
	peers.admin_gid = -1;
	pthread_mutex_init(&peers.lock, NULL);
	d->peers = &peers;
	d->start_real = fr_now_real_ns();
	d->start_mono = fr_now_mono_ns();
	d->ncpus = 3;
	d->ingest.samples = 12345;
	d->ingest.lost = 7;
	d->mem.limit = 1u << 30;
	fr_budget_init(&d->query_budget, 1u << 28);
	pthread_mutex_init(&d->sessions_lock, NULL);

	test_status(d, path);
	test_sessions(d);
	/* A request the recorder does not answer. */
	resp = ask(d, "frobnicate", 0);
	CHECK(resp && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(resp, "ok")),
	      "an unknown request is answered ok");
	cJSON_Delete(resp);

	free(d->sessions);
	fr_budget_destroy(&d->query_budget);
	fr_ring_close(d->ring);
	unlink(path);
	rmdir(dir);
	free(d);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
