/* flightrec serve's request parser (serve_http.h): one request head, the
 * query string, the Host check. Strict on purpose: the only client meant
 * is a browser showing this server's own page, so whatever a browser does
 * not send for a GET is an error, not something to interpret. */
#include "tools/serve/serve_http.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util/parse.h"

/* RFC 9110 token characters (method, header names). */
static int is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Where the head ends: the offset just past its blank line, or 0. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The line at *pos (of the head ending at `end`): its start and length
 * without "\r\n"; *pos moves past it. Returns -1 on a bare '\r' or a
 * control byte inside the line. */
static int next_line(const char *buf, size_t end, size_t *pos, const char **line, size_t *n)
{
	size_t i = *pos;

	*line = buf + i;
	while (i < end && buf[i] != '\n')
		i++;
	*n = i - *pos;
	*pos = i + 1;
	if (*n && (*line)[*n - 1] == '\r')
		(*n)--;
	for (size_t k = 0; k < *n; k++) {
		unsigned char c = (unsigned char)(*line)[k];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return -1;
	}
	return 0;
}

/* "METHOD SP TARGET SP HTTP/1.x". Returns 0 or a status. */
static int request_line(const char *line, size_t n, struct fr_http_request *r)
{
	const char *sp1 = memchr(line, ' ', n), *sp2, *q;
	size_t mlen, tlen;

	if (!sp1)
		return 400;
	mlen = (size_t)(sp1 - line);
	sp2 = memchr(sp1 + 1, ' ', n - mlen - 1);
	if (!mlen || !sp2)
		return 400;
	if (mlen >= sizeof(r->method))
		return 405;
	for (size_t k = 0; k < mlen; k++)
		if (!is_tchar((unsigned char)line[k]))
			return 400;
	memcpy(r->method, line, mlen);
	r->method[mlen] = '\0';
	if ((size_t)(line + n - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return (size_t)(line + n - (sp2 + 1)) >= 5 && memcmp(sp2 + 1, "HTTP/", 5) == 0
			       ? 505
			       : 400;
	if (sp2[8] != '0' && sp2[8] != '1')
		return 505;
	tlen = (size_t)(sp2 - sp1 - 1);
	if (!tlen || sp1[1] != '/')
		return 400; /* no absolute form, no '*' */
	if (tlen >= FR_HTTP_PATH_MAX)
		return 414;
	for (size_t k = 0; k < tlen; k++)
		if ((unsigned char)sp1[1 + k] <= ' ' || (unsigned char)sp1[1 + k] >= 0x7f)
			return 400;
	q = memchr(sp1 + 1, '?', tlen);
	if (!q)
		q = sp2;
	memcpy(r->path, sp1 + 1, (size_t)(q - sp1 - 1));
	r->path[q - sp1 - 1] = '\0';
	if (q < sp2) {
		memcpy(r->query, q + 1, (size_t)(sp2 - q - 1));
		r->query[sp2 - q - 1] = '\0';
	}
	/* A fragment is never sent by a browser. */
	if (strchr(r->path, '#') || strchr(r->query, '#'))
		return 400;
	return 0;
}

/* Copies a header's value into field[0..size): the header may come once.
 * Returns 0 or a status. */
static int take_header(char *field, size_t size, const char *v, size_t vlen, int *seen)
{
	if (++*seen > 1)
		return 400;
	if (vlen >= size)
		return 431;
	memcpy(field, v, vlen);
	field[vlen] = '\0';
	return 0;
}

/* How many times the headers kept whole were seen. */
struct seen {
	int host, cookie, authorization;
};

/* One header line. Returns 0 or a status. */
static int header(const char *line, size_t n, struct fr_http_request *r, struct seen *seen)
{
	const char *colon = memchr(line, ':', n), *v;
	size_t nlen, vlen;

	if (!n || line[0] == ' ' || line[0] == '\t' || !colon || colon == line)
		return 400; /* obsolete folding, or no name */
	nlen = (size_t)(colon - line);
	for (size_t k = 0; k < nlen; k++)
		if (!is_tchar((unsigned char)line[k]))
			return 400;
	v = colon + 1;
	vlen = n - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (nlen == 4 && strncasecmp(line, "host", 4) == 0) {
		/* A Host past its limit is no name of ours: 400 as before. */
		if (vlen >= sizeof(r->host))
			return 400;
		return take_header(r->host, sizeof(r->host), v, vlen, &seen->host);
	} else if (nlen == 6 && strncasecmp(line, "cookie", 6) == 0) {
		return take_header(r->cookie, sizeof(r->cookie), v, vlen, &seen->cookie);
	} else if (nlen == 13 && strncasecmp(line, "authorization", 13) == 0) {
		return take_header(r->authorization, sizeof(r->authorization), v, vlen,
				   &seen->authorization);
	} else if (nlen == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
		return 400; /* a body; GET takes none */
	} else if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0) {
		if (vlen != 1 || v[0] != '0')
			return 400;
	}
	return 0;
}

int fr_http_parse(const char *buf, size_t len, struct fr_http_request *r)
{
	size_t end, pos = 0, n;
	const char *line;
	struct seen seen = {0};
	int ret, nheaders = 0;

	memset(r, 0, sizeof(*r));
	end = head_end(buf, len < FR_HTTP_HEAD_MAX ? len : FR_HTTP_HEAD_MAX);
	if (!end)
		return len >= FR_HTTP_HEAD_MAX ? 431 : -1;
	/* Blank lines before the request line may be skipped (RFC 9112 2.2). */
	while (pos < end && (buf[pos] == '\r' || buf[pos] == '\n'))
		pos++;
	if (pos >= end || next_line(buf, end, &pos, &line, &n) < 0)
		return 400;
	if ((ret = request_line(line, n, r)))
		return ret;
	while (pos < end) {
		if (next_line(buf, end, &pos, &line, &n) < 0)
			return 400;
		if (!n)
			break; /* the blank line */
		if (++nheaders > FR_HTTP_HEADERS_MAX)
			return 431;
		if ((ret = header(line, n, r, &seen)))
			return ret;
	}
	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)
		return 405;
	/* HTTP/1.1 requires a Host; this server requires it of 1.0 too,
	 * since it is what stops DNS rebinding. */
	if (!seen.host)
		return 400;
	r->head_len = end;
	return 0;
}

