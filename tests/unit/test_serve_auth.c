/* Who flightrec serve answers, in its pure and its kernel parts:
 *
 * - the token's check (tools/serve/serve_http.c): the token query parameter,
 *   the cookie of this server's name among a host's other cookies, an
 *   Authorization: Bearer header; wrong and missing told apart; a
 *   comparison that matches only the whole token; the Cookie and
 *   Authorization headers parsed once each, within their limits.
 * - the peer's owner (tools/serve/serve_peer.c), on real loopback connections
 *   made here: NETLINK_SOCK_DIAG and /proc/net/tcp{,6} both find the
 *   client's socket by its 4-tuple and say its owner (this process's
 *   uid; as root, also a child's that became another user), over IPv4,
 *   IPv6 and a v4-mapped address, and find nothing for a 4-tuple that no
 *   socket has; a client that closed its socket is no one's (the kernel
 *   says uid 0 of what is left of it). */
#include "tools/serve/serve_http.h"
#include "tools/serve/serve_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/check.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static int auth(const char *head)
{
	struct fr_http_request r;
	int ret = fr_http_parse(head, strlen(head), &r);

	if (ret)
		return 1000 + ret;
	return (int)fr_http_auth_check(&r, "flightrec_token_7077", TOKEN);
}

static void test_token_equal(void)
{
	CHECK(fr_http_token_equal(TOKEN, strlen(TOKEN), TOKEN), "the token");
	CHECK(!fr_http_token_equal(TOKEN, strlen(TOKEN) - 1, TOKEN), "a prefix");
	CHECK(!fr_http_token_equal(TOKEN "0", strlen(TOKEN) + 1, TOKEN), "longer");
	CHECK(!fr_http_token_equal("", 0, TOKEN), "empty");
	CHECK(!fr_http_token_equal("", 0, ""), "an empty token matches nothing");
	CHECK(!fr_http_token_equal("1123456789abcdef0123456789abcdef", 32, TOKEN), "first byte");
	CHECK(!fr_http_token_equal("0123456789abcdef0123456789abcdeF", 32, TOKEN), "last byte");
	/* Bytes past glen are not read as part of the given token. */
	CHECK(!fr_http_token_equal(TOKEN, 16, TOKEN), "a length short of the text");
}

