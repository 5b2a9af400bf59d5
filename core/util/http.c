/* HTTP requests through libcurl (core/util/http.h): the only user of
 * libcurl. One easy handle per client, reused so connections are kept
 * alive between batches.
 */
#include "core/util/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/grow.h"

struct fr_http {
	CURL *curl;
	char *user;
	char *password;
	char *ca_file;
	long connect_timeout_ms;
	long timeout_ms;
	size_t max_response;
	int (*cancel)(void *arg);
	void *cancel_arg;
};

/* What one request's answer goes through. */
struct answer {
	struct fr_http *h;
	fr_write_fn sink;
	void *sink_arg;
	size_t total;
	int err;
	char head[256]; /* the answer's start, for a failed status's message */
	size_t nhead;
	char curl_err[CURL_ERROR_SIZE]; /* curl's detailed reason, e.g. the certificate's */
};

/* A growing buffer the gzip stream writes the body into. */
struct buf {
	char *p;
	size_t len, cap;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_ret;

static void global_init(void)
{
	global_ret = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

/* Once per process: curl_global_init is not safe while another thread
 * uses curl, and a reload makes a client while the exporter's runs. */
int fr_http_global_init(void)
{
	pthread_once(&global_once, global_init);
	return global_ret;
}

static int read_password(const char *path, char **out, char *err, size_t errlen)
{
	char buf[FR_HTTP_PASSWORD_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd;

	/* O_NONBLOCK: a FIFO in its place must not hang the caller. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open password file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "password file %s is not a regular file", path);
		return -EINVAL;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read password file %s: %s", path, strerror(errno));
		return -EIO;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	*out = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *out ? 0 : -ENOMEM;
}

/* Checks the CA file now, so a missing or odd file is reported by name
 * instead of as a TLS failure at the first request. */
static int check_ca_file(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open CA file %s: %s", path, strerror(errno));
		return ret;
	}
	ret = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ? -EINVAL : 0;
	close(fd);
	if (ret < 0)
		snprintf(err, errlen, "CA file %s is not a regular file", path);
	return ret;
}

int fr_http_new(struct fr_http **out, const struct fr_http_opts *opts, char *err, size_t errlen)
{
	struct fr_http *h = calloc(1, sizeof(*h));
	int ret;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 5000;
	h->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
	h->max_response = opts->max_response ? opts->max_response : (size_t)64 << 20;
	h->cancel = opts->cancel;
	h->cancel_arg = opts->cancel_arg;
	if (opts->user && !(h->user = strdup(opts->user))) {
		fr_http_free(h);
		return -ENOMEM;
	}
	if (opts->password_file) {
		ret = read_password(opts->password_file, &h->password, err, errlen);
		if (ret < 0) {
			fr_http_free(h);
			return ret;
		}
	}
	if (opts->ca_file) {
		ret = check_ca_file(opts->ca_file, err, errlen);
		if (ret < 0 || !(h->ca_file = strdup(opts->ca_file))) {
			fr_http_free(h);
			return ret < 0 ? ret : -ENOMEM;
		}
	}
	h->curl = curl_easy_init();
	if (!h->curl) {
		fr_http_free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void fr_http_free(struct fr_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->password) {
		explicit_bzero(h->password, strlen(h->password));
		free(h->password);
	}
	free(h->user);
	free(h->ca_file);
	free(h);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t len = size * nmemb, k;
	int ret;

	if (a->nhead < sizeof(a->head) - 1) {
		k = sizeof(a->head) - 1 - a->nhead;
		k = k < len ? k : len;
		memcpy(a->head + a->nhead, p, k);
		a->nhead += k;
		a->head[a->nhead] = '\0';
	}
	a->total += len;
	if (a->total > a->h->max_response) {
		a->err = -EFBIG;
		return 0;
	}
	if (a->sink) {
		ret = a->sink(a->sink_arg, p, len);
		if (ret < 0) {
			a->err = ret;
			return 0;
		}
	}
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct answer *a = arg;

	if (a->h->cancel && a->h->cancel(a->h->cancel_arg)) {
		a->err = -ECANCELED;
		return 1;
	}
	return 0;
}

static int buf_write(void *arg, const void *p, size_t len)
{
	struct buf *b = arg;

	if (FR_GROW(b->p, &b->cap, b->len + len, 65536) < 0)
		return -ENOMEM;
	memcpy(b->p + b->len, p, len);
	b->len += len;
	return 0;
}

static int gzip_body(const void *body, size_t len, struct buf *out)
{
	struct fr_gzip *g = fr_gzip_new(1, buf_write, out);
	int ret;

	if (!g)
		return -ENOMEM;
	ret = fr_gzip_write(g, body, len);
	if (ret == 0)
		ret = fr_gzip_finish(g);
	fr_gzip_free(g);
	return ret;
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	case CURLE_PEER_FAILED_VERIFICATION: return -EKEYREJECTED;
	case CURLE_SSL_CACERT_BADFILE: return -EKEYREJECTED;
	default: return -EIO;
	}
}

/* The length of "https://host:port" in `url`: messages name the server,
 * not the query string that follows. */
static int server_len(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	return (int)(p - url + strcspn(p, "/?"));
}

static void set_common(struct fr_http *h, const char *url, struct answer *a)
{
	CURL *c = h->curl;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* Only HTTP and HTTPS, also across redirects, which are not followed. */
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, a->curl_err);
	/* curl's defaults, said again so no later change of them weakens
	 * TLS: the certificate chain and the host name are checked. */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
	if (h->cancel) {
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, a);
	}
	if (h->user)
		curl_easy_setopt(c, CURLOPT_USERNAME, h->user);
	if (h->password)
		curl_easy_setopt(c, CURLOPT_PASSWORD, h->password);
}

int fr_http_request(struct fr_http *h, const char *url, const void *body, size_t len, int gzip,
		    fr_write_fn sink, void *sink_arg, long *status, char *err, size_t errlen)
{
	struct answer a = {.h = h, .sink = sink, .sink_arg = sink_arg};
	struct curl_slist *hdr = NULL;
	struct buf gz = {0};
	CURLcode c;
	int ret = 0;

	*status = 0;
	if (err && errlen)
		err[0] = '\0';
	set_common(h, url, &a);
	if (body) {
		if (gzip) {
			ret = gzip_body(body, len, &gz);
			if (ret < 0) {
				free(gz.p);
				snprintf(err, errlen, "cannot compress the request: %s",
					 strerror(-ret));
				return ret;
			}
			body = gz.p;
			len = gz.len;
			hdr = curl_slist_append(hdr, "Content-Encoding: gzip");
		}
		hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream");
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	c = curl_easy_perform(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, NULL); /* `a` goes out of scope */
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
	if (c != CURLE_OK) {
		ret = a.err < 0 ? a.err : curl_errno(c);
		if (a.err == -EFBIG)
			snprintf(err, errlen, "answer larger than %zu bytes", h->max_response);
		else if (a.err == -ECANCELED)
			snprintf(err, errlen, "cancelled");
		else if (ret == -EKEYREJECTED)
			snprintf(err, errlen, "TLS certificate of %.*s not trusted%s: %s",
				 server_len(url), url,
				 h->ca_file ? " by the CA file" : " by the system's CAs",
				 a.curl_err[0] ? a.curl_err : curl_easy_strerror(c));
		else if (a.err == 0)
			snprintf(err, errlen, "%s",
				 a.curl_err[0] ? a.curl_err : curl_easy_strerror(c));
	} else if (*status < 200 || *status > 299) {
		a.head[strcspn(a.head, "\n")] = '\0';
		snprintf(err, errlen, "HTTP %ld: %s", *status, a.head);
		ret = -EPROTO;
	}
	curl_slist_free_all(hdr);
	free(gz.p);
	return ret;
}

int fr_http_urlencode(char *out, size_t cap, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(out);

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
			    ch == '~';

		if (n + (plain ? 1 : 3) >= cap)
			return -ENOBUFS;
		if (plain) {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
	return 0;
}
