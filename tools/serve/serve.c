/* flightrec serve: a small HTTP/1.1 server on loopback for the web page
 * (web/), in the command's own process. It is a client of the recorder
 * like every other command, so the recorder's visibility rules apply to
 * whoever runs it; the server adds no rights of its own, and answers only
 * that user (serve_auth.c): every request must carry the token printed in
 * the page's address, and a connection from this machine must be that
 * user's or root's. It listens on loopback unless told otherwise
 * (--allow-remote), where the token alone stands for the user.
 *
 * One thread reads: every connection is read with poll() until its request
 * head is complete, under a deadline from its accept; then the request goes
 * to the workers (serve_pool.c), which answer it (the recorder's answer can
 * take seconds) with a write timeout and close the connection, so a slow
 * answer holds up no other request. A slow or silent client costs one slot
 * of FR_SERVE_MAX_CONNS for at most FR_SERVE_READ_DEADLINE_MS; a slot stays
 * taken until its answer is written. */
#include "tools/serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/client.h"
#include "tools/cli.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

enum { OPT_LISTEN = 1024, OPT_ALLOW_REMOTE, OPT_READ_TIMEOUT, OPT_TOKEN_FILE };

static void usage_serve(FILE *f)
{
	fprintf(f, "Usage: flightrec serve [--listen ADDRESS:PORT] [--allow-remote]\n"
		   "                       [--token-file PATH] [--read-timeout DURATION]\n"
		   "                       [--socket PATH]\n"
		   "Serve a web page of what the recorder holds: the timeline of the whole ring\n"
		   "per process, the flame graph of a range brushed on it, the difference of two\n"
		   "ranges, the range as a pprof file, and the threads of a process.\n"
		   "\n"
		   "The page answers only you: every request needs the token in the address\n"
		   "printed at start (the page keeps it in a cookie; scripts may send it as\n"
		   "\"Authorization: Bearer TOKEN\"), and a connection from this machine must be\n"
		   "yours or root's, whatever token it gives.\n"
		   "\n"
		   "  --listen ADDRESS:PORT  where to listen (default 127.0.0.1:7077; port 0\n"
		   "                         picks a free one); [::1]:PORT for IPv6\n"
		   "  --allow-remote         allow an address other than loopback. A client on\n"
		   "                         another machine is answered on the token alone, and\n"
		   "                         sees what you may see (all processes, as root);\n"
		   "                         the connection is plain HTTP\n"
		   "  --token-file PATH      take the token from PATH (one line, 32 to 256 of\n"
		   "                         A-Z a-z 0-9 - _ . ~, a file only you may read)\n"
		   "                         instead of a random one; the address printed then\n"
		   "                         leaves it out\n"
		   "  --read-timeout DURATION  how long a client may take to send its request\n"
		   "                         (default 10s); a slower one is answered 408\n"
		   "  --socket PATH          the recorder's socket\n"
		   "  -h, --help             show this help\n"
		   "\n"
		   "The first line on stdout is the page's address, with its token: keep it to\n"
		   "yourself. Stop with Ctrl-C.\n"
		   "\n"
		   "Examples:\n"
		   "  flightrec serve                  # then open the address it prints\n"
		   "  ssh -L 7077:127.0.0.1:7077 host flightrec serve   # from your machine\n"
		   "  curl -H \"Authorization: Bearer $(cat tok)\" \\\n"
		   "    http://127.0.0.1:7077/api/status   # with serve --token-file tok\n");
}

struct conn {
	int fd;	   /* valid in READING and BUSY */
	int state; /* FR_SERVE_SLOT_*: atomic, a worker frees a BUSY slot */
	size_t len;
	int64_t deadline_ns; /* CLOCK_MONOTONIC */
	/* Who connected, learnt at accept (the client's socket surely
	 * exists then): peer_err < 0 when it could not be, for peer_why. */
	struct fr_serve_peer peer;
	int peer_err;
	char peer_why[200];
	char buf[FR_HTTP_HEAD_MAX];
};

static volatile sig_atomic_t serve_stop;

static void on_signal(int sig)
{
	(void)sig;
	serve_stop = 1;
}

static int64_t mono_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return fr_ns_from_timespec(&now);
}

/* Milliseconds until `deadline_ns`, rounded up. */
static int64_t ms_until(int64_t deadline_ns)
{
	return (deadline_ns - mono_ns() + 999999) / 1000000;
}