static void test_auth(void)
{
	char buf[1024];
#define REQ(target, headers)                                                                \
	(snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n", target, \
		  headers),                                                                 \
	 auth(buf))

	CHECK(REQ("/", "") == FR_HTTP_AUTH_NONE, "nothing");
	CHECK(REQ("/?token=" TOKEN, "") == FR_HTTP_AUTH_QUERY, "query");
	CHECK(REQ("/api/profile?window=1m&token=" TOKEN "&pid=1", "") == FR_HTTP_AUTH_QUERY,
	      "query among others");
	CHECK(REQ("/?token=x" TOKEN, "") == FR_HTTP_AUTH_WRONG, "wrong query");
	CHECK(REQ("/?token=", "") == FR_HTTP_AUTH_WRONG, "empty query");
	CHECK(REQ("/?token=%zz", "") == FR_HTTP_AUTH_WRONG, "bad escape");
	CHECK(REQ("/?tokenx=" TOKEN, "") == FR_HTTP_AUTH_NONE, "another parameter");
	CHECK(REQ("/", "Cookie: flightrec_token_7077=" TOKEN "\r\n") == FR_HTTP_AUTH_COOKIE,
	      "cookie");
	CHECK(REQ("/", "Cookie: a=1; flightrec_token_7077=\"" TOKEN "\" ; b=2\r\n") ==
		      FR_HTTP_AUTH_COOKIE,
	      "quoted cookie among others");
	/* Another page of this host set a cookie of the same name first. */
	CHECK(REQ("/", "Cookie: flightrec_token_7077=old; flightrec_token_7077=" TOKEN "\r\n") ==
		      FR_HTTP_AUTH_COOKIE,
	      "the second of two");
	CHECK(REQ("/", "Cookie: flightrec_token_7078=" TOKEN "\r\n") == FR_HTTP_AUTH_NONE,
	      "another port's cookie is not ours");
	CHECK(REQ("/", "Cookie: xflightrec_token_7077=" TOKEN "\r\n") == FR_HTTP_AUTH_NONE,
	      "a longer name");
	CHECK(REQ("/", "Cookie: flightrec_token_7077=" TOKEN "x\r\n") == FR_HTTP_AUTH_WRONG,
	      "wrong cookie");
	CHECK(REQ("/", "Cookie: flightrec_token_7077\r\n") == FR_HTTP_AUTH_NONE, "no value");
	CHECK(REQ("/", "Authorization: Bearer " TOKEN "\r\n") == FR_HTTP_AUTH_BEARER, "bearer");
	CHECK(REQ("/", "authorization: bearer  " TOKEN "\r\n") == FR_HTTP_AUTH_BEARER,
	      "any case, two spaces");
	CHECK(REQ("/", "Authorization: Basic " TOKEN "\r\n") == FR_HTTP_AUTH_WRONG,
	      "another scheme");
	CHECK(REQ("/", "Authorization: Bearer\r\n") == FR_HTTP_AUTH_WRONG, "no token");
	CHECK(REQ("/", "Authorization: Bearer " TOKEN " x\r\n") == FR_HTTP_AUTH_WRONG,
	      "more after it");
	CHECK(REQ("/?token=wrong", "Authorization: Bearer " TOKEN "\r\n") == FR_HTTP_AUTH_BEARER,
	      "any credential that matches");
	CHECK(REQ("/", "Cookie: a=1\r\nCookie: b=2\r\n") == 1400, "two Cookie headers");
	CHECK(REQ("/", "Authorization: Bearer a\r\nAuthorization: Bearer b\r\n") == 1400,
	      "two Authorization headers");
	{
		/* A value of FR_HTTP_COOKIE_MAX bytes: one more than it keeps. */
		static char big[FR_HTTP_COOKIE_MAX + 200], req[FR_HTTP_COOKIE_MAX + 400];

		memset(big, 'a', sizeof(big));
		memcpy(big, "Cookie: ", 8);
		big[8 + FR_HTTP_COOKIE_MAX] = '\0';
		snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", big);
		CHECK(auth(req) == 1431, "a Cookie header past its limit: %d", auth(req));
		big[8 + FR_HTTP_COOKIE_MAX - 1] = '\0';
		snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", big);
		CHECK(auth(req) == FR_HTTP_AUTH_NONE, "a Cookie header at its limit: %d",
		      auth(req));
	}
#undef REQ
}

/* Listens on addr, port 0 (IPv6 "::" takes IPv4 too). Returns the
 * socket with its port in *port, or -1. */
static int listen_on(const char *addr, unsigned *port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	int v6 = strchr(addr, ':') != NULL, zero = 0;
	socklen_t len = v6 ? sizeof(*in6) : sizeof(*in4);
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ss.ss_family = v6 ? AF_INET6 : AF_INET;
	if (fd < 0 || (v6 ? inet_pton(AF_INET6, addr, &in6->sin6_addr)
			  : inet_pton(AF_INET, addr, &in4->sin_addr)) != 1)
		goto err;
	if (v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto err;
	*port = ntohs(v6 ? in6->sin6_port : in4->sin_port);
	return fd;
err:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* A socket of `family` connected to addr:port, or -1. */
static int connect_to(int family, const char *addr, unsigned port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ss.ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		in4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, addr, &in4->sin_addr);
	} else {
		in6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &in6->sin6_addr);
	}
	if (fd >= 0 && connect(fd, (struct sockaddr *)&ss,
			       family == AF_INET ? sizeof(*in4) : sizeof(*in6)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The accepted connection `afd` comes from a socket of `want`: both
 * ways of asking say so, and the whole lookup; a client port that no
 * socket has is found by neither. */
static void check_owner(const char *name, int afd, uid_t want)
{
	struct sockaddr_storage peer, local;
	socklen_t plen = sizeof(peer), llen = sizeof(local);
	struct fr_serve_peer p;
	char why[300] = "";
	uid_t uid = 12345;
	int ret;

	CHECK(getpeername(afd, (struct sockaddr *)&peer, &plen) == 0 &&
		      getsockname(afd, (struct sockaddr *)&local, &llen) == 0,
	      "%s: addresses", name);
	ret = fr_serve_peer_uid_diag(&peer, &local, &uid);
	CHECK(ret == 1 && uid == want, "%s: sock_diag said %d, uid %u (want %u)", name, ret,
	      (unsigned)uid, (unsigned)want);
	uid = 12345;
	ret = fr_serve_peer_uid_proc(&peer, &local, &uid);
	CHECK(ret == 1 && uid == want, "%s: /proc/net/tcp said %d, uid %u (want %u)", name, ret,
	      (unsigned)uid, (unsigned)want);
	ret = fr_serve_peer_lookup(afd, &p, why, sizeof(why));
	CHECK(ret == 0 && p.local && p.uid == want, "%s: lookup %d (%s), local %d, uid %u", name,
	      ret, why, p.local, (unsigned)p.uid);
	/* Another client port on the same addresses: no socket has it. */
	if (peer.ss_family == AF_INET)
		((struct sockaddr_in *)&peer)->sin_port ^= htons(1);
	else
		((struct sockaddr_in6 *)&peer)->sin6_port ^= htons(1);
	CHECK(fr_serve_peer_uid_diag(&peer, &local, &uid) == 0, "%s: sock_diag found another port",
	      name);
	CHECK(fr_serve_peer_uid_proc(&peer, &local, &uid) == 0, "%s: /proc found another port",
	      name);
}

static void test_peer(const char *name, const char *listen_addr, int family, const char *to)
{
	unsigned port;
	int lfd = listen_on(listen_addr, &port), cfd, afd;

	if (lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s here, not tested\n", name, listen_addr);
		return;
	}
	cfd = connect_to(family, to, port);
	afd = cfd >= 0 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
	CHECK(cfd >= 0 && afd >= 0, "%s: no connection to %s", name, to);
	if (afd >= 0)
		check_owner(name, afd, geteuid());
	if (afd >= 0)
		close(afd);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
}

/* Regression: a client that closed its socket leaves a TIME_WAIT entry
 * (in FIN_WAIT2 first) that the kernel reports with uid 0, as root's; it
 * must be no one's, and a loopback peer that is no one's is refused. */
static void test_closed_client(void)
{
	struct fr_serve_peer p;
	char why[300] = "", c;
	unsigned port;
	int lfd = listen_on("127.0.0.1", &port), cfd, afd, ret = 0;

	cfd = lfd >= 0 ? connect_to(AF_INET, "127.0.0.1", port) : -1;
	afd = cfd >= 0 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
	CHECK(afd >= 0, "no connection");
	if (afd < 0)
		return;
	CHECK(fr_serve_peer_lookup(afd, &p, why, sizeof(why)) == 0 && p.local, "open: %s", why);
	close(cfd);
	/* Our end sees the FIN: the client's socket is closed and orphaned. */
	CHECK(recv(afd, &c, 1, 0) == 0, "no end of file");
	/* Its ACK of our ACK may still be under way: a while at most. */
	for (int i = 0; i < 100; i++) {
		ret = fr_serve_peer_lookup(afd, &p, why, sizeof(why));
		if (ret == -ENOENT)
			break;
		usleep(10000);
	}
	CHECK(ret == -ENOENT && strstr(why, "cannot be learnt"),
	      "a closed client: %d (%s), local %d, uid %u", ret, why, p.local, (unsigned)p.uid);
	close(afd);
	close(lfd);
}

/* As root: the client is a child that became nobody (65534). */
static void test_other_user(void)
{
	unsigned port;
	int lfd, afd, sync[2];
	pid_t child;
	char c;

	if (geteuid() != 0) {
		fprintf(stderr, "another user's socket: needs root, not tested\n");
		return;
	}
	lfd = listen_on("127.0.0.1", &port);
	CHECK(lfd >= 0 && pipe(sync) == 0, "listen, pipe");
	child = fork();
	if (child == 0) {
		int fd;

		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		fd = connect_to(AF_INET, "127.0.0.1", port);
		if (fd < 0 || write(sync[1], "c", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	CHECK(child > 0 && read(sync[0], &c, 1) == 1, "the child did not connect");
	afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(afd >= 0, "accept");
	if (afd >= 0)
		check_owner("nobody's socket", afd, 65534);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (afd >= 0)
		close(afd);
	close(lfd);
	close(sync[0]);
	close(sync[1]);
}

int main(void)
{
	test_token_equal();
	test_auth();
	test_peer("IPv4", "127.0.0.1", AF_INET, "127.0.0.1");
	test_peer("IPv4, another loopback address", "127.0.0.2", AF_INET, "127.0.0.2");
	test_peer("IPv6", "::1", AF_INET6, "::1");
	test_peer("v4-mapped, server on ::", "::", AF_INET, "127.0.0.1");
	test_peer("v4-mapped, IPv6 client", "127.0.0.1", AF_INET6, "::ffff:127.0.0.1");
	test_other_user();
	test_closed_client();
	return failures ? 1 : 0;
}
