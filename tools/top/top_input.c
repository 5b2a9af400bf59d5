/* flightrec top's input: a profile from a file (gzip'ed or plain pprof)
 * or from the running recorder: an "attach" request whose output
 * descriptor is an anonymous memfd, read back from offset 0 once the
 * recorder answers, so nothing is left on disk. A window that is empty
 * (outside the ring, filters that matched nothing) is said as attach says
 * it (tools/report.c) and fails unless --allow-empty.
 */
#include "tools/top/top.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/pprof/pprof_read.h"
#include "core/util/compress.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "tools/cli.h"
#include "tools/query.h"

#define MAX_FILE (1ULL << 32)

static const char *prog = "flightrec top";

/* Reads all of `fd` from offset 0. Returns 0 and a malloc'd buffer, or -errno
 * (-EFBIG beyond 4 GiB). */
static int read_all(int fd, void **out, size_t *out_len)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), *grown;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= MAX_FILE) {
				free(buf);
				return -EFBIG;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		n = pread(fd, buf + len, cap - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/* Decodes a gzip'ed or plain profile and prints it. `what` names the
 * source in messages. Returns the exit status. */
static int show(const void *buf, size_t len, const char *what, const struct fr_top_opts *o)
{
	const unsigned char *b = buf;
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t raw_len = len;
	const char *why = NULL;
	int ret;

	if (len == 0) {
		why = "empty file";
	} else if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		ret = fr_gunzip(buf, len, &raw, &raw_len);
		if (ret == -ENOMEM)
			goto nomem;
		if (ret < 0)
			why = "gzip data is corrupt or truncated";
		buf = raw;
	}
	if (!why) {
		ret = fr_pprof_read(buf, raw_len, &d);
		if (ret == -ENOMEM)
			goto nomem;
		if (ret < 0)
			why = "malformed or truncated protobuf";
		else if (d->ntypes == 0)
			why = "no sample types";
	}
	if (why) {
		fprintf(stderr, "%s: %s is not a pprof profile (%s)\n", prog, what, why);
		ret = 1;
	} else {
		ret = fr_top_print(d, o);
		if (ret == -ENOMEM)
			goto nomem;
		ret = ret == 0 && fflush(stdout) == 0 ? 0 : 1;
	}
	free(raw);
	fr_pprof_data_free(d);
	return ret;
nomem:
	fprintf(stderr, "%s: out of memory reading %s\n", prog, what);
	free(raw);
	fr_pprof_data_free(d);
	return 1;
}

int fr_top_show_file(const char *path, const struct fr_top_opts *o)
{
	void *buf;
	size_t len;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	ret = read_all(fd, &buf, &len);
	close(fd);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(-ret));
		return 1;
	}
	ret = show(buf, len, path, o);
	free(buf);
	return ret;
}

static const char *resp_error(const cJSON *resp)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(resp, "ok");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");

	if (cJSON_IsTrue(ok))
		return NULL;
	return cJSON_IsString(e) ? e->valuestring : "the recorder refused the request";
}

/* Says why the recorder's profile of the window is empty, when it is (the
 * window outside the ring, targets that matched nothing). Returns 1 when
 * top must fail for it: it is empty and `allow_empty` is not given. Warns
 * of a recorder stall within the window. */
static int window_empty(const struct fr_ipc_attach_reply *reply, const struct fr_ipc_attach_req *ar,
			int allow_empty, const struct fr_top_opts *o, int *missing, int allow_loss)
{
	struct fr_cli_report r;

	fr_cli_report_from_attach(&r, reply, ar);
	r.label_key_by = o->by_sets_label_key;

	if (fr_cli_report_check(&r, allow_empty) == FR_REPORT_EMPTY && !allow_empty)
		return 1;
	/* A table of a stalled or lossy window misses samples: said, still
	 * shown, and the exit status says it (unless --allow-loss). */
	*missing = fr_cli_report_missing(&r, allow_loss);
	return 0;
}

/* Asks the recorder for a profile of the window into a memfd and shows
 * it. Returns the exit status. */
int fr_top_show_window(const struct fr_query_args *q, const char *socket_s,
		       const struct fr_top_opts *o)
{
	struct fr_ipc_attach_req ar;
	struct fr_ipc_attach_reply reply;
	cJSON *req = NULL, *resp = NULL;
	char *socket_path = NULL, err[512];
	void *buf = NULL;
	size_t len;
	int sock = -1, fd = -1, status = 1, ret, missing = 0;

	fr_query_attach_req(q, &ar);
	req = fr_ipc_attach_req_encode(&ar);
	if (!req)
		goto nomem;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto nomem;
	fd = memfd_create("flightrec-top", MFD_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create a temporary file: %s\n", prog, strerror(errno));
		goto out;
	}
	sock = fr_ipc_connect_why(socket_path, err, sizeof(err));
	if (sock < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	ret = fr_ipc_call(sock, req, fd, &resp);
	if (ret == -EPROTO) {
		fprintf(stderr, "%s: the recorder at %s speaks another protocol version: %s\n",
			prog, socket_path,
			resp && resp_error(resp) ? resp_error(resp) : "no details");
		goto out;
	} else if (ret == -EAGAIN) {
		fprintf(stderr, "%s: the recorder at %s did not answer in time\n", prog,
			socket_path);
		goto out;
	} else if (ret < 0) {
		fprintf(stderr, "%s: lost the connection to the recorder at %s: %s\n", prog,
			socket_path, strerror(-ret));
		goto out;
	}
	if (resp_error(resp)) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(resp));
		goto out;
	}
	if (fr_ipc_attach_reply_decode(resp, &reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	/* A table of nothing is no answer: say which filter or what window
	 * emptied it, as attach does, and fail unless --allow-empty. */
	for (uint32_t i = 0; i < reply.nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply.warnings[i]);
	if (window_empty(&reply, &ar, q->allow_empty, o, &missing, q->allow_loss))
		goto out;
	/* The recorder could not store its last samples (a stall now): the
	 * table may end early. */
	if (reply.incomplete[0])
		fprintf(stderr, "%s: warning: %s\n", prog, reply.incomplete);
	ret = read_all(fd, &buf, &len);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot read the recorder's profile back: %s\n", prog,
			strerror(-ret));
		goto out;
	}
	status = show(buf, len, "the recorder's answer", o);
	if (status == 0 && missing)
		status = 1;
	goto out;
nomem:
	fprintf(stderr, "%s: out of memory\n", prog);
out:
	if (sock >= 0)
		close(sock);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(socket_path);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return status;
}

/* ---- arguments ---- */
