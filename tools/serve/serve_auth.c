/* Who flightrec serve answers (serve.h). The recorder answers a request
 * on its socket with what the requesting uid may see; serve makes that
 * request with the rights of the user who runs it, so serve must answer
 * only that user, as the socket would. Two checks, both on every request,
 * the page and its assets included:
 *
 * - the token: random (getrandom, 256 bits) unless --token-file gives
 *   one, printed in the page's address at start and nowhere else; the
 *   page's first load sets it as an HttpOnly, SameSite=Strict cookie, or a
 *   script sends it as "Authorization: Bearer". It is what stands between
 *   a remote client and the page (--allow-remote).
 * - the peer's uid (serve_peer.h): a connection from this machine must
 *   come from a socket of the user running serve, or of root, whatever
 *   token it presents: the token can leak (a shell's history, a terminal
 *   shared, a file of the address), the socket's owner cannot be forged.
 *
 * The token is never logged, nor put in an answer but the cookie. */
#include "tools/serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/cli.h"

#define TOKEN_BYTES 32
/* A token of --token-file: at least this long (128 bits as hex). */
#define TOKEN_FILE_MIN 32

int fr_serve_token_new(char *out, size_t outlen)
{
	unsigned char raw[TOKEN_BYTES];
	size_t got = 0;

	if (outlen < 2 * TOKEN_BYTES + 1)
		return -ENOSPC;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* The characters a token may hold: those a URL carries unescaped. */
static int token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

int fr_serve_token_read(const char *path, char *out, size_t outlen, char *why, size_t whylen)
{
	char buf[FR_HTTP_TOKEN_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return snprintf(why, whylen, "cannot open it: %s", strerror(errno)), -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return snprintf(why, whylen, "not a regular file"), -1;
	}
	/* As ssh does of a private key: a token others may read is theirs. */
	if (st.st_mode & 077 || (st.st_uid != geteuid() && st.st_uid != 0)) {
		close(fd);
		return snprintf(why, whylen,
				"others may read it or it is not yours (mode %04o, owner uid %u); "
				"chmod 600 it",
				(unsigned)(st.st_mode & 07777), (unsigned)st.st_uid),
		       -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return snprintf(why, whylen, "cannot read it: %s", strerror(errno)), -1;
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	for (size_t i = 0; i < len; i++)
		if (!token_char((unsigned char)buf[i]))
			len = 0;
	if (len < TOKEN_FILE_MIN || len > FR_HTTP_TOKEN_MAX || len >= outlen) {
		explicit_bzero(buf, sizeof(buf));
		return snprintf(why, whylen,
				"expected one line of %d to %d characters of A-Z a-z 0-9 - _ . ~ "
				"(e.g. head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')",
				TOKEN_FILE_MIN, FR_HTTP_TOKEN_MAX),
		       -1;
	}
	memcpy(out, buf, len);
	out[len] = '\0';
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

/* Says on stderr why a connection was refused: at most a line a second
 * (a client can open connections faster than anyone reads them), and how
 * many were not said. Only the polling thread calls it. */
static void log_refusal(const char *addr, const char *detail)
{
	static time_t last;
	static unsigned long unsaid;
	time_t now = time(NULL);

	if (now == last) {
		unsaid++;
		return;
	}
	last = now;
	fprintf(stderr, "%s serve: refused the connection from %s: %s", FR_CLI_PROG, addr, detail);
	if (unsaid)
		fprintf(stderr, " (and %lu more refusals not shown)", unsaid);
	fputc('\n', stderr);
	unsaid = 0;
}

/* The first check: the connection's peer. Returns 1 or answers 403. */
static int peer_may(const struct fr_serve *s, int fd, const struct fr_serve_peer *peer,
		    int peer_err, const char *peer_why, int head_only)
{
	char detail[400];

	if (peer_err < 0) {
		snprintf(detail, sizeof(detail),
			 "%s; a connection from this machine is answered only when it is "
			 "the user's who runs serve, or root's",
			 peer_why);
		log_refusal(peer->addr, detail);
		fr_serve_error(fd, 403,
			       "flightrec serve cannot tell which user this connection comes "
			       "from, so it does not answer it (its output says why)",
			       head_only);
		return 0;
	}
	if (!peer->local || peer->uid == s->owner || peer->uid == 0)
		return 1;
	if (s->owner)
		snprintf(detail, sizeof(detail),
			 "it is uid %u's; serve answers uid %u and root only", (unsigned)peer->uid,
			 (unsigned)s->owner);
	else
		snprintf(detail, sizeof(detail), "it is uid %u's; serve answers root only",
			 (unsigned)peer->uid);
	log_refusal(peer->addr, detail);
	fr_serve_error(fd, 403,
		       "flightrec serve answers only the user who runs it and root, whatever "
		       "token is given. Run flightrec serve yourself: it shows what you may see",
		       head_only);
	return 0;
}

int fr_serve_admit(const struct fr_serve *s, int fd, struct fr_http_request *r,
		   const struct fr_serve_peer *peer, int peer_err, const char *peer_why)
{
	int head_only = strcmp(r->method, "HEAD") == 0;
	enum fr_http_auth a;

	if (!peer_may(s, fd, peer, peer_err, peer_why, head_only))
		return 0;
	a = fr_http_auth_check(r, s->cookie_name, s->token);
	if (a > 0) {
		r->set_cookie = a == FR_HTTP_AUTH_QUERY;
		return 1;
	}
	fr_serve_respond(fd, 401, "text/plain; charset=utf-8", s->unauthorized,
			 strlen(s->unauthorized),
			 "WWW-Authenticate: Bearer realm=\"flightrec\"\r\n", head_only);
	return 0;
}
