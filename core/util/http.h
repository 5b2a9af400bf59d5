/* The only file that talks to libcurl: one HTTP request at a time.
 *
 * Used for ClickHouse's HTTP interface (the exporter in flightrecd, the
 * export and fleet commands). A request POSTs a body (or GETs without
 * one), optionally gzip'ed on the wire (Content-Encoding: gzip; ClickHouse
 * also needs enable_http_compression=1 in the URL), asks for a gzip'ed
 * answer (Accept-Encoding; curl inflates it), streams the answer to a
 * callback, and is bounded: a connect timeout, a total timeout, and a
 * maximum answer size after which it fails with -EFBIG. TLS is used when
 * the URL says https; the server's certificate and name are always
 * verified, against opts.ca_file when given (a private CA) or else the
 * system's CAs. There is deliberately no way to turn verification off.
 * The password comes from a file read here, never from a command line.
 *
 * A client is not thread-safe; a thread uses its own. fr_http_global_init()
 * must run once before any thread makes a client (curl's global state).
 */
#ifndef FR_CORE_HTTP_H
#define FR_CORE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/compress.h"

/* Largest password file read, in bytes. */
#define FR_HTTP_PASSWORD_MAX 1024

struct fr_http_opts {
	const char *user;	    /* NULL: none (ClickHouse's "default") */
	const char *password_file;  /* NULL: no password; first line, trailing newline dropped */
	const char *ca_file;	    /* NULL: the system's CAs; else PEM CA certificates */
	int64_t connect_timeout_ms; /* 0: 5000 */
	int64_t timeout_ms;	    /* whole request; 0: 30000 */
	size_t max_response;	    /* bytes after inflating; 0: 64 MiB */
	/* Non-NULL: asked several times a second while a request runs;
	 * non-zero aborts it with -ECANCELED (a daemon shutting down). */
	int (*cancel)(void *arg);
	void *cancel_arg;
};

struct fr_http;

/* Initializes libcurl's global state; call once at start, before threads.
 * Returns 0 or -EIO. */
int fr_http_global_init(void);

/* Makes a client for `opts` (copied; the password file is read now).
 * Returns 0, -ENOMEM, or the password or CA file's -errno with a message
 * in `err`. */
int fr_http_new(struct fr_http **out, const struct fr_http_opts *opts, char *err, size_t errlen);

/* Frees a client; accepts NULL. */
void fr_http_free(struct fr_http *h);

/* One request to `url`: POST of `len` bytes of `body` when body is
 * non-NULL (gzip'ed first when `gzip_body`), else GET. The answer's bytes
 * go to `sink` (NULL: discarded) as they come; *status gets the HTTP
 * status (0 when none came). Returns 0 when the status is 2xx; -EPROTO
 * for another status, with the start of the answer in `err` (ClickHouse
 * puts its exception there); -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH,
 * -EFBIG (answer over max_response), -ECANCELED (opts.cancel), -ENOMEM,
 * the sink's -errno, -EKEYREJECTED when the server's TLS certificate does
 * not verify ("TLS certificate of ... not trusted: " and curl's reason in
 * `err`), or -EIO for another transport failure, with curl's message in
 * `err`. */
int fr_http_request(struct fr_http *h, const char *url, const void *body, size_t len, int gzip_body,
		    fr_write_fn sink, void *sink_arg, long *status, char *err, size_t errlen);

/* Appends `s` to `out` (capacity cap, NUL-terminated) percent-encoded for
 * a URL's query string. Returns 0, or -ENOBUFS when it does not fit. */
int fr_http_urlencode(char *out, size_t cap, const char *s);

#endif