/* Decodes src[0..n) into out. Returns the length or -2. */
static int decode(const char *src, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = src[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -2;
			hi = fr_hex_digit(src[i + 1]);
			lo = fr_hex_digit(src[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -2;
			c = (char)(hi * 16 + lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (o + 1 >= outlen)
			return -2;
		out[o++] = c;
	}
	if (outlen)
		out[o] = '\0';
	return outlen ? (int)o : -2;
}

int fr_http_query_get(const char *query, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);
	const char *p = query;

	while (*p) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		size_t nlen = (size_t)((eq ? eq : end) - p);

		if (nlen == klen && memcmp(p, key, klen) == 0)
			return eq ? decode(eq + 1, (size_t)(end - eq - 1), out, outlen)
				  : decode("", 0, out, outlen);
		p = amp ? amp + 1 : end;
	}
	return -1;
}

/* Whether the address `addr` of `family` may be this server's: a loopback
 * address, the listen address, or any when listening on all. */
static int literal_ok(int family, const unsigned char *addr, const char *listen_addr)
{
	static const unsigned char zero[16], v6_loopback[16] = {[15] = 1};
	unsigned char l[16];
	size_t len = family == AF_INET ? 4 : 16;

	if (family == AF_INET ? addr[0] == 127 : memcmp(addr, v6_loopback, 16) == 0)
		return 1;
	if (!listen_addr || inet_pton(family, listen_addr, l) != 1)
		return 0;
	return memcmp(l, zero, len) == 0 || memcmp(l, addr, len) == 0;
}

int fr_http_host_ok(const char *host, const char *listen_addr, unsigned port)
{
	char name[FR_HTTP_HOST_MAX], tail[16];
	const char *colon;
	size_t n;
	unsigned char addr[16];

	/* The port, when given, is ours. */
	colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
	if (colon && host[0] == '[')
		colon++;
	n = colon ? (size_t)(colon - host) : strlen(host);
	if (colon) {
		snprintf(tail, sizeof(tail), ":%u", port);
		if (strcmp(colon, tail) != 0)
			return 0;
	}
	if (!n || n >= sizeof(name))
		return 0;
	memcpy(name, host, n);
	name[n] = '\0';
	if (strcasecmp(name, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, name, addr) == 1)
		return literal_ok(AF_INET, addr, listen_addr);
	if (name[0] == '[' && name[n - 1] == ']') {
		name[n - 1] = '\0';
		return inet_pton(AF_INET6, name + 1, addr) == 1 &&
		       literal_ok(AF_INET6, addr, listen_addr);
	}
	return 0;
}

int fr_http_token_equal(const char *given, size_t glen, const char *token)
{
	size_t tlen = strlen(token);
	unsigned char diff = glen != tlen;

	/* As long as the token whatever was given; no early exit. */
	for (size_t i = 0; i < tlen; i++)
		diff |= (unsigned char)((i < glen ? given[i] : 0) ^ token[i]);
	return tlen && !diff;
}

/* Whether some cookie named `name` in the Cookie header `cookie` ("a=1;
 * b=2", RFC 6265 5.4) has the value `token` (bare or in double quotes).
 * Returns 1 on a match, 0 when one of that name was given and none
 * matched, -1 when none of that name was given. */
static int cookie_match(const char *cookie, const char *name, const char *token)
{
	size_t nlen = strlen(name);
	int given = -1;

	for (const char *p = cookie; *p;) {
		const char *end = strchr(p, ';'), *eq;
		size_t len;

		if (!end)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq && (size_t)(eq - p) == nlen && memcmp(p, name, nlen) == 0) {
			const char *v = eq + 1;

			len = (size_t)(end - v);
			while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
				len--;
			if (len >= 2 && v[0] == '"' && v[len - 1] == '"')
				v++, len -= 2;
			if (fr_http_token_equal(v, len, token))
				return 1;
			given = 0;
		}
		p = *end ? end + 1 : end;
	}
	return given;
}

