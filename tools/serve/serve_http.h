/* The HTTP/1.1 request side of flightrec serve: parsing one request head
 * from the bytes a connection sent, the query string's parameters, the
 * Host check against DNS rebinding, and the check of the page's token.
 * Pure functions on buffers, no I/O, so
 * that the fuzz target (tests/fuzz/fuzz_http.c) covers all of it. Every
 * request is untrusted: sizes are bounded here, and anything this server
 * does not need (a body, other methods, absolute forms, folded headers) is
 * refused rather than interpreted. */
#ifndef FR_TOOLS_SERVE_HTTP_H
#define FR_TOOLS_SERVE_HTTP_H

#include <stddef.h>

/* The most a request head may take, request line and headers together: a
 * browser's GET of this page is well under 2 KiB. */
#define FR_HTTP_HEAD_MAX 8192
#define FR_HTTP_PATH_MAX 1024
#define FR_HTTP_HOST_MAX 256
#define FR_HTTP_HEADERS_MAX 64
/* A browser sends every cookie of the host (all ports of 127.0.0.1 share
 * them), so the Cookie header may carry other pages' cookies too. */
#define FR_HTTP_COOKIE_MAX 4096
#define FR_HTTP_AUTH_MAX 512
/* The longest token a request may present, and a --token-file may hold. */
#define FR_HTTP_TOKEN_MAX 256

struct fr_http_request {
	char method[16];
	char path[FR_HTTP_PATH_MAX];	      /* before '?', as sent (not decoded) */
	char query[FR_HTTP_PATH_MAX];	      /* after '?', "" when none */
	char host[FR_HTTP_HOST_MAX];	      /* the Host header, "" when absent */
	char cookie[FR_HTTP_COOKIE_MAX];      /* the Cookie header, "" when absent */
	char authorization[FR_HTTP_AUTH_MAX]; /* the Authorization header */
	size_t head_len;		      /* bytes of the head, up to the blank line */
	/* Set by the server, not the parser: the request carried the right
	 * token in its query, so the page's answer sets the cookie. */
	int set_cookie;
};

/* Parses the request head at the start of buf[0..len). Returns 0 with *r
 * filled when the head is complete and acceptable; -1 when more bytes are
 * needed (the head is incomplete and still under FR_HTTP_HEAD_MAX); or the
 * HTTP status to answer with: 400 (malformed, a body, no or two Host
 * headers, two Cookie or Authorization headers), 405 (a method other than
 * GET or HEAD), 414 (target too long), 431 (head too large, too many
 * headers, a Cookie or Authorization header past its limit), 505 (not
 * HTTP/1.x). */
int fr_http_parse(const char *buf, size_t len, struct fr_http_request *r);

/* The value of parameter `key` in the query string `query`,
 * percent-decoded ('+' is a space) into out[0..outlen). Returns its length,
 * -1 when absent, -2 when malformed or too long (a bad escape, a NUL byte,
 * longer than outlen - 1). */
int fr_http_query_get(const char *query, const char *key, char *out, size_t outlen);

/* Whether `host` (a Host header) may name this server, listening on the
 * numeric address `listen_addr` ("127.0.0.1", "::1", "0.0.0.0" for all)
 * and `port`: "localhost", or an IP address literal ("127.0.0.1",
 * "[::1]") that is a loopback address, the listen address, or any address
 * when listening on all; with our port or none. DNS rebinding (a page of
 * another origin whose name is made to resolve to this address) needs a
 * name, and the browser sends that name: it is refused. */
int fr_http_host_ok(const char *host, const char *listen_addr, unsigned port);

/* Whether given[0..glen) is the NUL-terminated `token`, in a time that
 * depends on the token's length and not on where they differ (a timing
 * oracle would give the token away a byte at a time). Returns 1 or 0; an
 * empty token matches nothing. */
int fr_http_token_equal(const char *given, size_t glen, const char *token);

/* How a request presented the token. */
enum fr_http_auth {
	FR_HTTP_AUTH_WRONG = -1, /* a credential was given, none matched */
	FR_HTTP_AUTH_NONE = 0,	 /* no credential at all */
	FR_HTTP_AUTH_QUERY,	 /* the token query parameter */
	FR_HTTP_AUTH_COOKIE,	 /* the cookie `cookie_name` */
	FR_HTTP_AUTH_BEARER,	 /* Authorization: Bearer TOKEN */
};

/* Checks the credentials of request `r` against `token`: the `token`
 * query parameter, every cookie named `cookie_name` in its Cookie header
 * (another page on the same host may set one of that name too), and an
 * Authorization header of scheme Bearer (any case). Returns the first of
 * them, in that order, that matches; FR_HTTP_AUTH_WRONG when some were
 * given and none matched; FR_HTTP_AUTH_NONE when none were given. */
enum fr_http_auth fr_http_auth_check(const struct fr_http_request *r, const char *cookie_name,
				     const char *token);

/* The reason phrase of an HTTP status this server sends. */
const char *fr_http_reason(int status);

#endif
