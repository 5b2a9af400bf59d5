/* The exporter (recorder/export/export_ch.h) built alone in its context,
 * without a recorder: a real ring in a temporary directory, a query
 * budget, and a flush hook that stores samples of the last seconds,
 * pointed at a ClickHouse that is not there (a port nothing listens on).
 *
 * What a user relies on: the exporter flushes before each batch and,
 * while the server is away, says in status that it retries and why,
 * holding none of the query memory between tries; a reload that removes
 * the block idles it (status omits it) and one whose password file cannot
 * be read is refused with the reason, the exporter going on as it was;
 * stopping it cancels what it does and gives everything back.
 */
#include "ipc/msg_status.h"
#include "recorder/export/export_ch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/store/sample.h"
#include "core/util/budget.h"
#include "tests/unit/check.h"

#define WAIT_S 20

static int flushes;

/* The recorder's flush: what was recorded up to now goes into the ring.
 * Here a chunk of this process's samples over the last two seconds, so
 * that the batch just ended has rows to send. */
static int flush(void *arg)
{
	static const uint64_t ips[2] = {0x401000, 0x401100};
	struct fr_ring *ring = arg;
	struct fr_chunk_builder *b = fr_chunk_builder_new(4096, 1u << 20);
	struct timespec now;
	void *chunk = NULL;
	size_t len = 0;
	int ret = -ENOMEM;

	clock_gettime(CLOCK_REALTIME, &now);
	for (int j = 0; b && j < 20; j++) {
		struct fr_sample s = {
			.time_ns = now.tv_sec * 1000000000LL + now.tv_nsec - (20 - j) * 100000000LL,
			.pid = (uint32_t)getpid(),
			.tid = (uint32_t)getpid(),
			.event = FR_EVENT_CPU,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = 2,
			.ips = ips,
		};

		fr_chunk_builder_add(b, &s);
	}
	if (b && (ret = fr_chunk_builder_seal(b, NULL, 0, &chunk, &len)) == 0)
		ret = fr_ring_append(ring, chunk, len);
	free(chunk);
	fr_chunk_builder_free(b);
	__atomic_add_fetch(&flushes, 1, __ATOMIC_RELAXED);
	return ret;
}

/* A local port nothing listens on: bound, then closed. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int parse(struct fr_config *cfg, const char *json)
{
	char err[512];
	int ret = fr_config_parse(cfg, json, strlen(json), "test", err, sizeof(err));

	CHECK(ret == 0, "config %s: %s", json, err);
	return ret;
}

/* The "export" part of a status reply now, in *o; 0 when status omits
 * it (no exporter running). */
static int status(struct fr_export *e, struct fr_ipc_status_export *o)
{
	memset(o, 0, sizeof(*o));
	return fr_export_status(e, o);
}

/* Waits until the exporter retries (returns 1) or WAIT_S passed. */
static int wait_retrying(struct fr_export *e, char *last_error, size_t len)
{
	struct fr_ipc_status_export x;

	for (int i = 0; i < WAIT_S * 10; i++) {
		if (status(e, &x) && strcmp(x.state, "retrying") == 0) {
			snprintf(last_error, len, "%s", x.last_error);
			return 1;
		}
		usleep(100 * 1000);
	}
	return 0;
}

/* Waits until status omits the exporter (returns 1) or WAIT_S passed. */
static int wait_off(struct fr_export *e)
{
	struct fr_ipc_status_export x;

	for (int i = 0; i < WAIT_S * 10; i++) {
		if (!status(e, &x))
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

int main(void)
{
	char dir[] = "/tmp/fr-test-export-XXXXXX", path[64], err[1024], json[512], why[512] = "";
	struct fr_config on, off, bad;
	struct fr_budget budget;
	struct fr_ring *ring = NULL;
	int port = free_port();

	if (port < 0 || !mkdtemp(dir) || fr_budget_init(&budget, 64u << 20) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/ring", dir);
	if (fr_ring_open(&ring, path, 4u << 20, 64u << 10, FR_RING_CREATE, err, sizeof(err)) < 0) {
		fprintf(stderr, "cannot open a ring in %s: %s\n", dir, err);
		return 1;
	}
	snprintf(json, sizeof(json),
		 "{\"export\":{\"clickhouse\":{\"url\":\"http://127.0.0.1:%d\",\"batch\":\"1s\"}}}",
		 port);
	if (parse(&on, json) < 0 || parse(&off, "{}") < 0)
		return 1;
	snprintf(json, sizeof(json),
		 "{\"export\":{\"clickhouse\":{\"url\":\"http://127.0.0.1:%d\",\"batch\":\"1s\","
		 "\"password_file\":\"%s/none\"}}}",
		 port, dir);
	if (parse(&bad, json) < 0)
		return 1;

	struct fr_export e = {
		.ring = ring,
		.ring_path = path,
		.query_budget = &budget,
		.flush = flush,
		.flush_arg = ring,
	};

	fr_export_start(&e, &off);
	CHECK(!e.running, "an exporter without an export block");
	fr_export_start(&e, &on);
	CHECK(e.running, "the exporter did not start");

	/* The first batch ends within a second and a half: flushed, tried,
	 * failed. */
	CHECK(wait_retrying(&e, err, sizeof(err)), "not retrying within %d s", WAIT_S);
	CHECK(strstr(err, "127.0.0.1") != NULL, "the error does not name the server: %s", err);
	CHECK(__atomic_load_n(&flushes, __ATOMIC_RELAXED) >= 1, "no flush before the batch");

	/* A password file that cannot be read: refused, nothing changes. */
	CHECK(fr_export_reload(&e, &on, &bad, why, sizeof(why)) < 0, "a reload without its "
								     "password file");
	CHECK(strstr(why, "export.clickhouse") != NULL, "why: %s", why);
	CHECK(wait_retrying(&e, err, sizeof(err)), "the refused reload changed the exporter");

	/* The block removed: idle, out of status. */
	CHECK(fr_export_reload(&e, &on, &off, why, sizeof(why)) == 0, "reload: %s", why);
	CHECK(wait_off(&e), "still in status %d s after its block was removed", WAIT_S);

	fr_export_stop(&e);
	CHECK(!e.running, "still running after stop");
	CHECK(fr_budget_used(&budget) == 0, "%llu bytes of the query memory kept",
	      (unsigned long long)fr_budget_used(&budget));
	fr_export_stop(&e); /* a context without one */

	fr_config_fini(&on);
	fr_config_fini(&off);
	fr_config_fini(&bad);
	fr_ring_close(ring);
	fr_budget_destroy(&budget);
	snprintf(err, sizeof(err), "rm -rf %s", dir);
	if (system(err) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return failures ? 1 : 0;
}