/* The same for "Authorization: Bearer TOKEN" (RFC 6750 2.1). */
static int bearer_match(const char *authorization, const char *token)
{
	const char *v = authorization;

	if (!v[0])
		return -1;
	if (strncasecmp(v, "bearer", 6) != 0 || (v[6] != ' ' && v[6] != '\t'))
		return 0;
	v += 7;
	while (*v == ' ' || *v == '\t')
		v++;
	return fr_http_token_equal(v, strlen(v), token);
}

enum fr_http_auth fr_http_auth_check(const struct fr_http_request *r, const char *cookie_name,
				     const char *token)
{
	char given[FR_HTTP_TOKEN_MAX + 1];
	int n = fr_http_query_get(r->query, "token", given, sizeof(given)), c, b, wrong;

	if (n >= 0 && fr_http_token_equal(given, (size_t)n, token))
		return FR_HTTP_AUTH_QUERY;
	wrong = n != -1;
	if ((c = cookie_match(r->cookie, cookie_name, token)) == 1)
		return FR_HTTP_AUTH_COOKIE;
	if ((b = bearer_match(r->authorization, token)) == 1)
		return FR_HTTP_AUTH_BEARER;
	return wrong || c == 0 || b == 0 ? FR_HTTP_AUTH_WRONG : FR_HTTP_AUTH_NONE;
}

const char *fr_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}
