/* Framing of the wire protocol (see ipc/proto.h): a little-endian u32
 * length, then that many bytes of one JSON object, optionally with one
 * file descriptor riding on the first byte as SCM_RIGHTS.
 *
 * Both directions loop over short transfers and EINTR, so a frame is sent
 * or received whole or the call fails. A receiver never keeps a descriptor
 * it did not ask for: anything else arriving as ancillary data is closed,
 * so a hostile peer cannot exhaust the daemon's descriptor table.
 */
#include "ipc/proto.h"

#include "core/util/log.h"
#include "core/store/ring.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <cjson/cJSON.h>

/* Room for a few descriptors: a peer that sends more than one still has
 * them delivered (and closed here) rather than silently truncated. */
#define MAX_RECV_FDS 8

int fr_ipc_send(int sock, const char *json, size_t len, int pass_fd)
{
	unsigned char hdr[4];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov[2];
	struct msghdr msg;
	size_t total, sent = 0;
	int first = 1;

	if (len == 0 || len > FR_IPC_MAX_FRAME)
		return -EMSGSIZE;

	hdr[0] = len & 0xff;
	hdr[1] = (len >> 8) & 0xff;
	hdr[2] = (len >> 16) & 0xff;
	hdr[3] = (len >> 24) & 0xff;
	total = sizeof(hdr) + len;

	while (sent < total) {
		int n = 0;
		ssize_t ret;

		memset(&msg, 0, sizeof(msg));
		if (sent < sizeof(hdr)) {
			iov[n].iov_base = hdr + sent;
			iov[n].iov_len = sizeof(hdr) - sent;
			n++;
			iov[n].iov_base = (void *)json;
			iov[n].iov_len = len;
			n++;
		} else {
			iov[n].iov_base = (void *)(json + (sent - sizeof(hdr)));
			iov[n].iov_len = total - sent;
			n++;
		}
		msg.msg_iov = iov;
		msg.msg_iovlen = n;

		/* The descriptor goes with the first byte only; once any
		 * byte is out, the kernel has attached it. */
		if (first && pass_fd >= 0) {
			struct cmsghdr *cm;

			memset(&ctrl, 0, sizeof(ctrl));
			msg.msg_control = ctrl.buf;
			msg.msg_controllen = sizeof(ctrl.buf);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		}

		ret = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		first = 0;
		sent += (size_t)ret;
	}
	return 0;
}

/* Closes every descriptor carried by `msg`, except that the first one is
 * stored in *keep when keep is non-NULL and *keep is still -1. */
static void take_fds(struct msghdr *msg, int *keep)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t nfds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (keep && *keep < 0)
				*keep = fd;
			else
				close(fd);
		}
	}
}

/* Waits until `sock` is readable or CLOCK_MONOTONIC reaches `deadline`
 * (ns). Returns 0 when readable (or hung up: the receive says how),
 * -ETIMEDOUT, or -errno. */
static int wait_readable(int sock, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		int64_t left = deadline - fr_now_mono_ns();
		int ret;

		if (left <= 0)
			return -ETIMEDOUT;
		/* Rounded up, so a poll never returns just before the
		 * deadline and spins. */
		ret = poll(&pfd, 1,
			   (int)((left + 999999) / 1000000 < 60000 ? (left + 999999) / 1000000
								   : 60000));
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (ret > 0)
			return 0;
	}
}

/* Reads exactly `len` bytes (collecting descriptors into *fd), by
 * `deadline` (CLOCK_MONOTONIC ns) unless it is < 0. Returns the number of
 * bytes read before EOF (short only at EOF), -ETIMEDOUT, or -errno. */
static ssize_t recv_full(int sock, void *buf, size_t len, int *fd, int want_fd, int64_t deadline)
{
	union {
		char buf[CMSG_SPACE(MAX_RECV_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	size_t got = 0;

	while (got < len) {
		struct iovec iov = {.iov_base = (char *)buf + got, .iov_len = len - got};
		struct msghdr msg;
		ssize_t ret;

		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = ctrl.buf;
		msg.msg_controllen = sizeof(ctrl.buf);

		if (deadline >= 0) {
			int w = wait_readable(sock, deadline);

			if (w < 0)
				return w;
		}
		/* With a deadline, never block in the receive itself: a
		 * readable socket has data, but nothing else may be waiting. */
		ret = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (deadline >= 0 ? MSG_DONTWAIT : 0));
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EWOULDBLOCK && deadline >= 0)
				continue;
			if (errno == EWOULDBLOCK)
				return -EAGAIN;
			return -errno;
		}
		take_fds(&msg, want_fd ? fd : NULL);
		if (ret == 0)
			break;
		got += (size_t)ret;
	}
	return (ssize_t)got;
}

int fr_ipc_recv(int sock, char **json, size_t *len, int *fd_out)
{
	return fr_ipc_recv_timed(sock, json, len, fd_out, -1, -1);
}

