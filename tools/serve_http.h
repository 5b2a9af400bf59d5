/* The HTTP/1.1 request side of flightrec serve: parsing one request head
 * from the bytes a connection sent, the query string's parameters, and the
 * Host check against DNS rebinding. Pure functions on buffers, no I/O, so
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

struct fr_http_request {
	char method[16];
	char path[FR_HTTP_PATH_MAX];  /* before '?', as sent (not decoded) */
	char query[FR_HTTP_PATH_MAX]; /* after '?', "" when none */
	char host[FR_HTTP_HOST_MAX];  /* the Host header, "" when absent */
	size_t head_len;	      /* bytes of the head, up to the blank line */
};

/* Parses the request head at the start of buf[0..len). Returns 0 with *r
 * filled when the head is complete and acceptable; -1 when more bytes are
 * needed (the head is incomplete and still under FR_HTTP_HEAD_MAX); or the
 * HTTP status to answer with: 400 (malformed, a body, no or two Host
 * headers), 405 (a method other than GET or HEAD), 414 (target too long),
 * 431 (head too large or too many headers), 505 (not HTTP/1.x). */
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

/* A copy of text[0..len) in which every byte that does not start a valid
 * UTF-8 sequence (overlong forms, surrogates and code points past U+10FFFF
 * included) is replaced by U+FFFD, so that a browser's JSON.parse takes it:
 * function, thread and process names are whatever bytes a program chose,
 * and JSON's own syntax is ASCII. NUL-terminated, its length in *outlen;
 * NULL on ENOMEM. */
char *fr_http_utf8_clean(const char *text, size_t len, size_t *outlen);

/* The reason phrase of an HTTP status this server sends. */
const char *fr_http_reason(int status);

#endif