/* Writes all of buf on a blocking socket whose send timeout bounds it. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fr_serve_respond(int fd, int status, const char *type, const void *body, size_t len,
		     const char *extra_headers, int head_only)
{
	char head[1024];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\n"
			 "Content-Type: %s\r\n"
			 "Content-Length: %zu\r\n"
			 "Cache-Control: no-store\r\n"
			 "X-Content-Type-Options: nosniff\r\n"
			 "X-Frame-Options: DENY\r\n"
			 "Referrer-Policy: no-referrer\r\n"
			 "Content-Security-Policy: default-src 'self'; style-src 'self' "
			 "'unsafe-inline'; frame-ancestors 'none'\r\n"
			 "Connection: close\r\n"
			 "%s\r\n",
			 status, fr_http_reason(status), type, len,
			 extra_headers ? extra_headers : "");

	if (n < 0 || (size_t)n >= sizeof(head) || write_all(fd, head, (size_t)n) < 0)
		return -1;
	return head_only || !len ? 0 : write_all(fd, body, len);
}

int fr_serve_error(int fd, int status, const char *why, int head_only)
{
	char body[600];
	int n = snprintf(body, sizeof(body), "%s\n", why ? why : fr_http_reason(status));

	return fr_serve_respond(fd, status, "text/plain; charset=utf-8", body,
				n < 0			    ? 0
				: (size_t)n >= sizeof(body) ? sizeof(body) - 1
							    : (size_t)n,
				NULL, head_only);
}

/* Parses ADDRESS:PORT. Returns 0 with the address in *ss, or -1. */
static int parse_listen(const char *text, struct sockaddr_storage *ss, socklen_t *sslen)
{
	char host[64];
	const char *colon = strrchr(text, ':');
	uint64_t port;
	size_t n;

	if (!colon || fr_parse_u64(colon + 1, 0, 65535, &port) < 0)
		return -1;
	n = (size_t)(colon - text);
	if (n >= 2 && text[0] == '[' && text[n - 1] == ']') {
		text++;
		n -= 2;
	}
	if (!n || n >= sizeof(host))
		return -1;
	memcpy(host, text, n);
	host[n] = '\0';
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*sslen = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(*in6);
		return 0;
	}
	return -1;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* Prints the page's address: with the token, unless it came from a file
 * (whoever wrote the file has it). The token goes to stdout only, which is
 * the terminal of whoever ran serve, or where they sent it; a file others
 * may read is warned of. */
static void print_address(const struct fr_serve *s, int ipv6, int token_from_file)
{
	struct stat st;

	printf(ipv6 ? "http://[%s]:%u/%s%s\n" : "http://%s:%u/%s%s\n", s->listen_addr, s->port,
	       token_from_file ? "" : "?token=", token_from_file ? "" : s->token);
	fflush(stdout);
	if (!token_from_file && fstat(STDOUT_FILENO, &st) == 0 &&
	    (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) && (st.st_mode & 044))
		fprintf(stderr,
			"%s serve: the address on stdout holds the page's token, and others "
			"may read the file it goes to (mode %04o)\n",
			prog, (unsigned)(st.st_mode & 07777));
}

/* The 401's body: how to get in, with the address but not the token. */
static void set_unauthorized(struct fr_serve *s, int ipv6)
{
	snprintf(s->unauthorized, sizeof(s->unauthorized),
		 "This page needs its token. Open the address flightrec serve printed when it "
		 "started (http://%s%s%s:%u/?token=...): the page keeps the token in a cookie. "
		 "A script sends it as \"Authorization: Bearer TOKEN\".\n",
		 ipv6 ? "[" : "", s->listen_addr, ipv6 ? "]" : "", s->port);
}

/* Listens on `ss`. Returns the socket, with s->listen_addr and s->port
 * set, or -1 after saying why. */
static int listen_on(struct sockaddr_storage *ss, socklen_t sslen, struct fr_serve *s)
{
	char *host = s->listen_addr;
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)ss, sslen) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)ss, &sslen) < 0) {
		fprintf(stderr, "%s serve: cannot listen: %s\n", prog, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)ss)->sin_addr, host,
			  sizeof(s->listen_addr));
		s->port = ntohs(((struct sockaddr_in *)ss)->sin_port);
	} else {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ss)->sin6_addr, host,
			  sizeof(s->listen_addr));
		s->port = ntohs(((struct sockaddr_in6 *)ss)->sin6_port);
	}
	/* Cookies are per host, not per port: one serve's must not be
	 * another's on the same host. */
	snprintf(s->cookie_name, sizeof(s->cookie_name), "flightrec_token_%u", s->port);
	set_unauthorized(s, ss->ss_family == AF_INET6);
	return fd;
}

