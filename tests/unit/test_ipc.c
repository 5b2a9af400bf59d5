/* IPC: framing over socketpair() with no daemon (round trip, byte layout,
 * descriptor passing, every malformed-frame class, receive deadlines),
 * the client's call and socket paths. The server is test_ipc_server.c. */
#include "ipc/client.h"
#include "ipc/paths.h"
#include "ipc/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/ipc_test.h"

static void make_pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
}

static void write_header(int fd, uint32_t len)
{
	unsigned char h[4] = {len & 0xff, (len >> 8) & 0xff, (len >> 16) & 0xff, len >> 24};

	write_all(fd, h, 4);
}

static void test_round_trip(void)
{
	int sv[2];
	cJSON *req = cJSON_CreateObject(), *got = NULL;
	unsigned char raw[8];
	int fd = 123;

	make_pair(sv);
	cJSON_AddStringToObject(req, "req", "status");
	cJSON_AddNumberToObject(req, "n", 42);
	CHECK(fr_ipc_send_json(sv[0], req, -1) == 0, "send_json");
	CHECK(fr_ipc_recv_json(sv[1], &got, &fd) == 0, "recv_json");
	CHECK(got && str_field(got, "req") && strcmp(str_field(got, "req"), "status") == 0,
	      "req field lost");
	CHECK(got && cJSON_GetNumberValue(cJSON_GetObjectItem(got, "n")) == 42, "n field lost");
	CHECK(fd == -1, "fd_out should be -1 without a passed descriptor, got %d", fd);
	cJSON_Delete(got);
	cJSON_Delete(req);

	/* The byte layout: u32 little-endian length, then the text. */
	CHECK(fr_ipc_send(sv[0], "{}", 2, -1) == 0, "send {}");
	CHECK(read(sv[1], raw, 6) == 6, "read raw frame");
	CHECK(memcmp(raw, "\x02\x00\x00\x00{}", 6) == 0, "frame bytes differ");

	/* A frame of exactly the maximum size passes. */
	{
		char *big = malloc(FR_IPC_MAX_FRAME);
		char *text = NULL;
		size_t len = 0;
		int sz = 4 * FR_IPC_MAX_FRAME;

		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		memset(big, 'x', FR_IPC_MAX_FRAME);
		memcpy(big, "{\"a\":\"", 6);
		memcpy(big + FR_IPC_MAX_FRAME - 2, "\"}", 2);
		CHECK(fr_ipc_send(sv[0], big, FR_IPC_MAX_FRAME, -1) == 0, "max frame send");
		CHECK(fr_ipc_recv(sv[1], &text, &len, NULL) == 0, "max frame recv");
		CHECK(len == FR_IPC_MAX_FRAME && text && text[len] == '\0' &&
			      memcmp(text, big, len) == 0,
		      "max frame content");
		free(text);
		free(big);
	}
	close(sv[0]);
	close(sv[1]);
}