int fr_ipc_recv_timed(int sock, char **json, size_t *len, int *fd_out, int64_t wait_ns,
		      int64_t frame_ns)
{
	unsigned char hdr[4];
	uint32_t n;
	char *buf = NULL;
	int64_t deadline = -1;
	int fd = -1;
	ssize_t ret;
	int err;

	*json = NULL;
	*len = 0;
	if (fd_out)
		*fd_out = -1;

	if (wait_ns >= 0) {
		err = wait_readable(sock, fr_now_mono_ns() + wait_ns);
		if (err < 0)
			goto err_fd;
	}
	/* The clock of the whole frame starts at its first byte, so a peer
	 * that sends a byte now and then cannot stretch one request out. */
	if (frame_ns >= 0)
		deadline = fr_now_mono_ns() + frame_ns;
	ret = recv_full(sock, hdr, sizeof(hdr), &fd, fd_out != NULL, deadline);
	if (ret < 0) {
		err = (int)ret;
		goto err_fd;
	}
	if (ret == 0) {
		err = -ECONNRESET;
		goto err_fd;
	}
	if ((size_t)ret < sizeof(hdr)) {
		err = -EBADMSG;
		goto err_fd;
	}

	n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
	    (uint32_t)hdr[3] << 24;
	if (n == 0 || n > FR_IPC_MAX_FRAME) {
		err = -EMSGSIZE;
		goto err_fd;
	}

	buf = malloc((size_t)n + 1);
	if (!buf) {
		err = -ENOMEM;
		goto err_fd;
	}
	ret = recv_full(sock, buf, n, &fd, fd_out != NULL, deadline);
	if (ret < 0) {
		err = (int)ret;
		goto err_buf;
	}
	if ((size_t)ret < n) {
		err = -EBADMSG;
		goto err_buf;
	}
	buf[n] = '\0';

	*json = buf;
	*len = n;
	if (fd_out)
		*fd_out = fd;
	return 0;

err_buf:
	free(buf);
err_fd:
	if (fd >= 0)
		close(fd);
	return err;
}

int fr_ipc_send_json(int sock, const cJSON *obj, int pass_fd)
{
	char *text;
	int ret;

	text = cJSON_PrintUnformatted(obj);
	if (!text)
		return -ENOMEM;
	ret = fr_ipc_send(sock, text, strlen(text), pass_fd);
	cJSON_free(text);
	return ret;
}

/* The next number token of `text` from *pos (strings skipped): its start,
 * and its length in *n; NULL when there is none. */
static const char *next_number(const char *text, size_t len, size_t *pos, size_t *n)
{
	size_t i = *pos;

	while (i < len) {
		char c = text[i];

		if (c == '"') {
			for (i++; i < len && text[i] != '"'; i++)
				if (text[i] == '\\')
					i++;
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t start = i;

			while (i < len && strchr("+-0123456789.eE", text[i]))
				i++;
			*pos = i;
			*n = i - start;
			return text + start;
		} else {
			i++;
		}
	}
	*pos = i;
	return NULL;
}

/* Keeps each integer's own digits beside its double, in the number's
 * otherwise unused valuestring (cJSON frees, copies and ignores it for
 * numbers): a time in ns is past what a double holds exactly, and the
 * decoders (ipc/msg_int.c) read every digit. The tree's numbers come in
 * the text's order, depth first. Returns the next text position. */
static size_t keep_digits(cJSON *item, const char *text, size_t len, size_t pos)
{
	for (; item; item = item->next) {
		if (cJSON_IsNumber(item)) {
			size_t n = 0;
			const char *tok = next_number(text, len, &pos, &n);
			char buf[24];
			long long v;
			char *end;

			if (!tok || n >= sizeof(buf) || item->valuestring)
				continue;
			memcpy(buf, tok, n);
			buf[n] = '\0';
			errno = 0;
			v = strtoll(buf, &end, 10);
			if (*end || errno || (double)v != item->valuedouble)
				continue;
			item->valuestring = strdup(buf);
		} else if (item->child) {
			pos = keep_digits(item->child, text, len, pos);
		}
	}
	return pos;
}

int fr_ipc_parse_json(const char *text, size_t len, cJSON **obj)
{
	const char *end = NULL;
	cJSON *root;

	*obj = NULL;
	/* The frame is text without NULs; the parser is given the
	 * terminating NUL too, so that trailing bytes after the object are
	 * an error rather than silently ignored. */
	if (memchr(text, '\0', len))
		return -EBADMSG;
	root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
	if (!root)
		return -EBADMSG;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EBADMSG;
	}
	keep_digits(root->child, text, len, 0);
	*obj = root;
	return 0;
}

int fr_ipc_recv_json(int sock, cJSON **obj, int *fd_out)
{
	return fr_ipc_recv_json_timed(sock, obj, fd_out, -1, -1);
}

int fr_ipc_recv_json_timed(int sock, cJSON **obj, int *fd_out, int64_t wait_ns, int64_t frame_ns)
{
	char *text;
	size_t len;
	int ret;

	*obj = NULL;
	ret = fr_ipc_recv_timed(sock, &text, &len, fd_out, wait_ns, frame_ns);
	if (ret < 0)
		return ret;
	ret = fr_ipc_parse_json(text, len, obj);
	if (ret < 0)
		goto err;
	free(text);
	return 0;

err:
	free(text);
	if (fd_out && *fd_out >= 0) {
		close(*fd_out);
		*fd_out = -1;
	}
	return ret;
}

cJSON *fr_ipc_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	cJSON *obj;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	obj = cJSON_CreateObject();
	if (!obj)
		return NULL;
	if (!cJSON_AddFalseToObject(obj, "ok") || !cJSON_AddStringToObject(obj, "error", msg)) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

cJSON *fr_ipc_ok(void)
{
	cJSON *obj = cJSON_CreateObject();

	if (obj && !cJSON_AddTrueToObject(obj, "ok")) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

cJSON *fr_ipc_add_int(cJSON *obj, const char *name, int64_t value)
{
	char text[24];

	snprintf(text, sizeof(text), "%lld", (long long)value);
	return cJSON_AddRawToObject(obj, name, text);
}
