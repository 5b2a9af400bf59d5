/* Fuzz target for flightrec serve's request parser (tools/serve/serve_http.h).
 *
 * Any bytes either need more input (and are then short of the head limit),
 * or are refused with one of the statuses the parser documents, or parse
 * into a request whose fields are NUL-terminated inside their arrays, whose
 * method is GET or HEAD, whose path starts with '/' and holds no control
 * byte or space, and whose head length lies within the input. The query
 * lookup, the Host check and the token's check run over what was parsed,
 * as the server runs them; the token's check matches only a request that
 * carries the token whole (the token is not a byte of the corpus). Any bytes, cleaned to UTF-8 for JSON, are valid UTF-8 that a
 * second cleaning leaves alone.
 */
#include "core/util/parse.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

#include "tools/serve/serve_http.h"

static void check_request(const struct fr_http_request *r, const uint8_t *data, size_t size)
{
	char val[512];

	FUZZ_CHECK(memchr(r->method, 0, sizeof(r->method)), "method not terminated");
	FUZZ_CHECK(memchr(r->path, 0, sizeof(r->path)), "path not terminated");
	FUZZ_CHECK(memchr(r->query, 0, sizeof(r->query)), "query not terminated");
	FUZZ_CHECK(memchr(r->host, 0, sizeof(r->host)), "host not terminated");
	FUZZ_CHECK(memchr(r->cookie, 0, sizeof(r->cookie)), "cookie not terminated");
	FUZZ_CHECK(memchr(r->authorization, 0, sizeof(r->authorization)),
		   "authorization not terminated");
	FUZZ_CHECK(!r->set_cookie, "the parser set set_cookie");
	FUZZ_CHECK(strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0,
		   "method %s accepted", r->method);
	FUZZ_CHECK(r->path[0] == '/', "path %s does not start with /", r->path);
	for (const char *p = r->path; *p; p++)
		FUZZ_CHECK((unsigned char)*p > ' ' && (unsigned char)*p < 0x7f,
			   "byte 0x%02x in the path", (unsigned char)*p);
	FUZZ_CHECK(r->head_len > 0 && r->head_len <= size && r->head_len <= FR_HTTP_HEAD_MAX,
		   "head length %zu of %zu bytes", r->head_len, size);
	for (const char *k = "from\0to\0event\0pid\0"; *k; k += strlen(k) + 1) {
		int n = fr_http_query_get(r->query, k, val, sizeof(val));

		FUZZ_CHECK(n >= -2 && n < (int)sizeof(val), "query length %d", n);
		if (n >= 0)
			FUZZ_CHECK(strlen(val) == (size_t)n, "decoded length %d is not %zu", n,
				   strlen(val));
	}
	{
		/* Not in any corpus input: only a request holding it matches. */
		static const char token[] = "f1e2d3c4b5a69788f1e2d3c4b5a69788";
		enum fr_http_auth a = fr_http_auth_check(r, "flightrec_token_7077", token);

		FUZZ_CHECK(a >= FR_HTTP_AUTH_WRONG && a <= FR_HTTP_AUTH_BEARER, "auth %d", a);
		if (a == FR_HTTP_AUTH_QUERY)
			FUZZ_CHECK(fr_http_query_get(r->query, "token", val, sizeof(val)) ==
						   (int)sizeof(token) - 1 &&
					   strcmp(val, token) == 0,
				   "the query's token is not the token");
		else if (a > 0)
			FUZZ_CHECK(memmem(data, size, token, sizeof(token) - 1),
				   "auth %d without the token", a);
		(void)fr_http_auth_check(r, "a", "a");
	}
	(void)fr_http_host_ok(r->host, "127.0.0.1", 7077);
	(void)fr_http_host_ok(r->host, "::", 7077);
}

/* The names sent as JSON: cleaning makes valid UTF-8, which cleaning
 * again leaves as it is. */
static void check_utf8(const uint8_t *data, size_t size)
{
	size_t n1, n2;
	char *once = fr_utf8_clean((const char *)data, size, &n1), *twice;

	FUZZ_CHECK(once, "out of memory");
	twice = fr_utf8_clean(once, n1, &n2);
	FUZZ_CHECK(twice && n1 == n2 && memcmp(once, twice, n1) == 0, "not idempotent");
	FUZZ_CHECK(n1 >= size || memchr(data, 0, size), "%zu bytes became %zu", size, n1);
	free(once);
	free(twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_http_request r;
	int ret = fr_http_parse((const char *)data, size, &r);

	check_utf8(data, size);
	switch (ret) {
	case -1: FUZZ_CHECK(size < FR_HTTP_HEAD_MAX, "needs more after %zu bytes", size); break;
	case 0: check_request(&r, data, size); break;
	case 400:
	case 405:
	case 414:
	case 431:
	case 505: break;
	default: FUZZ_CHECK(0, "status %d", ret);
	}
	return 0;
}