static void test_fd_passing(void)
{
	int sv[2], p[2];
	cJSON *got = NULL;
	char buf[8] = {0};
	int fd = -1;

	make_pair(sv);
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("pipe2");
		exit(1);
	}
	CHECK(fr_ipc_send(sv[0], "{\"req\":\"attach\"}", 16, p[1]) == 0, "send with fd");
	close(p[1]);
	CHECK(fr_ipc_recv_json(sv[1], &got, &fd) == 0, "recv with fd");
	CHECK(fd >= 0, "no descriptor received");
	if (fd >= 0) {
		CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC, "received fd lacks FD_CLOEXEC");
		CHECK(write(fd, "pong", 4) == 4, "write through passed fd");
		close(fd);
		CHECK(read(p[0], buf, sizeof(buf)) == 4 && memcmp(buf, "pong", 4) == 0,
		      "data written through the passed fd did not arrive");
	}
	cJSON_Delete(got);
	close(p[0]);

	/* A descriptor the receiver did not ask for is closed: once the
	 * sender closes its copy, the pipe's reader sees EOF. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("pipe2");
		exit(1);
	}
	CHECK(fr_ipc_send(sv[0], "{}", 2, p[1]) == 0, "send unexpected fd");
	close(p[1]);
	{
		char *text = NULL;
		size_t len;

		CHECK(fr_ipc_recv(sv[1], &text, &len, NULL) == 0, "recv without fd_out");
		free(text);
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	CHECK(read(p[0], buf, sizeof(buf)) == 0, "unexpected descriptor was kept open");
	close(p[0]);

	/* A descriptor passed with a frame that is not an object is closed
	 * and not handed out. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("pipe2");
		exit(1);
	}
	CHECK(fr_ipc_send(sv[0], "[1]", 3, p[1]) == 0, "send array with fd");
	close(p[1]);
	fd = 77;
	got = NULL;
	CHECK(fr_ipc_recv_json(sv[1], &got, &fd) == -EBADMSG, "array with fd not rejected");
	CHECK(fd == -1 && got == NULL, "outputs not cleared on error (fd %d)", fd);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	CHECK(read(p[0], buf, sizeof(buf)) == 0, "fd of a rejected frame was kept open");
	close(p[0]);

	close(sv[0]);
	close(sv[1]);
}

static void test_bad_frames(void)
{
	int sv[2];
	char *text = NULL;
	size_t len = 0;
	cJSON *got = NULL;
	char big[16];
	int ret;

	/* Sender side refuses bad lengths. */
	make_pair(sv);
	CHECK(fr_ipc_send(sv[0], "{}", 0, -1) == -EMSGSIZE, "zero-length send accepted");
	CHECK(fr_ipc_send(sv[0], big, (size_t)FR_IPC_MAX_FRAME + 1, -1) == -EMSGSIZE,
	      "oversized send accepted");

	/* Receiver side: oversized length. */
	write_header(sv[0], FR_IPC_MAX_FRAME + 1);
	ret = fr_ipc_recv(sv[1], &text, &len, NULL);
	CHECK(ret == -EMSGSIZE && !text, "oversized frame: got %d", ret);
	close(sv[0]);
	close(sv[1]);

	/* Zero length. */
	make_pair(sv);
	write_header(sv[0], 0);
	ret = fr_ipc_recv(sv[1], &text, &len, NULL);
	CHECK(ret == -EMSGSIZE, "zero-length frame: got %d", ret);
	close(sv[0]);
	close(sv[1]);

	/* Truncated body. */
	make_pair(sv);
	write_header(sv[0], 10);
	write_all(sv[0], "{\"a\"", 4);
	shutdown(sv[0], SHUT_WR);
	ret = fr_ipc_recv(sv[1], &text, &len, NULL);
	CHECK(ret == -EBADMSG && !text, "truncated body: got %d", ret);
	close(sv[0]);
	close(sv[1]);

	/* Truncated header. */
	make_pair(sv);
	write_all(sv[0], "\x05\x00", 2);
	shutdown(sv[0], SHUT_WR);
	ret = fr_ipc_recv(sv[1], &text, &len, NULL);
	CHECK(ret == -EBADMSG, "truncated header: got %d", ret);
	close(sv[0]);
	close(sv[1]);

	/* EOF before a frame. */
	make_pair(sv);
	close(sv[0]);
	ret = fr_ipc_recv(sv[1], &text, &len, NULL);
	CHECK(ret == -ECONNRESET, "EOF: got %d", ret);
	ret = fr_ipc_recv_json(sv[1], &got, NULL);
	CHECK(ret == -ECONNRESET, "EOF (json): got %d", ret);
	close(sv[1]);

	/* Frames that are not one JSON object. */
	{
		static const char *const bad[] = {
			"[1,2]", "\"str\"", "42", "{", "{} x", "{\"a\":1}}", "nul",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			make_pair(sv);
			CHECK(fr_ipc_send(sv[0], bad[i], strlen(bad[i]), -1) == 0, "send");
			ret = fr_ipc_recv_json(sv[1], &got, NULL);
			CHECK(ret == -EBADMSG && !got, "%s: got %d", bad[i], ret);
			close(sv[0]);
			close(sv[1]);
		}
		make_pair(sv);
		CHECK(fr_ipc_send(sv[0], "{}\0{}", 5, -1) == 0, "send");
		ret = fr_ipc_recv_json(sv[1], &got, NULL);
		CHECK(ret == -EBADMSG, "embedded NUL: got %d", ret);
		close(sv[0]);
		close(sv[1]);
	}

	/* Receive timeout. */
	{
		struct timeval tv = {.tv_usec = 20000};

		make_pair(sv);
		setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ret = fr_ipc_recv(sv[1], &text, &len, NULL);
		CHECK(ret == -EAGAIN, "timeout: got %d", ret);
		close(sv[0]);
		close(sv[1]);
	}

	/* Peer gone: -EPIPE, and no SIGPIPE (which would end this test). */
	make_pair(sv);
	close(sv[1]);
	ret = fr_ipc_send(sv[0], "{}", 2, -1);
	CHECK(ret == -EPIPE, "send to closed peer: got %d", ret);
	close(sv[0]);
}

static void test_messages(void)
{
	cJSON *e = fr_ipc_error("bad %s %d", "thing", 7);
	cJSON *o = fr_ipc_ok();

	CHECK(e && cJSON_IsFalse(cJSON_GetObjectItem(e, "ok")), "error lacks ok:false");
	CHECK(e && str_field(e, "error") && strcmp(str_field(e, "error"), "bad thing 7") == 0,
	      "error text");
	CHECK(o && is_ok(o), "ok lacks ok:true");
	cJSON_Delete(e);
	cJSON_Delete(o);
}

/* fr_ipc_call against a canned response: the request goes out with "v",
 * and a daemon speaking another version is -EPROTO. */