static int conn_state(const struct conn *c)
{
	return __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	__atomic_store_n(&c->state, FR_SERVE_SLOT_FREE, __ATOMIC_RELEASE);
}

/* Makes the socket blocking with a send timeout, for the response. */
static void conn_blocking(int fd)
{
	struct timeval tv = {.tv_sec = FR_SERVE_WRITE_TIMEOUT_S};
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Reads what connection `c` sent and, once its head is complete, queues
 * it for a worker; a wrong one is answered at once. */
static void conn_read(const struct fr_serve *s, struct fr_serve_pool *pool, struct conn *c)
{
	struct fr_http_request *r = malloc(sizeof(*r));
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	int status;

	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		free(r);
		return;
	}
	if (n <= 0 || !r) {
		free(r);
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	status = fr_http_parse(c->buf, c->len, r);
	if (status < 0 && c->len < sizeof(c->buf)) {
		free(r);
		return;
	}
	conn_blocking(c->fd);
	if (status < 0)
		status = 431;
	/* A HEAD request's answer has no body, refusals included. */
	if (status == 0 && !fr_http_host_ok(r->host, s->listen_addr, s->port))
		fr_serve_error(c->fd, 403,
			       "the Host header is not localhost or an address of this server",
			       strcmp(r->method, "HEAD") == 0);
	else if (status)
		fr_serve_error(c->fd, status, NULL, 0);
	else if (fr_serve_admit(s, c->fd, r, &c->peer, c->peer_err, c->peer_why)) {
		__atomic_store_n(&c->state, FR_SERVE_SLOT_BUSY, __ATOMIC_RELEASE);
		fr_serve_pool_push(pool, c->fd, r, &c->state);
		c->fd = -1;
		return;
	}
	free(r);
	conn_close(c);
}

/* Takes the new connections, and learns who made each; past
 * FR_SERVE_MAX_CONNS, says 503. */
static void accept_all(int lfd, struct conn *conns, int64_t read_timeout_ns)
{
	int fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		size_t i;

		for (i = 0; i < FR_SERVE_MAX_CONNS && conn_state(&conns[i]) != FR_SERVE_SLOT_FREE;
		     i++)
			;
		if (i == FR_SERVE_MAX_CONNS) {
			/* Best effort on a non-blocking socket: it is closed either way. */
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
						   "Content-Length: 0\r\nConnection: close\r\n\r\n";
			send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		conns[i].fd = fd;
		conns[i].state = FR_SERVE_SLOT_READING;
		conns[i].len = 0;
		conns[i].deadline_ns = mono_ns() + read_timeout_ns;
		conns[i].peer_err = fr_serve_peer_lookup(fd, &conns[i].peer, conns[i].peer_why,
							 sizeof(conns[i].peer_why));
	}
}

static int serve_loop(const struct fr_serve *s, struct fr_serve_pool *pool, int lfd)
{
	static struct conn conns[FR_SERVE_MAX_CONNS];
	struct pollfd pfd[FR_SERVE_MAX_CONNS + 1];
	int reading[FR_SERVE_MAX_CONNS];

	for (size_t i = 0; i < FR_SERVE_MAX_CONNS; i++)
		conns[i].fd = -1;
	while (!serve_stop) {
		int64_t wait = 1000;
		int n;

		pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		/* Only this thread makes a slot READING or takes it out of it. */
		for (size_t i = 0; i < FR_SERVE_MAX_CONNS; i++) {
			reading[i] = conn_state(&conns[i]) == FR_SERVE_SLOT_READING;
			pfd[i + 1] = (struct pollfd){.fd = reading[i] ? conns[i].fd : -1,
						     .events = POLLIN};
			if (reading[i]) {
				int64_t left = ms_until(conns[i].deadline_ns);

				wait = left < wait ? (left < 0 ? 0 : left) : wait;
			}
		}
		n = poll(pfd, FR_SERVE_MAX_CONNS + 1, (int)wait);
		if (n < 0 && errno != EINTR) {
			perror("flightrec serve: poll");
			return 1;
		}
		for (size_t i = 0; n > 0 && i < FR_SERVE_MAX_CONNS; i++)
			if (reading[i] && pfd[i + 1].revents)
				conn_read(s, pool, &conns[i]);
		for (size_t i = 0; i < FR_SERVE_MAX_CONNS; i++) {
			if (conn_state(&conns[i]) == FR_SERVE_SLOT_READING &&
			    ms_until(conns[i].deadline_ns) <= 0) {
				conn_blocking(conns[i].fd);
				fr_serve_error(conns[i].fd, 408,
					       "the request did not arrive in time", 0);
				conn_close(&conns[i]);
			}
		}
		if (n > 0 && pfd[0].revents)
			accept_all(lfd, conns, s->read_timeout_ns);
	}
	return 0;
}

/* The token every request must carry, and who is answered. Returns 0,
 * or -1 after saying why. */
static int set_token(struct fr_serve *s, const char *token_file)
{
	char why[300];
	int err;

	s->owner = geteuid();
	if (token_file) {
		if (fr_serve_token_read(token_file, s->token, sizeof(s->token), why, sizeof(why)) <
		    0) {
			fprintf(stderr, "%s serve: --token-file %s: %s\n", prog, token_file, why);
			return -1;
		}
		return 0;
	}
	if ((err = fr_serve_token_new(s->token, sizeof(s->token))) < 0) {
		fprintf(stderr, "%s serve: cannot make a token: %s\n", prog, strerror(-err));
		return -1;
	}
	return 0;
}

int fr_cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, OPT_LISTEN},
		{"allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE},
		{"read-timeout", required_argument, NULL, OPT_READ_TIMEOUT},
		{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *listen_s = "127.0.0.1:7077", *socket_s = NULL, *timeout_s = NULL,
		   *token_file = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct fr_serve s = {0};
	struct fr_serve_pool *pool;
	char *socket_path = NULL;
	int c, allow_remote = 0, lfd, status;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN: listen_s = optarg; break;
		case OPT_ALLOW_REMOTE: allow_remote = 1; break;
		case OPT_READ_TIMEOUT: timeout_s = optarg; break;
		case OPT_TOKEN_FILE: token_file = optarg; break;
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case 'h': usage_serve(stdout); return 0;
		default: return fr_cli_bad_option("serve", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s serve: unexpected argument \"%s\" (see %s serve --help)\n",
			prog, argv[optind], prog);
		return EXIT_USAGE;
	}
	s.read_timeout_ns = (int64_t)FR_SERVE_READ_DEADLINE_MS * 1000000;
	if (timeout_s &&
	    (fr_parse_duration(timeout_s, &s.read_timeout_ns) < 0 ||
	     s.read_timeout_ns < 100 * FR_NS_PER_MS || s.read_timeout_ns > 600 * FR_NS_PER_S)) {
		fprintf(stderr,
			"%s serve: --read-timeout: expected a duration from 100ms to 10m, "
			"got \"%s\"\n",
			prog, timeout_s);
		return EXIT_USAGE;
	}
	if (parse_listen(listen_s, &ss, &sslen) < 0) {
		fprintf(stderr,
			"%s serve: --listen: expected ADDRESS:PORT like 127.0.0.1:7077 or "
			"[::1]:7077, got \"%s\"\n",
			prog, listen_s);
		return EXIT_USAGE;
	}
	if (!is_loopback(&ss) && !allow_remote) {
		fprintf(stderr,
			"%s serve: %s is not a loopback address; there, anyone who reaches the "
			"port with the page's token sees what you may see, over plain HTTP. "
			"Add --allow-remote to do it anyway, or use ssh -L\n",
			prog, listen_s);
		return EXIT_USAGE;
	}
	if (set_token(&s, token_file) < 0)
		return token_file ? EXIT_USAGE : 1;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		return 1;
	s.socket_path = socket_path;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(&ss, sslen, &s);
	if (lfd < 0) {
		free(socket_path);
		return 1;
	}
	print_address(&s, ss.ss_family == AF_INET6, token_file != NULL);
	pool = fr_serve_pool_start(&s);
	if (!pool) {
		fprintf(stderr, "%s serve: cannot start its threads\n", prog);
		close(lfd);
		free(socket_path);
		return 1;
	}
	status = serve_loop(&s, pool, lfd);
	close(lfd);
	fr_serve_pool_stop(pool);
	free(socket_path);
	return status;
}