static void test_call(void)
{
	int sv[2];
	cJSON *req = cJSON_CreateObject(), *resp = NULL, *seen = NULL;
	const char *v2 = "{\"ok\":false,\"error\":\"protocol version 1 not supported\",\"v\":2}";
	int ret;

	make_pair(sv);
	cJSON_AddStringToObject(req, "req", "status");
	CHECK(fr_ipc_send(sv[1], "{\"ok\":true,\"x\":1}", 17, -1) == 0, "canned");
	ret = fr_ipc_call(sv[0], req, -1, &resp);
	CHECK(ret == 0 && resp && is_ok(resp), "call: %d", ret);
	CHECK(fr_ipc_recv_json(sv[1], &seen, NULL) == 0, "request not sent");
	CHECK(seen && cJSON_GetNumberValue(cJSON_GetObjectItem(seen, "v")) == FR_IPC_VERSION,
	      "request lacks v");
	cJSON_Delete(seen);
	cJSON_Delete(resp);

	CHECK(fr_ipc_send(sv[1], v2, strlen(v2), -1) == 0, "canned v2");
	resp = NULL;
	ret = fr_ipc_call(sv[0], req, -1, &resp);
	CHECK(ret == -EPROTO, "version mismatch: got %d", ret);
	CHECK(resp && str_field(resp, "error"), "message of the mismatch not handed back");
	cJSON_Delete(resp);

	close(sv[1]);
	resp = (cJSON *)1;
	ret = fr_ipc_call(sv[0], req, -1, &resp);
	CHECK(ret == -ECONNRESET && resp == NULL, "closed daemon: got %d", ret);
	close(sv[0]);
	cJSON_Delete(req);
}

static void test_paths(void)
{
	char *p;
	char want[128];

	unsetenv("FLIGHTREC_SOCKET");
	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	p = fr_ipc_default_socket();
	if (geteuid() == 0)
		snprintf(want, sizeof(want), "/run/flightrec/flightrec.sock");
	else
		snprintf(want, sizeof(want), "/run/user/4242/flightrec.sock");
	CHECK(p && strcmp(p, want) == 0, "default socket %s, want %s", p, want);
	free(p);

	unsetenv("XDG_RUNTIME_DIR");
	p = fr_ipc_client_socket_path();
	if (geteuid() != 0)
		snprintf(want, sizeof(want), "/tmp/flightrec-%u/flightrec.sock",
			 (unsigned)geteuid());
	CHECK(p && strcmp(p, want) == 0, "fallback socket %s, want %s", p, want);
	free(p);

	setenv("FLIGHTREC_SOCKET", "/x/y.sock", 1);
	p = fr_ipc_client_socket_path();
	CHECK(p && strcmp(p, "/x/y.sock") == 0, "FLIGHTREC_SOCKET ignored: %s", p);
	free(p);
	unsetenv("FLIGHTREC_SOCKET");
}

/* fr_ipc_recv_timed: the frame's clock starts at its first byte and runs
 * across receives, so bytes trickling in cannot stretch it; an idle wait
 * has its own limit; a frame in time is received whole. */
static void *trickle_main(void *p)
{
	int fd = *(int *)p;
	unsigned char hdr[4] = {100, 0, 0, 0};

	/* A byte every 20 ms: each receive alone is quick, the frame never
	 * completes (100 bytes announced, at most 50 sent). */
	for (int i = 0; i < 54; i++) {
		const void *b = i < 4 ? (const void *)&hdr[i] : "x";

		if (send(fd, b, 1, MSG_NOSIGNAL) != 1)
			break;
		sleep_ms(20);
	}
	return NULL;
}

static void test_recv_deadline(void)
{
	pthread_t t;
	char *json = NULL;
	size_t len = 0;
	int sv[2], ret;

	/* Nothing arrives: the wait for the first byte ends. */
	make_pair(sv);
	ret = fr_ipc_recv_timed(sv[0], &json, &len, NULL, 50000000LL, 50000000LL);
	CHECK(ret == -ETIMEDOUT, "idle wait: %d, want -ETIMEDOUT", ret);

	/* A whole frame within the deadlines is received. */
	CHECK(fr_ipc_send(sv[1], "{\"a\":1}", 7, -1) == 0, "send");
	ret = fr_ipc_recv_timed(sv[0], &json, &len, NULL, 5000000000LL, 5000000000LL);
	CHECK(ret == 0 && len == 7 && json && memcmp(json, "{\"a\":1}", 7) == 0,
	      "frame in time: %d", ret);
	free(json);
	json = NULL;

	/* A trickle: every receive gets a byte within 20 ms, but the frame
	 * cannot complete within 200 ms of its first byte. */
	CHECK(pthread_create(&t, NULL, trickle_main, &sv[1]) == 0, "thread");
	ret = fr_ipc_recv_timed(sv[0], &json, &len, NULL, 5000000000LL, 200000000LL);
	CHECK(ret == -ETIMEDOUT, "trickled frame: %d, want -ETIMEDOUT", ret);
	CHECK(json == NULL, "a timed-out receive returned a frame");
	close(sv[0]);
	pthread_join(t, NULL);
	close(sv[1]);
}

int main(void)
{
	test_round_trip();
	test_fd_passing();
	test_bad_frames();
	test_messages();
	test_call();
	test_paths();
	test_recv_deadline();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("ipc: all checks passed\n");
	return 0;
}
